//! Per-thread bookkeeping of the version scheme: which instances this thread is inside
//! (for re-entrant `enter`), and which instances' machine callbacks run on this thread
//! (to turn would-be self-deadlocks into clear panics).
//!
//! Regions protected in the thread's sticky slot of the instance's epoch (asymmetric
//! mode, the default) are not recorded here at all: the slot's way counts the region's
//! guards (`epoch::region`). This bookkeeping holds the regions protected with transient
//! slots (fenced mode, or no sticky slot available), and the callbacks.
//!
//! Instances are identified by a process-wide unique id (never reused, never 0), so an
//! entry left behind by a leaked guard can never be mistaken for a region of a later
//! instance.
//!
//! # Fast path
//!
//! Almost every thread is inside at most one recorded region at a time and never runs
//! machine callbacks. That case lives in two `const` thread-locals without destructors
//! ([`FIRST`] and [`SLOW`]): `enter` reads three words and writes one (two when the thread
//! switches instances), `leave` reads and writes one, and neither touches the general
//! bookkeeping, a `RefCell<Vec>` used only while a thread is inside several recorded
//! regions at once or runs a callback. An id is recorded in exactly one of the two places.
//! Every `enter` first checks that both are empty ([`first_is_free`]): only then may it
//! take the sticky fast path, since the thread is then in no recorded region and runs no
//! callback.
//!
//! The region's state is not recorded: a nested `enter` reads it from the instance. While
//! a thread is inside a region that observed state `s`, the instance's state is `s` or `s`
//! with the intermediate flag: a step stores its new state only in an epoch action, after
//! every region announced before its bump has left (see [`super`]).

use std::cell::{Cell, RefCell};

/// The first instance this thread entered and is still inside, as separate cells: the
/// fast path reads and writes single words (a copied struct would be moved with wide loads
/// that stall on the narrow stores before them).
struct First {
    /// Instance id; meaningful only while `depth > 0` (kept after the region ends, so that
    /// re-entering the same instance does not store it again).
    id: Cell<u64>,
    /// Live guards of the region (0: the record is free).
    depth: Cell<usize>,
}

impl First {
    const fn new() -> First {
        First { id: Cell::new(0), depth: Cell::new(0) }
    }

    /// The depth of the region of instance `id`, if the record holds it.
    #[inline(always)]
    fn depth_of(&self, id: u64) -> Option<usize> {
        let depth = self.depth.get();
        (depth > 0 && self.id.get() == id).then_some(depth)
    }
}

/// The general bookkeeping: other instances this thread is inside, and callbacks.
#[derive(Default)]
struct Ctx {
    /// Instances this thread is inside besides [`FIRST`]'s: (id, live guards).
    entered: Vec<(u64, usize)>,
    /// Instances whose `next_step` / `on_entering_state` runs on this thread (a stack).
    callbacks: Vec<u64>,
}

#[cfg(not(loom))]
std::thread_local! {
    /// The instance whose callback runs on this thread, when it is the only one (0: none);
    /// further nested callbacks go to `CTX`.
    static CALLBACK: Cell<u64> = const { Cell::new(0) };
    static FIRST: First = const { First::new() };
    /// Number of entries in `CTX` and `CALLBACK` (entered instances + callback scopes); 0
    /// on the fast path.
    static SLOW: Cell<usize> = const { Cell::new(0) };
    static CTX: RefCell<Ctx> = RefCell::new(Ctx::default());
}

#[cfg(loom)]
loom::thread_local! {
    static CALLBACK: Cell<u64> = Cell::new(0);
    static FIRST: First = First::new();
    static SLOW: Cell<usize> = Cell::new(0);
    static CTX: RefCell<Ctx> = RefCell::new(Ctx::default());
}

/// What `enter` must do on this thread.
pub(super) enum Begin {
    /// Not inside the instance: enter normally.
    Fresh,
    /// Already inside: the nesting depth was incremented to `.0`.
    Nested(usize),
    /// Called from a callback of this instance's machine.
    InCallback,
}

/// Runs `f` on this thread's [`First`] record; `None` while thread-local storage is torn
/// down (a thread being torn down is inside nothing).
#[inline(always)]
fn with_first<R>(f: impl FnOnce(&First) -> R) -> Option<R> {
    FIRST.try_with(f).ok()
}

/// What `enter` must do as far as the fast record [`FIRST`] can tell: nest in the region
/// of `id` it holds (incrementing the depth), or enter fresh.
#[inline(always)]
fn begin_first(id: u64) -> Begin {
    with_first(|f| {
        let depth = f.depth.get();
        if depth == 0 || f.id.get() != id {
            return Begin::Fresh;
        }
        f.depth.set(depth + 1);
        Begin::Nested(depth + 1)
    })
    .unwrap_or(Begin::Fresh)
}

#[inline]
fn slow_count() -> usize {
    SLOW.try_with(Cell::get).unwrap_or(0)
}

#[inline]
fn add_slow(delta: isize) {
    let _ = SLOW.try_with(|c| c.set(c.get().wrapping_add_signed(delta)));
}

#[inline]
fn with<R>(f: impl FnOnce(&mut Ctx) -> R) -> Option<R> {
    CTX.try_with(|c| f(&mut c.borrow_mut())).ok()
}

/// Whether a fresh region may go straight into the fast record: it is free, and nothing
/// is on the slow path (so this thread is inside no instance and runs no callback).
#[inline(always)]
pub(super) fn first_is_free() -> bool {
    slow_count() == 0 && with_first(|f| f.depth.get() == 0).unwrap_or(false)
}

/// What `enter` must do on this thread, in general (the fast path is [`first_is_free`]).
#[inline]
pub(super) fn begin_enter(id: u64) -> Begin {
    if slow_count() != 0 {
        return begin_enter_slow(id);
    }
    begin_first(id)
}

/// Records a fresh region of instance `id` in the fast record, which [`first_is_free`]
/// found free (and nothing ran on this thread since).
#[inline(always)]
pub(super) fn set_first(id: u64) {
    let _ = with_first(|f| {
        debug_assert_eq!(f.depth.get(), 0);
        if f.id.get() != id {
            f.id.set(id);
        }
        f.depth.set(1);
    });
}

#[cold]
fn begin_enter_slow(id: u64) -> Begin {
    if callback_of(id) {
        return Begin::InCallback;
    }
    if let nested @ Begin::Nested(..) = begin_first(id) {
        return nested;
    }
    with(|c| match c.entered.iter_mut().find(|e| e.0 == id) {
        Some(e) => {
            e.1 += 1;
            Begin::Nested(e.1)
        }
        None => Begin::Fresh,
    })
    .unwrap_or(Begin::Fresh)
}

/// Records a fresh region of instance `id` (after [`begin_enter`] said `Fresh`); `true` if
/// it went into the fast record.
#[inline]
pub(super) fn push_entered(id: u64) -> bool {
    let claimed = with_first(|f| {
        if f.depth.get() != 0 {
            return false;
        }
        f.id.set(id);
        f.depth.set(1);
        true
    });
    if claimed == Some(false) {
        with(|c| c.entered.push((id, 1)));
        add_slow(1);
    }
    claimed == Some(true)
}

/// Leaves the region the fast record holds if its depth is 1. The caller's guard is that
/// region's outermost one (so its only live one at depth 1); `false` (and nothing changes)
/// if guards nested in it are alive or were leaked.
#[inline(always)]
pub(super) fn leave_first() -> bool {
    with_first(|f| {
        let held = f.depth.get() == 1;
        if held {
            f.depth.set(0);
        }
        held
    })
    .unwrap_or(false)
}

/// Leaves the region level `level` of instance `id`: `false` (and nothing changes) if
/// `level` is not the innermost live level, i.e. guards are dropped out of order. The
/// general case of [`leave_first`].
#[cold]
#[inline(never)]
pub(super) fn leave_general(id: u64, level: usize) -> bool {
    let left = with_first(|f| {
        let depth = f.depth_of(id)?;
        if depth != level {
            return Some(false);
        }
        f.depth.set(depth - 1);
        Some(true)
    });
    match left {
        Some(Some(left)) => left,
        // Torn down: nothing to keep consistent.
        None => true,
        Some(None) => leave_slow(id, level),
    }
}

#[cold]
fn leave_slow(id: u64, level: usize) -> bool {
    let left = with(|c| match c.entered.iter().rposition(|e| e.0 == id) {
        Some(i) if c.entered[i].1 == level => {
            c.entered[i].1 -= 1;
            let gone = c.entered[i].1 == 0;
            if gone {
                c.entered.swap_remove(i);
            }
            Some(gone)
        }
        _ => None,
    });
    match left {
        Some(Some(gone)) => {
            if gone {
                add_slow(-1);
            }
            true
        }
        Some(None) => false,
        // Thread-local storage is being torn down: nothing to keep consistent.
        None => true,
    }
}

/// Number of live guards of instance `id` on this thread.
#[inline]
pub(super) fn depth(id: u64) -> usize {
    if let Some(Some(depth)) = with_first(|f| f.depth_of(id)) {
        return depth;
    }
    if slow_count() == 0 {
        return 0;
    }
    with(|c| c.entered.iter().find(|e| e.0 == id).map_or(0, |e| e.1)).unwrap_or(0)
}

pub(super) fn in_callback(id: u64) -> bool {
    slow_count() != 0 && callback_of(id)
}

/// Whether a callback of instance `id` runs on this thread (in [`CALLBACK`] or `CTX`).
fn callback_of(id: u64) -> bool {
    CALLBACK.try_with(|c| c.get() == id).unwrap_or(false)
        || with(|c| c.callbacks.contains(&id)).unwrap_or(false)
}

/// Marks this thread as running a machine callback of instance `id` until dropped. The
/// first scope on a thread lives in [`CALLBACK`] (two cell writes, where the general
/// bookkeeping's `RefCell<Vec>` cost a version change about a tenth of its time); nested
/// ones in `CTX`.
pub(super) struct CallbackScope {
    id: u64,
    /// Recorded in [`CALLBACK`].
    first: bool,
}

impl CallbackScope {
    pub(super) fn new(id: u64) -> CallbackScope {
        let first = CALLBACK
            .try_with(|c| {
                let free = c.get() == 0;
                if free {
                    c.set(id);
                }
                free
            })
            .unwrap_or(false);
        if !first {
            with(|c| c.callbacks.push(id));
        }
        add_slow(1);
        CallbackScope { id, first }
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        let id = self.id;
        if self.first {
            let _ = CALLBACK.try_with(|c| c.set(0));
            add_slow(-1);
            return;
        }
        let removed = with(|c| match c.callbacks.iter().rposition(|&x| x == id) {
            Some(i) => {
                c.callbacks.remove(i);
                true
            }
            None => false,
        });
        if removed == Some(true) {
            add_slow(-1);
        }
    }
}
