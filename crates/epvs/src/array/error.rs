//! Errors of the arrays.

/// An index at or past the array's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("index {index} out of bounds for an array of length {len}")]
pub struct OutOfBounds {
    /// The index asked for.
    pub index: usize,
    /// The length at the time of the check.
    pub len: usize,
}
