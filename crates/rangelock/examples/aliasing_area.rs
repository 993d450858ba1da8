//! LeanStore's shared "aliasing area" (concurrent-range-locking thesis §5.4), in miniature.
//!
//! A storage engine presents a large object (BLOB) whose extents are scattered on disk as
//! one contiguous span of virtual memory: it reserves a free range of a shared *aliasing
//! area*, maps/copies the extents there, lets the reader `memcpy` out of it, and releases
//! the range. Workers reserve ranges with `try_lock` (a taken range means "try another
//! place", never "wait"), so the range lock is the allocator of the area.
//!
//! Here the area is a plain buffer of pages, and the "mapping" is a copy of a 1 MB payload
//! into the reserved range followed by a copy out of it (the reader's `memcpy`), which must
//! come back intact: no two workers ever own overlapping pages.
//!
//! Run: `cargo run --release -p rangelock --example aliasing_area -- [threads] [millis]`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rangelock::{SliceError, SliceLock};

/// Bytes per page (the unit of the range lock).
const PAGE: usize = 4096;
/// Payload per transaction: 1 MB, as in the thesis's YCSB setup.
const PAYLOAD: usize = 1 << 20;
/// Pages one payload occupies.
const PAYLOAD_PAGES: usize = PAYLOAD / PAGE;

/// The shared aliasing area: pages that workers own while their range is locked. The
/// lock hands out exactly the locked pages, so the workers need no `unsafe`.
struct AliasingArea {
    pages: SliceLock<[u8; PAGE]>,
}

impl AliasingArea {
    fn new(pages: usize) -> Self {
        AliasingArea { pages: SliceLock::new(vec![[0; PAGE]; pages]) }
    }
}

/// One worker's statistics.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    transactions: u64,
    collisions: u64,
}

/// Serves BLOB reads until `stop` is set or `max` transactions are done: reserve a free
/// extent (random first guess, then linear probing on collisions), copy the payload in,
/// copy it out and check it, release.
fn worker(area: &AliasingArea, id: u64, stop: &AtomicBool, max: u64) -> Stats {
    let mut stats = Stats::default();
    let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (id + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut payload = vec![0u8; PAYLOAD];
    let mut out = vec![0u8; PAYLOAD];
    let slots = (area.pages.len() - PAYLOAD_PAGES + 1) as u64;
    while stats.transactions < max && !stop.load(Ordering::Relaxed) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // The "BLOB" of this transaction: bytes derived from the worker and the transaction.
        let tag = (id << 56) | stats.transactions;
        for (i, chunk) in payload.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&(tag ^ i as u64).to_le_bytes());
        }
        let mut first = (x % slots) as usize;
        let mut extent = loop {
            match area.pages.try_lock(first..first + PAYLOAD_PAGES) {
                Ok(extent) => break extent,
                Err(SliceError::WouldBlock) => {
                    stats.collisions += 1;
                    first = (first + PAYLOAD_PAGES / 4) % slots as usize;
                }
                Err(e) => panic!("unexpected lock error: {e}"),
            }
        };
        // The guard is the access: these pages, and only these, for as long as it lives.
        extent.as_flattened_mut().copy_from_slice(&payload);
        out.copy_from_slice(extent.as_flattened());
        drop(extent);
        assert!(out == payload, "extent at page {first} was overwritten while reserved");
        stats.transactions += 1;
    }
    stats
}

/// Runs `threads` workers on an area with room for `4 * threads` payloads.
fn run(threads: usize, duration: Option<Duration>, max_per_thread: u64) -> Vec<Stats> {
    let area = Arc::new(AliasingArea::new(4 * threads * PAYLOAD_PAGES));
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..threads)
        .map(|id| {
            let (area, stop) = (Arc::clone(&area), Arc::clone(&stop));
            thread::spawn(move || worker(&area, id as u64, &stop, max_per_thread))
        })
        .collect();
    if let Some(duration) = duration {
        thread::sleep(duration); // a measurement period, not synchronization
        stop.store(true, Ordering::Relaxed);
    }
    handles.into_iter().map(|h| h.join().expect("worker panicked")).collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let millis = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let begin = Instant::now();
    let stats = run(threads, Some(Duration::from_millis(millis)), u64::MAX);
    let elapsed = begin.elapsed().as_secs_f64();
    let transactions: u64 = stats.iter().map(|s| s.transactions).sum();
    let collisions: u64 = stats.iter().map(|s| s.collisions).sum();
    println!(
        "aliasing area: {threads} workers, 1 MB payloads, {transactions} transactions in \
         {elapsed:.2} s = {:.0} txn/s ({collisions} reservation collisions)",
        transactions as f64 / elapsed
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_never_share_an_extent() {
        let stats = run(4, None, 40);
        assert!(stats.iter().all(|s| s.transactions == 40));
    }

    #[test]
    fn collisions_move_to_another_extent() {
        // One payload slot more than workers: reservations collide and still succeed.
        let area = AliasingArea::new(PAYLOAD_PAGES * 2);
        let stop = AtomicBool::new(false);
        let held = area.pages.try_lock(0..PAYLOAD_PAGES).unwrap();
        let stats = worker(&area, 1, &stop, 3);
        assert_eq!(stats.transactions, 3);
        drop(held);
    }
}
