//! `Floor`, `SharedFloor` and `ClaimFloor`, `mixed_loop`'s `floor`, `floor2`,
//! `shared-floor` and `claim-floor` variants: no lock, but the atomic RMW (or two) that any
//! lock pays per acquisition (the bench suite's `rmw-floor`, see
//! `rangelock_bench::workload::RmwFloor` for why it is a floor), on a word of the thread's
//! own or on a table all threads share, or every RMW and load of `rangelock`'s protocol, so
//! a loop over it costs what the loop plus that memory traffic cost. Included by
//! `mixed_loop` (`#[path]`).

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
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

/// The least a lock *shared by threads* pays (`mixed_loop`'s `shared-floor`, the bench
/// suite's `shared-floor` with a table size to choose): [`Floor`]'s
/// RMW and store, but on the 16-byte slot of the range's first stripe (16 Ki units) in one
/// table that every thread uses, `slots` slots (a power of two; 2048 by default, the 32 KiB
/// of `rangelock`'s stripe table). Acquisitions that may conflict must meet in memory that
/// both write; with ranges at random positions, a slot a thread touches was last written by
/// the other thread about half the time, whatever the table's size (a table too large to
/// stay in cache misses instead). Not a lock: slots are counters, nobody waits.
#[derive(Debug)]
pub struct SharedFloor {
    slots: Box<[SharedSlot]>,
}

/// One slot of [`SharedFloor`]: a word and the padding of `rangelock`'s stripe slot.
#[derive(Debug, Default)]
#[repr(align(16))]
struct SharedSlot(std::sync::atomic::AtomicU64);

impl SharedFloor {
    /// A table of `slots` slots (a power of two).
    pub fn new(slots: usize) -> Self {
        assert!(slots.is_power_of_two(), "shared-floor slots: a power of two");
        SharedFloor { slots: (0..slots).map(|_| SharedSlot::default()).collect() }
    }

    #[inline]
    fn slot(&self, range: &Range<u64>) -> usize {
        (range.start >> rangelock::DEFAULT_STRIPE_SHIFT) as usize & (self.slots.len() - 1)
    }
}

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it.
unsafe impl RawRangeLock for SharedFloor {
    type Token = usize;
    const NAME: &'static str = "shared-floor";
    #[inline]
    fn try_lock(&self, range: Range<u64>, _: Mode) -> Option<usize> {
        let i = self.slot(&range);
        // AcqRel: a lock's acquiring RMW (the instruction and its line are what is measured).
        self.slots[i].0.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Some(i)
    }
    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> usize {
        // Never refuses: it excludes nobody.
        let slot = self.try_lock(range, mode);
        slot.unwrap_or_else(|| unreachable!("shared-floor always acquires"))
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<usize> {
        self.try_lock(range, mode)
    }
    #[inline]
    unsafe fn unlock(&self, i: usize) {
        use std::sync::atomic::Ordering;
        let w = &self.slots[i].0;
        // Release: a holder's releasing store.
        w.store(w.load(Ordering::Relaxed) + 1, Ordering::Release);
    }
}

/// `mixed_loop`'s `claim-floor`: the memory traffic of `rangelock`'s stripe protocol with
/// none of its decisions, the same code as the bench suite's `claim-floor`
/// (`rangelock_bench::workload::ClaimFloor`, whose docs say what it touches and why): each
/// stripe's slot with an RMW, its count and its window's `wide` count loaded, for ranges of
/// up to `DEFAULT_CLAIM_STRIPES` stripes (4 shared); for longer ones the windows' `wide`
/// counts and one or two coarse slots with RMWs, and every stripe's slot loaded. Not a
/// lock: slots are counters, nobody waits.
#[derive(Debug)]
pub struct ClaimFloor {
    fine: Box<ClaimTable>,
    coarse: Box<ClaimTable>,
    wide: Box<[crossbeam_utils::CachePadded<AtomicU32>; WIDE]>,
}

/// Slots per table; also stripes per window.
const SLOTS: usize = rangelock::DEFAULT_STRIPE_SLOTS;
/// `wide` counts, by window.
const WIDE: usize = 16;
/// A table of slots (a fixed size: a masked index needs no bounds check).
type ClaimTable = [ClaimSlot; SLOTS];

/// One slot of [`ClaimFloor`], laid out as `rangelock`'s stripe slot.
#[derive(Debug, Default)]
#[repr(align(16))]
struct ClaimSlot {
    word: AtomicU64,
    counted: AtomicU32,
    waiting: AtomicU32,
}

/// A [`ClaimFloor`] hold: the stripes its release touches, and how.
#[derive(Debug)]
pub struct ClaimHeld {
    first: u64,
    last: u64,
    coarse: bool,
    mode: Mode,
}

impl ClaimFloor {
    const SHIFT: u32 = rangelock::DEFAULT_STRIPE_SHIFT;
    const COARSE_LOG2: u32 = 6;

    /// The floor for `rangelock`'s default geometry.
    pub fn new() -> Self {
        let table = || -> Box<ClaimTable> {
            let slots: Box<[ClaimSlot]> = (0..SLOTS).map(|_| ClaimSlot::default()).collect();
            slots.try_into().unwrap_or_else(|_| unreachable!("SLOTS slots"))
        };
        ClaimFloor { fine: table(), coarse: table(), wide: Box::default() }
    }

    #[inline]
    fn slot(table: &ClaimTable, s: u64) -> &ClaimSlot {
        &table[s as usize & (SLOTS - 1)]
    }

    #[inline]
    fn wide(&self, stripe: u64) -> &AtomicU32 {
        &self.wide[(stripe as usize / SLOTS) & (WIDE - 1)]
    }

    #[inline]
    fn each_wide(&self, first: u64, last: u64, f: impl Fn(&AtomicU32)) {
        f(self.wide(first));
        if first as usize / SLOTS != last as usize / SLOTS {
            f(self.wide(last));
        }
    }

    #[inline]
    fn take(slot: &ClaimSlot, mode: Mode) {
        // SeqCst: the claim's RMW, as `rangelock`'s.
        match mode {
            Mode::Exclusive => drop(slot.word.swap(2, Ordering::SeqCst)),
            Mode::Shared => drop(slot.word.fetch_add(16, Ordering::SeqCst)),
        }
    }

    #[inline]
    fn give(slot: &ClaimSlot, mode: Mode) {
        match mode {
            Mode::Exclusive => {
                // Release: the holder's releasing store.
                slot.word.store(1, Ordering::Release);
                std::hint::black_box(slot.waiting.load(Ordering::Relaxed));
            }
            // Release: a reader's leaving RMW.
            Mode::Shared => drop(slot.word.fetch_sub(16, Ordering::Release)),
        }
    }
}

// SAFETY: not a lock at all, as `NoLock`: only the examples' ceilings use it.
unsafe impl RawRangeLock for ClaimFloor {
    type Token = ClaimHeld;
    const NAME: &'static str = "claim-floor";
    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<ClaimHeld> {
        let (first, last) = (range.start >> Self::SHIFT, (range.end - 1) >> Self::SHIFT);
        let max = if mode == Mode::Exclusive { rangelock::DEFAULT_CLAIM_STRIPES as u64 } else { 4 };
        let coarse = last - first >= max;
        // SeqCst (every load here): the handshake loads, after the claim.
        let seen = if first == last {
            let slot = Self::slot(&self.fine, first);
            Self::take(slot, mode);
            slot.counted.load(Ordering::SeqCst) | self.wide(first).load(Ordering::SeqCst)
        } else if !coarse {
            let mut seen = 0;
            for s in first..last + 1 {
                let slot = Self::slot(&self.fine, s);
                Self::take(slot, mode);
                seen |= slot.counted.load(Ordering::SeqCst);
            }
            seen | self.wide(first).load(Ordering::SeqCst)
        } else {
            // SeqCst: the counting RMW, before the claim.
            self.each_wide(first, last, |w| {
                w.fetch_add(1, Ordering::SeqCst);
            });
            for c in first >> Self::COARSE_LOG2..(last >> Self::COARSE_LOG2) + 1 {
                Self::take(Self::slot(&self.coarse, c), mode);
            }
            let (mut words, mut counts) = (0, 0);
            for s in first..last + 1 {
                let slot = Self::slot(&self.fine, s);
                words |= slot.word.load(Ordering::SeqCst);
                counts |= slot.counted.load(Ordering::SeqCst);
            }
            counts | words as u32
        };
        std::hint::black_box(seen);
        Some(ClaimHeld { first, last, coarse, mode })
    }
    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> ClaimHeld {
        // Never refuses: it excludes nobody.
        let token = self.try_lock(range, mode);
        token.unwrap_or_else(|| unreachable!("claim-floor always acquires"))
    }
    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, _: Instant) -> Option<ClaimHeld> {
        self.try_lock(range, mode)
    }
    #[inline]
    unsafe fn unlock(&self, held: ClaimHeld) {
        let ClaimHeld { first, last, coarse, mode } = held;
        if first == last {
            Self::give(Self::slot(&self.fine, first), mode);
        } else if !coarse {
            for s in first..last + 1 {
                Self::give(Self::slot(&self.fine, s), mode);
            }
        } else {
            for c in first >> Self::COARSE_LOG2..(last >> Self::COARSE_LOG2) + 1 {
                Self::give(Self::slot(&self.coarse, c), mode);
            }
            self.each_wide(first, last, |w| {
                // Release: the uncount, after the hold is gone.
                w.fetch_sub(1, Ordering::Release);
            });
        }
    }
}
