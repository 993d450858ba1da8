//! `epvs-checkpoint`: consistent-cut checkpoints of an in-place key-value store under
//! load (seed 2 §5.2, Fig. 16).
//!
//! [`crate::faster::checkpoint`]: 2^18 `u64` records; workers run 50:50 read/update
//! (`fetch_add` of an odd delta) on uniform keys, with a refresh point every operation
//! (`granularity: fine`) or every 16 384 operations (`coarse`): a `cpr-epoch` worker
//! adopts the global phase there, an `epvs` worker refreshes the region it keeps; a
//! checkpointer thread takes a checkpoint, sleeps `CHECKPOINT_INTERVAL`, and repeats (at
//! least one per measurement). The flush preserves and sums every record (the seed
//! writes to `/dev/null`; our sink is the checksum). Variants: `cpr-epoch` (the baseline: FASTER's CPR phases
//! `REST/PREPARE/IN_PROGRESS/WAIT_FLUSH` with per-thread markers adopted at each thread's
//! refresh points, no mutual exclusion) and `epvs` (the two-state machine of Fig. 10).
//!
//! Every checkpoint is verified as a consistent cut after the measurement
//! ([`crate::faster::checkpoint::verify`]); the records carry `checkpoints` and
//! `verified_cuts` (medians over rounds), and a failed verification fails the
//! measurement (panics with the checkpoint's sums).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::epvs_common::params;
use crate::faster::checkpoint::{
    verify, CheckpointedKv, CprKv, EpvsKv, Fault, KvWorker, COARSE_OPS_PER_REGION,
};
use crate::harness::{run_threads, Case, Options, Sample, Span, SplitMix64, Suite, ThreadResult};

/// Records of the store.
const KEYS: usize = 1 << 18;
/// Pause between the end of one checkpoint and the start of the next.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(10);
/// Fine-grained regions per check of the stop flag.
const FINE_BATCH: u32 = 64;

/// The `epvs-checkpoint` suite.
#[derive(Debug, Default)]
pub struct EpvsCheckpoint;

impl Suite for EpvsCheckpoint {
    fn name(&self) -> &'static str {
        "epvs-checkpoint"
    }

    fn quantity(&self) -> String {
        "key-value operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "in-place KV, 50:50 read/update, uniform keys, a consistent-cut checkpoint every \
         10 ms, 1 or 16384 ops per protected region; EPVS vs CPR markers (EPVS paper Fig. 16)"
    }

    fn baseline(&self) -> &'static str {
        CprKv::NAME
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for ops_per_region in [1, COARSE_OPS_PER_REGION] {
            for (threads, over) in opts.threads_for(false) {
                cases.push(case::<CprKv>(ops_per_region, threads, over));
                cases.push(case::<EpvsKv>(ops_per_region, threads, over));
            }
        }
        cases
    }
}

fn case<K: CheckpointedKv>(ops_per_region: u32, threads: usize, over: bool) -> Case {
    let granularity = if ops_per_region == 1 { "fine" } else { "coarse" };
    Case {
        variant: K::NAME.to_owned(),
        threads,
        params: params([
            ("granularity", Value::from(granularity)),
            ("ops_per_region", Value::from(ops_per_region)),
            ("keys", Value::from(KEYS)),
            ("read_pct", Value::from(50)),
            ("checkpoint_interval_ms", Value::from(CHECKPOINT_INTERVAL.as_millis() as u64)),
        ]),
        oversubscribed: over,
        run: Box::new(move |span| measure::<K>(ops_per_region, threads, span)),
    }
}

/// One measurement on a fresh store, checkpointed every `CHECKPOINT_INTERVAL`; panics if
/// a checkpoint is not a consistent cut.
pub(crate) fn measure<K: CheckpointedKv>(
    ops_per_region: u32,
    threads: usize,
    span: Span,
) -> Sample {
    let kv = K::new(KEYS, threads, Fault::None);
    let stop = AtomicBool::new(false);
    let tallies = Mutex::new(Vec::new());
    let (mut sample, checkpoints) = std::thread::scope(|s| {
        let checkpointer = s.spawn(|| {
            let mut taken = Vec::new();
            loop {
                taken.push(kv.checkpoint());
                // Relaxed: the flag carries no data; the thread is joined below.
                if stop.load(Relaxed) {
                    return taken;
                }
                std::thread::sleep(CHECKPOINT_INTERVAL);
            }
        });
        let regions = if ops_per_region == 1 { FINE_BATCH } else { 1 };
        let sample = run_threads(threads, span, |index, ctl| {
            let mut worker = kv.worker(index);
            let mut rng = SplitMix64::new(0xc0ff_ee00 ^ index as u64);
            let (mut ops, mut sum) = (0u64, 0u64);
            while ctl.running() {
                for _ in 0..regions {
                    sum = sum.wrapping_add(worker.region(ops_per_region, &mut rng));
                }
                ops += u64::from(regions * ops_per_region);
            }
            std::hint::black_box(sum);
            let tally = worker.finish();
            tallies.lock().unwrap_or_else(|p| p.into_inner()).push(tally);
            ThreadResult { ops, latencies_ns: Vec::new() }
        });
        // Relaxed: see the checkpointer.
        stop.store(true, Relaxed);
        let checkpoints = checkpointer.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (sample, checkpoints)
    });
    let tallies = tallies.into_inner().unwrap_or_else(|p| p.into_inner());
    let verified = match verify(&checkpoints, &tallies) {
        Ok(n) => n,
        Err(e) => panic!("epvs-checkpoint: {}: {e}", K::NAME),
    };
    sample.extra.insert("checkpoints".to_owned(), Value::from(checkpoints.len()));
    sample.extra.insert("verified_cuts".to_owned(), Value::from(verified));
    sample
}
