//! `global-mutex`: one mutex around a list of held ranges; waiters sleep on a condvar.
//!
//! # Algorithm
//!
//! The lock is a `Mutex<Vec<Held>>` and a `Condvar`. An acquisition takes the mutex, scans
//! every held range for an overlapping holder in an incompatible mode
//! ([`Mode::compatible`]), and either appends its range (granted) or waits on the condvar
//! and rescans when woken. A release takes the mutex, removes its entry (found by the
//! token's id) and wakes every waiter, each of which rescans.
//!
//! This is the simplest correct range lock and the floor of the evaluation: it is what a
//! careful engineer writes in ten minutes. It is not from the seeds; the kernel-tree and
//! Song variants are its structured relatives (a tree or skip list instead of the vector,
//! a spinlock instead of the mutex).
//!
//! # Invariants
//!
//! * The vector holds exactly the granted, unreleased acquisitions; no two entries overlap
//!   unless both are shared. Every check and change happens under the mutex, which also
//!   provides the Acquire/Release edge from one holder's release to the next acquisition.
//! * Ids are unique per lock (a counter under the mutex), so a token names one entry.
//!
//! # Trade-offs
//!
//! Every operation serializes on one mutex and scans all held ranges: O(n) per acquisition
//! and release with n held ranges. A release wakes all waiters (`notify_all`), who rescan
//! even if their range is still blocked (a thundering herd); there is no FIFO fairness, so
//! a waiter can be overtaken by newcomers. Waiting costs no CPU (threads sleep in the
//! condvar), and timeouts are exact to the condvar's resolution.

use core::fmt;
use core::ops::Range;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rangelock::internals::overlaps;
use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// One granted acquisition.
#[derive(Debug)]
struct Held {
    id: u64,
    range: Range<u64>,
    mode: Mode,
}

/// The held ranges and the id counter, behind the mutex.
#[derive(Debug, Default)]
struct State {
    held: Vec<Held>,
    next_id: u64,
}

impl State {
    /// Whether `range` in `mode` is compatible with every held range.
    fn admits(&self, range: &Range<u64>, mode: Mode) -> bool {
        self.held.iter().all(|h| !overlaps(&h.range, range) || mode.compatible(h.mode))
    }

    /// Records a granted acquisition and returns its token.
    fn grant(&mut self, range: Range<u64>, mode: Mode) -> GlobalMutexToken {
        let id = self.next_id;
        self.next_id += 1;
        self.held.push(Held { id, range, mode });
        GlobalMutexToken { id }
    }
}

/// A range lock made of one mutex-protected list of held ranges and a condvar.
///
/// See the [module documentation](self).
#[derive(Default)]
pub struct GlobalMutex {
    state: Mutex<State>,
    released: Condvar,
}

/// A range held in a [`GlobalMutex`].
#[derive(Debug)]
pub struct GlobalMutexToken {
    id: u64,
}

impl GlobalMutex {
    /// An empty lock.
    pub fn new() -> Self {
        Self::default()
    }

    /// Locks the state. A panic while the mutex is held cannot leave `State` inconsistent
    /// (every change is a single push or remove), so poisoning is ignored.
    #[inline]
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for GlobalMutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = self.state().held.len();
        f.debug_struct("GlobalMutex").field("held", &held).finish()
    }
}

// SAFETY: every grant checks compatibility against all held ranges under the mutex and
// records the range before the mutex is released; a release removes the entry under the
// mutex. The mutex orders a release (unlock of the mutex, Release) before any later
// acquisition that observes the removal (lock of the mutex, Acquire).
unsafe impl RawRangeLock for GlobalMutex {
    type Token = GlobalMutexToken;

    const NAME: &'static str = "global-mutex";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        let mut state = self.state();
        state.admits(&range, mode).then(|| state.grant(range, mode))
    }

    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token {
        rangelock::internals::assert_valid(&range);
        let mut state = self.state();
        while !state.admits(&range, mode) {
            state = self.released.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.grant(range, mode)
    }

    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        let mut state = self.state();
        while !state.admits(&range, mode) {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            state = self
                .released
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Some(state.grant(range, mode))
    }

    unsafe fn unlock(&self, token: Self::Token) {
        let mut state = self.state();
        if let Some(i) = state.held.iter().position(|h| h.id == token.id) {
            state.held.swap_remove(i);
        } else {
            debug_assert!(false, "global-mutex: unlock of a token that is not held");
        }
        drop(state);
        self.released.notify_all();
    }
}
