//! The drain list: actions deferred until an epoch is safe.

use crossbeam_utils::CachePadded;

use crate::primitive::{AtomicU64, AtomicUsize, Mutex, Ordering};

/// An action queued by `bump_with`, runnable once `epoch` is safe.
struct Deferred {
    epoch: u64,
    action: Box<dyn FnOnce() + Send>,
}

/// Deferred actions, in the order they were queued.
///
/// Unlike FASTER's fixed array, the list never fills up: a burst of bumps grows it instead
/// of spinning. It is touched only by `bump_with` and by drains, never on the
/// protect/refresh/release fast path, which reads only the `pending` count. The drains of
/// releases and refreshes ([`Wait::No`]) take its lock only if some action may be ready
/// (`oldest`) and nobody holds it: a thread that ends a region never sleeps behind a
/// holder that was preempted.
pub(crate) struct DrainList {
    queue: Mutex<Vec<Deferred>>,
    /// Number of queued actions; read with Relaxed on the fast path as a hint.
    pending: CachePadded<AtomicUsize>,
    /// The smallest epoch of a queued action (`u64::MAX` if none), written only under the
    /// queue's lock, so exact whenever the lock is free: a drain that does not wait reads
    /// it first and leaves the lock alone while nothing can be ready.
    oldest: CachePadded<AtomicU64>,
}

impl DrainList {
    pub(crate) fn new() -> Self {
        DrainList {
            queue: Mutex::new(Vec::new()),
            pending: CachePadded::new(AtomicUsize::new(0)),
            oldest: CachePadded::new(AtomicU64::new(u64::MAX)),
        }
    }

    /// With [`Wait::No`], whether no queued action can be ready at `safe` (a hint: the
    /// lock decides). Drains that wait do not skip on a hint.
    #[inline]
    fn skip(&self, safe: u64, wait: Wait) -> bool {
        // Relaxed: a hint; a stale value only skips a drain that does not wait anyway.
        wait == Wait::No && self.oldest.load(Ordering::Relaxed) > safe
    }

    /// Whether any action is queued (a hint: it may be stale by the time it is used).
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed) != 0
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    pub(crate) fn push(&self, epoch: u64, action: Box<dyn FnOnce() + Send>) {
        let mut queue = lock(&self.queue);
        queue.push(Deferred { epoch, action });
        self.pending.fetch_add(1, Ordering::Relaxed);
        // Relaxed: written only under the lock (its release publishes it to the next
        // holder); readers outside it take it as a hint.
        if epoch < self.oldest.load(Ordering::Relaxed) {
            self.oldest.store(epoch, Ordering::Relaxed);
        }
    }

    /// Whether some queued action's epoch is `<= safe`; `false` without looking if `wait`
    /// is [`Wait::No`] and another thread holds the queue.
    pub(crate) fn any_ready(&self, safe: u64, wait: Wait) -> bool {
        if self.skip(safe, wait) {
            return false;
        }
        queue(&self.queue, wait).is_some_and(|queue| queue.iter().any(|d| d.epoch <= safe))
    }

    /// Runs every queued action whose epoch is `<= safe`, outside the queue's lock; nothing
    /// if `wait` is [`Wait::No`] and another thread holds the queue.
    ///
    /// The lock is held only to split the queue, so a drain never waits for an action, and
    /// the thread that queued an action always gets to test it with [`Wait::Yes`] (no lost
    /// drains).
    pub(crate) fn run_ready(&self, safe: u64, wait: Wait) {
        if self.skip(safe, wait) {
            return;
        }
        let ready: Vec<Deferred> = {
            let Some(mut queue) = queue(&self.queue, wait) else { return };
            if queue.iter().all(|d| d.epoch > safe) {
                return;
            }
            let (ready, rest): (Vec<_>, Vec<_>) =
                std::mem::take(&mut *queue).into_iter().partition(|d| d.epoch <= safe);
            let oldest = rest.iter().map(|d| d.epoch).min().unwrap_or(u64::MAX);
            // Relaxed: as in `push`.
            self.oldest.store(oldest, Ordering::Relaxed);
            *queue = rest;
            self.pending.fetch_sub(ready.len(), Ordering::Relaxed);
            ready
        };
        for d in ready {
            (d.action)();
        }
    }

    /// Runs every queued action regardless of epochs; for `Drop` of the owning instance,
    /// when no guard can exist any more.
    pub(crate) fn run_all(&mut self) {
        let all = std::mem::take(&mut *lock(&self.queue));
        self.pending.store(0, Ordering::Relaxed);
        self.oldest.store(u64::MAX, Ordering::Relaxed);
        for d in all {
            (d.action)();
        }
    }
}

/// Whether a drain waits for the queue's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait: explicit drains and `bump_with`.
    Yes,
    /// Skip the drain if another thread holds the queue: the drains of releases and
    /// refreshes, which must not sleep behind a holder that was preempted (the holder,
    /// or the next drain, runs what is ready).
    No,
}

/// Locks the queue; a panic inside an action never holds the lock, so poisoning can only
/// come from a panic in `Vec` bookkeeping, after which the queue is still consistent.
fn lock<T>(m: &Mutex<T>) -> crate::primitive::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`lock`], or with [`Wait::No`] the queue only if nobody holds it.
fn queue<T>(m: &Mutex<T>, wait: Wait) -> Option<crate::primitive::MutexGuard<'_, T>> {
    match wait {
        Wait::Yes => Some(lock(m)),
        Wait::No => match m.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        },
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::AtomicUsize as Count;
    use std::sync::Arc;

    use super::*;

    /// An action that counts its runs in `runs`.
    fn counting(runs: &Arc<Count>) -> Box<dyn FnOnce() + Send> {
        let runs = Arc::clone(runs);
        Box::new(move || {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
    }

    fn runs(runs: &Arc<Count>) -> usize {
        runs.load(std::sync::atomic::Ordering::SeqCst)
    }

    #[test]
    fn a_drain_that_does_not_wait_skips_a_list_another_thread_holds() {
        let list = DrainList::new();
        let ran = Arc::new(Count::new(0));
        list.push(1, counting(&ran));
        let held = lock(&list.queue);
        // Held (by this thread, standing for another): a waiting drain would never return.
        list.run_ready(5, Wait::No);
        assert!(!list.any_ready(5, Wait::No));
        drop(held);
        assert_eq!((runs(&ran), list.pending()), (0, 1));
        assert!(list.any_ready(5, Wait::No));
        list.run_ready(5, Wait::No);
        assert_eq!((runs(&ran), list.pending()), (1, 0));
    }

    #[test]
    fn the_oldest_epoch_follows_pushes_and_drains() {
        let mut list = DrainList::new();
        let ran = Arc::new(Count::new(0));
        assert_eq!(list.oldest.load(Ordering::SeqCst), u64::MAX);
        list.push(5, counting(&ran));
        list.push(3, counting(&ran));
        assert_eq!(list.oldest.load(Ordering::SeqCst), 3);
        list.run_ready(4, Wait::No);
        assert_eq!((runs(&ran), list.oldest.load(Ordering::SeqCst)), (1, 5));
        // Nothing ready at 4 any more: skipped on the hint, and by a waiting drain too.
        list.run_ready(4, Wait::No);
        list.run_ready(4, Wait::Yes);
        assert_eq!(runs(&ran), 1);
        list.run_ready(5, Wait::Yes);
        assert_eq!((runs(&ran), list.oldest.load(Ordering::SeqCst)), (2, u64::MAX));
        list.push(7, counting(&ran));
        list.run_all();
        assert_eq!((runs(&ran), list.oldest.load(Ordering::SeqCst)), (3, u64::MAX));
    }
}
