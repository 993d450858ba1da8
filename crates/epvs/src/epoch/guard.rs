//! The RAII guard of an epoch-protected region, and the raw protection it wraps.

use core::fmt;
use core::marker::PhantomData;

use super::table::{FREE, IDLE};
use super::{local, LightEpoch};
use crate::primitive::{AtomicU64, Ordering};

/// `Protection::way` of a transient slot (given back at release).
pub(super) const TRANSIENT: u32 = u32::MAX;

/// The raw parts of one protection: which slot announces which epoch.
///
/// [`EpochGuard`] wraps one for users; EPVS guards hold one directly (released through
/// [`LightEpoch::release_protection`]) so that ending a region never moves a guard value
/// through memory. A `Protection` must be released exactly once, by the thread that
/// announced it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Protection<'a> {
    /// The announcing slot (borrowed from the instance's table: no index arithmetic or
    /// bounds check on the fast paths).
    slot: &'a AtomicU64,
    announced: u64,
    /// The thread's sticky-slot way (asymmetric mode), or [`TRANSIENT`].
    way: u32,
}

impl<'a> Protection<'a> {
    #[inline(always)]
    pub(super) fn new(slot: &'a AtomicU64, announced: u64, way: u32) -> Self {
        Protection { slot, announced, way }
    }

    /// The announcing slot.
    #[inline(always)]
    pub(super) fn slot(&self) -> &'a AtomicU64 {
        self.slot
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
            p.slot.store(e, Ordering::Release);
            p.announced = e;
            if self.drain.has_pending() {
                self.drain_slow();
            }
        }
    }

    /// Whether `announced` is the current epoch (Relaxed: a hint, exact when nothing
    /// moves).
    #[inline(always)]
    pub(crate) fn is_current(&self, announced: u64) -> bool {
        self.current.load(Ordering::Relaxed) == announced
    }

    /// Ends the protection `p` (taken by this thread, not released yet).
    #[inline(always)]
    pub(crate) fn release_protection(&self, p: Protection<'_>) {
        let slot = p.slot;
        if p.way == TRANSIENT {
            // Release: this thread's protected reads happen before any action a later
            // scan runs because it saw the slot free; pairs with the Acquire loads in
            // `SlotTable::min_announced`.
            slot.store(FREE, Ordering::Release);
            self.after_release();
        } else {
            // Release: as above, for a sticky slot that stays this thread's (IDLE).
            slot.store(IDLE, Ordering::Release);
            if let Err(index) = local::release(p.way) {
                self.give_back_sticky(index);
            } else if self.drain.has_pending() {
                // The slot stays this thread's: no waiter for a free slot can use it, so
                // only the drain is checked.
                self.drain_slow();
            }
        }
    }
}

impl LightEpoch {
    /// Gives back the sticky slot `index` of a thread whose cache was torn down (the
    /// guard protected in it outlived the thread's cache).
    #[cold]
    fn give_back_sticky(&self, index: usize) {
        self.table.release_sticky(index);
        self.after_release();
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
        self.epoch.release_protection(self.protection);
    }
}

impl fmt::Debug for EpochGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EpochGuard")
            .field("epoch", &self.protection.announced)
            .field("sticky", &(self.protection.way != TRANSIENT))
            .finish()
    }
}
