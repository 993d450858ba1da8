//! Wait words and waiting: the one protocol by which a conflicting party waits for a holder,
//! whether the holder is a node (list writer or reader) or a stripe slot.
//!
//! A *wait word* is an `AtomicU64` whose low bits are flags and whose other bits name one
//! *use* (a node's generation; a stripe slot's holder encoding):
//!
//! | bits  | meaning                                                               |
//! |-------|-----------------------------------------------------------------------|
//! | 0     | [`OVER`]: no use is on (node released or retracted; slot free)        |
//! | 1     | [`PARKED`]: a thread is parked (or about to park) on the word         |
//! | 2     | [`WAKERS`]: an async waiter registered a waker for the word (`wakers`) |
//! | 3..64 | the use: whatever tells this use from the next one                    |
//!
//! A waiter takes a [`Ticket`]: the word and the value it saw, flags masked off. The use it
//! waits for is over as soon as the word, flags masked off, differs from that value (the
//! `OVER` bit set, or another use begun). A later use that encodes exactly the same value
//! (a stripe slot re-taken for the same range) looks like the same use; that only makes the
//! waiter wait for a holder that really conflicts with it right now, then look again.
//!
//! The parking protocol is parking_lot's: the waiter sets `PARKED` with a CAS and parks on
//! the word's address with a `validate` callback that re-reads the word under the
//! parking-lot bucket lock; the holder ends its use with an RMW (which reads the word's
//! latest value) and, if that value had `PARKED`, unparks every thread parked on the address
//! (under the same bucket lock). Both RMWs hit one word, so either the waiter's CAS fails
//! (it sees the use over) or the releaser sees `PARKED`; and `validate` runs under the
//! bucket lock that `unpark_all` takes, so a waiter is either refused sleep or found by the
//! wake-up. No lost wake-ups. A waiter that times out and was the last one parked on the
//! word clears `PARKED` (under the bucket lock, so a thread parking at that moment fails its
//! `validate` and sets the bit again), so a release after a timed-out wait wakes nobody.
//!
//! We chose `parking_lot_core` on purpose: it is the global, address-keyed parking lot
//! behind `parking_lot` (no per-word queue memory, no waiter list to reclaim), it supports
//! deadlines, and spurious wake-ups are harmless because the waiter re-checks its ticket in a
//! loop. Wait words are *type-stable*: nodes and stripe tables are freed only when their lock
//! drops, and a waiter borrows the lock, so reading a word needs no epoch guard.

use core::ptr::NonNull;
use std::time::Instant;

use crate::primitive::{AtomicU64, Ordering};

/// Wait-word flag: no use is on.
pub(crate) const OVER: u64 = 1;
/// Wait-word flag: a waiter is parked (or about to park) on the word; its releaser unparks.
pub(crate) const PARKED: u64 = 2;
/// Wait-word flag: a future registered a waker for the word; its releaser wakes it
/// (see `wakers`).
pub(crate) const WAKERS: u64 = 4;
/// The flags a ticket ignores (set by waiters, not by the use's owner).
const WAIT_FLAGS: u64 = PARKED | WAKERS;
/// The first bit of the use's encoding.
pub(crate) const USE_SHIFT: u32 = 3;

/// A wait word and the use a waiter saw on it: "wait until this use is over".
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket {
    word: NonNull<AtomicU64>,
    seen: u64,
}

impl Ticket {
    /// A ticket for the use `value` (read from `word`, `OVER` clear) of `word`.
    #[inline]
    pub(crate) fn new(word: &AtomicU64, value: u64) -> Self {
        debug_assert_eq!(value & OVER, 0, "a ticket names a use that is on");
        Ticket { word: NonNull::from(word), seen: value & !WAIT_FLAGS }
    }

    /// The wait word.
    #[inline]
    pub(crate) fn word(&self) -> &AtomicU64 {
        // SAFETY: wait words are type-stable for the lifetime of their lock (module docs),
        // and whoever holds a ticket borrows that lock.
        unsafe { self.word.as_ref() }
    }

    /// Whether word value `s` says the use this ticket names is over.
    #[inline]
    pub(crate) fn over_in(&self, s: u64) -> bool {
        s & !WAIT_FLAGS != self.seen
    }

    /// Whether the use this ticket names is over.
    #[inline]
    pub(crate) fn is_over(&self) -> bool {
        // Acquire: a waiter that sees the use over also sees the holder's critical section;
        // pairs with the Release RMW that ended the use (`end_use`).
        self.over_in(self.word().load(Ordering::Acquire))
    }
}

/// Ends a use: the owner's RMW stores `next` (a value with `OVER` set, or the next use of a
/// node) and returns the old value, whose `PARKED` bit says whether to wake.
///
/// Call [`wake`] with the returned value afterwards.
#[inline]
pub(crate) fn end_use(word: &AtomicU64, next: u64) -> u64 {
    // Release: publishes the holder's critical section to waiters (pairs with the Acquire in
    // `Ticket::is_over`) and to later claimants of the word. The RMW totally orders this with
    // a waiter's PARKED CAS, so a waiter either sees the use over or we see its PARKED bit.
    word.swap(next, Ordering::Release)
}

/// Wakes the waiters of `word` if `old` (its value before [`end_use`]) says some are parked
/// or registered.
#[inline]
pub(crate) fn wake(word: &AtomicU64, old: u64) {
    if old & PARKED != 0 {
        wake_slow(word);
    }
    #[cfg(not(loom))]
    if old & WAKERS != 0 {
        super::wakers::wake_all(word as *const AtomicU64 as usize);
    }
}

#[cold]
fn wake_slow(word: &AtomicU64) {
    #[cfg(not(loom))]
    // SAFETY: the key is the address of a wait word of a live lock; nobody else parks on it
    // with another meaning (see `wait_slow`).
    unsafe {
        parking_lot_core::unpark_all(
            word as *const AtomicU64 as usize,
            parking_lot_core::DEFAULT_UNPARK_TOKEN,
        );
    }
    #[cfg(loom)]
    let _ = word;
}

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

/// Waits until the use `ticket` names is over. Returns `false` if `wait` forbids waiting or
/// its deadline passed first.
///
/// Holds no epoch guard: wait words are type-stable (module docs).
pub(crate) fn wait_for(ticket: Ticket, wait: Wait) -> bool {
    match wait {
        Wait::Never => ticket.is_over(),
        Wait::Until(deadline) => wait_until(ticket, deadline),
    }
}

#[cfg(not(loom))]
fn wait_until(ticket: Ticket, deadline: Option<Instant>) -> bool {
    for _ in 0..SPINS {
        if ticket.is_over() {
            return true;
        }
        core::hint::spin_loop();
    }
    wait_slow(ticket, deadline)
}

#[cfg(not(loom))]
#[cold]
fn wait_slow(ticket: Ticket, deadline: Option<Instant>) -> bool {
    use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN};

    let word = ticket.word();
    let key = word as *const AtomicU64 as usize;
    loop {
        // Acquire: pairs with the Release of `end_use`.
        let s = word.load(Ordering::Acquire);
        if ticket.over_in(s) {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        // Acquire on failure/success: we re-read the word; the CAS only announces us.
        if s & PARKED == 0
            && word
                .compare_exchange_weak(s, s | PARKED, Ordering::Acquire, Ordering::Acquire)
                .is_err()
        {
            continue;
        }
        let expected = s | PARKED;
        // SAFETY: `validate` and `timed_out` neither panic nor call into the parking lot;
        // `key` is the address of a wait word of a lock the caller borrows, so no other
        // user of the global parking lot parks on it with a different meaning.
        let result = unsafe {
            parking_lot_core::park(
                key,
                // Acquire: pairs with the Release of `end_use`.
                || word.load(Ordering::Acquire) == expected,
                || {},
                |_, was_last| {
                    if was_last {
                        // Relaxed: under the bucket lock; a parker re-validates after us.
                        word.fetch_and(!PARKED, Ordering::Relaxed);
                    }
                },
                DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        if let ParkResult::TimedOut = result {
            return ticket.is_over();
        }
    }
}

#[cfg(loom)]
fn wait_until(ticket: Ticket, _deadline: Option<Instant>) -> bool {
    // Under loom there is no parking lot: yield until the holder releases. Loom models
    // never pass deadlines.
    while !ticket.is_over() {
        loom::thread::yield_now();
    }
    true
}
