//! The lock: bias flag, underlying reader-writer lock, and the guards.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::clock::{backoff, inhibit_until, now_ticks};
use crate::primitive::{handshake_fence, Arc, AtomicBool, AtomicU64, Ordering, RawRwLock};
use crate::table::VisibleReaders;

/// A biased reader-writer lock protecting a `T`: see the [crate docs](crate).
pub struct Bravo<T: ?Sized> {
    /// Reader bias. `true`: readers may use the visible-readers table. Set only by a slow
    /// reader holding the shared lock, cleared only by a writer holding the exclusive lock.
    rbias: AtomicBool,
    /// Bias may not be re-enabled before this time ([`now_ticks`] units). Written only under
    /// the exclusive lock.
    pub(crate) inhibit_until: AtomicU64,
    /// Where fast-path readers announce themselves.
    table: Arc<VisibleReaders>,
    /// The underlying lock: slow readers and all writers.
    lock: RawRwLock,
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
    #[cfg(not(loom))]
    pub fn new(value: T) -> Self {
        Self::with_table(value, VisibleReaders::global())
    }

    /// A lock using `table` for its fast-path readers.
    pub fn with_table(value: T, table: Arc<VisibleReaders>) -> Self {
        Bravo {
            rbias: AtomicBool::new(true),
            inhibit_until: AtomicU64::new(0),
            table,
            lock: RawRwLock::new(),
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
            // SeqCst CAS + re-check in `try_fast_read` (see the crate docs).
            self.rbias.store(false, Ordering::SeqCst);
            handshake_fence();
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
            handshake_fence();
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
        handshake_fence();
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

#[cfg(not(loom))]
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
