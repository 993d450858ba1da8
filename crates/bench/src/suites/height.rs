//! `height`: the thesis's skip-list height test (Concurrent Range Locking §5.3.2, Fig. 5.1):
//! W1 and W2 (param `workload` = `w1` / `w2`, the loops of [`super::w1`] and
//! [`super::w2`]) at maximum heights 4, 6, …, 16 (quick: 4, 10, 16).
//!
//! The seed's sentences: for W1 the height "has negligible impact on performance"; for W2
//! "the total runtime decreases as the skip list height increases", with "diminishing
//! returns" beyond 10, its chosen height. Both are about the thesis's design, the skip list
//! itself, so the variant is the list path, `rangelock-list` (`RangeLock::builder()
//! .stripes(0, 0).max_height(h)`: no stripe table, every exclusive range on the list).
//!
//! The product `rangelock` is not a row here: its stripe table takes every exclusive 1 KiB
//! range of W1 and W2, so the list, and with it the height, is never exercised, and a flat
//! product line would read as a height result it is not. The spread over rounds beside each
//! median is what tells a real height effect from noise.
//!
//! Only variants with a settable height run ([`VariantSet::heights`]).

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
        "W1 and W2 ranges per second, by skip-list height".to_owned()
    }

    fn about(&self) -> &'static str {
        "W1 (one 1 KiB range at a time) and W2 (batches of 16) on the list algorithm \
         (rangelock-list) at maximum heights 4..=16 (Concurrent Range Locking §5.3.2)"
    }

    fn baseline(&self) -> &'static str {
        crate::variants::LIST
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

/// The two workloads of Fig. 5.1's panels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    W1,
    W2,
}

impl Workload {
    const BOTH: [Workload; 2] = [Workload::W1, Workload::W2];

    /// The `workload` param.
    fn name(self) -> &'static str {
        match self {
            Workload::W1 => "w1",
            Workload::W2 => "w2",
        }
    }
}

impl HeightVisitor for Builder<'_> {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: fn(usize) -> T) {
        let heights: &[usize] = if self.opts.quick { &QUICK_HEIGHTS } else { &HEIGHTS };
        for workload in Workload::BOTH {
            for &height in heights {
                let target = Arc::new(make(height));
                for (threads, oversubscribed) in self.opts.threads_for(false) {
                    let (target, region, layout) =
                        (target.clone(), self.region.clone(), self.layout);
                    let batch = match workload {
                        Workload::W1 => 1,
                        Workload::W2 => BATCH,
                    };
                    self.cases.push(Case {
                        variant: name.to_owned(),
                        threads,
                        params: common::params([
                            ("workload", workload.name().into()),
                            ("height", height.into()),
                            ("ranges", layout.ranges.into()),
                            ("range_bytes", RANGE_BYTES.into()),
                            ("batch", batch.into()),
                        ]),
                        oversubscribed,
                        run: Box::new(move |d| match workload {
                            Workload::W1 => loops::w1(&*target, &region, layout, threads, d),
                            Workload::W2 => loops::w2(&*target, &region, layout, BATCH, threads, d),
                        }),
                    });
                }
            }
        }
    }
}
