//! Leak check: live heap allocations return to their baseline after a lock that was
//! stressed from several threads is dropped. Its own test binary, because it installs a
//! counting global allocator and must not run next to unrelated tests.
#![cfg(not(loom))]

/// The checkers of `crates/rangelock/tests` (one copy for the product's tests and these).
#[path = "../../rangelock/tests/support/mod.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use rangelock::internals::RawRangeLock;
use rangelock_baselines::{GlobalMutex, KernelTree, KoganList, Segments, SongSkipList};

/// Counts live allocations.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as ours; a reallocation keeps the count.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Live allocations now. Epoch actions still pending when a lock drops run in its drop,
/// so nothing needs flushing first.
fn settle() -> isize {
    live()
}

fn workload<R: RawRangeLock>(make: impl Fn() -> R) {
    let cfg = support::StressConfig {
        threads: 3,
        ops_per_thread: 2_000,
        ..support::StressConfig::short()
    };
    let lock = make();
    support::stress(lock, &cfg);
}

/// Runs the workload once to warm up lazily initialized globals (thread-locals of the
/// test thread, the standard library's own), then checks that a second run leaves no
/// allocation behind.
fn no_leak<R: RawRangeLock>(make: impl Fn() -> R) {
    workload(&make);
    let baseline = settle();
    workload(&make);
    let after = settle();
    assert!(
        after <= baseline,
        "{}: {} allocations still live after the lock was dropped",
        R::NAME,
        after - baseline
    );
}

// One test function: the allocation counter is process-wide, so variants must not run
// concurrently.
#[test]
fn variants_do_not_leak() {
    no_leak(rangelock::internals::SkipList::new);
    no_leak(KoganList::new);
    no_leak(SongSkipList::new);
    no_leak(KernelTree::new);
    no_leak(|| Segments::new(64, 4));
    no_leak(GlobalMutex::new);
}
