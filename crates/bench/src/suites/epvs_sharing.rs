//! `epvs-sharing`: one instance shared by every thread vs eight instances (seed 2 §6.2,
//! Fig. 21).
//!
//! Eight instances of each scheme; thread `t` uses instance `t % 8` (`sharing:
//! 8-instances`, so with up to 8 threads no two share one) or instance 0 (`shared`). Each
//! thread repeats the simulated operation (hashing 64 thread-local bytes) protected by its
//! instance and, with probability 1e-4 per operation, makes an exclusive change of it.
//! Variants: `rwlock` (`parking_lot::RwLock`, the baseline), `bravo` (on the process-wide
//! table), `epvs` (`Epvs::new()`). Threads from the options plus 8, 16 oversubscribed
//! (with 2 cores, the 1- and 2-thread rows differ only in who waits for whom).
//!
//! Note: `Epvs::new()` uses the asymmetric epoch, whose version change issues a
//! process-wide barrier (`membarrier`) that interrupts every core whatever the instance,
//! so separate instances do not fully isolate changes here.

use serde_json::Value;

use super::epvs_common::{params, WORK_BYTES};
use super::epvs_protect::{hash_work_sample, BravoLock, Latched, Protector};
use super::epvs_version::EpvsEnter;
use crate::harness::{Case, Options, Suite};

/// Change probability per operation (the paper's Fig. 21 setting).
const P_CHANGE: f64 = 1e-4;
/// Instances provisioned.
const INSTANCES: usize = 8;

/// The `epvs-sharing` suite.
#[derive(Debug, Default)]
pub struct EpvsSharing;

impl Suite for EpvsSharing {
    fn name(&self) -> &'static str {
        "epvs-sharing"
    }

    fn quantity(&self) -> String {
        "protected operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "8 instances, thread t on instance t % 8 vs all on one; hash 64 local bytes \
         protected, change p 1e-4; EPVS, BRAVO, RwLock (EPVS paper Fig. 21)"
    }

    fn baseline(&self) -> &'static str {
        "rwlock"
    }

    fn oversubscribe(&self) -> bool {
        true
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for shared in [false, true] {
            for (threads, over) in opts.threads_for(self.oversubscribe()) {
                let c = Cfg { shared, threads, over };
                cases.push(c.case("rwlock", Latched::default));
                cases.push(c.case("bravo", BravoLock::new));
                cases.push(c.case("epvs", EpvsEnter::default));
            }
        }
        cases
    }
}

#[derive(Debug, Clone, Copy)]
struct Cfg {
    shared: bool,
    threads: usize,
    over: bool,
}

impl Cfg {
    fn case<P: Protector + 'static>(self, variant: &str, make: impl Fn() -> P) -> Case {
        let Cfg { shared, threads, over } = self;
        let instances: Vec<P> = (0..INSTANCES).map(|_| make()).collect();
        Case {
            variant: variant.to_owned(),
            threads,
            params: params([
                ("sharing", Value::from(if shared { "shared" } else { "8-instances" })),
                ("instances", Value::from(INSTANCES)),
                ("p_change", Value::from(P_CHANGE)),
                ("work_bytes", Value::from(WORK_BYTES)),
            ]),
            oversubscribed: over,
            run: Box::new(move |span| {
                let used = if shared { &instances[..1] } else { &instances[..] };
                hash_work_sample(used, threads, span, P_CHANGE)
            }),
        }
    }
}
