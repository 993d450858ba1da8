//! In-process range locks over `u64` units.
//!
//! [`Lock`] is the safe API: it validates ranges and hands out RAII [`RangeGuard`]s. It is
//! generic over a [`RawRangeLock`], the unsafe core each variant implements.

mod error;
mod lock;
mod range;
mod raw;
pub mod variants;

pub use error::{LockError, RangeError};
pub use lock::{Lock, RangeGuard};
pub use range::{check_range, overlaps, Mode};
pub use raw::RawRangeLock;
