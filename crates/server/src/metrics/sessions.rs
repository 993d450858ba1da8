//! Why sessions ended, counted per reason (metrics on only: one relaxed atomic add per
//! session end, never on a request's path).

use std::sync::atomic::{AtomicU64, Ordering};

/// The `reason` label of each counter, and the session loop's reasons it stands for.
const REASONS: [(&str, &[&str]); 9] = [
    ("closed", &["closed by client"]),
    ("lease_expired", &["lease expired"]),
    ("shutdown", &["server shutdown"]),
    ("not_reading", &["peer stopped reading"]),
    ("output_limit", &[crate::session::OUTPUT_OVER_LIMIT]),
    ("bad_framing", &["bad framing"]),
    ("io_error", &["i/o error"]),
    ("token_revoked", &["token revoked"]),
    ("other", &[]),
];

/// Sessions ended, per reason; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct SessionEnds([AtomicU64; REASONS.len()]);

impl SessionEnds {
    /// Counts a session that ended for `reason` (the session loop's wording).
    pub(crate) fn count(&self, reason: &str) {
        let i =
            REASONS.iter().position(|(_, rs)| rs.contains(&reason)).unwrap_or(REASONS.len() - 1);
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    /// `(reason label, sessions)` for every reason, in a fixed order.
    pub(crate) fn snapshot(&self) -> Vec<(&'static str, u64)> {
        REASONS.iter().zip(&self.0).map(|((l, _), n)| (*l, n.load(Ordering::Relaxed))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_map_to_labels() {
        let e = SessionEnds::default();
        e.count("lease expired");
        e.count("lease expired");
        e.count("closed by client");
        e.count("something new");
        let s = e.snapshot();
        assert_eq!(s[0], ("closed", 1));
        assert_eq!(s[1], ("lease_expired", 2));
        assert_eq!(s[8], ("other", 1));
        assert_eq!(s.iter().map(|(_, n)| n).sum::<u64>(), 4);
    }

    /// The session loop still says what this module matches.
    #[test]
    fn every_reason_is_one_the_session_loop_gives() {
        let source = include_str!("../session.rs");
        for (_, reasons) in REASONS {
            for r in reasons.iter().filter(|r| **r != crate::session::OUTPUT_OVER_LIMIT) {
                assert!(source.contains(&format!("break \"{r}\"")), "{r:?}");
            }
        }
    }
}
