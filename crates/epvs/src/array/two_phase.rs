//! [`TwoPhaseArray`]: the two-phase EPVS resizable array of seed paper Figs. 4–6.

use super::slots::Slots;
use super::{CopyHook, OutOfBounds};
use crate::primitive::{self as prim, AtomicU64, AtomicUsize};
use crate::version::{Epvs, EpvsGuard, State, StateMachine};
use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Arc;

/// The phase in which both runs are visible and the old one is being copied.
pub const COPYING: u8 = 1;

/// Elements copied per claimed chunk.
#[cfg(not(loom))]
const CHUNK: usize = 1024;
/// Elements copied per claimed chunk (one in the models, so two chunks fit in two slots).
#[cfg(loom)]
const CHUNK: usize = 1;

/// A chunk of the old run nobody has started to copy.
const UNCLAIMED: usize = 0;
/// A chunk a thread is copying.
const CLAIMED: usize = 1;
/// A chunk whose elements are in the new run: its reads and writes go there.
const COPIED: usize = 2;

/// A growable array of `u64` that keeps working while it grows (seed paper Figs. 4–6).
///
/// Growing is a two-step state machine `REST(v) -> COPYING(v) -> REST(v + 1)`. The first
/// critical section only allocates the new run; in `COPYING` both runs are visible and the
/// old one is copied chunk by chunk by whoever comes along: the thread that triggered the
/// resize, pushes, and writes into a chunk nobody has copied yet (which copy that chunk
/// first). Each chunk of the old run is either not yet copied (reads go to the old run,
/// which no one writes in `COPYING`) or copied (reads and writes go to the new run); a
/// write waits only while another thread is copying its chunk. Pushes go to the new run's
/// upper half and wait only when it is full. The thread that copies the last chunk steps
/// the machine; the second critical section swings the runs and frees the old one, so the
/// resize finishes without further calls.
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
    /// The run being filled and its chunks' states, during `COPYING` (`None` at `REST`).
    /// Set and taken only by critical sections.
    growth: UnsafeCell<Option<Growth>>,
    count: AtomicUsize,
    /// Length of the old run being copied (set when `COPYING` begins).
    copy_len: AtomicUsize,
    /// The next chunk `help_copy` tries to claim (a hint: claims are by chunk state).
    copy_next: AtomicUsize,
    /// Number of elements copied so far in this `COPYING` phase.
    copied: AtomicUsize,
    /// Called by the thread that copies the last chunk, before it steps the machine
    /// (instrumentation).
    copy_hook: Option<CopyHook>,
}

/// The new run of a resize and how far the old one has been copied into it.
struct Growth {
    new: Slots,
    /// One of `UNCLAIMED`, `CLAIMED`, `COPIED` per `CHUNK` elements of the old run.
    chunks: Box<[AtomicUsize]>,
}

// SAFETY: `list` and `growth` are replaced only inside critical sections of the owning
// array's `Epvs` and otherwise only read (shared) inside its protected regions; EPVS
// runs critical sections in mutual exclusion with all regions and orders them with the
// regions before and after. Element access goes through atomics.
unsafe impl Sync for Inner {}
// SAFETY: as above.
unsafe impl Send for Inner {}

/// The runs a region sees: the current run and, in `COPYING`, the growth.
type Runs<'g> = (&'g Slots, Option<&'g Growth>);

impl Inner {
    #[inline]
    fn runs<'g>(&'g self, _region: &'g EpvsGuard<'_>) -> Runs<'g> {
        // SAFETY: inside a protected region no critical section runs, so neither cell is
        // written while the borrows (tied to the region) live.
        unsafe { (&*self.list.get(), (*self.growth.get()).as_ref()) }
    }
}

impl Growth {
    /// The slot that holds `index` now, for reading (`old` is the run being copied).
    /// Out of line: a resize is rare, and the rest-state read stays a few instructions.
    #[cold]
    #[inline(never)]
    fn readable<'a>(&'a self, old: &'a Slots, index: usize) -> Option<&'a AtomicU64> {
        if index >= old.len() {
            return self.new.get(index);
        }
        // Acquire: pairs with the Release in `TwoPhaseArray::copy_chunk`, so a copied
        // chunk's new slots hold at least the copied values.
        if self.chunks[index / CHUNK].load(Acquire) == COPIED {
            self.new.get(index)
        } else {
            old.get(index) // nobody writes the old run in COPYING
        }
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
        let (list, growth) =
            unsafe { (&mut *self.inner.list.get(), &mut *self.inner.growth.get()) };
        if to.phase() == COPYING {
            let chunks = list.len().div_ceil(CHUNK);
            *growth = Some(Growth {
                new: Slots::new((list.len() * 2).max(8)),
                chunks: (0..chunks).map(|_| AtomicUsize::new(UNCLAIMED)).collect(),
            });
            // Relaxed: published to regions and `next_step` by the transition itself.
            self.inner.copy_len.store(list.len(), Relaxed);
            self.inner.copy_next.store(0, Relaxed);
            self.inner.copied.store(0, Relaxed);
        } else if let Some(growth) = growth.take() {
            *list = growth.new; // frees the old run: no region can still see it
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
                growth: UnsafeCell::new(None),
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
        let (list, growth) = self.inner.runs(&g);
        growth.map_or(list, |g| &g.new).len()
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
        let slot = match self.inner.runs(guard) {
            (list, None) => list.get(index),
            (list, Some(growth)) => growth.readable(list, index),
        };
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

    /// [`write`](TwoPhaseArray::write) inside the caller's region. While the array grows,
    /// a write into a chunk nobody has copied copies it first; a write into a chunk
    /// another thread is copying waits (helping to copy, refreshing `guard`).
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
    /// if another thread is copying the position's chunk, or if the position lies past
    /// the storage (its pusher is resizing).
    #[inline]
    fn try_write_in(&self, guard: &EpvsGuard<'_>, index: usize, value: u64) -> bool {
        let slot = match self.inner.runs(guard) {
            (list, None) => list.get(index),
            (list, Some(growth)) => self.writable(list, growth, index),
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
            let (list, growth) = self.inner.runs(guard);
            if let Some(growth) = growth {
                // Positions handed out since COPYING began lie past the old run (seed
                // Fig. 6, line 52) and go to the new run. But a push that reserved its
                // position earlier and then waited, unprotected, through whole resizes
                // (refresh leaves the region while a transition runs) can find it inside
                // the run being copied: it stores like a write, after its chunk's copy
                // (storing before it would lose the value).
                self.help_copy(guard);
                if let Some(slot) = self.writable(list, growth, pos) {
                    slot.store(value, Relaxed);
                    return pos;
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

    /// The slot a region in `COPYING` may write `index` into: in the new run, once the
    /// old run's chunk holding `index` is copied (copying it here if nobody has claimed
    /// it); `None` while another thread copies that chunk, or past the new run. Out of
    /// line, as `Growth::readable`.
    #[cold]
    #[inline(never)]
    fn writable<'g>(
        &self,
        old: &'g Slots,
        growth: &'g Growth,
        index: usize,
    ) -> Option<&'g AtomicU64> {
        if index < old.len() {
            let chunk = index / CHUNK;
            // Acquire: pairs with the Release in `copy_chunk`: the chunk's copy happens
            // before this write, so the copy cannot overwrite it.
            let copied =
                growth.chunks[chunk].load(Acquire) == COPIED || self.copy_chunk(old, growth, chunk);
            if !copied {
                return None;
            }
        }
        growth.new.get(index)
    }

    /// Copies unclaimed chunks of the old run into the new one (in `COPYING`); the thread
    /// that completes the copy steps the machine.
    #[cold]
    fn help_copy(&self, guard: &EpvsGuard<'_>) {
        let (old, Some(growth)) = self.inner.runs(guard) else {
            return;
        };
        let chunks = growth.chunks.len();
        // Relaxed: a hint that spares finished copies the contended `fetch_add`.
        if self.inner.copy_next.load(Relaxed) >= chunks {
            return;
        }
        loop {
            let chunk = self.inner.copy_next.fetch_add(1, Relaxed);
            if chunk >= chunks {
                return;
            }
            self.copy_chunk(old, growth, chunk); // claimed by a write if not by us
        }
    }

    /// Claims and copies `chunk` of `old` into the new run; `false` if another thread
    /// claimed it first. The thread whose copy completes the old run runs the copy hook
    /// and steps the machine.
    #[cold]
    fn copy_chunk(&self, old: &Slots, growth: &Growth, chunk: usize) -> bool {
        let state = &growth.chunks[chunk];
        // Relaxed: the claim only makes the copier unique; the old run it reads was
        // published by the transition into COPYING and is not written after it.
        match state.compare_exchange(UNCLAIMED, CLAIMED, Relaxed, Relaxed) {
            Ok(_) => {}
            Err(CLAIMED) => {
                prim::yield_now(); // its copier is at work: let it run
                return false;
            }
            Err(_) => return false,
        }
        let start = chunk * CHUNK;
        let end = (start + CHUNK).min(old.len());
        growth.new.copy_from(old, start, end);
        // Release: the copied values happen before every read and write of this chunk in
        // the new run; pairs with the Acquire loads in `writable` and `Growth::readable`.
        state.store(COPIED, Release);
        // Relaxed: the copies reach the next critical section through the epoch (it
        // waits for this region to end), not through this counter.
        if self.inner.copied.fetch_add(end - start, Relaxed) + (end - start) == old.len() {
            if let Some(hook) = &self.inner.copy_hook {
                hook();
            }
            // Starts `COPYING -> REST`; runs once this and every region leave.
            self.epvs.try_step();
        }
        true
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

    /// The seed's slow resize (Fig. 13): while the thread that copied the last chunk is
    /// still busy (its hook blocks), another thread's writes into the old run's range go
    /// to the new run and complete, and read back; the array is still in `COPYING`. (They
    /// used to wait for the rest state, so one slow resize stalled every writer.)
    #[test]
    fn writes_proceed_while_the_copy_finishes() {
        use std::sync::mpsc;
        use std::time::Duration;
        let (in_hook, hooked) = mpsc::channel::<()>();
        let (release, released) = mpsc::channel::<()>();
        let released = std::sync::Mutex::new(released);
        let a = TwoPhaseArray::with_copy_hook(4096, move || {
            in_hook.send(()).unwrap();
            released.lock().unwrap().recv().unwrap();
        });
        for i in 0..4096 {
            a.push(i);
        }
        thread::scope(|s| {
            let pusher = s.spawn(|| a.push(4096));
            hooked.recv().unwrap();
            let (done, wrote) = mpsc::channel();
            let a = &a;
            s.spawn(move || {
                for i in (0..4096).step_by(100) {
                    a.write(i, i as u64 + 1).unwrap();
                    assert_eq!(a.read(i), Some(i as u64 + 1));
                }
                done.send(a.epvs().state()).unwrap();
            });
            let state = wrote.recv_timeout(Duration::from_secs(30));
            release.send(()).unwrap();
            let state = state.expect("writes waited for the slow resize to end");
            assert_eq!(state, State::new(0, COPYING));
            assert_eq!(pusher.join().unwrap(), 4096);
        });
        assert_eq!(a.epvs().state(), State::rest(1));
        for i in 0..4096 {
            let want = if i % 100 == 0 { i as u64 + 1 } else { i as u64 };
            assert_eq!(a.read(i), Some(want), "index {i}");
        }
        assert_eq!(a.read(4096), Some(4096));
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

/// loom models of the chunked copy (run by `ci/loom.sh`; names contain `loom`).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::thread;

    /// A write racing with a resize's copy is never lost and never overwritten by it, and
    /// reads of copied chunks see the copied values: a full two-element array (two
    /// one-element chunks in the models) grows on one thread while another writes one
    /// chunk and reads the other.
    #[test]
    fn loom_writes_and_reads_during_the_chunked_copy() {
        let mut builder = loom::model::Builder::new();
        // Waits (a write whose chunk another thread copies) spin through refreshes.
        builder.max_branches = 20_000;
        builder.check(|| {
            let a = Arc::new(TwoPhaseArray::with_capacity(2));
            a.push(10);
            a.push(11);
            let writer = {
                let a = Arc::clone(&a);
                thread::spawn(move || {
                    a.write(0, 7).unwrap();
                    assert_eq!(a.read(1), Some(11), "a copied chunk read before its copy");
                    assert_eq!(a.read(0), Some(7), "a write lost to the copy");
                })
            };
            assert_eq!(a.push(12), 2);
            writer.join().unwrap();
            // The last step may still be deferred to the epoch's drain.
            assert_eq!(a.epvs().wait_for_version(1), State::rest(1));
            assert_eq!([a.read(0), a.read(1), a.read(2)], [Some(7), Some(11), Some(12)]);
        });
    }
}
