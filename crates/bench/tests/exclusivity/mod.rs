//! The exclusivity checker of the client-side peers' stress tests (`dslr-shm` in
//! `server_suites.rs`, `citron-like` in `citron.rs`): exclusive holders write their id over
//! their range and verify it after, shared holders count themselves in and check that no
//! writer is inside. Violations are counted, not asserted inside the critical section, so
//! a broken lock fails its test instead of leaving other threads waiting on a range a
//! panicked thread held.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use rangelock::Mode;

/// Per-unit owners and reader counts over a space of units, and the violations seen.
///
/// SeqCst on every access of `owner`, `readers` and `violations`: the checker's own
/// accesses must not be reordered around each other, or an overlap could go unseen; they
/// pair with the other holders' accesses of the same arrays.
pub struct Checker {
    owner: Vec<AtomicU64>,
    readers: Vec<AtomicU64>,
    violations: AtomicU64,
    /// Whether a holder yields its CPU while it has marked its range (see
    /// [`Checker::yielding`]).
    yielding: bool,
}

impl Checker {
    /// A checker over `units` units.
    pub fn new(units: u64) -> Checker {
        let cells = || (0..units).map(|_| AtomicU64::new(0)).collect();
        Checker { owner: cells(), readers: cells(), violations: AtomicU64::new(0), yielding: false }
    }

    /// A holder yields its CPU (`yield_now`) while its range is marked, so other holders run
    /// inside its hold whether or not the machine gives the threads two CPUs at once: on a
    /// busy machine, a hold a few instructions long is almost never overlapped otherwise,
    /// and a negative control (a broken lock) would pass by luck.
    #[allow(dead_code)] // each test binary uses its own subset
    pub fn yielding(self) -> Checker {
        Checker { yielding: true, ..self }
    }

    /// Between marking a range and checking it: a spin, or a yield of the CPU.
    fn inside(&self) {
        if self.yielding {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }

    /// Checks one hold of `range` in `mode` by holder `id` (non-zero), made while the lock
    /// claims to hold it.
    pub fn hold(&self, id: u64, range: &Range<u64>, mode: Mode) {
        let span = range.start as usize..range.end as usize;
        let bad = |ok: bool| {
            if !ok {
                self.violations.fetch_add(1, Ordering::SeqCst);
            }
        };
        match mode {
            Mode::Exclusive => {
                for u in span.clone() {
                    bad(self.readers[u].load(Ordering::SeqCst) == 0);
                    bad(self.owner[u].swap(id, Ordering::SeqCst) == 0);
                }
                self.inside();
                for u in span {
                    bad(self.readers[u].load(Ordering::SeqCst) == 0);
                    bad(self.owner[u].swap(0, Ordering::SeqCst) == id);
                }
            }
            Mode::Shared => {
                for u in span.clone() {
                    self.readers[u].fetch_add(1, Ordering::SeqCst);
                    bad(self.owner[u].load(Ordering::SeqCst) == 0);
                }
                self.inside();
                for u in span {
                    bad(self.owner[u].load(Ordering::SeqCst) == 0);
                    self.readers[u].fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// The violations seen so far.
    pub fn violations(&self) -> u64 {
        self.violations.load(Ordering::SeqCst)
    }
}
