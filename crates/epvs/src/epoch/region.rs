//! Re-entrant regions on sticky slots: the protection EPVS regions are made of.
//!
//! An EPVS region is entered once per thread and may be re-entered (nested guards) while
//! it lasts; its outermost guard's protection covers the nested ones. On an asymmetric
//! instance the thread's sticky way counts the region's guards itself (`uses`, see
//! [`local`]), so entering, nesting and leaving touch nothing but the way and the slot:
//!
//! - [`enter_region`](LightEpoch::enter_region): the way's first use announces in its slot;
//!   a later use while the first is alive nests (no announcement of its own);
//! - [`release_protection`](LightEpoch::release_protection) ends the first use, and is
//!   refused while nested uses remain; [`unnest`](LightEpoch::unnest) ends a nested one,
//!   innermost first;
//! - [`suspend`](LightEpoch::suspend) / [`resume`](LightEpoch::resume) stop and restart
//!   the announcement while the region waits (for a transition), keeping the way in use so
//!   that nothing can evict it meanwhile.
//!
//! Where the thread has no sticky slot of the instance (fenced mode, a full table, all ways
//! busy), EPVS records its regions itself and protects them with transient slots.

use super::{local, LightEpoch, Protection};
use crate::primitive::Ordering;

use super::table::IDLE;

/// What [`LightEpoch::enter_region`] did.
pub(crate) enum Entered<'a> {
    /// A new region, protected in the thread's sticky slot (use 1 of way `way`).
    Fresh {
        /// The region's protection.
        protection: Protection<'a>,
        /// The sticky way.
        way: u32,
    },
    /// The thread is already protected in its sticky slot: this is use `level` (at least
    /// 2) of way `way`, covered by the first use's protection.
    Nested {
        /// The sticky way.
        way: u32,
        /// The use number, for [`LightEpoch::unnest`].
        level: u32,
    },
    /// The thread has no sticky slot it can use here (nothing changed).
    Unavailable,
}

impl LightEpoch {
    /// Enters a region in this thread's sticky slot, or nests in the region already there.
    #[inline(always)]
    pub(crate) fn enter_region(&self) -> Entered<'_> {
        if !self.asymmetric {
            return Entered::Unavailable;
        }
        let (way, slot) = match local::claim(self.id) {
            local::Claim::Idle(way, slot) => (way, slot),
            local::Claim::Busy(way, level) => return Entered::Nested { way, level },
            local::Claim::Absent => match local::acquire_slow(self.id, &self.table) {
                Some(found) => found,
                None => return Entered::Unavailable,
            },
        };
        Entered::Fresh { protection: self.announce_sticky(way, slot), way }
    }

    /// Ends use `level` of way `way` (from [`Entered::Nested`]); `false` (and nothing
    /// changes) if it is not the innermost live use.
    #[inline]
    pub(crate) fn unnest(&self, way: u32, level: u32) -> bool {
        local::unnest(way, level)
    }

    /// How many uses this thread has of its sticky slot of this instance: the live guards
    /// of its region here, if the region is kept in the sticky slot (0 otherwise).
    pub(crate) fn region_uses(&self) -> usize {
        if self.asymmetric {
            local::uses(self.id)
        } else {
            0
        }
    }

    /// The way of the thread's sticky-slot cache this instance maps to.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn sticky_way(&self) -> usize {
        local::way_of(self.id)
    }

    /// Stops announcing in `p`'s sticky slot (the region no longer protects anything) and
    /// runs ready actions, keeping the way in use; [`resume`](Self::resume) announces
    /// again.
    #[inline]
    pub(crate) fn suspend(&self, p: &Protection<'_>) {
        debug_assert!(p.way().is_some(), "suspend is for sticky slots");
        // Release: as in `release_protection`; pairs with the Acquire loads in
        // `SlotTable::min_announced`.
        p.slot().store(IDLE, Ordering::Release);
        if self.drain.has_pending() {
            self.drain_implicit();
        }
    }

    /// Announces the current epoch again in `p`'s sticky slot, after
    /// [`suspend`](Self::suspend).
    #[inline]
    pub(crate) fn resume(&self, p: &mut Protection<'_>) {
        // Acquire: as in `LightEpoch::try_protect_once`.
        let e = self.current.load(Ordering::Acquire);
        self.table.announce_sticky(p.slot(), e);
        p.set_announced(e);
    }
}
