//! [`ClaimFloor`]: the memory traffic of `rangelock`'s stripe protocol with none of its
//! decisions, the floor of that protocol on a workload (the `mixed` suite's `claim-floor`).

use core::ops::{Range, RangeInclusive};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use rangelock::Mode;

use super::RangeTarget;

/// What an uncontended acquisition and release of `rangelock` write and read, and nothing
/// else: the atomic RMWs, stores and loads its stripe protocol makes, on lines laid out as
/// its default geometry lays them out, with no directory lookup, no range word built or
/// read, no conflict ever acted on. So `rangelock` over `claim-floor` is what its own code
/// costs, and `claim-floor` over [`SharedFloor`](super::SharedFloor) what its protocol's
/// extra lines cost (`shared-floor` touches one slot whatever the range).
///
/// - A range over up to `claim` stripes (`rangelock::DEFAULT_CLAIM_STRIPES` exclusive,
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
    fine: Box<[Slot]>,
    coarse: Box<[Slot]>,
    wide: Box<[CachePadded<AtomicU32>]>,
}

/// One slot of [`ClaimFloor`], laid out as `rangelock`'s stripe slot: the holder word, the
/// count of counted parties, the count of waiters.
#[derive(Debug, Default)]
#[repr(align(16))]
struct Slot {
    word: AtomicU64,
    counted: AtomicU32,
    waiting: AtomicU32,
}

/// A [`ClaimFloor`] hold: what its release touches.
#[derive(Debug)]
pub struct ClaimHeld {
    range: Range<u64>,
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
    const SHIFT: u32 = rangelock::DEFAULT_STRIPE_SHIFT;
    /// Coarse stripe width, log2 units: 64 stripes.
    const COARSE_SHIFT: u32 = Self::SHIFT + 6;
    /// Slots per table (`rangelock`'s default); also stripes per window.
    const SLOTS: u64 = rangelock::DEFAULT_STRIPE_SLOTS as u64;
    /// `wide` counts, by window (`rangelock`'s overflow table's).
    const WIDE: usize = 16;

    /// The floor for `rangelock`'s default geometry.
    pub fn new() -> Self {
        let table = || (0..Self::SLOTS).map(|_| Slot::default()).collect();
        let wide = (0..Self::WIDE).map(|_| CachePadded::default()).collect();
        ClaimFloor { fine: table(), coarse: table(), wide }
    }

    /// Whether a range over `stripes` in `mode` claims slot by slot (else coarse).
    #[inline]
    fn slot_by_slot(stripes: &RangeInclusive<u64>, mode: Mode) -> bool {
        let max = match mode {
            Mode::Exclusive => rangelock::DEFAULT_CLAIM_STRIPES as u64,
            Mode::Shared => Self::SHARED_CLAIM,
        };
        stripes.end() - stripes.start() < max
    }

    /// The stripes (or coarse stripes, at `shift`) `range` touches.
    #[inline]
    fn span(range: &Range<u64>, shift: u32) -> RangeInclusive<u64> {
        (range.start >> shift)..=((range.end - 1) >> shift)
    }

    /// The slot of stripe (or coarse stripe) `s` in `table`.
    #[inline]
    fn slot(table: &[Slot], s: u64) -> &Slot {
        &table[(s & (Self::SLOTS - 1)) as usize]
    }

    /// The `wide` count of the window of stripe `stripe`.
    #[inline]
    fn wide(&self, stripe: u64) -> &AtomicU32 {
        &self.wide[(stripe / Self::SLOTS) as usize % Self::WIDE]
    }

    /// The `wide` counts of the one or two windows of `stripes` (a coarse range spans at
    /// most two).
    fn windows(&self, stripes: &RangeInclusive<u64>) -> impl Iterator<Item = &AtomicU32> {
        let (first, last) = (*stripes.start(), *stripes.end());
        let two = first / Self::SLOTS != last / Self::SLOTS;
        core::iter::once(self.wide(first)).chain(two.then(|| self.wide(last)))
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

impl RangeTarget for ClaimFloor {
    type Local = ();
    type Held<'a> = ClaimHeld;

    fn local(&self) {}

    #[inline]
    fn acquire(&self, _: &mut (), range: Range<u64>, mode: Mode) -> ClaimHeld {
        let stripes = Self::span(&range, Self::SHIFT);
        let mut seen = 0;
        if Self::slot_by_slot(&stripes, mode) {
            for s in stripes.clone() {
                let slot = Self::slot(&self.fine, s);
                Self::take(slot, mode);
                // SeqCst: the holder's handshake loads, after its claim.
                seen |= slot.counted.load(Ordering::SeqCst);
            }
            seen |= self.wide(*stripes.start()).load(Ordering::SeqCst);
        } else {
            for wide in self.windows(&stripes) {
                // SeqCst: the counting RMW, before the claim.
                wide.fetch_add(1, Ordering::SeqCst);
            }
            for c in Self::span(&range, Self::COARSE_SHIFT) {
                Self::take(Self::slot(&self.coarse, c), mode);
            }
            for s in stripes {
                let slot = Self::slot(&self.fine, s);
                // SeqCst: the coarse holder's scan of its stripes, after its claim.
                seen |=
                    slot.word.load(Ordering::SeqCst) as u32 | slot.counted.load(Ordering::SeqCst);
            }
        }
        core::hint::black_box(seen);
        ClaimHeld { range, mode }
    }

    #[inline]
    fn try_acquire(&self, local: &mut (), range: Range<u64>, mode: Mode) -> Option<ClaimHeld> {
        Some(self.acquire(local, range, mode))
    }

    #[inline]
    fn release(&self, _: &mut (), held: ClaimHeld) {
        let stripes = Self::span(&held.range, Self::SHIFT);
        if Self::slot_by_slot(&stripes, held.mode) {
            for s in stripes {
                Self::give(Self::slot(&self.fine, s), held.mode);
            }
        } else {
            for c in Self::span(&held.range, Self::COARSE_SHIFT) {
                Self::give(Self::slot(&self.coarse, c), held.mode);
            }
            for wide in self.windows(&stripes) {
                // Release: the uncount, after the hold is gone.
                wide.fetch_sub(1, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let table = ClaimFloor::SLOTS as usize;
        // Exclusive over 3 stripes: slots 1..=3 taken (2), then released (1); no coarse
        // slot, no count.
        let held = floor.acquire(&mut (), stripe + 5..4 * stripe - 1, Mode::Exclusive);
        let (words, wide) = state(&floor);
        assert_eq!(&words[..5], &[0, 2, 2, 2, 0]);
        assert!(words[table..].iter().all(|&w| w == 0) && wide.iter().all(|&w| w == 0));
        floor.release(&mut (), held);
        assert_eq!(&state(&floor).0[..5], &[0, 1, 1, 1, 0]);
        // Shared over 5 stripes (more than a reader claims slot by slot): its window's wide
        // count and its coarse slot, no stripe slot.
        let before = state(&floor).0;
        let held = floor.acquire(&mut (), 64 * stripe..69 * stripe, Mode::Shared);
        let (words, wide) = state(&floor);
        assert_eq!(words[..table], before[..table], "no stripe slot written");
        assert_eq!(words[table + 1], 16, "coarse stripe 1 joined");
        assert_eq!(wide[0], 1, "counted in window 0");
        floor.release(&mut (), held);
        let (words, wide) = state(&floor);
        assert_eq!((words[table + 1], wide[0]), (0, 0), "left and uncounted");
        // Exclusive over 9 stripes across two windows and two coarse stripes: both
        // windows' counts, both coarse slots.
        let edge = ClaimFloor::SLOTS * stripe;
        let held = floor.acquire(&mut (), edge - 4 * stripe..edge + 5 * stripe, Mode::Exclusive);
        let (words, wide) = state(&floor);
        let coarse = (edge >> ClaimFloor::COARSE_SHIFT) as usize;
        assert_eq!((words[table + coarse - 1], words[table + coarse]), (2, 2));
        assert_eq!((wide[0], wide[1]), (1, 1));
        floor.release(&mut (), held);
        assert_eq!(state(&floor).1, vec![0; ClaimFloor::WIDE]);
        // It excludes nobody.
        let a = floor.try_acquire(&mut (), 0..1, Mode::Exclusive);
        assert!(a.is_some() && floor.try_acquire(&mut (), 0..1, Mode::Exclusive).is_some());
    }
}
