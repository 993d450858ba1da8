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
//! Two kinds of wait words differ in how the owner ends a use and learns that someone waits:
//!
//! - **Flagged words** (list and reader nodes): the waiter sets `PARKED` (or `WAKERS`) in
//!   the word with a CAS and parks on the word's address with a `validate` callback that
//!   re-reads the word under the parking-lot bucket lock; the owner ends its use with an RMW
//!   (which reads the word's latest value) and, if that value had `PARKED`, unparks every
//!   thread parked on the address (under the same bucket lock). Both RMWs hit one word, so
//!   either the waiter's CAS fails (it sees the use over) or the releaser sees `PARKED`;
//!   and `validate` runs under the bucket lock that `unpark_all` takes, so a waiter is
//!   either refused sleep or found by the wake-up. No lost wake-ups. A waiter that times out
//!   and was the last one parked on the word clears `PARKED` (under the bucket lock, so a
//!   thread parking at that moment fails its `validate` and sets the bit again), so a
//!   release after a timed-out wait wakes nobody.
//! - **Counted words** (stripe slots, `Ticket::counted`): the owner ends its use with a
//!   *plain store*, the cheapest release there is. An RMW release waits for the critical
//!   section's stores to drain from the store buffer; with W1's 1 KiB write inside the hold
//!   that RMW cost 8 ns of a 68 ns lock+unlock (`RANGELOCK_W1_MEMSET=1 w1_loop`, medians of
//!   9 interleaved runs: 68.5 ns with the swap, 60.2 with the store, 50.9 for a segment
//!   array, 37.9 with no lock). A store cannot read a flag a
//!   waiter set in the word, so waiters announce themselves in a counter beside the word
//!   (the slot's `waiting`), and the two sides meet in an *asymmetric* Dekker handshake:
//!
//!   | owner (`end_counted_use`)        | waiter (`wait_slow`, `Registration::register`) |
//!   |----------------------------------|------------------------------------------------|
//!   | store the word (Release)          | increment `waiting`                            |
//!   | light barrier (a compiler fence) | heavy barrier (`membarrier`: every running thread of the process executes a full barrier) |
//!   | load `waiting`; if not 0, unpark | `validate`: load the word under the bucket lock |
//!
//!   The heavy barrier orders the waiter's increment and load against the owner's store and
//!   load at whichever point of the owner's program the barrier lands: if before the owner's
//!   store, the owner's load after it sees the increment and unparks (under the bucket
//!   lock, after or before the waiter's `validate`, exactly as for flagged words); if after
//!   it, the store is visible to the waiter's `validate`, which refuses to sleep. The waiter
//!   keeps its count for its whole wait (spurious wake-ups of later holders' releases are
//!   harmless) and passes the heavy barrier again before every park: a holder that took the
//!   slot after its previous barrier is ordered by the next one. The heavy barrier costs a
//!   few microseconds (`examples/membarrier_cost`: 0.24-0.29 µs with the other core idle,
//!   2-9 µs with it running a thread of ours, on this 2-core VM), paid only by a thread
//!   about to sleep, which then pays a wake-up of about 40 µs anyway. `membarrier2` falls back to `mprotect` (Linux x86
//!   without `membarrier`) or to real fences on both sides where neither exists; under loom
//!   both barriers are SeqCst fences, which loom models exactly.
//!
//! Under loom the waiting loop is the same code (`wait_slow`, without the spin phase that
//! precedes it and without deadlines, which loom models never pass) over a model of the
//! parking lot (`lot`): one bucket, a loom mutex over the queue of parked threads and their
//! keys, and a condition variable. `validate` runs under that mutex, and `unpark_all`
//! dequeues every thread parked on the key under it and notifies; a thread sleeps until it
//! is dequeued. A wake-up the protocol loses leaves a thread blocked for good, which loom
//! reports as a deadlock.
//!
//! We chose `parking_lot_core` on purpose: it is the global, address-keyed parking lot
//! behind `parking_lot` (no per-word queue memory, no waiter list to reclaim), it supports
//! deadlines, and spurious wake-ups are harmless because the waiter re-checks its ticket in a
//! loop. Wait words are *type-stable*: nodes and stripe tables are freed only when their lock
//! drops, and a waiter borrows the lock, so reading a word needs no epoch guard.

use core::ptr::NonNull;
use std::time::Instant;

use crate::primitive::{AtomicU32, AtomicU64, Ordering};

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
    /// For a counted word, its waiter count (module docs); `None` for a flagged word.
    waiting: Option<NonNull<AtomicU32>>,
}

impl Ticket {
    /// A ticket for the use `value` (read from `word`, `OVER` clear) of the flagged wait
    /// word `word`.
    #[inline]
    pub(crate) fn new(word: &AtomicU64, value: u64) -> Self {
        debug_assert_eq!(value & OVER, 0, "a ticket names a use that is on");
        Ticket { word: NonNull::from(word), seen: value & !WAIT_FLAGS, waiting: None }
    }

    /// A ticket for the use `value` (read from `word`, `OVER` clear) of the counted wait word
    /// `word`, whose waiters count themselves in `waiting`.
    #[inline]
    pub(crate) fn counted(word: &AtomicU64, waiting: &AtomicU32, value: u64) -> Self {
        debug_assert_eq!(value & (OVER | WAIT_FLAGS), 0, "a counted word has no flags");
        Ticket { word: NonNull::from(word), seen: value, waiting: Some(NonNull::from(waiting)) }
    }

    /// The waiter count of a counted word; `None` for a flagged word.
    #[inline]
    pub(crate) fn waiting(&self) -> Option<&AtomicU32> {
        // SAFETY: as for `word`: the count lives beside the word, as long as the lock.
        self.waiting.map(|w| unsafe { w.as_ref() })
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
    // SAFETY: the key is the address of a wait word of a live lock; nobody else parks on it
    // with another meaning (see `wait_slow`).
    unsafe { lot::unpark_all(word as *const AtomicU64 as usize) };
}

/// Ends a use of the counted wait word `word` (module docs): stores `next` (a value with
/// `OVER` set) and, if a waiter counted itself in `waiting`, wakes the word's waiters.
#[inline]
pub(crate) fn end_counted_use(word: &AtomicU64, waiting: &AtomicU32, next: u64) {
    // Release: publishes the holder's critical section to waiters (pairs with the Acquire in
    // `Ticket::is_over`) and to later claimants of the word.
    word.store(next, Ordering::Release);
    counted_wake(word, waiting);
}

/// The owner's half of the counted handshake after its store (or RMW) that ended a use:
/// the light barrier, then wake the word's waiters if any counted itself.
#[inline]
pub(crate) fn counted_wake(word: &AtomicU64, waiting: &AtomicU32) {
    // Pairs with the waiter's `membarrier2::heavy()` in `wait_counted` and
    // `Registration::register`: a compiler fence where the heavy barrier is a real
    // process-wide barrier, a SeqCst fence where it is not (and under loom).
    membarrier2::light();
    // Relaxed: the barriers order it (module docs); a stale non-zero only costs a needless
    // wake-up.
    if waiting.load(Ordering::Relaxed) != 0 {
        wake_counted_slow(word);
    }
}

#[cold]
fn wake_counted_slow(word: &AtomicU64) {
    wake_slow(word);
    #[cfg(not(loom))]
    super::wakers::wake_all(word as *const AtomicU64 as usize);
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

/// The waiting loop after the spin phase (under loom, the whole wait), by the protocol of
/// the ticket's kind of word (module docs). The same code runs under loom, where `lot` is a
/// model of the parking lot.
#[cold]
fn wait_slow(ticket: Ticket, deadline: Option<Instant>) -> bool {
    match ticket.waiting() {
        Some(waiting) => wait_counted(ticket, waiting, deadline),
        None => wait_flagged(ticket, deadline),
    }
}

/// [`wait_slow`] on a counted word: count ourselves for the whole wait, pass the heavy
/// barrier before every park (module docs).
fn wait_counted(ticket: Ticket, waiting: &AtomicU32, deadline: Option<Instant>) -> bool {
    use parking_lot_core::ParkResult;

    let word = ticket.word();
    let key = word as *const AtomicU64 as usize;
    // Relaxed: the heavy barrier below orders it before our `validate` (module docs).
    waiting.fetch_add(1, Ordering::Relaxed);
    let over = loop {
        // Acquire: pairs with the Release store of `end_counted_use`.
        if ticket.is_over() {
            break true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break false;
        }
        // Orders our count before the `validate` load, against the owner's store and its
        // load of the count; pairs with `membarrier2::light()` in `counted_wake`.
        membarrier2::heavy();
        // SAFETY: `validate` only loads the word and the timeout callback does nothing:
        // neither panics nor calls into the parking lot; `key` is the address of a wait word
        // of a lock the caller borrows, so no other user of the global parking lot parks on
        // it with a different meaning.
        let result = unsafe {
            lot::park(
                key,
                // Acquire: pairs with the Release store of `end_counted_use`.
                || !ticket.is_over(),
                |_| {},
                deadline,
            )
        };
        if let ParkResult::TimedOut = result {
            break ticket.is_over();
        }
    };
    // Relaxed: a releaser that still reads our count wakes nobody it should not.
    waiting.fetch_sub(1, Ordering::Relaxed);
    over
}

/// [`wait_slow`] on a flagged word: announce `PARKED`, park with `validate`, re-check after
/// every wake-up.
fn wait_flagged(ticket: Ticket, deadline: Option<Instant>) -> bool {
    use parking_lot_core::ParkResult;

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
            lot::park(
                key,
                // Acquire: pairs with the Release of `end_use`.
                || word.load(Ordering::Acquire) == expected,
                |was_last| {
                    if was_last {
                        // Relaxed: under the bucket lock; a parker re-validates after us.
                        word.fetch_and(!PARKED, Ordering::Relaxed);
                    }
                },
                deadline,
            )
        };
        if let ParkResult::TimedOut = result {
            return ticket.is_over();
        }
    }
}

#[cfg(loom)]
fn wait_until(ticket: Ticket, deadline: Option<Instant>) -> bool {
    // No spin phase under loom: it only shortcuts the parking protocol, which is what the
    // models check.
    wait_slow(ticket, deadline)
}

/// The parking lot behind [`wait_slow`] and [`wake_slow`]: `parking_lot_core`'s global one.
#[cfg(not(loom))]
mod lot {
    use std::time::Instant;

    use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};

    /// `parking_lot_core::park` with the default token and no `before_sleep`: sleeps on
    /// `key` unless `validate` (run under the bucket lock) returns `false`, until
    /// [`unpark_all`] of `key` or `deadline`; `timed_out` runs under the bucket lock with
    /// whether the thread was the last one parked on `key`.
    ///
    /// # Safety
    ///
    /// As `parking_lot_core::park`: `validate` and `timed_out` must not panic or call into
    /// the parking lot, and `key` must not be used by other users of the global parking lot
    /// with another meaning.
    pub(super) unsafe fn park(
        key: usize,
        validate: impl FnOnce() -> bool,
        timed_out: impl FnOnce(bool),
        deadline: Option<Instant>,
    ) -> ParkResult {
        // SAFETY: the caller's contract is `parking_lot_core::park`'s.
        unsafe {
            parking_lot_core::park(
                key,
                validate,
                || {},
                |_, was_last| timed_out(was_last),
                DEFAULT_PARK_TOKEN,
                deadline,
            )
        }
    }

    /// Wakes every thread parked on `key`.
    ///
    /// # Safety
    ///
    /// As [`park`]: `key` means what it means to the parkers.
    pub(super) unsafe fn unpark_all(key: usize) {
        // SAFETY: the caller's contract is `parking_lot_core::unpark_all`'s.
        unsafe {
            parking_lot_core::unpark_all(key, DEFAULT_UNPARK_TOKEN);
        }
    }
}

/// Under loom, a model of `parking_lot_core`'s parking lot: one bucket (a loom mutex over
/// the queue of parked threads and their keys) and a condition variable.
/// [`park`](lot::park) validates, enqueues and sleeps under the bucket lock;
/// [`unpark_all`](lot::unpark_all) dequeues every thread parked on a key under the same
/// lock and notifies. A thread sleeps until it has been dequeued, so a model whose waiter is
/// never unparked ends with every thread blocked, which loom reports as a deadlock. No
/// deadlines (loom models never pass them).
#[cfg(loom)]
mod lot {
    use std::time::Instant;

    use loom::sync::{Condvar, Mutex};
    use parking_lot_core::{ParkResult, DEFAULT_UNPARK_TOKEN};

    use crate::primitive::lock;

    /// The parked threads: `(key, ticket)`, tickets numbered from `next`.
    struct Bucket {
        queue: Vec<(usize, u64)>,
        next: u64,
    }

    /// The one bucket and its condition variable.
    struct Lot {
        bucket: Mutex<Bucket>,
        parked: Condvar,
    }

    loom::lazy_static! {
        /// Per model execution, like every loom static.
        static ref LOT: Lot = Lot {
            bucket: Mutex::new(Bucket { queue: Vec::new(), next: 0 }),
            parked: Condvar::new(),
        };
    }

    /// See the non-loom `park`; `deadline` must be `None` and `timed_out` never runs.
    ///
    /// # Safety
    ///
    /// None under loom; `unsafe` to keep the signature of the non-loom `park`.
    pub(super) unsafe fn park(
        key: usize,
        validate: impl FnOnce() -> bool,
        timed_out: impl FnOnce(bool),
        deadline: Option<Instant>,
    ) -> ParkResult {
        assert!(deadline.is_none(), "loom models never pass deadlines");
        let _ = timed_out;
        let mut bucket = lock(&LOT.bucket);
        if !validate() {
            return ParkResult::Invalid;
        }
        let me = bucket.next;
        bucket.next += 1;
        bucket.queue.push((key, me));
        while bucket.queue.iter().any(|&(_, t)| t == me) {
            bucket = LOT.parked.wait(bucket).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        ParkResult::Unparked(DEFAULT_UNPARK_TOKEN)
    }

    /// See the non-loom `unpark_all`.
    ///
    /// # Safety
    ///
    /// None under loom; `unsafe` to keep the signature of the non-loom `unpark_all`.
    pub(super) unsafe fn unpark_all(key: usize) {
        let mut bucket = lock(&LOT.bucket);
        let parked = bucket.queue.len();
        bucket.queue.retain(|&(k, _)| k != key);
        if bucket.queue.len() != parked {
            LOT.parked.notify_all();
        }
    }
}
