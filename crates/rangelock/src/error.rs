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
    /// Two ranges of one [`lock_many`](crate::Lock::lock_many) request overlap (in any
    /// modes); nothing was locked.
    #[error(
        "ranges {}..{} and {}..{} of one request overlap: the ranges of a request must be \
         disjoint",
        .first.0, .first.1, .second.0, .second.1
    )]
    Overlapping {
        /// The range that starts first, as `(start, end)`.
        first: (u64, u64),
        /// A range of the same request that overlaps it, as `(start, end)`.
        second: (u64, u64),
    },
}
