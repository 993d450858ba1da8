//! The stripe table: a direct-mapped fast path for exclusive ranges that fit in one stripe.
//!
//! The domain is cut into stripes of `1 << STRIPE_SHIFT` units, and each stripe hashes to
//! one slot of a fixed table (several stripes share a slot). An exclusive range that lies
//! inside one stripe may hold its range by claiming that stripe's slot with a CAS
//! (`null → node`) instead of linking its node into the skip list. The slot says "the range
//! of this node is held (or about to be)", exactly like a reader's announcement says it for
//! a shared range, and the same Dekker handshake makes it safe:
//!
//! - a *stripe holder* claims its slot, then (after the handshake fence) checks the list
//!   for an overlapping exclusive node and the reader table for an overlapping reader;
//! - a *list writer* links its node, then checks the reader table and the slots of every
//!   stripe its range touches;
//! - a *reader* announces itself, then checks the list and the slots of its stripes.
//!
//! Whichever of two overlapping parties passes its fence second sees the other's store
//! (see `skiplist`, Consistency). A stripe holder that finds any conflict **retracts** (it
//! clears its slot, ends its node's use, waking whoever took a ticket on it) and continues
//! as a list writer with a fresh node, so a stripe holder never waits while it is visible
//! and nobody can wait for it in a cycle. Two stripe holders of one slot exclude each other
//! by the CAS; the loser takes the list path, where it sees the winner's node in the slot
//! and checks the actual ranges, so disjoint ranges of one stripe both hold. Stripe holders
//! of different slots lie in different stripes and cannot overlap.
//!
//! A stripe hold costs one CAS on a slot that, for disjoint ranges of different threads, is
//! rarely on a line another thread writes; the list and the reader table are only read, so
//! threads working on disjoint stripes do not move cache lines between cores. That is the
//! point of the table: a skip-list insertion writes the shared links of its neighbours.

use core::ops::Range;
use core::ptr::NonNull;

use super::list::Conflict;
use super::node::Node;
use super::readers::handshake_fence;
use super::reclaim::Guard;
use crate::primitive::{AtomicPtr, Ordering};
use crate::range::overlaps;

/// Width of a stripe: `1 << STRIPE_SHIFT` units (4096; 2 under loom, so the models' tiny
/// ranges take both paths).
pub(crate) const STRIPE_SHIFT: u32 = if cfg!(loom) { 1 } else { 12 };
/// Slots in the table (1024 words, 8 KiB; 2 under loom).
pub(crate) const SLOTS: usize = if cfg!(loom) { 2 } else { 1024 };
const SLOT_BITS: u32 = SLOTS.trailing_zeros();
const _: () = assert!(SLOTS.is_power_of_two() && SLOTS > 1);

/// A claimed slot of the table (recomputed from the node's range on release).
pub(crate) type Slot = AtomicPtr<Node>;

/// The stripe table of one lock.
pub(crate) struct Stripes {
    slots: Box<[Slot]>,
}

impl Stripes {
    pub(crate) fn new() -> Self {
        Stripes { slots: (0..SLOTS).map(|_| AtomicPtr::new(core::ptr::null_mut())).collect() }
    }

    /// The slot of stripe `stripe`: a multiply-shift hash, so neighbouring stripes (which
    /// one thread often works through) land on different cache lines.
    #[inline]
    fn slot(&self, stripe: u64) -> &Slot {
        let i = (stripe.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOT_BITS)) as usize;
        &self.slots[i]
    }

    /// The slot of the one stripe `range` lies in, or `None` if it spans stripes.
    #[inline]
    pub(crate) fn slot_of(&self, range: &Range<u64>) -> Option<&Slot> {
        let stripe = range.start >> STRIPE_SHIFT;
        (stripe == (range.end - 1) >> STRIPE_SHIFT).then(|| self.slot(stripe))
    }

    /// Claims `slot` for `node` if it is free.
    #[inline]
    pub(crate) fn claim(slot: &Slot, node: NonNull<Node>) -> bool {
        // Relaxed pre-check: a taken slot costs no RMW. SeqCst CAS: the stripe holder's
        // store in the handshake (claim, fence, read the list and the reader table); pairs
        // with the SeqCst slot loads of list writers and readers in `overlapping`. Its
        // Acquire half reads the null of the previous holder's Release `clear`.
        slot.load(Ordering::Relaxed).is_null()
            && slot
                .compare_exchange(
                    core::ptr::null_mut(),
                    node.as_ptr(),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// Frees a claimed slot (release or retraction).
    #[inline]
    pub(crate) fn clear(slot: &Slot) {
        // Release: the holder's critical section happens before whoever reads the cleared
        // slot (the next claim's CAS, or a SeqCst load in `overlapping`).
        slot.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// A stripe holder overlapping `range`, if any (list writers and readers, after their
    /// own handshake store).
    pub(crate) fn overlapping(&self, range: &Range<u64>, _guard: &Guard<'_>) -> Conflict {
        handshake_fence();
        let first = range.start >> STRIPE_SHIFT;
        let last = (range.end - 1) >> STRIPE_SHIFT;
        if last - first >= SLOTS as u64 {
            // The range covers every slot (some several times): one pass over the table.
            return self
                .slots
                .iter()
                .map(|s| Self::check(s, range))
                .find(is_held)
                .unwrap_or(Conflict::None);
        }
        (first..=last)
            .map(|s| Self::check(self.slot(s), range))
            .find(is_held)
            .unwrap_or(Conflict::None)
    }

    #[inline]
    fn check(slot: &Slot, range: &Range<u64>) -> Conflict {
        // SeqCst: the list writer's or reader's handshake load; pairs with the SeqCst claim.
        let node = slot.load(Ordering::SeqCst);
        if node.is_null() {
            return Conflict::None;
        }
        // SAFETY: a node read from a slot is retired only after the slot is cleared, and
        // reused only after every guard of that time (the caller's included) is dropped.
        let node = unsafe { &*node };
        if !overlaps(&node.range(), range) {
            return Conflict::None;
        }
        match node.ticket() {
            Some(ticket) => Conflict::Held(ticket),
            None => Conflict::None,
        }
    }

    /// Takes every node still in a slot (only when the lock drops: no concurrent user).
    pub(crate) fn drain(&mut self) -> Vec<NonNull<Node>> {
        self.slots
            .iter()
            // Relaxed: `&mut self`, no concurrent user.
            .filter_map(|s| NonNull::new(s.swap(core::ptr::null_mut(), Ordering::Relaxed)))
            .collect()
    }
}

fn is_held(c: &Conflict) -> bool {
    matches!(c, Conflict::Held(_))
}
