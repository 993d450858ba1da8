//! `epvs-array`: the resizable-array benchmark of seed 2 §6.1 (Figs. 11–13).
//!
//! Threads run a random mix on one shared array of `u64`: `push_pct` % pushes, the rest
//! split evenly between reads and writes of a random existing index (the paper's `p`,
//! `(1-p)/2`, `(1-p)/2`). With 0 % pushes the array starts with 1 Mi elements and never
//! resizes (Fig. 11); with pushes it starts empty with a small capacity so that pushes
//! resize it (doubling) again and again (Fig. 12), optionally with a simulated slow resize
//! of 10 ms (Fig. 13). Each measurement builds a fresh array.
//!
//! Variants: see [`crate::arrays`]. The baseline is `latch-free-mock`, the unsafe upper
//! bound (no resize protection, huge preallocated buffer). The slow resize is slept where
//! each variant copies (see [`crate::arrays`]); a variant that cannot simulate it would be
//! left out of the 10 ms groups (`BenchArray::supports`), none does now.
//!
//! Grid: push 0 / 10 / 50 %, delay 0 / 10 ms (quick: push 0 / 10 %, delay 0); threads
//! from the options plus 8 and 16 oversubscribed.
//!
//! Fig. 14 (constrained table): one more group, push 0 % with `table_slots: 128`, in which
//! the EPVS arrays run on an epoch table of 128 slots and `bravo` on a private
//! visible-readers table of 128 slots (the other variants have no table and run as in
//! the push-0 group, for reference). In quick mode too.
//!
//! At 2 threads the 10 ms delay bounds Fig. 13: only one other worker can go on while one
//! sleeps, and resizes are a small share of a run, so even free resizes cannot make `epvs`
//! much faster (`epvs` without / with the delay in one run of `rangelock bench epvs-array
//! --threads 1,2` on a 2-vCPU VM: 1.16x at push 10 % and 1.11x at push 50 %, 2 threads;
//! `epvs-2phase` / `epvs` with the delay 1.02x and 1.00x). With 1-2 threads (8 and 16
//! oversubscribed) on 128 slots, table collisions are rare, so Fig. 14's group differs
//! little from the push-0 group; the seed's effect needs tens of threads, and our BRAVO
//! hashes (thread, lock), which spreads better than the seed's. `final_len` in the records
//! is the array's length at the end of a measurement. BRAVO (`crates/bravo`) is ours:
//! Dice and Kogan's algorithm over `parking_lot`'s raw rwlock, a 4096-slot global table,
//! inhibit multiplier 9.

use std::time::Duration;

use serde_json::Value;

use super::epvs_common::params;
use crate::arrays::{
    drive, ArrayConfig, ArraySession, BenchArray, BravoArray, EpvsPinnedArray, EpvsSimpleArray,
    EpvsTwoPhaseArray, LatchFreeMock, Mix, Rng, RwLockParkingLotArray, RwLockStdArray,
};
use crate::harness::{run_threads, Case, Options, Suite, ThreadResult};

/// Initial length for the no-push runs (the paper's "1 million elements").
const NO_PUSH_INITIAL_LEN: usize = 1 << 20;
/// Initial capacity of the push runs.
const PUSH_MIN_CAPACITY: usize = 1024;
/// Table size of the constrained-table group (seed 2 Fig. 14).
const CONSTRAINED_TABLE_SLOTS: usize = 128;
/// Operations between checks of the stop flag.
const BATCH: u32 = 64;

/// The `epvs-array` suite.
#[derive(Debug, Default)]
pub struct EpvsArray;

impl Suite for EpvsArray {
    fn name(&self) -> &'static str {
        "epvs-array"
    }

    fn quantity(&self) -> String {
        "array operations (push, read, write) per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "resizable u64 array, push p% / read & write (1-p)/2 each, resize delay 0 or 10 ms; \
         a 128-slot-table group (EPVS paper Figs. 11-14)"
    }

    fn baseline(&self) -> &'static str {
        LatchFreeMock::NAME
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let (pushes, delays): (&[u32], &[u64]) =
            if opts.quick { (&[0, 10], &[0]) } else { (&[0, 10, 50], &[0, 10]) };
        let mut cases = Vec::new();
        let mut groups: Vec<Workload> = Vec::new();
        for &push_pct in pushes {
            for &delay_ms in delays {
                if push_pct == 0 && delay_ms != 0 {
                    continue; // no pushes, no resizes: the delay would never apply
                }
                groups.push(Workload::new(push_pct, delay_ms));
            }
        }
        groups.push(Workload::constrained_table(CONSTRAINED_TABLE_SLOTS));
        for w in &groups {
            for (threads, over) in opts.threads_for(true) {
                cases.extend(w.case_if::<LatchFreeMock>(threads, over));
                cases.extend(w.case_if::<RwLockStdArray>(threads, over));
                cases.extend(w.case_if::<RwLockParkingLotArray>(threads, over));
                cases.extend(w.case_if::<BravoArray>(threads, over));
                cases.extend(w.case_if::<EpvsSimpleArray>(threads, over));
                cases.extend(w.case_if::<EpvsPinnedArray>(threads, over));
                cases.extend(w.case_if::<EpvsTwoPhaseArray>(threads, over));
            }
        }
        cases
    }
}

/// One point of the parameter grid.
#[derive(Debug, Clone)]
struct Workload {
    mix: Mix,
    cfg: ArrayConfig,
}

impl Workload {
    fn new(push_pct: u32, delay_ms: u64) -> Self {
        let cfg = ArrayConfig {
            initial_len: if push_pct == 0 { NO_PUSH_INITIAL_LEN } else { 0 },
            min_capacity: PUSH_MIN_CAPACITY,
            resize_delay: Duration::from_millis(delay_ms),
            ..ArrayConfig::default()
        };
        Workload { mix: Mix { push_pct }, cfg }
    }

    /// Fig. 14: no pushes, on announcement tables of `slots` slots.
    fn constrained_table(slots: usize) -> Self {
        let mut w = Workload::new(0, 0);
        w.cfg.table_slots = Some(slots);
        w
    }

    /// The case of `A`, if `A` supports this workload's configuration.
    fn case_if<A: BenchArray + 'static>(
        &self,
        threads: usize,
        oversubscribed: bool,
    ) -> Option<Case> {
        A::supports(&self.cfg).then(|| self.case::<A>(threads, oversubscribed))
    }

    fn case<A: BenchArray + 'static>(&self, threads: usize, oversubscribed: bool) -> Case {
        let (mix, cfg) = (self.mix, self.cfg.clone());
        let mut params = params([
            ("push_pct", Value::from(mix.push_pct)),
            ("read_pct", Value::from((100 - mix.push_pct) as f64 / 2.0)),
            ("write_pct", Value::from((100 - mix.push_pct) as f64 / 2.0)),
            ("resize_delay_ms", Value::from(cfg.resize_delay.as_millis() as u64)),
            ("initial_len", Value::from(cfg.initial_len)),
            ("initial_capacity", Value::from(cfg.initial_capacity())),
            ("pin_refresh_every", Value::from(cfg.pin_refresh_every)),
        ]);
        // "default": the epoch table's own size (16 slots per core, at least 64).
        let slots = cfg.table_slots.map_or_else(|| Value::from("default"), Value::from);
        params.insert("table_slots".to_owned(), slots);
        Case {
            variant: A::NAME.to_owned(),
            threads,
            params,
            oversubscribed,
            run: Box::new(move |span| {
                let arr = A::new(&cfg);
                let mut sample = run_threads(threads, span, |index, ctl| {
                    let mut session = arr.session();
                    let mut rng = Rng::for_thread(index);
                    let (mut ops, mut sum) = (0u64, 0u64);
                    while ctl.running() {
                        sum = sum.wrapping_add(drive(&mut session, &mut rng, mix, BATCH));
                        ops += u64::from(BATCH);
                    }
                    std::hint::black_box(sum);
                    ThreadResult { ops, latencies_ns: Vec::new() }
                });
                sample.extra.insert("final_len".to_owned(), Value::from(arr.session().len()));
                sample
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epvs_array_smoke() {
        super::super::epvs_common::smoke(
            &EpvsArray,
            &[
                "latch-free-mock",
                "rwlock-std",
                "rwlock-parking-lot",
                "bravo",
                "epvs",
                "epvs-pinned",
                "epvs-2phase",
            ],
        );
    }

    #[test]
    fn the_constrained_table_group_runs_on_128_slots() {
        let opts = Options { oversubscribe: false, ..Options::quick() };
        let constrained: Vec<String> = EpvsArray
            .cases(&opts)
            .into_iter()
            .filter(|c| c.params.get("table_slots") == Some(&Value::from(128)))
            .map(|c| c.variant)
            .collect();
        for v in ["bravo", "epvs", "epvs-pinned", "epvs-2phase", "latch-free-mock"] {
            assert_eq!(constrained.iter().filter(|x| *x == v).count(), 2, "{v}");
        }
    }
}
