//! Lock guards.

use std::ops::Range;
use std::sync::Arc;

use rangelock_proto::{Mode, Request};

use crate::connection::Core;
use crate::error::ClientError;

/// The accessors of a grant that both guard types have (`token`, `range`, `mode`, `id`,
/// over fields of those names).
macro_rules! grant_accessors {
    () => {
        /// The fencing token of this grant: strictly greater than every token the server
        /// handed out before it. Pass it to storage so it can refuse a stale holder.
        pub fn token(&self) -> u64 {
            self.token
        }

        grant_accessors!(without_token);
    };
    (without_token) => {
        /// The locked range.
        pub fn range(&self) -> Range<u64> {
            self.range.clone()
        }

        /// Shared or exclusive.
        pub fn mode(&self) -> Mode {
            self.mode
        }

        /// The request id naming this lock in its session.
        pub fn id(&self) -> u64 {
            self.id
        }
    };
}
pub(crate) use grant_accessors;

/// A held range lock. Dropping it releases the lock (the `UNLOCK` is sent without waiting
/// for its answer); [`AsyncLockGuard::unlock`] releases and waits for the answer.
#[derive(Debug)]
pub struct AsyncLockGuard {
    core: Arc<Core>,
    id: u64,
    token: u64,
    range: Range<u64>,
    mode: Mode,
    released: bool,
}

impl AsyncLockGuard {
    pub(crate) fn new(core: Arc<Core>, id: u64, token: u64, range: Range<u64>, mode: Mode) -> Self {
        AsyncLockGuard { core, id, token, range, mode, released: false }
    }

    grant_accessors!();

    /// Forgets the lock without sending `UNLOCK`: the server already dropped it (a cluster
    /// node gave its partition up) or the session is gone.
    pub(crate) fn forget(mut self) {
        self.released = true;
    }

    /// Releases the lock and waits for the server to confirm.
    pub async fn unlock(mut self) -> Result<(), ClientError> {
        self.released = true;
        self.core.unlock(self.id).await
    }

    /// Like [`AsyncLockGuard::unlock`], and when the connection is gone, how it was lost
    /// (so a cluster guard can tell a lapsed session from a dead node).
    pub(crate) async fn unlock_or_loss(
        mut self,
    ) -> Result<(), (ClientError, Option<crate::ConnectionLoss>)> {
        self.released = true;
        let core = self.core.clone();
        core.unlock(self.id).await.map_err(|e| (e, core.loss()))
    }
}

impl Drop for AsyncLockGuard {
    fn drop(&mut self) {
        if !self.released {
            self.core.send_and_forget(Request::Unlock { target: self.id });
        }
    }
}
