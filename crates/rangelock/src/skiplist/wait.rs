//! Waiting for a conflicting node: a brief spin, then park on the node until its holder
//! releases it (or the deadline passes).
//!
//! The parking protocol is parking_lot's: the waiter sets `PARKED` in the node's wait word
//! with a CAS and parks on the node's address with a `validate` callback that re-reads the
//! word under the parking-lot bucket lock; the releaser sets `RELEASED` with an RMW and, if
//! it saw `PARKED`, unparks every thread parked on the address (under the same bucket lock).
//! Both RMWs hit one word, so either the waiter's CAS fails (it sees `RELEASED`) or the
//! releaser sees `PARKED`; and `validate` runs under the bucket lock that `unpark_all`
//! takes, so a waiter is either refused sleep or found by the wake-up. No lost wake-ups.
//!
//! We chose `parking_lot_core` on purpose: it is the global, address-keyed parking lot
//! behind `parking_lot` (no per-node queue memory, no waiter list to reclaim), it supports
//! deadlines, and spurious wake-ups (address reuse by a recycled node) are harmless because
//! the waiter re-checks its [`Ticket`] in a loop.

use std::time::Instant;

use super::node::{Node, Ticket};

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// Never wait (`try_lock`).
    Never,
    /// Wait until the deadline, or forever with `None`.
    Until(Option<Instant>),
}

/// Spins before parking: a short critical section is usually over by then.
#[cfg(not(loom))]
const SPINS: u32 = 64;

/// Waits until the use of the node named by `ticket` is over. Returns `false` if `wait`
/// forbids waiting or its deadline passed first.
///
/// Holds no epoch guard: nodes are type-stable (see `node`), so reading `state` is sound
/// even if the node has been retired and reused meanwhile; a reuse changes the generation.
pub(crate) fn wait_for(ticket: Ticket, wait: Wait) -> bool {
    // SAFETY: nodes are type-stable for the lifetime of their lock (module docs of `node`),
    // and the caller borrows the lock, so the pointer is valid.
    let node = unsafe { ticket.node.as_ref() };
    match wait {
        Wait::Never => node.is_over(ticket.generation),
        Wait::Until(deadline) => wait_until(node, ticket.generation, deadline),
    }
}

#[cfg(not(loom))]
fn wait_until(node: &Node, generation: u64, deadline: Option<Instant>) -> bool {
    for _ in 0..SPINS {
        if node.is_over(generation) {
            return true;
        }
        core::hint::spin_loop();
    }
    wait_slow(node, generation, deadline)
}

#[cfg(not(loom))]
#[cold]
fn wait_slow(node: &Node, generation: u64, deadline: Option<Instant>) -> bool {
    use super::node::PARKED;
    use crate::primitive::Ordering;
    use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN};

    let key = node as *const Node as usize;
    loop {
        // Acquire: pairs with the AcqRel of `Node::release` (see `Node::is_over`).
        let s = node.state().load(Ordering::Acquire);
        if Node::state_is_over(s, generation) {
            return true;
        }
        if s & PARKED == 0 {
            // Acquire on failure/success: we re-read the word; the CAS only announces us.
            if node
                .state()
                .compare_exchange_weak(s, s | PARKED, Ordering::Acquire, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
        }
        let expected = s | PARKED;
        // SAFETY: `validate` and `timed_out` neither panic nor call into the parking lot;
        // `key` is the address of a node of a lock the caller borrows, so no other user of
        // the global parking lot parks on it with a different meaning.
        let result = unsafe {
            parking_lot_core::park(
                key,
                // Acquire: pairs with the AcqRel of `Node::release`.
                || node.state().load(Ordering::Acquire) == expected,
                || {},
                |_, _| {},
                DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        if let ParkResult::TimedOut = result {
            return node.is_over(generation);
        }
    }
}

#[cfg(loom)]
fn wait_until(node: &Node, generation: u64, _deadline: Option<Instant>) -> bool {
    // Under loom there is no parking lot: yield until the holder releases. Loom models
    // never pass deadlines.
    while !node.is_over(generation) {
        loom::thread::yield_now();
    }
    true
}

/// Wakes every thread parked on `node` (call after `Node::release` returned `true`).
#[inline]
pub(crate) fn wake_all(node: &Node) {
    #[cfg(not(loom))]
    {
        let key = node as *const Node as usize;
        // SAFETY: the key is the address of a live node of this lock; see `wait_slow`.
        unsafe {
            parking_lot_core::unpark_all(key, parking_lot_core::DEFAULT_UNPARK_TOKEN);
        }
    }
    #[cfg(loom)]
    let _ = node;
}
