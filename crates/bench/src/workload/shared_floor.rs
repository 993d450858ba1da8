//! [`SharedFloor`]: one RMW and one store per operation on a table all threads share, the
//! floor of any lock whose threads meet in a table (the `mixed` suite's `shared-floor`, as
//! a `RangeTarget` in `target.rs`). This file depends on neither the bench's traits nor its
//! other modules: `rangelock`'s `mixed_loop` example includes it (`#[path]`) for its own
//! `shared-floor`, so both measure the same code.
//!
//! The table's size trades line transfers for misses: on a 2-vCPU Intel Xeon VM
//! (`mixed_loop 2000000 <v> 2 100`, 3 interleaved rounds, medians, ns per operation of both
//! threads) the default 32 KiB table cost 26.9 ns, a 4 MiB one (`RANGELOCK_FLOOR_SLOTS=262144`)
//! 61.9 ns, the `rmw-floor` 12.1 ns and `segments-256Ki`, whose 16 MiB misses to memory,
//! 111.6 ns.

use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};

/// The least a lock *shared by threads* pays on a workload of ranges at random positions,
/// without a lock: the bench's `RmwFloor`'s RMW and store, but on the 16-byte slot of the
/// range's first stripe (`rangelock`'s default 16 Ki units) in one table (2048 slots by
/// default: 32 KiB, `rangelock`'s stripe table) that every thread uses.
///
/// Two threads whose ranges may overlap must meet in memory that both write and read (the
/// Dekker handshake, or an RMW on a common word), and for ranges at random positions that
/// memory is picked by position. A line a thread touches was then last written by the other
/// core about as often as the two touch lines, half the time at two threads, whatever the
/// table's size (one too large for the caches misses instead), so this target pays one RMW
/// and about half a line transfer per acquisition, and nothing else: no range is looked at
/// beyond its first stripe. A ratio it does not reach, no lock whose threads meet in a
/// table reaches on that machine; `RmwFloor` is the bound for a lock that shares nothing.
///
/// A ceiling, not a lock: its slots are counters, nobody waits. Only sound where no two
/// threads touch the same data under the lock: `mixed`, whose critical sections touch
/// per-thread buffers.
#[derive(Debug)]
pub struct SharedFloor {
    slots: Box<[SharedSlot]>,
}

/// One slot of [`SharedFloor`]: a word, padded as `rangelock`'s stripe slot (word, count,
/// waiter count).
#[derive(Debug, Default)]
#[repr(align(16))]
struct SharedSlot(AtomicU64);

impl SharedFloor {
    /// The report name.
    pub const NAME: &'static str = "shared-floor";

    /// The table of `rangelock`'s default stripe table: as many slots.
    pub fn new() -> Self {
        Self::with_slots(rangelock::internals::DEFAULT_STRIPE_SLOTS)
    }

    /// A table of `slots` slots.
    ///
    /// # Panics
    ///
    /// If `slots` is not a power of two.
    pub fn with_slots(slots: usize) -> Self {
        assert!(slots.is_power_of_two(), "shared-floor slots: a power of two, got {slots}");
        SharedFloor { slots: (0..slots).map(|_| SharedSlot::default()).collect() }
    }

    /// Takes the slot of `range`'s first stripe: one RMW. Never refuses; returns the slot's
    /// index for [`give_back`](Self::give_back).
    #[inline]
    pub fn hold(&self, range: &Range<u64>) -> usize {
        let i = (range.start >> rangelock::internals::DEFAULT_STRIPE_SHIFT) as usize
            & (self.slots.len() - 1);
        // AcqRel: a lock's acquiring RMW, on the shared line (the instruction and the line's
        // transfers are the cost being measured).
        self.slots[i].0.fetch_add(1, Ordering::AcqRel);
        i
    }

    /// Gives back slot `i`, taken by [`hold`](Self::hold): one plain store.
    #[inline]
    pub fn give_back(&self, i: usize) {
        let slot = &self.slots[i].0;
        // Relaxed load, Release store: a lock's release is one plain store on its slot (the
        // line is already here; another thread's RMW in between is lost, which no reader of
        // a ceiling minds).
        slot.store(slot.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Slot `i`'s counter (tests).
    #[cfg(test)]
    pub(crate) fn count(&self, i: usize) -> u64 {
        self.slots[i].0.load(Ordering::Relaxed)
    }
}

impl Default for SharedFloor {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_floor_pays_its_rmw_and_store_on_the_slot_of_the_ranges_first_stripe() {
        let floor = SharedFloor::new();
        let stripe = 1u64 << rangelock::internals::DEFAULT_STRIPE_SHIFT;
        let table = stripe * rangelock::internals::DEFAULT_STRIPE_SLOTS as u64;
        let held = floor.hold(&(5..2 * stripe));
        assert_eq!(floor.count(held), 1, "the acquiring RMW");
        // It excludes nobody; a range starting in the same stripe, or in the stripe one
        // table further, shares the slot (threads meet there); the next stripe does not.
        let same = floor.hold(&(stripe - 1..stripe));
        let far = floor.hold(&(table + 7..table + 8));
        let next = floor.hold(&(stripe..stripe + 1));
        assert_eq!((same, far), (held, held));
        assert_ne!(next, held);
        assert_eq!(floor.count(held), 3);
        floor.give_back(held);
        assert_eq!(floor.count(held), 4, "the releasing store");
        assert_eq!(core::mem::align_of::<SharedSlot>(), 16, "rangelock's slot size");
    }

    #[test]
    #[should_panic(expected = "a power of two")]
    fn a_table_that_is_not_a_power_of_two_is_refused() {
        let _ = SharedFloor::with_slots(3);
    }
}
