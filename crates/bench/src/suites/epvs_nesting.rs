//! `epvs-nesting`: nested protection (seed 2 §6.2, Fig. 20).
//!
//! Each thread repeats the simulated operation (hashing 64 thread-local bytes) inside
//! `nesting` protections acquired one after the other and released in reverse order; no
//! version changes. Variants `epvs` (nested `enter`) and `bravo` (nested read locks on
//! the process-wide visible-readers table); the baseline is `bravo`.
//!
//! Groups: `nesting 1` (no nesting), `nesting 4, instances 1` (four protections of the same
//! instance) and `nesting 4, instances 4` (one protection each of four instances). The
//! seed's BRAVO hashes the thread alone into its table, so nesting over any instances
//! collides and falls to the slow path; ours hashes (thread, lock) (the fix the seed
//! suggests), so only nesting on one instance collides — the two groups separate the
//! cases. EPVS nests on one instance without touching its table again (a nested guard),
//! and across instances with one table per instance.

use epvs::version::Epvs;
use serde_json::Value;

use super::epvs_common::{params, WORK_BYTES};
use super::epvs_protect::{hash_work_sample, Protector};
use crate::harness::{Case, Options, Suite};
use crate::peers::bravo::Bravo;

/// The `epvs-nesting` suite.
#[derive(Debug, Default)]
pub struct EpvsNesting;

/// (nesting depth, instances).
const GROUPS: [(usize, usize); 3] = [(1, 1), (4, 1), (4, 4)];

impl Suite for EpvsNesting {
    fn name(&self) -> &'static str {
        "epvs-nesting"
    }

    fn quantity(&self) -> String {
        "protected operations per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "1 vs 4 nested protections (of one instance or of four) around a hash of 64 local \
         bytes, no version changes; EPVS vs BRAVO (EPVS paper Fig. 20)"
    }

    fn baseline(&self) -> &'static str {
        "bravo"
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for (depth, instances) in GROUPS {
            for (threads, over) in opts.threads_for(false) {
                let c = Cfg { depth, instances, threads, over };
                cases.push(
                    c.case("bravo", Nested((0..instances).map(|_| Bravo::new(0)).collect(), depth)),
                );
                cases.push(
                    c.case("epvs", Nested((0..instances).map(|_| Epvs::new()).collect(), depth)),
                );
            }
        }
        cases
    }
}

#[derive(Debug, Clone, Copy)]
struct Cfg {
    depth: usize,
    instances: usize,
    threads: usize,
    over: bool,
}

impl Cfg {
    fn case<P: Protector + 'static>(self, variant: &str, protector: P) -> Case {
        let Cfg { depth, instances, threads, over } = self;
        Case {
            variant: variant.to_owned(),
            threads,
            params: params([
                ("nesting", Value::from(depth)),
                ("instances", Value::from(instances)),
                ("work_bytes", Value::from(WORK_BYTES)),
            ]),
            oversubscribed: over,
            run: Box::new(move |span| {
                hash_work_sample(std::slice::from_ref(&protector), threads, span, 0.0)
            }),
        }
    }
}

/// `depth` nested protections over `instances` (protection `i` on instance
/// `i % instances`).
#[derive(Debug)]
struct Nested<T>(Vec<T>, usize);

/// What can be nested: one protection of one instance.
trait Nestable: Sync {
    fn nest<R>(all: &[Self], i: usize, depth: usize, f: impl FnOnce() -> R) -> R
    where
        Self: Sized;
    fn change(&self);
}

impl Nestable for Epvs {
    #[inline]
    fn nest<R>(all: &[Epvs], i: usize, depth: usize, f: impl FnOnce() -> R) -> R {
        if depth == 0 {
            return f();
        }
        let _guard = all[i % all.len()].enter();
        Self::nest(all, i + 1, depth - 1, f)
    }
    fn change(&self) {
        self.transition(|| {});
    }
}

impl Nestable for Bravo<u64> {
    #[inline]
    fn nest<R>(all: &[Bravo<u64>], i: usize, depth: usize, f: impl FnOnce() -> R) -> R {
        if depth == 0 {
            return f();
        }
        let guard = all[i % all.len()].read();
        let r = Self::nest(all, i + 1, depth - 1, f);
        std::hint::black_box(*guard);
        r
    }
    fn change(&self) {
        *self.write() += 1;
    }
}

impl<T: Nestable> Protector for Nested<T> {
    type Local<'a>
        = ()
    where
        T: 'a;
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        T::nest(&self.0, 0, self.1, f)
    }
    /// A change of every instance (the suite makes none).
    fn change(&self, _: &mut ()) {
        for t in &self.0 {
            t.change();
        }
    }
}
