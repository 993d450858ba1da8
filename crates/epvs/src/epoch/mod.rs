//! Epoch protection: FASTER's `LightEpoch`, without its known defects.
//!
//! A [`LightEpoch`] has a global epoch `E` (starting at 1), a table of cache-padded
//! announcement slots, and a drain list of deferred actions. A thread *protects* a region by
//! announcing the epoch it observed in a slot ([`LightEpoch::protect`] returns an
//! [`EpochGuard`]); it *refreshes* by announcing a newer epoch, and *releases* by dropping
//! the guard. [`LightEpoch::bump_with`] increments `E` and queues an action tagged with the
//! old epoch `p`; the action runs, exactly once and on whichever thread drains next, when
//! `p` is *safe*: every protected thread has announced an epoch greater than `p`.
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::Arc;
//! use epvs::epoch::LightEpoch;
//!
//! let epoch = LightEpoch::new();
//! let reclaimed = Arc::new(AtomicBool::new(false));
//! let guard = epoch.protect();
//! let flag = reclaimed.clone();
//! epoch.bump_with(move || flag.store(true, Ordering::SeqCst));
//! assert!(!reclaimed.load(Ordering::SeqCst)); // the guard still sees the old epoch
//! drop(guard);                                // releasing drains ready actions
//! assert!(reclaimed.load(Ordering::SeqCst));
//! ```
//!
//! # Why it is correct
//!
//! The reclaimer unlinks an object, then bumps `E` from `p` to `p + 1` (a SeqCst RMW) and
//! queues `free` at `p`; a drain issues `fence(SeqCst)` and scans the slots. A reader
//! claims a slot with a SeqCst CAS announcing the epoch `e` it loaded (Acquire), then
//! reads the structure. Two cases:
//! - the scan sees the reader's announcement: if `e <= p` the action waits for the reader;
//!   `e > p` means the reader's Acquire load read the bump's value, so the unlink happens
//!   before the reader's reads and it cannot reach the object;
//! - the scan misses it: the reader's CAS (and its fence) is after the drain's fence in the
//!   SeqCst order, so the reader's reads see the unlink (the Dekker pattern).
//!
//! A refresh moves a slot from one non-zero epoch to a larger one with a Release store: a
//! scan that misses the store sees the older value, which protects at least as much, and
//! the Acquire load of `E` before it synchronizes with every bump up to the new epoch.
//! Releasing stores 0 with Release, and scans load with Acquire, so all of a region's reads
//! happen before any action that its release lets run.
//!
//! # Asymmetric mode
//!
//! An instance built with [`Announce::Asymmetric`] ([`LightEpoch::asymmetric`]) moves the
//! cost of ordering an announce before the region's loads from every reader to the rare
//! reclaimer, as RCU implementations do:
//!
//! - each thread keeps a *sticky* slot per instance (cached for up to sixteen instances at
//!   once in thread-local storage, claimed once with a CAS `FREE → IDLE`); `protect` is a
//!   plain store `IDLE → e` followed by `membarrier2::light()` (a compiler barrier on
//!   Linux), and a release is a Release store `e → IDLE`;
//! - every scan that may run actions ([`LightEpoch::safe_epoch`], drains) first issues
//!   `membarrier2::heavy()`, a process-wide barrier (Linux `membarrier`
//!   `PRIVATE_EXPEDITED`; `mprotect`-based or plain fences where that is missing).
//!
//! The correctness argument above holds with the light/heavy pair in place of the SeqCst
//! CAS and fence: the heavy barrier acts as a full fence on every running thread of the
//! process, so for a reader between its announce and its next load, either the scan after
//! the barrier sees the announce, or the reader's load comes after the barrier and sees
//! the unlink. (Loom models the pair as two `fence(SeqCst)`s, which is what the system call
//! guarantees; `loom_asymmetric_*` check it, and fail with the light barrier removed.)
//!
//! Sticky slots never exhaust a table: at most half its slots are sticky; nested protection
//! and threads beyond that use transient (fenced) slots. A thread gives its sticky slots
//! back when it evicts one from its cache and when it exits (a TLS destructor; a guard
//! still alive in another thread-local at that point gives its slot back itself). The
//! cache holds an `Arc` of the slot table, so a thread may outlive an instance it used:
//! dropping an instance lets go of the dropping thread's entry, and each other thread
//! keeps at most sixteen such tables (128 bytes per slot: 8 KiB each on 2 cores) until it
//! evicts them or exits.
//! Because the heavy barrier is a system call, a drain in this mode first scans without it
//! and skips the barrier when that scan already shows that nothing can run.
//!
//! # The anchors' defects, and what we do instead
//!
//! - **Unfenced announce** (FASTER C++/C# store the local epoch without a fence, so a
//!   protected load can pass the announce and hit freed memory): the announce is a SeqCst
//!   CAS, followed by `fence(SeqCst)` except on x86 where the locked CAS already is one.
//! - **Full table spins forever or throws**: [`LightEpoch::protect`] parks with bounded
//!   wake-ups (50 µs doubling to 10 ms) until a slot frees, logs a `tracing` warning after a
//!   second, and [`LightEpoch::try_protect`] gives up with [`EpochError::TableFull`] at its
//!   timeout, never sleeping past it (with a zero timeout it does not sleep at all). The
//!   default table size comes from the core count ([`LightEpoch::DEFAULT_SLOTS_PER_CORE`]).
//! - **One static table shared by all instances** (a cross-instance deadlock in FASTER):
//!   every instance owns its table; the only per-thread state is a probing hint.
//! - **Drain list full means busy-spin**: the drain list grows instead; it is touched only
//!   by bumps and drains, never by protect/refresh/release fast paths.
//!
//! # Slots, threads and re-entrancy
//!
//! A slot is owned exactly while a guard holds it: claiming it *is* the announce. Threads
//! start probing at a per-thread hint, so each thread keeps landing on its own slot and pays
//! one uncontended CAS. Nothing has to be cleaned up at thread exit: a thread that exits,
//! normally or by panic, has dropped its guards (a guard stored in a `thread_local!` is
//! dropped by its destructor). A guard leaked with `mem::forget` pins its epoch forever.
//!
//! Protection is re-entrant: a nested `protect` on the same thread claims a second slot and
//! returns an independent guard; each guard releases its own slot. A thread must not wait
//! for an action to run while it holds a guard at an epoch older than the action's, since
//! that action waits for the thread: that is a self-deadlock, and the one rule callers keep.
//!
//! # Trade-offs
//!
//! In the default [`Announce::Fenced`] mode, releasing the slot at every guard drop makes
//! `protect` an RMW (like `crossbeam_epoch::pin`) instead of FASTER's plain store into a
//! thread-owned entry, and in exchange a table never stays full because of idle threads and
//! thread exit needs no destructor; reclamation stays cheap (one fence and a scan), which
//! suits structures that retire memory constantly (the range lock). [`Announce::Asymmetric`]
//! makes `protect` two plain stores and each ready drain a system call: right for
//! read-mostly use with rare bumps (EPVS version changes), wrong for frequent
//! reclamation. Long-running threads that want the cheapest path in either mode keep one
//! guard and call [`EpochGuard::refresh`] (one load when the epoch has not moved). Actions
//! run on whatever thread drains, possibly concurrently with each other and not
//! necessarily in queueing order.
//!
//! # When actions run
//!
//! An action runs at the first drain after its epoch becomes safe. `bump_with`, `drain`,
//! every release that sees actions pending, and every refresh that moves to a newer epoch
//! while actions are pending drain. The "pending" check on the
//! release path is a Relaxed load (a fence there would double the cost of every release),
//! so a release racing with a `bump_with` may miss the new action; the bumping thread's own
//! drain or the next refresh/release/drain then runs it. The drain list is a mutex held
//! for one `Vec` operation; `bump_with` and `drain` wait for it, but the drain of a release
//! or refresh skips if another thread holds it (that thread, or the next drain, runs what
//! is ready), so ending a region never sleeps behind a holder that was preempted. (With
//! waiting drains, 16 threads of range-lock `try_lock` calls on 2 cores slept in the
//! mutex's futex a few times in a million calls, for up to 1.8 ms.) **Code that waits for
//! an action to run must call [`LightEpoch::drain`] in its wait loop**, as EPVS does;
//! dropping the instance runs whatever is left.

mod announce;
mod drain;
mod error;
mod guard;
mod local;
#[cfg(all(test, loom))]
mod loom;
mod region;
mod table;

use core::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::primitive::{thread_hint, AtomicU64, AtomicUsize, Ordering};
pub use announce::Announce;
use drain::{DrainList, Wait};
pub use error::EpochError;
pub use guard::EpochGuard;
pub(crate) use guard::Protection;
pub(crate) use region::Entered;
use table::SlotTable;

/// Source of instance ids (asymmetric mode's per-thread cache key); 0 is never handed out.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// An epoch-protection instance: global epoch, slot table, drain list.
///
/// See the [module documentation](self) for the protocol and its correctness argument.
pub struct LightEpoch {
    /// The global epoch `E`; starts at 1 (0 marks a free slot) and only grows.
    current: CachePadded<AtomicU64>,
    /// Shared with the sticky-slot caches of threads (asymmetric mode), which may outlive
    /// the instance.
    table: Arc<SlotTable>,
    drain: DrainList,
    full: FullTable,
    /// Process-wide unique, never 0.
    id: u64,
    /// `Announce::Asymmetric`: sticky slots, plain-store announces, heavy scans.
    asymmetric: bool,
    /// Set (1) by the owner (EPVS's adaptive mode) while every thread that announces with
    /// a plain store also fences before the loads the scan must order: scans then need no
    /// process-wide barrier. See [`set_light_scans`](Self::set_light_scans).
    light_scans: AtomicU64,
    /// Process-wide barriers issued by scans, and how long the last one took (ns).
    heavy: HeavyStats,
}

/// What the process-wide barriers of an asymmetric instance cost.
struct HeavyStats {
    count: AtomicU64,
    last_ns: AtomicU64,
}

/// Threads waiting for a slot of a full table.
struct FullTable {
    /// Threads currently parked in `protect_slow`; read Relaxed on release as a hint.
    waiters: CachePadded<AtomicUsize>,
    /// Number of times any `protect` found the table full.
    events: AtomicU64,
    #[cfg(not(loom))]
    lock: std::sync::Mutex<()>,
    #[cfg(not(loom))]
    cond: std::sync::Condvar,
}

impl LightEpoch {
    /// Slots per available core in the default table (at least [`Self::MIN_DEFAULT_SLOTS`]).
    pub const DEFAULT_SLOTS_PER_CORE: usize = 16;
    /// The smallest default table.
    pub const MIN_DEFAULT_SLOTS: usize = 64;

    /// An instance with a table sized from the core count.
    pub fn new() -> Self {
        Self::with_slots(Self::default_slots())
    }

    /// The table size of [`new`](Self::new) and [`asymmetric`](Self::asymmetric).
    fn default_slots() -> usize {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        (cores * Self::DEFAULT_SLOTS_PER_CORE).max(Self::MIN_DEFAULT_SLOTS)
    }

    /// An instance whose table has `slots` slots: at most that many guards can be held at
    /// once; further `protect` calls wait for a release.
    ///
    /// # Panics
    ///
    /// If `slots` is 0.
    pub fn with_slots(slots: usize) -> Self {
        Self::with_options(slots, Announce::Fenced)
    }

    /// An [`Announce::Asymmetric`] instance with a table sized from the core count: the
    /// cheapest `protect`, for read-mostly use where bumps are rare.
    pub fn asymmetric() -> Self {
        Self::with_options(Self::default_slots(), Announce::Asymmetric)
    }

    /// Models only: an asymmetric instance whose sticky announces are plain stores with no
    /// barrier at all (see `SlotTable::model_plain`).
    #[cfg(all(loom, test))]
    pub(crate) fn asymmetric_plain_for_model() -> Self {
        let mut epoch = Self::with_options(4, Announce::Asymmetric);
        Arc::get_mut(&mut epoch.table).expect("a fresh table").model_plain = true;
        epoch
    }

    /// An instance whose table has `slots` slots, announcing as `announce` says.
    ///
    /// # Panics
    ///
    /// If `slots` is 0.
    pub fn with_options(slots: usize, announce: Announce) -> Self {
        LightEpoch {
            // Relaxed: only uniqueness matters.
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            asymmetric: announce == Announce::Asymmetric,
            current: CachePadded::new(AtomicU64::new(1)),
            light_scans: AtomicU64::new(0),
            heavy: HeavyStats { count: AtomicU64::new(0), last_ns: AtomicU64::new(0) },
            table: Arc::new(SlotTable::new(slots)),
            drain: DrainList::new(),
            full: FullTable {
                waiters: CachePadded::new(AtomicUsize::new(0)),
                events: AtomicU64::new(0),
                #[cfg(not(loom))]
                lock: std::sync::Mutex::new(()),
                #[cfg(not(loom))]
                cond: std::sync::Condvar::new(),
            },
        }
    }

    /// The number of slots in the table.
    pub fn slots(&self) -> usize {
        self.table.len()
    }

    /// How this instance's protected threads announce themselves.
    pub fn announce(&self) -> Announce {
        if self.asymmetric {
            Announce::Asymmetric
        } else {
            Announce::Fenced
        }
    }

    /// Protects the calling thread at the current epoch until the guard drops.
    ///
    /// Waits (parking, with bounded wake-ups) while every slot is taken.
    // `inline(always)`: returned through memory from an out-of-line call, the guard is
    // moved with wide loads that stall on the narrower stores that built it.
    #[inline(always)]
    pub fn protect(&self) -> EpochGuard<'_> {
        EpochGuard::new(self, self.protect_raw())
    }

    /// Like [`protect`](Self::protect), but gives up after `timeout` if the table stays full.
    pub fn try_protect(&self, timeout: Duration) -> Result<EpochGuard<'_>, EpochError> {
        self.protect_within(Some(timeout)).map(|p| EpochGuard::new(self, p))
    }

    /// [`protect`](Self::protect) without the guard: the caller releases the protection
    /// with [`release_protection`](Self::release_protection). A plain value, so callers that
    /// keep it in a guard of their own never move a guard through memory.
    #[inline(always)]
    pub(crate) fn protect_raw(&self) -> Protection<'_> {
        if let Some(p) = self.protect_sticky() {
            return p;
        }
        if let Some(p) = self.try_protect_once() {
            return p;
        }
        // Rebuilt from two words (returned in registers): a protection returned through
        // memory by the slow path would keep the fast path's in memory too.
        let (slot, announced) = self.protect_blocking();
        Protection::transient(slot, announced)
    }

    /// Waits for a transient slot: the `(slot, announced epoch)` of the protection.
    #[cold]
    #[inline(never)]
    fn protect_blocking(&self) -> (&AtomicU64, u64) {
        match self.protect_slow(None) {
            Ok(p) => (p.slot(), p.announced()),
            Err(_) => unreachable!("protect_slow without a deadline never times out"),
        }
    }

    /// The sticky slot (asymmetric mode), else a transient one, else wait for one (until
    /// `timeout`, if given).
    #[inline(always)]
    fn protect_within(&self, timeout: Option<Duration>) -> Result<Protection<'_>, EpochError> {
        if let Some(p) = self.protect_sticky() {
            return Ok(p);
        }
        match self.try_protect_once() {
            Some(p) => Ok(p),
            None => self.protect_slow(timeout.map(|t| Instant::now() + t)),
        }
    }

    #[inline]
    fn try_protect_once(&self) -> Option<Protection<'_>> {
        // Acquire: synchronizes with the bump that produced `e`, so what was unlinked
        // before it is invisible to the protected region; pairs with the fetch_add in
        // `bump_with`. (A stale, smaller `e` only protects more.)
        let e = self.current.load(Ordering::Acquire);
        let slot = self.table.try_claim(thread_hint(), e)?;
        Some(Protection::transient(self.table.slot(slot), e))
    }

    /// Asymmetric mode: announces in this thread's sticky slot with a plain store. `None`
    /// if the thread has none it can use (nested protection, table half sticky already),
    /// and always in fenced mode.
    #[inline(always)]
    fn protect_sticky(&self) -> Option<Protection<'_>> {
        // The mode first: a fenced instance has no way, and its protect should not pay a
        // scan of the thread's ways to find that out.
        if !self.asymmetric {
            return None;
        }
        let (way, slot) = match local::acquire(self.id) {
            Some(found) => found,
            None => local::acquire_slow(self.id, &self.table)?,
        };
        Some(self.announce_sticky(way, slot))
    }

    /// Announces the current epoch in this thread's sticky slot `slot` of way `way`
    /// (claimed from this instance, idle).
    #[inline(always)]
    fn announce_sticky(&self, way: u32, slot: NonNull<AtomicU64>) -> Protection<'_> {
        // SAFETY: the way holds this instance's id, and ids are never reused, so `slot`
        // points into `self.table`, which lives at least as long as `&self`.
        let slot = unsafe { slot.as_ref() };
        // Acquire: as in `try_protect_once`.
        let e = self.current.load(Ordering::Acquire);
        self.table.announce_sticky(slot, e);
        Protection::sticky(slot, e, way)
    }

    #[cold]
    fn protect_slow(&self, deadline: Option<Instant>) -> Result<Protection<'_>, EpochError> {
        self.full.events.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let mut warned = false;
        let mut wait = Duration::from_micros(50);
        loop {
            // Relaxed: a hint for releasers; a missed wake-up costs at most one `wait`.
            self.full.waiters.fetch_add(1, Ordering::Relaxed);
            let got = self.try_protect_once();
            if got.is_none() {
                // Never past the deadline: `try_protect(Duration::ZERO)` does not sleep.
                let left = deadline.map_or(wait, |d| d.saturating_duration_since(Instant::now()));
                if !left.is_zero() {
                    self.park(wait.min(left));
                }
            }
            self.full.waiters.fetch_sub(1, Ordering::Relaxed);
            if let Some(guard) = got.or_else(|| self.try_protect_once()) {
                return Ok(guard);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(EpochError::TableFull { slots: self.table.len() });
            }
            if !warned && now.duration_since(started) > Duration::from_secs(1) {
                warned = true;
                tracing::warn!(
                    slots = self.table.len(),
                    "epoch table full for over a second; threads are waiting for a slot \
                     (size it with LightEpoch::with_slots for the threads protected at once)"
                );
            }
            wait = (wait * 2).min(Duration::from_millis(10));
        }
    }

    /// Sleeps until a release wakes us or `wait` passes.
    #[cfg(not(loom))]
    fn park(&self, wait: Duration) {
        let guard = self.full.lock.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.full.cond.wait_timeout(guard, wait));
    }

    #[cfg(loom)]
    fn park(&self, _wait: Duration) {
        crate::primitive::yield_now();
    }

    /// Work a release may owe: running ready actions, waking threads waiting for a slot.
    #[inline]
    fn after_release(&self) {
        if self.drain.has_pending() {
            self.drain_implicit();
        }
        if self.full.waiters.load(Ordering::Relaxed) != 0 {
            self.wake_slow();
        }
    }

    #[cold]
    fn wake_slow(&self) {
        #[cfg(not(loom))]
        {
            let _guard = self.full.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.full.cond.notify_all();
        }
    }

    /// The global epoch.
    #[inline]
    pub fn current(&self) -> u64 {
        // Acquire: a caller that sees epoch `e` also sees what was unlinked before the bump
        // that produced it; pairs with the fetch_add in `bump_with`.
        self.current.load(Ordering::Acquire)
    }

    /// The largest epoch `e` such that every protected thread has announced an epoch `> e`.
    pub fn safe_epoch(&self) -> u64 {
        // Acquire: as in `current`; a stale (smaller) value only makes the result smaller,
        // i.e. more conservative.
        let current = self.current.load(Ordering::Acquire);
        let heavy = self.needs_heavy();
        #[cfg(not(loom))]
        let started = heavy.then(Instant::now);
        let min = self.table.min_announced(heavy).map_or(current, |m| m.min(current));
        #[cfg(not(loom))]
        if let Some(started) = started {
            // Relaxed: statistics for the owner's mode decision, nothing is ordered by them.
            let ns = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
            self.heavy.last_ns.store(ns, Ordering::Relaxed);
            self.heavy.count.fetch_add(1, Ordering::Relaxed);
        }
        min - 1
    }

    /// Whether a scan needs the process-wide barrier: only in asymmetric mode, only while
    /// the owner has not declared every plain announce fenced (`set_light_scans`), and only
    /// if a thread other than the caller holds a sticky slot (every other announce is a
    /// fenced claim; see `SlotTable::others_sticky`). A version change on an instance
    /// nobody else uses costs no system call.
    #[inline]
    fn needs_heavy(&self) -> bool {
        // SeqCst: the owner stores it before the bump whose action this scan may run, and
        // the scan read that bump's epoch (Acquire) first; see `set_light_scans`.
        self.asymmetric
            && self.light_scans.load(Ordering::SeqCst) == 0
            && self.table.others_sticky(usize::from(local::holds(self.id)))
    }

    /// Declares (`true`) that until further notice every thread protected in a sticky slot
    /// issues a SeqCst fence between its announce and the loads a scan must order, so scans
    /// may use a plain fence instead of the process-wide barrier; `false` withdraws it.
    ///
    /// For an owner that runs its own announce protocol on top (EPVS's adaptive mode): it
    /// must call this before the bump whose action relies on it, and only when no region
    /// that announced without fencing can still hold back that action.
    pub(crate) fn set_light_scans(&self, light: bool) {
        // SeqCst: ordered before the owner's next bump; pairs with the load in
        // `needs_heavy`.
        self.light_scans.store(u64::from(light), Ordering::SeqCst);
    }

    /// How many process-wide barriers scans have issued, and the last one's duration.
    pub(crate) fn heavy_barriers(&self) -> (u64, Duration) {
        // Relaxed: statistics.
        let count = self.heavy.count.load(Ordering::Relaxed);
        (count, Duration::from_nanos(self.heavy.last_ns.load(Ordering::Relaxed)))
    }

    /// Increments the global epoch and returns the new value.
    pub fn bump(&self) -> u64 {
        // SeqCst: see `bump_with`.
        self.current.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Increments the global epoch from `p` to `p + 1` and queues `action` to run once `p`
    /// is safe, i.e. after every thread that could have observed `p` has refreshed past it
    /// or released. Returns `p + 1`.
    ///
    /// The action runs exactly once, on whichever thread drains first (this one, right away,
    /// if nothing protected at `p` or earlier), or when the instance is dropped.
    pub fn bump_with<F>(&self, action: F) -> u64
    where
        F: FnOnce() + Send + 'static,
    {
        let (prior, ready) = self.bump_ready();
        if ready {
            // Nothing protected at `prior` or earlier: run it here, without queueing it (no
            // allocation, no drain-list lock), and whatever else is ready.
            action();
            self.drain();
        } else {
            self.defer(prior, action);
        }
        prior + 1
    }

    /// [`bump_with`](Self::bump_with) for an owner that runs the action itself when it is
    /// ready at once: increments the epoch from `p` to `p + 1` and returns `p` and whether
    /// `p` is already safe. If it is not, the caller must hand the action to
    /// [`defer`](Self::defer) with `p`.
    pub(crate) fn bump_ready(&self) -> (u64, bool) {
        // SeqCst: the caller's unlinking stores are ordered before the increment (Release
        // half: pairs with the Acquire loads of `current` in protect/refresh) and the
        // increment before the scan (pairs with the SeqCst claim in `SlotTable::try_claim`
        // through the fence in `min_announced`).
        let prior = self.current.fetch_add(1, Ordering::SeqCst);
        (prior, self.safe_epoch() >= prior)
    }

    /// Queues `action` to run once `prior` (from [`bump_ready`](Self::bump_ready)) is safe,
    /// then scans again: a region that ends between `bump_ready`'s scan and the push may
    /// miss the push (its pending check is Relaxed), so the scan after the push must see
    /// it gone.
    pub(crate) fn defer<F>(&self, prior: u64, action: F)
    where
        F: FnOnce() + Send + 'static,
    {
        self.drain.push(prior, Box::new(action));
        self.drain_slow(Wait::Yes);
    }

    /// Runs the queued actions whose epoch is safe now.
    pub fn drain(&self) {
        if self.drain.has_pending() {
            self.drain_slow(Wait::Yes);
        }
    }

    /// The drain of a release, refresh or suspend: skipped if another thread holds the
    /// drain list (module docs, "When actions run").
    #[cold]
    pub(crate) fn drain_implicit(&self) {
        self.drain_slow(Wait::No);
    }

    /// Runs the queued actions whose epoch is safe now; with [`Wait::No`], only if no
    /// other thread holds the drain list.
    #[cold]
    fn drain_slow(&self, wait: Wait) {
        // Not under loom: its loads may return a stale value forever, which would turn
        // this shortcut into a livelock of the model (hardware makes stores visible).
        if !cfg!(loom) && self.needs_heavy() {
            // The process-wide barrier costs a system call: skip it when even an unfenced
            // scan shows that no queued action can run. Skipping is always safe, and a
            // stale (smaller) announcement seen here only delays the action to a later
            // drain, which waiters issue in their wait loops.
            let current = self.current.load(Ordering::Relaxed);
            let hint = self.table.min_announced_hint().map_or(current, |m| m.min(current)) - 1;
            if !self.drain.any_ready(hint, wait) {
                return;
            }
        }
        let safe = self.safe_epoch();
        self.drain.run_ready(safe, wait);
    }

    /// The number of actions queued and not yet run.
    pub fn pending_actions(&self) -> usize {
        self.drain.pending()
    }

    /// How many times a `protect` found the table full and had to wait.
    pub fn table_full_events(&self) -> u64 {
        self.full.events.load(Ordering::Relaxed)
    }
}

impl Default for LightEpoch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for LightEpoch {
    fn drop(&mut self) {
        // No guard can exist (guards borrow the instance), so every epoch is safe.
        self.drain.run_all();
        if self.asymmetric {
            local::forget(self.id);
        }
    }
}

impl fmt::Debug for LightEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LightEpoch")
            .field("current", &self.current.load(Ordering::Relaxed))
            .field("slots", &self.table.len())
            .field("announce", &self.announce())
            .field("pending_actions", &self.drain.pending())
            .finish()
    }
}
