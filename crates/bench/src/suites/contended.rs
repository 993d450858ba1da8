//! `contended`: random overlapping ranges over a small domain, 0 / 20 / 100 % exclusive —
//! real conflicts, shared-mode compatibility and waiting, which W1/W2 never exercise.

use std::marker::PhantomData;
use std::sync::Arc;

use super::common;
use crate::harness::{Case, Options, Suite};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::loops::{self, Contended as Shape};
use crate::workload::{RangeTarget, SharedRegion};

/// Domain size in units.
pub const DOMAIN: u64 = 256;
/// Longest range in units.
pub const MAX_LEN: u64 = 16;
/// Region bytes per unit.
pub const UNIT_BYTES: u64 = 64;
/// The exclusive percentages swept.
pub const EXCLUSIVE_PCT: [u64; 3] = [0, 20, 100];

/// The `contended` suite over the variants of `S`.
#[derive(Debug)]
pub struct Contended<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for Contended<S> {
    fn default() -> Self {
        Contended(PhantomData)
    }
}

impl<S: VariantSet> Suite for Contended<S> {
    fn name(&self) -> &'static str {
        "contended"
    }

    fn quantity(&self) -> String {
        "contended range lock+unlock per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "random ranges of 1..=16 units over a 256-unit domain (64 B per unit), locked blocking; \
         exclusive ones memset, shared ones read"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn oversubscribe(&self) -> bool {
        true
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let Some(region) = common::region(self.name(), (DOMAIN * UNIT_BYTES) as usize) else {
            return Vec::new();
        };
        let mut b = Builder { opts, region, cases: Vec::new() };
        S::locks(&mut b);
        b.cases
    }
}

struct Builder<'a> {
    opts: &'a Options,
    region: Arc<SharedRegion>,
    cases: Vec<Case>,
}

impl VariantVisitor for Builder<'_> {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: &dyn Fn() -> std::io::Result<T>) {
        let Some(target) = common::target("contended", name, make) else { return };
        for pct in EXCLUSIVE_PCT {
            let shape = Shape {
                domain: DOMAIN,
                max_len: MAX_LEN,
                unit_bytes: UNIT_BYTES,
                exclusive_pct: pct,
            };
            for (threads, oversubscribed) in self.opts.threads_for(true) {
                let (target, region) = (target.clone(), self.region.clone());
                self.cases.push(Case {
                    variant: name.to_owned(),
                    threads,
                    params: common::params([
                        ("exclusive_pct", pct.into()),
                        ("domain_units", DOMAIN.into()),
                        ("max_len_units", MAX_LEN.into()),
                        ("unit_bytes", UNIT_BYTES.into()),
                    ]),
                    oversubscribed,
                    run: Box::new(move |d| loops::contended(&*target, &region, shape, threads, d)),
                });
            }
        }
    }
}
