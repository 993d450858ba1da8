//! The slot table: one cache-padded announcement word per protected thread.

use crossbeam_utils::CachePadded;

use crate::primitive::{fence, AtomicU64, AtomicUsize, Ordering};

/// The value of a slot that no thread owns.
pub(crate) const FREE: u64 = 0;

/// The value of a slot a thread keeps between regions (asymmetric mode): owned, not
/// protected. Epochs never reach it (they start at 1 and grow by one per bump).
pub(crate) const IDLE: u64 = u64::MAX;

/// A fixed-size table of announcement slots, owned by one [`LightEpoch`](super::LightEpoch).
///
/// # Slot states
///
/// | value                | meaning                                                      |
/// |----------------------|--------------------------------------------------------------|
/// | `0` (`FREE`)         | no thread owns this slot; anyone may claim it                |
/// | `u64::MAX` (`IDLE`)  | a thread keeps it as its sticky slot, and is not protected   |
/// | `e`, `0 < e < IDLE`  | the owning thread is protected and has announced epoch `e`   |
///
/// A *transient* slot is owned exactly while a thread is protected in it: claiming is the
/// CAS `FREE → e` that also announces, releasing is the store of `FREE`. A *sticky* slot
/// (asymmetric mode only, see [`super::local`]) is claimed once with the CAS
/// `FREE → IDLE` and then announced in with plain stores `IDLE → e → IDLE`; its thread
/// gives it back (`FREE`) when it evicts it from its cache or exits. There is no separate
/// owner word, so a slot cannot be owned by two threads.
///
/// # Scanning only what was ever used
///
/// A scan reads only the slots marked in `used`, a bitmap of every slot ever claimed (a
/// bit is set, SeqCst, before its slot's first claim and never cleared). Threads probe
/// from spread-out hints, so a table of 64 slots used by two threads is scanned in two
/// loads instead of 64 (a version change alone cost 790 instructions of scan). A scan
/// that misses a bit set after its fence misses only a claim ordered after that fence,
/// which is the case the announce argument already covers (the claimant's later loads
/// see what the scanner published before its fence); a claimant that finds its bit set
/// read it from a set ordered before its own fence, so the same holds.
pub(crate) struct SlotTable {
    slots: Box<[CachePadded<AtomicU64>]>,
    /// One bit per slot: set once the slot has ever been claimed.
    used: Box<[AtomicU64]>,
    /// Number of sticky slots; at most `len / 2`, so idle threads can never take the slots
    /// transient claims need. Incremented SeqCst before a sticky slot is claimed, so a
    /// scanner that reads it after its bump knows whether a thread other than itself can
    /// announce with a plain store ([`others_sticky`](Self::others_sticky)).
    sticky: CachePadded<AtomicUsize>,
    /// Models only: sticky announces skip even loom's stand-in for the light barrier (a
    /// SeqCst fence), so a model can check a protocol whose scans skip the heavy one.
    #[cfg(loom)]
    pub(crate) model_plain: bool,
}

impl SlotTable {
    pub(crate) fn new(len: usize) -> Self {
        assert!(len > 0, "an epoch table needs at least one slot");
        SlotTable {
            slots: (0..len).map(|_| CachePadded::new(AtomicU64::new(FREE))).collect(),
            used: (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            sticky: CachePadded::new(AtomicUsize::new(0)),
            #[cfg(loom)]
            model_plain: false,
        }
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
        let mut i = start_of(hint, len);
        for _ in 0..len {
            let slot = &self.slots[i];
            // Relaxed pre-check: skip slots that are visibly taken without an RMW on them.
            if slot.load(Ordering::Relaxed) == FREE {
                self.mark_used(i);
                // SeqCst: the announce must be ordered before this thread's later protected
                // loads (the store-load pattern FASTER gets wrong); pairs with the fence in
                // `min_announced`, which the reclaimer runs after bumping the epoch.
                if slot.compare_exchange(FREE, epoch, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                    announce_fence();
                    return Some(i);
                }
            }
            i = if i + 1 == len { 0 } else { i + 1 };
        }
        None
    }

    /// Claims a free slot as a sticky slot (`FREE → IDLE`), if fewer than half the slots
    /// are sticky. The caller announces in it with [`announce_sticky`](Self::announce_sticky)
    /// and gives it back with [`release_sticky`](Self::release_sticky).
    pub(crate) fn claim_sticky(&self, hint: usize) -> Option<usize> {
        // SeqCst: a scanner that reads the count after its bump and does not see this
        // increment is ordered before it, so this thread's later state loads see what the
        // scanner published (`others_sticky`); pairs with the SeqCst load there.
        if self.sticky.fetch_add(1, Ordering::SeqCst) >= self.slots.len() / 2 {
            self.sticky.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let len = self.slots.len();
        let start = start_of(hint, len);
        for i in (start..len).chain(0..start) {
            let slot = &self.slots[i];
            if slot.load(Ordering::Relaxed) == FREE {
                self.mark_used(i);
                // Relaxed: IDLE announces nothing (a scan treats it like FREE), so the claim
                // orders nothing; exclusivity comes from the CAS alone.
                if slot.compare_exchange(FREE, IDLE, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                    return Some(i);
                }
            }
        }
        self.sticky.fetch_sub(1, Ordering::Relaxed);
        None
    }

    /// Marks slot `index` as ever used (see "Scanning only what was ever used"), before
    /// its claim.
    #[inline(always)]
    fn mark_used(&self, index: usize) {
        let (word, bit) = (&self.used[index / 64], 1u64 << (index % 64));
        // Relaxed pre-check: the bit is set once per slot, and a bit read set was set by
        // an RMW that the claim's fence orders after, as the type docs argue.
        if word.load(Ordering::Relaxed) & bit == 0 {
            // SeqCst: a scanner that misses this bit is ordered before it; pairs with the
            // SeqCst loads of `used` in `scan`.
            word.fetch_or(bit, Ordering::SeqCst);
        }
    }

    /// Whether a thread other than the caller may hold a sticky slot: more sticky slots
    /// than `own` (1 if the caller holds one, else 0). Read after a bump: if `false`, every
    /// protected thread but the caller announced with a fenced claim, and no heavy barrier
    /// is needed for the scan.
    #[inline]
    pub(crate) fn others_sticky(&self, own: usize) -> bool {
        // SeqCst: see `claim_sticky`.
        self.sticky.load(Ordering::SeqCst) > own
    }

    /// Gives back a sticky slot its owner is not protected in.
    pub(crate) fn release_sticky(&self, index: usize) {
        // Relaxed: the owner's last region already ended with a Release store of IDLE, and
        // a scan treats FREE like IDLE; this store only makes the slot claimable again.
        self.slots[index].store(FREE, Ordering::Relaxed);
        self.sticky.fetch_sub(1, Ordering::Relaxed);
    }

    /// Announces `epoch` in this thread's sticky `slot` (currently `IDLE`).
    ///
    /// A plain store followed by a compiler-only barrier: the reclaimer's
    /// [`min_announced`](Self::min_announced) issues the process-wide barrier that orders
    /// it before this thread's later loads (see the module docs, "Asymmetric mode").
    #[inline(always)]
    pub(crate) fn announce_sticky(&self, slot: &AtomicU64, epoch: u64) {
        debug_assert_eq!(slot.load(Ordering::Relaxed), IDLE);
        // Relaxed: ordering against the region's loads comes from the light/heavy barrier
        // pair (light here, heavy in `min_announced`), not from the store itself.
        slot.store(epoch, Ordering::Relaxed);
        #[cfg(loom)]
        if self.model_plain {
            return;
        }
        membarrier2::light();
    }

    /// The smallest epoch announced by any protected thread, or `None` if none is.
    ///
    /// The caller must have made its epoch bump (and the unlinking before it) globally
    /// ordered before this scan; the barrier here does that: a `fence(SeqCst)`, or with
    /// `asymmetric` a process-wide barrier that also orders every thread's plain sticky
    /// announce before that thread's later loads.
    pub(crate) fn min_announced(&self, heavy: bool) -> Option<u64> {
        if heavy {
            // Process-wide barrier: a full fence on every running thread of the process
            // between its program-order neighbours; pairs with `membarrier2::light()` in
            // `announce_sticky` (and, being a SeqCst fence here too, with the SeqCst claim
            // in `try_claim`).
            membarrier2::heavy();
        } else {
            // SeqCst: orders the caller's epoch bump before the slot loads below; pairs with
            // the SeqCst claim in `try_claim` (Dekker-style: either the scan sees the
            // thread's announce, or the thread's later loads see what was unlinked before
            // the bump).
            fence(Ordering::SeqCst);
        }
        self.scan()
    }

    /// The smallest announced epoch as this thread happens to see it, without a barrier: a
    /// hint, good only for deciding that nothing can run yet.
    pub(crate) fn min_announced_hint(&self) -> Option<u64> {
        self.scan()
    }

    fn scan(&self) -> Option<u64> {
        let mut min = None;
        for (w, word) in self.used.iter().enumerate() {
            // SeqCst: see `mark_used`.
            let mut bits = word.load(Ordering::SeqCst);
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                // Acquire: everything the slot's owner read while protected at an older
                // epoch (or before releasing the slot) happens before the actions we may
                // now run; pairs with the Release stores in `EpochGuard::refresh` and
                // `Drop`.
                let e = self.slots[i].load(Ordering::Acquire);
                if e != FREE && e != IDLE {
                    min = Some(min.map_or(e, |m: u64| m.min(e)));
                }
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

/// Where a thread with `hint` starts probing a table of `len` slots: the hint spread over
/// `0..len` by a multiply and a shift (Lemire's "fastrange") instead of a remainder, whose
/// division would be the most expensive instruction on the protect path.
#[inline(always)]
fn start_of(hint: usize, len: usize) -> usize {
    // Fibonacci hashing first, so that consecutive hints land far apart.
    let spread = (hint as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((u128::from(spread) * len as u128) >> 64) as usize
}
