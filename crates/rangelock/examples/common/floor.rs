//! `Floor`, `SharedFloor`, `ClaimFloor` and `AnnounceFloor`, `mixed_loop`'s `floor`,
//! `floor2`, `shared-floor`, `claim-floor` and `announce-floor` variants: no lock, but the
//! atomic RMW (or two) that any lock pays per acquisition (the bench suite's `rmw-floor`,
//! see `rangelock_bench::workload::RmwFloor` for why it is a floor), on a word of the
//! thread's own or on a table all threads share, or every RMW and load of `rangelock`'s
//! protocol (or of one whose readers write no shared line), so a loop over it costs what the
//! loop plus that memory traffic cost. Each is a [`Ceiling`]; [`AsLock`] makes any of them a
//! `RawRangeLock` for the loop. Included by `mixed_loop` (`#[path]`).

use std::ops::Range;
use std::time::Instant;

use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// What a ceiling does per operation: take a range (never refusing: it excludes nobody) and
/// give back what it took.
pub trait Ceiling: Send + Sync {
    /// The name `mixed_loop` reports.
    const NAME: &'static str;
    /// What a take hands to its give-back.
    type Held: Send;
    /// The acquisition's memory traffic.
    fn take(&self, range: Range<u64>, mode: Mode) -> Self::Held;
    /// The release's memory traffic.
    fn give(&self, held: Self::Held);
}

/// A [`Ceiling`] as a `RawRangeLock`, for `Lock::from_raw`: every acquisition succeeds.
#[derive(Debug)]
pub struct AsLock<C>(pub C);

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it, on loops whose
// critical sections touch per-thread buffers.
unsafe impl<C: Ceiling> RawRangeLock for AsLock<C> {
    type Token = C::Held;
    const NAME: &'static str = C::NAME;
    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<C::Held> {
        Some(self.0.take(range, mode))
    }
    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> C::Held {
        self.0.take(range, mode)
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<C::Held> {
        Some(self.0.take(range, mode))
    }
    #[inline]
    unsafe fn unlock(&self, held: C::Held) {
        self.0.give(held);
    }
}

/// The least a lock pays, without a lock (the bench suite's `rmw-floor`): one atomic RMW to
/// acquire and a plain store to release (`RMWS == 1`), or an RMW each way (`RMWS == 2`,
/// what a reader count that others may join pays), on a word of the thread's own.
#[derive(Debug)]
pub struct Floor<const RMWS: u32>;

thread_local! {
    /// The calling thread's word (a thread-local: no line shared between threads).
    static WORD: std::sync::atomic::AtomicU64 = const { std::sync::atomic::AtomicU64::new(0) };
}

impl<const RMWS: u32> Ceiling for Floor<RMWS> {
    const NAME: &'static str = "floor";
    type Held = ();
    #[inline]
    fn take(&self, _: Range<u64>, _: Mode) {
        // AcqRel: a lock's acquiring RMW (the instruction is what is measured).
        WORD.with(|w| w.fetch_add(1, std::sync::atomic::Ordering::AcqRel));
    }
    #[inline]
    fn give(&self, (): ()) {
        use std::sync::atomic::Ordering;
        WORD.with(|w| {
            if RMWS == 2 {
                // Release: a reader's leaving RMW.
                w.fetch_sub(1, Ordering::Release);
            } else {
                // Release: a holder's releasing store.
                w.store(w.load(Ordering::Relaxed) + 1, Ordering::Release);
            }
        });
    }
}

/// `mixed_loop`'s `shared-floor` is the bench suite's: the same file, so both measure the
/// same code (its docs say what it pays and why); `mixed_loop` may choose its table's size
/// (`RANGELOCK_FLOOR_SLOTS`).
#[path = "../../../bench/src/workload/shared_floor.rs"]
mod shared_floor;

pub use shared_floor::SharedFloor;

impl Ceiling for SharedFloor {
    const NAME: &'static str = SharedFloor::NAME;
    type Held = usize;
    #[inline]
    fn take(&self, range: Range<u64>, _: Mode) -> usize {
        self.hold(&range)
    }
    #[inline]
    fn give(&self, slot: usize) {
        self.give_back(slot);
    }
}

/// `mixed_loop`'s `claim-floor` is the bench suite's: the same file, so both measure the
/// same code (its docs say what it touches and why).
#[path = "../../../bench/src/workload/claim_floor.rs"]
mod claim_floor;

pub use claim_floor::{ClaimFloor, ClaimHeld};

impl Ceiling for ClaimFloor {
    const NAME: &'static str = ClaimFloor::NAME;
    type Held = ClaimHeld;
    #[inline]
    fn take(&self, range: Range<u64>, mode: Mode) -> ClaimHeld {
        self.hold(range, mode)
    }
    #[inline]
    fn give(&self, held: ClaimHeld) {
        self.give_back(held);
    }
}

/// `mixed_loop`'s `announce-floor` is the bench suite's: the same file (beside
/// `claim_floor`, whose tables it uses), so both measure the same code.
#[path = "../../../bench/src/workload/announce_floor.rs"]
mod announce_floor;

pub use announce_floor::{AnnounceFloor, AnnounceHeld, SeatOf};

thread_local! {
    /// The calling thread's seat at the one `AnnounceFloor` a run of the example makes
    /// (taken at its first acquisition, given back when the thread ends).
    static SEAT: std::cell::OnceCell<SeatOf> = const { std::cell::OnceCell::new() };
}

impl Ceiling for AnnounceFloor {
    const NAME: &'static str = AnnounceFloor::NAME;
    type Held = AnnounceHeld;
    #[inline]
    fn take(&self, range: Range<u64>, mode: Mode) -> AnnounceHeld {
        let seat = SEAT.with(|seat| seat.get_or_init(|| self.seat()).get());
        self.hold(seat, range, mode)
    }
    #[inline]
    fn give(&self, held: AnnounceHeld) {
        self.give_back(held);
    }
}
