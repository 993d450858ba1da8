//! The RAII guard of an epoch-protected region, and the raw protection it wraps.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::table::{FREE, IDLE};
use super::{local, LightEpoch};
use crate::primitive::{AtomicU64, Ordering};

/// The low bits of a slot's address that [`Protection`] keeps its way in: `way + 1` for a
/// sticky slot, 0 for a transient one.
const WAY_TAG: usize = 0b1_1111;
const _: () = assert!(
    core::mem::align_of::<CachePadded<AtomicU64>>() > WAY_TAG && local::WAYS < WAY_TAG,
    "slots must be aligned enough to keep a way in their address's low bits"
);

/// The raw parts of one protection: which slot announces which epoch.
///
/// [`EpochGuard`] wraps one for users; EPVS guards hold one directly (released through
/// [`LightEpoch::release_protection`]) so that ending a region never moves a guard value
/// through memory. A `Protection` must be released exactly once, by the thread that
/// announced it.
///
/// Two words: the slot's address carries the way in its low bits (slots are cache-line
/// aligned), so a protection (and an `Option` of one) is passed and returned in
/// registers, never through memory.
#[derive(Clone, Copy)]
pub(crate) struct Protection<'a> {
    /// The announcing slot (borrowed from the instance's table: no index arithmetic or
    /// bounds check on the fast paths), tagged with the way (see [`WAY_TAG`]).
    tagged: NonNull<AtomicU64>,
    announced: u64,
    _slot: PhantomData<&'a AtomicU64>,
}

impl fmt::Debug for Protection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Protection")
            .field("announced", &self.announced)
            .field("way", &self.way())
            .finish_non_exhaustive()
    }
}

impl<'a> Protection<'a> {
    /// A protection in a transient slot.
    #[inline(always)]
    pub(super) fn transient(slot: &'a AtomicU64, announced: u64) -> Self {
        Protection { tagged: NonNull::from(slot), announced, _slot: PhantomData }
    }

    /// A protection in the thread's sticky slot of way `way`.
    #[inline(always)]
    pub(super) fn sticky(slot: &'a AtomicU64, announced: u64, way: u32) -> Self {
        debug_assert!((way as usize) < local::WAYS);
        let tagged = NonNull::from(slot).map_addr(|a| a | (way as usize + 1));
        Protection { tagged, announced, _slot: PhantomData }
    }

    /// The announcing slot.
    #[inline(always)]
    pub(super) fn slot(&self) -> &'a AtomicU64 {
        let slot = self.tagged.as_ptr().map_addr(|a| a & !WAY_TAG);
        // SAFETY: with the tag cleared, this is the address (and provenance) of the
        // `&'a AtomicU64` the protection was built from.
        unsafe { &*slot }
    }

    /// The way of a protection known to be sticky.
    #[inline(always)]
    fn sticky_way(&self) -> u32 {
        let tag = self.tagged.addr().get() & WAY_TAG;
        debug_assert_ne!(tag, 0, "not a sticky protection");
        tag.wrapping_sub(1) as u32
    }

    /// The sticky way announcing, `None` for a transient slot.
    #[inline(always)]
    pub(crate) fn way(&self) -> Option<u32> {
        match self.tagged.addr().get() & WAY_TAG {
            0 => None,
            tag => Some(tag as u32 - 1),
        }
    }

    /// Records that the slot now announces `epoch`.
    #[inline(always)]
    pub(super) fn set_announced(&mut self, epoch: u64) {
        self.announced = epoch;
    }

    /// The epoch announced (never 0: epochs start at 1).
    #[inline(always)]
    pub(crate) fn announced(&self) -> u64 {
        self.announced
    }
}

impl LightEpoch {
    /// Re-announces the current epoch in `p`'s slot and runs ready actions: see
    /// [`EpochGuard::refresh`].
    #[inline(always)]
    pub(crate) fn refresh_protection(&self, p: &mut Protection<'_>) {
        // Acquire: synchronizes with the bump that produced `e` (and, through the release
        // sequence of RMWs on the epoch counter, with every earlier bump), so whatever was
        // unlinked before those bumps is invisible to this thread's later loads; pairs with
        // the fetch_add in `LightEpoch::bump_with`.
        let e = self.current.load(Ordering::Acquire);
        if e != p.announced {
            // Release: everything this thread read at the older epoch happens before any
            // action that the scan now lets run; pairs with the Acquire slot loads in
            // `SlotTable::min_announced`. A plain store suffices in both modes: the slot
            // goes from one epoch to a larger one, so a scan that misses it still sees a
            // value that protects at least as much.
            p.slot().store(e, Ordering::Release);
            p.announced = e;
            if self.drain.has_pending() {
                self.drain_implicit();
            }
        }
    }

    /// Whether `announced` is the current epoch (Relaxed: a hint, exact when nothing
    /// moves).
    #[inline(always)]
    pub(crate) fn is_current(&self, announced: u64) -> bool {
        self.current.load(Ordering::Relaxed) == announced
    }

    /// Ends the protection `p` (taken by this thread, not released yet). `false` (and
    /// nothing changes) if EPVS guards nested in the region `p` protects still share it
    /// (see [`enter_region`](LightEpoch::enter_region)); a `LightEpoch` guard never shares.
    #[inline(always)]
    pub(crate) fn release_protection(&self, p: Protection<'_>) -> bool {
        let slot = p.slot();
        if p.way().is_none() {
            // Release: this thread's protected reads happen before any action a later
            // scan runs because it saw the slot free; pairs with the Acquire loads in
            // `SlotTable::min_announced`.
            slot.store(FREE, Ordering::Release);
            self.after_release();
            return true;
        }
        self.release_sticky(p)
    }

    /// The common case of [`release_sticky`](Self::release_sticky): `p` is its way's only
    /// use, which ends (the slot stays the thread's). `false` (and nothing changes)
    /// otherwise.
    #[inline(always)]
    pub(crate) fn try_release_sticky_fast(&self, p: Protection<'_>) -> bool {
        let way = p.sticky_way();
        if !local::release_if_last(way) {
            return false;
        }
        // Release: this thread's protected reads happen before any action a later scan
        // runs because it saw the slot idle; pairs with the Acquire loads in
        // `SlotTable::min_announced`.
        p.slot().store(IDLE, Ordering::Release);
        if self.drain.has_pending() {
            self.drain_implicit();
        }
        true
    }

    /// [`release_protection`](Self::release_protection) of a protection known to be in a
    /// sticky slot.
    #[inline(always)]
    pub(crate) fn release_sticky(&self, p: Protection<'_>) -> bool {
        self.try_release_sticky_fast(p) || self.release_sticky_slow(p)
    }

    /// [`release_sticky`](Self::release_sticky) when the protection is not its way's only use: refused while
    /// nested uses remain; an orphan's last use gives the slot back.
    #[cold]
    fn release_sticky_slow(&self, p: Protection<'_>) -> bool {
        match local::release_other(p.sticky_way()) {
            local::Released::Shared => false,
            local::Released::GiveBack(index) => {
                // Release: as in `try_release_sticky_fast`.
                p.slot().store(IDLE, Ordering::Release);
                self.table.release_sticky(index);
                self.after_release();
                true
            }
        }
    }
}

/// Epoch protection held by the current thread; dropping it releases the protection.
///
/// While a guard lives, no action queued by [`LightEpoch::bump_with`] after the guard's
/// epoch was announced can run, so memory reached through the protected structure stays
/// valid. The guard is `!Send`: protection belongs to the thread that announced it.
#[must_use = "protection ends as soon as the guard is dropped"]
pub struct EpochGuard<'a> {
    epoch: &'a LightEpoch,
    protection: Protection<'a>,
    /// `!Send` and `!Sync`: a guard must be released by the thread that holds it.
    _not_send: PhantomData<*mut ()>,
}

impl<'a> EpochGuard<'a> {
    #[inline(always)]
    pub(super) fn new(epoch: &'a LightEpoch, protection: Protection<'a>) -> Self {
        EpochGuard { epoch, protection, _not_send: PhantomData }
    }

    /// The epoch this guard has announced.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.protection.announced
    }

    /// The instance this guard protects against.
    #[inline]
    pub fn instance(&self) -> &'a LightEpoch {
        self.epoch
    }

    /// Re-announces the current epoch (FASTER's `Refresh`), letting actions queued for older
    /// epochs run, and runs those that are ready.
    ///
    /// Cheaper than dropping the guard and protecting again: when the epoch has not moved it
    /// is one load; otherwise one store and, if actions are queued, a drain. Memory read
    /// before the refresh must not be used after it.
    #[inline]
    pub fn refresh(&mut self) {
        self.epoch.refresh_protection(&mut self.protection);
    }
}

impl Drop for EpochGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        let released = self.epoch.release_protection(self.protection);
        debug_assert!(released, "a LightEpoch guard's protection is never shared");
    }
}

impl fmt::Debug for EpochGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EpochGuard")
            .field("epoch", &self.protection.announced)
            .field("sticky", &self.protection.way().is_some())
            .finish()
    }
}
