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
//! - Every function returns an `int` status from `rl_status` (`rl_lock_new` returns the lock
//!   or NULL). A NULL pointer argument is answered with `RL_NULL_ARGUMENT`, never a crash.
//! - `rl_lock_free` refuses (`RL_BUSY`, the lock stays valid) while a range is held, so a
//!   handle never outlives its lock; it checks with one whole-domain `try_lock`, which costs
//!   nothing on the lock and unlock paths.
//! - No panic unwinds into C: every entry point runs under [`catch_unwind`] and reports a
//!   panic (a bug in this library) as `RL_PANIC`.
//!
//! This crate builds only on the safe API of [`rangelock`] ([`RangeLock`], [`RangeGuard`],
//! [`LockError`], [`Mode`]), so nothing here depends on the layout of the lock's tokens.

// The exported types and constants carry their C names, so the header needs no renaming.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::time::Duration;

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

/// A held range. Opaque; made by `rl_lock`, `rl_try_lock` and `rl_lock_timeout`, consumed
/// by `rl_unlock`.
#[derive(Debug)]
pub struct rl_guard_t {
    /// Borrows the lock for `'static`: `rl_lock_free` frees the lock only when no range is
    /// held, i.e. after every guard is gone (see `acquire`).
    guard: RangeGuard<'static>,
}

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
        // Only multi-range requests overlap, and the C API takes one range per call.
        LockError::Overlapping { .. } => rl_status::RL_INVALID_RANGE,
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
    if out.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    // SAFETY: `out` is not NULL, and the caller guarantees that it is valid for writes.
    unsafe { out.write(ptr::null_mut()) };
    if lock.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    let Some(mode) = mode_from(mode) else {
        return code(rl_status::RL_INVALID_MODE);
    };
    no_unwind(|| {
        // SAFETY: `lock` is not NULL and the caller guarantees it is a lock from
        // `rl_lock_new` that is not freed while this call runs. The `'static` borrow outlives
        // this call only inside the guard we return, and the lock outlives every guard:
        // `rl_lock_free` frees it only after a whole-domain exclusive `try_lock` succeeds,
        // which it cannot while a range is held (every valid range overlaps
        // `0..u64::MAX`), i.e. while a guard exists; and the caller must not run
        // `rl_lock_free` concurrently with any other call on the lock or its handles.
        let lock: &'static RangeLock = unsafe { &(*lock).lock };
        let range = start..end;
        if start >= end {
            // Checked here: the blocking call panics on a range that locks nothing.
            return code(rl_status::RL_INVALID_RANGE);
        }
        let held = match (wait, mode) {
            (Wait::Forever, _) => Ok(lock.lock_mode(range, mode)),
            (Wait::Never, _) => lock.try_lock_mode(range, mode),
            (Wait::For(timeout), Mode::Exclusive) => lock.lock_timeout(range, timeout),
            (Wait::For(timeout), Mode::Shared) => lock.lock_shared_timeout(range, timeout),
        };
        match held {
            Ok(guard) => {
                let handle = Box::into_raw(Box::new(rl_guard_t { guard }));
                // SAFETY: as above, `out` is not NULL and valid for writes.
                unsafe { out.write(handle) };
                code(rl_status::RL_OK)
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

/// Unlocks the range of `guard` and frees the handle. Any thread may unlock a handle, not
/// only the one that locked it.
///
/// Returns `RL_OK`, or `RL_NULL_ARGUMENT` (and does nothing) for NULL.
///
/// # Safety
///
/// `guard` must be NULL or a handle from `rl_lock`, `rl_try_lock` or `rl_lock_timeout` that
/// was not unlocked yet, and no other call may use it concurrently; after this call it must
/// not be used again.
#[no_mangle]
pub unsafe extern "C" fn rl_unlock(guard: *mut rl_guard_t) -> c_int {
    if guard.is_null() {
        return code(rl_status::RL_NULL_ARGUMENT);
    }
    // SAFETY: `guard` is not NULL and, by the caller's contract, came from `Box::into_raw` in
    // `acquire`, was not unlocked before and is not used by anyone else; we take it back
    // exactly once. Its lock is still alive: `rl_lock_free` refuses while it is held.
    let guard = unsafe { Box::from_raw(guard) };
    no_unwind(move || {
        drop(guard);
        code(rl_status::RL_OK)
    })
}

/// Writes the range a handle holds to `*start` and `*end`.
///
/// Returns `RL_OK`, or `RL_NULL_ARGUMENT` (and writes nothing) if any argument is NULL.
///
/// # Safety
///
/// `guard` must be NULL or a handle that was not unlocked yet and is not being unlocked
/// concurrently; `start` and `end` NULL or valid for writing a `uint64_t`.
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
    // frees during this call.
    let range = unsafe { (*guard).guard.range() };
    // SAFETY: neither pointer is NULL, and the caller guarantees both are valid for writes.
    unsafe {
        start.write(range.start);
        end.write(range.end);
    }
    code(rl_status::RL_OK)
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
        s if s == code(RL_PANIC) => {
            c"internal error in rangelock (a panic); the lock may be inconsistent"
        }
        _ => c"unknown rangelock status",
    };
    text.as_ptr()
}

#[cfg(test)]
mod tests;
