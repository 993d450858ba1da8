//! Protection schemes measured by `epvs-ops`, `epvs-freq` and `epvs-table`: a uniform
//! shape for "run this operation protected" and "make an exclusive version change".

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crossbeam_utils::CachePadded;
use epvs::epoch::{EpochGuard, LightEpoch};

use super::epvs_common::{hash_work, threshold, WORK_BYTES};
use crate::arrays::Rng;
use crate::harness::{run_threads, Sample, Span, ThreadCtl, ThreadResult};
use crate::peers::bravo::{Bravo, VisibleReaders};

/// Operations between checks of the stop flag.
pub(crate) const BATCH: u64 = 64;
/// Operations per iteration of the innermost loop (a divisor of [`BATCH`]).
const UNROLL: u64 = 4;

/// One way of protecting operations against exclusive changes.
pub(crate) trait Protector: Sync {
    /// Per-thread state (e.g. a guard kept across operations).
    type Local<'a>
    where
        Self: 'a;
    /// Per-thread state for the calling thread.
    fn local(&self) -> Self::Local<'_>;
    /// Runs `f` protected.
    fn protected<'a, R>(&'a self, local: &mut Self::Local<'a>, f: impl FnOnce() -> R) -> R;
    /// One exclusive change (a version change, a write lock, an epoch bump).
    fn change<'a>(&'a self, local: &mut Self::Local<'a>);
}

/// `latch-free`: no protection; a change is a plain atomic increment that no operation
/// waits for (the unsafe upper bound of seed 2 Fig. 17).
#[derive(Debug, Default)]
pub(crate) struct LatchFree {
    version: CachePadded<AtomicU64>,
}

impl Protector for LatchFree {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        f()
    }
    #[inline]
    fn change(&self, _: &mut ()) {
        // Relaxed: nothing is ordered by this counter; that is the point of the baseline.
        self.version.fetch_add(1, Relaxed);
    }
}

/// `latched` / `rwlock-parking-lot`: shared lock per operation, exclusive per change.
#[derive(Debug, Default)]
pub(crate) struct Latched(parking_lot::RwLock<u64>);

impl Protector for Latched {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        let g = self.0.read();
        let r = f();
        std::hint::black_box(*g);
        r
    }
    #[inline]
    fn change(&self, _: &mut ()) {
        *self.0.write() += 1;
    }
}

/// `bravo`: BRAVO read lock per operation, write lock per change.
#[derive(Debug)]
pub(crate) struct BravoLock(Bravo<u64>);

impl BravoLock {
    /// On the process-wide visible-readers table.
    pub(crate) fn new() -> Self {
        BravoLock(Bravo::new(0))
    }
    /// On a private table of `slots` slots.
    pub(crate) fn with_table(slots: usize) -> Self {
        BravoLock(Bravo::with_table(0, std::sync::Arc::new(VisibleReaders::new(slots))))
    }
}

impl Protector for BravoLock {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        let g = self.0.read();
        let r = f();
        std::hint::black_box(*g);
        r
    }
    #[inline]
    fn change(&self, _: &mut ()) {
        *self.0.write() += 1;
    }
}

/// `crossbeam-pin`: `crossbeam_epoch::pin()` per operation; a change is a no-op (crossbeam
/// has no exclusive section).
#[derive(Debug, Default)]
pub(crate) struct CrossbeamPin;

impl Protector for CrossbeamPin {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        let g = crossbeam_epoch::pin();
        let r = f();
        drop(g);
        r
    }
    fn change(&self, _: &mut ()) {}
}

/// `lightepoch`: `LightEpoch::protect` per operation; a change bumps the epoch.
#[derive(Debug, Default)]
pub(crate) struct Epoch(pub(crate) LightEpoch);

impl Protector for Epoch {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        let g = self.0.protect();
        let r = f();
        drop(g);
        r
    }
    fn change(&self, _: &mut ()) {
        self.0.bump();
    }
}

/// `lightepoch-pinned`: one guard per thread, refreshed per operation.
#[derive(Debug, Default)]
pub(crate) struct EpochPinned(pub(crate) LightEpoch);

impl Protector for EpochPinned {
    type Local<'a> = EpochGuard<'a>;
    fn local(&self) -> EpochGuard<'_> {
        self.0.protect()
    }
    #[inline]
    fn protected<R>(&self, g: &mut EpochGuard<'_>, f: impl FnOnce() -> R) -> R {
        g.refresh();
        f()
    }
    fn change(&self, _: &mut EpochGuard<'_>) {
        self.0.bump();
    }
}

/// The per-thread loop of the protection suites: `BATCH` operations between checks of
/// `ctl`, each `work` run protected, and after each, with probability `p_change`, one
/// exclusive change. Returns the operation count.
pub(crate) fn protect_loop<P: Protector>(
    p: &P,
    ctl: &ThreadCtl,
    thread: usize,
    p_change: f64,
    work: impl FnMut() -> u64,
) -> u64 {
    match threshold(p_change) {
        // Without changes, a loop that cannot call `change`: a change takes the per-thread
        // state by reference, which would keep it in memory for every operation.
        0 => protect_loop_with::<P, false>(p, ctl, thread, 0, work),
        limit => protect_loop_with::<P, true>(p, ctl, thread, limit, work),
    }
}

#[inline(always)]
fn protect_loop_with<P: Protector, const CHANGES: bool>(
    p: &P,
    ctl: &ThreadCtl,
    thread: usize,
    limit: u64,
    mut work: impl FnMut() -> u64,
) -> u64 {
    let mut local = p.local();
    let mut rng = Rng::for_thread(thread);
    let (mut ops, mut sum) = (0u64, 0u64);
    while ctl.running() {
        // Unrolled by `UNROLL`: the loop's own increment and branch would otherwise be a
        // visible share of the cheapest operations (a refresh is a few instructions).
        for _ in 0..BATCH / UNROLL {
            for _ in 0..UNROLL {
                sum = sum.wrapping_add(p.protected(&mut local, &mut work));
                if CHANGES && rng.next_u64() < limit {
                    p.change(&mut local);
                }
            }
        }
        ops += BATCH;
    }
    std::hint::black_box(sum);
    ops
}

/// One measurement of the hashing operation under protection: `threads` threads, thread
/// `t` looping ([`protect_loop`]) over `protectors[t % protectors.len()]`, with a version
/// change after an operation at probability `p_change`.
pub(crate) fn hash_work_sample<P: Protector>(
    protectors: &[P],
    threads: usize,
    span: Span,
    p_change: f64,
) -> Sample {
    run_threads(threads, span, |thread, ctl| {
        let mine = &protectors[thread % protectors.len()];
        let mut local = local_bytes(thread);
        let ops = protect_loop(mine, ctl, thread, p_change, || hash_work(&mut local, 1));
        ThreadResult { ops, latencies_ns: Vec::new() }
    })
}

/// Thread-local bytes hashed by the simulated operation.
pub(crate) fn local_bytes(thread: usize) -> [u64; WORK_BYTES / 8] {
    std::array::from_fn(|i| (thread * 8 + i) as u64)
}
