//! Test-only locks and helpers (never shipped as variants).

#![allow(dead_code)]

use core::ops::Range;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use rangelock::internals::{Lock, RawRangeLock};
use rangelock::Mode;
use rangelock_bench::harness::WorkBudget;
use rangelock_bench::peers::FcntlOfd;
use rangelock_bench::variants::{HeightVisitor, VariantSet, VariantVisitor};
use rangelock_bench::workload::Unlocked;

/// Next token and the held (token, range, mode) triples.
type State = (u64, Vec<(u64, Range<u64>, Mode)>);

/// A correct but slow range lock: the held ranges in a vector under one mutex.
#[derive(Debug, Default)]
pub struct ListUnderMutex {
    held: Mutex<State>,
    freed: Condvar,
}

impl ListUnderMutex {
    fn grab(&self, state: &mut State, range: &Range<u64>, mode: Mode) -> Option<u64> {
        let conflict = state
            .1
            .iter()
            .any(|(_, r, m)| r.start < range.end && range.start < r.end && !m.compatible(mode));
        if conflict {
            return None;
        }
        state.0 += 1;
        state.1.push((state.0, range.clone(), mode));
        Some(state.0)
    }
}

// SAFETY: every grant checks all held ranges under one mutex; unlock and lock synchronise
// through that mutex.
unsafe impl RawRangeLock for ListUnderMutex {
    type Token = u64;
    const NAME: &'static str = "test-list";

    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<u64> {
        let mut g = self.held.lock().unwrap();
        self.grab(&mut g, &range, mode)
    }

    fn lock(&self, range: Range<u64>, mode: Mode) -> u64 {
        let mut g = self.held.lock().unwrap();
        loop {
            if let Some(t) = self.grab(&mut g, &range, mode) {
                return t;
            }
            g = self.freed.wait(g).unwrap();
        }
    }

    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<u64> {
        let mut g = self.held.lock().unwrap();
        loop {
            if let Some(t) = self.grab(&mut g, &range, mode) {
                return Some(t);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            g = self.freed.wait_timeout(g, deadline - now).unwrap().0;
        }
    }

    unsafe fn unlock(&self, token: u64) {
        let mut g = self.held.lock().unwrap();
        let i = g.1.iter().position(|(t, _, _)| *t == token).expect("held token");
        g.1.swap_remove(i);
        self.freed.notify_all();
    }
}

/// A coarse lock: every range conflicts with every other (one global flag).
#[derive(Debug, Default)]
pub struct Whole {
    busy: Mutex<bool>,
    freed: Condvar,
}

// SAFETY: at most one holder at all, whatever the range.
unsafe impl RawRangeLock for Whole {
    type Token = ();
    const NAME: &'static str = "test-whole";

    fn try_lock(&self, _: Range<u64>, _: Mode) -> Option<()> {
        let mut b = self.busy.lock().unwrap();
        (!*b).then(|| *b = true)
    }

    fn lock(&self, _: Range<u64>, _: Mode) {
        let mut b = self.busy.lock().unwrap();
        while *b {
            b = self.freed.wait(b).unwrap();
        }
        *b = true;
    }

    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<()> {
        self.try_lock(range, mode)
    }

    unsafe fn unlock(&self, (): ()) {
        *self.busy.lock().unwrap() = false;
        self.freed.notify_one();
    }
}

/// The test registry: both test locks, the fcntl peer, the list lock for heights.
#[derive(Debug)]
pub struct TestSet;

impl VariantSet for TestSet {
    fn locks(v: &mut impl VariantVisitor) {
        v.lock(Lock::<ListUnderMutex>::default);
        v.lock(Lock::<Whole>::default);
    }

    fn peers(v: &mut impl VariantVisitor) {
        v.visit(FcntlOfd::NAME, &FcntlOfd::in_temp_dir);
    }

    fn heights(v: &mut impl HeightVisitor) {
        v.visit("test-list", |_height| Lock::<ListUnderMutex>::default());
    }

    fn ceiling(v: &mut impl VariantVisitor) {
        v.visit(Unlocked::NAME, &|| Ok(Unlocked));
    }
}

/// The work budget of the tests' suite runs: 10 s of CPU time per measurement. The
/// tests of one binary run in parallel in one process and spend each other's budget (the
/// process's CPU clock), so it is far above what a tiny case needs (milliseconds): it cuts
/// a case that runs away, never one that shares the machine. (`tests/budget.rs` checks
/// the budget itself, alone in its process.)
pub const TEST_BUDGET: WorkBudget = WorkBudget::cpu(std::time::Duration::from_secs(10));

/// A fresh, empty directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory of its own: tests that run one suite at once (concurrently, in
    /// one process) must not remove each other's reports.
    pub fn new(tag: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        // Relaxed: only uniqueness matters.
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("rangelock-bench-{tag}-{}-{n}", std::process::id());
        let p = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
