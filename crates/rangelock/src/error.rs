//! Errors returned by the range locks.

/// A range that is empty or inverted (`start >= end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid range {start}..{end}: a range must be non-empty (start < end)")]
pub struct RangeError {
    /// The start the caller passed.
    pub start: u64,
    /// The end the caller passed.
    pub end: u64,
}

/// Why a lock call returned without a guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The range was empty or inverted; nothing was locked.
    #[error(transparent)]
    InvalidRange(#[from] RangeError),
    /// `try_lock*` found an overlapping incompatible holder.
    #[error("the range is held by an incompatible holder")]
    WouldBlock,
    /// `lock*_timeout` gave up at its deadline.
    #[error("timed out waiting for the range")]
    TimedOut,
}
