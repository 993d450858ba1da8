//! The visible-readers table and the (thread, lock) hash into it.

use std::fmt;
#[cfg(not(loom))]
use std::sync::{Arc, OnceLock};

use crate::primitive::{AtomicUsize, Ordering};

/// Slots in the process-wide visible-readers table (the paper's 4096).
pub const DEFAULT_TABLE_SLOTS: usize = 4096;

/// The visible-readers table: slots readers publish a lock's identity into.
///
/// One table is shared by many locks; [`Bravo::new`](crate::Bravo::new) uses a
/// process-wide table of [`DEFAULT_TABLE_SLOTS`] slots,
/// [`Bravo::with_table`](crate::Bravo::with_table) a table of your choice (used by the
/// table-size benchmarks).
pub struct VisibleReaders {
    /// Slot states:
    ///
    /// | value | meaning |
    /// |---|---|
    /// | `0` | empty |
    /// | `a != 0` | a fast-path reader holds (or is trying to hold) the lock at address `a` |
    pub(crate) slots: Box<[AtomicUsize]>,
    /// `slots.len() - 1`; the length is a power of two.
    mask: usize,
}

impl VisibleReaders {
    /// A table with `slots` slots, rounded up to a power of two (at least 1).
    pub fn new(slots: usize) -> Self {
        let n = slots.max(1).next_power_of_two();
        let slots: Box<[AtomicUsize]> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        VisibleReaders { mask: n - 1, slots }
    }

    /// The process-wide table every [`Bravo::new`](crate::Bravo::new) lock shares.
    #[cfg(not(loom))]
    pub fn global() -> Arc<VisibleReaders> {
        static GLOBAL: OnceLock<Arc<VisibleReaders>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(VisibleReaders::new(DEFAULT_TABLE_SLOTS))).clone()
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Always false: a table has at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Slots currently holding a reader (a racy snapshot, for tests and diagnostics).
    pub fn occupied(&self) -> usize {
        self.slots.iter().filter(|s| s.load(Ordering::Relaxed) != 0).count()
    }

    /// The slot index of (this thread, `lock_id`).
    #[inline]
    pub(crate) fn index(&self, lock_id: usize) -> usize {
        (mix64((thread_id() as u64) ^ (lock_id as u64).rotate_left(29)) as usize) & self.mask
    }
}

impl fmt::Debug for VisibleReaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VisibleReaders").field("slots", &self.len()).finish_non_exhaustive()
    }
}

/// A per-thread identity: the address of a thread-local (unique among live threads).
///
/// Under loom every thread is 0: addresses differ between the model's executions, and loom
/// needs every execution to touch the same slots (the models use one-slot tables).
#[cfg(not(loom))]
#[inline]
fn thread_id() -> usize {
    std::thread_local! {
        static ANCHOR: u8 = const { 0 };
    }
    ANCHOR.with(|a| a as *const u8 as usize)
}

#[cfg(loom)]
fn thread_id() -> usize {
    0
}

/// The SplitMix64 finalizer: spreads (thread, lock) pairs over the table.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
