//! Range locks over `u64` units, for data systems: lock `4096..8192` of a file, rows
//! `100..=199` of a table, pages `..64` of an area, exclusively or shared, and let threads on
//! disjoint ranges run in parallel.
//!
//! [`RangeLock`] is the lock. It takes any `impl RangeBounds<u64>`; blocking calls return
//! the guard (and panic on a range that locks nothing, as slice indexing does), `try_` and
//! timed calls return a `Result`, async calls return cancel-safe futures that run on any
//! executor, and `lock_many` takes a set of ranges all or nothing without deadlock. Dropping
//! a guard unlocks its range. `const fn new` makes a `static` lock; `lock_owned` and its
//! siblings take an `Arc<RangeLock>` and return guards without a lifetime, for threads and
//! tasks. [`SliceLock`] owns a slice and hands out `&mut [T]` / `&[T]` for exactly the
//! locked elements, so disjoint parts of one buffer are written in parallel without `unsafe`.
//!
//! ```
//! use std::sync::Arc;
//! use rangelock::{LockError, Mode, RangeLock, SliceLock};
//!
//! let lock = RangeLock::new();
//! let a = lock.lock(0..4096);                    // exclusive, waits as long as it takes
//! let b = lock.try_lock_shared(4096..=8191)?;    // shared, never waits
//! assert_eq!(lock.try_lock(100..200).unwrap_err(), LockError::WouldBlock);
//! drop((a, b));                                  // unlock through the guard
//!
//! // Several ranges at once, all or nothing; an exclusive hold turned shared with no gap.
//! let both = lock.lock_many([(0..10, Mode::Exclusive), (20..30, Mode::Shared)]);
//! drop(both);
//! let reader = lock.lock(..4096).downgrade();
//! drop(reader);
//!
//! // Guards that own their lock, for threads and tasks.
//! let shared = Arc::new(RangeLock::new());
//! let guard = shared.lock_owned(0..10);
//! std::thread::spawn(move || drop(guard)).join().unwrap();
//!
//! // A buffer whose parts are written in parallel, safely.
//! let buf = SliceLock::new(vec![0u8; 8192]);
//! std::thread::scope(|s| {
//!     s.spawn(|| buf.lock(..4096).fill(1));
//!     s.spawn(|| buf.lock(4096..).fill(2));
//! });
//! assert_eq!(buf.lock_shared(4095..4097)[..], [1, 2]);
//! # Ok::<(), LockError>(())
//! ```
//!
//! **Not reentrant.** A thread that holds a range and asks, with a blocking call, for an
//! overlapping range in a conflicting mode waits for itself forever (as with
//! `std::sync::Mutex`); use `try_` or timed calls where that can happen.
//!
//! # How it works, and what it costs
//!
//! A lock-free skip list of exclusive ranges (after the concurrent-range-locking thesis,
//! with its defects repaired) plus reader announcements for shared ranges, parking waits,
//! unlock through the guard (no search by range), and nodes recycled through `epvs` epochs.
//! Exclusive ranges inside one stripe of the domain (16 Ki units by default) take a slot of
//! their window's stripe table instead of a list node: one CAS to lock, one plain store to
//! unlock, nothing allocated, so threads locking different regions share no written cache
//! line however many ranges are held elsewhere. [`RangeLock::builder`] sets the height and
//! the stripe tables. The algorithm, its consistency argument and its trade-offs are
//! documented in the source (`src/skiplist/mod.rs`); `docs/results/report.md` in the
//! repository gives the measurements against the other range locks (`docs/BENCH.md`: how
//! to run them).
//!
//! C and C++ programs use this lock through the `rangelock-ffi` crate (`rangelock.h`).

mod bounds;
mod error;
mod guard;
mod lock;
mod many;
mod primitive;
mod range;
mod range_lock;
mod raw;
mod skiplist;
mod slice;
// Under loom the pool locks are loom mutexes; the baselines use it there too.
#[cfg_attr(loom, allow(dead_code))]
mod spin;

pub use error::{LockError, RangeError, SliceError};
pub use guard::{ManyGuard, OwnedRangeGuard, RangeGuard};
pub use many::LockRequest;
pub use range::Mode;
pub use range_lock::RangeLock;
pub use skiplist::Builder;
#[cfg(not(loom))]
pub use skiplist::{
    LockFuture, ManyLockFuture, OwnedLockFuture, OwnedTryLockFuture, TryLockFuture,
    TryManyLockFuture,
};
pub use slice::{
    OwnedSliceGuard, OwnedSliceReadGuard, SliceGuard, SliceLock, SliceManyGuard, SlicePart,
    SliceReadGuard,
};
#[cfg(not(loom))]
pub use slice::{SliceLockFuture, SliceReadFuture, SliceTryLockFuture, SliceTryReadFuture};

/// The machinery under [`RangeLock`], for the project's own tests, baselines and
/// benchmarks: not part of the API and not covered by semver (the `internals` feature).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::lock::{Guard, Lock};
    pub use crate::many::Guards;
    pub use crate::range::{check_range, overlaps};
    pub use crate::raw::{assert_valid, RawRangeLock, RawRangeLockDowngrade};
    pub use crate::skiplist::{
        SkipList, SkipToken, DEFAULT_CLAIM_STRIPES, DEFAULT_MAX_HEIGHT, DEFAULT_STRIPE_SHIFT,
        DEFAULT_STRIPE_SLOTS, DEFAULT_STRIPE_WINDOWS, MAX_CLAIM_STRIPES,
    };
    pub use crate::spin::{SpinGuard, SpinLock};
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the repository's README (its `sh` and `c` blocks are not Rust).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct RepositoryReadmeDoctests;
