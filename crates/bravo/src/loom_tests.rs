//! Loom models of the fast-reader/writer handshake, the bias re-enabled by a slow reader,
//! and `try_write` (run by `ci/loom.sh`).
//!
//! The protected value is a loom `UnsafeCell`: readers read it, writers write it, and loom
//! reports any two accesses not ordered by happens-before, so a reader and a writer inside
//! together (or a missing Release/Acquire pair) fails the model. Tables have one slot and
//! every thread hashes to it (see `table::thread_id`), so a second concurrent reader takes
//! the slow path.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use crate::{Bravo, VisibleReaders};

fn lock() -> Arc<Bravo<UnsafeCell<u64>>> {
    Arc::new(Bravo::with_table(UnsafeCell::new(0), Arc::new(VisibleReaders::new(1))))
}

fn read(lock: &Bravo<UnsafeCell<u64>>) -> u64 {
    let r = lock.read();
    // SAFETY: a read lock is held; loom checks that no writer is inside.
    r.with(|v| unsafe { *v })
}

fn write(lock: &Bravo<UnsafeCell<u64>>) {
    let w = lock.write();
    // SAFETY: the write lock is held; loom checks that nobody else is inside.
    w.with_mut(|v| unsafe { *v += 1 });
}

/// A thread running `f` on the lock.
fn spawn(
    lock: &Arc<Bravo<UnsafeCell<u64>>>,
    f: fn(&Bravo<UnsafeCell<u64>>) -> u64,
) -> thread::JoinHandle<u64> {
    let lock = Arc::clone(lock);
    thread::spawn(move || f(&lock))
}

#[test]
fn loom_fast_reader_and_writer_exclude() {
    loom::model(|| {
        let lock = lock();
        let reader = spawn(&lock, read);
        write(&lock);
        let seen = reader.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(read(&lock), 1);
    });
}

#[test]
fn loom_reenabled_bias_publishes_the_last_write() {
    loom::model(|| {
        let lock = lock();
        // A write revokes the bias. Then a writer, a slow reader (which re-enables the bias:
        // the window is empty under loom) and a reader that may find the bias re-enabled
        // and read on the fast path, with no lock between it and the writer: only the
        // re-enable's Release, after the slow reader acquired the underlying lock,
        // orders the write before that fast read.
        write(&lock);
        assert!(!lock.is_read_biased());
        let writer = spawn(&lock, |lock| {
            write(lock);
            0
        });
        let slow = spawn(&lock, read);
        let seen = read(&lock);
        assert!((1..=2).contains(&seen));
        writer.join().unwrap();
        assert!((1..=2).contains(&slow.join().unwrap()));
    });
}

#[test]
fn loom_try_write_never_overlaps_a_fast_reader() {
    loom::model(|| {
        let lock = lock();
        let reader = spawn(&lock, read);
        let wrote = match lock.try_write() {
            Some(w) => {
                // SAFETY: the write lock is held; loom checks it.
                w.with_mut(|v| unsafe { *v += 1 });
                1
            }
            None => 0,
        };
        let seen = reader.join().unwrap();
        assert!(seen <= wrote);
        assert_eq!(read(&lock), wrote);
    });
}
