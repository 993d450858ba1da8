//! A C API for the in-process range lock, [`rangelock::RangeLock`].
//!
//! The C declarations are in `include/rangelock.h` (generated from this file by cbindgen;
//! `tests/header.rs` checks that the checked-in copy is current) and a C++ RAII wrapper is in
//! `include/rangelock.hpp`. The header states the contract; in short:
//!
//! - `rl_lock_new` makes a lock (`rl_lock_t *`), `rl_lock_free` frees it. A lock may be used
//!   from any number of threads at once.
//! - `rl_lock`, `rl_try_lock` and `rl_lock_timeout` lock `[start, end)` in `RL_EXCLUSIVE` or
//!   `RL_SHARED` mode and hand out a handle (`rl_guard_t *`), a heap-boxed [`RangeGuard`];
//!   `rl_unlock` consumes the handle and unlocks, from any thread.
//! - `rl_lock_many`, `rl_try_lock_many` and `rl_lock_many_timeout` lock an array of
//!   `rl_range_t` all or nothing ([`RangeLock::lock_many`]) under one handle;
//!   `rl_downgrade` turns a handle's exclusive ranges shared in place.
//! - `rl_version` and `rl_version_number` name the library's version at run time; the
//!   `RL_VERSION_*` macros name the header's.
//! - Every function returns an `int` status from `rl_status` (`rl_lock_new` returns the lock
//!   or NULL; `rl_status_str` and the version functions return what they name). A NULL pointer argument is answered with `RL_NULL_ARGUMENT`, never a crash.
//! - `rl_lock_free` refuses (`RL_BUSY`, the lock stays valid) while a range is held, so a
//!   handle never outlives its lock; it checks with one whole-domain `try_lock`, which costs
//!   nothing on the lock and unlock paths.
//! - No panic unwinds into C: every entry point runs under [`catch_unwind`] and reports a
//!   panic (a bug in this library) as `RL_PANIC`.
//!
//! This crate builds only on the safe API of [`rangelock`] ([`RangeLock`], [`RangeGuard`],
//! [`LockError`], [`Mode`]), so nothing here depends on the layout of the lock's tokens. It
//! checks every range itself before it calls the lock, so a bad range from C is a status
//! (`RL_INVALID_RANGE`, `RL_OVERLAPPING`), never a panic; the guard type is spelled once,
//! in `Guard`.

// The exported types and constants carry their C names, so the header needs no renaming.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, CStr};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use std::{mem, ptr, slice};

use rangelock::{LockError, Mode, RangeGuard, RangeLock};

/// The status every function returns (as an `int`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rl_status {
    /// Success.
    RL_OK = 0,
    /// `rl_try_lock`: an incompatible holder overlaps the range right now; nothing was locked.
    RL_WOULD_BLOCK = 1,
    /// `rl_lock_timeout`: the timeout passed before the range could be locked; nothing was
    /// locked.
    RL_TIMED_OUT = 2,
    /// The range is empty or inverted (`start >= end`); nothing was locked.
    RL_INVALID_RANGE = 3,
    /// A pointer argument that must not be NULL was NULL; nothing was done.
    RL_NULL_ARGUMENT = 4,
    /// The mode is neither `RL_EXCLUSIVE` nor `RL_SHARED`; nothing was locked.
    RL_INVALID_MODE = 5,
    /// `rl_lock_free`: a range of the lock is still held (a handle was not unlocked); the
    /// lock was not freed and stays valid.
    RL_BUSY = 6,
    /// A bug in this library: Rust code panicked (the message went to stderr). The lock may
    /// be inconsistent; stop using it.
    RL_PANIC = 7,
    /// `rl_lock_many` and its forms: two ranges of the request overlap (adjacent ranges do
    /// not); nothing was locked. Merge them into one range.
    RL_OVERLAPPING = 8,
}

/// How a range is held (passed as an `int`; any other value is `RL_INVALID_MODE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rl_mode {
    /// Excludes every overlapping holder (a writer).
    RL_EXCLUSIVE = 0,
    /// Compatible with overlapping shared holders (a reader).
    RL_SHARED = 1,
}

/// A range lock over the `uint64_t` units `[0, UINT64_MAX)`. Opaque; made by `rl_lock_new`.
#[derive(Debug)]
pub struct rl_lock_t {
    lock: RangeLock,
}

/// One range of an `rl_lock_many` request: `[start, end)` in `mode` (`RL_EXCLUSIVE` or
/// `RL_SHARED`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct rl_range_t {
    /// The first unit of the range.
    pub start: u64,
    /// One past the last unit of the range (`start < end`).
    pub end: u64,
    /// `RL_EXCLUSIVE` or `RL_SHARED`.
    pub mode: c_int,
}

/// Held ranges. Opaque; made by `rl_lock`, `rl_try_lock`, `rl_lock_timeout` (one range) and
/// `rl_lock_many` and its forms (the ranges of one request), consumed by `rl_unlock`.
#[derive(Debug)]
pub struct rl_guard_t {
    held: Held,
}

/// The one place that names the guard type of [`RangeLock`]. It borrows the lock for
/// `'static`: `rl_lock_free` frees the lock only when no range is held, i.e. after every
/// guard is gone (see `start_acquire`).
type Guard = RangeGuard<'static>;

/// What a handle holds.
#[derive(Debug)]
enum Held {
    /// The range of `rl_lock` and its forms.
    One(Guard),
    /// The ranges of an `rl_lock_many` request, sorted by start (none for an empty one).
    Many(Box<[Guard]>),
    /// Nothing: `rl_downgrade` panicked (a bug) between taking the guards and putting the
    /// shared ones back; the guards it had were released.
    Lost,
}

/// The version of the C library as three numbers, for the preprocessor (what the header was
/// generated for). `rl_version` and `rl_version_number` tell the library that runs.
pub const RL_VERSION_MAJOR: u32 = 0;
/// See `RL_VERSION_MAJOR`.
pub const RL_VERSION_MINOR: u32 = 1;
/// See `RL_VERSION_MAJOR`.
pub const RL_VERSION_PATCH: u32 = 0;
/// `RL_VERSION_MAJOR * 10000 + RL_VERSION_MINOR * 100 + RL_VERSION_PATCH`, the form
/// `rl_version_number` returns (`RL_VERSION_NUMBER >= 100` means "0.1.0 or later").
pub const RL_VERSION_NUMBER: u32 =
    RL_VERSION_MAJOR * 10000 + RL_VERSION_MINOR * 100 + RL_VERSION_PATCH;

/// The crate's version as a C string (`rl_version`).
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("the package version contains a NUL byte"),
    };

const fn code(status: rl_status) -> c_int {
    status as c_int
}

/// Runs `f`, reporting a panic as `RL_PANIC` instead of unwinding into C.
fn no_unwind(f: impl FnOnce() -> c_int) -> c_int {
    // `AssertUnwindSafe`: after a panic the caller is told the lock may be inconsistent
    // (`RL_PANIC`), so no state observed after the unwind is trusted.
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(code(rl_status::RL_PANIC))
}

fn lock_error(err: LockError) -> c_int {
    code(match err {
        LockError::InvalidRange(_) => rl_status::RL_INVALID_RANGE,
        LockError::WouldBlock => rl_status::RL_WOULD_BLOCK,
        LockError::TimedOut => rl_status::RL_TIMED_OUT,
        // `request_from` rejects overlapping requests before they reach the lock.
        LockError::Overlapping { .. } => rl_status::RL_OVERLAPPING,
        // `LockError` is `#[non_exhaustive]`: a variant added later is not one of the above.
        _ => rl_status::RL_INVALID_RANGE,
    })
}

fn mode_from(mode: c_int) -> Option<Mode> {
    match mode {
        m if m == rl_mode::RL_EXCLUSIVE as c_int => Some(Mode::Exclusive),
        m if m == rl_mode::RL_SHARED as c_int => Some(Mode::Shared),
        _ => None,
    }
}

/// How long an acquisition may wait.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    Never,
    For(Duration),
}

/// The range `[start, end)`, or `RL_INVALID_RANGE`. The C API checks ranges itself, so that
/// no range from C reaches the lock's own check (which may panic).
fn range_from(start: u64, end: u64) -> Result<Range<u64>, c_int> {
    if start < end {
        Ok(start..end)
    } else {
        Err(code(rl_status::RL_INVALID_RANGE))
    }
}

/// Writes NULL to `*out` and borrows `*lock`, or answers `RL_NULL_ARGUMENT`.
///
/// # Safety
///
/// `lock` is NULL or a live lock from `rl_lock_new` that stays alive while any guard made
/// from the returned reference exists (argued in the body); `out` is NULL or valid for writing
/// one pointer.
unsafe fn start_acquire(
    lock: *mut rl_lock_t,
    out: *mut *mut rl_guard_t,
) -> Result<&'static RangeLock, c_int> {
    if out.is_null() {
        return Err(code(rl_status::RL_NULL_ARGUMENT));
    }
    // SAFETY: `out` is not NULL, and the caller guarantees that it is valid for writes.
    unsafe { out.write(ptr::null_mut()) };
    if lock.is_null() {
        return Err(code(rl_status::RL_NULL_ARGUMENT));
    }
    // SAFETY: `lock` is not NULL and the caller guarantees it is a lock from `rl_lock_new`
    // that is not freed while this call runs. The `'static` borrow outlives this call only
    // inside the guards we return, and the lock outlives every guard: `rl_lock_free` frees
    // it only after a whole-domain exclusive `try_lock` succeeds, which it cannot while a
    // range is held (every valid range overlaps `0..u64::MAX`), i.e. while a guard exists;
    // and the caller must not run `rl_lock_free` concurrently with any other call on the
    // lock or its handles.
    Ok(unsafe { &(*lock).lock })
}

/// Boxes `held` into a handle and writes it to `*out`.
///
/// # Safety
///
/// `out` is valid for writing one pointer.
unsafe fn hand_out(held: Held, out: *mut *mut rl_guard_t) -> c_int {
    let handle = Box::into_raw(Box::new(rl_guard_t { held }));
    // SAFETY: the caller guarantees that `out` is valid for writes.
    unsafe { out.write(handle) };
    code(rl_status::RL_OK)
}

/// The body of `rl_lock`, `rl_try_lock` and `rl_lock_timeout`.
///
/// # Safety
///
/// As those functions: `lock` is NULL or a live lock from `rl_lock_new`, and `out` is NULL
/// or valid for writing one pointer.
unsafe fn acquire(
    lock: *mut rl_lock_t,
    start: u64,
    end: u64,
    mode: c_int,
    wait: Wait,
    out: *mut *mut rl_guard_t,
) -> c_int {
    // SAFETY: the caller upholds `start_acquire`'s contract, which is this function's.
    let lock = match unsafe { start_acquire(lock, out) } {
        Ok(lock) => lock,
        Err(status) => return status,
    };
    let Some(mode) = mode_from(mode) else {
        return code(rl_status::RL_INVALID_MODE);
    };
    let range = match range_from(start, end) {
        Ok(range) => range,
        Err(status) => return status,
    };
    no_unwind(|| {
        let held = match (wait, mode) {
            // The blocking calls panic on an invalid range: `range_from` checked it.
            (Wait::Forever, Mode::Exclusive) => Ok(lock.lock(range)),
            (Wait::Forever, Mode::Shared) => Ok(lock.lock_shared(range)),
            (Wait::Never, Mode::Exclusive) => lock.try_lock(range),
            (Wait::Never, Mode::Shared) => lock.try_lock_shared(range),
            (Wait::For(timeout), Mode::Exclusive) => lock.try_lock_for(range, timeout),
            (Wait::For(timeout), Mode::Shared) => lock.try_lock_shared_for(range, timeout),
        };
        match held {
            // SAFETY: `start_acquire` checked that `out` is not NULL; the caller guarantees
            // that it is valid for writes.
            Ok(guard) => unsafe { hand_out(Held::One(guard), out) },
            Err(err) => lock_error(err),
        }
    })
}

/// The request of `rl_lock_many`, checked: `RL_NULL_ARGUMENT` for a NULL array of a
/// non-empty request, then `RL_INVALID_MODE`, `RL_INVALID_RANGE` (the first bad entry in
/// array order) and `RL_OVERLAPPING`.
///
/// # Safety
///
/// `ranges` is NULL or valid for reading `count` entries.
unsafe fn request_from(
    ranges: *const rl_range_t,
    count: usize,
) -> Result<Vec<(Range<u64>, Mode)>, c_int> {
    let entries: &[rl_range_t] = if count == 0 {
        &[]
    } else if ranges.is_null() {
        return Err(code(rl_status::RL_NULL_ARGUMENT));
    } else {
        // SAFETY: `ranges` is not NULL, and the caller guarantees it points to `count`
        // readable entries, which nobody writes during this call.
        unsafe { slice::from_raw_parts(ranges, count) }
    };
    let mut request = Vec::with_capacity(entries.len());
    for entry in entries {
        let mode = mode_from(entry.mode).ok_or(code(rl_status::RL_INVALID_MODE))?;
        request.push((range_from(entry.start, entry.end)?, mode));
    }
    let mut sorted: Vec<&Range<u64>> = request.iter().map(|(range, _)| range).collect();
    sorted.sort_unstable_by_key(|range| range.start);
    if sorted.windows(2).any(|pair| pair[1].start < pair[0].end) {
        return Err(code(rl_status::RL_OVERLAPPING));
    }
    Ok(request)
}

/// The body of `rl_lock_many`, `rl_try_lock_many` and `rl_lock_many_timeout`.
///
/// # Safety
///
/// As those functions: `lock` is NULL or a live lock from `rl_lock_new`, `ranges` NULL or
/// valid for reading `count` entries, and `out` NULL or valid for writing one pointer.
unsafe fn acquire_many(
    lock: *mut rl_lock_t,
    ranges: *const rl_range_t,
    count: usize,
    wait: Wait,
    out: *mut *mut rl_guard_t,
) -> c_int {
    // SAFETY: the caller upholds `start_acquire`'s contract, which is this function's.
    let lock = match unsafe { start_acquire(lock, out) } {
        Ok(lock) => lock,
        Err(status) => return status,
    };
    // SAFETY: the caller guarantees `ranges` is NULL or valid for `count` entries.
    let request = match unsafe { request_from(ranges, count) } {
        Ok(request) => request,
        Err(status) => return status,
    };
    no_unwind(|| {
        let held = match wait {
            // Panics on an invalid or overlapping request: `request_from` checked it.
            Wait::Forever => Ok(lock.lock_many(request)),
            Wait::Never => lock.try_lock_many(request),
            Wait::For(timeout) => lock.try_lock_many_for(request, timeout),
        };
        match held {
            Ok(many) => {
                let guards = many.into_guards().into_boxed_slice();
                // SAFETY: `start_acquire` checked that `out` is not NULL; the caller
                // guarantees that it is valid for writes.
                unsafe { hand_out(Held::Many(guards), out) }
            }
            Err(err) => lock_error(err),
        }
    })
}

/// Makes a range lock. Free it with `rl_lock_free`.
///
/// Returns NULL only if making the lock panicked (a bug; see `RL_PANIC`). Running out of
/// memory aborts the process, as every allocation in Rust does.
#[no_mangle]
pub extern "C" fn rl_lock_new() -> *mut rl_lock_t {
    catch_unwind(|| Box::into_raw(Box::new(rl_lock_t { lock: RangeLock::new() })))
        .unwrap_or(ptr::null_mut())
}

/// Frees a lock made by `rl_lock_new`.
///
/// Returns `RL_OK` when the lock was freed; `RL_BUSY` if a range is still held (some handle
/// was not unlocked), in which case nothing was freed and the lock and its handles stay
/// valid; `RL_NULL_ARGUMENT` for NULL. The check costs one `rl_try_lock` of the whole
/// domain here and nothing in the other functions.
///
/// # Safety
///
/// `lock` must be NULL or a lock from `rl_lock_new` that was not freed. No other call on
/// the lock or on one of its handles may run concurrently with this one, and every earlier
/// call must have returned before this one starts (for instance through a `pthread_join`
/// or a mutex); after `RL_OK` the lock must not be used again.
#[no_mangle]
pub unsafe extern "C" fn rl_lock_free(lock: *mut rl_lock_t) -> c_int {
    if lock.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    no_unwind(|| {
        let held = {
            // SAFETY: `lock` is not NULL and the caller guarantees it is a live lock from
            // `rl_lock_new`; the borrow ends before the lock is freed below.
            let shared = unsafe { &(*lock).lock };
            // Every valid range overlaps the whole domain: this fails iff a range is held
            // (a racing `try_lock` could also make it fail, but the contract excludes
            // concurrent calls, and a spurious failure would only leave the lock alive).
            shared.try_lock(0..u64::MAX).is_err()
        };
        if held {
            return code(rl_status::RL_BUSY);
        }
        // SAFETY: `lock` came from `Box::into_raw` in `rl_lock_new` and was not freed
        // (caller's contract). No guard borrows it: the whole-domain lock just succeeded, so
        // no range was held, and no call on it runs now or later (caller's contract).
        drop(unsafe { Box::from_raw(lock) });
        code(rl_status::RL_OK)
    })
}

/// Locks `[start, end)` in `mode` (`RL_EXCLUSIVE` or `RL_SHARED`), waiting as long as it
/// takes.
///
/// On `RL_OK`, `*out` is the handle of the held range: pass it to `rl_unlock` exactly once.
/// On any other status, `*out` is set to NULL (when `out` is not NULL) and nothing is held.
/// Returns `RL_NULL_ARGUMENT` if `lock` or `out` is NULL, `RL_INVALID_MODE` for an unknown
/// mode, `RL_INVALID_RANGE` if `start >= end` (checked in that order).
///
/// Waiting for a range that overlaps one this thread holds incompatibly waits forever (there
/// is no re-entrance and no upgrade), and so may a cycle of waits; the policy prefers
/// writers, so a thread that holds a shared range and waits for another can deadlock with a
/// waiting writer. Use `rl_try_lock` or `rl_lock_timeout` when unsure.
///
/// # Safety
///
/// `lock` must be NULL or a live lock from `rl_lock_new`, `out` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn rl_lock(
    lock: *mut rl_lock_t,
    start: u64,
    end: u64,
    mode: c_int,
    out: *mut *mut rl_guard_t,
) -> c_int {
    // SAFETY: the caller upholds `acquire`'s contract, which is this function's.
    unsafe { acquire(lock, start, end, mode, Wait::Forever, out) }
}

/// Locks `[start, end)` in `mode` if no incompatible holder overlaps it right now; never
/// waits for a range.
///
/// Returns `RL_WOULD_BLOCK` if one does; otherwise as `rl_lock`. Two racing `rl_try_lock`
/// calls, one shared and one exclusive, over overlapping ranges may both fail.
///
/// # Safety
///
/// As `rl_lock`.
#[no_mangle]
pub unsafe extern "C" fn rl_try_lock(
    lock: *mut rl_lock_t,
    start: u64,
    end: u64,
    mode: c_int,
    out: *mut *mut rl_guard_t,
) -> c_int {
    // SAFETY: the caller upholds `acquire`'s contract, which is this function's.
    unsafe { acquire(lock, start, end, mode, Wait::Never, out) }
}

/// Locks `[start, end)` in `mode`, giving up after `timeout_ns` nanoseconds.
///
/// Returns `RL_TIMED_OUT` if the range could not be locked in time; otherwise as `rl_lock`.
/// The timeout is measured on the monotonic clock. A timeout of 0 tries once (and answers
/// `RL_TIMED_OUT`, not `RL_WOULD_BLOCK`); `UINT64_MAX` (584 years) waits forever in practice.
///
/// # Safety
///
/// As `rl_lock`.
#[no_mangle]
pub unsafe extern "C" fn rl_lock_timeout(
    lock: *mut rl_lock_t,
    start: u64,
    end: u64,
    mode: c_int,
    timeout_ns: u64,
    out: *mut *mut rl_guard_t,
) -> c_int {
    let wait = Wait::For(Duration::from_nanos(timeout_ns));
    // SAFETY: the caller upholds `acquire`'s contract, which is this function's.
    unsafe { acquire(lock, start, end, mode, wait, out) }
}

/// Locks every range of `ranges[0..count)` in its mode, all or nothing, waiting as long as
/// it takes; one handle holds them all and `rl_unlock` releases them all.
///
/// The ranges may come in any order and must be pairwise disjoint (adjacent is fine). On
/// `RL_OK`, `*out` is the handle (for `count == 0` a handle that holds nothing; `ranges` may
/// then be NULL). On any other status `*out` is set to NULL (when `out` is not NULL) and
/// nothing is held. Returns `RL_NULL_ARGUMENT` if `lock`, `out`, or `ranges` with
/// `count > 0` is NULL; then, checking the entries in array order, `RL_INVALID_MODE` or
/// `RL_INVALID_RANGE` for the first bad one; then `RL_OVERLAPPING` if two ranges overlap.
///
/// It cannot deadlock with other `rl_lock_many` calls or single-range calls, provided the
/// calling thread holds no other range of this lock: it waits only while it holds none of
/// the request's ranges, or, after two failed attempts, takes them in ascending order
/// (the protocol is documented on the Rust `RangeLock::lock_many`).
///
/// # Safety
///
/// `lock` must be NULL or a live lock from `rl_lock_new`; `ranges` NULL or valid for
/// reading `count` entries; `out` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn rl_lock_many(
    lock: *mut rl_lock_t,
    ranges: *const rl_range_t,
    count: usize,
    out: *mut *mut rl_guard_t,
) -> c_int {
    // SAFETY: the caller upholds `acquire_many`'s contract, which is this function's.
    unsafe { acquire_many(lock, ranges, count, Wait::Forever, out) }
}

/// Locks every range of `ranges[0..count)` in its mode if none conflicts with a holder right
/// now; otherwise locks nothing and returns `RL_WOULD_BLOCK`. Otherwise as `rl_lock_many`.
///
/// # Safety
///
/// As `rl_lock_many`.
#[no_mangle]
pub unsafe extern "C" fn rl_try_lock_many(
    lock: *mut rl_lock_t,
    ranges: *const rl_range_t,
    count: usize,
    out: *mut *mut rl_guard_t,
) -> c_int {
    // SAFETY: the caller upholds `acquire_many`'s contract, which is this function's.
    unsafe { acquire_many(lock, ranges, count, Wait::Never, out) }
}

/// Locks every range of `ranges[0..count)` in its mode, all or nothing, giving up after
/// `timeout_ns` nanoseconds (monotonic clock) with `RL_TIMED_OUT` and nothing held. The
/// timeout bounds the whole call. Otherwise as `rl_lock_many`.
///
/// # Safety
///
/// As `rl_lock_many`.
#[no_mangle]
pub unsafe extern "C" fn rl_lock_many_timeout(
    lock: *mut rl_lock_t,
    ranges: *const rl_range_t,
    count: usize,
    timeout_ns: u64,
    out: *mut *mut rl_guard_t,
) -> c_int {
    let wait = Wait::For(Duration::from_nanos(timeout_ns));
    // SAFETY: the caller upholds `acquire_many`'s contract, which is this function's.
    unsafe { acquire_many(lock, ranges, count, wait, out) }
}

/// Turns every exclusive range of `guard` into a shared one, in place: the handle stays
/// valid and now holds its ranges shared. No other writer can take any part of a range in
/// between; readers may join as soon as this returns. Shared ranges are left as they are.
///
/// Returns `RL_OK`, or `RL_NULL_ARGUMENT` (and does nothing) for NULL. There is no upgrade.
///
/// # Safety
///
/// `guard` must be NULL or a handle that was not unlocked yet, and no other call may use it
/// concurrently.
#[no_mangle]
pub unsafe extern "C" fn rl_downgrade(guard: *mut rl_guard_t) -> c_int {
    if guard.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    // SAFETY: `guard` is not NULL and, by the caller's contract, a live handle that no other
    // call uses during this one, so this is the only reference to it.
    let handle = unsafe { &mut *guard };
    no_unwind(|| {
        // `Lost` stays if a downgrade panics: the guards taken out are released while
        // unwinding, and the handle holds nothing (`rl_unlock` still frees it).
        handle.held = match mem::replace(&mut handle.held, Held::Lost) {
            Held::One(one) => Held::One(one.downgrade()),
            Held::Many(many) => {
                Held::Many(many.into_vec().into_iter().map(Guard::downgrade).collect())
            }
            Held::Lost => Held::Lost,
        };
        code(rl_status::RL_OK)
    })
}

/// Unlocks every range of `guard` and frees the handle. Any thread may unlock a handle, not
/// only the one that locked it.
///
/// Returns `RL_OK`, or `RL_NULL_ARGUMENT` (and does nothing) for NULL.
///
/// # Safety
///
/// `guard` must be NULL or a handle from `rl_lock`, `rl_lock_many` or their forms that was
/// not unlocked yet, and no other call may use it concurrently; after this call it must not
/// be used again.
#[no_mangle]
pub unsafe extern "C" fn rl_unlock(guard: *mut rl_guard_t) -> c_int {
    if guard.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    // SAFETY: `guard` is not NULL and, by the caller's contract, came from `Box::into_raw` in
    // `hand_out`, was not unlocked before and is not used by anyone else; we take it back
    // exactly once. Its lock is still alive: `rl_lock_free` refuses while it is held.
    let guard = unsafe { Box::from_raw(guard) };
    no_unwind(move || {
        drop(guard);
        code(rl_status::RL_OK)
    })
}

/// Writes the range a handle holds to `*start` and `*end`. For a handle from `rl_lock_many`
/// that is the smallest range covering all of its ranges (`[0, 0)` if it holds none).
///
/// Returns `RL_OK`, or `RL_NULL_ARGUMENT` (and writes nothing) if any argument is NULL.
///
/// # Safety
///
/// `guard` must be NULL or a handle that was not unlocked yet and is not being unlocked or
/// downgraded concurrently; `start` and `end` NULL or valid for writing a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn rl_guard_range(
    guard: *const rl_guard_t,
    start: *mut u64,
    end: *mut u64,
) -> c_int {
    if guard.is_null() || start.is_null() || end.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    // SAFETY: `guard` is not NULL and the caller guarantees it is a live handle that nobody
    // frees or changes during this call.
    let range = match unsafe { &(*guard).held } {
        Held::One(one) => one.range(),
        // Sorted by start and disjoint: the last range ends last.
        Held::Many(many) => match (many.first(), many.last()) {
            (Some(first), Some(last)) => first.range().start..last.range().end,
            _ => 0..0,
        },
        Held::Lost => 0..0,
    };
    // SAFETY: neither pointer is NULL, and the caller guarantees both are valid for writes.
    unsafe {
        start.write(range.start);
        end.write(range.end);
    }
    code(rl_status::RL_OK)
}

/// The version of the library that runs, as a static NUL-terminated string such as
/// `"0.1.0"` (semantic versioning). Never NULL; do not free it. Compare with the
/// `RL_VERSION_*` macros to tell the header you compiled with from the library you run.
#[no_mangle]
pub extern "C" fn rl_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The version of the library that runs as one number, `major * 10000 + minor * 100 +
/// patch` (100 for 0.1.0), comparable with `RL_VERSION_NUMBER` from the header.
#[no_mangle]
pub extern "C" fn rl_version_number() -> u32 {
    RL_VERSION_NUMBER
}

/// A static, NUL-terminated English description of a status code (for messages); unknown
/// codes get `"unknown rangelock status"`. Never NULL; do not free it.
#[no_mangle]
pub extern "C" fn rl_status_str(status: c_int) -> *const c_char {
    use rl_status::*;
    let text = match status {
        s if s == code(RL_OK) => c"ok",
        s if s == code(RL_WOULD_BLOCK) => c"the range is held by an incompatible holder",
        s if s == code(RL_TIMED_OUT) => c"timed out waiting for the range",
        s if s == code(RL_INVALID_RANGE) => {
            c"invalid range: a range must be non-empty (start < end)"
        }
        s if s == code(RL_NULL_ARGUMENT) => c"a required pointer argument was NULL",
        s if s == code(RL_INVALID_MODE) => c"invalid mode: not RL_EXCLUSIVE or RL_SHARED",
        s if s == code(RL_BUSY) => c"the lock still has held ranges",
        s if s == code(RL_OVERLAPPING) => c"two ranges of the request overlap",
        s if s == code(RL_PANIC) => {
            c"internal error in rangelock (a panic); the lock may be inconsistent"
        }
        _ => c"unknown rangelock status",
    };
    text.as_ptr()
}

#[cfg(test)]
mod tests;
