//! Async waiters: the [`Waker`]s of futures waiting on a wait word, and a timer for their
//! deadlines.
//!
//! A future that must wait registers its waker under the wait word's address in a global
//! table of `std` mutexes (sharded by address, like the parking lot that blocking waiters
//! use) and sets the word's [`WAKERS`] bit, both under the shard's lock. The owner of the
//! use ends it with an RMW (`wait::end_use`) and, if the old value had `WAKERS`, takes the
//! shard's lock and wakes every waker registered under the address. No lost wake-up: the
//! registrant's CAS and the owner's RMW hit one word, so either the CAS fails (the
//! registrant sees the use over and does not wait) or the owner sees `WAKERS`; the owner
//! then takes the shard's lock, which the registrant held from before its CAS until after
//! its push, so the owner finds the waker. A woken future re-checks its ticket, so wakers
//! left over from an earlier use (or a recycled node) cost a spurious poll, nothing else.
//!
//! On a *counted* wait word (a stripe slot, released with a plain store: `wait`, "Counted
//! words") the future counts itself in the word's waiter count instead of setting a flag,
//! passes the heavy barrier, and then checks the word and pushes its waker under the
//! shard's lock; an owner that reads the count non-zero after its store takes the shard's
//! lock and wakes. The count is kept until the registration is cancelled (the future
//! resolves or is dropped).
//!
//! A future that is dropped while registered removes its entry ([`Registration::cancel`]).
//!
//! Deadlines: `lock_async_timeout` must complete with `TimedOut` even if nothing else
//! wakes it. With no runtime to ask, one lazily started thread (`rangelock-timer`) sleeps
//! until the earliest registered deadline and wakes its waker.

use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::Waker;
use std::time::Instant;

use core::ptr::NonNull;

use super::wait::{Ticket, WAKERS};
use crate::primitive::{AtomicU32, Ordering};

/// Shards of the waker table.
const SHARDS: usize = 64;

/// One registered waker.
#[derive(Debug)]
struct Entry {
    /// The wait word's address.
    key: usize,
    /// The registering future.
    id: u64,
    waker: Waker,
}

/// The global waker table.
static TABLE: [Mutex<Vec<Entry>>; SHARDS] = [const { Mutex::new(Vec::new()) }; SHARDS];

fn shard(key: usize) -> MutexGuard<'static, Vec<Entry>> {
    // Wait words are at least 8-byte aligned; nodes and slots are larger still.
    let index = (key >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15_usize as _) >> 10;
    // A panic while holding a shard cannot leave its Vec inconsistent (single operations).
    TABLE[index % SHARDS].lock().unwrap_or_else(PoisonError::into_inner)
}

/// A future's registration: its identity and the wait word it is registered on, if any.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    key: Option<usize>,
    /// The waiter count of the counted wait word we counted ourselves in, if any (`wait`,
    /// "Counted words"): kept from the first registration on the word until `cancel`.
    counted: Option<NonNull<AtomicU32>>,
}

// SAFETY: `counted` points at an atomic counter in a stripe table of the lock the owning
// future borrows; it is only used through atomic operations.
unsafe impl Send for Registration {}

impl Registration {
    /// A fresh identity.
    pub(crate) fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // Relaxed: only uniqueness matters.
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Registration { id, key: None, counted: None }
    }

    /// Registers `waker` to be woken when the use `ticket` names is over; `false` (and no
    /// registration) if it already is.
    pub(crate) fn register(&mut self, ticket: &Ticket, waker: &Waker) -> bool {
        let word = ticket.word();
        let key = word as *const _ as usize;
        if self.key.is_some_and(|k| k != key) {
            self.cancel();
        }
        if let Some(waiting) = ticket.waiting() {
            // A counted word: count ourselves (once per word), then the heavy barrier before
            // the check below, as a parking thread does (`wait::wait_counted`).
            if self.counted.is_none() {
                // Relaxed: ordered by the heavy barrier.
                waiting.fetch_add(1, Ordering::Relaxed);
                self.counted = Some(NonNull::from(waiting));
            }
            membarrier2::heavy();
        }
        let mut entries = shard(key);
        loop {
            // Acquire: pairs with the Release that ended the use (`end_use`,
            // `end_counted_use`).
            let s = word.load(Ordering::Acquire);
            if ticket.over_in(s) {
                drop(entries);
                self.cancel();
                return false;
            }
            // A counted word's owner reads our count, not a flag; a flagged word's owner
            // reads `WAKERS` in its RMW. Acquire: as above; the CAS only announces us.
            if ticket.waiting().is_some()
                || s & WAKERS != 0
                || word
                    .compare_exchange_weak(s, s | WAKERS, Ordering::Acquire, Ordering::Acquire)
                    .is_ok()
            {
                break;
            }
        }
        match entries.iter_mut().find(|e| e.id == self.id) {
            Some(entry) => entry.waker.clone_from(waker),
            None => entries.push(Entry { key, id: self.id, waker: waker.clone() }),
        }
        self.key = Some(key);
        true
    }

    /// Removes the registration, if any (and our count on a counted word).
    pub(crate) fn cancel(&mut self) {
        if let Some(key) = self.key.take() {
            shard(key).retain(|e| e.id != self.id);
        }
        if let Some(waiting) = self.counted.take() {
            // SAFETY: the counter lives as long as the lock the owning future borrows.
            // Relaxed: a releaser that still reads our count only wakes needlessly.
            unsafe { waiting.as_ref() }.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Wakes every future registered on the wait word at `key` (its owner saw `WAKERS`).
#[cold]
pub(crate) fn wake_all(key: usize) {
    let woken: Vec<Waker> = {
        let mut entries = shard(key);
        let mut woken = Vec::new();
        entries.retain_mut(|e| {
            if e.key != key {
                return true;
            }
            woken.push(core::mem::replace(&mut e.waker, Waker::noop().clone()));
            false
        });
        woken
    };
    // Outside the shard lock: a waker may run its task inline.
    woken.into_iter().for_each(Waker::wake);
}

/// Pending deadlines, earliest first.
struct Timer {
    heap: Mutex<BinaryHeap<Due>>,
    changed: Condvar,
}

/// A waker due at `at`; `seq` breaks ties. The heap is a max-heap, so the order is reversed:
/// the earliest deadline is the greatest.
struct Due {
    at: Instant,
    seq: u64,
    waker: Waker,
}

impl Due {
    fn key(&self) -> core::cmp::Reverse<(Instant, u64)> {
        core::cmp::Reverse((self.at, self.seq))
    }
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Wakes `waker` at `deadline` (or soon after), from the timer thread.
pub(crate) fn wake_at(deadline: Instant, waker: &Waker) {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let timer = *TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            heap: Mutex::new(BinaryHeap::new()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("rangelock-timer".into())
            .spawn(move || timer.run())
            .expect("the rangelock timer thread starts");
        timer
    });
    // Relaxed: only uniqueness (a tie-break) matters.
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut heap = timer.heap.lock().unwrap_or_else(PoisonError::into_inner);
    heap.push(Due { at: deadline, seq, waker: waker.clone() });
    drop(heap);
    timer.changed.notify_one();
}

impl Timer {
    fn run(&self) {
        let mut heap = self.heap.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while heap.peek().is_some_and(|d| d.at <= now) {
                if let Some(d) = heap.pop() {
                    due.push(d.waker);
                }
            }
            if !due.is_empty() {
                drop(heap);
                due.into_iter().for_each(Waker::wake);
                heap = self.heap.lock().unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            heap = match heap.peek().map(|d| d.at) {
                Some(at) => {
                    let wait = at.saturating_duration_since(now);
                    self.changed.wait_timeout(heap, wait).unwrap_or_else(PoisonError::into_inner).0
                }
                None => self.changed.wait(heap).unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}
