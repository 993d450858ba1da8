//! [`ClaimFloor`]: the memory traffic of `rangelock`'s stripe protocol with none of its
//! decisions, the floor of that protocol on a workload (the `mixed` suite's `claim-floor`,
//! as a `RangeTarget` in `target.rs`). This file depends on neither the bench's traits nor
//! its other modules: `rangelock`'s `mixed_loop` example includes it (`#[path]`) for its
//! own `claim-floor`, so both measure the same code.

use core::ops::Range;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use rangelock::Mode;

/// What an uncontended acquisition and release of `rangelock` write and read, and nothing
/// else: the atomic RMWs, stores and loads its stripe protocol makes, on lines laid out as
/// its default geometry lays them out, with no directory lookup, no range word built or
/// read, no conflict ever acted on. So `rangelock` over `claim-floor` is what its own code
/// costs, and `claim-floor` over `SharedFloor` what its protocol's
/// extra lines cost (`shared-floor` touches one slot whatever the range).
///
/// - A range over up to `claim` stripes (`rangelock::internals::DEFAULT_CLAIM_STRIPES` exclusive,
///   [`SHARED_CLAIM`](Self::SHARED_CLAIM) shared) takes each stripe's 16-byte slot with an
///   RMW (a swap exclusive, an add shared), loads the slot's count beside it, then its
///   window's `wide` count; it releases each slot with a store and a load of the slot's
///   waiter count (exclusive) or a subtract (shared, since other readers may join).
/// - A longer range counts itself in its windows' `wide` counts (one per window, 16 of
///   them for the windows without a table of their own, a line each), takes its one or two
///   coarse slots (stripes 64 times wider, in a coarse table of the same size) as above,
///   then loads every one of its stripes' slot words and counts; it releases the coarse
///   slots, then uncounts.
///
/// Every window shares one table here, as nearly every window does in `rangelock` when
/// ranges spread over a domain far larger than its window directory covers (`mixed`).
///
/// A ceiling, not a lock: its slots are counters, nobody waits. Only sound where no two
/// threads touch the same data under the lock: `mixed`, whose critical sections touch
/// per-thread buffers.
#[derive(Debug)]
pub struct ClaimFloor {
    fine: Box<Table>,
    coarse: Box<Table>,
    wide: Box<[CachePadded<AtomicU32>; WIDE]>,
}

/// Slots per table (`rangelock`'s default); also stripes per window.
const SLOTS: usize = rangelock::internals::DEFAULT_STRIPE_SLOTS;
/// `wide` counts, by window (`rangelock`'s overflow table's).
const WIDE: usize = 16;

/// A table of slots (a fixed size, so that a masked index needs no bounds check: the floor
/// must not pay what `rangelock` does not).
type Table = [Slot; SLOTS];

/// One slot of [`ClaimFloor`], laid out as `rangelock`'s stripe slot: the holder word, the
/// count of counted parties, the count of waiters.
#[derive(Debug, Default)]
#[repr(align(16))]
struct Slot {
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
    /// The report name.
    pub const NAME: &'static str = "claim-floor";
    /// The most stripes a shared range claims slot by slot (`rangelock`'s
    /// `SHARED_CLAIM_STRIPES`): a reader pays two RMWs per slot, so longer ranges take the
    /// coarse claim.
    pub const SHARED_CLAIM: u64 = 4;
    /// Stripe width, log2 units (`rangelock`'s default).
    const SHIFT: u32 = rangelock::internals::DEFAULT_STRIPE_SHIFT;
    /// Stripes per coarse stripe, log2: 64.
    const COARSE_LOG2: u32 = 6;

    /// The floor for `rangelock`'s default geometry.
    pub fn new() -> Self {
        let table = || -> Box<Table> {
            let slots: Box<[Slot]> = (0..SLOTS).map(|_| Slot::default()).collect();
            slots.try_into().unwrap_or_else(|_| unreachable!("SLOTS slots"))
        };
        ClaimFloor { fine: table(), coarse: table(), wide: Box::default() }
    }

    /// The slot of stripe (or coarse stripe) `s` in `table`.
    #[inline]
    fn slot(table: &Table, s: u64) -> &Slot {
        &table[s as usize & (SLOTS - 1)]
    }

    /// The `wide` count of the window of stripe `stripe`.
    #[inline]
    fn wide(&self, stripe: u64) -> &AtomicU32 {
        &self.wide[(stripe as usize / SLOTS) & (WIDE - 1)]
    }

    /// Applies `f` to the `wide` counts of the one or two windows of stripes `first..=last`
    /// (a coarse range spans at most two).
    #[inline]
    fn each_wide(&self, first: u64, last: u64, f: impl Fn(&AtomicU32)) {
        f(self.wide(first));
        if first as usize / SLOTS != last as usize / SLOTS {
            f(self.wide(last));
        }
    }

    /// Takes `slot` in `mode`: the claim's RMW.
    #[inline]
    fn take(slot: &Slot, mode: Mode) {
        // SeqCst: the claim's RMW, as `rangelock`'s (the instruction and its line are what
        // is measured; the values are never read).
        match mode {
            Mode::Exclusive => drop(slot.word.swap(2, Ordering::SeqCst)),
            Mode::Shared => drop(slot.word.fetch_add(16, Ordering::SeqCst)),
        }
    }

    /// Gives `slot` back in `mode`: a store and a load of the waiter count beside it, or a
    /// reader's RMW.
    #[inline]
    fn give(slot: &Slot, mode: Mode) {
        match mode {
            Mode::Exclusive => {
                // Release: the holder's releasing store.
                slot.word.store(1, Ordering::Release);
                core::hint::black_box(slot.waiting.load(Ordering::Relaxed));
            }
            // Release: a reader's leaving RMW.
            Mode::Shared => drop(slot.word.fetch_sub(16, Ordering::Release)),
        }
    }
}

impl Default for ClaimFloor {
    fn default() -> Self {
        Self::new()
    }
}

impl ClaimFloor {
    /// Takes `range` in `mode`: the protocol's claims and loads for it. Never refuses.
    ///
    /// Always inline, as `give_back`: with `AnnounceFloor`'s writers as a second caller,
    /// `#[inline]` left both out of line, and the call cost `claim-floor` 36 instructions
    /// an operation (`mixed_loop 200000 claim-floor 1 100 0..14`, 155.7 -> 191.9 with the
    /// loop), which a floor must not pay.
    #[inline(always)]
    pub fn hold(&self, range: Range<u64>, mode: Mode) -> ClaimHeld {
        let (first, last) = (range.start >> Self::SHIFT, (range.end - 1) >> Self::SHIFT);
        let max = match mode {
            Mode::Exclusive => rangelock::internals::DEFAULT_CLAIM_STRIPES as u64,
            Mode::Shared => Self::SHARED_CLAIM,
        };
        let coarse = last - first >= max;
        // SeqCst (every load here): the handshake loads, after the claim.
        let seen = if first == last {
            // One stripe: its slot, its count, its window's count.
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
            // The coarse holder's scan of its stripes' slots.
            let (mut words, mut counts) = (0, 0);
            for s in first..last + 1 {
                let slot = Self::slot(&self.fine, s);
                words |= slot.word.load(Ordering::SeqCst);
                counts |= slot.counted.load(Ordering::SeqCst);
            }
            counts | words as u32
        };
        core::hint::black_box(seen);
        ClaimHeld { first, last, coarse, mode }
    }

    /// The loads of a party that claims nothing over `range` but must see every holder
    /// there (`AnnounceFloor`'s reader): each stripe's slot word and count, and the `wide`
    /// counts of its first and last windows (where coarse holders and wide list writers
    /// count). Returns what it saw.
    #[inline]
    pub(super) fn peek(&self, range: &Range<u64>) -> u64 {
        let (first, last) = (range.start >> Self::SHIFT, (range.end - 1) >> Self::SHIFT);
        let mut seen = 0;
        // SeqCst (every load here): the handshake loads, after the announcement.
        for s in first..last + 1 {
            let slot = Self::slot(&self.fine, s);
            seen |=
                slot.word.load(Ordering::SeqCst) | u64::from(slot.counted.load(Ordering::SeqCst));
        }
        let wide = self.wide(first).load(Ordering::SeqCst) | self.wide(last).load(Ordering::SeqCst);
        seen | u64::from(wide)
    }

    /// Gives back what [`hold`](Self::hold) took.
    #[inline(always)]
    pub fn give_back(&self, held: ClaimHeld) {
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
            // Release: the uncount, after the hold is gone.
            self.each_wide(first, last, |w| {
                w.fetch_sub(1, Ordering::Release);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::RangeTarget;

    /// The slot words and counts of `floor`'s tables and `wide` counts, in one vector.
    fn state(floor: &ClaimFloor) -> (Vec<u64>, Vec<u32>) {
        let words = floor.fine.iter().chain(&*floor.coarse).map(|s| s.word.load(Ordering::Relaxed));
        let wide = floor.wide.iter().map(|w| w.load(Ordering::Relaxed));
        (words.collect(), wide.collect())
    }

    #[test]
    fn the_claim_floor_touches_the_slots_rangelocks_protocol_touches() {
        let floor = ClaimFloor::new();
        let stripe = 1u64 << ClaimFloor::SHIFT;
        let table = SLOTS;
        // Exclusive over 3 stripes: slots 1..=3 taken (2), then released (1); no coarse
        // slot, no count.
        let held = floor.hold(stripe + 5..4 * stripe - 1, Mode::Exclusive);
        let (words, wide) = state(&floor);
        assert_eq!(&words[..5], &[0, 2, 2, 2, 0]);
        assert!(words[table..].iter().all(|&w| w == 0) && wide.iter().all(|&w| w == 0));
        floor.give_back(held);
        assert_eq!(&state(&floor).0[..5], &[0, 1, 1, 1, 0]);
        // Shared over 5 stripes (more than a reader claims slot by slot): its window's wide
        // count and its coarse slot, no stripe slot.
        let before = state(&floor).0;
        let held = floor.hold(64 * stripe..69 * stripe, Mode::Shared);
        let (words, wide) = state(&floor);
        assert_eq!(words[..table], before[..table], "no stripe slot written");
        assert_eq!(words[table + 1], 16, "coarse stripe 1 joined");
        assert_eq!(wide[0], 1, "counted in window 0");
        floor.give_back(held);
        let (words, wide) = state(&floor);
        assert_eq!((words[table + 1], wide[0]), (0, 0), "left and uncounted");
        // Exclusive over 9 stripes across two windows and two coarse stripes: both
        // windows' counts, both coarse slots.
        let edge = SLOTS as u64 * stripe;
        let held = floor.hold(edge - 4 * stripe..edge + 5 * stripe, Mode::Exclusive);
        let (words, wide) = state(&floor);
        let coarse = (edge >> (ClaimFloor::SHIFT + ClaimFloor::COARSE_LOG2)) as usize;
        assert_eq!((words[table + coarse - 1], words[table + coarse]), (2, 2));
        assert_eq!((wide[0], wide[1]), (1, 1));
        floor.give_back(held);
        assert_eq!(state(&floor).1, vec![0; WIDE]);
        // It excludes nobody.
        let a = floor.try_acquire(&mut (), 0..1, Mode::Exclusive);
        assert!(a.is_some() && floor.try_acquire(&mut (), 0..1, Mode::Exclusive).is_some());
    }
}
