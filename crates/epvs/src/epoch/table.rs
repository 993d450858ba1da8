//! The slot table: one cache-padded announcement word per protected thread.

use crossbeam_utils::CachePadded;

use crate::primitive::{fence, AtomicU64, Ordering};

/// The value of a slot that no thread is protected in.
pub(crate) const FREE: u64 = 0;

/// A fixed-size table of announcement slots, owned by one [`LightEpoch`](super::LightEpoch).
///
/// # Slot states
///
/// | value        | meaning                                                        |
/// |--------------|----------------------------------------------------------------|
/// | `0` (`FREE`) | no thread is protected in this slot; anyone may claim it       |
/// | `e > 0`      | the owning thread is protected and has announced epoch `e`     |
///
/// A slot is owned exactly while a thread is protected in it: claiming is the CAS
/// `0 → e` that also announces, releasing is the store of `0`. There is no separate owner
/// word, so a slot cannot be owned by two threads, and a thread that exits has necessarily
/// dropped (or leaked) its guards, which releases (or pins) its slots.
pub(crate) struct SlotTable {
    slots: Box<[CachePadded<AtomicU64>]>,
}

impl SlotTable {
    pub(crate) fn new(len: usize) -> Self {
        assert!(len > 0, "an epoch table needs at least one slot");
        SlotTable { slots: (0..len).map(|_| CachePadded::new(AtomicU64::new(FREE))).collect() }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub(crate) fn slot(&self, index: usize) -> &AtomicU64 {
        &self.slots[index]
    }

    /// Claims a free slot by announcing `epoch` in it, probing linearly from `hint`.
    ///
    /// Returns the slot index, or `None` when every slot was taken during one pass.
    /// On success the announcement is ordered before every later load of this thread.
    #[inline]
    pub(crate) fn try_claim(&self, hint: usize, epoch: u64) -> Option<usize> {
        debug_assert_ne!(epoch, FREE);
        let len = self.slots.len();
        let start = hint % len;
        for i in (start..len).chain(0..start) {
            let slot = &self.slots[i];
            // Relaxed pre-check: skip slots that are visibly taken without an RMW on them.
            if slot.load(Ordering::Relaxed) != FREE {
                continue;
            }
            // SeqCst: the announce must be ordered before this thread's later protected
            // loads (the store-load pattern FASTER gets wrong); pairs with the fence in
            // `min_announced`, which the reclaimer runs after bumping the epoch.
            if slot.compare_exchange(FREE, epoch, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                announce_fence();
                return Some(i);
            }
        }
        None
    }

    /// The smallest epoch announced by any protected thread, or `None` if none is.
    ///
    /// The caller must have made its epoch bump (and the unlinking before it) globally
    /// ordered before this scan; the fence here does that.
    pub(crate) fn min_announced(&self) -> Option<u64> {
        // SeqCst: orders the caller's epoch bump before the slot loads below; pairs with
        // the SeqCst claim in `try_claim` (Dekker-style: either the scan sees the thread's
        // announce, or the thread's later loads see what was unlinked before the bump).
        fence(Ordering::SeqCst);
        let mut min = None;
        for slot in self.slots.iter() {
            // Acquire: everything the slot's owner read while protected at an older epoch
            // (or before releasing the slot) happens before the actions we may now run;
            // pairs with the Release stores in `EpochGuard::refresh` and `Drop`.
            let e = slot.load(Ordering::Acquire);
            if e != FREE {
                min = Some(min.map_or(e, |m: u64| m.min(e)));
            }
        }
        min
    }
}

/// Orders a slot claim before the claiming thread's later loads.
///
/// On x86 the `lock cmpxchg` of the claim is already a full barrier, so no extra fence is
/// emitted there (crossbeam-epoch relies on the same fact). Elsewhere, and under loom, an
/// explicit `fence(SeqCst)` makes the argument hold in the language memory model.
#[inline(always)]
fn announce_fence() {
    #[cfg(any(loom, not(any(target_arch = "x86", target_arch = "x86_64"))))]
    // SeqCst: see `try_claim`; pairs with the fence in `min_announced`.
    fence(Ordering::SeqCst);
}
