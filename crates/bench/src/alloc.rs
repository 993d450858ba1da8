//! A counting global allocator for the `memory` suite: [`CountingAlloc`] forwards to
//! [`System`] and keeps, per thread, the bytes that thread allocated minus the bytes it
//! freed ([`net_bytes`]).
//!
//! Install it in a binary (the `rangelock` CLI does, and so does the test that checks the
//! suite):
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: rangelock_bench::alloc::CountingAlloc = rangelock_bench::alloc::CountingAlloc;
//! ```
//!
//! The count is a plain thread-local [`Cell`], not a shared atomic: it costs every
//! allocation of every suite one thread-local add and no cache-line traffic. The price is
//! that it only sees the calling thread: memory another thread allocates (or frees) is not
//! in it, so a measurement must run on one thread and cause no allocation elsewhere. The
//! `memory` suite does exactly that. Without the allocator installed, [`net_bytes`] stays 0
//! and [`counting`] says so.

use core::cell::Cell;
use std::alloc::{GlobalAlloc, Layout, System};

/// The counting allocator: [`System`] plus a per-thread byte count.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountingAlloc;

thread_local! {
    /// Bytes this thread allocated minus bytes it freed. `const` initialisation and no
    /// destructor: accessing it never allocates, so the allocator may use it.
    static NET: Cell<i64> = const { Cell::new(0) };
}

#[inline]
fn count(delta: i64) {
    // `try_with`: during thread teardown the slot may be gone; such late frees go uncounted.
    let _ = NET.try_with(|n| n.set(n.get().wrapping_add(delta)));
}

fn signed(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

// SAFETY: every method forwards to the system allocator with the caller's arguments
// unchanged; counting touches only a thread-local integer and never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which we forward unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(signed(layout.size()));
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(signed(layout.size()));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-signed(layout.size()));
        // SAFETY: `ptr` was allocated by `System` through this allocator with `layout`
        // (the caller's contract), so handing it back to `System` is sound.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`; the caller upholds `realloc`'s contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(signed(new_size) - signed(layout.size()));
        }
        new
    }
}

/// Bytes the calling thread allocated minus the bytes it freed, since it started (0 when
/// [`CountingAlloc`] is not the global allocator). Take differences.
#[inline]
pub fn net_bytes() -> i64 {
    NET.try_with(Cell::get).unwrap_or(0)
}

/// Whether [`CountingAlloc`] is the global allocator: allocates 64 bytes and looks whether
/// [`net_bytes`] moved by exactly that.
pub fn counting() -> bool {
    let before = net_bytes();
    let probe = core::hint::black_box(Box::new([0u8; 64]));
    let moved = net_bytes() - before;
    drop(probe);
    moved == 64
}
