//! A program that uses only `rangelock`'s public API, the way a storage engine would:
//! a `static` lock, ranges written every way `RangeBounds` allows, owned guards moved into
//! threads, and a `SliceLock` whose guards are the access to the data. No `unsafe`.
//!
//! Run: `cargo run -p rangelock --example quick_start` (`cargo test` runs it too).
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use rangelock::{LockError, Mode, RangeLock, SliceLock};

/// One lock for a whole file's byte ranges, built at compile time.
#[cfg(not(loom))] // loom's atomics are not `const`; the loom build runs the models only
static FILE: RangeLock = RangeLock::new();
#[cfg(loom)]
static FILE: std::sync::LazyLock<RangeLock> = std::sync::LazyLock::new(RangeLock::new);

const PAGE: usize = 4096;

fn main() {
    // Ranges as the caller thinks of them.
    let header = FILE.lock(..PAGE as u64); // exclusive, waits as long as it takes
    let rows = FILE.lock_shared(4096..=8191); // shared
    assert_eq!(FILE.try_lock(100..200).unwrap_err(), LockError::WouldBlock);
    assert!(FILE.try_lock_shared(5000..6000).is_ok()); // readers share
    drop((header, rows));

    // Owned guards: the lock behind an Arc, the guards into threads.
    let table = Arc::new(RangeLock::new());
    let writers: Vec<_> = (0..4u64)
        .map(|i| {
            let held = table.lock_owned(i * 100..(i + 1) * 100);
            thread::spawn(move || {
                assert_eq!(held.range(), i * 100..(i + 1) * 100);
                drop(held); // released on the thread that got it
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let all = table.lock_many([(0..200, Mode::Exclusive), (300..400, Mode::Shared)]);
    assert_eq!(all.len(), 2);
    drop(all);
    assert!(table.try_lock_for(.., Duration::from_millis(100)).is_ok());

    // The data itself: 16 pages written in parallel through their guards.
    let pages = SliceLock::new(vec![[0u8; PAGE]; 16]);
    thread::scope(|s| {
        for p in 0..16 {
            let pages = &pages;
            s.spawn(move || pages.lock(p..=p)[0].fill(p as u8));
        }
    });
    let page = pages.lock(3..4).downgrade(); // written, then read with no writer in between
    assert!(page[0].iter().all(|&b| b == 3));
    drop(page);
    let total: u64 = pages.into_inner().iter().flatten().map(|&b| u64::from(b)).sum();
    assert_eq!(total, (0..16).map(|p| p * PAGE as u64).sum::<u64>());
    println!("quick_start: ok");
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs() {
        super::main();
    }
}
