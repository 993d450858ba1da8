//! Logging sessions that end badly, at a rate an operator can live with.
//!
//! A hostile or broken client can open and spoil hundreds of connections a minute (bad
//! hellos, bad framing, silence until the lease lapses). One INFO line each buries
//! everything else in the log. So every such end is logged at DEBUG with its peer and
//! reason, and at INFO at most once per [`WINDOW`]: the first end in a window is logged
//! with its peer and reason, and the next INFO line says how many more ended in between
//! and gives the last one's peer and reason. Ordinary ends (the client closed, the server
//! is stopping) are DEBUG only.
//!
//! Hellos refused for authentication (no token, an unknown token) are logged the same way
//! but at WARN, with a window of their own so that a flood of broken connections cannot
//! hide them: someone is knocking with the wrong key. The line gives the peer and the
//! reason, never the token.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// At most one INFO line per window.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);

/// What the next INFO line must report.
#[derive(Debug, Default)]
struct State {
    /// When the last line was written.
    last_line: Option<Instant>,
    /// Ends since then, not yet reported.
    suppressed: u64,
}

/// One line per [`WINDOW`], counting the rest.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    state: Mutex<State>,
}

/// See the module docs. One per server.
#[derive(Debug, Default)]
pub(crate) struct EndLog {
    /// Sessions that ended badly (INFO).
    bad: Limiter,
    /// Hellos refused for authentication (WARN).
    refused: Limiter,
}

/// What [`Limiter::decide`] says to write.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// Nothing (counted for the next line).
    None,
    /// This event, plus `suppressed` events not reported since the last line.
    Report {
        /// Events in between that were not written.
        suppressed: u64,
    },
}

impl Limiter {
    /// Records an event at `now` and says what to write.
    pub(crate) fn decide(&self, now: Instant) -> Line {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match st.last_line {
            Some(t) if now.saturating_duration_since(t) < WINDOW => {
                st.suppressed += 1;
                Line::None
            }
            _ => {
                st.last_line = Some(now);
                Line::Report { suppressed: std::mem::take(&mut st.suppressed) }
            }
        }
    }
}

impl EndLog {
    /// Logs a session that ended badly (DEBUG always, INFO as [`Limiter::decide`] says).
    /// `session` 0: the connection closed before a session opened (a bad hello, a failed
    /// TLS handshake), so it held nothing.
    pub(crate) fn bad_end(&self, peer: &str, session: u64, reason: &str) {
        let what = match session {
            0 => "connection closed before a session opened",
            _ => "session ended; its locks are released",
        };
        tracing::debug!(%peer, session, reason, "{what}");
        if let Line::Report { suppressed } = self.bad.decide(Instant::now()) {
            if suppressed == 0 {
                tracing::info!(%peer, session, reason, "{what}");
            } else {
                tracing::info!(
                    %peer,
                    session,
                    reason,
                    suppressed,
                    "{what} ({suppressed} more sessions or connections ended badly since the \
                     last such line; see DEBUG for each)"
                );
            }
        }
    }

    /// Logs a hello refused for authentication (DEBUG always, WARN as
    /// [`Limiter::decide`] says). `reason` must not contain the token.
    pub(crate) fn auth_refused(&self, peer: &str, reason: &str) {
        tracing::debug!(%peer, reason, "hello refused");
        if let Line::Report { suppressed } = self.refused.decide(Instant::now()) {
            if suppressed == 0 {
                tracing::warn!(%peer, reason, "hello refused: authentication failed");
            } else {
                tracing::warn!(
                    %peer,
                    reason,
                    suppressed,
                    "hello refused: authentication failed ({suppressed} more refused since \
                     the last such line; see DEBUG for each)"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_window_counting_the_rest() {
        let log = Limiter::default();
        let t0 = Instant::now();
        assert_eq!(log.decide(t0), Line::Report { suppressed: 0 });
        for i in 1..=470 {
            // 470 bad connections within the window: none is written.
            assert_eq!(log.decide(t0 + WINDOW * i / 471), Line::None);
        }
        assert_eq!(log.decide(t0 + WINDOW), Line::Report { suppressed: 470 });
        assert_eq!(log.decide(t0 + WINDOW + WINDOW / 2), Line::None);
        assert_eq!(log.decide(t0 + 3 * WINDOW), Line::Report { suppressed: 1 });
    }
}
