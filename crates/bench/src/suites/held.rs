//! `held`: W1 while K ranges per thread stay held in the background — the cost of a lock as
//! a function of how many ranges it holds (the thesis's W1 keeps at most one per thread).

use std::marker::PhantomData;
use std::sync::Arc;

use super::common::{self, RANGES};
use crate::harness::{Case, Options, Suite, XAxis};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::loops::{self, held_ranges_descending, Layout};
use crate::workload::{holds_disjoint, RangeTarget, SharedRegion, RANGE_BYTES};

/// K of a full run.
pub const HELD: [u64; 3] = [16, 1000, 100_000];
/// K of a quick run.
pub const QUICK_HELD: [u64; 2] = [16, 1000];
/// Largest K run for external peers: the kernel keeps a file's locks in one list it scans on
/// every request, so setting up 16 x 100 000 locks alone would take hours.
pub const PEER_MAX_HELD: u64 = 1000;
/// First lock unit of the W1 area, far above the held ranges `[2j, 2j + 1)`.
pub const W1_BASE: u64 = 1 << 40;

/// The `held` suite over the variants and peers of `S`.
#[derive(Debug)]
pub struct Held<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for Held<S> {
    fn default() -> Self {
        Held(PhantomData)
    }
}

impl<S: VariantSet> Suite for Held<S> {
    fn name(&self) -> &'static str {
        "held"
    }

    fn about(&self) -> &'static str {
        "W1 while K one-unit ranges per thread stay held (exclusive, below the W1 area) by a \
         background holder; setup is untimed"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn x_axis(&self) -> XAxis {
        XAxis::Param("held_per_thread")
    }

    fn oversubscribe(&self) -> bool {
        true
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let layout = Layout { ranges: RANGES, base: W1_BASE };
        let Some(region) = common::region(self.name(), layout.region_bytes()) else {
            return Vec::new();
        };
        let mut b = Builder { opts, region, layout, peers: false, cases: Vec::new() };
        S::locks(&mut b);
        b.peers = true;
        S::peers(&mut b);
        b.cases
    }
}

struct Builder<'a> {
    opts: &'a Options,
    region: Arc<SharedRegion>,
    layout: Layout,
    peers: bool,
    cases: Vec<Case>,
}

impl VariantVisitor for Builder<'_> {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: &dyn Fn() -> std::io::Result<T>) {
        let Some(target) = common::target("held", name, make) else { return };
        let probe = self.layout.all_descending().chain(held_ranges_descending(16));
        if !holds_disjoint(&*target, probe) {
            common::coarse("held", name);
            return;
        }
        let ks: &[u64] = if self.opts.quick { &QUICK_HELD } else { &HELD };
        for &k in ks {
            if self.peers && k > PEER_MAX_HELD {
                eprintln!("held: {name} runs K <= {PEER_MAX_HELD} only (the kernel's lock list is linear)");
                continue;
            }
            for (threads, oversubscribed) in self.opts.threads_for(true) {
                let (target, region, layout) = (target.clone(), self.region.clone(), self.layout);
                self.cases.push(Case {
                    variant: name.to_owned(),
                    threads,
                    params: common::params([
                        ("held_per_thread", k.into()),
                        ("ranges", layout.ranges.into()),
                        ("range_bytes", RANGE_BYTES.into()),
                    ]),
                    oversubscribed,
                    run: Box::new(move |d| loops::held(&*target, &region, layout, k, threads, d)),
                });
            }
        }
    }
}
