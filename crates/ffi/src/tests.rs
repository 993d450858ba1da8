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
    ];
    let unknown = describe(-1);
    assert_eq!(unknown, "unknown rangelock status");
    assert_eq!(describe(code(RL_PANIC) + 1), unknown);
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
