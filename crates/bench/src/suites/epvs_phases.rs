//! `epvs-phases`: the cost of splitting a version change into phases (seed 2 §6.2,
//! Fig. 19).
//!
//! Each thread repeats the simulated operation (hashing 64 thread-local bytes) in a
//! protected region (enter/leave) and, after each operation, with probability
//! `P_CHANGE`, starts a version change: a state machine that does a fixed total amount of
//! work, `WORK_ITERS` iterations of the same hash, split evenly over the critical
//! sections of its `k` steps `REST(v) -> P1 -> ... -> P(k-1) -> REST(v + 1)`; `k` = 1, 2,
//! 4, 8 (the variants `epvs-1-phase` ... `epvs-8-phases`; the baseline is 1 phase).
//! The change is asynchronous, as in the paper: the thread installs the machine and goes
//! on (retrying while another machine is active); the steps run on whichever thread
//! drains the epoch.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use epvs::version::{AdvanceError, Epvs, State, StateMachine};
use serde_json::Value;

use super::epvs_common::{hash_work, params, WORK_BYTES};
use super::epvs_protect::{hash_work_sample, Protector};
use crate::harness::{Case, Options, Suite};

/// Change probability per operation.
const P_CHANGE: f64 = 1e-4;
/// Hash iterations per version change, over all its phases.
const WORK_ITERS: u32 = 4096;
/// Phase counts measured.
const PHASES: [u8; 4] = [1, 2, 4, 8];

/// The `epvs-phases` suite.
#[derive(Debug, Default)]
pub struct EpvsPhases;

fn variant(phases: u8) -> String {
    if phases == 1 {
        "epvs-1-phase".to_owned()
    } else {
        format!("epvs-{phases}-phases")
    }
}

impl Suite for EpvsPhases {
    fn name(&self) -> &'static str {
        "epvs-phases"
    }

    fn quantity(&self) -> String {
        "protected operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "version change (p 1e-4 per op) doing 4096 hash iterations split over 1/2/4/8 \
         phases of a state machine (EPVS paper Fig. 19)"
    }

    fn baseline(&self) -> &'static str {
        "epvs-1-phase"
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for (threads, over) in opts.threads_for(false) {
            for phases in PHASES {
                let protector = Phased { epvs: Epvs::new(), phases, sink: Arc::default() };
                cases.push(Case {
                    variant: variant(phases),
                    threads,
                    params: params([
                        ("p_change", Value::from(P_CHANGE)),
                        ("work_iters_per_change", Value::from(WORK_ITERS)),
                        ("work_bytes", Value::from(WORK_BYTES)),
                    ]),
                    oversubscribed: over,
                    run: Box::new(move |span| {
                        hash_work_sample(std::slice::from_ref(&protector), threads, span, P_CHANGE)
                    }),
                });
            }
        }
        cases
    }
}

/// EPVS with a `phases`-step machine per change.
#[derive(Debug)]
struct Phased {
    epvs: Epvs,
    phases: u8,
    /// Where the critical sections leave their hashes (keeps the work observable).
    sink: Arc<AtomicU64>,
}

/// `REST(v) -> 1 -> ... -> phases - 1 -> REST(v + 1)`, `WORK_ITERS / phases` hash
/// iterations in each critical section.
#[derive(Debug)]
struct PhaseMachine {
    phases: u8,
    sink: Arc<AtomicU64>,
}

impl StateMachine for PhaseMachine {
    fn next_step(&self, cur: State) -> Option<State> {
        let next = cur.phase() + 1;
        Some(if next >= self.phases {
            State::rest(cur.version() + 1)
        } else {
            State::new(cur.version(), next)
        })
    }

    fn on_entering_state(&self, _from: State, to: State) {
        let mut bytes = [u64::from(to.phase()); WORK_BYTES / 8];
        let mut h = 0u64;
        for i in 0..WORK_ITERS / u32::from(self.phases) {
            h ^= hash_work(&mut bytes, u64::from(i));
        }
        // Relaxed: a sink for the result, read by nobody.
        self.sink.fetch_xor(h, Relaxed);
    }
}

impl Protector for Phased {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        self.epvs.with_region(|_| f())
    }
    fn change(&self, _: &mut ()) {
        loop {
            let machine = PhaseMachine { phases: self.phases, sink: Arc::clone(&self.sink) };
            match self.epvs.execute_state_machine(machine, None) {
                Ok(_) => return,
                Err(AdvanceError::Busy) => {
                    self.epvs.wait_until(State::is_rest);
                    std::thread::yield_now();
                }
                Err(e) => panic!("EPVS state machine failed: {e}"),
            }
        }
    }
}
