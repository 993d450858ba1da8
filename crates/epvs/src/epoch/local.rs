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
//! | id  | `uses`       | meaning                                                        |
//! |-----|--------------|----------------------------------------------------------------|
//! | `0` | -            | empty                                                          |
//! | `i` | `0`          | owns `slot` of instance `i`, not protected (`IDLE` in the slot) |
//! | `i` | `n > 0`      | protected in `slot`; `n` guards share that protection: one for |
//! |     |              | `LightEpoch` guards, the region's guards for an EPVS region    |
//! | `i` | `n + ORPHAN` | as above, and the thread's cache was torn down (thread exit):  |
//! |     |              | the last guard's drop gives the slot back instead of keeping it |
//!
//! Only EPVS shares a protection ([`claim`] and [`unnest`]: its nested guards belong to
//! the region of the outermost one, see `crate::version`); a nested `LightEpoch::protect`
//! takes a transient slot of its own.
//!
//! Instance ids are process-wide unique and never reused, so a way can never be mistaken
//! for a slot of a later instance.

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;
use std::sync::Arc;

use super::table::SlotTable;
use crate::primitive::{thread_hint, AtomicU64};

/// How many asymmetric instances a thread keeps a sticky slot in at once.
///
/// The cache is direct-mapped: instance `id` lives in way `id % WAYS`, so finding it is
/// one compare, whichever instance a thread enters next. A search over ways cost a
/// mispredicted branch per entry when a thread entered its instances in random order
/// (4 instances: 13.3 ns per enter and leave instead of 3.2), and four ways made a cliff
/// at the fifth instance (30 ns). Instance ids are handed out in sequence, so instances
/// created together occupy distinct ways; two live instances that collide share the way
/// (the one entered last keeps it) like a thread with more than `WAYS` instances.
pub(crate) const WAYS: usize = 16;
const _: () = assert!(WAYS.is_power_of_two(), "`release` masks way indices");

/// `Cache::uses`: set when the thread's cache was torn down (thread exit) while the way was
/// in use: the last guard gives the slot back instead of keeping it.
const ORPHAN: u32 = 1 << 31;

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
    /// Guards sharing the way's protection (0: idle), plus [`ORPHAN`]; meaningful while
    /// the way's id is not 0.
    uses: [Cell<u32>; WAYS],
}

impl Cache {
    fn clear(&self, way: usize) {
        self.ids[way].set(0);
        self.uses[way].set(0);
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
                if cache.uses[way].get() != 0 {
                    // A guard (in a thread-local destroyed later) is still protected in the
                    // slot; it borrows the instance, which keeps the table alive, and gives
                    // the slot back when it drops.
                    cache.uses[way].set(cache.uses[way].get() | ORPHAN);
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
            uses: [const { Cell::new(0) }; WAYS],
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
        uses: std::array::from_fn(|_| Cell::new(0)),
    };
    static OWNED: Owned = Owned { tables: RefCell::new(Default::default()) };
}

/// This thread's idle sticky slot of instance `id`, marked used: `(way, slot)`. The
/// pointer is into the instance's table: valid for as long as the caller's borrow of the
/// instance (ids are never reused, so a way with the caller's id is the caller's).
///
/// `None` if the thread has no slot of the instance cached, or if it is already protected
/// in it (a nested `protect`, which then claims a transient slot).
#[inline(always)]
pub(crate) fn acquire(id: u64) -> Option<(u32, NonNull<AtomicU64>)> {
    with_way(id, |cache, way| {
        if cache.uses[way].get() != 0 {
            return None;
        }
        cache.uses[way].set(1);
        Some((way as u32, cache.ptrs[way].get()))
    })
    .flatten()
}

/// The way instance `id` lives in, if this thread caches it (see [`WAYS`]).
#[inline(always)]
pub(crate) fn way_of(id: u64) -> usize {
    id as usize % WAYS
}

/// Runs `f` on this thread's way of instance `id`, if it has one.
#[inline(always)]
fn with_way<R>(id: u64, f: impl FnOnce(&Cache, usize) -> R) -> Option<R> {
    let way = way_of(id);
    CACHE.try_with(|cache| (cache.ids[way].get() == id).then(|| f(cache, way))).ok().flatten()
}

/// What [`claim`] found.
pub(crate) enum Claim {
    /// The idle sticky slot `(way, slot)`, now used once (see [`acquire`]).
    Idle(u32, NonNull<AtomicU64>),
    /// The thread is protected in its slot of the instance, way `.0`: one more guard
    /// now shares that protection, as use number `.1` (at least 2).
    Busy(u32, u32),
    /// No slot of the instance cached.
    Absent,
}

/// [`acquire`], or, if the thread is already protected in its slot of instance `id`, one
/// more use of that protection (EPVS nesting; undone by [`unnest`]).
#[inline(always)]
pub(crate) fn claim(id: u64) -> Claim {
    with_way(id, |cache, way| {
        let uses = cache.uses[way].get();
        if uses == 0 {
            cache.uses[way].set(1);
            Claim::Idle(way as u32, cache.ptrs[way].get())
        } else {
            // Also for an orphan (the thread is exiting, and a guard in a thread-local
            // enters again): nesting keeps the flag, and the last use still gives the slot
            // back.
            cache.uses[way].set(uses + 1);
            Claim::Busy(way as u32, (uses & !ORPHAN) + 1)
        }
    })
    .unwrap_or(Claim::Absent)
}

/// Claims a sticky slot of `table` (instance `id`) for this thread, evicting the idle
/// instance that held its way, and marks it busy: `(way, slot)`.
///
/// `None` (the caller claims a transient slot) if the thread is already protected in its
/// slot of the instance, if another instance is protected in the way, if half the table
/// is sticky already, or if the thread is exiting.
#[cold]
// The result is two words, returned in registers: a larger one would be returned through
// memory, and merging it with `acquire`'s would keep the protection in memory on the fast
// path too.
pub(crate) fn acquire_slow(id: u64, table: &Arc<SlotTable>) -> Option<(u32, NonNull<AtomicU64>)> {
    CACHE
        .try_with(|cache| {
            let way = way_of(id);
            if cache.ids[way].get() == id {
                return None; // busy: nested protection
            }
            if cache.ids[way].get() != 0 && cache.uses[way].get() != 0 {
                return None; // another instance is protected in the way: a transient slot
            }
            let slot = table.claim_sticky(thread_hint())?;
            let installed = OWNED.try_with(|owned| {
                let mut tables = owned.tables.borrow_mut();
                if let Some(evicted) = tables[way].replace(table.clone()) {
                    evicted.release_sticky(cache.slots[way].get() as usize);
                }
                cache.ids[way].set(id);
                cache.ptrs[way].set(NonNull::from(table.slot(slot)));
                cache.slots[way].set(slot as u32);
                cache.uses[way].set(1);
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

/// Ends the only use of way `way`, if that is what it has (the way is then idle, and the
/// caller stores `IDLE` in the slot); `false` (and nothing changes) otherwise, and
/// [`release_other`] handles the rest.
#[inline(always)]
pub(crate) fn release_if_last(way: u32) -> bool {
    // The mask only spares a bounds check: `way` came from `acquire` and is below `WAYS`.
    let way = way as usize % WAYS;
    CACHE
        .try_with(|cache| {
            let last = cache.uses[way].get() == 1;
            if last {
                cache.uses[way].set(0);
            }
            last
        })
        .unwrap_or(false)
}

/// What [`release_other`] found.
pub(crate) enum Released {
    /// Other uses remain (EPVS guards nested in the one releasing are alive): the
    /// protection stays, nothing changed.
    Shared,
    /// That was the last use and the thread's cache was torn down meanwhile: the way is
    /// gone, the caller gives back the slot, `.0` in the instance's table.
    GiveBack(usize),
}

/// Ends a use of way `way` that [`release_if_last`] refused: one with others still alive,
/// or an orphan's last.
#[cold]
pub(crate) fn release_other(way: u32) -> Released {
    let way = way as usize % WAYS;
    CACHE
        .try_with(|cache| {
            if cache.uses[way].get() == 1 | ORPHAN {
                cache.clear(way);
                Released::GiveBack(cache.slots[way].get() as usize)
            } else {
                Released::Shared
            }
        })
        // Unreachable for a `const` thread-local without a destructor.
        .unwrap_or(Released::Shared)
}

/// Ends use number `level` (at least 2, from [`claim`]) of way `way`; `false` (and nothing
/// changes) if it is not the last one taken, i.e. EPVS guards are dropped out of order.
#[inline]
pub(crate) fn unnest(way: u32, level: u32) -> bool {
    let way = way as usize % WAYS;
    CACHE
        .try_with(|cache| {
            let uses = cache.uses[way].get();
            let left = level >= 2 && uses & !ORPHAN == level;
            if left {
                cache.uses[way].set(uses - 1);
            }
            left
        })
        .unwrap_or(false)
}

/// Whether this thread holds a sticky slot of instance `id`.
#[inline]
pub(crate) fn holds(id: u64) -> bool {
    with_way(id, |_, _| ()).is_some()
}

/// How many uses this thread has of its sticky slot of instance `id` (0 if none).
pub(crate) fn uses(id: u64) -> usize {
    with_way(id, |cache, way| (cache.uses[way].get() & !ORPHAN) as usize).unwrap_or(0)
}

/// Gives back this thread's sticky slot of instance `id`, if it has one (called when the
/// instance drops, so the dropping thread does not keep its table alive; other threads'
/// caches let go of it when they evict it or exit).
pub(crate) fn forget(id: u64) {
    let _ = CACHE.try_with(|cache| {
        let way = way_of(id);
        if cache.ids[way].get() != id {
            return;
        }
        if cache.uses[way].get() != 0 {
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
