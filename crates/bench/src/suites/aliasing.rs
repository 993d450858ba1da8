//! `aliasing`: the thesis's LeanStore integration (§5.4, Fig. 5.4) — range locks guarding a
//! shared aliasing area.
//!
//! In LeanStore's large-object design a worker that reads a BLOB larger than its private
//! aliasing area reserves a free stretch of a *shared* virtual aliasing area, makes the
//! BLOB's extents appear there contiguously, `memcpy`s it out to the client and releases the
//! stretch. A range lock over the area's pages is what keeps two workers out of the same
//! stretch. One transaction here:
//!
//! 1. **reserve**: pick a random candidate start (extent-aligned: 64 KiB) and `try_lock` the
//!    blob's 256 pages exclusively; on conflict pick another candidate (no waiting, as a
//!    worker looking for *free* space would);
//! 2. **alias**: `memcpy` the 1 MiB payload into the reserved stretch (stands in for the
//!    page-table aliasing, which is not a copy in LeanStore but touches the same pages);
//! 3. **read**: `memcpy` the stretch out into the worker's client buffer (the seed's read);
//! 4. **release** the range, then **verify** the client buffer: every 4 KiB page carries the
//!    transaction's tag (worker, sequence number) in its first and last 8 bytes, so a page
//!    another worker wrote while this one held the range shows up as a mismatch. A mismatch
//!    is a broken lock: the worker panics rather than report a throughput.
//!
//! Lock units are pages of the 64 MiB area (16 384 units). Variants: `rangelock-list`, the
//! thesis's own design (the skip list alone: the seed's "Our"), and beside it the product
//! `rangelock` (the same lock with its stripe table), `song-skiplist`, `kogan-list`,
//! `kernel-tree`, and `segments` in the role of the seed's bitmap lock (one reader-writer
//! word per 64 KiB extent: a blob takes 16 CASes). `aliasing-counts` counts the same list.
//! `ops` are transactions; `failed_tries_per_txn` counts the candidates that were taken;
//! `transactions` is the total count of one measurement.
//! `RANGELOCK_BENCH_ONLY=segments,rangelock` (comma-separated names) runs only those
//! variants.
//!
//! The seed's workload is read-only YCSB over 1000 records of 1 MB in LeanStore's buffer
//! pool, up to 32 workers; here the lock and the two copies are the whole transaction, so
//! at 1-2 threads the copies (2 MiB of memory traffic) dominate and the variants land
//! close together. Where a transaction's instructions go, by callgrind (valgrind 3.19,
//! release build, 1 thread, one measurement per variant; no failed candidate at
//! 1 thread, so *reserve* is one `try_lock`; `reserve` and `release` stay out of line
//! so callgrind can attribute them):
//!
//! ```text
//! cargo build --release -p rangelock-cli
//! RANGELOCK_BENCH_ONLY=<variant> valgrind --tool=callgrind --callgrind-out-file=cg.out \
//!   target/release/rangelock bench aliasing --threads 1 --rounds 1 --duration-ms 3000 --out cg
//! callgrind_annotate --inclusive=yes cg.out | grep -E 'aliasing::transactions|RangeTarget|RawRangeLock'
//! ```
//!
//! | variant | total Ir / txn | reserve Ir / txn | release Ir / txn |
//! |---|---:|---:|---:|
//! | `rangelock` | 2.11M | 613 | 79 |
//! | `segments` | 2.11M | 317 | 114 |
//! | `song-skiplist` | 2.11M | 403 | 341 |
//! | `kogan-list` | 2.11M | 305 | 3 |
//! | `kernel-tree` | 2.11M | 219 | 189 |
//!
//! (*total*: inclusive `Ir` of the worker thread over the record's `transactions`,
//! including its one-off buffer setup, under 2 %.) The copies are about 99.9 % of a
//! transaction; the lock is 300-750 instructions. The `aliasing-counts` suite counts the
//! totals for the report.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rangelock::internals::{Lock, RawRangeLock};
use rangelock::Mode;
use rangelock_baselines as variants;
use serde_json::Value;

use super::common;
use crate::harness::{
    run_threads_with, Case, LatencySampler, Options, Sample, Span, SplitMix64, Suite, ThreadResult,
};
use crate::workload::{RangeTarget, SharedRegion};

/// Bytes of one page: the lock's unit.
pub const PAGE: usize = 4096;
/// Pages of one extent: candidate starts are extent-aligned, and `segments` has one word per
/// extent.
pub const EXTENT_PAGES: u64 = 16;
/// Bytes of one BLOB (the seed's 1 MB payload).
pub const BLOB: usize = 1 << 20;
/// Pages of one BLOB.
pub const BLOB_PAGES: u64 = (BLOB / PAGE) as u64;
/// Bytes of the shared aliasing area (64 BLOBs).
pub const AREA: usize = 64 << 20;
/// Pages of the area: the lock's domain.
pub const AREA_PAGES: u64 = (AREA / PAGE) as u64;

/// What is done with each of the suite's locks, generic over the lock's type: one list
/// ([`each_lock`]) serves the suite's cases, [`run_transactions`] and [`variant_names`].
trait LockVisitor {
    /// Visits the lock named `name`; `make` builds it (only when it is needed).
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: impl FnOnce() -> T);
}

/// The suite's locks, in the order it runs them.
fn each_lock(v: &mut impl LockVisitor) {
    v.visit(crate::variants::PRODUCT, rangelock::RangeLock::new);
    v.visit(crate::variants::LIST, || rangelock::RangeLock::builder().stripes(0, 0).build());
    v.visit("segments", segments);
    v.visit(variants::SongSkipList::NAME, || Lock::from_raw(variants::SongSkipList::new()));
    v.visit(variants::KoganList::NAME, || Lock::from_raw(variants::KoganList::new()));
    v.visit(variants::KernelTree::NAME, || Lock::from_raw(variants::KernelTree::new()));
}

/// The suite's variants, in the order it runs them.
pub fn variant_names() -> Vec<&'static str> {
    struct Names(Vec<&'static str>);
    impl LockVisitor for Names {
        fn visit<T: RangeTarget>(&mut self, name: &'static str, _: impl FnOnce() -> T) {
            self.0.push(name);
        }
    }
    let mut names = Names(Vec::new());
    each_lock(&mut names);
    names.0
}

/// The `aliasing` suite.
#[derive(Clone, Copy, Debug, Default)]
pub struct Aliasing;

impl Suite for Aliasing {
    fn name(&self) -> &'static str {
        "aliasing"
    }

    fn quantity(&self) -> String {
        "aliasing-area transactions per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "LeanStore aliasing area (Concurrent Range Locking §5.4): try-lock a free 1 MiB stretch \
         of a shared 64 MiB area (page units, extent-aligned candidates), memcpy the blob in, \
         read it back, release, verify; ops = transactions"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn oversubscribe(&self) -> bool {
        true
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let Some(area) = common::region(self.name(), AREA) else {
            return Vec::new();
        };
        /// Every selected lock's cases.
        struct Cases<'a> {
            cases: Vec<Case>,
            opts: &'a Options,
            area: Arc<SharedRegion>,
        }
        impl LockVisitor for Cases<'_> {
            fn visit<T: RangeTarget>(&mut self, name: &'static str, make: impl FnOnce() -> T) {
                variant(&mut self.cases, self.opts, &self.area, name, make);
            }
        }
        let mut cases = Cases { cases: Vec::new(), opts, area };
        each_lock(&mut cases);
        cases.cases
    }
}

/// `segments` as the seed's bitmap lock: one word per extent of the area.
pub fn segments() -> Lock<variants::Segments> {
    Lock::from_raw(variants::Segments::new(AREA_PAGES, EXTENT_PAGES))
}

fn variant<T: RangeTarget>(
    cases: &mut Vec<Case>,
    opts: &Options,
    area: &Arc<SharedRegion>,
    name: &'static str,
    make: impl FnOnce() -> T,
) {
    if !super::common::selected(name) {
        return;
    }
    let target = Arc::new(make());
    for (threads, oversubscribed) in opts.threads_for(true) {
        let (target, area) = (target.clone(), area.clone());
        cases.push(Case {
            variant: name.to_owned(),
            threads,
            params: common::params([
                ("blob_bytes", BLOB.into()),
                ("area_bytes", AREA.into()),
                ("extent_bytes", (EXTENT_PAGES as usize * PAGE).into()),
            ]),
            oversubscribed,
            run: Box::new(move |d| transactions(&*target, &area, threads, d)),
        });
    }
}

/// One worker's buffers: the BLOB it aliases and the client buffer it reads into.
struct Worker {
    payload: Vec<u8>,
    client: Vec<u8>,
    rng: SplitMix64,
}

impl Worker {
    fn new(index: usize) -> Worker {
        Worker {
            // Both buffers are written once here so their pages are faulted in before timing.
            payload: vec![0xa5; BLOB],
            client: vec![0x5a; BLOB],
            rng: SplitMix64::new(0xa11a5 ^ index as u64),
        }
    }
}

/// Transaction `seq` of worker `index` (steps in the module docs); counts the candidates
/// found taken in `misses`.
///
/// # Panics
///
/// If the client buffer holds a page another worker wrote while the range was held.
fn transaction<T: RangeTarget>(
    target: &T,
    local: &mut T::Local,
    area: &SharedRegion,
    w: &mut Worker,
    index: usize,
    seq: u64,
    misses: &mut u64,
) {
    let tag = tag(index, seq);
    stamp(&mut w.payload, tag);
    let (start, held) = reserve(target, local, &mut w.rng, misses);
    let offset = start as usize * PAGE;
    // SAFETY: the exclusive range held covers exactly these bytes.
    unsafe {
        area.copy_in(offset, &w.payload);
        area.copy_out(offset, &mut w.client);
    }
    release(target, local, held);
    let bad = verify(&w.client, tag);
    assert!(
        bad == 0,
        "aliasing: worker {index} read back {bad} pages of [{start}, +{BLOB_PAGES}) that \
         another worker wrote while the range was held"
    );
}

/// Why [`run_transactions`] could not run.
#[derive(Debug, thiserror::Error)]
pub enum TransactionsError {
    /// The variant is not one of [`variant_names`].
    #[error("no aliasing variant named {0:?} (variants: {list})", list = variant_names().join(", "))]
    UnknownVariant(String),
    /// The aliasing area could not be mapped.
    #[error("cannot map the {AREA}-byte aliasing area: {0}")]
    Map(#[source] std::io::Error),
}

/// Runs exactly `txns` transactions of `variant` (one of [`variant_names`]) on the calling
/// thread, as one worker of the suite does, and returns the candidates found taken (0 on
/// one thread). This is what `rangelock bench aliasing-txns` runs under cachegrind for the
/// `aliasing-counts` suite: no timing, no threads, nothing but setup and the transactions.
///
/// # Panics
///
/// As [`transactions`].
pub fn run_transactions(variant: &str, txns: u64) -> Result<u64, TransactionsError> {
    /// Runs the transactions on the lock named `name` only.
    struct Run<'a> {
        name: &'a str,
        txns: u64,
        area: &'a SharedRegion,
        misses: Option<u64>,
    }
    impl LockVisitor for Run<'_> {
        fn visit<T: RangeTarget>(&mut self, name: &'static str, make: impl FnOnce() -> T) {
            if name != self.name {
                return;
            }
            let target = make();
            let (mut local, mut w, mut misses) = (target.local(), Worker::new(0), 0);
            for seq in 0..self.txns {
                transaction(&target, &mut local, self.area, &mut w, 0, seq, &mut misses);
            }
            self.misses = Some(misses);
        }
    }
    if !variant_names().contains(&variant) {
        return Err(TransactionsError::UnknownVariant(variant.to_owned()));
    }
    let area = SharedRegion::new(AREA).map_err(TransactionsError::Map)?;
    let mut run = Run { name: variant, txns, area: &area, misses: None };
    each_lock(&mut run);
    run.misses.ok_or_else(|| TransactionsError::UnknownVariant(variant.to_owned()))
}

/// Runs the aliasing transactions of `threads` workers over `target` for `span`.
///
/// # Panics
///
/// If a worker reads back a page it did not write (the lock let two workers into
/// overlapping stretches).
pub fn transactions<T: RangeTarget>(
    target: &T,
    area: &SharedRegion,
    threads: usize,
    span: Span,
) -> Sample {
    assert!(area.len() >= AREA, "the aliasing area is {AREA} bytes");
    let failed = AtomicU64::new(0);
    let mut sample = run_threads_with(threads, span, Worker::new, |index, mut w, ctl| {
        let mut local = target.local();
        let mut lat = LatencySampler::new(1);
        let (mut ops, mut misses) = (0u64, 0u64);
        while ctl.running() {
            let t = lat.start();
            transaction(target, &mut local, area, &mut w, index, ops, &mut misses);
            lat.finish(t);
            ops += 1;
        }
        failed.fetch_add(misses, Ordering::Relaxed);
        ThreadResult { ops, latencies_ns: lat.into_latencies() }
    });
    let misses = failed.into_inner();
    let per_txn = if sample.ops > 0 { misses as f64 / sample.ops as f64 } else { 0.0 };
    sample.extra.insert("transactions".to_owned(), sample.ops.into());
    sample.extra.insert(
        "failed_tries_per_txn".to_owned(),
        serde_json::Number::from_f64(per_txn).map_or(Value::Null, Value::Number),
    );
    sample
}

/// Reserves a free stretch: `try_lock` on random extent-aligned candidates until one is
/// free; counts the taken ones in `misses`. Not inlined, so a profiler (callgrind) can
/// tell the lock's instructions from the copies'.
#[inline(never)]
fn reserve<'a, T: RangeTarget>(
    target: &'a T,
    local: &mut T::Local,
    rng: &mut SplitMix64,
    misses: &mut u64,
) -> (u64, T::Held<'a>) {
    let candidates = (AREA_PAGES - BLOB_PAGES) / EXTENT_PAGES + 1;
    loop {
        let start = rng.below(candidates) * EXTENT_PAGES;
        match target.try_acquire(local, start..start + BLOB_PAGES, Mode::Exclusive) {
            Some(held) => return (start, held),
            None => *misses += 1,
        }
    }
}

/// Releases a reserved stretch (not inlined, like [`reserve`]).
#[inline(never)]
fn release<'a, T: RangeTarget>(target: &'a T, local: &mut T::Local, held: T::Held<'a>) {
    target.release(local, held);
}

/// The tag of transaction `seq` of worker `index`: unique over the run.
#[inline]
pub fn tag(index: usize, seq: u64) -> u64 {
    ((index as u64) << 48) ^ seq ^ 0x7a67_0000_0000_0000
}

/// Writes `tag` into the first and last 8 bytes of every page of `blob`.
#[inline]
pub fn stamp(blob: &mut [u8], tag: u64) {
    for page in blob.chunks_exact_mut(PAGE) {
        page[..8].copy_from_slice(&tag.to_le_bytes());
        page[PAGE - 8..].copy_from_slice(&tag.to_le_bytes());
    }
}

/// The number of pages of `blob` whose first or last 8 bytes are not `tag`.
#[inline]
pub fn verify(blob: &[u8], tag: u64) -> usize {
    let want = tag.to_le_bytes();
    blob.chunks_exact(PAGE).filter(|page| page[..8] != want || page[PAGE - 8..] != want).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_sees_a_page_written_by_another_worker() {
        let area = SharedRegion::new(AREA).unwrap();
        let mut mine = vec![0u8; BLOB];
        let mut theirs = vec![0u8; BLOB];
        let mut back = vec![0u8; BLOB];
        stamp(&mut mine, tag(0, 7));
        stamp(&mut theirs, tag(1, 7));
        // SAFETY: single-threaded test; the interleaving of two workers is played in order.
        unsafe {
            area.copy_in(0, &mine);
            area.copy_out(0, &mut back);
        }
        assert_eq!(verify(&back, tag(0, 7)), 0);
        // The other worker's stretch starts 3 extents later and overlaps the last 208 pages.
        let other = 3 * EXTENT_PAGES as usize * PAGE;
        // SAFETY: as above.
        unsafe {
            area.copy_in(0, &mine);
            area.copy_in(other, &theirs);
            area.copy_out(0, &mut back);
        }
        assert_eq!(verify(&back, tag(0, 7)), BLOB_PAGES as usize - 3 * EXTENT_PAGES as usize);
        assert_ne!(tag(0, 1 << 20), tag(1, 0));
    }
}
