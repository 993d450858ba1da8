//! Per-thread sticky slots of asymmetric instances (see "Asymmetric mode" in the module
//! docs of [`super`]).
//!
//! A thread keeps, for up to [`WAYS`] asymmetric instances, one slot of each instance's
//! table that it alone announces in. The *ways* live in `const` thread-locals without
//! destructors, so the fast path is a few plain loads and stores of thread-local memory. An
//! `Arc` of each cached table is owned by a second thread-local whose destructor gives the
//! slots back when the thread exits; the `Arc` keeps a table alive past its instance, so a
//! thread never writes to freed memory when it evicts or exits after the instance is gone.
//!
//! # Way states
//!
//! | id  | flag     | meaning                                                            |
//! |-----|----------|--------------------------------------------------------------------|
//! | `0` | -        | empty                                                              |
//! | `i` | `IDLE`   | owns `slot` of instance `i`, not protected (`IDLE` in the slot)    |
//! | `i` | `BUSY`   | a guard of this thread is protected in `slot`                      |
//! | `i` | `ORPHAN` | as `BUSY`, and the thread's cache was torn down (thread exit): the |
//! |     |          | guard's drop gives the slot back instead of keeping it             |
//!
//! Instance ids are process-wide unique and never reused, so a way can never be mistaken
//! for a slot of a later instance.

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;
use std::sync::Arc;

use super::table::SlotTable;
use crate::primitive::{thread_hint, AtomicU64};

/// How many asymmetric instances a thread keeps a sticky slot in at once.
pub(crate) const WAYS: usize = 4;
const _: () = assert!(WAYS.is_power_of_two(), "`release` masks way indices");

/// `Cache::flags`: the slot is owned and idle (`IDLE` in the slot).
const IDLE: u8 = 0;
/// `Cache::flags`: a guard of this thread is protected in the slot.
const BUSY: u8 = 1;
/// `Cache::flags`: as `BUSY`, and the thread's cache was torn down (thread exit): the
/// guard's drop gives the slot back instead of keeping it.
const ORPHAN: u8 = 2;

/// The ways, as parallel arrays of plain cells (`acquire` reads three and writes one,
/// `release` reads and writes one).
struct Cache {
    /// Instance id per way; 0 marks an empty way.
    ids: [Cell<u64>; WAYS],
    /// The way's sticky slot, in its instance's table (kept alive by [`OWNED`] while the
    /// way's id is set, and by the instance itself for any caller that has the instance).
    ptrs: [Cell<NonNull<AtomicU64>>; WAYS],
    /// Index of the way's sticky slot in its instance's table.
    slots: [Cell<u32>; WAYS],
    /// `IDLE`, `BUSY` or `ORPHAN`; meaningful while the way's id is not 0.
    flags: [Cell<u8>; WAYS],
    /// Next way to evict when all are taken.
    victim: Cell<usize>,
}

impl Cache {
    fn clear(&self, way: usize) {
        self.ids[way].set(0);
        self.flags[way].set(IDLE);
    }
}

/// The tables the ways point into; gives the slots back when the thread exits.
struct Owned {
    tables: RefCell<[Option<Arc<SlotTable>>; WAYS]>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        let tables = self.tables.get_mut();
        let _ = CACHE.try_with(|cache| {
            for (way, table) in tables.iter_mut().enumerate() {
                let Some(table) = table.take() else { continue };
                if cache.flags[way].get() == BUSY {
                    // A guard (in a thread-local destroyed later) is still protected in the
                    // slot; it borrows the instance, which keeps the table alive, and gives
                    // the slot back when it drops.
                    cache.flags[way].set(ORPHAN);
                } else {
                    table.release_sticky(cache.slots[way].get() as usize);
                    cache.clear(way);
                }
            }
        });
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static CACHE: Cache = const {
        Cache {
            ids: [const { Cell::new(0) }; WAYS],
            ptrs: [const { Cell::new(NonNull::dangling()) }; WAYS],
            slots: [const { Cell::new(0) }; WAYS],
            flags: [const { Cell::new(IDLE) }; WAYS],
            victim: Cell::new(0),
        }
    };
    static OWNED: Owned = const { Owned { tables: RefCell::new([const { None }; WAYS]) } };
}

#[cfg(loom)]
loom::thread_local! {
    static CACHE: Cache = Cache {
        ids: std::array::from_fn(|_| Cell::new(0)),
        ptrs: std::array::from_fn(|_| Cell::new(NonNull::dangling())),
        slots: std::array::from_fn(|_| Cell::new(0)),
        flags: std::array::from_fn(|_| Cell::new(IDLE)),
        victim: Cell::new(0),
    };
    static OWNED: Owned = Owned { tables: RefCell::new(Default::default()) };
}

/// This thread's idle sticky slot of instance `id`, marked busy: `(way, slot)`. The
/// pointer is into the instance's table: valid for as long as the caller's borrow of the
/// instance (ids are never reused, so a way with the caller's id is the caller's).
///
/// `None` if the thread has no slot of the instance cached, or if it is already protected
/// in it (a nested `protect`, which then claims a transient slot).
#[inline(always)]
pub(crate) fn acquire(id: u64) -> Option<(u32, NonNull<AtomicU64>)> {
    CACHE
        .try_with(|cache| {
            for way in 0..WAYS {
                if cache.ids[way].get() == id {
                    if cache.flags[way].get() != IDLE {
                        return None;
                    }
                    cache.flags[way].set(BUSY);
                    return Some((way as u32, cache.ptrs[way].get()));
                }
            }
            None
        })
        .ok()
        .flatten()
}

/// Claims a sticky slot of `table` (instance `id`) for this thread, evicting an idle way
/// if all are taken, and marks it busy: `(way, slot)`.
///
/// `None` (the caller claims a transient slot) if the thread is already protected in its
/// slot of the instance, if every way is busy, if half the table is sticky already, or if
/// the thread is exiting.
#[cold]
// The result is two words, returned in registers: a larger one would be returned through
// memory, and merging it with `acquire`'s would keep the protection in memory on the fast
// path too.
pub(crate) fn acquire_slow(id: u64, table: &Arc<SlotTable>) -> Option<(u32, NonNull<AtomicU64>)> {
    CACHE
        .try_with(|cache| {
            if cache.ids.iter().any(|w| w.get() == id) {
                return None; // busy: nested protection
            }
            let way = match cache.ids.iter().position(|w| w.get() == 0) {
                Some(way) => way,
                None => {
                    let start = cache.victim.get();
                    let way = (0..WAYS)
                        .map(|k| (start + k) % WAYS)
                        .find(|&w| cache.flags[w].get() == IDLE)?;
                    cache.victim.set((way + 1) % WAYS);
                    way
                }
            };
            let slot = table.claim_sticky(thread_hint())?;
            let installed = OWNED.try_with(|owned| {
                let mut tables = owned.tables.borrow_mut();
                if let Some(evicted) = tables[way].replace(table.clone()) {
                    evicted.release_sticky(cache.slots[way].get() as usize);
                }
                cache.ids[way].set(id);
                cache.ptrs[way].set(NonNull::from(table.slot(slot)));
                cache.slots[way].set(slot as u32);
                cache.flags[way].set(BUSY);
            });
            match installed {
                Ok(()) => Some((way as u32, NonNull::from(table.slot(slot)))),
                Err(_) => {
                    // The thread is exiting: its cache is gone, keep nothing.
                    table.release_sticky(slot);
                    None
                }
            }
        })
        .ok()
        .flatten()
}

/// Ends the protection of way `way`. `Err(index)` if the slot, `index` in the instance's
/// table, must be given back (the thread's cache was torn down meanwhile).
#[inline(always)]
pub(crate) fn release(way: u32) -> Result<(), usize> {
    // The mask only spares a bounds check: `way` came from `acquire` and is below `WAYS`.
    let way = way as usize % WAYS;
    CACHE
        .try_with(|cache| {
            if cache.flags[way].get() == ORPHAN {
                cache.clear(way);
                return Err(cache.slots[way].get() as usize);
            }
            cache.flags[way].set(IDLE);
            Ok(())
        })
        // Unreachable for a `const` thread-local without a destructor.
        .unwrap_or(Ok(()))
}

/// Gives back this thread's sticky slot of instance `id`, if it has one (called when the
/// instance drops, so the dropping thread does not keep its table alive; other threads'
/// caches let go of it when they evict it or exit).
pub(crate) fn forget(id: u64) {
    let _ = CACHE.try_with(|cache| {
        let Some(way) = cache.ids.iter().position(|w| w.get() == id) else { return };
        if cache.flags[way].get() != IDLE {
            return; // cannot happen: guards borrow the instance
        }
        let _ = OWNED.try_with(|owned| {
            if let Some(table) = owned.tables.borrow_mut()[way].take() {
                table.release_sticky(cache.slots[way].get() as usize);
            }
        });
        cache.clear(way);
    });
}
