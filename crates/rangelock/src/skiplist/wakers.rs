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
//! **Deadlines.** `try_lock_async_for` must complete with `TimedOut` even if nothing else
//! wakes it. With no runtime to ask, one lazily started thread (`rangelock-timer`) sleeps
//! until the earliest deadline in its map (a `BTreeMap` keyed by deadline and a unique
//! number, under one mutex) and wakes the waker of each alarm due. A future arms an
//! [`Alarm`] at its first `Pending`: a slot, shared by the future and the map, that holds
//! one waker. Two rules follow from what executors do with futures:
//!
//! - *The deadline wakes the latest waker.* A future may be polled under another waker
//!   than before (`select!`, `join`, a future moved to another task, task migration); only
//!   the latest poll's waker is sure to lead to another poll. Every `Pending` puts its
//!   waker in the slot ([`Alarm::rearm`]: a lock of the slot's own mutex, which only this
//!   future and the timer take, and no clone if the waker would wake the same task). The
//!   timer takes the waker out of the slot when it fires, so a `rearm` that finds the slot
//!   empty knows that the deadline has passed and that its waker will not be woken: the
//!   future times out then and there instead of returning `Pending`.
//! - *A future that resolves or is dropped keeps no waker.* Dropping the alarm empties the
//!   slot (its waker, and with it the task, is released at once) and removes the alarm
//!   from the map, so a dropped future leaves nothing in the timer, whatever its deadline.
//!   (A heap of wakers, which cannot remove an entry, kept each cancelled task alive until
//!   its deadline.) A pending timed future costs the slot and its map entry, about 80
//!   bytes.
//!   The timer takes each due alarm out of the map before it takes and wakes the waker,
//!   outside the map's lock; a drop that races with it finds the slot empty or empties it
//!   first, and either way the waker is woken at most once and never after the drop.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
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

/// A future's deadline at the timer: the slot of the one waker the timer will wake, shared
/// by the future and the timer's map (module docs, "Deadlines").
#[derive(Debug)]
pub(crate) struct Alarm(Arc<Slot>);

/// What an [`Alarm`] shares with the timer.
#[derive(Debug)]
struct Slot {
    /// The alarm's key in the timer's map: its deadline and a unique tie-break.
    key: (Instant, u64),
    /// The waker of the latest poll; `None` once the timer has fired or the future let go.
    waker: Mutex<Option<Waker>>,
}

impl Slot {
    fn waker(&self) -> MutexGuard<'_, Option<Waker>> {
        // A panic while holding it cannot leave an `Option` inconsistent.
        self.waker.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Pending deadlines, earliest first.
struct Timer {
    alarms: Mutex<BTreeMap<(Instant, u64), Arc<Slot>>>,
    changed: Condvar,
}

impl Timer {
    /// The timer, started on first use.
    fn get() -> &'static Timer {
        static TIMER: OnceLock<&'static Timer> = OnceLock::new();
        TIMER.get_or_init(|| {
            let timer: &'static Timer = Box::leak(Box::new(Timer {
                alarms: Mutex::new(BTreeMap::new()),
                changed: Condvar::new(),
            }));
            std::thread::Builder::new()
                .name("rangelock-timer".into())
                .spawn(move || timer.run())
                .expect("the rangelock timer thread starts");
            timer
        })
    }

    fn alarms(&self) -> MutexGuard<'_, BTreeMap<(Instant, u64), Arc<Slot>>> {
        // A panic while holding it cannot leave the map inconsistent (single operations).
        self.alarms.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn run(&self) {
        let mut alarms = self.alarms();
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = alarms.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            if !due.is_empty() {
                drop(alarms);
                // Outside the map's lock: a waker may run its task inline. Taken out of its
                // slot, so the future sees that the timer fired (`Alarm::rearm`).
                for slot in due {
                    let waker = slot.waker().take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                alarms = self.alarms();
                continue;
            }
            alarms = match alarms.first_key_value().map(|(&(at, _), _)| at) {
                Some(at) => {
                    let wait = at.saturating_duration_since(now);
                    self.changed
                        .wait_timeout(alarms, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self.changed.wait(alarms).unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

impl Alarm {
    /// Arms the timer: it wakes `waker` (or the waker of a later [`rearm`](Self::rearm)) at
    /// `deadline` or soon after, unless the alarm is dropped first.
    pub(crate) fn new(deadline: Instant, waker: &Waker) -> Alarm {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // Relaxed: only uniqueness (a tie-break) matters.
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let key = (deadline, seq);
        let slot = Arc::new(Slot { key, waker: Mutex::new(Some(waker.clone())) });
        let timer = Timer::get();
        let earliest = {
            let mut alarms = timer.alarms();
            alarms.insert(key, Arc::clone(&slot));
            alarms.first_key_value().is_some_and(|(&first, _)| first == key)
        };
        if earliest {
            // The timer may be sleeping until a later deadline.
            timer.changed.notify_one();
        }
        Alarm(slot)
    }

    /// Makes `waker` the one the deadline wakes (the future was polled again, perhaps in
    /// another task). `false` if the timer has fired already: the deadline has passed.
    pub(crate) fn rearm(&self, waker: &Waker) -> bool {
        match &mut *self.0.waker() {
            // `clone_from` clones only if `waker` would not wake the same task.
            Some(armed) => {
                armed.clone_from(waker);
                true
            }
            None => false,
        }
    }
}

impl Drop for Alarm {
    /// Lets go of the waker at once and takes the alarm out of the timer's map.
    fn drop(&mut self) {
        let waker = self.0.waker().take();
        // Dropped outside the slot's lock (a waker's drop may run arbitrary code).
        drop(waker);
        let removed = Timer::get().alarms().remove(&self.0.key);
        drop(removed);
    }
}
