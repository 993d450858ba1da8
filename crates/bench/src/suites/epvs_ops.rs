//! `epvs-ops`: the cost of one protection, alone and around a read of shared data.
//!
//! Two operations, each at 1 and 2 threads:
//! - `protect-release`: enter and leave a protected region (`epvs` enter+leave,
//!   `epvs-pinned` refresh of a held guard, `epvs-K-instances` enter+leave of one of K
//!   = 4 or 16 instances at random, `crossbeam-pin` pin+unpin, `lightepoch`
//!   protect+drop, `rwlock-parking-lot` and `bravo` read lock+unlock);
//! - `protected-read`: the same, reading one shared `u64` inside the region (the
//!   reader-side cost a user of each scheme pays).
//!
//! Nothing ever changes the version, bumps the epoch or takes a write lock: this is the
//! fast path only. The baseline is `crossbeam-pin`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crossbeam_utils::CachePadded;
use serde_json::Value;

use super::epvs_common::params;
use super::epvs_protect::{
    protect_loop, BravoLock, CrossbeamPin, Epoch, EpochPinned, Latched, Protector,
};
use super::epvs_version::{EpvsEnter, EpvsInstances, EpvsPinned};
use crate::harness::{run_threads, Case, Options, Suite, ThreadResult};

/// The `epvs-ops` suite.
#[derive(Debug, Default)]
pub struct EpvsOps;

/// What each operation does inside its protection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Nothing: the protection alone.
    ProtectRelease,
    /// One relaxed load of a shared `u64`.
    ProtectedRead,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::ProtectRelease => "protect-release",
            Op::ProtectedRead => "protected-read",
        }
    }
}

impl Suite for EpvsOps {
    fn name(&self) -> &'static str {
        "epvs-ops"
    }

    fn quantity(&self) -> String {
        "protections per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "ns per protection: epvs enter+leave, epvs-pinned refresh, crossbeam pin, lightepoch \
         protect, rwlock/bravo read lock; alone and around a shared u64 read"
    }

    fn baseline(&self) -> &'static str {
        "crossbeam-pin"
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for op in [Op::ProtectRelease, Op::ProtectedRead] {
            for (threads, over) in opts.threads_for(false) {
                let c = Cfg { op, threads, over };
                cases.push(c.case("epvs", EpvsEnter::default()));
                cases.push(c.case("epvs-pinned", EpvsPinned::default()));
                cases.push(c.case("epvs-4-instances", EpvsInstances::new(4)));
                cases.push(c.case("epvs-16-instances", EpvsInstances::new(16)));
                cases.push(c.case("crossbeam-pin", CrossbeamPin));
                cases.push(c.case("lightepoch", Epoch::default()));
                cases.push(c.case("lightepoch-pinned", EpochPinned::default()));
                cases.push(c.case("rwlock-parking-lot", Latched::default()));
                cases.push(c.case("bravo", BravoLock::new()));
            }
        }
        cases
    }
}

#[derive(Debug, Clone, Copy)]
struct Cfg {
    op: Op,
    threads: usize,
    over: bool,
}

impl Cfg {
    fn case<P: Protector + 'static>(self, variant: &str, p: P) -> Case {
        let Cfg { op, threads, over } = self;
        let shared = CachePadded::new(AtomicU64::new(42));
        Case {
            variant: variant.to_owned(),
            threads,
            params: params([("op", Value::from(op.name()))]),
            oversubscribed: over,
            run: Box::new(move |span| {
                run_threads(threads, span, |thread, ctl| {
                    let ops = match op {
                        Op::ProtectRelease => protect_loop(&p, ctl, thread, 0.0, || 0),
                        // Relaxed: the protection is what is measured; the value never changes.
                        Op::ProtectedRead => {
                            protect_loop(&p, ctl, thread, 0.0, || shared.load(Relaxed))
                        }
                    };
                    ThreadResult { ops, latencies_ns: Vec::new() }
                })
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epvs_ops_smoke() {
        super::super::epvs_common::smoke(
            &EpvsOps,
            &[
                "epvs",
                "epvs-pinned",
                "epvs-4-instances",
                "epvs-16-instances",
                "crossbeam-pin",
                "lightepoch",
                "rwlock-parking-lot",
                "bravo",
            ],
        );
    }
}
