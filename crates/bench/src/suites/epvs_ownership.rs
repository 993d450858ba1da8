//! `epvs-ownership`: cluster ownership validation in a sharded key-value store (seed 2
//! §5.1, Fig. 15).
//!
//! [`crate::faster::ownership`]: 4 shards in one process, 2^16 hash buckets (bucket `b`
//! starts on shard `b % 4`), 2^20 `u64` records; each worker is a client that picks a
//! uniform key, reads it or writes it (50:50, YCSB-A-like), and sends the operation to the
//! shard its (private, possibly stale) route says owns the key's bucket; the shard checks
//! its bucket set and executes. Variants: `no-validation` (the baseline and ceiling),
//! `check-only` (the check without synchronisation: the floor of any validation),
//! `rwlock-validation`, `epvs-validation`.
//!
//! Two groups: `transfers_per_sec = 0` (Fig. 15: no ownership change), and a run in which
//! a separate thread moves a random bucket to the next shard `TRANSFER_RATE` times a
//! second (Fig. 8's relinquish / migrate / acquire). Each record carries
//! `non_owner_ops` (operations executed on a shard that did not own their bucket),
//! `transfers` and `redirects` (operations refused and re-routed; not counted as ops). A
//! validating variant that executes on a non-owner fails the measurement (panics); the
//! `no-validation` rows of the transfer run show what the count looks like without
//! validation (stale routes keep executing on the old owner).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::epvs_common::params;
use crate::faster::ownership::{
    CheckOnly, Cluster, EpvsValidation, NoValidation, Outcome, RwLockValidation, Validation,
    BUCKETS,
};
use crate::harness::{run_threads, Case, Options, Span, SplitMix64, Suite, ThreadResult};

/// Shards of the store.
const SHARDS: usize = 4;
/// Records (uniform keys over them).
const KEYS: usize = 1 << 20;
/// Ownership transfers per second in the transfer run.
const TRANSFER_RATE: u64 = 1000;
/// Operations between checks of the stop flag.
const BATCH: u32 = 64;

/// The `epvs-ownership` suite.
#[derive(Debug, Default)]
pub struct EpvsOwnership;

impl Suite for EpvsOwnership {
    fn name(&self) -> &'static str {
        "epvs-ownership"
    }

    fn quantity(&self) -> String {
        "key-value operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "sharded KV, every op validated against the shard's bucket set; 50:50 read/update, \
         uniform keys; without and with ownership transfers (EPVS paper Fig. 15)"
    }

    fn baseline(&self) -> &'static str {
        NoValidation::NAME
    }

    fn ceilings(&self) -> &'static [crate::harness::Ceiling] {
        &[
            crate::harness::Ceiling {
                name: NoValidation::NAME,
                leaves_out: "the key-value store with no ownership validation",
            },
            crate::harness::Ceiling {
                name: CheckOnly::NAME,
                leaves_out: "the ownership check with no synchronisation: the floor of any \
                             validation",
            },
        ]
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for rate in [0, TRANSFER_RATE] {
            for (threads, over) in opts.threads_for(false) {
                cases.push(case::<NoValidation>(rate, threads, over));
                cases.push(case::<CheckOnly>(rate, threads, over));
                cases.push(case::<RwLockValidation>(rate, threads, over));
                cases.push(case::<EpvsValidation>(rate, threads, over));
            }
        }
        cases
    }
}

fn case<V: Validation>(rate: u64, threads: usize, over: bool) -> Case {
    Case {
        variant: V::NAME.to_owned(),
        threads,
        params: params([
            ("transfers_per_sec", Value::from(rate)),
            ("shards", Value::from(SHARDS)),
            ("buckets", Value::from(BUCKETS)),
            ("keys", Value::from(KEYS)),
            ("read_pct", Value::from(50)),
        ]),
        oversubscribed: over,
        run: Box::new(move |span| measure::<V>(rate, threads, span)),
    }
}

/// One measurement on a fresh cluster; panics if a validating variant executed an
/// operation on a non-owner.
fn measure<V: Validation>(rate: u64, threads: usize, span: Span) -> crate::harness::Sample {
    let cluster = Cluster::<V>::new(SHARDS, KEYS);
    let stop = AtomicBool::new(false);
    let mut sample = std::thread::scope(|s| {
        if rate > 0 {
            s.spawn(|| transfer_loop(&cluster, rate, &stop));
        }
        let sample = run_threads(threads, span, |index, ctl| {
            let mut client = cluster.client();
            let mut rng = SplitMix64::new(0x5eed ^ index as u64);
            let (mut ops, mut sum) = (0u64, 0u64);
            while ctl.running() {
                for _ in 0..BATCH {
                    let r = rng.next_u64();
                    let update = (r >> 63 == 1).then_some(r);
                    if let Outcome::Executed(v) = client.op(r >> 1, update) {
                        sum = sum.wrapping_add(v);
                        ops += 1;
                    }
                }
            }
            std::hint::black_box(sum);
            ThreadResult { ops, latencies_ns: Vec::new() }
        });
        // Relaxed: the flag carries no data; the thread is joined at the end of the scope.
        stop.store(true, Relaxed);
        sample
    });
    let non_owner = cluster.non_owner_ops();
    assert!(
        !V::VALIDATES || non_owner == 0,
        "epvs-ownership: {} executed {non_owner} operations on a shard that did not own \
         their bucket",
        V::NAME
    );
    sample.extra.insert("non_owner_ops".to_owned(), Value::from(non_owner));
    sample.extra.insert("transfers".to_owned(), Value::from(cluster.transfers()));
    sample.extra.insert("redirects".to_owned(), Value::from(cluster.redirects()));
    sample
}

/// Moves a random bucket to the next shard `rate` times a second until `stop` (at least
/// once). Paced by sleeping until each transfer's slot (the rate is a workload parameter,
/// not a synchronisation).
fn transfer_loop<V: Validation>(cluster: &Cluster<V>, rate: u64, stop: &AtomicBool) {
    let interval = Duration::from_nanos(1_000_000_000 / rate.max(1));
    let mut rng = SplitMix64::new(0x7a45_f3e5);
    let mut owner = vec![0usize; BUCKETS];
    for (b, o) in owner.iter_mut().enumerate() {
        *o = b % cluster.shards();
    }
    let mut next = Instant::now();
    loop {
        let b = rng.below(BUCKETS as u64) as usize;
        let to = (owner[b] + 1) % cluster.shards();
        cluster.transfer(b as u16, to);
        owner[b] = to;
        // Relaxed: see `measure`.
        if stop.load(Relaxed) {
            return;
        }
        next += interval;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}
