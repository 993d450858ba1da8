//! The signals `rangelock lock` gets while its command runs: the range stays held until
//! the command has exited, whatever the signals.
//!
//! Once the lock is held, SIGHUP, SIGINT, SIGQUIT and SIGTERM no longer end this process.
//! A thread takes them from [`signal_hook`] (with the sender's `si_code`) and applies one
//! rule ([`Rule`]):
//!
//! - **Sent by a process** (`kill(2)`, `sigqueue`, `tgkill`: a supervisor, `kill PID`):
//!   passed on to the command. The same signal again, [`REPEAT_AFTER`] (1 s) or more
//!   after the first, sends the command SIGKILL instead (the way to stop a command that
//!   ignores the first). One sooner is taken as the same signal delivered twice and
//!   dropped: timeout(1), for one, signals its child and then its whole process group.
//!   Each is said on stderr.
//! - **Sent by the kernel** (a terminal's Ctrl-C, Ctrl-\ or hang-up): not passed on. The
//!   terminal signals its whole foreground process group, and the command is in ours (we
//!   make no group of our own, as flock(1) does not: the command can read the terminal
//!   and is stopped by Ctrl-Z with us). It has had the signal once; a second copy would
//!   be a second Ctrl-C.
//!
//! The range is released only after the command has exited. Then `rangelock lock` exits
//! 128+N for the first signal N a process sent, and otherwise with the command's own
//! status (so a Ctrl-C that killed the command gives 130, as a shell does; one the command
//! caught and lived through gives its own code). A signal that comes after the command
//! has exited, while the range is being released, ends this process at once, as if there
//! were no handler: nothing is at risk then.
//!
//! Only the command itself is signalled, not processes it started: a shell script should
//! pass the signal on or `exec` its last command. SIGKILL and SIGSTOP cannot be caught:
//! SIGKILL ends this process, the server releases the range, and the command is killed
//! with it (`PR_SET_PDEATHSIG`, see the `lock` module); a SIGSTOP longer than the lease
//! loses the lock (as the `lock` module says).
//!
//! Hand-written handlers would need the same self-pipe and `siginfo` plumbing that
//! `signal_hook`'s iterator with [`WithOrigin`] is; the pid-reuse reasoning (only an
//! unreaped child is signalled) stays with the caller, which owns the child.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGQUIT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

/// The signals that no longer end `rangelock lock` while its command runs.
pub(crate) const CAUGHT: [libc::c_int; 4] = [SIGHUP, SIGINT, SIGQUIT, SIGTERM];

/// A repeat of a signal this long after the first escalates to SIGKILL; a sooner one is
/// the same signal delivered twice.
pub(crate) const REPEAT_AFTER: Duration = Duration::from_secs(1);

/// What to do with one signal while the command runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// The terminal already gave it to the command, or it is a duplicate: nothing.
    None,
    /// Send the command this signal.
    Send(libc::c_int),
}

/// The forwarding rule of the module docs, with what it has seen.
#[derive(Debug, Default)]
struct Rule {
    /// The signals a process has sent us, with when each first came (a repeat escalates).
    seen: Vec<(libc::c_int, Instant)>,
}

impl Rule {
    /// The action for `sig`, taken at `now`; `from_kernel` when the kernel (a terminal)
    /// sent it.
    fn next(&mut self, sig: libc::c_int, from_kernel: bool, now: Instant) -> Action {
        if from_kernel {
            return Action::None;
        }
        match self.seen.iter().find(|(s, _)| *s == sig) {
            Some(&(_, first)) if now.saturating_duration_since(first) >= REPEAT_AFTER => {
                Action::Send(SIGKILL)
            }
            Some(_) => Action::None,
            None => {
                self.seen.push((sig, now));
                Action::Send(sig)
            }
        }
    }

    /// The first signal a process sent.
    fn first(&self) -> Option<libc::c_int> {
        self.seen.first().map(|&(s, _)| s)
    }
}

/// The four signals, caught from [`Catcher::install`] on.
pub(crate) struct Catcher {
    signals: SignalsInfo<WithOrigin>,
}

impl std::fmt::Debug for Catcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catcher").field("signals", &CAUGHT).finish_non_exhaustive()
    }
}

impl Catcher {
    /// Catches the four signals from now on: call it once the lock is held and before the
    /// command starts (a signal while waiting for the lock still ends the process, which
    /// gives up the wait).
    pub(crate) fn install() -> io::Result<Catcher> {
        Ok(Catcher { signals: SignalsInfo::<WithOrigin>::new(CAUGHT)? })
    }

    /// A signal that came after [`Catcher::install`] and before the command started
    /// (whoever sent it): then the command is not started.
    pub(crate) fn before_start(&mut self) -> Option<libc::c_int> {
        self.signals.pending().next().map(|o| o.signal)
    }

    /// Applies the rule on a thread of its own from now on. `signal` sends the command a
    /// signal unless it has exited (then `None`; signal 0 sends nothing, it only asks);
    /// `prog` and `pid` name the command on stderr.
    pub(crate) fn forward(
        mut self,
        signal: impl Fn(libc::c_int) -> Option<io::Result<()>> + Send + 'static,
        prog: String,
        pid: u32,
    ) -> io::Result<Forwarded> {
        let rule = Arc::new(Mutex::new(Rule::default()));
        let forwarded = Forwarded(rule.clone());
        // Detached: it blocks until a signal comes; exiting ends it.
        std::thread::Builder::new().name("rangelock-signals".into()).spawn(move || {
            for origin in self.signals.forever() {
                let sig = origin.signal;
                // Recorded before the command is signalled: once the command has exited,
                // the main thread reads `first` (see `Forwarded::first`).
                let action = rule.lock().unwrap_or_else(PoisonError::into_inner).next(
                    sig,
                    origin.cause == Cause::Kernel,
                    Instant::now(),
                );
                let send = match action {
                    Action::None => 0,
                    Action::Send(s) => s,
                };
                match signal(send) {
                    // The command has exited: nothing is at risk, end as if unhandled.
                    None => {
                        let _ = signal_hook::low_level::emulate_default_handler(sig);
                    }
                    Some(_) if send == 0 => {}
                    Some(r) => {
                        let what = if send == sig {
                            format!("got {}; sent it to {prog} (pid {pid})", name(sig))
                        } else {
                            format!(
                                "got {} again; sent {} to {prog} (pid {pid})",
                                name(sig),
                                name(send)
                            )
                        };
                        match r {
                            Ok(()) => {
                                eprintln!("rangelock: {what}; the range stays held until it exits")
                            }
                            Err(e) => eprintln!("rangelock: {what} failed: {e}"),
                        }
                    }
                }
            }
        })?;
        Ok(forwarded)
    }

    /// For a hold without a command: calls `ended` with the first signal, on a thread of
    /// its own. A later one ends this process at once, as if unhandled: the release is
    /// under way, and a closed connection releases too.
    pub(crate) fn on_first(
        mut self,
        ended: impl FnOnce(libc::c_int) + Send + 'static,
    ) -> io::Result<()> {
        // Detached: it blocks until a signal comes; exiting ends it.
        std::thread::Builder::new().name("rangelock-signals".into()).spawn(move || {
            let mut ended = Some(ended);
            for origin in self.signals.forever() {
                match ended.take() {
                    Some(f) => f(origin.signal),
                    None => {
                        let _ = signal_hook::low_level::emulate_default_handler(origin.signal);
                    }
                }
            }
        })?;
        Ok(())
    }
}

/// What the forwarding thread has seen, for the exit code.
#[derive(Clone, Debug)]
pub(crate) struct Forwarded(Arc<Mutex<Rule>>);

impl Forwarded {
    /// The first signal a process sent while the command ran. Read it after the command
    /// has exited and the caller's `signal` would say so: a signal taken before that was
    /// recorded before it was passed on.
    pub(crate) fn first(&self) -> Option<libc::c_int> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).first()
    }
}

/// `SIGTERM` etc.
fn name(sig: libc::c_int) -> String {
    signal_hook::low_level::signal_name(sig).map_or_else(|| format!("signal {sig}"), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_signal_is_passed_on_and_its_later_repeat_escalates() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut rule = Rule::default();
        assert_eq!(rule.next(SIGTERM, false, at(0)), Action::Send(SIGTERM));
        assert_eq!(rule.next(SIGINT, false, at(10)), Action::Send(SIGINT));
        // A repeat within REPEAT_AFTER is the same signal delivered twice.
        assert_eq!(rule.next(SIGTERM, false, at(999)), Action::None);
        assert_eq!(rule.next(SIGTERM, false, at(1000)), Action::Send(SIGKILL));
        assert_eq!(rule.next(SIGTERM, false, at(5000)), Action::Send(SIGKILL));
        assert_eq!(rule.next(SIGINT, false, at(1010)), Action::Send(SIGKILL));
        assert_eq!(rule.first(), Some(SIGTERM));
    }

    #[test]
    fn a_terminal_signal_is_not_passed_on_nor_counted() {
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        let mut rule = Rule::default();
        assert_eq!(rule.next(SIGINT, true, at(0)), Action::None);
        assert_eq!(rule.next(SIGINT, true, at(2)), Action::None);
        assert_eq!(rule.first(), None);
        assert_eq!(rule.next(SIGINT, false, at(4)), Action::Send(SIGINT));
        assert_eq!(rule.next(SIGQUIT, true, at(6)), Action::None);
        assert_eq!(rule.next(SIGINT, true, at(8)), Action::None);
        assert_eq!(rule.first(), Some(SIGINT));
        assert_eq!(name(SIGHUP), "SIGHUP");
    }
}
