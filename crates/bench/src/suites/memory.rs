//! `memory`: what a lock costs in memory — bytes of an idle lock and bytes per held range.
//!
//! Counted with [`crate::alloc::CountingAlloc`], which the `rangelock` binary installs as
//! its global allocator; without it the suite says so and has no cases. The allocator
//! counts per thread, so everything runs on the runner's thread, one lock at a time. For
//! every in-process variant of the registry (plus `mixed`'s [`SEGMENTS_NAME`] next to the
//! registry's `segments`), each measurement:
//!
//! 1. builds and uses a throwaway lock of the variant first, so one-time per-thread
//!    allocations (thread-locals) are not charged to the measured lock;
//! 2. `new_bytes`: heap bytes after building the lock; `inline_bytes`: the size of the
//!    `Lock` value itself (wherever its owner puts it);
//! 3. `idle_bytes`: heap bytes after one exclusive and one shared lock + unlock of unit 0
//!    (lazily allocated tables, epoch registration, pooled nodes);
//! 4. holds K ranges at once, highest first, with `try_lock` (a variant that cannot hold
//!    them all is skipped with a note: segments wider than the stride, or ranges past the
//!    segments' domain; so is one that needs more than [`SETUP_BUDGET`] of CPU time to take
//!    them, see [`Budget`]):
//!    `held_bytes` is the heap growth, `bytes_per_range` = `held_bytes / K`;
//! 5. `released_bytes`: what of that growth remains after releasing them (pooled nodes).
//!
//! Two cases per variant count whole locks instead (`bytes_per_lock`: inline plus heap
//! bytes, per lock; `total_bytes`: all of them):
//!
//! - `idle_locks` = [`IDLE_LOCKS`]: that many locks built and never used, kept in one
//!   `Vec` (a file system's or a database's lock per file, inode or table). A variant
//!   whose one idle lock costs more than [`IDLE_LOCK_BUDGET`] is skipped with a note (a
//!   million of them would not fit the machine);
//! - `one_holder_ops` = [`ONE_HOLDER_OPS`]: one lock used by one holder at a time, that
//!   many lock + unlock pairs in a row of [`ONE_HOLDER_RANGES`] (exclusive and shared),
//!   counted after the last release.
//!
//! Layouts (params `range_units`, `stride_units`): one-unit ranges 1 Ki units apart (as
//! `held`), and 16 Ki-unit ranges 256 Ki units apart (one `rangelock` stripe, one segment
//! of `segments-256Ki`, each). K = 1, 1000, 100 000 in quick and full runs alike. The
//! counts do not depend on time: each case is measured once, in the first round, and later
//! rounds repeat its numbers.
//!
//! How to read: `bytes_per_range` is the marginal cost of a held range (0 for the static
//! segment tables, whose whole cost is in `new_bytes`; for `rangelock` it includes, from
//! K = 1000 on, the core its second concurrent hold builds, about 100 KB, and the 32 KiB
//! stripe table of each 32 Mi-unit window the ranges reach, visible in the spread layout);
//! `idle_bytes` is what a lock costs before it holds anything. `rangelock` allocates
//! nothing in `idle_locks` or `one_holder_ops`: until two holds overlap in time it has no
//! core (no stripe table, list or reader table; `rangelock::skiplist` module docs), so both
//! are its inline size (`tests/memory.rs` asserts at most 256 bytes a lock, 512 MiB for the
//! million, and at most 1024 bytes for the one holder). Skipped, with notes:
//! `segments-256Ki` at 1000 and 100 000 ranges 1 Ki apart (many per segment), `segments`
//! at 100 000 ranges 256 Ki apart (past its 2^32 units), and `global-mutex` at K = 100 000
//! in quick runs (it scans its vector on every insertion, seconds of CPU time).
//!
//! In a quick run, each of those measurements has the run's work budget
//! ([`WorkBudget`](crate::harness::WorkBudget)): taking the K ranges, building the idle
//! locks and the one-holder operations poll it ([`Span::running`]) and give up once it is
//! spent, and the runner cuts the case (the one-holder case of `segments`, whose ranges
//! over the whole domain take a counter of each of its 2^22 segments, would need minutes).
//! `RANGELOCK_BENCH_ONLY=rangelock,segments` (comma-separated names) runs only those
//! variants.

use std::marker::PhantomData;
use std::time::Duration;

use rangelock::internals::RawRangeLock;
use rangelock::Mode;
use rangelock_baselines::Segments;

use super::common;
use super::mixed::{self, SEGMENTS_NAME};
use crate::alloc;
use crate::harness::{Budget, Case, Measure, Options, Sample, Span, Suite, XAxis};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::RangeTarget;

/// Held ranges per measurement.
pub const HELD: [u64; 3] = [1, 1000, 100_000];
/// CPU time (the runner thread's) allowed for taking the K ranges of one measurement; a
/// lock whose insertions cost O(held) beyond it is skipped with a note. (`global-mutex`
/// scans a vector: seconds for 100 000; a quick run's work budget cuts it sooner.)
pub const SETUP_BUDGET: Duration = Duration::from_secs(60);
/// Setup steps (insertions, locks built, operations) between two polls of the work
/// budget: a poll reads the process's CPU clock.
const POLL_EVERY: u64 = 64;

/// Where the held ranges lie: range `i` is `[i * stride, i * stride + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spacing {
    /// Units per range.
    pub len: u64,
    /// Units from one range's start to the next.
    pub stride: u64,
}

impl Spacing {
    fn range(self, i: u64) -> core::ops::Range<u64> {
        i * self.stride..i * self.stride + self.len
    }
}

/// The layouts measured: one-unit ranges 1 Ki apart; 16 Ki-unit ranges 256 Ki apart.
pub const LAYOUTS: [Spacing; 2] =
    [Spacing { len: 1, stride: 1 << 10 }, Spacing { len: 1 << 14, stride: 1 << 18 }];

/// Locks of the idle-locks case.
pub const IDLE_LOCKS: usize = 1_000_000;
/// The idle-locks case skips a variant whose one idle lock (inline plus heap) costs more:
/// a million would take more than 4 GiB.
pub const IDLE_LOCK_BUDGET: usize = 4096;
/// Lock + unlock pairs of the one-holder case.
pub const ONE_HOLDER_OPS: u64 = 10_000;
/// The ranges of the one-holder case, taken in turn (shifted by the operation's number
/// times 4 Ki units): a unit, 1 Ki, a stripe, 16 stripes, 4 Mi units, and everything from
/// there to the end of the domain.
pub const ONE_HOLDER_RANGES: [(u64, u64); 6] =
    [(0, 1), (0, 1 << 10), (0, 1 << 14), (0, 1 << 18), (0, 1 << 22), (0, u64::MAX)];

/// The record fields, in table order (the plot shows the first).
pub const FIELDS: &[&str] = &[
    "bytes_per_range",
    "held_bytes",
    "released_bytes",
    "idle_bytes",
    "new_bytes",
    "inline_bytes",
    "bytes_per_lock",
    "total_bytes",
];

/// The `memory` suite over the variants of `S`.
#[derive(Debug)]
pub struct Memory<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for Memory<S> {
    fn default() -> Self {
        Memory(PhantomData)
    }
}

impl<S: VariantSet> Suite for Memory<S> {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn about(&self) -> &'static str {
        "heap bytes of each lock (counting allocator, one thread): after new, after one \
         lock+unlock (idle), and per range while K = 1 / 1000 / 100 000 disjoint ranges are \
         held (1 unit 1 Ki apart, or 16 Ki units 256 Ki apart); segments-256Ki = mixed's \
         segments (2^22 x 256 Ki units over 2^40, 16 MiB); not a timing"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn x_axis(&self) -> XAxis {
        XAxis::Param("held_ranges")
    }

    fn measure(&self) -> Measure {
        Measure::Extras(FIELDS)
    }

    fn settings(&self, _record: &crate::harness::Record) -> String {
        "heap bytes counted by the counting allocator, once per case in the first round \
         (later rounds repeat the count): a count, not a timing"
            .to_owned()
    }

    fn cases(&self, _opts: &Options) -> Vec<Case> {
        if !alloc::counting() {
            eprintln!(
                "memory: skipped: the counting allocator is not installed (a binary must set \
                 #[global_allocator] to rangelock_bench::alloc::CountingAlloc; the rangelock \
                 command does)"
            );
            return Vec::new();
        }
        let mut b = Builder { budget: SETUP_BUDGET, cases: Vec::new() };
        S::locks(&mut b);
        b.cases
    }
}

struct Builder {
    budget: Duration,
    cases: Vec<Case>,
}

impl VariantVisitor for Builder {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, _: &dyn Fn() -> std::io::Result<T>) {
        eprintln!(
            "memory: skipping {name}: registered without a constructor the suite can call per \
             measurement (VariantVisitor::lock or named_lock)"
        );
    }

    fn named_lock<T: RangeTarget<Local = ()>>(&mut self, name: &'static str, make: fn() -> T) {
        if common::selected(name) {
            self.push_cases(name, make);
        } else {
            eprintln!("memory: skipping {name}: not in RANGELOCK_BENCH_ONLY");
        }
        if name == Segments::NAME {
            self.named_lock(SEGMENTS_NAME, mixed::segments);
        }
    }
}

impl Builder {
    /// The cases of the lock `name` built by `make`.
    fn push_cases<T: RangeTarget<Local = ()>>(&mut self, name: &'static str, make: fn() -> T) {
        let budget = self.budget;
        for spacing in LAYOUTS {
            for k in HELD {
                let mut first: Option<Sample> = None;
                self.cases.push(Case {
                    variant: name.to_owned(),
                    threads: 1,
                    params: common::params([
                        ("held_ranges", k.into()),
                        ("range_units", spacing.len.into()),
                        ("stride_units", spacing.stride.into()),
                    ]),
                    oversubscribed: false,
                    // Counts do not depend on time: measured once, repeated in later rounds.
                    run: Box::new(move |span| {
                        first.get_or_insert_with(|| measure(make, spacing, k, budget, span)).clone()
                    }),
                });
            }
        }
        for (param, value) in
            [("idle_locks", IDLE_LOCKS as u64), ("one_holder_ops", ONE_HOLDER_OPS)]
        {
            let mut first: Option<Sample> = None;
            self.cases.push(Case {
                variant: name.to_owned(),
                threads: 1,
                params: common::params([(param, value.into())]),
                oversubscribed: false,
                // Counts do not depend on time: measured once, repeated in later rounds.
                run: Box::new(move |span| {
                    first
                        .get_or_insert_with(|| match param {
                            "idle_locks" => idle_locks(make, span),
                            _ => one_holder(make, span),
                        })
                        .clone()
                }),
            });
        }
    }
}

/// One measurement of a fresh lock from `make` holding `k` ranges laid out by `spacing`
/// (steps in the module docs), on the calling thread; a lock that needs more than `budget`
/// of the thread's CPU time to take the ranges is given up on (skipped), and so is one
/// that outlasts the span's work budget (cut).
pub fn measure<T: RangeTarget<Local = ()>>(
    make: fn() -> T,
    spacing: Spacing,
    k: u64,
    budget: Duration,
    span: Span,
) -> Sample {
    fn use_once<T: RangeTarget<Local = ()>>(lock: &T) {
        let held = lock.acquire(&mut (), 0..1, Mode::Exclusive);
        lock.release(&mut (), held);
        let held = lock.acquire(&mut (), 0..1, Mode::Shared);
        lock.release(&mut (), held);
    }
    use_once(&make());

    let start = alloc::net_bytes();
    let lock = make();
    let new = alloc::net_bytes() - start;
    use_once(&lock);
    let idle = alloc::net_bytes() - start;

    let mut held = Vec::with_capacity(usize::try_from(k).expect("fits in memory"));
    let before = alloc::net_bytes();
    let spent = Budget::start(budget);
    for i in (0..k).rev() {
        if i % POLL_EVERY == 0 && spent.exceeded() {
            let n = held.len();
            drop(held);
            return Sample::skipped(format!(
                "holding {k} ranges took over {budget:?} of CPU time after {n} (insertion cost \
                 grows with the held count)"
            ));
        }
        if i % POLL_EVERY == 0 && !span.running() {
            let n = held.len();
            drop(held);
            return Sample::cut(format!("took {n} of {k} ranges"));
        }
        match lock.try_acquire(&mut (), spacing.range(i), Mode::Exclusive) {
            Some(guard) => held.push(guard),
            None => {
                let n = held.len();
                drop(held);
                return Sample::skipped(format!(
                    "holds only {n} of {k} ranges of {} units {} apart at once (a coarse lock, \
                     segments wider than the stride, or ranges past a fixed domain)",
                    spacing.len, spacing.stride
                ));
            }
        }
    }
    let held_bytes = alloc::net_bytes() - before;
    held.clear(); // releases; keeps the vector's capacity, which `before` already counted
    let released = alloc::net_bytes() - before;
    drop(held);
    drop(lock);

    let mut sample = Sample::default();
    let mut put = |key: &str, v: serde_json::Value| sample.extra.insert(key.to_owned(), v);
    put("bytes_per_range", (held_bytes as f64 / k as f64).into());
    put("held_bytes", held_bytes.into());
    put("released_bytes", released.into());
    put("idle_bytes", idle.into());
    put("new_bytes", new.into());
    put("inline_bytes", core::mem::size_of::<T>().into());
    sample
}

/// A sample of `locks` locks that cost `total` bytes in all.
fn per_lock(total: i64, locks: usize) -> Sample {
    let mut sample = Sample::default();
    sample.extra.insert("total_bytes".to_owned(), total.into());
    sample.extra.insert("bytes_per_lock".to_owned(), (total as f64 / locks as f64).into());
    sample
}

/// The idle-locks case: [`IDLE_LOCKS`] locks from `make`, never used, in one `Vec`; given up
/// on (cut) when the span's work budget runs out first.
pub fn idle_locks<T: RangeTarget<Local = ()>>(make: fn() -> T, span: Span) -> Sample {
    drop(make()); // one-time per-thread allocations, not charged (as in `measure`)
    let start = alloc::net_bytes();
    let one = make();
    let one_bytes = (alloc::net_bytes() - start) as usize + size_of::<T>();
    drop(one);
    if one_bytes > IDLE_LOCK_BUDGET {
        return Sample::skipped(format!(
            "one idle lock costs {one_bytes} bytes: {IDLE_LOCKS} would take {} MiB",
            (one_bytes * IDLE_LOCKS) >> 20
        ));
    }
    let start = alloc::net_bytes();
    // The `Vec`'s buffer holds every lock's inline bytes (its capacity is exact).
    let mut locks: Vec<T> = Vec::with_capacity(IDLE_LOCKS);
    for n in 0..IDLE_LOCKS {
        if n as u64 % (16 * POLL_EVERY) == 0 && !span.running() {
            return Sample::cut(format!("built {n} of {IDLE_LOCKS} locks"));
        }
        locks.push(make());
    }
    let total = alloc::net_bytes() - start;
    drop(locks);
    per_lock(total, IDLE_LOCKS)
}

/// The one-holder case: one lock from `make`, [`ONE_HOLDER_OPS`] lock + unlock pairs in a
/// row, counted (inline plus heap) after the last release; given up on (cut) when the
/// span's work budget runs out first.
pub fn one_holder<T: RangeTarget<Local = ()>>(make: fn() -> T, span: Span) -> Sample {
    // A throwaway run first: one-time per-thread allocations are not charged (as in
    // `measure`).
    if let Err(n) = one_holder_ops(&make(), span) {
        return Sample::cut(format!("did {n} of {ONE_HOLDER_OPS} operations (a throwaway run)"));
    }
    let start = alloc::net_bytes();
    let lock = make();
    if let Err(n) = one_holder_ops(&lock, span) {
        return Sample::cut(format!("did {n} of {ONE_HOLDER_OPS} operations"));
    }
    let total = alloc::net_bytes() - start + size_of::<T>() as i64;
    drop(lock);
    per_lock(total, 1)
}

/// The operations of [`one_holder`]; `Err` with the count done when the span's budget ran
/// out first.
fn one_holder_ops<T: RangeTarget<Local = ()>>(lock: &T, span: Span) -> Result<(), u64> {
    for i in 0..ONE_HOLDER_OPS {
        // One operation of `segments` over its whole domain takes 2^22 counters: poll often.
        if i % 8 == 0 && !span.running() {
            return Err(i);
        }
        let (start, end) = ONE_HOLDER_RANGES[i as usize % ONE_HOLDER_RANGES.len()];
        let shift = (i / ONE_HOLDER_RANGES.len() as u64) << 12;
        let range = start + shift..end.saturating_add(shift);
        // A lock whose domain ends sooner (segments) holds what it can.
        let mode = if i % 3 == 2 { Mode::Shared } else { Mode::Exclusive };
        if let Some(held) = lock.try_acquire(&mut (), range, mode) {
            lock.release(&mut (), held);
        }
    }
    Ok(())
}
