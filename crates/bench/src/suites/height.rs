//! `height`: W2 over skip-list maximum heights 4..=16 (thesis 5.3.2, which found 10 the
//! sweet spot); only for variants with a settable height.

use std::marker::PhantomData;
use std::sync::Arc;

use super::common::{self, RANGES};
use super::w2::BATCH;
use crate::harness::{Case, Options, Suite, XAxis};
use crate::variants::{HeightVisitor, Registered, VariantSet};
use crate::workload::loops::{self, Layout};
use crate::workload::{RangeTarget, SharedRegion, RANGE_BYTES};

/// Heights of a full run.
pub const HEIGHTS: [usize; 7] = [4, 6, 8, 10, 12, 14, 16];
/// Heights of a quick run.
pub const QUICK_HEIGHTS: [usize; 3] = [4, 10, 16];

/// The `height` suite over the height-settable variants of `S`.
#[derive(Debug)]
pub struct Height<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for Height<S> {
    fn default() -> Self {
        Height(PhantomData)
    }
}

impl<S: VariantSet> Suite for Height<S> {
    fn name(&self) -> &'static str {
        "height"
    }

    fn quantity(&self) -> String {
        "W2 ranges per second, by skip-list height".to_owned()
    }

    fn about(&self) -> &'static str {
        "W2 (batches of 16 disjoint 1 KiB ranges) at skip-list maximum heights 4..=16 (Concurrent Range Locking §5.3.2)"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn x_axis(&self) -> XAxis {
        XAxis::Param("height")
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let layout = Layout { ranges: RANGES, base: 0 };
        let Some(region) = common::region(self.name(), layout.region_bytes()) else {
            return Vec::new();
        };
        let mut b = Builder { opts, region, layout, cases: Vec::new() };
        S::heights(&mut b);
        b.cases
    }
}

struct Builder<'a> {
    opts: &'a Options,
    region: Arc<SharedRegion>,
    layout: Layout,
    cases: Vec<Case>,
}

impl HeightVisitor for Builder<'_> {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: fn(usize) -> T) {
        let heights: &[usize] = if self.opts.quick { &QUICK_HEIGHTS } else { &HEIGHTS };
        for &height in heights {
            let target = Arc::new(make(height));
            for (threads, oversubscribed) in self.opts.threads_for(false) {
                let (target, region, layout) = (target.clone(), self.region.clone(), self.layout);
                self.cases.push(Case {
                    variant: name.to_owned(),
                    threads,
                    params: common::params([
                        ("height", height.into()),
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
}
