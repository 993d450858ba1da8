//! Range locks over `u64` units, for data systems: lock `4096..8192` of a file, rows
//! `100..=199` of a table, pages `..64` of an area, exclusively or shared, and let threads on
//! disjoint ranges run in parallel.
//!
//! [`RangeLock`] is the lock. It takes any `impl RangeBounds<u64>`; blocking calls return
//! the guard (and panic on a range that locks nothing, as slice indexing does), `try_`
//! calls (timed ones included) return a `Result`, async calls return cancel-safe futures
//! that run on any executor, and `lock_many` takes a set of ranges all or nothing without
//! deadlock ("Choosing a method" below has the whole set). Dropping
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
//! # Choosing a method
//!
//! Every acquisition is named by one rule, `[try_]lock[_many][_shared|_mode][_owned][_async][_for|_until]`:
//!
//! | row \ column | blocking | try (never waits) | for a `Duration` | until an `Instant` | async | async, timed | owned (`Arc`) |
//! |---|---|---|---|---|---|---|---|
//! | exclusive | [`lock`] | [`try_lock`] | [`try_lock_for`] | [`try_lock_until`] | [`lock_async`] | [`try_lock_async_for`], [`try_lock_async_until`] | [`lock_owned`] and `_owned` forms of every column |
//! | shared | [`lock_shared`] | [`try_lock_shared`] | [`try_lock_shared_for`] | [`try_lock_shared_until`] | [`lock_shared_async`] | [`try_lock_shared_async_for`], `_until` | [`lock_shared_owned`], … |
//! | any [`Mode`] (`m`) | [`lock_mode`] | [`try_lock_mode`] | [`try_lock_mode_for`] | [`try_lock_mode_until`] | [`lock_mode_async`] | [`try_lock_mode_async_for`], `_until` | [`lock_mode_owned`], … |
//! | many ranges | [`lock_many`] | [`try_lock_many`] | [`try_lock_many_for`] | [`try_lock_many_until`] | [`lock_many_async`] | [`try_lock_many_async_for`], `_until` | — |
//!
//! * **What comes back.** The calls without `try_` cannot fail: blocking and untimed async
//!   calls return (or resolve to) the guard, and panic on a range that locks nothing, as
//!   slice indexing does. The `try_` calls are the ones that may return without the lock:
//!   they return `Result<_, LockError>` (`WouldBlock`, `TimedOut`, `InvalidRange` with the
//!   bounds the caller wrote, `Overlapping` for a many-range request).
//! * **Owned.** Every column of the first three rows has an `_owned` form on
//!   `Arc<RangeLock>` (`lock_owned`, `try_lock_owned_for`, `lock_owned_async`,
//!   `try_lock_shared_owned_async_until`, …) whose [`OwnedRangeGuard`] has no lifetime, for
//!   threads and spawned tasks.
//! * **Futures.** Async calls return named types, cancel-safe on drop, for any executor:
//!   [`LockFuture`] / [`OwnedLockFuture`] / [`ManyLockFuture`] from untimed calls (they
//!   resolve to the guard) and [`TryLockFuture`] / [`OwnedTryLockFuture`] /
//!   [`TryManyLockFuture`] from timed ones (they resolve to a `Result`). They are two types
//!   per guard rather than one because their outputs differ exactly as `lock` and
//!   `try_lock_for` do: one type would make the untimed calls resolve to a `Result` that is
//!   never an error. Both wrap one state machine.
//! * **Requests.** The many-range calls take any `IntoIterator` of [`LockRequest`]s: pairs
//!   `(range, Mode)` by value or by reference, so `&v` for a `Vec` of pairs, `v`, arrays and
//!   iterators all work.
//! * **[`SliceLock`]** has the exclusive, shared and many-range rows with the same names
//!   (its guards deref to `&mut [T]` or `&[T]`, so a `_mode` row, whose guard type would
//!   depend on a run-time value, is left out), the owned column for its blocking, try and
//!   timed calls (`Arc<SliceLock<T>>` → [`OwnedSliceGuard`], [`OwnedSliceReadGuard`]) and
//!   the async ones for a single range, with errors in element indices ([`SliceError`]).
//!
//! **Why these names.** They are `lock_api`'s, which `parking_lot` and its users know:
//! `try_lock_for(Duration)` and `try_lock_until(Instant)`, `try_` on every call that can
//! come back without the lock; `_shared` and `_owned` are `RwLock`'s and tokio's words.
//! The earlier `lock_timeout` / `lock_mode_until` names had a timed form for some modes
//! and a deadline form for one, so a caller could not guess a name from another.
//!
//! One call of each row:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, Instant};
//! use rangelock::{LockError, Mode, RangeLock, SliceLock};
//!
//! let lock = Arc::new(RangeLock::new());
//! let ms = Duration::from_millis(1);
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//!
//! // Exclusive: blocking, try, for, until, async (timed).
//! let w = lock.lock(0..10);
//! assert_eq!(lock.try_lock(5..6).unwrap_err(), LockError::WouldBlock);
//! assert_eq!(lock.try_lock_for(5..6, ms).unwrap_err(), LockError::TimedOut);
//! assert_eq!(lock.try_lock_until(5..6, Instant::now() + ms).unwrap_err(), LockError::TimedOut);
//! drop(w);
//! let w = rt.block_on(lock.try_lock_async_for(0..10, ms))?;
//! drop(w);
//!
//! // Shared: owned and async forms; readers overlap, writers wait.
//! let r1 = lock.lock_shared_owned(0..10);
//! let r2 = rt.block_on(lock.lock_shared_async(5..15));
//! assert_eq!(lock.try_lock_for(7..8, ms).unwrap_err(), LockError::TimedOut);
//! drop((r1, r2));
//!
//! // Any mode, chosen at run time.
//! let mode = if lock.try_lock_shared(0..1).is_ok() { Mode::Exclusive } else { Mode::Shared };
//! let g = lock.try_lock_mode_for(20..30, mode, ms)?;
//! assert_eq!(g.mode(), Mode::Exclusive);
//! drop(g);
//! let owned = rt.block_on(lock.lock_mode_owned_async(20..30, Mode::Shared));
//! drop(owned);
//!
//! // Many ranges at once, all or nothing, from what the caller has.
//! let request = vec![(40..50, Mode::Exclusive), (60..70, Mode::Shared)];
//! let both = rt.block_on(lock.lock_many_async(&request));
//! assert_eq!(lock.try_lock_many_for(&request, ms).unwrap_err(), LockError::TimedOut);
//! drop(both);
//!
//! // A slice: the same names, guards that are the data.
//! let buf = Arc::new(SliceLock::new(vec![0u8; 100]));
//! let mut part = buf.lock_owned(..50);
//! std::thread::spawn(move || part.fill(1)).join().unwrap();
//! let mut parts = buf.try_lock_many_for([(0..2, Mode::Shared), (50..52, Mode::Exclusive)], ms)?;
//! parts.get_mut(1).unwrap().fill(2);
//! assert_eq!(parts.get(0), [1, 1]);
//! drop(parts);
//! assert_eq!(rt.block_on(buf.lock_shared_async(49..51))[..], [1, 2]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`lock`]: RangeLock::lock
//! [`try_lock`]: RangeLock::try_lock
//! [`try_lock_for`]: RangeLock::try_lock_for
//! [`try_lock_until`]: RangeLock::try_lock_until
//! [`lock_async`]: RangeLock::lock_async
//! [`try_lock_async_for`]: RangeLock::try_lock_async_for
//! [`try_lock_async_until`]: RangeLock::try_lock_async_until
//! [`lock_owned`]: RangeLock::lock_owned
//! [`lock_shared`]: RangeLock::lock_shared
//! [`try_lock_shared`]: RangeLock::try_lock_shared
//! [`try_lock_shared_for`]: RangeLock::try_lock_shared_for
//! [`try_lock_shared_until`]: RangeLock::try_lock_shared_until
//! [`lock_shared_async`]: RangeLock::lock_shared_async
//! [`try_lock_shared_async_for`]: RangeLock::try_lock_shared_async_for
//! [`lock_shared_owned`]: RangeLock::lock_shared_owned
//! [`lock_mode`]: RangeLock::lock_mode
//! [`try_lock_mode`]: RangeLock::try_lock_mode
//! [`try_lock_mode_for`]: RangeLock::try_lock_mode_for
//! [`try_lock_mode_until`]: RangeLock::try_lock_mode_until
//! [`lock_mode_async`]: RangeLock::lock_mode_async
//! [`try_lock_mode_async_for`]: RangeLock::try_lock_mode_async_for
//! [`lock_mode_owned`]: RangeLock::lock_mode_owned
//! [`lock_many`]: RangeLock::lock_many
//! [`try_lock_many`]: RangeLock::try_lock_many
//! [`try_lock_many_for`]: RangeLock::try_lock_many_for
//! [`try_lock_many_until`]: RangeLock::try_lock_many_until
//! [`lock_many_async`]: RangeLock::lock_many_async
//! [`try_lock_many_async_for`]: RangeLock::try_lock_many_async_for
//!
//! **Not reentrant.** A thread that holds a range and asks, with a blocking call, for an
//! overlapping range in a conflicting mode waits for itself forever (as with
//! `std::sync::Mutex`); use `try_` calls (timed or not) where that can happen.
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
