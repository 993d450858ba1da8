//! `Floor`, `SharedFloor`, `ClaimFloor` and `AnnounceFloor`, `mixed_loop`'s `floor`,
//! `floor2`, `shared-floor`, `claim-floor` and `announce-floor` variants: no lock, but the
//! atomic RMW (or two) that any lock pays per acquisition (the bench suite's `rmw-floor`,
//! see `rangelock_bench::workload::RmwFloor` for why it is a floor), on a word of the
//! thread's own or on a table all threads share, or every RMW and load of `rangelock`'s
//! protocol (or of one whose readers write no shared line), so a loop over it costs what the
//! loop plus that memory traffic cost. Included by `mixed_loop` (`#[path]`).

use std::ops::Range;
use std::time::Instant;

use rangelock::{Mode, RawRangeLock};

/// The least a lock pays, without a lock (the bench suite's `rmw-floor`): one atomic RMW to
/// acquire and a plain store to release (`RMWS == 1`), or an RMW each way (`RMWS == 2`,
/// what a reader count that others may join pays), on a word of the thread's own.
#[derive(Debug)]
pub struct Floor<const RMWS: u32>;

thread_local! {
    /// The calling thread's word (a thread-local: no line shared between threads).
    static WORD: std::sync::atomic::AtomicU64 = const { std::sync::atomic::AtomicU64::new(0) };
}

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it.
unsafe impl<const RMWS: u32> RawRangeLock for Floor<RMWS> {
    type Token = ();
    const NAME: &'static str = "floor";
    #[inline]
    fn try_lock(&self, _: Range<u64>, _: Mode) -> Option<()> {
        // AcqRel: a lock's acquiring RMW (the instruction is what is measured).
        WORD.with(|w| w.fetch_add(1, std::sync::atomic::Ordering::AcqRel));
        Some(())
    }
    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) {
        let _ = self.try_lock(range, mode);
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<()> {
        self.try_lock(range, mode)
    }
    #[inline]
    unsafe fn unlock(&self, _: ()) {
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

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it.
unsafe impl RawRangeLock for SharedFloor {
    type Token = usize;
    const NAME: &'static str = SharedFloor::NAME;
    #[inline]
    fn try_lock(&self, range: Range<u64>, _: Mode) -> Option<usize> {
        Some(self.hold(&range))
    }
    #[inline]
    fn lock(&self, range: Range<u64>, _: Mode) -> usize {
        self.hold(&range)
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, _: Mode, _: Instant) -> Option<usize> {
        Some(self.hold(&range))
    }
    #[inline]
    unsafe fn unlock(&self, slot: usize) {
        self.give_back(slot);
    }
}

/// `mixed_loop`'s `claim-floor` is the bench suite's: the same file, so both measure the
/// same code (its docs say what it touches and why).
#[path = "../../../bench/src/workload/claim_floor.rs"]
mod claim_floor;

pub use claim_floor::{ClaimFloor, ClaimHeld};

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it.
unsafe impl RawRangeLock for ClaimFloor {
    type Token = ClaimHeld;
    const NAME: &'static str = ClaimFloor::NAME;
    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<ClaimHeld> {
        Some(self.hold(range, mode))
    }
    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> ClaimHeld {
        self.hold(range, mode)
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<ClaimHeld> {
        Some(self.hold(range, mode))
    }
    #[inline]
    unsafe fn unlock(&self, held: ClaimHeld) {
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

impl AnnounceFloor {
    /// The calling thread's seat.
    #[inline]
    fn my_seat(&self) -> usize {
        SEAT.with(|seat| seat.get_or_init(|| self.seat()).get())
    }
}

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it.
unsafe impl RawRangeLock for AnnounceFloor {
    type Token = AnnounceHeld;
    const NAME: &'static str = AnnounceFloor::NAME;
    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<AnnounceHeld> {
        Some(self.hold(self.my_seat(), range, mode))
    }
    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> AnnounceHeld {
        self.hold(self.my_seat(), range, mode)
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<AnnounceHeld> {
        Some(self.hold(self.my_seat(), range, mode))
    }
    #[inline]
    unsafe fn unlock(&self, held: AnnounceHeld) {
        self.give_back(held);
    }
}
