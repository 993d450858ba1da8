//! Leak check for the epvs-array variants and BRAVO: a counting global allocator, live bytes
//! before and after building, growing (11 resizes each) and dropping each array.
//!
//! Only the test thread's allocations are counted, and the test is single-threaded:
//! a contended lock makes `parking_lot` grow its global parking table, whose old tables it
//! never frees by design, which would show up here as noise.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

use rangelock_bench::arrays::{
    ArrayConfig, ArraySession, BenchArray, BravoArray, EpvsPinnedArray, EpvsSimpleArray,
    EpvsTwoPhaseArray, LatchFreeMock, RwLockParkingLotArray, RwLockStdArray,
};
use rangelock_bench::peers::bravo::{Bravo, VisibleReaders};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Count only the test thread's allocations: the test harness's own threads allocate
    /// and free on their own schedule. (`const` init, no destructor: no allocation inside
    /// the allocator.)
    static TRACKED: Cell<bool> = const { Cell::new(false) };
}

fn count(delta: isize) {
    if TRACKED.with(Cell::get) {
        LIVE.fetch_add(delta, Relaxed);
    }
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller upholds `alloc`'s contract, which we forward.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: as in `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: as in `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn grow_and_drop<A: BenchArray>() {
    let cfg = ArrayConfig { min_capacity: 2, mock_capacity: 1 << 12, ..ArrayConfig::default() };
    let arr = A::new(&cfg);
    let mut sess = arr.session();
    for k in 0..3_000 {
        sess.push(k);
        sess.write(k as usize / 2, k);
        sess.read(k as usize);
    }
    assert_eq!(sess.len(), 3_000, "{}", A::NAME);
}

#[test]
fn arrays_and_bravo_do_not_leak() {
    // Warm up once: thread-locals and lazily initialised statics stay allocated.
    grow_and_drop::<BravoArray>();
    grow_and_drop::<EpvsSimpleArray>();
    grow_and_drop::<EpvsPinnedArray>();
    grow_and_drop::<EpvsTwoPhaseArray>();
    TRACKED.with(|t| t.set(true));
    let before = LIVE.load(Relaxed);
    for _ in 0..3 {
        grow_and_drop::<LatchFreeMock>();
        grow_and_drop::<RwLockStdArray>();
        grow_and_drop::<RwLockParkingLotArray>();
        grow_and_drop::<BravoArray>();
        grow_and_drop::<EpvsSimpleArray>();
        grow_and_drop::<EpvsPinnedArray>();
        grow_and_drop::<EpvsTwoPhaseArray>();
        let lock = Bravo::with_table(vec![1u8; 100], VisibleReaders::new(8).into());
        lock.write().push(2);
        assert_eq!(lock.read().len(), 101);
    }
    let after = LIVE.load(Relaxed);
    TRACKED.with(|t| t.set(false));
    assert_eq!(after, before, "live bytes grew by {}", after - before);
}
