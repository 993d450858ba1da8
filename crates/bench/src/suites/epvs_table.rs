//! `epvs-table`: sensitivity to the size of the announcement table (seed 2 §6.2, Fig. 18).
//!
//! The epoch framework (and BRAVO) hash threads into a fixed table; a small table means
//! probing (epochs) or falling back to the slow path (BRAVO), a large one a longer scan for
//! the safe epoch (epochs) or on revocation (BRAVO). Each thread repeats a simulated
//! operation (hashing 64 thread-local bytes) protected, and triggers an exclusive change
//! with probability 1e-4 per operation (the paper's setting). Variants: `epvs`
//! (enter/leave), `epvs-pinned` (refresh a held guard), `lightepoch` (protect/drop, change
//! = epoch bump), `lightepoch-pinned`, `bravo` (read lock on a private visible-readers
//! table of that size, change = write lock). Table sizes 16 … 1024 slots, threads 1, 2 and
//! (full mode) 8, 16 oversubscribed. The baseline is `bravo`.

use epvs::epoch::{Announce, LightEpoch};
use epvs::version::Epvs;
use serde_json::Value;

use super::epvs_common::{params, WORK_BYTES};
use super::epvs_protect::{hash_work_sample, BravoLock, Epoch, EpochPinned, Protector};
use super::epvs_version::{EpvsEnter, EpvsPinned};
use crate::harness::{Case, Options, Suite, XAxis};

/// The `epvs-table` suite.
#[derive(Debug, Default)]
pub struct EpvsTable;

/// Change probability per operation (the paper's Fig. 18 setting).
const P_CHANGE: f64 = 1e-4;
const FULL_SLOTS: [usize; 4] = [16, 64, 256, 1024];
const QUICK_SLOTS: [usize; 2] = [16, 1024];

impl Suite for EpvsTable {
    fn name(&self) -> &'static str {
        "epvs-table"
    }

    fn quantity(&self) -> String {
        "protect/refresh operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "table size 16..1024 slots: protect/refresh cost vs threads, p_change 1e-4 \
         (EPVS paper Fig. 18)"
    }

    fn baseline(&self) -> &'static str {
        "bravo"
    }

    fn x_axis(&self) -> XAxis {
        XAxis::Param("table_slots")
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let sizes: &[usize] = if opts.quick { &QUICK_SLOTS } else { &FULL_SLOTS };
        let mut cases = Vec::new();
        for &slots in sizes {
            for (threads, over) in opts.threads_with_most() {
                let c = Cfg { slots, threads, over };
                let new_epvs =
                    || Epvs::with_epoch(LightEpoch::with_options(slots, Announce::Asymmetric));
                cases.push(c.case("epvs", EpvsEnter(new_epvs())));
                cases.push(c.case("epvs-pinned", EpvsPinned(new_epvs())));
                cases.push(c.case("lightepoch", Epoch(LightEpoch::with_slots(slots))));
                cases.push(c.case("lightepoch-pinned", EpochPinned(LightEpoch::with_slots(slots))));
                cases.push(c.case("bravo", BravoLock::with_table(slots)));
            }
        }
        cases
    }
}

#[derive(Debug, Clone, Copy)]
struct Cfg {
    slots: usize,
    threads: usize,
    over: bool,
}

impl Cfg {
    fn case<P: Protector + 'static>(self, variant: &str, protector: P) -> Case {
        let Cfg { slots, threads, over } = self;
        Case {
            variant: variant.to_owned(),
            threads,
            params: params([
                ("table_slots", Value::from(slots)),
                ("p_change", Value::from(P_CHANGE)),
                ("work_bytes", Value::from(WORK_BYTES)),
            ]),
            oversubscribed: over,
            run: Box::new(move |span| {
                hash_work_sample(std::slice::from_ref(&protector), threads, span, P_CHANGE)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epvs_table_smoke() {
        super::super::epvs_common::smoke(
            &EpvsTable,
            &["epvs", "epvs-pinned", "lightepoch", "lightepoch-pinned", "bravo"],
        );
    }
}
