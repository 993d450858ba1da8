//! [`TwoPhaseArray`]: the two-phase EPVS resizable array of seed paper Figs. 4–6.

use super::slots::Slots;
use super::{CopyHook, OutOfBounds};
use crate::version::{Epvs, EpvsGuard, State, StateMachine};
use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The phase in which both runs are visible and the old one is being copied.
pub const COPYING: u8 = 1;

/// Elements copied per claimed chunk.
const CHUNK: usize = 1024;

/// A growable array of `u64` that keeps working while it grows (seed paper Figs. 4–6).
///
/// Growing is a two-step state machine `REST(v) -> COPYING(v) -> REST(v + 1)`. The first
/// critical section only allocates the new run; in `COPYING` the old run is immutable
/// and readable, pushes go to the new run's upper half (which is never copied into),
/// and threads that must wait (writes into the old half, pushes past the new run) help
/// copy in chunks instead. The thread that copies the last chunk steps the machine; the
/// second critical section swings the runs and frees the old one. The thread that
/// triggered the resize helps too, so the resize finishes without further calls.
///
/// Every operation has a `*_with` variant that runs inside a region the caller holds.
pub struct TwoPhaseArray {
    // Declared first: dropped first (see `ResizableArray`).
    epvs: Epvs,
    inner: Arc<Inner>,
}

struct Inner {
    /// The current run. Replaced only by the `COPYING -> REST` critical section; written
    /// by regions only at `REST`; read by regions in any phase.
    list: UnsafeCell<Slots>,
    /// The run being filled during `COPYING` (`None` at `REST`). Set and taken only by
    /// critical sections.
    new_list: UnsafeCell<Option<Slots>>,
    count: AtomicUsize,
    /// Length of the old run being copied (set when `COPYING` begins).
    copy_len: AtomicUsize,
    /// Start of the next chunk to copy (claimed with `fetch_add`).
    copy_next: AtomicUsize,
    /// Number of elements copied so far in this `COPYING` phase.
    copied: AtomicUsize,
    /// Called by the thread that copies the last chunk, before it steps the machine
    /// (instrumentation).
    copy_hook: Option<CopyHook>,
}

// SAFETY: `list` and `new_list` are replaced only inside critical sections of the owning
// array's `Epvs` and otherwise only read (shared) inside its protected regions; EPVS
// runs critical sections in mutual exclusion with all regions and orders them with the
// regions before and after. Element access goes through atomics.
unsafe impl Sync for Inner {}
// SAFETY: as above.
unsafe impl Send for Inner {}

/// The runs a region sees: `(list, new_list)`.
type Runs<'g> = (&'g Slots, Option<&'g Slots>);

impl Inner {
    fn runs<'g>(&'g self, _region: &'g EpvsGuard<'_>) -> Runs<'g> {
        // SAFETY: inside a protected region no critical section runs, so neither cell is
        // written while the borrows (tied to the region) live.
        unsafe { (&*self.list.get(), (*self.new_list.get()).as_ref()) }
    }
}

/// The growth machine of Fig. 5.
struct Grow {
    inner: Arc<Inner>,
}

impl StateMachine for Grow {
    fn next_step(&self, cur: State) -> Option<State> {
        match cur.phase() {
            State::REST => Some(State::new(cur.version(), COPYING)),
            // Relaxed: only decides readiness; the copied data reaches the critical
            // section through the epoch (it waits for the copying regions).
            _ => (self.inner.copied.load(Relaxed) >= self.inner.copy_len.load(Relaxed))
                .then(|| State::rest(cur.version() + 1)),
        }
    }

    fn on_entering_state(&self, _from: State, to: State) {
        // SAFETY: a critical section: no region and no other critical section is active.
        let (list, new_list) =
            unsafe { (&mut *self.inner.list.get(), &mut *self.inner.new_list.get()) };
        if to.phase() == COPYING {
            *new_list = Some(Slots::new((list.len() * 2).max(8)));
            // Relaxed: published to regions and `next_step` by the transition itself.
            self.inner.copy_len.store(list.len(), Relaxed);
            self.inner.copy_next.store(0, Relaxed);
            self.inner.copied.store(0, Relaxed);
        } else if let Some(new) = new_list.take() {
            *list = new; // frees the old run: no region can still see it
        }
    }
}

impl Default for TwoPhaseArray {
    fn default() -> Self {
        TwoPhaseArray::new()
    }
}

impl TwoPhaseArray {
    /// An empty array.
    pub fn new() -> TwoPhaseArray {
        TwoPhaseArray::with_capacity(0)
    }

    /// An empty array with room for `capacity` elements before the first resize.
    pub fn with_capacity(capacity: usize) -> TwoPhaseArray {
        Self::build(capacity, None)
    }

    /// Like [`with_capacity`](TwoPhaseArray::with_capacity), with `hook` called by the
    /// thread that copies the last chunk of each resize, before it asks to leave
    /// [`COPYING`]: a slow hook stretches the copy phase, during which reads and pushes
    /// go on. For instrumentation and benchmarks (the seed's slow-resize experiment).
    pub fn with_copy_hook(
        capacity: usize,
        hook: impl Fn() + Send + Sync + 'static,
    ) -> TwoPhaseArray {
        Self::build(capacity, Some(Box::new(hook)))
    }

    /// Like [`with_capacity`](TwoPhaseArray::with_capacity), on the given version scheme instead
    /// of a new [`Epvs::new`] (e.g. one on an epoch table of a chosen size, for the seed's
    /// constrained-table experiment). The array's versions continue from `epvs`'s.
    pub fn with_epvs(capacity: usize, epvs: Epvs) -> TwoPhaseArray {
        Self::build_on(epvs, capacity, None)
    }

    fn build(capacity: usize, copy_hook: Option<CopyHook>) -> TwoPhaseArray {
        Self::build_on(Epvs::new(), capacity, copy_hook)
    }

    fn build_on(epvs: Epvs, capacity: usize, copy_hook: Option<CopyHook>) -> TwoPhaseArray {
        TwoPhaseArray {
            epvs,
            inner: Arc::new(Inner {
                list: UnsafeCell::new(Slots::new(capacity)),
                new_list: UnsafeCell::new(None),
                count: AtomicUsize::new(0),
                copy_len: AtomicUsize::new(0),
                copy_next: AtomicUsize::new(0),
                copied: AtomicUsize::new(0),
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

    /// The array's version scheme (phase [`COPYING`] while growing).
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

    /// The current storage size (of the new run while growing).
    pub fn capacity(&self) -> usize {
        let g = self.enter();
        let (list, new) = self.inner.runs(&g);
        new.unwrap_or(list).len()
    }

    #[inline]
    fn check(&self, guard: &EpvsGuard<'_>) {
        assert!(std::ptr::eq(guard.epvs(), &self.epvs), "TwoPhaseArray: guard of another Epvs");
    }

    /// The element at `index`; `None` if `index >= len()`. A position whose push has not
    /// stored its value yet reads 0.
    #[inline]
    pub fn read(&self, index: usize) -> Option<u64> {
        self.epvs.with_region(move |guard| self.read_with(guard, index))
    }

    /// [`read`](TwoPhaseArray::read) inside the caller's region. Never waits.
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
        let (list, new) = self.inner.runs(guard);
        // In COPYING the old run is immutable and authoritative for its range; the new
        // run's upper half holds pushes made in COPYING.
        let slot = list.get(index).or_else(|| new.and_then(|n| n.get(index)));
        Some(slot.map_or(0, |s| s.load(Relaxed)))
    }

    /// Overwrites the element at `index`.
    ///
    /// # Errors
    ///
    /// [`OutOfBounds`] if `index >= len()`; nothing is written.
    #[inline]
    pub fn write(&self, index: usize, value: u64) -> Result<(), OutOfBounds> {
        // Not `write_with` alone: its waits refresh the guard, which would keep the guard
        // in memory on the fast path too. A write that must wait runs in a region of its
        // own (as in `ResizableArray::write`).
        let len = self.len();
        if index >= len {
            return Err(OutOfBounds { index, len });
        }
        if self.epvs.with_region(move |guard| self.try_write_in(guard, index, value)) {
            Ok(())
        } else {
            self.write_with(&mut self.enter(), index, value)
        }
    }

    /// [`write`](TwoPhaseArray::write) inside the caller's region. Writes into the old
    /// run wait (helping to copy, refreshing `guard`) until the array is at rest.
    ///
    /// # Panics
    ///
    /// If `guard` belongs to another `Epvs`, or must refresh while nested.
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
        while !self.try_write_in(guard, index, value) {
            if guard.state().phase() == COPYING {
                self.help_copy(guard);
            }
            guard.refresh();
        }
        Ok(())
    }

    /// Writes `value` at `index` (below `len()`) if the region's state lets it: `false`
    /// if the position lies in the old run while it is copied, or past the storage (its
    /// pusher is resizing).
    #[inline]
    fn try_write_in(&self, guard: &EpvsGuard<'_>, index: usize, value: u64) -> bool {
        let copying = guard.state().phase() == COPYING;
        let (list, new) = self.inner.runs(guard);
        let slot = match new {
            // The old run is being copied: only the upper half of the new run is
            // writable.
            Some(new) if copying && index >= list.len() => new.get(index),
            _ if !copying => list.get(index),
            _ => None,
        };
        match slot {
            Some(slot) => {
                slot.store(value, Relaxed);
                true
            }
            None => false,
        }
    }

    /// Appends `value`; returns its index.
    #[inline]
    pub fn push(&self, value: u64) -> usize {
        self.push_with(&mut self.enter(), value)
    }

    /// [`push`](TwoPhaseArray::push) inside the caller's region (which it may refresh).
    ///
    /// # Panics
    ///
    /// If `guard` belongs to another `Epvs`, or must refresh while nested.
    pub fn push_with(&self, guard: &mut EpvsGuard<'_>, value: u64) -> usize {
        self.check(guard);
        let pos = self.inner.count.fetch_add(1, Relaxed);
        loop {
            let state = guard.state();
            let (list, new) = self.inner.runs(guard);
            if state.phase() == COPYING {
                // Positions handed out since COPYING began lie past the old run (seed
                // Fig. 6, line 52) and go to the new run. But a push that reserved its
                // position earlier and then waited, unprotected, through whole resizes
                // (refresh leaves the region while a transition runs) can find it inside
                // the run being copied: storing into the new run would race with the copy
                // of that chunk and lose the value, so it waits for the rest state like a
                // write into the old run.
                self.help_copy(guard);
                if pos >= list.len() {
                    if let Some(slot) = new.and_then(|n| n.get(pos)) {
                        slot.store(value, Relaxed);
                        return pos;
                    }
                }
            } else if let Some(slot) = list.get(pos) {
                slot.store(value, Relaxed);
                return pos;
            } else {
                let grow = Grow { inner: Arc::clone(&self.inner) };
                // Busy/Stale: another resize is under way or done; refresh and re-check.
                let _ = self.epvs.execute_state_machine(grow, Some(state.version() + 1));
            }
            guard.refresh();
        }
    }

    /// Copies unclaimed chunks of the old run into the new one (in `COPYING`); the thread
    /// that completes the copy steps the machine.
    #[cold]
    fn help_copy(&self, guard: &EpvsGuard<'_>) {
        let (list, Some(new)) = self.inner.runs(guard) else {
            return;
        };
        let len = list.len();
        // Relaxed: a hint that spares finished copies the contended `fetch_add`.
        if self.inner.copy_next.load(Relaxed) >= len {
            return;
        }
        loop {
            let start = self.inner.copy_next.fetch_add(CHUNK, Relaxed);
            if start >= len {
                return;
            }
            let end = (start + CHUNK).min(len);
            new.copy_from(list, start, end);
            // Relaxed: the copies reach the next critical section through the epoch (it
            // waits for this region to end), not through this counter.
            if self.inner.copied.fetch_add(end - start, Relaxed) + (end - start) == len {
                if let Some(hook) = &self.inner.copy_hook {
                    hook();
                }
                // Starts `COPYING -> REST`; runs once this and every region leave.
                self.epvs.try_step();
            }
        }
    }
}

impl fmt::Debug for TwoPhaseArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwoPhaseArray")
            .field("len", &self.len())
            .field("epvs", &self.epvs)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::sync::Weak;
    use std::thread;

    #[test]
    fn sequential() {
        let a = TwoPhaseArray::new();
        assert_eq!(a.read(0), None);
        assert_eq!(a.write(3, 1), Err(OutOfBounds { index: 3, len: 0 }));
        for i in 0..5000u64 {
            assert_eq!(a.push(i), i as usize);
            assert!(a.epvs().state().is_rest(), "resize finished on its own");
        }
        for i in 0..5000 {
            assert_eq!(a.read(i), Some(i as u64));
        }
        a.write(4999, 1).unwrap();
        assert_eq!(a.read(4999), Some(1));
        assert!(a.capacity() >= 5000);
    }

    #[test]
    fn reads_and_pushes_proceed_in_copying() {
        let a = TwoPhaseArray::with_capacity(4);
        for i in 0..4 {
            a.push(i);
        }
        // Hold a region so the machine stops at COPYING before anyone copies.
        {
            let mut g = a.enter();
            // Full: this push installs the machine and refreshes into COPYING.
            assert_eq!(a.push_with(&mut g, 100), 4);
            // The pusher helped copy, so the machine may already be back at rest
            // (version 1) or still in COPYING(0) waiting for `g` to leave.
            let s = g.state();
            assert!(s == State::new(0, COPYING) || s == State::rest(1), "{s:?}");
            for i in 0..4 {
                assert_eq!(a.read_with(&g, i), Some(i as u64));
            }
            assert_eq!(a.read_with(&g, 4), Some(100));
        }
        assert_eq!(a.epvs().state(), State::rest(1));
        assert_eq!(a.capacity(), 8);
        a.write(0, 9).unwrap();
        assert_eq!(a.read(0), Some(9));
    }

    /// Writers own disjoint index sets and keep rewriting them with increasing values,
    /// pushers grow the array, readers check each writer's slots never go backwards (a
    /// lost write during a copy would make a value regress).
    #[test]
    fn concurrent_no_lost_writes() {
        const WRITERS: usize = 2;
        const SLOTS_PER_WRITER: usize = 16;
        const PUSHES: u64 = 20_000;
        let a = TwoPhaseArray::with_capacity(2);
        for _ in 0..WRITERS * SLOTS_PER_WRITER {
            a.push(0);
        }
        let done = AtomicBool::new(false);
        let last: Vec<AtomicU64> =
            (0..WRITERS * SLOTS_PER_WRITER).map(|_| AtomicU64::new(0)).collect();
        thread::scope(|s| {
            for w in 0..WRITERS {
                let (a, done, last) = (&a, &done, &last);
                s.spawn(move || {
                    let mut n = 0;
                    let mut g = a.enter();
                    while !done.load(Relaxed) {
                        n += 1;
                        for k in 0..SLOTS_PER_WRITER {
                            let i = w * SLOTS_PER_WRITER + k;
                            a.write_with(&mut g, i, n).unwrap();
                            last[i].store(n, Relaxed);
                        }
                        g.refresh();
                        for k in 0..SLOTS_PER_WRITER {
                            let i = w * SLOTS_PER_WRITER + k;
                            assert_eq!(a.read_with(&g, i), Some(n), "lost write at {i}");
                        }
                    }
                });
            }
            s.spawn(|| {
                let mut g = a.enter();
                for i in 0..PUSHES {
                    let idx = a.push_with(&mut g, i + 1);
                    assert_eq!(a.read_with(&g, idx), Some(i + 1));
                    if i % 32 == 0 {
                        g.refresh();
                    }
                }
                drop(g);
                done.store(true, Relaxed);
            });
        });
        let base = WRITERS * SLOTS_PER_WRITER;
        assert_eq!(a.len(), base + PUSHES as usize);
        for (i, l) in last.iter().enumerate() {
            assert_eq!(a.read(i), Some(l.load(Relaxed)));
        }
        let mut pushed: Vec<u64> = (base..a.len()).map(|i| a.read(i).unwrap()).collect();
        pushed.sort_unstable();
        assert!(pushed.iter().copied().eq(1..=PUSHES));
        assert!(a.epvs().state().version() >= 10);
    }

    #[test]
    fn concurrent_pushers() {
        const THREADS: u64 = 3;
        const PER: u64 = 5000;
        let a = TwoPhaseArray::new();
        thread::scope(|s| {
            for t in 0..THREADS {
                let a = &a;
                s.spawn(move || {
                    for i in 0..PER {
                        let v = (t << 32) | i;
                        let idx = a.push(v);
                        assert_eq!(a.read(idx), Some(v));
                    }
                });
            }
        });
        let mut all: Vec<u64> = (0..a.len()).map(|i| a.read(i).unwrap()).collect();
        all.sort_unstable();
        let mut want: Vec<u64> =
            (0..THREADS).flat_map(|t| (0..PER).map(move |i| (t << 32) | i)).collect();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn no_leak() {
        let weak: Weak<Inner>;
        {
            let a = TwoPhaseArray::new();
            for i in 0..3000 {
                a.push(i);
            }
            weak = Arc::downgrade(&a.inner);
        }
        assert!(weak.upgrade().is_none());
    }
}
