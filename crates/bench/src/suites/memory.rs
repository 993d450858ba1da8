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
//!    segments' domain; so is one that needs more than 1 s of CPU time in a quick run, 60 s
//!    in a full one, to take them, see [`Budget`]):
//!    `held_bytes` is the heap growth, `bytes_per_range` = `held_bytes / K`;
//! 5. `released_bytes`: what of that growth remains after releasing them (pooled nodes).
//!
//! Layouts (params `range_units`, `stride_units`): one-unit ranges 1 Ki units apart (as
//! `held`), and 16 Ki-unit ranges 256 Ki units apart (one `rangelock` stripe, one segment
//! of `segments-256Ki`, each). K = 1, 1000, 100 000 in quick and full runs alike. The
//! counts do not depend on time: each case is measured once, in the first round, and later
//! rounds repeat its numbers.

use std::marker::PhantomData;
use std::time::Duration;

use rangelock::internals::RawRangeLock;
use rangelock::Mode;
use rangelock_baselines::Segments;

use super::common;
use super::mixed::{self, SEGMENTS_NAME};
use crate::alloc;
use crate::harness::{Budget, Case, Measure, Options, Sample, Suite, XAxis};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::RangeTarget;

/// Held ranges per measurement.
pub const HELD: [u64; 3] = [1, 1000, 100_000];
/// CPU time allowed for taking the K ranges of one measurement in a quick run; a lock whose
/// insertions cost O(held) (`global-mutex` scans a vector: seconds for 100 000) is skipped
/// with a note beyond it.
pub const QUICK_SETUP_BUDGET: Duration = Duration::from_secs(1);
/// As [`QUICK_SETUP_BUDGET`], for a full run.
pub const SETUP_BUDGET: Duration = Duration::from_secs(60);

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

/// The record fields, in table order (the plot shows the first).
pub const FIELDS: &[&str] =
    &["bytes_per_range", "held_bytes", "released_bytes", "idle_bytes", "new_bytes", "inline_bytes"];

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

    fn cases(&self, opts: &Options) -> Vec<Case> {
        if !alloc::counting() {
            eprintln!(
                "memory: skipped: the counting allocator is not installed (a binary must set \
                 #[global_allocator] to rangelock_bench::alloc::CountingAlloc; the rangelock \
                 command does)"
            );
            return Vec::new();
        }
        let budget = if opts.quick { QUICK_SETUP_BUDGET } else { SETUP_BUDGET };
        let mut b = Builder { budget, cases: Vec::new() };
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
                    run: Box::new(move |_| {
                        first.get_or_insert_with(|| measure(make, spacing, k, budget)).clone()
                    }),
                });
            }
        }
        if name == Segments::NAME {
            self.named_lock(SEGMENTS_NAME, mixed::segments);
        }
    }
}

/// One measurement of a fresh lock from `make` holding `k` ranges laid out by `spacing`
/// (steps in the module docs), on the calling thread; a lock that needs more than `budget`
/// of the thread's CPU time to take the ranges is given up on (skipped).
pub fn measure<T: RangeTarget<Local = ()>>(
    make: fn() -> T,
    spacing: Spacing,
    k: u64,
    budget: Duration,
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
        if i % 1024 == 0 && spent.exceeded() {
            let n = held.len();
            drop(held);
            return Sample::skipped(format!(
                "holding {k} ranges took over {budget:?} of CPU time after {n} (insertion cost \
                 grows with the held count)"
            ));
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
