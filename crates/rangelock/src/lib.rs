//! In-process range locks.
