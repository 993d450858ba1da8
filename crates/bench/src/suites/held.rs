//! `held`: W1 while K ranges per thread stay held in the background — the cost of a lock as
//! a function of how many ranges it holds (the thesis's W1 keeps at most one per thread).
//!
//! Parameter `background`: `none`, or (full runs only) `reader+wide`: a background thread
//! also holds one shared range of 1 Ki units and one exclusive range of 64 Mi units
//! ([`Background`]), placed above the W1 area (at the next multiple of 64 Mi units), so
//! disjoint from the held ranges and from every W1 range. A lock whose fast path gives up
//! whenever a reader or a wide writer is held anywhere shows it here.
//!
//! K x threads one-unit ranges are held in all, `[1024 j, 1024 j + 1)` below the W1 area
//! (which starts at the next power of two), taken highest first (O(1) at the head of a
//! list lock), so list-based variants traverse all of them on every W1 operation: the cost
//! the suite measures. The setup is untimed; one that takes more than max(2 s, 5 x the
//! duration) of the thread's CPU time is abandoned and the case skipped with a note. The
//! `fcntl-ofd` peer runs K <= 1000 only (the kernel scans one list per file).
//!
//! Why `reader+wide`: a real range-locked system almost always has *some* long-lived
//! reader (a scan, a backup) and some wide writer (a truncate, a resize) somewhere. Compare
//! each variant's `reader+wide` row with its `none` row at the same K and threads: a
//! scalable lock shows the same ops/s, a lock with a global fallback condition drops.

use std::marker::PhantomData;
use std::sync::Arc;

use super::common::{self, RANGES};
use crate::harness::{Case, Options, Sample, Suite, XAxis};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::loops::{self, held_ranges_descending, Background, Layout, HELD_STRIDE};
use crate::workload::{holds_disjoint, RangeTarget, SharedRegion, RANGE_BYTES};

/// K of a full run.
pub const HELD: [u64; 3] = [16, 1000, 100_000];
/// K of a quick run.
pub const QUICK_HELD: [u64; 2] = [16, 1000];
/// Largest K run for external peers: the kernel keeps a file's locks in one list it scans on
/// every request, so setting up 16 x 100 000 locks alone would take hours.
pub const PEER_MAX_HELD: u64 = 1000;
/// CPU time allowed for setting up the held ranges of one measurement (see
/// [`Budget`](crate::harness::Budget)): the larger of this and 5 measurement durations. A
/// lock whose insertions cost O(held) (one list under a mutex) would need hours for
/// 16 x 100 000 ranges; such cases are skipped with a note.
pub const MIN_SETUP_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// First lock unit of the W1 area: the power of two at or above the held area of the largest
/// case (at least 2^20), so every case runs W1 on the same units.
pub fn w1_base(max_held_per_thread: u64, max_threads: usize) -> u64 {
    (max_held_per_thread * max_threads as u64 * HELD_STRIDE).next_power_of_two().max(1 << 20)
}

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

    fn quantity(&self) -> String {
        "W1 ranges per second while other ranges stay held".to_owned()
    }

    fn about(&self) -> &'static str {
        "W1 while K one-unit ranges per thread (1 KiB apart, below the W1 area) stay held \
         exclusively by a background holder; background=reader+wide (full runs) also holds one \
         shared 1 Ki-unit and one exclusive 64 Mi-unit range above the W1 area; setup is untimed"
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

    fn ceilings(&self) -> &'static [crate::harness::Ceiling] {
        &[crate::harness::NO_LOCK]
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let ks: &'static [u64] = if opts.quick { &QUICK_HELD } else { &HELD };
        let max_threads = opts.threads_for(true).iter().map(|&(t, _)| t).max().unwrap_or(1);
        let max_k = ks.iter().copied().max().unwrap_or(1);
        let layout = Layout { ranges: RANGES, base: w1_base(max_k, max_threads) };
        let Some(region) = common::region(self.name(), layout.region_bytes()) else {
            return Vec::new();
        };
        // Above the W1 area: disjoint from the held ranges and every W1 range.
        let w1_end = layout.base + layout.ranges * RANGE_BYTES;
        let mut backgrounds = vec![None];
        if !opts.quick {
            backgrounds.push(Some(Background::at(w1_end)));
        }
        let mut b =
            Builder { opts, region, layout, ks, backgrounds, peers: false, cases: Vec::new() };
        S::locks(&mut b);
        b.peers = true;
        S::peers(&mut b);
        // The ceiling holds nothing: every K costs it the same, so it runs them all.
        b.peers = false;
        S::ceiling(&mut b);
        b.cases
    }
}

struct Builder<'a> {
    opts: &'a Options,
    region: Arc<SharedRegion>,
    layout: Layout,
    ks: &'static [u64],
    backgrounds: Vec<Option<Background>>,
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
        let budget = MIN_SETUP_BUDGET.max(self.opts.duration * 5);
        for background in self.backgrounds.clone() {
            let measured = self.layout.all_descending();
            if !common::background_fits("held", name, &*target, background.as_ref(), measured) {
                continue;
            }
            let bg_name = background.as_ref().map_or(Background::NONE, |_| Background::NAME);
            for &k in self.ks {
                if self.peers && k > PEER_MAX_HELD {
                    if background.is_none() {
                        eprintln!("held: {name} runs K <= {PEER_MAX_HELD} only (the kernel's lock list is linear)");
                    }
                    continue;
                }
                for (threads, oversubscribed) in self.opts.threads_for(true) {
                    let (target, region, layout) =
                        (target.clone(), self.region.clone(), self.layout);
                    let background = background.clone();
                    let mut gave_up: Option<String> = None;
                    self.cases.push(Case {
                        variant: name.to_owned(),
                        threads,
                        params: common::params([
                            ("held_per_thread", k.into()),
                            ("ranges", layout.ranges.into()),
                            ("range_bytes", RANGE_BYTES.into()),
                            ("background", bg_name.into()),
                        ]),
                        oversubscribed,
                        run: Box::new(move |d| {
                            if let Some(reason) = &gave_up {
                                return Sample::skipped(reason.clone());
                            }
                            let sample =
                                loops::with_background(&*target, background.as_ref(), || {
                                    loops::held(&*target, &region, layout, k, threads, d, budget)
                                });
                            gave_up = sample.skip_reason().map(str::to_owned);
                            sample
                        }),
                    });
                }
            }
        }
    }
}
