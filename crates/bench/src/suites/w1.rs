//! `w1`: the thesis's W1 — lock one 1 KiB range, memset it, unlock (low contention: the
//! lock holds at most one range per thread; measures acquire/release overhead).
//!
//! 16 384 disjoint 1 KiB ranges of a 16 MiB shared mapping (pre-faulted; lock units are its
//! bytes); each thread owns a contiguous share and walks it in shuffled order. Variants:
//! the registry's in-process locks, the peer `fcntl-ofd`, and the ceiling `unlocked` (the
//! same loop with no lock).
//!
//! **Against `segments`** (1 KiB segments: exactly these ranges, static segmentation's best
//! case) the release decides the ratio. A segment is released with a plain store;
//! `rangelock`'s stripe release is a plain store, a compiler fence and a load of the slot's
//! waiter count (counted wait words, `rangelock::skiplist` module docs). A release by swap
//! (an RMW, to read a parked waiter's bit) waits for the memset's stores to drain while the
//! range is still held: with it `rangelock` ran 0.64-0.76x `segments`. Measured with the
//! store release on a 2-vCPU AMD EPYC VM, five runs of `rangelock bench w1 --threads 1,2
//! --rounds 5 --duration-ms 500`: 0.80-1.12x at 1 thread (median 0.93x) and 0.68-0.98x at 2
//! (median 0.94x), the low ends in runs that caught the VM in a slow phase (`unlocked` at
//! 26-28 Mops/s at 1 thread instead of 43-52), which hurts `rangelock` more than
//! `segments`. Without the harness (`scripts/interleaved-medians.sh 9` over
//! `RANGELOCK_W1_MEMSET=1 target/release/examples/w1_loop 5000000 0 <variant> 1` per
//! variant, medians, ns per lock + unlock): 68.5 with the swap release, 60.2 with
//! the store, 50.9 for `segments`, 37.9 for the loop alone. `fcntl-ofd` runs 10-75x behind
//! `rangelock` here (a system call per lock and per unlock).

use std::marker::PhantomData;
use std::sync::Arc;

use super::common::{self, RANGES};
use crate::harness::{Case, Options, Suite};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::loops::{self, Layout};
use crate::workload::{RangeTarget, SharedRegion, RANGE_BYTES};

/// The `w1` suite over the variants of `S`.
#[derive(Debug)]
pub struct W1<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for W1<S> {
    fn default() -> Self {
        W1(PhantomData)
    }
}

impl<S: VariantSet> Suite for W1<S> {
    fn name(&self) -> &'static str {
        "w1"
    }

    fn quantity(&self) -> String {
        "W1 ranges locked, written and unlocked per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "W1 (Concurrent Range Locking §5.3.1): lock one 1 KiB range exclusively, memset it in a \
         shared mmap, unlock; disjoint ranges, shuffled, partitioned over threads"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn oversubscribe(&self) -> bool {
        true
    }

    fn ceilings(&self) -> &'static [crate::harness::Ceiling] {
        &[crate::harness::NO_LOCK]
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let layout = Layout { ranges: RANGES, base: 0 };
        let Some(region) = common::region(self.name(), layout.region_bytes()) else {
            return Vec::new();
        };
        let mut b = Builder { opts, region, layout, cases: Vec::new() };
        S::locks(&mut b);
        S::peers(&mut b);
        S::ceiling(&mut b);
        b.cases
    }
}

struct Builder<'a> {
    opts: &'a Options,
    region: Arc<SharedRegion>,
    layout: Layout,
    cases: Vec<Case>,
}

impl VariantVisitor for Builder<'_> {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: &dyn Fn() -> std::io::Result<T>) {
        let Some(target) = common::target("w1", name, make) else { return };
        for (threads, oversubscribed) in self.opts.threads_for(true) {
            let (target, region, layout) = (target.clone(), self.region.clone(), self.layout);
            self.cases.push(Case {
                variant: name.to_owned(),
                threads,
                params: common::params([
                    ("ranges", layout.ranges.into()),
                    ("range_bytes", RANGE_BYTES.into()),
                ]),
                oversubscribed,
                run: Box::new(move |d| loops::w1(&*target, &region, layout, threads, d)),
            });
        }
    }
}
