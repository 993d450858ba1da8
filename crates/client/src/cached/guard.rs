//! [`CachedGuard`]: a lock of a [`CachedClient`](super::CachedClient).

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use rangelock::OwnedRangeGuard;
use rangelock_proto::Mode;

use super::client::Inner;
use super::handover::Name;
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
}

impl CachedGuard {
    /// A lock inside kept extent `id` (token `token`): `local` is all there is to drop.
    pub(crate) fn kept(
        inner: Arc<Inner>,
        name: Name,
        local: OwnedRangeGuard,
        id: u64,
        token: u64,
    ) -> Self {
        let (range, mode) = (local.range(), local.mode());
        let kept = true;
        CachedGuard { inner, name, server: None, local: Some(local), id, token, range, mode, kept }
    }

    /// An uncached grant of a cached client: the server's lock and the local one; `token`
    /// is the session's highest when the local lock was taken (`Handover::token_now`).
    pub(crate) fn exact(
        inner: Arc<Inner>,
        name: Name,
        server: AsyncLockGuard,
        local: OwnedRangeGuard,
        token: u64,
    ) -> Self {
        let (id, range, mode) = (server.id(), server.range(), server.mode());
        let (local, kept) = (Some(local), false);
        CachedGuard { inner, name, server: Some(server), local, id, token, range, mode, kept }
    }

    /// A lock of an uncached client: the server's lock only.
    pub(crate) fn plain(inner: Arc<Inner>, name: Name, server: AsyncLockGuard) -> Self {
        let (id, token, range, mode) = (server.id(), server.token(), server.range(), server.mode());
        let (local, kept) = (None, false);
        CachedGuard { inner, name, server: Some(server), local, id, token, range, mode, kept }
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

    /// Whether the session is gone, and with it this lock (another session may hold the
    /// range now: storage should refuse this guard's token).
    pub fn is_lost(&self) -> bool {
        !self.inner.client.is_connected()
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
