//! [`GuardState`]: the pieces of one cluster guard, where each lives now, and whether the
//! guard is lost. Shared by the [`ClusterGuard`](super::ClusterGuard), the acquisition
//! and the reclaim tasks.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rangelock_proto::Mode;
use tokio::sync::Notify;

use super::error::LostReason;
use super::guard::GuardPiece;
use crate::guard::AsyncLockGuard;

type LostCallback = Box<dyn FnOnce(&LostReason) + Send + 'static>;

/// A piece held on a node: the connection's serial and the node-level lock.
#[derive(Debug)]
struct Held {
    serial: u64,
    lock: AsyncLockGuard,
}

/// One piece of the guard's range, in one partition.
#[derive(Debug)]
struct Slot {
    partition: u32,
    range: Range<u64>,
    /// The fencing token: granted once, kept by every reclaim.
    token: u64,
    /// Where the piece lives now; `None` while it is being reclaimed (or after the guard
    /// ended).
    at: Option<Held>,
    /// When it was last detached from its node (to be reclaimed).
    detached_at: Option<Instant>,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    lost: Option<LostReason>,
    /// Unlocked or dropped (or abandoned by a failed acquisition): nothing more is
    /// reclaimed, and the guard can no longer be lost.
    released: bool,
    callbacks: Vec<LostCallback>,
    /// Connections the guard was noted on in the registry.
    conns: BTreeSet<u64>,
}

/// See the module docs.
#[derive(Debug)]
pub(super) struct GuardState {
    /// Unique per client (the registry's key).
    pub(super) id: u64,
    pub(super) range: Range<u64>,
    pub(super) mode: Mode,
    /// The resource's name and its placement hash; `None`: the unnamed resource.
    pub(super) name: Option<(Arc<[u8]>, u64)>,
    inner: Mutex<Inner>,
    /// Woken when the guard is lost.
    lost: Notify,
    /// Woken when a piece is reattached or the guard is lost (see [`GuardState::settle`]).
    settled: Notify,
}

impl core::fmt::Debug for Inner {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Inner")
            .field("slots", &self.slots)
            .field("lost", &self.lost)
            .field("released", &self.released)
            .field("callbacks", &self.callbacks.len())
            .finish()
    }
}

impl GuardState {
    pub(super) fn new(
        id: u64,
        range: Range<u64>,
        mode: Mode,
        name: Option<(Arc<[u8]>, u64)>,
    ) -> GuardState {
        GuardState {
            id,
            range,
            mode,
            name,
            inner: Mutex::default(),
            lost: Notify::new(),
            settled: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state, while the guard is live: neither released nor lost.
    fn live(&self) -> Option<MutexGuard<'_, Inner>> {
        Some(self.lock()).filter(|inner| !inner.released && inner.lost.is_none())
    }

    /// Adds an acquired piece living on connection `serial`; gives the lock back if the
    /// guard is already released or lost (the caller releases it).
    pub(super) fn add_piece(
        &self,
        partition: u32,
        serial: u64,
        lock: AsyncLockGuard,
    ) -> Result<(), AsyncLockGuard> {
        let Some(mut inner) = self.live() else { return Err(lock) };
        inner.conns.insert(serial);
        let (range, token) = (lock.range(), lock.token());
        let at = Some(Held { serial, lock });
        inner.slots.push(Slot { partition, range, token, at, detached_at: None });
        Ok(())
    }

    /// Adds a piece that lives on no node yet: one to reclaim (`super::relocate` carries a
    /// cached client's lock to a partition's new owner this way).
    pub(super) fn add_detached(&self, partition: u32, range: Range<u64>, token: u64) {
        let Some(mut inner) = self.live() else { return };
        let detached_at = Some(Instant::now());
        inner.slots.push(Slot { partition, range, token, at: None, detached_at });
    }

    /// Detaches the pieces living on connection `serial` in a partition `covers` accepts:
    /// the node dropped them, or the connection is gone. Returns their indexes, to be
    /// reclaimed. Nothing once the guard is released or lost.
    pub(super) fn detach(&self, serial: u64, covers: impl Fn(u32) -> bool) -> Vec<usize> {
        let Some(mut inner) = self.live() else { return Vec::new() };
        let mut taken = Vec::new();
        for (i, slot) in inner.slots.iter_mut().enumerate() {
            if slot.at.as_ref().is_some_and(|h| h.serial == serial) && covers(slot.partition) {
                let held = slot.at.take().expect("checked");
                // The node no longer has it: no UNLOCK to send.
                held.lock.forget();
                slot.detached_at = Some(Instant::now());
                taken.push(i);
            }
        }
        taken
    }

    /// What to reclaim for piece `i` (partition, range, token), while it still needs it:
    /// detached, and the guard neither released nor lost.
    pub(super) fn wanted(&self, i: usize) -> Option<(u32, Range<u64>, u64)> {
        let inner = self.live()?;
        let slot = inner.slots.get(i)?;
        slot.at.is_none().then(|| (slot.partition, slot.range.clone(), slot.token))
    }

    /// When piece `i` was last detached from its node (now, if it never was).
    pub(super) fn detached_at(&self, i: usize) -> Instant {
        let inner = self.lock();
        inner.slots.get(i).and_then(|s| s.detached_at).unwrap_or_else(Instant::now)
    }

    /// Piece `i` was reclaimed on connection `serial`; gives the lock back if it is no
    /// longer wanted (the caller releases it).
    pub(super) fn reattach(
        &self,
        i: usize,
        serial: u64,
        lock: AsyncLockGuard,
    ) -> Result<(), AsyncLockGuard> {
        let Some(mut inner) = self.live() else { return Err(lock) };
        inner.conns.insert(serial);
        match inner.slots.get_mut(i) {
            Some(slot) if slot.at.is_none() => {
                slot.at = Some(Held { serial, lock });
                drop(inner);
                self.settled.notify_waiters();
                Ok(())
            }
            _ => Err(lock),
        }
    }

    /// Marks the guard lost (the first reason wins; nothing once it is released):
    /// releases its other pieces best-effort, runs the callbacks (outside the lock) and
    /// then wakes [`GuardState::wait_lost`].
    pub(super) fn lose(&self, reason: LostReason) {
        let (held, callbacks) = {
            let Some(mut inner) = self.live() else { return };
            tracing::warn!(guard = self.id, range = ?self.range, %reason, "cluster lock lost");
            inner.lost = Some(reason.clone());
            let held: Vec<Held> = inner.slots.iter_mut().filter_map(|s| s.at.take()).collect();
            (held, std::mem::take(&mut inner.callbacks))
        };
        // Dropping a node-level guard sends its UNLOCK without waiting.
        drop(held);
        for f in callbacks {
            // A panicking callback must not stop the others, nor the reclaim task.
            let run = std::panic::AssertUnwindSafe(|| f(&reason));
            if std::panic::catch_unwind(run).is_err() {
                tracing::error!(guard = self.id, "an on_lost callback panicked");
            }
        }
        // After the callbacks: a task woken by `lost()` finds them done.
        self.lost.notify_waiters();
        self.settled.notify_waiters();
    }

    /// Completes when no piece is being reclaimed: every piece lives on a node, or the
    /// guard is lost or released. (A reclaim ends within the reclaim window.)
    pub(super) async fn settle(&self) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            // Registered before the check, so a change in between still wakes us.
            notified.as_mut().enable();
            {
                let inner = self.lock();
                if inner.released
                    || inner.lost.is_some()
                    || inner.slots.iter().all(|s| s.at.is_some())
                {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Ends the guard: nothing more is reclaimed and it can no longer be lost. Returns the
    /// node-level locks still held, with their partitions, for the caller to release.
    pub(super) fn release(&self) -> Vec<(u32, AsyncLockGuard)> {
        let mut inner = self.lock();
        inner.released = true;
        inner.callbacks.clear();
        inner.slots.iter_mut().filter_map(|s| Some((s.partition, s.at.take()?.lock))).collect()
    }

    /// The connections the guard was ever noted on.
    pub(super) fn conns(&self) -> Vec<u64> {
        self.lock().conns.iter().copied().collect()
    }

    pub(super) fn lost_reason(&self) -> Option<LostReason> {
        self.lock().lost.clone()
    }

    pub(super) fn pieces(&self) -> Vec<GuardPiece> {
        let inner = self.lock();
        let piece = |s: &Slot| GuardPiece {
            partition: s.partition,
            range: s.range.clone(),
            token: s.token,
        };
        inner.slots.iter().map(piece).collect()
    }

    /// Runs `f` once the guard is lost; at once if it already is. Never, if the guard is
    /// released first.
    pub(super) fn on_lost(&self, f: LostCallback) {
        let mut inner = self.lock();
        match inner.lost.clone() {
            Some(reason) => {
                drop(inner);
                f(&reason);
            }
            None if inner.released => {}
            None => inner.callbacks.push(f),
        }
    }

    /// Completes when the guard is lost.
    pub(super) async fn wait_lost(&self) -> LostReason {
        loop {
            let notified = self.lost.notified();
            tokio::pin!(notified);
            // Registered before the check, so a loss in between still wakes us.
            notified.as_mut().enable();
            if let Some(reason) = self.lost_reason() {
                return reason;
            }
            notified.await;
        }
    }
}
