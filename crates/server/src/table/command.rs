//! The operations handlers submit to a lock table.

use super::partitions::{HandoverLock, PartitionChange};
use crate::metrics::EngineSnapshot;
use crate::protocol::{Mode, ResponseFrame, StatsBody};
pub use crate::reply::{ReplySink, ReplyTo};

/// Which stats answer a [`Command::Stats`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsKind {
    /// `STATS`: counters and entries, without names.
    Plain,
    /// `STATS_NAMED` (version 5): with the names and their counters.
    Named,
    /// `STATS_CACHED` (version 6): as `Named`, with the cache's counters and kept extents
    /// marked.
    Cached,
}

impl StatsKind {
    /// Whether the answer lists names (and counts them).
    pub fn named(self) -> bool {
        self != StatsKind::Plain
    }

    /// The answer to request `id` with `body`.
    pub fn answer(self, id: u64, body: StatsBody) -> ResponseFrame {
        match self {
            StatsKind::Plain => ResponseFrame::stats(id, body),
            StatsKind::Named => ResponseFrame::stats_named(id, body),
            StatsKind::Cached => ResponseFrame::stats_cached(id, body),
        }
    }
}

/// One unit of work for a [`LockTable`](super::LockTable). Every command carrying a request
/// id is answered on the session's [`ReplySink`].
#[derive(Debug)]
pub enum Command {
    /// A session opened; its responses go to `sink`.
    Open {
        /// Session id.
        session: u64,
        /// The session's response channel.
        sink: ReplySink,
    },
    /// The session's connection is over, but its locks stay until [`Command::Close`]: its
    /// responses are dropped from now on (a caching session the server ended on its own,
    /// whose client may use its kept extents until its lease is over: docs/CACHING.md).
    Detach {
        /// Session id.
        session: u64,
    },
    /// `LOCK` (range already validated).
    Lock {
        /// Session id.
        session: u64,
        /// Request id; names the lock.
        id: u64,
        /// First unit.
        start: u64,
        /// One past the last unit.
        end: u64,
        /// The resource's name (`LOCK_NAMED`); `None`: the unnamed resource.
        name: Option<std::sync::Arc<[u8]>>,
        /// Shared or exclusive.
        mode: Mode,
        /// Whether the request may queue (`false` for `try`).
        may_wait: bool,
        /// A number unique within the session for this lock request, chosen by the
        /// handler; a later [`Command::Expire`] names it.
        nonce: u64,
        /// When the handler decoded the request, for the wait histogram (nanoseconds of
        /// the metrics clock); 0 when metrics are off (never read then).
        arrived: u64,
        /// `LOCK_CACHED` (version 6): the desired range the grant may grow to; answered
        /// as `LOCK_CACHED`. `None`: a plain `LOCK`.
        desired: Option<(u64, u64)>,
    },
    /// `CACHE_ON` (version 6): the session may keep extents and gets callbacks.
    CacheOn {
        /// Session id.
        session: u64,
        /// Request id.
        id: u64,
    },
    /// `GIVE_BACK` (version 6; range already validated).
    GiveBack {
        /// Session id.
        session: u64,
        /// Request id; names the right part of a split.
        id: u64,
        /// The held lock's request id.
        target: u64,
        /// First unit given back.
        start: u64,
        /// One past the last unit given back.
        end: u64,
        /// Turn the whole lock shared instead.
        downgrade: bool,
        /// The local locks the client served inside the lock (`None`: it did not say).
        used: Option<u32>,
    },
    /// `UNLOCK`.
    Unlock {
        /// Session id.
        session: u64,
        /// Request id of the `UNLOCK`.
        id: u64,
        /// The lock's request id.
        target: u64,
    },
    /// `CANCEL`.
    Cancel {
        /// Session id.
        session: u64,
        /// Request id of the `CANCEL`.
        id: u64,
        /// The lock's request id.
        target: u64,
    },
    /// `POLL`.
    Poll {
        /// Session id.
        session: u64,
        /// Request id of the `POLL`.
        id: u64,
        /// The lock's request id.
        target: u64,
    },
    /// The timeout of a waiting lock passed (sent by a timer; a no-op if already granted).
    Expire {
        /// Session id.
        session: u64,
        /// The lock's request id.
        target: u64,
        /// The lock's nonce, so the timer of an earlier lock whose id was reused cannot
        /// expire a later one.
        nonce: u64,
    },
    /// `STATS`, `STATS_NAMED` or `STATS_CACHED`.
    Stats {
        /// Session id.
        session: u64,
        /// Request id.
        id: u64,
        /// Entries asked for (already clamped).
        max_entries: u32,
        /// Which of `STATS`, `STATS_NAMED` and `STATS_CACHED`.
        kind: StatsKind,
    },
    /// The session ended (close, error or lease expiry): release everything it holds or waits for.
    Close {
        /// Session id.
        session: u64,
    },
    /// `RECLAIM` and `RECLAIM_NAMED` (cluster nodes; range already validated): reinstall a
    /// lock held at the partition's previous owner, with its token.
    Reclaim {
        /// Session id.
        session: u64,
        /// Request id; names the lock.
        id: u64,
        /// First unit.
        start: u64,
        /// One past the last unit.
        end: u64,
        /// The resource's name (`RECLAIM_NAMED`); `None`: the unnamed resource.
        name: Option<std::sync::Arc<[u8]>>,
        /// Shared or exclusive.
        mode: Mode,
        /// The token the previous owner granted the lock with.
        token: u64,
    },
    /// Partition ownership changed (cluster nodes; sent by
    /// [`crate::ownership::Ownership`]).
    Partition {
        /// The partition.
        partition: u32,
        /// What changed.
        change: PartitionChange,
    },
    /// A planned move gives the partition up: like [`PartitionChange::Drop`] with
    /// `NOT_OWNER`, and the locks held on it (before they are dropped) are sent to
    /// `report`, in one command so that nothing is granted in between.
    Handover {
        /// The partition.
        partition: u32,
        /// Where the held locks go.
        report: std::sync::mpsc::Sender<Vec<HandoverLock>>,
    },
    /// The locks a planned move handed over: in the grace period only these are
    /// reclaimed, and it can end as soon as all are.
    Expect {
        /// The partition.
        partition: u32,
        /// The handed-over locks.
        locks: Vec<HandoverLock>,
    },
    /// The server is stopping: answer every waiting lock `SHUTTING_DOWN`, grant nothing
    /// more and refuse new locks, so no client is granted a lock while sessions are being
    /// torn down (the `Close` of each session follows).
    Shutdown,
    /// A scrape of `/metrics`: send the engine's counters and histograms to `report`.
    Metrics {
        /// Where the snapshot goes.
        report: tokio::sync::oneshot::Sender<EngineSnapshot>,
    },
}
