//! Decoding errors.

use super::status::Status;

/// Why a byte sequence is not a valid message. Every variant maps to the [`Status`] the
/// server answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message ended before a field was complete.
    #[error("message truncated")]
    Truncated,
    /// Bytes were left over after the last field.
    #[error("{0} trailing bytes after the message")]
    TrailingBytes(usize),
    /// The handshake did not start with the magic bytes `RLCK`.
    #[error("bad magic (not a rangelock peer)")]
    BadMagic,
    /// The operation byte names no operation.
    #[error("unknown operation 0x{0:02x}")]
    UnknownOp(u8),
    /// A mode byte other than 0 (exclusive) or 1 (shared).
    #[error("unknown lock mode {0}")]
    BadMode(u8),
    /// A wait byte other than 0 (try), 1 (timeout) or 2 (forever).
    #[error("unknown wait kind {0}")]
    BadWait(u8),
    /// An empty or inverted range (`start >= end`).
    #[error("invalid range {start}..{end}: a range must be non-empty (start < end)")]
    InvalidRange {
        /// First unit.
        start: u64,
        /// One past the last unit.
        end: u64,
    },
    /// A status byte that names no status.
    #[error("unknown status 0x{0:02x}")]
    UnknownStatus(u8),
    /// A grant-mode byte other than 0 (push) or 1 (poll).
    #[error("unknown grant mode {0}")]
    BadGrantMode(u8),
    /// A response-kind byte without the response bit, or naming no operation.
    #[error("bad response kind 0x{0:02x}")]
    BadResponseKind(u8),
    /// A field had a value outside its documented set.
    #[error("bad value {0} in field {1}")]
    BadField(u64, &'static str),
    /// A string field (a node id or address) was not UTF-8.
    #[error("field {0} is not UTF-8")]
    BadUtf8(&'static str),
    /// A resource name of this many bytes: empty, or longer than
    /// [`MAX_RESOURCE_NAME_LEN`](crate::MAX_RESOURCE_NAME_LEN).
    #[error("a resource name of {0} bytes: names are 1 to {max} bytes", max = crate::MAX_RESOURCE_NAME_LEN)]
    BadName(u16),
}

impl DecodeError {
    /// The status the server answers a request that failed to decode with.
    pub fn status(self) -> Status {
        match self {
            DecodeError::UnknownOp(_) => Status::UnknownOp,
            DecodeError::InvalidRange { .. } => Status::InvalidRange,
            DecodeError::BadName(_) => Status::BadName,
            _ => Status::Malformed,
        }
    }
}
