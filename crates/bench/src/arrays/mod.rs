//! Resizable `u64` arrays for the `epvs-array` suite (seed 2 §6.1, Figs. 11–13).
//!
//! Every variant implements [`BenchArray`]: an array of `u64` that supports `read`,
//! `write` and `push` from many threads, where a `push` past the capacity *resizes* (doubles
//! the buffer and copies), optionally with a simulated slow resize ([`ArrayConfig::resize_delay`]).
//! Threads drive an array through a per-thread [`ArraySession`] so that variants that keep
//! per-thread state (the pinned EPVS guard) fit the same shape; the workload loop is
//! [`drive`], generic over the variant so each one is compiled without dynamic dispatch.
//!
//! | variant ([`BenchArray::NAME`]) | type | synchronisation |
//! |---|---|---|
//! | `latch-free-mock` | [`LatchFreeMock`] | plain atomics on a huge preallocated buffer, **no resize protection** (upper bound only) |
//! | `rwlock-std` | [`RwLockStdArray`] | `std::sync::RwLock`: shared for read/write/push, exclusive for resize |
//! | `rwlock-parking-lot` | [`RwLockParkingLotArray`] | the same with `parking_lot::RwLock` |
//! | `bravo` | [`BravoArray`] | the same with [`Bravo`](crate::peers::bravo::Bravo) |
//! | `epvs` | [`EpvsSimpleArray`] | `epvs::array::ResizableArray`: enter/leave per operation, resize = version change |
//! | `epvs-pinned` | [`EpvsPinnedArray`] | the same array, one region per thread refreshed every N operations |
//! | `epvs-2phase` | [`EpvsTwoPhaseArray`] | `epvs::array::TwoPhaseArray`: reads, writes and pushes continue while copying |
//!
//! Element reads and writes are `Relaxed` atomics in every variant: the workload needs no
//! ordering between elements, and atomics make concurrent writes to one index defined.

pub mod epvs;
pub mod latched;
pub mod mock;

pub use epvs::{EpvsPinnedArray, EpvsSimpleArray, EpvsTwoPhaseArray, PinnedSession};
pub use latched::{
    BravoArray, LatchedArray, RwFamily, RwLockParkingLotArray, RwLockStdArray, SharedSession,
};
pub use mock::LatchFreeMock;

use std::alloc::{self, Layout};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// How an array starts and how it resizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayConfig {
    /// Elements present (zeroes) before the run; reads and writes pick indices below the
    /// current length.
    pub initial_len: usize,
    /// Initial capacity is `max(initial_len, min_capacity)`; small so that pushes resize.
    pub min_capacity: usize,
    /// Extra time each resize takes (the paper's 10 ms "slow resize"), spent where the
    /// variant's resize would do its copying.
    pub resize_delay: Duration,
    /// `epvs-pinned`: refresh the held guard every this many operations.
    pub pin_refresh_every: u32,
    /// `latch-free-mock`: its fixed capacity (at least `initial_len`).
    pub mock_capacity: usize,
    /// Slots of the announcement table of the EPVS arrays (their epoch table) and of
    /// `bravo` (a private visible-readers table); `None`: the defaults (an epoch table
    /// sized from the core count, BRAVO's 4096-slot process-wide table). The seed's
    /// constrained-table run (Fig. 14) uses 128.
    pub table_slots: Option<usize>,
}

impl Default for ArrayConfig {
    fn default() -> Self {
        ArrayConfig {
            initial_len: 0,
            min_capacity: 1024,
            resize_delay: Duration::ZERO,
            pin_refresh_every: 64,
            mock_capacity: 1 << 24,
            table_slots: None,
        }
    }
}

impl ArrayConfig {
    /// The capacity a resizable variant starts with.
    pub fn initial_capacity(&self) -> usize {
        self.initial_len.max(self.min_capacity).max(1)
    }
}

/// A concurrent resizable array of `u64`, one benchmark variant.
pub trait BenchArray: Send + Sync + Sized {
    /// The variant name in reports (e.g. `"rwlock-std"`).
    const NAME: &'static str;
    /// Per-thread handle; create one per thread with [`BenchArray::session`].
    type Session<'a>: ArraySession
    where
        Self: 'a;
    /// Whether this variant can run `cfg` (e.g. simulate a slow resize); the suite leaves
    /// a variant out of the parameter groups it does not support.
    fn supports(cfg: &ArrayConfig) -> bool {
        let _ = cfg;
        true
    }
    /// A new array per `cfg`.
    fn new(cfg: &ArrayConfig) -> Self;
    /// A handle for the calling thread.
    fn session(&self) -> Self::Session<'_>;
}

/// The operations of the workload, on one thread.
pub trait ArraySession {
    /// Current number of elements (pushed or initial); may briefly include pushes that
    /// are still waiting for a resize.
    fn len(&mut self) -> usize;
    /// Whether the array is empty.
    fn is_empty(&mut self) -> bool {
        self.len() == 0
    }
    /// The element at `index`, or `None` if it is beyond the array.
    fn read(&mut self, index: usize) -> Option<u64>;
    /// Overwrites the element at `index`; false if beyond the array (nothing written).
    fn write(&mut self, index: usize, value: u64) -> bool;
    /// Appends `value`, resizing if needed; returns its index.
    fn push(&mut self, value: u64) -> usize;
}

/// The operation mix: `push_pct` % pushes, the rest split evenly between reads and writes
/// (the paper's `p`, `(1-p)/2`, `(1-p)/2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    /// Percentage of pushes, 0..=100.
    pub push_pct: u32,
}

/// Per-thread pseudo-random numbers (SplitMix64): cheap, no shared state.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for thread `index` (distinct streams per thread).
    pub fn for_thread(index: usize) -> Self {
        Rng(0x9e37_79b9_7f4a_7c15 ^ (index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform-enough number below `n` (`n > 0`), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * (n as u64)) >> 32) as usize
    }
}

/// Runs `ops` operations of `mix` on `session`; returns a checksum of what was read (so the
/// reads are not optimised away).
#[inline]
pub fn drive<S: ArraySession>(session: &mut S, rng: &mut Rng, mix: Mix, ops: u32) -> u64 {
    let mut sum = 0u64;
    for _ in 0..ops {
        let r = rng.next_u64();
        let dice = (((r & 0xffff_ffff) * 100) >> 32) as u32;
        if dice < mix.push_pct {
            sum = sum.wrapping_add(session.push(r) as u64);
            continue;
        }
        let len = session.len();
        if len == 0 {
            continue;
        }
        let index = (((r >> 32) * len as u64) >> 32) as usize;
        if dice & 1 == 0 {
            sum = sum.wrapping_add(session.read(index).unwrap_or(0));
        } else {
            session.write(index, r);
        }
    }
    sum
}

/// A zero-filled buffer of `len` atomics, from zeroed pages (no up-front touch of memory,
/// so a large preallocated buffer costs nothing until used).
pub fn zeroed_atomics(len: usize) -> Box<[AtomicU64]> {
    if len == 0 {
        return Box::new([]);
    }
    let layout = Layout::array::<AtomicU64>(len).expect("array buffer size overflows");
    // SAFETY: `layout` has non-zero size (len > 0, AtomicU64 is 8 bytes).
    let ptr = unsafe { alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
    if ptr.is_null() {
        alloc::handle_alloc_error(layout);
    }
    // SAFETY: `ptr` is a live allocation from the global allocator with the layout of
    // `[AtomicU64; len]`, which `Box<[AtomicU64]>` frees with that same layout; all-zero
    // bytes are a valid `AtomicU64` (it has the representation of `u64`).
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }
}

/// Copies `old` into the front of a new zeroed buffer of `new_len` (>= `old.len()`).
pub fn grown_copy(old: &[AtomicU64], new_len: usize) -> Box<[AtomicU64]> {
    use std::sync::atomic::Ordering::Relaxed;
    let new = zeroed_atomics(new_len);
    for (dst, src) in new.iter().zip(old) {
        // Relaxed: the caller excludes concurrent writers of `old` (resize runs under an
        // exclusive lock or a version transition), which also orders these copies.
        dst.store(src.load(Relaxed), Relaxed);
    }
    new
}

/// The capacity after growing to fit index `pos`: doubling, as in the paper.
pub fn grown_capacity(current: usize, pos: usize) -> usize {
    let mut cap = current.max(1);
    while cap <= pos {
        cap = cap.checked_mul(2).expect("array capacity overflows usize");
    }
    cap
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Barrier;
    use std::thread;

    /// One step of the sequential model check.
    #[derive(Debug, Clone)]
    pub(crate) enum ModelOp {
        Push(u64),
        /// Index relative to the current length (may be out of range by a little).
        Write(usize, u64),
        Read(usize),
    }

    /// Runs `ops` on a fresh `A` (3 initial elements, capacity 4, so pushes resize) and on
    /// a `Vec<u64>`, asserting the same answers.
    pub(crate) fn check_model<A: BenchArray>(ops: &[ModelOp]) {
        let cfg = ArrayConfig { initial_len: 3, min_capacity: 4, ..ArrayConfig::default() };
        let arr = A::new(&cfg);
        let mut s = arr.session();
        let mut model = vec![0u64; 3];
        for op in ops {
            match *op {
                ModelOp::Push(v) => {
                    assert_eq!(s.push(v), model.len(), "{}: push index", A::NAME);
                    model.push(v);
                }
                ModelOp::Write(i, v) => {
                    let ok = s.write(i, v);
                    assert_eq!(ok, i < model.len(), "{}: write {i} in range", A::NAME);
                    if ok {
                        model[i] = v;
                    }
                }
                ModelOp::Read(i) => {
                    assert_eq!(s.read(i), model.get(i).copied(), "{}: read {i}", A::NAME);
                }
            }
            assert_eq!(s.len(), model.len(), "{}: len", A::NAME);
        }
    }

    /// A long pseudo-random sequence for [`check_model`].
    pub(crate) fn random_ops(n: usize) -> Vec<ModelOp> {
        let mut rng = Rng::for_thread(7);
        let mut len = 3;
        (0..n)
            .map(|step| match rng.below(4) {
                0 => {
                    len += 1;
                    ModelOp::Push(rng.next_u64())
                }
                1 => ModelOp::Write(rng.below(len + 2), step as u64),
                _ => ModelOp::Read(rng.below(len + 2)),
            })
            .collect()
    }

    /// Sequential behaviour against a `Vec<u64>` model.
    pub(crate) fn sequential_model<A: BenchArray>() {
        check_model::<A>(&random_ops(5_000));
    }

    fn model_op() -> impl proptest::strategy::Strategy<Value = ModelOp> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u64>().prop_map(ModelOp::Push),
            (0usize..80, any::<u64>()).prop_map(|(i, v)| ModelOp::Write(i, v)),
            (0usize..80).prop_map(ModelOp::Read),
        ]
    }

    proptest::proptest! {
        #[test]
        fn every_variant_matches_the_vec_model(
            ops in proptest::collection::vec(model_op(), 0..200)
        ) {
            check_model::<LatchFreeMock>(&ops);
            check_model::<RwLockStdArray>(&ops);
            check_model::<RwLockParkingLotArray>(&ops);
            check_model::<BravoArray>(&ops);
            check_model::<EpvsSimpleArray>(&ops);
            check_model::<EpvsPinnedArray>(&ops);
            check_model::<EpvsTwoPhaseArray>(&ops);
        }
    }

    /// Concurrent pushes (with resizes) and writes: nothing pushed or written is lost.
    pub(crate) fn concurrent_no_lost_updates<A: BenchArray>(cfg: ArrayConfig) {
        const THREADS: usize = 4;
        const PUSHES: u64 = 3_000;
        let cfg = ArrayConfig { initial_len: THREADS, min_capacity: 8, ..cfg };
        let arr = A::new(&cfg);
        let barrier = Barrier::new(THREADS);
        let pushed: Vec<Vec<(usize, u64)>> = thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (arr, barrier) = (&arr, &barrier);
                    s.spawn(move || {
                        let mut sess = arr.session();
                        let mut mine = Vec::new();
                        barrier.wait();
                        for k in 1..=PUSHES {
                            let v = (t as u64) << 32 | k;
                            mine.push((sess.push(v), v));
                            // Thread t owns initial index t: its latest write must survive
                            // every concurrent resize.
                            assert!(sess.write(t, k), "{}: own index in range", A::NAME);
                            assert_eq!(sess.read(t), Some(k), "{}: own write lost", A::NAME);
                        }
                        mine
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut s = arr.session();
        let total = THREADS + THREADS * PUSHES as usize;
        assert_eq!(s.len(), total, "{}: final length", A::NAME);
        let mut seen = HashSet::new();
        for (pos, v) in pushed.iter().flatten() {
            assert!(seen.insert(*pos), "{}: index {pos} handed out twice", A::NAME);
            assert_eq!(s.read(*pos), Some(*v), "{}: push at {pos} lost", A::NAME);
        }
        for t in 0..THREADS {
            assert_eq!(s.read(t), Some(PUSHES), "{}: final write of thread {t} lost", A::NAME);
        }
    }

    #[test]
    fn rng_below_is_in_range() {
        let mut r = Rng::for_thread(0);
        for n in [1usize, 2, 3, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
    }

    #[test]
    fn grown_capacity_doubles_past_pos() {
        assert_eq!(grown_capacity(4, 4), 8);
        assert_eq!(grown_capacity(4, 3), 4);
        assert_eq!(grown_capacity(4, 17), 32);
        assert_eq!(grown_capacity(0, 0), 1);
    }

    #[test]
    fn zeroed_and_grown_buffers() {
        use std::sync::atomic::Ordering::Relaxed;
        assert!(zeroed_atomics(0).is_empty());
        let a = zeroed_atomics(5);
        assert!(a.iter().all(|x| x.load(Relaxed) == 0));
        a[4].store(9, Relaxed);
        let b = grown_copy(&a, 10);
        assert_eq!(b.len(), 10);
        assert_eq!(b[4].load(Relaxed), 9);
        assert_eq!(b[9].load(Relaxed), 0);
    }

    #[test]
    fn drive_counts_pushes_per_mix() {
        let arr = RwLockParkingLotArray::new(&ArrayConfig::default());
        let mut s = arr.session();
        let mut rng = Rng::for_thread(1);
        drive(&mut s, &mut rng, Mix { push_pct: 100 }, 1000);
        assert_eq!(s.len(), 1000, "all pushes");
        drive(&mut s, &mut rng, Mix { push_pct: 0 }, 1000);
        assert_eq!(s.len(), 1000, "no pushes");
        drive(&mut s, &mut rng, Mix { push_pct: 10 }, 10_000);
        let pushed = s.len() - 1000;
        assert!((500..1500).contains(&pushed), "about 10 % pushes, got {pushed}");
    }
}
