//! The table path: the one call that answers "held, here is the token" or "take the list
//! path" for an acquisition ([`Core::stripe_attempt`]), and the release of the coarse holds
//! it makes.
//!
//! The path is the stripe holder's side of the handshake in `stripes` (module docs there,
//! and "Stripe holders" in the consistency argument of `skiplist`), in three shapes tried
//! in turn, each never waiting while visible:
//!
//! 1. a range inside one stripe claims (or joins) its stripe's slot: one CAS, the
//!    handshake fence, the three counts; if one is not zero, the slow check
//!    (`stripe_counted`, then `stripe_is_free_slow`: the coarse slots over the range, then
//!    the list and, exclusive, the reader table), retracting on a conflict;
//! 2. a range over 2 up to the claim limit of stripes of one window claims (or joins)
//!    each slot in order (`claim_attempt`), then the same check over every slot;
//! 3. a longer range of up to two coarse stripes counts itself, claims its coarse slots,
//!    and after the fence checks the stripe slots of its range and the counts above its
//!    own share (`coarse_attempt`), retracting (and uncounting) on a conflict.
//!
//! `None` from the door means nothing is held, counted or claimed: the caller takes the
//! list path (exclusive) or the reader table (shared). The per-slot work (words, counts,
//! claims, windows) is in `stripes`; this file is the order of the steps.

use core::ops::Range;
use core::ptr::NonNull;

use super::list::Conflict;
use super::wait::Wait;
use super::{readers, stripes, Core, Kind, SkipToken};
use crate::range::Mode;

#[cfg(all(test, not(loom)))]
use super::tests;

impl Core {
    /// The stripe fast path in `mode`: the token if `range` lies in one stripe whose slot is
    /// free (or, for a reader, held by readers of exactly this range) and no counted party
    /// overlaps it; else the same for a range over a few stripes of one window
    /// (`claim_attempt`). `None` (with nothing held) sends the acquisition to the list or
    /// the reader table.
    #[inline(always)]
    pub(super) fn stripe_attempt(
        &self,
        range: &Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Option<SkipToken> {
        let Some(stripe) = self.stripes.slot_of(range) else {
            return self.claim_attempt(range, mode, wait);
        };
        if !stripe.claim(mode) {
            return None;
        }
        // The common case reaches no node, so it needs no epoch guard: no counted party may
        // overlap (handshake loads, after the fence).
        readers::handshake_fence();
        let slot = stripe.slot();
        if stripe.counted(&self.stripes) {
            return self.stripe_counted(range, slot, mode, wait);
        }
        Some(SkipToken(Kind::stripe(slot, mode)))
    }

    /// A one-stripe hold of `slot` in `mode` whose counts were not all zero: the token if no
    /// list node (and, for an exclusive holder, no reader) overlaps `range`, else it
    /// retracts. Out of line: the common path keeps its registers.
    #[cold]
    #[inline(never)]
    fn stripe_counted(
        &self,
        range: &Range<u64>,
        slot: NonNull<stripes::Slot>,
        mode: Mode,
        wait: Wait,
    ) -> Option<SkipToken> {
        if self.stripe_is_free_slow(range, mode, wait, true) {
            return Some(SkipToken(Kind::stripe(slot, mode)));
        }
        // Retract: whoever waits on the slot sees it free (or its count lower) and looks
        // again.
        // SAFETY: `slot` is ours, claimed (or joined) by the caller.
        unsafe { slot.as_ref() }.release_in(mode);
        None
    }

    /// The stripe fast path for a range over 2 up to `claim_stripes` stripes of one window:
    /// claim (or join) each slot in order, never waiting (`StripeClaim::claim`), then the
    /// same handshake as one slot, over every slot's count. Out of line: the one-stripe
    /// path stays small.
    #[inline(never)]
    fn claim_attempt(&self, range: &Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        let Some(claim) = self.stripes.claim_of(range, mode) else {
            return self.coarse_attempt(range, mode, wait);
        };
        if !claim.claim(mode) {
            return None;
        }
        readers::handshake_fence();
        let claimed = claim.claimed();
        if !claim.counted(&self.stripes) || self.stripe_is_free_slow(range, mode, wait, true) {
            return Some(SkipToken(match mode {
                Mode::Exclusive => Kind::Stripes(claimed),
                Mode::Shared => Kind::StripesShared(claimed),
            }));
        }
        // Retract, as for one slot.
        // SAFETY: the slots are ours, claimed (or joined) above.
        unsafe { stripes::release_claimed(claimed, mode) };
        None
    }

    /// The coarse path for a range too wide for a stripe claim: count it (as a list writer
    /// or reader counts itself), claim (or join) the slots of its one or two coarse
    /// stripes, never waiting, then after the handshake fence look for stripe holders in
    /// its stripes and, if another party is counted over it, search the list and the
    /// reader table. On any conflict it retracts (frees the coarse slots, waking
    /// their waiters, and uncounts) and the range takes the list path. Module docs of
    /// `stripes`, "Coarse claims".
    #[inline(never)]
    fn coarse_attempt(&self, range: &Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        if !self.stripes.coarse_eligible(range) {
            return None;
        }
        let claim = self.coarse.span_of(range, stripes::COARSE_CLAIM)?;
        // Counted before the claim makes the hold visible; uncounted after it is gone.
        self.stripes.count(range);
        if claim.claim(mode) {
            readers::handshake_fence();
            let free = match self.stripes.coarse_view(range, mode) {
                stripes::View::Clear => true,
                stripes::View::Counted => self.stripe_is_free_slow(range, mode, wait, false),
                stripes::View::Held => false,
            };
            let claimed = claim.claimed();
            if free {
                let (first, start, two) = (claimed.first, range.start, claimed.len == 2);
                return Some(SkipToken(match mode {
                    Mode::Exclusive => Kind::Coarse { first, start, two },
                    Mode::Shared => Kind::CoarseShared { first, start, two },
                }));
            }
            // SAFETY: the slots are ours, claimed (or joined) above.
            unsafe { stripes::release_claimed(claimed, mode) };
        }
        self.stripes.uncount(range);
        None
    }

    /// Ends a coarse hold in `mode` of the coarse slots `first` (and the next, if `two`)
    /// and of the range starting at `start`: reads the range's end from its last slot,
    /// frees (or leaves) the slots, then uncounts the range.
    #[inline(never)]
    pub(super) fn release_coarse(
        &self,
        first: NonNull<stripes::Slot>,
        start: u64,
        two: bool,
        mode: Mode,
    ) {
        let claimed = stripes::Claimed { first, len: 1 + usize::from(two) };
        // SAFETY: a coarse token's slots were claimed (or joined) in `mode` by the hold of a
        // range starting at `start`, which has not ended (the token is released once, here).
        let range = unsafe { self.coarse.claimed_range(claimed, start) };
        // SAFETY: as above: the slots are ours until this call.
        unsafe { stripes::release_claimed(claimed, mode) };
        // Uncounted after the hold is gone (module docs of `stripes`).
        self.stripes.uncount(&range);
    }

    /// After claiming a stripe slot in `mode` whose counts are not all zero: whether no list
    /// node (and, for an exclusive holder, no reader in the table) overlaps.
    #[cold]
    fn stripe_is_free_slow(
        &self,
        range: &Range<u64>,
        mode: Mode,
        wait: Wait,
        coarse: bool,
    ) -> bool {
        #[cfg(all(test, not(loom)))]
        tests::SLOW_CHECKS.with(|c| c.set(c.get() + 1));
        // A full epoch table counts as a conflict: retract, and let the list path wait (or
        // give up) as `wait` says.
        // A coarse holder over our range (counted, so we are here): stripe holders check the
        // coarse table; a coarse holder itself does not (its own claim is there).
        if coarse && !matches!(self.coarse.overlapping_slots(range, mode), Conflict::None) {
            return false;
        }
        let Some(guard) = self.reclaim.pin_for(wait) else { return false };
        matches!(self.list.overlapping(range, &guard), Conflict::None)
            && (mode == Mode::Shared
                || matches!(self.readers.overlapping(range, &guard), Conflict::None))
    }
}
