//! The drain list: actions deferred until an epoch is safe.

use crossbeam_utils::CachePadded;

use crate::primitive::{AtomicUsize, Mutex, Ordering};

/// An action queued by `bump_with`, runnable once `epoch` is safe.
struct Deferred {
    epoch: u64,
    action: Box<dyn FnOnce() + Send>,
}

/// Deferred actions, in the order they were queued.
///
/// Unlike FASTER's fixed array, the list never fills up: a burst of bumps grows it instead
/// of spinning. It is touched only by `bump_with` and by drains, never on the
/// protect/refresh/release fast path, which reads only the `pending` count.
pub(crate) struct DrainList {
    queue: Mutex<Vec<Deferred>>,
    /// Number of queued actions; read with Relaxed on the fast path as a hint.
    pending: CachePadded<AtomicUsize>,
}

impl DrainList {
    pub(crate) fn new() -> Self {
        DrainList { queue: Mutex::new(Vec::new()), pending: CachePadded::new(AtomicUsize::new(0)) }
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
    }

    /// Whether some queued action's epoch is `<= safe`.
    pub(crate) fn any_ready(&self, safe: u64) -> bool {
        lock(&self.queue).iter().any(|d| d.epoch <= safe)
    }

    /// Runs every queued action whose epoch is `<= safe`, outside the queue's lock.
    ///
    /// The lock is held only to split the queue, so a drain never waits for an action, and
    /// the thread that queued an action always gets to test it (no lost drains).
    pub(crate) fn run_ready(&self, safe: u64) {
        let ready: Vec<Deferred> = {
            let mut queue = lock(&self.queue);
            if queue.iter().all(|d| d.epoch > safe) {
                return;
            }
            let (ready, rest): (Vec<_>, Vec<_>) =
                std::mem::take(&mut *queue).into_iter().partition(|d| d.epoch <= safe);
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
        for d in all {
            (d.action)();
        }
    }
}

/// Locks the queue; a panic inside an action never holds the lock, so poisoning can only
/// come from a panic in `Vec` bookkeeping, after which the queue is still consistent.
fn lock<T>(m: &Mutex<T>) -> crate::primitive::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
