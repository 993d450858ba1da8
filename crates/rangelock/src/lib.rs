//! In-process range locks over `u64` units.
//!
//! [`Lock`] is the safe API: it validates ranges and hands out RAII [`RangeGuard`]s. It is
//! generic over a [`RawRangeLock`], the unsafe core each variant implements.
//!
//! [`RangeLock`] is the product lock: a lock-free skip list of exclusive ranges (after the
//! concurrent-range-locking thesis, with its defects repaired) plus reader announcements for
//! shared ranges, parking waits, unlock through the guard (no search by range), and nodes
//! recycled through `epvs` epochs. Exclusive ranges that lie inside one stripe of the
//! domain (16 Ki units by default) take a slot of their window's stripe table instead of a
//! list node: one CAS to lock, one plain store to unlock, nothing allocated (each region of 32 Mi
//! units in use gets a table of its own, up to 64), so threads locking different regions
//! share no written cache line, however many ranges are held elsewhere. Ranges are
//! half-open `start..end` with `start < end <= u64::MAX`: every unit from 0 to
//! `u64::MAX - 1` can be locked (`0..u64::MAX` is all of them); `u64::MAX` itself is only
//! ever an end bound. [`RangeLock::builder`] sets the height and the stripe tables.
//!
//! Besides blocking, `try_` and timed acquisition: [`RangeLock::lock_async`] and its
//! siblings return cancel-safe futures that work on any executor ([`LockFuture`]);
//! [`RangeGuard::downgrade`] turns an exclusive hold into a shared one with no gap.
//!
//! ```
//! use std::time::Duration;
//! use rangelock::{LockError, RangeLock};
//!
//! let lock = RangeLock::new();
//! let page = lock.lock(4096..8192)?;              // exclusive, blocking
//! let next = lock.try_lock(8192..12288)?;         // adjacent: no conflict
//! assert_eq!(lock.try_lock_shared(0..5000).unwrap_err(), LockError::WouldBlock);
//! assert_eq!(
//!     lock.lock_timeout(5000..5001, Duration::from_millis(1)).unwrap_err(),
//!     LockError::TimedOut
//! );
//! drop((page, next));
//! let a = lock.lock_shared(0..u64::MAX)?;         // shared holders overlap freely
//! let b = lock.lock_shared(10..20)?;
//! # drop((a, b));
//! # Ok::<(), LockError>(())
//! ```
//!
//! [`Lock::lock_many`] locks a set of disjoint ranges, each in its own mode, all or nothing,
//! and hands out one [`ManyGuard`] for all of them; [`Lock::try_lock_many`] and
//! [`Lock::lock_many_timeout`] are its non-blocking and timed forms. It works with every
//! variant and cannot deadlock against other requests, although taking ranges one by one
//! with blocking calls can, in whatever order (a waiting writer may block later requests):
//! it waits only while it holds none of its ranges, and retries; on [`RangeLock`] a request
//! that failed twice then takes its ranges in order as list writers, which bounds its wait
//! (see [`Lock::lock_many`]).
//!
//! ```
//! use rangelock::{Mode, RangeLock};
//!
//! let lock = RangeLock::new();
//! let guard = lock.lock_many([(0..10, Mode::Shared), (64..128, Mode::Exclusive)])?;
//! assert!(lock.try_lock(100..101).is_err());
//! drop(guard); // releases both
//! # Ok::<(), rangelock::LockError>(())
//! ```
//!
//! The [`skiplist`] module documents the algorithm, its consistency argument (including the
//! shared-mode design and why writers are not starved) and its trade-offs.

mod error;
mod lock;
mod many;
mod primitive;
mod range;
mod raw;
pub mod skiplist;
pub mod variants;

pub use error::{LockError, RangeError};
pub use lock::{Lock, RangeGuard};
pub use many::ManyGuard;
pub use range::{check_range, overlaps, Mode};
pub use raw::{assert_valid, RawRangeLock, RawRangeLockDowngrade};
#[cfg(not(loom))]
pub use skiplist::LockFuture;
pub use skiplist::{
    Builder, RangeLock, SkipList, SkipToken, DEFAULT_CLAIM_STRIPES, DEFAULT_MAX_HEIGHT,
    DEFAULT_STRIPE_SHIFT, DEFAULT_STRIPE_SLOTS, DEFAULT_STRIPE_WINDOWS, MAX_CLAIM_STRIPES,
};
