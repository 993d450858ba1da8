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
use std::sync::Arc;

use super::table::SlotTable;
use crate::primitive::thread_hint;

/// How many asymmetric instances a thread keeps a sticky slot in at once.
pub(crate) const WAYS: usize = 4;

/// `Cache::flags`: the slot is owned and idle (`IDLE` in the slot).
const IDLE: u8 = 0;
/// `Cache::flags`: a guard of this thread is protected in the slot.
const BUSY: u8 = 1;
/// `Cache::flags`: as `BUSY`, and the thread's cache was torn down (thread exit): the
/// guard's drop gives the slot back instead of keeping it.
const ORPHAN: u8 = 2;

/// The ways, as parallel arrays of plain cells (the fast path reads two and writes one).
struct Cache {
    /// Instance id per way; 0 marks an empty way.
    ids: [Cell<u64>; WAYS],
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
        slots: std::array::from_fn(|_| Cell::new(0)),
        flags: std::array::from_fn(|_| Cell::new(IDLE)),
        victim: Cell::new(0),
    };
    static OWNED: Owned = Owned { tables: RefCell::new(Default::default()) };
}

/// This thread's idle sticky slot of instance `id`, marked busy: `(way, slot)`.
///
/// `None` if the thread has no slot of the instance cached, or if it is already protected
/// in it (a nested `protect`, which then claims a transient slot).
#[inline(always)]
pub(crate) fn acquire(id: u64) -> Option<(u32, usize)> {
    CACHE
        .try_with(|cache| {
            for way in 0..WAYS {
                if cache.ids[way].get() == id {
                    if cache.flags[way].get() != IDLE {
                        return None;
                    }
                    cache.flags[way].set(BUSY);
                    return Some((way as u32, cache.slots[way].get() as usize));
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
pub(crate) fn acquire_slow(id: u64, table: &Arc<SlotTable>) -> Option<(u32, usize)> {
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
                cache.slots[way].set(slot as u32);
                cache.flags[way].set(BUSY);
            });
            match installed {
                Ok(()) => Some((way as u32, slot)),
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

/// Ends the protection of way `way`. Returns `false` if the slot must be given back
/// (the thread's cache was torn down meanwhile).
#[inline(always)]
pub(crate) fn release(way: u32) -> bool {
    let way = way as usize;
    CACHE
        .try_with(|cache| {
            if cache.flags[way].get() == ORPHAN {
                cache.clear(way);
                return false;
            }
            cache.flags[way].set(IDLE);
            true
        })
        // Unreachable for a `const` thread-local without a destructor; giving the slot
        // back is the safe answer anyway.
        .unwrap_or(false)
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
