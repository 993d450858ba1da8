//! [`ResizableArray`]: the simple EPVS resizable array of seed paper Fig. 3.

use super::slots::Slots;
use super::{CopyHook, OutOfBounds};
use crate::primitive::AtomicUsize;
use crate::version::{Epvs, EpvsGuard};
use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A growable array of `u64` whose reads, writes and pushes run latch-free in EPVS
/// protected regions; growing is a version transition whose critical section swaps in
/// a larger copy while no region is active (seed paper Fig. 3).
///
/// Every operation has a `*_with` variant that runs inside a region the caller already
/// holds ([`enter`](ResizableArray::enter)), for threads that keep protection and
/// [`refresh`](EpvsGuard::refresh) it periodically.
pub struct ResizableArray {
    // Declared first: dropped first, so in-flight resizes complete (or are abandoned)
    // before the storage goes.
    epvs: Epvs,
    inner: Arc<Inner>,
}

struct Inner {
    /// The storage; replaced only by resize critical sections of `epvs`, read only inside
    /// its protected regions.
    slots: UnsafeCell<Slots>,
    /// Positions handed out by `push`; may run ahead of the capacity while a resize is
    /// pending.
    count: AtomicUsize,
    /// Called in each resize critical section after the copy (instrumentation).
    copy_hook: Option<CopyHook>,
}

// SAFETY: `slots` is written only inside critical sections of the owning array's `Epvs`
// and read only inside its protected regions; EPVS runs critical sections in mutual
// exclusion with all regions and with each other, and orders them (happens-before) with
// the regions before and after. Everything else is atomic.
unsafe impl Sync for Inner {}
// SAFETY: as above; `Slots` itself is `Send`.
unsafe impl Send for Inner {}

impl Inner {
    /// The storage, for a region of the owning `Epvs`.
    fn slots<'g>(&'g self, _region: &'g EpvsGuard<'_>) -> &'g Slots {
        // SAFETY: inside a protected region no critical section runs, so nothing writes
        // `slots` while the returned borrow (tied to the region) lives.
        unsafe { &*self.slots.get() }
    }

    /// The resize critical section: grow to hold at least `want` elements.
    fn grow(&self, want: usize) {
        // SAFETY: runs only as a critical section of the owning `Epvs`: no region and no
        // other critical section is active, so this is the only access.
        let slots = unsafe { &mut *self.slots.get() };
        if slots.len() < want {
            let cap = want.max(slots.len() * 2).max(8);
            *slots = slots.grown(cap);
            if let Some(hook) = &self.copy_hook {
                hook();
            }
        }
    }
}

impl Default for ResizableArray {
    fn default() -> Self {
        ResizableArray::new()
    }
}

impl ResizableArray {
    /// An empty array.
    pub fn new() -> ResizableArray {
        ResizableArray::with_capacity(0)
    }

    /// An empty array with room for `capacity` elements before the first resize.
    pub fn with_capacity(capacity: usize) -> ResizableArray {
        Self::build(capacity, None)
    }

    /// Like [`with_capacity`](ResizableArray::with_capacity), with `hook` called in every
    /// resize critical section right after the copy, i.e. while every operation waits:
    /// for instrumentation and benchmarks (the seed's slow-resize experiment sleeps here).
    pub fn with_copy_hook(
        capacity: usize,
        hook: impl Fn() + Send + Sync + 'static,
    ) -> ResizableArray {
        Self::build(capacity, Some(Box::new(hook)))
    }

    /// Like [`with_capacity`](ResizableArray::with_capacity), on the given version scheme instead
    /// of a new [`Epvs::new`] (e.g. one on an epoch table of a chosen size, for the seed's
    /// constrained-table experiment). The array's versions continue from `epvs`'s.
    pub fn with_epvs(capacity: usize, epvs: Epvs) -> ResizableArray {
        Self::build_on(epvs, capacity, None)
    }

    fn build(capacity: usize, copy_hook: Option<CopyHook>) -> ResizableArray {
        Self::build_on(Epvs::new(), capacity, copy_hook)
    }

    fn build_on(epvs: Epvs, capacity: usize, copy_hook: Option<CopyHook>) -> ResizableArray {
        ResizableArray {
            epvs,
            inner: Arc::new(Inner {
                slots: UnsafeCell::new(Slots::new(capacity)),
                count: AtomicUsize::new(0),
                copy_hook,
            }),
        }
    }

    /// Enters a protected region of this array, for the `*_with` operations.
    // `inline(always)`: see `Epvs::enter`.
    #[inline(always)]
    pub fn enter(&self) -> EpvsGuard<'_> {
        self.epvs.enter()
    }

    /// The array's version scheme (its version counts the resizes).
    pub fn epvs(&self) -> &Epvs {
        &self.epvs
    }

    /// Number of positions handed out by `push` (including pushes still storing).
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.count.load(Relaxed)
    }

    /// Whether nothing was pushed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The current storage size.
    pub fn capacity(&self) -> usize {
        let g = self.enter();
        self.inner.slots(&g).len()
    }

    #[inline]
    fn check(&self, guard: &EpvsGuard<'_>) {
        assert!(std::ptr::eq(guard.epvs(), &self.epvs), "ResizableArray: guard of another Epvs");
    }

    /// The element at `index`; `None` if `index >= len()`. A position whose push has not
    /// stored its value yet reads 0.
    #[inline]
    pub fn read(&self, index: usize) -> Option<u64> {
        self.epvs.with_region(move |guard| self.read_with(guard, index))
    }

    /// [`read`](ResizableArray::read) inside the caller's region.
    ///
    /// # Panics
    ///
    /// If `guard` belongs to another `Epvs`.
    #[inline]
    pub fn read_with(&self, guard: &EpvsGuard<'_>, index: usize) -> Option<u64> {
        self.check(guard);
        if index >= self.len() {
            return None;
        }
        Some(self.inner.slots(guard).get(index).map_or(0, |s| s.load(Relaxed)))
    }

    /// Overwrites the element at `index`.
    ///
    /// # Errors
    ///
    /// [`OutOfBounds`] if `index >= len()`; nothing is written.
    #[inline]
    pub fn write(&self, index: usize, value: u64) -> Result<(), OutOfBounds> {
        // Not `write_with`: its slow path refreshes the guard, which would keep the guard
        // in memory on the fast path too. A position not yet covered by the storage (its
        // pusher is resizing) is written in a region of its own, which waits.
        let len = self.len();
        if index >= len {
            return Err(OutOfBounds { index, len });
        }
        if !self.epvs.with_region(move |guard| self.try_place(guard, index, value)) {
            self.wait_and_place(&mut self.enter(), index, value);
        }
        Ok(())
    }

    /// [`write`](ResizableArray::write) inside the caller's region. If the position was
    /// handed out but the resize making room for it is still pending, refreshes `guard`
    /// until it is done.
    ///
    /// # Panics
    ///
    /// If `guard` belongs to another `Epvs`, or must refresh while nested (see
    /// [`EpvsGuard::refresh`]).
    #[inline]
    pub fn write_with(
        &self,
        guard: &mut EpvsGuard<'_>,
        index: usize,
        value: u64,
    ) -> Result<(), OutOfBounds> {
        self.check(guard);
        let len = self.len();
        if index >= len {
            return Err(OutOfBounds { index, len });
        }
        if !self.try_place(guard, index, value) {
            self.wait_and_place(guard, index, value);
        }
        Ok(())
    }

    /// Stores `value` at position `index` (handed out, but not yet covered by the
    /// storage: the pusher that owns it is resizing), refreshing `guard` to let that
    /// resize run.
    #[cold]
    #[inline(never)]
    fn wait_and_place(&self, guard: &mut EpvsGuard<'_>, index: usize, value: u64) {
        while !self.try_place(guard, index, value) {
            guard.refresh();
        }
    }

    /// Appends `value`; returns its index.
    #[inline]
    pub fn push(&self, value: u64) -> usize {
        // As in `write`: the common case in a `with_region` region; a push whose position
        // needs a resize places its value from a region of its own, which waits.
        let (pos, placed) = self.epvs.with_region(move |guard| {
            let pos = self.inner.count.fetch_add(1, Relaxed);
            (pos, self.try_place(guard, pos, value))
        });
        if !placed {
            self.place_with(&mut self.enter(), pos, value);
        }
        pos
    }

    /// [`push`](ResizableArray::push) inside the caller's region (which it may refresh
    /// to let a resize run).
    ///
    /// # Panics
    ///
    /// If `guard` belongs to another `Epvs`, or must refresh while nested.
    pub fn push_with(&self, guard: &mut EpvsGuard<'_>, value: u64) -> usize {
        self.check(guard);
        let pos = self.inner.count.fetch_add(1, Relaxed);
        self.place_with(guard, pos, value);
        pos
    }

    /// Stores `value` at the handed-out position `pos` if the storage covers it (`false`
    /// otherwise).
    #[inline]
    fn try_place(&self, guard: &EpvsGuard<'_>, pos: usize, value: u64) -> bool {
        match self.inner.slots(guard).get(pos) {
            Some(slot) => {
                slot.store(value, Relaxed);
                true
            }
            None => false,
        }
    }

    /// Stores `value` at the handed-out position `pos`, requesting the resize that makes
    /// room for it and refreshing `guard` until it has run.
    fn place_with(&self, guard: &mut EpvsGuard<'_>, pos: usize, value: u64) {
        while !self.try_place(guard, pos, value) {
            self.request_grow(guard, pos + 1);
            guard.refresh();
        }
    }

    #[cold]
    fn request_grow(&self, guard: &EpvsGuard<'_>, want: usize) {
        let inner = Arc::clone(&self.inner);
        // Target = the next version: concurrent pushers observing the same full array
        // request the same target, so one resize runs. Busy/Stale are fine: some other
        // resize is under way or done; the caller refreshes and re-checks.
        let _ = self.epvs.advance_version(move || inner.grow(want), Some(guard.version() + 1));
    }
}

impl fmt::Debug for ResizableArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResizableArray")
            .field("len", &self.len())
            .field("epvs", &self.epvs)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Weak;
    use std::thread;

    #[test]
    fn sequential() {
        let a = ResizableArray::new();
        assert_eq!(a.read(0), None);
        assert_eq!(a.write(0, 1), Err(OutOfBounds { index: 0, len: 0 }));
        for i in 0..100 {
            assert_eq!(a.push(i * 10), i as usize);
        }
        assert_eq!(a.len(), 100);
        assert!(a.capacity() >= 100);
        for i in 0..100 {
            assert_eq!(a.read(i), Some(i as u64 * 10));
        }
        a.write(5, 7).unwrap();
        assert_eq!(a.read(5), Some(7));
        assert_eq!(a.read(100), None);
        // 0 -> 8 -> 16 -> 32 -> 64 -> 128: one version per resize.
        assert_eq!(a.epvs().state().version(), 5);
    }

    #[test]
    fn concurrent_push_read_write_pinned() {
        const THREADS: u64 = 3;
        const PER: u64 = 2000;
        let a = ResizableArray::with_capacity(4);
        thread::scope(|s| {
            for t in 0..THREADS {
                let a = &a;
                s.spawn(move || {
                    // Thread 0 enters per operation; the others stay pinned.
                    let mut guard = (t != 0).then(|| a.enter());
                    let mut mine = Vec::new();
                    for i in 0..PER {
                        let v = (t << 32) | i;
                        let idx = match guard.as_mut() {
                            None => a.push(v),
                            Some(g) => a.push_with(g, v),
                        };
                        mine.push((idx, v));
                        if let Some(g) = guard.as_mut().filter(|_| i % 64 == 0) {
                            g.refresh();
                        }
                        let (idx, val) = mine[(i as usize * 7) % mine.len()];
                        let got = match &guard {
                            None => a.read(idx),
                            Some(g) => a.read_with(g, idx),
                        };
                        assert_eq!(got, Some(val));
                    }
                    drop(guard);
                    // Rewrite own slots (each slot is owned by the thread that pushed it).
                    for &(idx, v) in &mine {
                        a.write(idx, v + 1).unwrap();
                    }
                    mine
                });
            }
        });
        assert_eq!(a.len(), (THREADS * PER) as usize);
        let mut seen: Vec<u64> = (0..a.len()).map(|i| a.read(i).unwrap()).collect();
        seen.sort_unstable();
        let mut want: Vec<u64> =
            (0..THREADS).flat_map(|t| (0..PER).map(move |i| ((t << 32) | i) + 1)).collect();
        want.sort_unstable();
        assert_eq!(seen, want, "every pushed value is in exactly one slot");
    }

    #[test]
    fn no_leak() {
        let weak: Weak<Inner>;
        {
            let a = ResizableArray::new();
            for i in 0..50 {
                a.push(i);
            }
            weak = Arc::downgrade(&a.inner);
        }
        assert!(weak.upgrade().is_none());
    }

    #[test]
    #[should_panic(expected = "guard of another Epvs")]
    fn foreign_guard_panics() {
        let a = ResizableArray::new();
        let b = ResizableArray::new();
        a.read_with(&b.enter(), 0);
    }
}
