//! [`ClusterGuard`]: a held range of a cluster, one node-level lock per partition.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use rangelock_proto::Mode;
use tokio::task::JoinSet;

use super::client::Shared;
use super::error::{ClusterError, LostCause, LostReason};
use super::state::GuardState;
use crate::error::ClientError;
use crate::guard::AsyncLockGuard;

/// One piece of a [`ClusterGuard`]: the part of its range in one partition, and the
/// fencing token it was granted there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardPiece {
    /// The partition.
    pub partition: u32,
    /// The part of the guard's range in the partition.
    pub range: Range<u64>,
    /// The piece's fencing token, `epoch << 32 | seq` of its partition
    /// ([`rangelock_proto::token`]). A reclaim keeps it. Compare it only with tokens of the
    /// same partition.
    pub token: u64,
}

/// A range held in a cluster: one lock per partition the range touches, each at that
/// partition's owner, each with its own fencing token ([`ClusterGuard::pieces`]).
///
/// Dropping the guard releases every piece (the `UNLOCK`s are sent without waiting for
/// their answers); [`ClusterGuard::unlock`] releases and waits. While the guard lives,
/// the client reclaims its pieces at the new owner when a node fails or gives a partition
/// up; if that fails the guard is **lost**, and says so (see the [module
/// docs](super#a-lost-guard)): check [`ClusterGuard::check`] before you act on the
/// guarded resource, or react in [`ClusterGuard::on_lost`] / [`ClusterGuard::lost`].
pub struct ClusterGuard {
    state: Arc<GuardState>,
    shared: Arc<Shared>,
    /// Released (unlock or a failed acquisition): the drop has nothing left to do.
    ended: bool,
}

impl core::fmt::Debug for ClusterGuard {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClusterGuard")
            .field("range", &self.state.range)
            .field("mode", &self.state.mode)
            .field("pieces", &self.state.pieces())
            .field("lost", &self.state.lost_reason())
            .finish()
    }
}

impl ClusterGuard {
    /// A guard with no pieces yet (the acquisition adds them), on the resource `name`
    /// (with its placement hash; `None`: the unnamed resource).
    pub(super) fn new(
        shared: &Arc<Shared>,
        range: Range<u64>,
        mode: Mode,
        name: Option<(Arc<[u8]>, u64)>,
    ) -> ClusterGuard {
        let state = Arc::new(GuardState::new(shared.next_guard_id(), range, mode, name));
        ClusterGuard { state, shared: shared.clone(), ended: false }
    }

    /// The name of the locked resource; `None`: the unnamed resource.
    pub fn name(&self) -> Option<&[u8]> {
        self.state.name.as_ref().map(|(name, _)| &**name)
    }

    pub(super) fn state(&self) -> &Arc<GuardState> {
        &self.state
    }

    /// The locked range.
    pub fn range(&self) -> Range<u64> {
        self.state.range.clone()
    }

    /// Shared or exclusive.
    pub fn mode(&self) -> Mode {
        self.state.mode
    }

    /// The pieces, in ascending partition order, each with its fencing token.
    pub fn pieces(&self) -> Vec<GuardPiece> {
        self.state.pieces()
    }

    /// Whether the guard is lost: a piece could not be reclaimed. Its other pieces have
    /// been released; you no longer hold the range.
    pub fn is_lost(&self) -> bool {
        self.state.lost_reason().is_some()
    }

    /// `Err(ClusterError::Lost(reason))` once the guard is lost, else `Ok(())`.
    ///
    /// An `Ok` is no proof that the pieces are held at this instant (a node may have
    /// failed a moment ago, and the reclaim is under way): fence writes with the tokens.
    pub fn check(&self) -> Result<(), ClusterError> {
        match self.state.lost_reason() {
            Some(reason) => Err(ClusterError::Lost(reason)),
            None => Ok(()),
        }
    }

    /// Completes when the guard is lost (at once if it already is); never while it is
    /// held.
    pub async fn lost(&self) -> LostReason {
        self.state.wait_lost().await
    }

    /// Runs `f` once when the guard is lost, on the task that found it (keep it short and
    /// non-blocking; a panic there is caught and logged); at once, on this thread, if it
    /// already is. Never, if the guard is released first. Any number of callbacks may be
    /// registered.
    pub fn on_lost(&self, f: impl FnOnce(&LostReason) + Send + 'static) {
        self.state.on_lost(Box::new(f));
    }

    /// Releases every piece at the node it lives on now and waits for the answers.
    ///
    /// Errors: [`ClusterError::Lost`] if the guard was lost (its pieces were already
    /// released); otherwise the first failure a node reported. A piece the node already
    /// released (`ALREADY_RELEASED`), or whose connection is gone (the session's locks
    /// went with it), counts as released.
    pub async fn unlock(mut self) -> Result<(), ClusterError> {
        // A piece being reclaimed ends placed or lost (within the reclaim window): wait,
        // so that a loss is reported instead of hidden by the release.
        let window = self.shared.options.reclaim_window + Duration::from_secs(1);
        let _ = tokio::time::timeout(window, self.state.settle()).await;
        let lost = self.state.lost_reason();
        let locks = self.end();
        if let Some(reason) = lost {
            return Err(ClusterError::Lost(reason));
        }
        unlock_all(locks).await
    }

    /// Releases the pieces of a failed acquisition, waiting for the answers (so that the
    /// range is free when the error reaches the caller).
    pub(super) async fn abandon(mut self) {
        let _ = unlock_all(self.end()).await;
    }

    /// Ends the guard (no more reclaims, no loss) and returns the locks still held.
    fn end(&mut self) -> Vec<(u32, AsyncLockGuard)> {
        self.ended = true;
        let locks = self.state.release();
        for serial in self.state.conns() {
            self.shared.registry.remove(serial, self.state.id);
        }
        locks
    }
}

/// Releases `locks` concurrently and waits for every answer; the first failure wins.
/// A piece whose connection is gone counts as released, unless the session ended
/// because its lease lapsed: the node released the lock while this guard still held it,
/// so the guard was lost ([`LostCause::SessionLapsed`]).
async fn unlock_all(locks: Vec<(u32, AsyncLockGuard)>) -> Result<(), ClusterError> {
    let mut unlocks = JoinSet::new();
    for (partition, lock) in locks {
        unlocks.spawn(async move { (partition, lock.unlock_or_loss().await) });
    }
    let mut first = None;
    while let Some(joined) = unlocks.join_next().await {
        let failure = match joined {
            Ok((_, Ok(()))) => continue,
            Ok((partition, Err((ClientError::ConnectionLost, loss)))) => {
                match loss.filter(|l| l.lease_lapsed()) {
                    Some(l) => ClusterError::Lost(LostReason {
                        partition,
                        cause: LostCause::SessionLapsed,
                        safe_until: l.alive_at + l.lease,
                    }),
                    None => continue,
                }
            }
            Ok((_, Err((ClientError::Server(status), _)))) => ClusterError::Server(status),
            Ok((_, Err((e, _)))) => ClusterError::Client(e),
            Err(e) => ClusterError::Client(ClientError::Io(std::io::Error::other(e))),
        };
        first.get_or_insert(failure);
    }
    first.map_or(Ok(()), Err)
}

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        if !self.ended {
            // Dropping the node-level guards sends their UNLOCKs.
            drop(self.end());
        }
    }
}
