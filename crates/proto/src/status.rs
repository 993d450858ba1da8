//! Response status codes.

use super::error::DecodeError;

/// The outcome of a request, one byte on the wire.
///
/// Codes below `0x10` are outcomes of a well-formed request; codes from `0x10` up are
/// errors: the request had no effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    /// Done. For `LOCK` and `POLL`: the lock is held and `value` is its fencing token.
    Ok = 0x00,
    /// Poll grant mode only: the lock is queued; ask again with `POLL`.
    Pending = 0x01,
    /// A `try` lock found a conflicting holder or an earlier conflicting waiter.
    WouldBlock = 0x02,
    /// The wait's timeout passed before the lock was granted; the request is gone.
    TimedOut = 0x03,
    /// The waiting lock was cancelled (by `CANCEL` or `UNLOCK` of a waiting lock).
    Cancelled = 0x04,
    /// `UNLOCK`, `CANCEL` or `POLL` of a lock of this session that already ended (released,
    /// withdrawn or timed out; the last 4096 are remembered): nothing to do (idempotent).
    AlreadyReleased = 0x05,
    /// The frame was well delimited but its contents were not a valid request.
    Malformed = 0x10,
    /// The operation byte names no operation.
    UnknownOp = 0x11,
    /// An empty or inverted range.
    InvalidRange = 0x12,
    /// The target request id names no lock of this session.
    NotHeld = 0x13,
    /// The request id is already used by a live lock of this session.
    DuplicateId = 0x14,
    /// The session holds or waits for as many locks as the server allows.
    TooManyLocks = 0x15,
    /// The frame was longer than the server's maximum; the connection is closed.
    FrameTooLarge = 0x16,
    /// `CANCEL` of a lock that is already granted (use `UNLOCK`).
    NotWaiting = 0x17,
    /// The server is shutting down: nothing more is granted; the connection closes next.
    ShuttingDown = 0x18,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 15] = [
        Status::Ok,
        Status::Pending,
        Status::WouldBlock,
        Status::TimedOut,
        Status::Cancelled,
        Status::AlreadyReleased,
        Status::Malformed,
        Status::UnknownOp,
        Status::InvalidRange,
        Status::NotHeld,
        Status::DuplicateId,
        Status::TooManyLocks,
        Status::FrameTooLarge,
        Status::NotWaiting,
        Status::ShuttingDown,
    ];

    /// The wire byte.
    #[inline]
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Whether this is an error code (the request had no effect).
    #[inline]
    pub fn is_error(self) -> bool {
        self.code() >= 0x10
    }

    /// Parses a wire byte.
    pub fn from_code(code: u8) -> Result<Status, DecodeError> {
        Status::ALL
            .iter()
            .copied()
            .find(|s| s.code() == code)
            .ok_or(DecodeError::UnknownStatus(code))
    }
}

impl core::fmt::Display for Status {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self {
            Status::Ok => "ok",
            Status::Pending => "pending",
            Status::WouldBlock => "would block",
            Status::TimedOut => "timed out",
            Status::Cancelled => "cancelled",
            Status::AlreadyReleased => "already released",
            Status::Malformed => "malformed request",
            Status::UnknownOp => "unknown operation",
            Status::InvalidRange => "invalid range",
            Status::NotHeld => "no such lock in this session",
            Status::DuplicateId => "duplicate request id",
            Status::TooManyLocks => "too many locks in this session",
            Status::FrameTooLarge => "frame too large",
            Status::NotWaiting => "lock is not waiting",
            Status::ShuttingDown => "server shutting down",
        };
        f.write_str(s)
    }
}
