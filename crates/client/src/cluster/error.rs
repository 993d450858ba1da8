//! [`ClusterError`], and why a guard was lost ([`LostReason`]).

use std::time::Instant;

use rangelock_proto::Status;

use crate::error::ClientError;

/// Why a cluster operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// No node could be reached, or none gave a usable answer; the message says what each
    /// one said.
    #[error("no cluster node answered: {0}")]
    NoNode(String),
    /// The nodes kept sending the client elsewhere for one piece of the lock (more than
    /// [`ClusterOptions::max_redirects`](super::ClusterOptions::max_redirects) times): they
    /// disagree about who owns the partition. Nothing is held.
    #[error(
        "partition {partition}: gave up after {redirects} redirects (the nodes disagree about \
         its owner)"
    )]
    TooManyRedirects {
        /// The partition.
        partition: u32,
        /// Redirects followed.
        redirects: u32,
    },
    /// A try-lock found a piece of the range taken. Nothing is held.
    #[error("range is locked")]
    WouldBlock,
    /// The wait's timeout passed. Nothing is held.
    #[error("timed out waiting for the lock")]
    TimedOut,
    /// A try-lock found a partition's owner unreachable, fenced or in its grace period (a
    /// waiting lock retries instead). Nothing is held.
    #[error(
        "partition {partition} is unavailable (its owner is unreachable, fenced or in its \
         grace period)"
    )]
    Unavailable {
        /// The partition.
        partition: u32,
    },
    /// The guard is lost: a piece could not be reclaimed after its node failed (see
    /// [`ClusterGuard`](super::ClusterGuard)).
    #[error("lock lost: {0}")]
    Lost(LostReason),
    /// A node answered with an error status.
    #[error("server error: {0}")]
    Server(Status),
    /// The connection to a node failed, or the client refused the request (an empty
    /// range, a timeout too long for the protocol).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A node sent a map this client cannot use (another partition count than the
    /// cluster's).
    #[error("unusable cluster map: {0}")]
    BadMap(String),
    /// A named range spans more stripes than one lock may have pieces
    /// ([`MAX_NAMED_PIECES`](super::MAX_NAMED_PIECES)); refused before anything is sent.
    #[error("the named range spans {stripes} stripes (at most {max} pieces per lock)", max = super::MAX_NAMED_PIECES)]
    TooManyPieces {
        /// The stripes the range spans.
        stripes: u64,
    },
}

/// Why a guard was lost: which piece failed, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LostReason {
    /// The partition of the piece that could not be reclaimed.
    pub partition: u32,
    /// How it failed.
    pub cause: LostCause,
    /// No node granted the piece's range to another holder before this instant, so
    /// whatever this process did with the guard before it was covered by the lock.
    ///
    /// For [`LostCause::SessionLapsed`]: the send time of the last keepalive the node
    /// answered plus the node's lease (the node ends a session no earlier). Otherwise:
    /// when the client found the piece's node gone or told that it gave the partition up
    /// (a new owner grants new locks only after its grace period, which starts later).
    pub safe_until: Instant,
}

impl core::fmt::Display for LostReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "partition {}: {}", self.partition, self.cause)
    }
}

/// How a piece of a guard failed to be reclaimed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostCause {
    /// The partition's new owner refused the `RECLAIM`: another holder already reclaimed
    /// a conflicting lock, the owner is serving new locks (no grace period), or the token
    /// is not from an earlier epoch.
    ReclaimRefused,
    /// No owner accepted the `RECLAIM` within
    /// [`ClusterOptions::reclaim_window`](super::ClusterOptions::reclaim_window).
    WindowMissed,
    /// The session at the piece's node ended because its lease lapsed (this process was
    /// stopped or starved for longer than the lease): the node released the lock, and
    /// the client does not try to reclaim it anywhere.
    SessionLapsed,
}

impl core::fmt::Display for LostCause {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LostCause::ReclaimRefused => "the new owner refused the reclaim",
            LostCause::WindowMissed => "no owner accepted the reclaim within the reclaim window",
            LostCause::SessionLapsed => "the session's lease lapsed and the node released the lock",
        })
    }
}
