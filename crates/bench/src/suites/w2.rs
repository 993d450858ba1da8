//! `w2`: the thesis's W2 — lock a batch of 16 ranges, memset them, unlock them all (the lock
//! holds up to 16 ranges per thread; measures search cost as the structure fills).

use std::marker::PhantomData;
use std::sync::Arc;

use super::common::{self, RANGES};
use crate::harness::{Case, Options, Suite};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::loops::{self, Layout};
use crate::workload::{holds_disjoint, RangeTarget, SharedRegion, RANGE_BYTES};

/// Ranges per batch (the thesis's "typically 16").
pub const BATCH: usize = 16;

/// The `w2` suite over the variants of `S`.
#[derive(Debug)]
pub struct W2<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for W2<S> {
    fn default() -> Self {
        W2(PhantomData)
    }
}

impl<S: VariantSet> Suite for W2<S> {
    fn name(&self) -> &'static str {
        "w2"
    }

    fn quantity(&self) -> String {
        "W2 ranges locked, written and unlocked per second (batches of 16)".to_owned()
    }

    fn about(&self) -> &'static str {
        "W2 (Concurrent Range Locking §5.3.1): lock a batch of 16 disjoint 1 KiB ranges, memset \
         each, unlock all; ops count ranges, latencies are per batch"
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
        let Some(target) = common::target("w2", name, make) else { return };
        if !holds_disjoint(&*target, self.layout.all_descending()) {
            common::coarse("w2", name);
            return;
        }
        for (threads, oversubscribed) in self.opts.threads_for(true) {
            let (target, region, layout) = (target.clone(), self.region.clone(), self.layout);
            self.cases.push(Case {
                variant: name.to_owned(),
                threads,
                params: common::params([
                    ("ranges", layout.ranges.into()),
                    ("range_bytes", RANGE_BYTES.into()),
                    ("batch", BATCH.into()),
                ]),
                oversubscribed,
                run: Box::new(move |d| loops::w2(&*target, &region, layout, BATCH, threads, d)),
            });
        }
    }
}
