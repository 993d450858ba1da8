//! Per-thread bookkeeping of the version scheme: which instances this thread is inside
//! (for re-entrant `enter`), and which instances' machine callbacks run on this thread
//! (to turn would-be self-deadlocks into clear panics).
//!
//! Instances are identified by a process-wide unique id (never reused), so an entry left
//! behind by a leaked guard can never be mistaken for a region of a later instance.

use super::State;
use crate::primitive::thread_local;
use std::cell::RefCell;

#[derive(Default)]
struct Ctx {
    /// Instances this thread is inside: (id, number of live guards, state of the region).
    entered: Vec<(u64, usize, State)>,
    /// Instances whose `next_step` / `on_entering_state` runs on this thread (a stack).
    callbacks: Vec<u64>,
}

thread_local! {
    static CTX: RefCell<Ctx> = RefCell::new(Ctx::default());
}

/// What `enter` must do on this thread.
pub(super) enum Begin {
    /// Not inside the instance: enter normally.
    Fresh,
    /// Already inside: the nesting depth was incremented to `.1`; `.0` is the region's
    /// state.
    Nested(State, usize),
    /// Called from a callback of this instance's machine.
    InCallback,
}

#[inline]
fn with<R>(f: impl FnOnce(&mut Ctx) -> R) -> Option<R> {
    // `try_with`: a guard dropped during thread-local destruction must not panic.
    CTX.try_with(|c| f(&mut c.borrow_mut())).ok()
}

#[inline]
pub(super) fn begin_enter(id: u64) -> Begin {
    with(|c| {
        if !c.callbacks.is_empty() && c.callbacks.contains(&id) {
            return Begin::InCallback;
        }
        match c.entered.iter_mut().find(|e| e.0 == id) {
            Some(e) => {
                e.1 += 1;
                Begin::Nested(e.2, e.1)
            }
            None => Begin::Fresh,
        }
    })
    .unwrap_or(Begin::Fresh)
}

#[inline]
pub(super) fn push_entered(id: u64, state: State) {
    with(|c| c.entered.push((id, 1, state)));
}

/// Leaves the region level `level` of instance `id`: `false` (and nothing changes) if
/// `level` is not the innermost live level, i.e. guards are dropped out of order.
#[inline]
pub(super) fn leave(id: u64, level: usize) -> bool {
    with(|c| match c.entered.iter().rposition(|e| e.0 == id) {
        Some(i) if c.entered[i].1 == level => {
            c.entered[i].1 -= 1;
            if c.entered[i].1 == 0 {
                c.entered.swap_remove(i);
            }
            true
        }
        _ => false,
    })
    .unwrap_or(true)
}

/// Number of live guards of instance `id` on this thread.
#[inline]
pub(super) fn depth(id: u64) -> usize {
    with(|c| c.entered.iter().find(|e| e.0 == id).map_or(0, |e| e.1)).unwrap_or(0)
}

#[inline]
pub(super) fn set_state(id: u64, state: State) {
    with(|c| {
        if let Some(e) = c.entered.iter_mut().find(|e| e.0 == id) {
            e.2 = state;
        }
    });
}

pub(super) fn in_callback(id: u64) -> bool {
    with(|c| c.callbacks.contains(&id)).unwrap_or(false)
}

/// Marks this thread as running a machine callback of instance `id` until dropped.
pub(super) struct CallbackScope(u64);

impl CallbackScope {
    pub(super) fn new(id: u64) -> CallbackScope {
        with(|c| c.callbacks.push(id));
        CallbackScope(id)
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        let id = self.0;
        with(|c| {
            if let Some(i) = c.callbacks.iter().rposition(|&x| x == id) {
                c.callbacks.remove(i);
            }
        });
    }
}
