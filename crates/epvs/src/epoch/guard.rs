//! The RAII guard of an epoch-protected region.

use core::fmt;
use core::marker::PhantomData;

use super::table::FREE;
use super::LightEpoch;
use crate::primitive::Ordering;

/// Epoch protection held by the current thread; dropping it releases the protection.
///
/// While a guard lives, no action queued by [`LightEpoch::bump_with`] after the guard's
/// epoch was announced can run, so memory reached through the protected structure stays
/// valid. The guard is `!Send`: protection belongs to the thread that announced it.
#[must_use = "protection ends as soon as the guard is dropped"]
pub struct EpochGuard<'a> {
    epoch: &'a LightEpoch,
    slot: usize,
    announced: u64,
    /// `!Send` and `!Sync`: a guard must be released by the thread that holds it.
    _not_send: PhantomData<*mut ()>,
}

impl<'a> EpochGuard<'a> {
    #[inline]
    pub(super) fn new(epoch: &'a LightEpoch, slot: usize, announced: u64) -> Self {
        EpochGuard { epoch, slot, announced, _not_send: PhantomData }
    }

    /// The epoch this guard has announced.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.announced
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
    /// is one load; otherwise one store. Memory read before the refresh must not be used
    /// after it.
    #[inline]
    pub fn refresh(&mut self) {
        // Acquire: synchronizes with the bump that produced `e` (and, through the release
        // sequence of RMWs on the epoch counter, with every earlier bump), so whatever was
        // unlinked before those bumps is invisible to this thread's later loads; pairs with
        // the fetch_add in `LightEpoch::bump_with`.
        let e = self.epoch.current.load(Ordering::Acquire);
        if e != self.announced {
            // Release: everything this thread read at the older epoch happens before any
            // action that the scan now lets run; pairs with the Acquire slot loads in
            // `SlotTable::min_announced`. A plain store suffices: the slot goes from one
            // non-zero epoch to a larger one, so a scan that misses it still sees a value
            // that protects at least as much.
            self.epoch.table.slot(self.slot).store(e, Ordering::Release);
            self.announced = e;
        }
        if self.epoch.drain.has_pending() {
            self.epoch.drain_slow();
        }
    }
}

impl Drop for EpochGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: this thread's protected reads happen before any action a later scan
        // runs because it saw the slot free; pairs with the Acquire loads in
        // `SlotTable::min_announced`.
        self.epoch.table.slot(self.slot).store(FREE, Ordering::Release);
        self.epoch.after_release();
    }
}

impl fmt::Debug for EpochGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EpochGuard")
            .field("epoch", &self.announced)
            .field("slot", &self.slot)
            .finish()
    }
}
