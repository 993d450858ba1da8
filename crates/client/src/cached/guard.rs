//! [`CachedGuard`]: a lock of a [`CachedClient`](super::CachedClient).

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use rangelock::OwnedRangeGuard;
use rangelock_proto::Mode;

use super::client::Inner;
use super::handover::{Lost, Name};
use crate::error::{ClientError, ConnectionLoss};
use crate::guard::{grant_accessors, AsyncLockGuard};

/// A held lock of a [`CachedClient`](super::CachedClient). Dropping it releases the lock:
/// inside a kept extent only locally (the extent stays with the client), otherwise with an
/// `UNLOCK` sent without waiting for its answer, as [`AsyncLockGuard`] does.
#[derive(Debug)]
pub struct CachedGuard {
    inner: Arc<Inner>,
    name: Name,
    /// The server's lock of an uncached grant (or of an uncached client): released on drop.
    server: Option<AsyncLockGuard>,
    /// The hold of the in-process lock (none for an uncached client).
    local: Option<OwnedRangeGuard>,
    id: u64,
    token: u64,
    range: Range<u64>,
    mode: Mode,
    /// Inside a kept extent (the token is the extent's).
    kept: bool,
    /// Set if the lock the server held for it was lost (a cluster client could not carry
    /// it to a partition's new owner); `None` on a single server.
    lost: Option<Lost>,
}

impl CachedGuard {
    /// A lock inside kept extent `id` (token `token`): `local` is all there is to drop.
    pub(crate) fn kept(
        inner: Arc<Inner>,
        name: Name,
        local: OwnedRangeGuard,
        id: u64,
        token: u64,
        lost: Option<Lost>,
    ) -> Self {
        let (range, mode) = (local.range(), local.mode());
        let (server, local, kept) = (None, Some(local), true);
        CachedGuard { inner, name, server, local, id, token, range, mode, kept, lost }
    }

    /// An uncached grant of a cached client: the server's lock and the local one; `token`
    /// is the session's highest when the local lock was taken (`Handover::high`).
    pub(crate) fn exact(
        inner: Arc<Inner>,
        name: Name,
        server: AsyncLockGuard,
        local: OwnedRangeGuard,
        token: u64,
        lost: Option<Lost>,
    ) -> Self {
        let (id, range, mode) = (server.id(), server.range(), server.mode());
        let (server, local, kept) = (Some(server), Some(local), false);
        CachedGuard { inner, name, server, local, id, token, range, mode, kept, lost }
    }

    /// A lock of an uncached client: the server's lock only.
    pub(crate) fn plain(inner: Arc<Inner>, name: Name, server: AsyncLockGuard) -> Self {
        let (id, token, range, mode) = (server.id(), server.token(), server.range(), server.mode());
        let (server, local, kept, lost) = (Some(server), None, false, None);
        CachedGuard { inner, name, server, local, id, token, range, mode, kept, lost }
    }

    /// The fencing token to write with: the highest token the session had been granted
    /// when this guard was taken (its own grant's, its extent's, or a newer one of
    /// another of the client's locks). Tokens of a cached client's guards rise in the
    /// order they hold each unit, and every other client that holds the units later has
    /// a higher one (`docs/CACHING.md`, "Fencing tokens"). Pass it to storage so it can
    /// refuse a stale holder.
    pub fn token(&self) -> u64 {
        self.token
    }

    grant_accessors!(without_token);

    /// Whether the lock lies inside an extent the client keeps (dropping it sends
    /// nothing).
    pub fn is_kept(&self) -> bool {
        self.kept
    }

    /// The resource's name (empty: the unnamed resource).
    pub fn resource(&self) -> &[u8] {
        &self.name
    }

    /// Whether the lock is gone (another session may hold the range now: storage should
    /// refuse this guard's token): its session is gone, or, in a cluster, its partition
    /// moved or its node failed and the lock could not be carried to the new owner
    /// ([`CachedGuard::lost_reason`]).
    pub fn is_lost(&self) -> bool {
        match &self.lost {
            Some(lost) => lost.get().is_some(),
            None => !self.inner.client.is_connected(),
        }
    }

    /// In a cluster, why the lock was lost, once it is.
    pub fn lost_reason(&self) -> Option<crate::cluster::LostReason> {
        self.lost.as_ref()?.get().cloned()
    }

    /// In a cluster, completes when the lock is lost ([`CachedGuard::lost_reason`]); never
    /// while it is held. (A single server's lost session: [`CachedGuard::is_lost`].)
    pub async fn lost(&self) -> crate::cluster::LostReason {
        match &self.lost {
            Some(lost) => lost.wait().await,
            None => std::future::pending().await,
        }
    }

    /// How the session was lost, once it is.
    pub fn loss(&self) -> Option<ConnectionLoss> {
        self.inner.client.loss()
    }

    /// Releases the lock; for a lock the server holds for it alone, waits for the server
    /// to confirm.
    pub async fn unlock(mut self) -> Result<(), ClientError> {
        let server = self.server.take();
        let result = match server {
            Some(s) => s.unlock().await,
            None => Ok(()),
        };
        self.release_local();
        result
    }

    fn release_local(&mut self) {
        if let Some(local) = self.local.take() {
            if !self.kept {
                self.inner.handover.exact_released(self.id);
            }
            drop(local);
            self.inner.handover.released(&self.name, &self.range, Instant::now());
        }
    }
}

impl Drop for CachedGuard {
    fn drop(&mut self) {
        // The UNLOCK first, then the local hold: a local locker after us is then ordered
        // after the unlock at the server too.
        drop(self.server.take());
        self.release_local();
    }
}
