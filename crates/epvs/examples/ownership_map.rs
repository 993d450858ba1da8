//! Cluster ownership map on EPVS (seed paper Fig. 8).
//!
//! A shard owns a set of 16-bit hash buckets kept in a plain, non-thread-safe `HashSet`.
//! Requests check ownership and execute inside one protected region; acquiring or
//! relinquishing a bucket is a version transition whose critical section edits the set.
//! Once `relinquish` returns, no request on that bucket is executing or will execute,
//! so migration can start.
//!
//! Run with `cargo run -p epvs --example ownership_map`.

use epvs::version::Epvs;
use std::cell::UnsafeCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread;

/// The owned buckets: a single-threaded set, made shareable by EPVS.
struct Ownership(UnsafeCell<HashSet<u16>>);

// SAFETY: the set is mutated only in critical sections of the owning shard's `Epvs` and
// read only inside its protected regions, which EPVS runs in mutual exclusion.
unsafe impl Sync for Ownership {}
// SAFETY: as above; `HashSet<u16>` is `Send`.
unsafe impl Send for Ownership {}

/// A request was routed to a shard that does not own its bucket.
#[derive(Debug, PartialEq, Eq)]
struct NotOwner(u16);

/// One shard of the cluster.
struct Shard {
    epvs: Epvs,
    owned: Arc<Ownership>,
}

impl Shard {
    fn new(buckets: impl IntoIterator<Item = u16>) -> Shard {
        Shard {
            epvs: Epvs::new(),
            owned: Arc::new(Ownership(UnsafeCell::new(buckets.into_iter().collect()))),
        }
    }

    /// Runs `op` if this shard owns `bucket` (Fig. 8 lines 5–18).
    fn process<R>(&self, bucket: u16, op: impl FnOnce() -> R) -> Result<R, NotOwner> {
        let _region = self.epvs.enter();
        // SAFETY: inside a protected region: no critical section mutates the set.
        let owned = unsafe { &*self.owned.0.get() };
        if !owned.contains(&bucket) {
            return Err(NotOwner(bucket));
        }
        // Still inside the region: ownership cannot change until `op` returns.
        Ok(op())
    }

    /// Runs `edit` on the set as a version transition and waits for it to complete.
    /// Must be called outside a protected region of this shard.
    fn change(&self, edit: impl FnOnce(&mut HashSet<u16>) + Send + 'static) {
        let owned = Arc::clone(&self.owned);
        self.epvs.transition(move || {
            // SAFETY: a critical section: no region and no other section is active.
            edit(unsafe { &mut *owned.0.get() })
        });
    }

    /// Fig. 8 lines 21–25.
    fn acquire(&self, bucket: u16) {
        self.change(move |set| {
            set.insert(bucket);
        });
    }

    /// Fig. 8 lines 27–32: when this returns, no request on `bucket` runs here any more.
    fn relinquish(&self, bucket: u16) {
        self.change(move |set| {
            set.remove(&bucket);
        });
    }
}

#[cfg_attr(test, allow(dead_code))]
fn main() {
    let shard = Shard::new(0..8);
    let executed = AtomicU64::new(0);
    thread::scope(|s| {
        for t in 0..3u16 {
            let (shard, executed) = (&shard, &executed);
            s.spawn(move || {
                for i in 0..100_000u32 {
                    let bucket = ((i as u16).wrapping_mul(7) ^ t) % 8;
                    let _ = shard.process(bucket, || executed.fetch_add(1, Relaxed));
                }
            });
        }
        for b in 0..4 {
            shard.relinquish(b);
        }
        shard.acquire(0);
    });
    println!(
        "executed {} owned requests; ownership version {}",
        executed.load(Relaxed),
        shard.epvs.state().version()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn ownership_basics() {
        let shard = Shard::new([1, 2]);
        assert_eq!(shard.process(1, || 10), Ok(10));
        assert_eq!(shard.process(3, || 10), Err(NotOwner(3)));
        shard.acquire(3);
        assert_eq!(shard.process(3, || 11), Ok(11));
        shard.relinquish(1);
        assert_eq!(shard.process(1, || 12), Err(NotOwner(1)));
        assert_eq!(shard.epvs.state().version(), 2);
    }

    /// After `relinquish(b)` returns, no request on `b` executes: the per-bucket counter
    /// stays frozen while the workers make plenty of further progress; after `acquire(b)`
    /// requests on `b` execute again.
    #[test]
    fn relinquish_fences_off_the_bucket() {
        const BUCKETS: u16 = 4;
        const WORKERS: usize = 3;
        let shard = Shard::new(0..BUCKETS);
        let counts: Vec<AtomicU64> = (0..BUCKETS).map(|_| AtomicU64::new(0)).collect();
        let progress: Vec<AtomicU64> = (0..WORKERS).map(|_| AtomicU64::new(0)).collect();
        let stop = AtomicBool::new(false);
        // Waits until every worker has done `n` more requests (yielding, no sleeps).
        let wait_progress = |n: u64| {
            let start: Vec<u64> = progress.iter().map(|p| p.load(Relaxed)).collect();
            for (p, s) in progress.iter().zip(start) {
                while p.load(Relaxed) < s + n {
                    thread::yield_now();
                }
            }
        };
        thread::scope(|s| {
            for w in 0..WORKERS {
                let (shard, counts, progress, stop) = (&shard, &counts, &progress, &stop);
                s.spawn(move || {
                    let mut x = w as u32 + 1;
                    while !stop.load(Relaxed) {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                        let b = ((x >> 16) % BUCKETS as u32) as u16;
                        let _ = shard.process(b, || {
                            counts[b as usize].fetch_add(1, Relaxed);
                        });
                        progress[w].fetch_add(1, Relaxed);
                    }
                });
            }
            for round in 0..20u16 {
                let b = round % BUCKETS;
                wait_progress(50);
                shard.relinquish(b);
                // Relaxed is enough: the increments were made inside regions that the
                // relinquish transition waited for, and we synchronized with it.
                let frozen = counts[b as usize].load(Relaxed);
                wait_progress(500);
                assert_eq!(
                    counts[b as usize].load(Relaxed),
                    frozen,
                    "a request on relinquished bucket {b} executed"
                );
                shard.acquire(b);
                let before = counts[b as usize].load(Relaxed);
                while counts[b as usize].load(Relaxed) == before {
                    thread::yield_now();
                }
            }
            stop.store(true, Relaxed);
        });
        assert_eq!(shard.epvs.state().version(), 40);
    }
}
