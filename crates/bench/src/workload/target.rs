//! [`RangeTarget`]: what a range-lock workload drives, for in-process locks and peers alike.

use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};

use rangelock::internals::{Guard, Lock, RawRangeLock};
use rangelock::{Mode, RangeGuard, RangeLock};
use rangelock_baselines::peers::fcntl_ofd::{self, FcntlOfd, OfdFd};

use super::{AnnounceFloor, AnnounceHeld, ClaimFloor, ClaimHeld, SeatOf, SharedFloor};

/// A range lock as the workloads see it: per-thread state (an fd for fcntl locks, nothing
/// for in-process locks) and acquire/release of `u64` ranges.
///
/// Workloads are generic over this trait and monomorphised per variant, so the hot loop
/// calls the lock directly, without dynamic dispatch.
pub trait RangeTarget: Send + Sync + 'static {
    /// State each worker thread keeps (created by [`local`](Self::local) on that thread).
    type Local;
    /// A held range.
    type Held<'a>
    where
        Self: 'a;

    /// Per-thread state for a new worker (or a background holder).
    fn local(&self) -> Self::Local;

    /// Acquires `range` in `mode`, waiting as long as it takes.
    fn acquire<'a>(
        &'a self,
        local: &mut Self::Local,
        range: Range<u64>,
        mode: Mode,
    ) -> Self::Held<'a>;

    /// Acquires `range` in `mode` if that needs no waiting.
    fn try_acquire<'a>(
        &'a self,
        local: &mut Self::Local,
        range: Range<u64>,
        mode: Mode,
    ) -> Option<Self::Held<'a>>;

    /// Releases a held range acquired through `local`.
    fn release<'a>(&'a self, local: &mut Self::Local, held: Self::Held<'a>);
}

/// The product, through its public API.
impl RangeTarget for RangeLock {
    type Local = ();
    type Held<'a> = RangeGuard<'a>;

    fn local(&self) {}

    #[inline]
    fn acquire<'a>(&'a self, _: &mut (), range: Range<u64>, mode: Mode) -> RangeGuard<'a> {
        self.lock_mode(range, mode)
    }

    #[inline]
    fn try_acquire<'a>(
        &'a self,
        _: &mut (),
        range: Range<u64>,
        mode: Mode,
    ) -> Option<RangeGuard<'a>> {
        self.try_lock_mode(range, mode).ok()
    }

    #[inline]
    fn release<'a>(&'a self, _: &mut (), held: RangeGuard<'a>) {
        drop(held);
    }
}

/// The baselines (`rangelock_baselines`), through the generic wrapper of their raw locks.
impl<R: RawRangeLock + 'static> RangeTarget for Lock<R> {
    type Local = ();
    type Held<'a> = Guard<'a, R>;

    fn local(&self) {}

    #[inline]
    fn acquire<'a>(&'a self, _: &mut (), range: Range<u64>, mode: Mode) -> Guard<'a, R> {
        self.lock_mode(range, mode).expect("workloads only build non-empty ranges")
    }

    #[inline]
    fn try_acquire<'a>(
        &'a self,
        _: &mut (),
        range: Range<u64>,
        mode: Mode,
    ) -> Option<Guard<'a, R>> {
        self.try_lock_mode(range, mode).ok()
    }

    #[inline]
    fn release<'a>(&'a self, _: &mut (), held: Guard<'a, R>) {
        drop(held);
    }
}

/// fcntl OFD range locks: one descriptor per thread, `F_OFD_SETLK(W)` per range.
impl RangeTarget for FcntlOfd {
    type Local = OfdFd;
    type Held<'a> = Range<u64>;

    fn local(&self) -> OfdFd {
        self.open()
            .unwrap_or_else(|e| panic!("fcntl-ofd: cannot open {}: {e}", self.path().display()))
    }

    #[inline]
    fn acquire(&self, fd: &mut OfdFd, range: Range<u64>, mode: Mode) -> Range<u64> {
        match fd.set(&range, fcntl_ofd::kind(mode), true) {
            Ok(_) => range,
            Err(e) => panic!("fcntl-ofd: F_OFD_SETLKW {range:?} failed: {e}"),
        }
    }

    #[inline]
    fn try_acquire(&self, fd: &mut OfdFd, range: Range<u64>, mode: Mode) -> Option<Range<u64>> {
        match fd.set(&range, fcntl_ofd::kind(mode), false) {
            Ok(true) => Some(range),
            Ok(false) => None,
            Err(e) => panic!("fcntl-ofd: F_OFD_SETLK {range:?} failed: {e}"),
        }
    }

    #[inline]
    fn release(&self, fd: &mut OfdFd, held: Range<u64>) {
        if let Err(e) = fd.set(&held, libc::F_UNLCK, false) {
            panic!("fcntl-ofd: unlock {held:?} failed: {e}");
        }
    }
}

/// The workload with no lock: `acquire` and `release` do nothing.
///
/// It measures what a suite's loop and memory traffic cost by themselves, which bounds the
/// throughput of every lock on the same workload (as `echo` bounds the server). Only sound
/// where no two threads ever touch the same data: `w1`, `w2` and `held`, whose threads work
/// on disjoint shares of the region (the background holder of `held` writes nothing), and
/// `mixed`, whose critical sections touch per-thread buffers. Never registered for
/// `contended`, where unlocked threads would race on the region.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlocked;

impl Unlocked {
    /// The report name.
    pub const NAME: &'static str = "unlocked";
}

impl RangeTarget for Unlocked {
    type Local = ();
    type Held<'a> = ();

    fn local(&self) {}

    #[inline]
    fn acquire<'a>(&'a self, _: &mut (), _: Range<u64>, _: Mode) -> Self::Held<'a> {}

    #[inline]
    fn try_acquire<'a>(&'a self, _: &mut (), _: Range<u64>, _: Mode) -> Option<Self::Held<'a>> {
        Some(())
    }

    #[inline]
    fn release<'a>(&'a self, _: &mut (), (): Self::Held<'a>) {}
}

/// The least any lock pays per acquisition, without a lock: one atomic read-modify-write
/// to acquire and a plain `Release` store to release, on a line of the thread's own.
///
/// A lock that excludes must, on some path of every acquisition, either run an atomic
/// write-after-read (an RMW) or order a store before a later load with a full fence
/// (Attiya, Guerraoui, Hendler, Kuznetsov, Michael and Vechev, "Laws of Order: Expensive
/// Synchronization in Concurrent Algorithms Cannot Be Eliminated", POPL 2011); on x86 both
/// are a `lock`-prefixed instruction or `mfence`, which waits for the store buffer to
/// drain and keeps later loads from passing it. So this target is a floor under every
/// lock's cost on the same workload at any thread count: it pays that one instruction and
/// nothing else (no range is looked at, and no line is shared between threads, so it
/// scales like `unlocked`). A ratio a lock must reach against another variant is
/// unreachable on a machine where this floor does not reach it. It is a floor in what a
/// lock must execute, not a timing law: where the processor overlaps one operation's loop
/// with the next, one serializing instruction more can even run faster (`mixed` at 0 %
/// exclusive, `suites::mixed` module docs).
///
/// A ceiling, not a lock: its threads exclude nobody. Only sound where no two threads
/// touch the same data under the lock: `mixed`, whose critical sections touch per-thread
/// buffers.
#[derive(Clone, Copy, Debug, Default)]
pub struct RmwFloor;

impl RmwFloor {
    /// The report name.
    pub const NAME: &'static str = "rmw-floor";
}

impl RangeTarget for RmwFloor {
    /// The thread's own word, on a line of its own (kept by the worker thread).
    type Local = crossbeam_utils::CachePadded<AtomicU64>;
    type Held<'a> = ();

    fn local(&self) -> Self::Local {
        Self::Local::default()
    }

    #[inline]
    fn acquire<'a>(&'a self, local: &mut Self::Local, _: Range<u64>, _: Mode) -> Self::Held<'a> {
        // AcqRel: a lock's acquiring RMW (the `lock`-prefixed instruction is the cost being
        // measured; the ordering changes no instruction on x86). Nobody else reads the word.
        local.fetch_add(1, Ordering::AcqRel);
    }

    #[inline]
    fn try_acquire<'a>(
        &'a self,
        local: &mut Self::Local,
        range: Range<u64>,
        mode: Mode,
    ) -> Option<Self::Held<'a>> {
        self.acquire(local, range, mode);
        Some(())
    }

    #[inline]
    fn release<'a>(&'a self, local: &mut Self::Local, (): Self::Held<'a>) {
        // Relaxed load, Release store: a lock's release is one plain store (what
        // `rangelock`'s stripe holds pay); nobody else reads the word.
        let now = local.load(Ordering::Relaxed);
        local.store(now + 1, Ordering::Release);
    }
}

impl RangeTarget for SharedFloor {
    type Local = ();
    type Held<'a> = usize;

    fn local(&self) {}

    #[inline]
    fn acquire(&self, _: &mut (), range: Range<u64>, _: Mode) -> usize {
        self.hold(&range)
    }

    #[inline]
    fn try_acquire(&self, local: &mut (), range: Range<u64>, mode: Mode) -> Option<usize> {
        Some(self.acquire(local, range, mode))
    }

    #[inline]
    fn release(&self, _: &mut (), slot: usize) {
        self.give_back(slot);
    }
}

impl RangeTarget for ClaimFloor {
    type Local = ();
    type Held<'a> = ClaimHeld;

    fn local(&self) {}

    #[inline]
    fn acquire(&self, _: &mut (), range: Range<u64>, mode: Mode) -> ClaimHeld {
        self.hold(range, mode)
    }

    #[inline]
    fn try_acquire(&self, _: &mut (), range: Range<u64>, mode: Mode) -> Option<ClaimHeld> {
        Some(self.hold(range, mode))
    }

    #[inline]
    fn release(&self, _: &mut (), held: ClaimHeld) {
        self.give_back(held);
    }
}

impl RangeTarget for AnnounceFloor {
    /// The thread's seat, given back when the thread is done.
    type Local = SeatOf;
    type Held<'a> = AnnounceHeld;

    fn local(&self) -> SeatOf {
        self.seat()
    }

    #[inline]
    fn acquire(&self, seat: &mut SeatOf, range: Range<u64>, mode: Mode) -> AnnounceHeld {
        self.hold(seat.get(), range, mode)
    }

    #[inline]
    fn try_acquire(
        &self,
        seat: &mut SeatOf,
        range: Range<u64>,
        mode: Mode,
    ) -> Option<AnnounceHeld> {
        Some(self.hold(seat.get(), range, mode))
    }

    #[inline]
    fn release(&self, _: &mut SeatOf, held: AnnounceHeld) {
        self.give_back(held);
    }
}

/// Each worker thread on a lock of its own (made by `make` in [`local`](RangeTarget::local)):
/// what the lock costs when nobody shares it, so that a suite can show what sharing one
/// lock costs apart from what the lock costs.
///
/// A ceiling, not a lock of the workload: its threads exclude nobody. Only sound where no
/// two threads touch the same data under the lock: `mixed`, whose critical sections touch
/// per-thread buffers.
pub struct Unshared<R: RawRangeLock> {
    make: fn() -> Lock<R>,
}

impl<R: RawRangeLock> core::fmt::Debug for Unshared<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Unshared").field("lock", &R::NAME).finish()
    }
}

impl<R: RawRangeLock> Unshared<R> {
    /// Threads on locks of their own, each made by `make`.
    pub fn new(make: fn() -> Lock<R>) -> Self {
        Unshared { make }
    }
}

impl<R: RawRangeLock + 'static> RangeTarget for Unshared<R> {
    type Local = Lock<R>;
    type Held<'a> = R::Token;

    fn local(&self) -> Lock<R> {
        (self.make)()
    }

    #[inline]
    fn acquire(&self, local: &mut Lock<R>, range: Range<u64>, mode: Mode) -> R::Token {
        local.raw().lock(range, mode)
    }

    #[inline]
    fn try_acquire(&self, local: &mut Lock<R>, range: Range<u64>, mode: Mode) -> Option<R::Token> {
        local.raw().try_lock(range, mode)
    }

    #[inline]
    fn release(&self, local: &mut Lock<R>, held: R::Token) {
        // SAFETY: `held` came from an acquisition on `local`'s lock (the trait's contract:
        // released through the `local` it was acquired through), released once, here.
        unsafe { local.raw().unlock(held) };
    }
}

/// Whether one thread can hold all of `ranges` (pairwise disjoint) exclusively at once,
/// found by trying to, without waiting; everything acquired is released again.
///
/// A range lock must say yes. A coarse lock (one global mutex, segments wider than the
/// ranges) says no, and a workload that holds several ranges per thread (W2, held) would
/// deadlock on it, so those suites skip such variants instead. Pass the ranges in
/// descending order: list-based locks then insert each at the head in O(1).
pub fn holds_disjoint<T: RangeTarget>(
    target: &T,
    ranges: impl IntoIterator<Item = Range<u64>>,
) -> bool {
    let mut local = target.local();
    let mut held = Vec::new();
    let mut ok = true;
    for range in ranges {
        match target.try_acquire(&mut local, range, Mode::Exclusive) {
            Some(h) => held.push(h),
            None => {
                ok = false;
                break;
            }
        }
    }
    for h in held {
        target.release(&mut local, h);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rmw_floor_pays_one_rmw_and_one_store_on_the_threads_own_word() {
        let floor = RmwFloor;
        let (mut a, mut b) = (floor.local(), floor.local());
        floor.acquire(&mut a, 0..1, Mode::Exclusive);
        assert_eq!(a.load(Ordering::Relaxed), 1, "the acquiring RMW");
        // It excludes nobody: another thread's acquisition of the same range goes through.
        assert!(floor.try_acquire(&mut b, 0..1, Mode::Exclusive).is_some());
        floor.release(&mut a, ());
        assert_eq!(a.load(Ordering::Relaxed), 2, "the releasing store");
        assert_eq!(b.load(Ordering::Relaxed), 1, "each thread on a word of its own");
        assert!(!core::ptr::eq(&*a, &*b));
    }
}
