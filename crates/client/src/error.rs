//! Client errors.

use rangelock_server::protocol::{DecodeError, Status};

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting or the handshake's I/O failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The peer is not a rangelock server.
    #[error("handshake failed: {0}")]
    Handshake(DecodeError),
    /// The server speaks another protocol version.
    #[error("server speaks protocol version {server}, this client speaks {client}")]
    UnsupportedVersion {
        /// The server's version.
        server: u16,
        /// Ours.
        client: u16,
    },
    /// The connection is gone; the server has released every lock of this session.
    #[error("connection to the server lost (its locks are released)")]
    ConnectionLost,
    /// A `try` lock found the range taken.
    #[error("range is locked")]
    WouldBlock,
    /// The wait's timeout passed.
    #[error("timed out waiting for the lock")]
    TimedOut,
    /// The waiting lock was cancelled.
    #[error("lock request cancelled")]
    Cancelled,
    /// An empty or inverted range (checked before sending).
    #[error("invalid range {start}..{end}: a range must be non-empty (start < end)")]
    InvalidRange {
        /// First unit.
        start: u64,
        /// One past the last unit.
        end: u64,
    },
    /// The server answered with an error status.
    #[error("server error: {0}")]
    Server(Status),
    /// A pipelined unlock (sent without waiting for its answer) of lock `lock` failed
    /// with `status`; reported by a later call of the same client.
    #[error("pipelined unlock of lock {lock} failed: {status}")]
    DeferredUnlock {
        /// The lock's request id.
        lock: u64,
        /// The server's answer.
        status: Status,
    },
    /// The server sent something this client cannot decode.
    #[error("protocol error: {0}")]
    Protocol(DecodeError),
}

impl ClientError {
    /// Maps a non-success status of a `LOCK`/`POLL` response.
    pub(crate) fn from_status(s: Status) -> Self {
        match s {
            Status::WouldBlock => ClientError::WouldBlock,
            Status::TimedOut => ClientError::TimedOut,
            Status::Cancelled => ClientError::Cancelled,
            other => ClientError::Server(other),
        }
    }
}
