//! BRAVO: a biased reader-writer lock (Dice & Kogan, "BRAVO — Biased Locking for
//! Reader-Writer Locks", USENIX ATC 2019), the peer EPVS is measured against in
//! seed 2 §6 (Figs. 14, 17, 18).
//!
//! # Algorithm
//!
//! BRAVO wraps an ordinary reader-writer lock (here `parking_lot`'s raw rwlock) and adds
//! a *read-biased* fast path that never writes to a cache line shared by all readers:
//!
//! * A **visible-readers table** ([`VisibleReaders`]) is an array of word-sized slots,
//!   shared by many locks (one process-wide table by default, as in the paper). A slot
//!   holds `0` (empty) or the identity (address) of a lock that some reader holds.
//! * Each lock has a **bias flag** `rbias`. While it is set, a reader hashes
//!   (thread, lock) to a slot, CASes `0 -> lock` into it, then *re-checks* `rbias`. If the
//!   flag is still set the reader holds the lock without touching the underlying rwlock;
//!   otherwise it clears its slot and takes the slow path. A reader whose slot is taken
//!   (a collision, or a nested read) also takes the slow path.
//! * The **slow path** takes the underlying lock in shared mode. If the bias is off and the
//!   inhibition window has passed, the slow reader re-enables the bias (it may: it holds
//!   the shared lock, so no writer is inside).
//! * A **writer** takes the underlying lock exclusively (which excludes slow readers and
//!   new bias re-enables), then, if the bias is on, *revokes* it: clears `rbias` and waits
//!   until no slot of the table holds this lock's identity.
//! * After a revocation that took time `d`, the bias stays off until `now + N·d`
//!   (`N` = [`INHIBIT_MULTIPLIER`] = 9, the paper's value), which bounds the fraction of
//!   time writers spend revoking to about `1/(N+1)` under write-heavy loads.
//!
//! # Correctness argument
//!
//! *Exclusion between fast readers and writers* is a Dekker handshake. A reader does
//! `CAS(slot, 0, lock)` then `load(rbias)`; a writer does `store(rbias, false)` then loads
//! every slot. All four are `SeqCst`, so in the single total order either the reader's
//! load follows the writer's store (the reader sees `false` and backs off to the slow
//! path, where the underlying lock excludes it), or the writer's slot scan follows the
//! reader's CAS (the writer sees the reader and waits for its release). A reader that
//! saw `true` from a *non-SeqCst* re-enable store is covered too: that store was made under
//! the shared lock, so it happens-before the next writer's `SeqCst` clear, and a `SeqCst`
//! load cannot read a store that happens-before a `SeqCst` store earlier in the total
//! order; hence the writer's clear comes after the reader's load, and its scan sees the
//! reader's slot.
//!
//! *Visibility of data*: a fast reader's `SeqCst` (hence acquire) re-check reads `true`
//! from a re-enable store made by a slow reader under the shared lock, which came after
//! the last writer's exclusive unlock, so that writer's writes happen-before the fast
//! reader's reads. A fast reader releases with a `Release` store of `0`, and the writer
//! observes it with `SeqCst` loads, so the reader's reads happen-before the writer's
//! writes. Slow readers and writers are ordered by the underlying lock.
//!
//! *No stale slots*: a slot holds a lock's address only while a guard borrowing that lock
//! exists (or for the few instructions between a failed re-check and the clear), so a lock
//! can be moved or freed only when none of its slots is published.
//!
//! # Trade-offs
//!
//! * Fast-path reads cost one CAS on a slot that is, with a large table, private to the
//!   thread; writers pay a scan of the whole table (4096 slots = 32 KiB by default) on each
//!   revocation, and then bias stays off for a while, so write-heavy loads run at the speed
//!   of the underlying lock.
//! * Slots are not padded (the paper's layout): eight per cache line; with a large table
//!   the hash spreads threads out. A small table raises collisions, and BRAVO has no
//!   collision handling beyond the slow path (seed 2 Fig. 14/18 measure exactly this).
//! * The read lock is not reentrant: a nested read hashes to the slot the outer read holds,
//!   falls to the slow path, and can deadlock behind a waiting writer (as with
//!   `parking_lot::RwLock::read`).
//! * Why `parking_lot::RawRwLock` underneath: a one-word lock with an uncontended
//!   fast path of one CAS, parking (not spinning) when contended, and a raw
//!   `lock_api::RawRwLock` interface, which BRAVO needs because a read guard holds either a
//!   slot or the underlying shared lock, decided at run time. `std::sync::RwLock` has no
//!   raw interface.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
#[cfg(not(target_arch = "x86_64"))]
use std::time::Instant;

use lock_api::RawRwLock as _;

/// After a revocation that took `d`, reader bias stays disabled until `now + N·d`
/// (the paper's `N = 9`).
pub const INHIBIT_MULTIPLIER: u64 = 9;

/// Slots in the process-wide visible-readers table (the paper's 4096).
pub const DEFAULT_TABLE_SLOTS: usize = 4096;

/// The visible-readers table: slots readers publish a lock's identity into.
///
/// One table is shared by many locks; [`Bravo::new`] uses a process-wide table of
/// [`DEFAULT_TABLE_SLOTS`] slots, [`Bravo::with_table`] a table of your choice (used by the
/// table-size benchmarks).
pub struct VisibleReaders {
    /// Slot states:
    ///
    /// | value | meaning |
    /// |---|---|
    /// | `0` | empty |
    /// | `a != 0` | a fast-path reader holds (or is trying to hold) the lock at address `a` |
    slots: Box<[AtomicUsize]>,
    /// `slots.len() - 1`; the length is a power of two.
    mask: usize,
}

impl VisibleReaders {
    /// A table with `slots` slots, rounded up to a power of two (at least 1).
    pub fn new(slots: usize) -> Self {
        let n = slots.max(1).next_power_of_two();
        let slots: Box<[AtomicUsize]> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        VisibleReaders { mask: n - 1, slots }
    }

    /// The process-wide table every [`Bravo::new`] lock shares.
    pub fn global() -> Arc<VisibleReaders> {
        static GLOBAL: OnceLock<Arc<VisibleReaders>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(VisibleReaders::new(DEFAULT_TABLE_SLOTS))).clone()
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Always false: a table has at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Slots currently holding a reader (a racy snapshot, for tests and diagnostics).
    pub fn occupied(&self) -> usize {
        self.slots.iter().filter(|s| s.load(Ordering::Relaxed) != 0).count()
    }

    /// The slot index of (this thread, `lock_id`).
    #[inline]
    fn index(&self, lock_id: usize) -> usize {
        (mix64((thread_id() as u64) ^ (lock_id as u64).rotate_left(29)) as usize) & self.mask
    }
}

impl fmt::Debug for VisibleReaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VisibleReaders").field("slots", &self.len()).finish_non_exhaustive()
    }
}

/// A biased reader-writer lock protecting a `T`: see the [module docs](self).
pub struct Bravo<T: ?Sized> {
    /// Reader bias. `true`: readers may use the visible-readers table. Set only by a slow
    /// reader holding the shared lock, cleared only by a writer holding the exclusive lock.
    rbias: AtomicBool,
    /// Bias may not be re-enabled before this time ([`now_ticks`] units). Written only under
    /// the exclusive lock.
    inhibit_until: AtomicU64,
    /// Where fast-path readers announce themselves.
    table: Arc<VisibleReaders>,
    /// The underlying lock: slow readers and all writers.
    lock: parking_lot::RawRwLock,
    data: UnsafeCell<T>,
}

// SAFETY: like `RwLock<T>`: moving the lock moves the `T`.
unsafe impl<T: ?Sized + Send> Send for Bravo<T> {}
// SAFETY: like `RwLock<T>`: readers on several threads share `&T` (needs `Sync`), a writer
// gets `&mut T` on any thread (needs `Send`); the lock provides the exclusion.
unsafe impl<T: ?Sized + Send + Sync> Sync for Bravo<T> {}

/// How a read guard holds its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadHold {
    /// Fast path: this slot of the table holds our lock's identity.
    Slot(usize),
    /// Slow path: we hold the underlying lock in shared mode.
    Shared,
}

impl<T> Bravo<T> {
    /// A lock using the process-wide visible-readers table, read-biased from the start.
    pub fn new(value: T) -> Self {
        Self::with_table(value, VisibleReaders::global())
    }

    /// A lock using `table` for its fast-path readers.
    pub fn with_table(value: T, table: Arc<VisibleReaders>) -> Self {
        Bravo {
            rbias: AtomicBool::new(true),
            inhibit_until: AtomicU64::new(0),
            table,
            lock: <parking_lot::RawRwLock as lock_api::RawRwLock>::INIT,
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock, returning the value.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Bravo<T> {
    /// This lock's identity in the table: its address (never 0; stable while borrowed).
    #[inline]
    fn id(&self) -> usize {
        self as *const Self as *const () as usize
    }

    /// Whether readers currently use the fast path (a racy snapshot).
    pub fn is_read_biased(&self) -> bool {
        self.rbias.load(Ordering::Relaxed)
    }

    /// The table this lock's fast-path readers use.
    pub fn table(&self) -> &Arc<VisibleReaders> {
        &self.table
    }

    /// Mutable access without locking (`&mut self` proves exclusivity).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Shared access; blocks while a writer holds the lock.
    #[inline]
    pub fn read(&self) -> BravoReadGuard<'_, T> {
        if self.rbias.load(Ordering::Relaxed) {
            if let Some(slot) = self.try_fast_read() {
                return BravoReadGuard::new(self, ReadHold::Slot(slot));
            }
        }
        self.read_slow()
    }

    /// Shared access if it is available without blocking.
    #[inline]
    pub fn try_read(&self) -> Option<BravoReadGuard<'_, T>> {
        if self.rbias.load(Ordering::Relaxed) {
            if let Some(slot) = self.try_fast_read() {
                return Some(BravoReadGuard::new(self, ReadHold::Slot(slot)));
            }
        }
        if self.lock.try_lock_shared() {
            self.maybe_enable_bias();
            Some(BravoReadGuard::new(self, ReadHold::Shared))
        } else {
            None
        }
    }

    /// Exclusive access; blocks until every reader (fast or slow) and writer has left.
    #[inline]
    pub fn write(&self) -> BravoWriteGuard<'_, T> {
        self.lock.lock_exclusive();
        // Relaxed: `rbias` is written only under the underlying lock, which we hold, so
        // the last write to it happens-before this load.
        if self.rbias.load(Ordering::Relaxed) {
            self.revoke();
        }
        BravoWriteGuard { lock: self, _not_send: PhantomData }
    }

    /// Exclusive access if no one holds the lock now. If fast-path readers are present this
    /// still revokes the bias (so the next attempt does not wait for new fast readers), then
    /// fails.
    pub fn try_write(&self) -> Option<BravoWriteGuard<'_, T>> {
        if !self.lock.try_lock_exclusive() {
            return None;
        }
        // Relaxed: as in `write`, we hold the underlying lock.
        if self.rbias.load(Ordering::Relaxed) {
            // SeqCst: the writer side of the Dekker handshake; pairs with the reader's
            // SeqCst CAS + re-check in `try_fast_read` (see the module docs).
            self.rbias.store(false, Ordering::SeqCst);
            let id = self.id();
            // SeqCst: ordered after the clear above in the total order (handshake).
            if self.table.slots.iter().any(|s| s.load(Ordering::SeqCst) == id) {
                // SAFETY: we acquired the exclusive lock above and give it back once.
                unsafe { self.lock.unlock_exclusive() };
                return None;
            }
        }
        Some(BravoWriteGuard { lock: self, _not_send: PhantomData })
    }

    /// Publishes this thread as a fast-path reader; `Some(slot)` on success.
    #[inline]
    fn try_fast_read(&self) -> Option<usize> {
        let id = self.id();
        let idx = self.table.index(id);
        let slot = &self.table.slots[idx];
        // SeqCst: the reader side of the Dekker handshake: the publish must precede the
        // re-check of `rbias` in the total order; pairs with the SeqCst clear of `rbias`
        // and the SeqCst slot scan in `revoke`/`try_write`.
        if slot.compare_exchange(0, id, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
            // SeqCst: handshake re-check (above). Also acquire: a `true` read here comes
            // from a re-enable under the shared lock, after the last writer released, so
            // that writer's writes are visible to us.
            if self.rbias.load(Ordering::SeqCst) {
                return Some(idx);
            }
            // Release: we read nothing under this publication, but a writer scanning with
            // SeqCst loads must find the slot empty again; pairs with those loads.
            slot.store(0, Ordering::Release);
        }
        None
    }

    #[cold]
    fn read_slow(&self) -> BravoReadGuard<'_, T> {
        self.lock.lock_shared();
        self.maybe_enable_bias();
        BravoReadGuard::new(self, ReadHold::Shared)
    }

    /// Re-enables reader bias if it is off and the inhibition window has passed.
    /// Caller holds the underlying lock in shared mode.
    #[inline]
    fn maybe_enable_bias(&self) {
        // Relaxed (both loads): `rbias` and `inhibit_until` change only under the exclusive
        // lock, which happens-before our shared acquisition, or by other slow readers
        // storing the same value.
        if !self.rbias.load(Ordering::Relaxed)
            && now_ticks() >= self.inhibit_until.load(Ordering::Relaxed)
        {
            // Release: fast readers that acquire `true` must see the last writer's writes,
            // which happen-before us through the underlying lock; pairs with the SeqCst
            // (acquire) re-check in `try_fast_read`.
            self.rbias.store(true, Ordering::Release);
        }
    }

    /// Revokes reader bias and waits for fast-path readers to drain. Caller holds the
    /// underlying lock exclusively.
    #[cold]
    fn revoke(&self) {
        // SeqCst: the writer side of the Dekker handshake; pairs with the reader's SeqCst
        // CAS + re-check in `try_fast_read`.
        self.rbias.store(false, Ordering::SeqCst);
        let start = now_ticks();
        let id = self.id();
        for slot in self.table.slots.iter() {
            let mut spins = 0u32;
            // SeqCst: ordered after the clear above (handshake); also acquire: it reads the
            // reader's Release clear of its slot, so the reader's reads happen-before our
            // writes.
            while slot.load(Ordering::SeqCst) == id {
                backoff(&mut spins);
            }
        }
        let end = now_ticks();
        // Relaxed: read only by slow readers, who acquire the underlying lock after us.
        self.inhibit_until.store(inhibit_until(start, end), Ordering::Relaxed);
    }

    /// # Safety
    /// The caller holds a read lock acquired as `hold` and gives it up once.
    #[inline]
    unsafe fn unlock_read(&self, hold: ReadHold) {
        match hold {
            // Release: our reads of the data happen-before a revoking writer's SeqCst
            // (acquire) load that sees the slot empty; pairs with the scan in `revoke`.
            ReadHold::Slot(idx) => self.table.slots[idx].store(0, Ordering::Release),
            // SAFETY: per the contract, we hold the underlying lock in shared mode.
            ReadHold::Shared => unsafe { self.lock.unlock_shared() },
        }
    }
}

impl<T: Default> Default for Bravo<T> {
    fn default() -> Self {
        Bravo::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Bravo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Bravo");
        match self.try_read() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.field("rbias", &self.is_read_biased()).finish_non_exhaustive()
    }
}

/// Shared access to a [`Bravo`]-protected value; releases on drop.
#[must_use = "if unused the lock is released at once"]
pub struct BravoReadGuard<'a, T: ?Sized> {
    lock: &'a Bravo<T>,
    hold: ReadHold,
    /// `!Send`: the underlying lock's shared unlock must happen on the locking thread.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a `&BravoReadGuard` only gives `&T`, which is shareable when `T: Sync`.
unsafe impl<T: ?Sized + Sync> Sync for BravoReadGuard<'_, T> {}

impl<'a, T: ?Sized> BravoReadGuard<'a, T> {
    #[inline]
    fn new(lock: &'a Bravo<T>, hold: ReadHold) -> Self {
        BravoReadGuard { lock, hold, _not_send: PhantomData }
    }

    /// Whether this read took the biased fast path (a visible-readers slot).
    pub fn is_fast_path(&self) -> bool {
        matches!(self.hold, ReadHold::Slot(_))
    }
}

impl<T: ?Sized> Deref for BravoReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: we hold a read lock: no writer has `&mut T` until we drop.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for BravoReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard holds the read lock as `self.hold` and drops once.
        unsafe { self.lock.unlock_read(self.hold) }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for BravoReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Exclusive access to a [`Bravo`]-protected value; releases on drop.
#[must_use = "if unused the lock is released at once"]
pub struct BravoWriteGuard<'a, T: ?Sized> {
    lock: &'a Bravo<T>,
    /// `!Send`: the underlying exclusive unlock must happen on the locking thread.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a `&BravoWriteGuard` only gives `&T`, which is shareable when `T: Sync`.
unsafe impl<T: ?Sized + Sync> Sync for BravoWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for BravoWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: we hold the exclusive lock and no fast reader is published.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for BravoWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the exclusive lock and no fast reader is published, and
        // `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for BravoWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard holds the exclusive lock and drops once.
        unsafe { self.lock.lock.unlock_exclusive() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for BravoWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The end of the inhibition window after a revocation from `start` to `end`.
#[inline]
fn inhibit_until(start: u64, end: u64) -> u64 {
    end.saturating_add(end.saturating_sub(start).saturating_mul(INHIBIT_MULTIPLIER))
}

/// A cheap monotonic clock for the inhibition window, in unspecified ticks (only
/// differences and comparisons matter). On x86-64 this is the time-stamp counter, as in the
/// paper (invariant and synchronised across cores on current CPUs; a skew would only shift
/// the heuristic window): `Instant::now()` costs 3-4x more here, and slow-path readers read
/// the clock on every acquisition while the bias is off. Elsewhere, nanoseconds since the
/// first call.
#[inline]
fn now_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions and exists on every x86-64 CPU.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static BASE: OnceLock<Instant> = OnceLock::new();
        let base = *BASE.get_or_init(Instant::now);
        u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A per-thread identity: the address of a thread-local (unique among live threads).
#[inline]
fn thread_id() -> usize {
    thread_local! {
        static ANCHOR: u8 = const { 0 };
    }
    ANCHOR.with(|a| a as *const u8 as usize)
}

/// The SplitMix64 finalizer: spreads (thread, lock) pairs over the table.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Spin briefly, then yield: a writer waits for readers whose hold time we do not control.
#[inline]
fn backoff(spins: &mut u32) {
    if *spins < 64 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Barrier;
    use std::thread;

    #[test]
    fn read_then_write_roundtrip() {
        let lock = Bravo::with_table(5u64, Arc::new(VisibleReaders::new(64)));
        {
            let r = lock.read();
            assert!(r.is_fast_path(), "a fresh lock is read-biased");
            assert_eq!(*r, 5);
        }
        *lock.write() += 1;
        assert_eq!(*lock.read(), 6);
        assert_eq!(lock.into_inner(), 6);
    }

    #[test]
    fn table_rounds_up_to_power_of_two() {
        assert_eq!(VisibleReaders::new(0).len(), 1);
        assert_eq!(VisibleReaders::new(100).len(), 128);
        assert_eq!(VisibleReaders::new(4096).len(), 4096);
    }

    #[test]
    fn inhibit_window_is_nine_times_revocation() {
        assert_eq!(inhibit_until(100, 110), 110 + 90);
        assert_eq!(inhibit_until(7, 7), 7);
        assert_eq!(inhibit_until(0, u64::MAX), u64::MAX);
    }

    #[test]
    fn collision_falls_back_to_slow_path() {
        // One slot: the second reader (another lock, or a nested read) cannot publish.
        let table = Arc::new(VisibleReaders::new(1));
        let a = Bravo::with_table(1u8, table.clone());
        let b = Bravo::with_table(2u8, table.clone());
        let ra = a.read();
        assert!(ra.is_fast_path());
        let rb = b.read();
        assert!(!rb.is_fast_path(), "slot taken by lock a");
        assert_eq!((*ra, *rb), (1, 2));
        assert_eq!(table.occupied(), 1);
        drop(ra);
        drop(rb);
        assert_eq!(table.occupied(), 0, "fast readers clear their slot");
        assert!(b.read().is_fast_path());
    }

    #[test]
    fn try_write_revokes_bias_but_fails_while_fast_reader_present() {
        let table = Arc::new(VisibleReaders::new(64));
        let lock = Bravo::with_table(0u32, table.clone());
        let r = lock.read();
        assert!(r.is_fast_path());
        assert!(lock.try_write().is_none(), "a fast reader is published");
        assert!(!lock.is_read_biased(), "the failed attempt revoked the bias");
        // New readers now take the slow path.
        let r2 = lock.read();
        assert!(!r2.is_fast_path());
        assert!(lock.try_write().is_none(), "slow reader holds the underlying lock");
        drop(r);
        drop(r2);
        *lock.try_write().expect("no readers left") = 9;
        assert_eq!(table.occupied(), 0);
        assert_eq!(*lock.read(), 9);
    }

    /// The revocation path: a writer arriving while a fast-path reader holds the lock
    /// clears the bias, waits for the reader to leave (it cannot finish before), sets an
    /// inhibition window, and later slow readers re-enable the bias once it has passed.
    #[test]
    fn writer_revokes_bias_and_waits_for_fast_reader() {
        let table = Arc::new(VisibleReaders::new(64));
        let lock = Bravo::with_table(0u64, table.clone());
        let done = AtomicBool::new(false);
        let before = now_ticks();
        thread::scope(|s| {
            let r = lock.read();
            assert!(r.is_fast_path());
            let writer = s.spawn(|| {
                let mut w = lock.write();
                *w = 42;
                done.store(true, Ordering::SeqCst);
            });
            // Wait (by observing state, not by time) until the writer has revoked the bias.
            while lock.is_read_biased() {
                thread::yield_now();
            }
            // The writer is inside `revoke`, waiting for our slot: it cannot have finished.
            assert!(!done.load(Ordering::SeqCst), "writer ran while a fast reader held");
            assert_eq!(*r, 0);
            drop(r);
            writer.join().unwrap();
        });
        assert!(done.load(Ordering::SeqCst));
        let until = lock.inhibit_until.load(Ordering::Relaxed);
        assert!(until >= before, "revocation sets the inhibition window");
        // Slow readers re-enable the bias once the window has passed.
        loop {
            let r = lock.read();
            assert_eq!(*r, 42);
            if lock.is_read_biased() {
                assert!(now_ticks() >= until, "bias re-enabled inside the window");
                break;
            }
            assert!(!r.is_fast_path());
            drop(r);
            thread::yield_now();
        }
        assert!(lock.read().is_fast_path());
    }

    /// Readers check an invariant (all words equal) that writers break and restore under
    /// the write lock; a small table forces collisions and both read paths.
    fn stress(table_slots: usize, threads: usize, iters: usize, write_every: usize) -> usize {
        let table = Arc::new(VisibleReaders::new(table_slots));
        let lock = Bravo::with_table([0u64; 8], table.clone());
        let writes = AtomicUsize::new(0);
        let fast_reads = AtomicUsize::new(0);
        let barrier = Barrier::new(threads);
        thread::scope(|s| {
            for t in 0..threads {
                let (lock, writes, fast_reads, barrier) = (&lock, &writes, &fast_reads, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
                    for _ in 0..iters {
                        rng = mix64(rng);
                        if rng as usize % write_every == 0 {
                            let mut w = lock.write();
                            let next = w[0] + 1;
                            for (i, x) in w.iter_mut().enumerate() {
                                assert_eq!(*x + 1, next, "word {i} torn before write");
                                *x = next;
                                std::hint::black_box(&*x);
                            }
                            writes.fetch_add(1, Ordering::Relaxed);
                        } else {
                            let r = lock.read();
                            if r.is_fast_path() {
                                fast_reads.fetch_add(1, Ordering::Relaxed);
                            }
                            let first = r[0];
                            assert!(r.iter().all(|&x| x == first), "reader saw torn state {r:?}");
                        }
                    }
                });
            }
        });
        let total = writes.load(Ordering::Relaxed) as u64;
        assert_eq!(lock.read()[7], total, "every write counted once");
        assert_eq!(table.occupied(), 0, "no slot left published");
        fast_reads.into_inner()
    }

    #[test]
    fn stress_readers_and_writers() {
        let fast = stress(4096, 4, 200_000, 64);
        assert!(fast > 0, "the fast path was exercised");
    }

    #[test]
    fn stress_small_table_collisions() {
        stress(2, 6, 100_000, 16);
    }

    #[test]
    fn stress_write_heavy() {
        stress(64, 4, 100_000, 2);
    }
}
