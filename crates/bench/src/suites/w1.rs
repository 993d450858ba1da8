//! `w1`: the thesis's W1 — lock one 1 KiB range, memset it, unlock (low contention: the
//! lock holds at most one range per thread; measures acquire/release overhead).

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
