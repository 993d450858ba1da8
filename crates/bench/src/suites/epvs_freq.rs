//! `epvs-freq`: sensitivity to the version-change frequency (seed 2 §6.2, Fig. 17).
//!
//! Each thread repeats a simulated operation (hashing 64 thread-local bytes) inside a
//! protected region, and after each operation triggers an exclusive change with
//! probability `p` (1e-6 … 1). Variants:
//! - `epvs`: enter/leave per operation, a change is a version advance (critical section
//!   in mutual exclusion with every protected region); `Epvs::new()`, whose announce mode
//!   adapts to the change rate;
//! - `epvs-asym`: the same pinned to the asymmetric mode
//!   (`Epvs::with_epoch(LightEpoch::asymmetric())`: plain-store enter, a process-wide
//!   barrier per change when another thread uses the instance);
//! - `epvs-fenced`: the same on a fenced epoch (`Epvs::with_epoch(LightEpoch::new())`: a
//!   locked CAS per enter, a fence per change), the choice for frequent changes;
//! - `latch-free`: no protection, a change is an atomic increment nobody waits for (the
//!   unsafe upper bound);
//! - `latched`: `parking_lot::RwLock`, shared per operation, exclusive per change;
//! - `bravo`: the same with BRAVO (the paper runs it too).
//!
//! The baseline is `latched`.

use epvs::epoch::LightEpoch;
use epvs::version::Epvs;
use serde_json::Value;

use super::epvs_common::hash_work;
use super::epvs_common::{params, WORK_BYTES};
use super::epvs_protect::{local_bytes, protect_loop, BravoLock, LatchFree, Latched, Protector};
use super::epvs_version::EpvsEnter;
use crate::harness::{run_threads, Case, Options, Suite, ThreadResult, XAxis};

/// The `epvs-freq` suite.
#[derive(Debug, Default)]
pub struct EpvsFreq;

const FULL_P: [f64; 7] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0];
const QUICK_P: [f64; 3] = [1e-4, 1e-2, 1.0];

impl Suite for EpvsFreq {
    fn name(&self) -> &'static str {
        "epvs-freq"
    }

    fn quantity(&self) -> String {
        "protected operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "version change with probability p per op (op = hash 64 local bytes, protected) \
         (EPVS paper Fig. 17)"
    }

    fn baseline(&self) -> &'static str {
        "latched"
    }

    fn x_axis(&self) -> XAxis {
        XAxis::Param("p_change")
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let ps: &[f64] = if opts.quick { &QUICK_P } else { &FULL_P };
        let mut cases = Vec::new();
        for &p in ps {
            for (threads, over) in opts.threads_for(false) {
                cases.push(case("epvs", EpvsEnter::default(), p, threads, over));
                let asym = EpvsEnter(Epvs::with_epoch(LightEpoch::asymmetric()));
                cases.push(case("epvs-asym", asym, p, threads, over));
                let fenced = EpvsEnter(Epvs::with_epoch(LightEpoch::new()));
                cases.push(case("epvs-fenced", fenced, p, threads, over));
                cases.push(case("latch-free", LatchFree::default(), p, threads, over));
                cases.push(case("latched", Latched::default(), p, threads, over));
                cases.push(case("bravo", BravoLock::new(), p, threads, over));
            }
        }
        cases
    }
}

/// A case of variant `variant` at change probability `p`.
pub(crate) fn case<P: Protector + 'static>(
    variant: &str,
    protector: P,
    p: f64,
    threads: usize,
    over: bool,
) -> Case {
    Case {
        variant: variant.to_owned(),
        threads,
        params: params([("p_change", Value::from(p)), ("work_bytes", Value::from(WORK_BYTES))]),
        oversubscribed: over,
        run: Box::new(move |span| {
            run_threads(threads, span, |thread, ctl| {
                let mut local = local_bytes(thread);
                let ops = protect_loop(&protector, ctl, thread, p, || hash_work(&mut local, 1));
                ThreadResult { ops, latencies_ns: Vec::new() }
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epvs_freq_smoke() {
        super::super::epvs_common::smoke(
            &EpvsFreq,
            &["epvs", "epvs-asym", "epvs-fenced", "latch-free", "latched", "bravo"],
        );
    }
}
