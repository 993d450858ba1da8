//! The stripe table: a direct-mapped fast path for exclusive ranges that fit in one stripe.
//!
//! The domain is cut into stripes of `1 << shift` units; stripe `s` owns slot
//! `s mod slots` of a fixed table (stripes `slots` apart share a slot). An exclusive range
//! that lies inside one stripe may hold its range by claiming that stripe's slot with a
//! CAS (`null → node`) instead of linking its node into the skip list. The slot says "the
//! range of this node is held (or about to be)", exactly like a reader's announcement says
//! it for a shared range, and the same Dekker handshake makes it safe:
//!
//! - a *stripe holder* claims its slot, then (after the handshake fence) checks for list
//!   nodes that may overlap and for overlapping readers;
//! - a *list writer* counts itself in the slots of the stripes its range touches (or, for a
//!   range of more than [`NARROW`] stripes, in the one `wide` count), links its node, and
//!   then checks the reader table and those slots' holders;
//! - a *reader* announces itself, then checks the list and the slots of its stripes.
//!
//! Whichever of two overlapping parties passes its fence second sees the other's store
//! (see `skiplist`, Consistency). The counts let a stripe holder skip the list search:
//! every list node that overlaps stripe `s` was counted in `s`'s slot (or in `wide`) before
//! it was linked and is uncounted only after it is unlinked, so a holder that reads both
//! counts at zero after its fence knows no list node overlaps its range (a writer whose
//! fence comes later reads the holder's slot instead). A non-zero count (perhaps for a
//! list node of another stripe of the same slot) only sends the holder to the list search.
//!
//! A stripe holder that finds any conflict **retracts** (it clears its slot, ends its node's
//! use, waking whoever took a ticket on it) and continues as a list writer with a fresh
//! node, so a stripe holder never waits while it is visible and nobody can wait for it in
//! a cycle. Two stripe holders of one slot exclude each other by the CAS; the loser takes
//! the list path, where it sees the winner's node in the slot and checks the actual ranges,
//! so disjoint ranges of one stripe both hold. Stripe holders of different slots lie in
//! different stripes and cannot overlap.
//!
//! A stripe hold costs one CAS on a slot that, for threads working on different regions
//! of the domain, lies on a line no other thread writes; the list's head and the reader
//! table are only read. That is the point of the table: a skip-list insertion writes the
//! shared links of its neighbours.

use core::ops::Range;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::list::Conflict;
use super::node::Node;
use super::readers::handshake_fence;
use super::reclaim::Guard;
use crate::primitive::{AtomicPtr, AtomicU32, Ordering};
use crate::range::overlaps;

/// Default stripe width: `1 << DEFAULT_STRIPE_SHIFT` units (16 Ki; 2 under loom, so the
/// models' tiny ranges take both paths).
pub const DEFAULT_STRIPE_SHIFT: u32 = if cfg!(loom) { 1 } else { 14 };
/// Default number of slots (2048 slots of 16 bytes: 32 KiB per lock; 2 under loom).
pub const DEFAULT_STRIPE_SLOTS: usize = if cfg!(loom) { 2 } else { 2048 };
/// A list range touching at most this many stripes counts itself in their slots; a wider
/// one counts itself once in the table's `wide` count.
pub(crate) const NARROW: u64 = 4;

/// One slot: the stripe holder's node, and the count of list nodes that may overlap the
/// slot's stripes. Aligned to its size, so a slot never straddles two cache lines (four
/// slots per line).
#[repr(align(16))]
pub(crate) struct Slot {
    /// The stripe holder (null when free).
    node: AtomicPtr<Node>,
    /// List writers counted in this slot: linked (or about to link, or just unlinked)
    /// nodes whose range touches one of the slot's stripes.
    listed: AtomicU32,
    /// Which of the slot's stripes the holder is in ([`Stripes::tag`]), or [`UNKNOWN`]:
    /// lets a checker skip the holder of another stripe without reading its node.
    ///
    /// | value     | meaning                                                       |
    /// |-----------|---------------------------------------------------------------|
    /// | `UNKNOWN` | free, or a holder that has claimed but not yet tagged the slot |
    /// | `t`       | the holder of `node` (or one that claimed later) has tag `t`  |
    ///
    /// The holder stores its tag after its claim and `UNKNOWN` before its clear, so a
    /// checker that read `node = p` and then a tag other than `UNKNOWN` and other than
    /// `p`'s own read it from a later holder, which claimed after `p` left. (Each half
    /// suffices on its own: the tag is also stored before the holder's handshake fence, so
    /// a checker that `p` does not see, whose fence comes later, reads `p`'s tag or a later
    /// one. The loom model `loom_slot_tag_of_an_aliased_stripe_is_not_trusted` fails when
    /// both the reset and the early store are removed.)
    tag: AtomicU32,
}

/// The tag of a slot whose holder's stripe is not known (see [`Slot::tag`](Slot)).
const UNKNOWN: u32 = u32::MAX;

/// The stripe table of one lock.
pub(crate) struct Stripes {
    slots: Box<[Slot]>,
    /// List writers whose range touches more than [`NARROW`] stripes.
    wide: CachePadded<AtomicU32>,
    /// Stripe width, log2 units.
    shift: u32,
}

impl Stripes {
    /// A table of `slots` slots (a power of two, or 0 for no fast path) for stripes of
    /// `1 << shift` units.
    pub(crate) fn new(shift: u32, slots: usize) -> Self {
        assert!(slots == 0 || slots.is_power_of_two(), "stripe slots must be a power of two");
        assert!(shift < 64, "stripe width must be below 2^64 units");
        let slots = (0..slots)
            .map(|_| Slot {
                node: AtomicPtr::new(core::ptr::null_mut()),
                listed: AtomicU32::new(0),
                tag: AtomicU32::new(UNKNOWN),
            })
            .collect();
        Stripes { slots, wide: CachePadded::new(AtomicU32::new(0)), shift }
    }

    /// Number of slots (0: the fast path is off).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Stripe width, log2 units.
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// The slot of stripe `stripe`: stripe modulo the table, so a region of the domain maps
    /// to a contiguous run of slots, and threads working on different regions (the common
    /// way to split work) write different cache lines of the table. A hash would spread each
    /// thread's stripes over the whole table, and every slot line would move between the
    /// cores of the threads that take turns writing it (`w1_loop 3000000 0 rangelock 2`,
    /// 2 threads on disjoint 16 MiB shares, default table, three interleaved runs each of
    /// a build with this function replaced by a multiply-shift hash and of this one:
    /// 34.1M-36.9M lock+unlock/s with the hash, 46.1M-56.6M with this).
    #[inline]
    fn slot(&self, stripe: u64) -> &Slot {
        &self.slots[stripe as usize & (self.slots.len() - 1)]
    }

    /// The tag of stripe `stripe`: which of the stripes sharing its slot it is, in 31 bits
    /// (stripes whose tags collide are told apart by their nodes' ranges).
    #[inline]
    fn tag(&self, stripe: u64) -> u32 {
        ((stripe >> self.slots.len().trailing_zeros()) & 0x7fff_ffff) as u32
    }

    /// The stripes `range` touches.
    #[inline]
    fn stripes(&self, range: &Range<u64>) -> (u64, u64) {
        (range.start >> self.shift, (range.end - 1) >> self.shift)
    }

    /// The slot of the one stripe `range` lies in, and that stripe's tag, or `None` if it
    /// spans stripes (or the fast path is off).
    #[inline]
    pub(crate) fn slot_of(&self, range: &Range<u64>) -> Option<(&Slot, u32)> {
        let (first, last) = self.stripes(range);
        (first == last && !self.slots.is_empty()).then(|| (self.slot(first), self.tag(first)))
    }

    /// Claims `slot` for `node` (of a stripe whose tag is `tag`) if it is free.
    #[inline]
    pub(crate) fn claim(slot: &Slot, node: NonNull<Node>, tag: u32) -> bool {
        // Relaxed pre-check: a taken slot costs no RMW. SeqCst CAS: the stripe holder's
        // store in the handshake (claim, fence, read the counts, the list and the reader
        // table); pairs with the SeqCst slot loads of list writers and readers in
        // `overlapping`. Its Acquire half reads the null of the previous holder's Release
        // `clear`.
        let claimed = slot.node.load(Ordering::Relaxed).is_null()
            && slot
                .node
                .compare_exchange(
                    core::ptr::null_mut(),
                    node.as_ptr(),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                )
                .is_ok();
        if claimed {
            // Release: a checker that reads this tag (Acquire) after reading an earlier
            // holder's node sees that holder's critical section (its clear happened before
            // our claim); pairs with the load in `check`.
            slot.tag.store(tag, Ordering::Release);
        }
        claimed
    }

    /// Frees a claimed slot (release or retraction).
    #[inline]
    pub(crate) fn clear(slot: &Slot) {
        // Relaxed: ordered before the clear below by its Release; a checker that reads the
        // next holder's node reads this or a later tag (see `Slot::tag`).
        slot.tag.store(UNKNOWN, Ordering::Relaxed);
        // Release: the holder's critical section happens before whoever reads the cleared
        // slot (the next claim's CAS, or a SeqCst load in `overlapping`).
        slot.node.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// Whether a list node may overlap the stripe of `slot` (a stripe holder's check, after
    /// its claim and `handshake_fence`).
    #[inline]
    pub(crate) fn maybe_listed(&self, slot: &Slot) -> bool {
        // SeqCst: the stripe holder's handshake loads; pairs with the SeqCst increments in
        // `count_list`, which precede the writer's link and fence. Acquire: a zero written
        // by `uncount_list` after a writer's release publishes its critical section.
        slot.listed.load(Ordering::SeqCst) != 0 || self.wide.load(Ordering::SeqCst) != 0
    }

    /// Counts a list writer of `range` (before it links its node).
    pub(crate) fn count_list(&self, range: &Range<u64>) {
        self.each_count(range, |count| {
            // SeqCst: the list writer's handshake store, before its link; pairs with the
            // SeqCst loads of `maybe_listed`.
            count.fetch_add(1, Ordering::SeqCst);
        });
    }

    /// Uncounts a list writer of `range` (after its node is unlinked, or when it gives up
    /// before linking).
    pub(crate) fn uncount_list(&self, range: &Range<u64>) {
        self.each_count(range, |count| {
            // Release: a stripe holder that reads the count this leaves (Acquire half of
            // its SeqCst load) sees the writer's critical section.
            count.fetch_sub(1, Ordering::Release);
        });
    }

    #[inline]
    fn each_count(&self, range: &Range<u64>, f: impl Fn(&AtomicU32)) {
        if self.slots.is_empty() {
            return;
        }
        let (first, last) = self.stripes(range);
        if last - first >= NARROW {
            f(&self.wide);
        } else {
            (first..=last).for_each(|s| f(&self.slot(s).listed));
        }
    }

    /// A stripe holder overlapping `range`, if any (list writers and readers, after their
    /// own handshake store).
    pub(crate) fn overlapping(&self, range: &Range<u64>, _guard: &Guard<'_>) -> Conflict {
        if self.slots.is_empty() {
            return Conflict::None;
        }
        handshake_fence();
        let (first, last) = self.stripes(range);
        let found = if last - first >= self.slots.len() as u64 {
            // The range covers every slot (some several times): one pass over the table,
            // every holder a candidate.
            self.slots.iter().map(|s| Self::check(s, None, range)).find(is_held)
        } else {
            (first..=last)
                .map(|s| Self::check(self.slot(s), Some(self.tag(s)), range))
                .find(is_held)
        };
        found.unwrap_or(Conflict::None)
    }

    /// The holder of `slot` if it overlaps `range`; `tag`, if given, is the tag of the one
    /// stripe of this slot that `range` touches.
    #[inline]
    fn check(slot: &Slot, tag: Option<u32>, range: &Range<u64>) -> Conflict {
        // SeqCst: the list writer's or reader's handshake load; pairs with the SeqCst claim.
        let node = slot.node.load(Ordering::SeqCst);
        if node.is_null() {
            return Conflict::None;
        }
        if let Some(tag) = tag {
            // Acquire: pairs with the Release tag store of a later holder, which claimed
            // after this node's holder left (see `Slot::tag`).
            let holder = slot.tag.load(Ordering::Acquire);
            if holder != UNKNOWN && holder != tag {
                // Another stripe's holder, or a later holder: this node's holder left.
                return Conflict::None;
            }
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
            .filter_map(|s| NonNull::new(s.node.swap(core::ptr::null_mut(), Ordering::Relaxed)))
            .collect()
    }
}

fn is_held(c: &Conflict) -> bool {
    matches!(c, Conflict::Held(_))
}
