//! The C API called from Rust, as C would call it.

use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use super::rl_mode::{RL_EXCLUSIVE, RL_SHARED};
use super::rl_status::*;
use super::*;

const X: c_int = RL_EXCLUSIVE as c_int;
const S: c_int = RL_SHARED as c_int;

/// A lock that the test frees at the end, asserting that nothing is still held.
struct TestLock(*mut rl_lock_t);

// SAFETY: the C API lets any number of threads use one lock at once.
unsafe impl Sync for TestLock {}

impl TestLock {
    fn new() -> Self {
        let lock = rl_lock_new();
        assert!(!lock.is_null());
        TestLock(lock)
    }

    fn try_lock(&self, start: u64, end: u64, mode: c_int) -> Result<Handle, c_int> {
        let mut out = ptr::dangling_mut();
        // SAFETY: `self.0` is a live lock (freed only in `Drop`), `out` a local.
        let status = unsafe { rl_try_lock(self.0, start, end, mode, &mut out) };
        handle(status, out)
    }

    fn lock(&self, start: u64, end: u64, mode: c_int) -> Result<Handle, c_int> {
        let mut out = ptr::dangling_mut();
        // SAFETY: as in `try_lock`.
        let status = unsafe { rl_lock(self.0, start, end, mode, &mut out) };
        handle(status, out)
    }

    fn lock_timeout(&self, start: u64, end: u64, mode: c_int, ns: u64) -> Result<Handle, c_int> {
        let mut out = ptr::dangling_mut();
        // SAFETY: as in `try_lock`.
        let status = unsafe { rl_lock_timeout(self.0, start, end, mode, ns, &mut out) };
        handle(status, out)
    }
}

impl TestLock {
    fn try_lock_many(&self, ranges: &[rl_range_t]) -> Result<Handle, c_int> {
        let mut out = ptr::dangling_mut();
        // SAFETY: `self.0` is a live lock, `ranges` a slice, `out` a local.
        let status = unsafe { rl_try_lock_many(self.0, ranges.as_ptr(), ranges.len(), &mut out) };
        handle(status, out)
    }

    fn lock_many(&self, ranges: &[rl_range_t]) -> Result<Handle, c_int> {
        let mut out = ptr::dangling_mut();
        // SAFETY: as in `try_lock_many`.
        let status = unsafe { rl_lock_many(self.0, ranges.as_ptr(), ranges.len(), &mut out) };
        handle(status, out)
    }

    fn lock_many_timeout(&self, ranges: &[rl_range_t], ns: u64) -> Result<Handle, c_int> {
        let mut out = ptr::dangling_mut();
        let (ptr, len) = (ranges.as_ptr(), ranges.len());
        // SAFETY: as in `try_lock_many`.
        let status = unsafe { rl_lock_many_timeout(self.0, ptr, len, ns, &mut out) };
        handle(status, out)
    }
}

/// One entry of a request.
fn entry(start: u64, end: u64, mode: c_int) -> rl_range_t {
    rl_range_t { start, end, mode }
}

impl Drop for TestLock {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `rl_lock_new`, and every thread that used it has been
        // joined (the tests use scoped threads or join them).
        let status = unsafe { rl_lock_free(self.0) };
        if !thread::panicking() {
            assert_eq!(status, code(RL_OK), "a range was still held when the test ended");
        }
    }
}

/// A handle, sendable to another thread to unlock there.
#[derive(Debug)]
struct Handle(*mut rl_guard_t);

// SAFETY: handles may be unlocked from any thread (the guard inside is `Send`).
unsafe impl Send for Handle {}

impl Handle {
    fn unlock(self) {
        // SAFETY: `self.0` is a live handle from a successful lock call, consumed here once.
        assert_eq!(unsafe { rl_unlock(self.0) }, code(RL_OK));
    }

    fn downgrade(&self) {
        // SAFETY: a live handle, used by this thread only.
        assert_eq!(unsafe { rl_downgrade(self.0) }, code(RL_OK));
    }

    fn range(&self) -> (u64, u64) {
        let (mut start, mut end) = (0, 0);
        // SAFETY: a live handle; two locals to write.
        assert_eq!(unsafe { rl_guard_range(self.0, &mut start, &mut end) }, code(RL_OK));
        (start, end)
    }
}

/// The status of an acquisition as a `Result`, checking the `*out` contract.
fn handle(status: c_int, out: *mut rl_guard_t) -> Result<Handle, c_int> {
    if status == code(RL_OK) {
        assert!(!out.is_null() && out != ptr::dangling_mut(), "RL_OK without a handle");
        Ok(Handle(out))
    } else {
        assert!(out.is_null(), "status {status} must set *out to NULL");
        Err(status)
    }
}

#[test]
fn exclusive_ranges_exclude_overlaps_until_unlocked() {
    let lock = TestLock::new();
    let a = lock.try_lock(0, 100, X).unwrap();
    assert_eq!(a.range(), (0, 100));
    assert_eq!(lock.try_lock(50, 150, X).unwrap_err(), code(RL_WOULD_BLOCK));
    assert_eq!(lock.try_lock(99, 100, S).unwrap_err(), code(RL_WOULD_BLOCK));
    let b = lock.try_lock(100, 200, X).unwrap(); // adjacent: no overlap
    a.unlock();
    let c = lock.try_lock(50, 100, X).unwrap();
    assert_eq!(lock.try_lock(0, u64::MAX, S).unwrap_err(), code(RL_WOULD_BLOCK));
    b.unlock();
    c.unlock();
}

#[test]
fn shared_holders_overlap_and_exclude_writers() {
    let lock = TestLock::new();
    let r1 = lock.lock(0, 100, S).unwrap();
    let r2 = lock.try_lock(50, 150, S).unwrap();
    let r3 = lock.lock_timeout(0, u64::MAX, S, 1_000_000).unwrap();
    assert_eq!(lock.try_lock(120, 130, X).unwrap_err(), code(RL_WOULD_BLOCK));
    r1.unlock();
    r2.unlock();
    assert_eq!(lock.try_lock(120, 130, X).unwrap_err(), code(RL_WOULD_BLOCK));
    r3.unlock();
    lock.try_lock(120, 130, X).unwrap().unlock();
}

#[test]
fn a_timeout_on_a_held_range_times_out_after_waiting() {
    let lock = TestLock::new();
    let held = lock.lock(0, 10, X).unwrap();
    let timeout = Duration::from_millis(20);
    let started = Instant::now();
    let err = lock.lock_timeout(5, 6, X, timeout.as_nanos() as u64).unwrap_err();
    assert_eq!(err, code(RL_TIMED_OUT));
    assert!(started.elapsed() >= timeout, "gave up after {:?}", started.elapsed());
    assert_eq!(lock.lock_timeout(9, 20, S, 0).unwrap_err(), code(RL_TIMED_OUT));
    lock.lock_timeout(10, 20, S, 0).unwrap().unlock();
    held.unlock();
    lock.lock_timeout(5, 6, X, 0).unwrap().unlock();
}

#[test]
fn a_timed_wait_gets_the_range_when_it_is_unlocked() {
    let lock = TestLock::new();
    let held = lock.lock(0, 10, X).unwrap();
    let ready = Barrier::new(2);
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            ready.wait();
            lock.lock_timeout(0, 1, X, u64::MAX).map(|h| {
                let range = h.range();
                h.unlock();
                range
            })
        });
        ready.wait();
        held.unlock();
        assert_eq!(waiter.join().unwrap(), Ok((0, 1)));
    });
}

#[test]
#[allow(clippy::reversed_empty_ranges)]
fn empty_and_inverted_ranges_are_invalid() {
    let lock = TestLock::new();
    for (start, end) in [(5, 5), (6, 5), (u64::MAX, u64::MAX), (u64::MAX, 0)] {
        assert_eq!(lock.try_lock(start, end, X).unwrap_err(), code(RL_INVALID_RANGE));
        assert_eq!(lock.lock(start, end, S).unwrap_err(), code(RL_INVALID_RANGE));
        assert_eq!(lock.lock_timeout(start, end, X, 0).unwrap_err(), code(RL_INVALID_RANGE));
    }
    lock.try_lock(u64::MAX - 1, u64::MAX, X).unwrap().unlock();
}

#[test]
fn unknown_modes_are_invalid() {
    let lock = TestLock::new();
    for mode in [2, -1, c_int::MAX] {
        assert_eq!(lock.try_lock(0, 1, mode).unwrap_err(), code(RL_INVALID_MODE));
        assert_eq!(lock.lock(0, 1, mode).unwrap_err(), code(RL_INVALID_MODE));
        assert_eq!(lock.lock_timeout(0, 1, mode, 0).unwrap_err(), code(RL_INVALID_MODE));
    }
}

#[test]
fn null_arguments_are_reported_and_lock_nothing() {
    let lock = TestLock::new();
    let null_lock: *mut rl_lock_t = ptr::null_mut();
    let mut out = ptr::dangling_mut();
    // SAFETY: NULL locks and NULL outs are allowed; `out` is a local.
    unsafe {
        assert_eq!(rl_lock(null_lock, 0, 1, X, &mut out), code(RL_NULL_ARGUMENT));
        assert!(out.is_null());
        out = ptr::dangling_mut();
        assert_eq!(rl_try_lock(null_lock, 0, 1, X, &mut out), code(RL_NULL_ARGUMENT));
        assert!(out.is_null());
        out = ptr::dangling_mut();
        assert_eq!(rl_lock_timeout(null_lock, 0, 1, X, 0, &mut out), code(RL_NULL_ARGUMENT));
        assert!(out.is_null());
        let no_out = ptr::null_mut();
        assert_eq!(rl_lock(lock.0, 0, 1, X, no_out), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_try_lock(lock.0, 0, 1, X, no_out), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_lock_timeout(lock.0, 0, 1, X, 0, no_out), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_unlock(ptr::null_mut()), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_lock_free(ptr::null_mut()), code(RL_NULL_ARGUMENT));
    }
    // The calls without an `out` locked nothing.
    let h = lock.try_lock(0, 1, X).unwrap();
    let mut start = 0;
    // SAFETY: NULL arguments are allowed; `h` is live, `start` a local.
    unsafe {
        assert_eq!(rl_guard_range(ptr::null(), &mut start, &mut start), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_guard_range(h.0, ptr::null_mut(), &mut start), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_guard_range(h.0, &mut start, ptr::null_mut()), code(RL_NULL_ARGUMENT));
    }
    h.unlock();
}

#[test]
fn freeing_a_lock_with_held_ranges_is_refused() {
    let lock = rl_lock_new();
    let mut out = ptr::null_mut();
    for mode in [X, S] {
        // SAFETY: `lock` is live until the `RL_OK` below; `out` is a local.
        unsafe {
            assert_eq!(rl_lock(lock, 10, 20, mode, &mut out), code(RL_OK));
            assert_eq!(rl_lock_free(lock), code(RL_BUSY));
            // The lock and the handle are still valid: the range is still held.
            let mut other = ptr::null_mut();
            assert_eq!(rl_try_lock(lock, 15, 16, X, &mut other), code(RL_WOULD_BLOCK));
            assert_eq!(rl_try_lock(lock, 0, 10, X, &mut other), code(RL_OK));
            assert_eq!(rl_lock_free(lock), code(RL_BUSY));
            assert_eq!(rl_unlock(other), code(RL_OK));
            assert_eq!(rl_unlock(out), code(RL_OK));
        }
    }
    // SAFETY: nothing is held and no other thread uses `lock`.
    assert_eq!(unsafe { rl_lock_free(lock) }, code(RL_OK));
}

#[test]
fn a_handle_may_be_unlocked_by_another_thread() {
    let lock = TestLock::new();
    let h = lock.lock(0, 64, X).unwrap();
    thread::spawn(move || h.unlock()).join().unwrap();
    lock.try_lock(0, 64, X).unwrap().unlock();
}

#[test]
fn threads_writing_under_exclusive_ranges_never_see_each_other() {
    const THREADS: usize = 4;
    const SLOTS: u64 = 32;
    const ROUNDS: usize = 2_000;
    let lock = TestLock::new();
    let cells: Vec<AtomicU8> = (0..SLOTS).map(|_| AtomicU8::new(0)).collect();
    let broken = AtomicBool::new(false);
    thread::scope(|s| {
        for id in 1..=THREADS as u8 {
            let (lock, cells, broken) = (&lock, &cells, &broken);
            s.spawn(move || {
                let mut rng = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                for _ in 0..ROUNDS {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let start = rng % SLOTS;
                    let end = start + 1 + (rng >> 32) % (SLOTS - start).min(8);
                    let h = lock.lock(start, end, X).unwrap();
                    let mine = &cells[start as usize..end as usize];
                    mine.iter().for_each(|c| c.store(id, Ordering::Relaxed));
                    thread::yield_now();
                    if mine.iter().any(|c| c.load(Ordering::Relaxed) != id) {
                        broken.store(true, Ordering::Relaxed);
                    }
                    h.unlock();
                }
            });
        }
    });
    assert!(!broken.load(Ordering::Relaxed), "a holder's cells were overwritten");
}

#[test]
fn every_status_has_a_description() {
    let all = [
        RL_OK,
        RL_WOULD_BLOCK,
        RL_TIMED_OUT,
        RL_INVALID_RANGE,
        RL_NULL_ARGUMENT,
        RL_INVALID_MODE,
        RL_BUSY,
        RL_PANIC,
        RL_OVERLAPPING,
    ];
    let unknown = describe(-1);
    assert_eq!(unknown, "unknown rangelock status");
    assert_eq!(describe(code(RL_OVERLAPPING) + 1), unknown);
    let mut seen = Vec::new();
    for (i, status) in all.into_iter().enumerate() {
        assert_eq!(code(status), i as c_int, "codes are dense from 0");
        let text = describe(code(status));
        assert_ne!(text, unknown, "{status:?}");
        assert!(!seen.contains(&text), "{status:?} shares its description");
        seen.push(text);
    }
}

fn describe(status: c_int) -> String {
    // SAFETY: `rl_status_str` returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(rl_status_str(status)) }.to_str().unwrap().to_owned()
}

#[test]
fn lock_many_holds_every_range_under_one_handle() {
    let lock = TestLock::new();
    // Unsorted, adjacent ranges are fine.
    let request = [entry(100, 200, X), entry(0, 50, S), entry(50, 60, X)];
    let all = lock.lock_many(&request).unwrap();
    assert_eq!(all.range(), (0, 200), "the covering range");
    assert_eq!(lock.try_lock(150, 151, X).unwrap_err(), code(RL_WOULD_BLOCK));
    assert_eq!(lock.try_lock(55, 56, S).unwrap_err(), code(RL_WOULD_BLOCK));
    lock.try_lock(10, 20, S).unwrap().unlock(); // the shared one admits readers
    lock.try_lock(60, 100, X).unwrap().unlock(); // the gap is free
    all.unlock();
    lock.try_lock(0, 200, X).unwrap().unlock();
}

#[test]
fn try_lock_many_is_all_or_nothing() {
    let lock = TestLock::new();
    let held = lock.lock(25, 26, X).unwrap();
    let request = [entry(0, 10, X), entry(20, 30, S)];
    assert_eq!(lock.try_lock_many(&request).unwrap_err(), code(RL_WOULD_BLOCK));
    lock.try_lock(0, 10, X).unwrap().unlock(); // the failed request holds nothing
    assert_eq!(lock.lock_many_timeout(&request, 1_000_000).unwrap_err(), code(RL_TIMED_OUT));
    lock.try_lock(0, 10, X).unwrap().unlock();
    held.unlock();
    lock.try_lock_many(&request).unwrap().unlock();
    lock.lock_many_timeout(&request, 0).unwrap().unlock();
}

#[test]
fn a_many_request_waits_for_a_holder_then_gets_every_range() {
    let lock = TestLock::new();
    let held = lock.lock(5, 6, S).unwrap();
    let ready = Barrier::new(2);
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            ready.wait();
            let h = lock.lock_many(&[entry(0, 10, X), entry(20, 30, X)]).unwrap();
            let range = h.range();
            h.unlock();
            range
        });
        ready.wait();
        held.unlock();
        assert_eq!(waiter.join().unwrap(), (0, 30));
    });
}

#[test]
#[allow(clippy::reversed_empty_ranges)]
fn bad_many_requests_are_rejected_and_lock_nothing() {
    let lock = TestLock::new();
    let overlapping = [entry(0, 10, X), entry(30, 40, S), entry(9, 20, S)];
    let bad_range = [entry(0, 10, X), entry(5, 5, X), entry(7, 3, 9)];
    let bad_mode = [entry(0, 10, X), entry(20, 30, 2), entry(7, 3, X)];
    for (request, status) in [
        (&overlapping, RL_OVERLAPPING),
        (&bad_range, RL_INVALID_RANGE),
        (&bad_mode, RL_INVALID_MODE),
    ] {
        assert_eq!(lock.try_lock_many(request).unwrap_err(), code(status));
        assert_eq!(lock.lock_many(request).unwrap_err(), code(status));
        assert_eq!(lock.lock_many_timeout(request, 0).unwrap_err(), code(status));
    }
    let mut out = ptr::dangling_mut();
    // SAFETY: NULL arguments are allowed; `out` is a local.
    unsafe {
        assert_eq!(rl_lock_many(lock.0, ptr::null(), 1, &mut out), code(RL_NULL_ARGUMENT));
        assert!(out.is_null());
        let one = [entry(0, 1, X)];
        let null_lock = ptr::null_mut();
        assert_eq!(rl_try_lock_many(null_lock, one.as_ptr(), 1, &mut out), code(RL_NULL_ARGUMENT));
        let no_out = ptr::null_mut();
        assert_eq!(rl_lock_many(lock.0, one.as_ptr(), 1, no_out), code(RL_NULL_ARGUMENT));
        assert_eq!(rl_downgrade(ptr::null_mut()), code(RL_NULL_ARGUMENT));
    }
    lock.try_lock(0, u64::MAX, X).unwrap().unlock(); // nothing was locked
                                                     // An empty request (the array may be NULL) holds nothing.
                                                     // SAFETY: `count` is 0, so `ranges` may be NULL; `out` is a local.
    let status = unsafe { rl_lock_many(lock.0, ptr::null(), 0, &mut out) };
    let empty = handle(status, out).unwrap();
    assert_eq!(empty.range(), (0, 0));
    lock.try_lock(0, u64::MAX, X).unwrap().unlock();
    empty.unlock();
}

#[test]
fn downgrade_admits_readers_and_keeps_writers_out() {
    let lock = TestLock::new();
    let w = lock.lock(0, 100, X).unwrap();
    assert_eq!(lock.try_lock(50, 60, S).unwrap_err(), code(RL_WOULD_BLOCK));
    w.downgrade();
    assert_eq!(w.range(), (0, 100));
    lock.try_lock(50, 60, S).unwrap().unlock();
    assert_eq!(lock.try_lock(50, 60, X).unwrap_err(), code(RL_WOULD_BLOCK));
    w.downgrade(); // a shared handle stays as it is
    lock.try_lock(0, 1, S).unwrap().unlock();
    w.unlock();
    lock.try_lock(0, 100, X).unwrap().unlock();

    let many = lock.lock_many(&[entry(0, 10, X), entry(20, 30, S), entry(40, 50, X)]).unwrap();
    assert_eq!(lock.try_lock(5, 6, S).unwrap_err(), code(RL_WOULD_BLOCK));
    many.downgrade();
    for start in [5, 25, 45] {
        lock.try_lock(start, start + 1, S).unwrap().unlock();
        assert_eq!(lock.try_lock(start, start + 1, X).unwrap_err(), code(RL_WOULD_BLOCK));
    }
    many.unlock();
    lock.try_lock(0, 50, X).unwrap().unlock();
}

#[test]
fn the_version_is_the_crates_and_the_headers() {
    // SAFETY: `rl_version` returns a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(rl_version()) }.to_str().unwrap();
    assert_eq!(text, env!("CARGO_PKG_VERSION"));
    let part = |name: &str, value: &str| -> u32 {
        value.parse().unwrap_or_else(|_| panic!("{name} = {value:?}"))
    };
    let major = part("major", env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = part("minor", env!("CARGO_PKG_VERSION_MINOR"));
    let patch = part("patch", env!("CARGO_PKG_VERSION_PATCH"));
    // The header's macros are literals (cbindgen cannot evaluate env!): bump them with the
    // version and regenerate the header (tests/header.rs).
    assert_eq!(
        (RL_VERSION_MAJOR, RL_VERSION_MINOR, RL_VERSION_PATCH),
        (major, minor, patch),
        "RL_VERSION_* in src/lib.rs do not match Cargo.toml's version"
    );
    assert!(minor < 100 && patch < 100, "rl_version_number packs minor and patch in 2 digits");
    assert_eq!(rl_version_number(), major * 10000 + minor * 100 + patch);
}
