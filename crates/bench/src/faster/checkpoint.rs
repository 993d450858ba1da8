//! A checkpointed in-place key-value store, two ways (seed 2 §5.2, Figs. 9, 10; measured
//! in Fig. 16 by the `epvs-checkpoint` suite).
//!
//! The store is an array of `u64` records updated in place by `fetch_add` of a delta
//! (reads load a record). A checkpoint `v` must be a *consistent cut* (CPR): for every
//! thread a point in its sequence of operations such that the checkpoint holds exactly
//! the effects of the operations before it. Operations carry a *tag*: the first
//! checkpoint they belong to; checkpoint `v` holds the operations tagged `<= v`.
//!
//! While a checkpoint is being flushed, operations of the next version must not disturb
//! the cut values: the first write of a record after the cut *preserves* its cut value in
//! a second array (read-copy-update, one latch word per record, claimed by CAS), and the
//! flusher preserves every record nobody wrote and reads the preserved values. Both
//! schemes share this record layer; they differ in how threads agree on the cut:
//!
//! - [`EpvsKv`] (`epvs`, Fig. 10): a two-state machine `REST(v) -> WAIT_FLUSH(v) ->
//!   REST(v + 1)` on [`Epvs`]. The cut is the `REST -> WAIT_FLUSH` critical section, which
//!   runs with no protected region active. Regions in `REST(v)` update in place (tag `v`),
//!   regions in `WAIT_FLUSH(v)` preserve, then update (tag `v + 1`); the flusher runs
//!   without protection, and `WAIT_FLUSH -> REST` is stepped once it is done.
//! - [`CprKv`] (`cpr-epoch`, Fig. 9, FASTER's marker scheme): no mutual exclusion. A
//!   global `(version, phase)` word and one marker per thread; phases `REST`, `PREPARE`,
//!   `IN_PROGRESS`, `WAIT_FLUSH`. A thread adopts the global phase at its own refresh
//!   points (every operation, or every region of operations), publishes it in its marker,
//!   and, if every active thread has now reached the global phase, advances it
//!   (`PREPARE -> IN_PROGRESS -> WAIT_FLUSH`, and `WAIT_FLUSH -> REST(v + 1)` once the
//!   flush is done; the checkpointer starts with `REST -> PREPARE`). Threads in `REST(v)`
//!   update in place (tag `v`); in `PREPARE(v)` they update in place under the record's
//!   shared latch (tag `v`) unless the record was already preserved for `v`, in which
//!   case a thread of version `v + 1` has touched it and this thread *shifts* to
//!   `IN_PROGRESS` first (the seed's "advance as a result of consistency issues"); in
//!   `IN_PROGRESS(v)` and `WAIT_FLUSH(v)` they preserve, then update (tag `v + 1`). The
//!   flush starts at the global `WAIT_FLUSH(v)`, when every thread has acknowledged
//!   `IN_PROGRESS(v)` and so has finished its last `v` operation.
//!
//! # Verification
//!
//! Each worker keeps the running sums `a = Σ delta` and `b = Σ (key + 1) · delta`
//! (wrapping) of its updates and records them at the end of each tag ([`Tally`]). The
//! flush computes the same two sums over the cut values ([`Checkpoint`]). Checkpoint
//! `v` is a consistent cut iff (up to a 2^-64-ish chance of a coincidence per sum) its
//! sums equal the sums, over all threads, of each thread's prefix of operations tagged
//! `<= v` ([`verify`]). An operation missing from the cut, one included that should not
//! be, or one counted twice changes the sums; a deliberately broken store
//! ([`Fault::SkipCopyOnWrite`]: next-version writes do not preserve the cut value;
//! [`Fault::SkipPrepareLatch`]: `cpr-epoch`'s `PREPARE` writes ignore the record latch)
//! fails the check (see `crates/bench/tests/suites.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use epvs::version::{AdvanceError, Epvs, EpvsGuard, State, StateMachine};

use crate::harness::SplitMix64;

/// Operations per protected region in the coarse-grained runs (seed 2 §6.1).
pub const COARSE_OPS_PER_REGION: u32 = 16_384;

/// A deliberate bug, for showing that [`verify`] catches broken stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    /// None: the store as documented.
    #[default]
    None,
    /// Updates of the next version write in place without preserving the cut value.
    SkipCopyOnWrite,
    /// `cpr-epoch` only: `PREPARE` updates write in place without the record's latch and
    /// without checking whether a next-version thread already preserved the record (the
    /// race CPR's shift exists for).
    SkipPrepareLatch,
}

/// Why a checkpoint failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CutError {
    /// The flushed sums differ from the threads' prefixes.
    #[error(
        "checkpoint {version} is not a consistent cut: flushed sums ({got_a:#x}, {got_b:#x}), \
         the threads' operations tagged <= {version} sum to ({want_a:#x}, {want_b:#x})"
    )]
    Inconsistent {
        /// The checkpoint's version.
        version: u64,
        /// Flushed `Σ value`.
        got_a: u64,
        /// Flushed `Σ (key + 1) · value`.
        got_b: u64,
        /// Expected `Σ value`.
        want_a: u64,
        /// Expected `Σ (key + 1) · value`.
        want_b: u64,
    },
    /// A worker's tags went backwards (a bug of the scheme).
    #[error("worker {worker} tagged an operation {tag} after one tagged {previous}")]
    TagsNotMonotone {
        /// The worker.
        worker: usize,
        /// The earlier, larger tag.
        previous: u64,
        /// The later, smaller tag.
        tag: u64,
    },
}

/// One flushed checkpoint: its version and the sums over its cut values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Holds the operations tagged `<= version`.
    pub version: u64,
    /// `Σ value` over all records (wrapping).
    pub sum: u64,
    /// `Σ (key + 1) · value` over all records (wrapping).
    pub weighted: u64,
}

/// A worker's running sums per tag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    tag: u64,
    a: u64,
    b: u64,
    /// `(tag, a, b)`: the sums up to the end of each tag, ascending.
    history: Vec<(u64, u64, u64)>,
    /// A tag went backwards: `(previous, tag)`.
    backwards: Option<(u64, u64)>,
}

impl Tally {
    #[inline]
    fn record(&mut self, tag: u64, key: usize, delta: u64) {
        if tag != self.tag {
            if tag < self.tag {
                self.backwards.get_or_insert((self.tag, tag));
            } else {
                self.history.push((self.tag, self.a, self.b));
                self.tag = tag;
            }
        }
        self.a = self.a.wrapping_add(delta);
        self.b = self.b.wrapping_add((key as u64 + 1).wrapping_mul(delta));
    }

    fn finished(mut self) -> Tally {
        self.history.push((self.tag, self.a, self.b));
        self
    }

    /// The sums of the operations tagged `<= version`.
    fn prefix(&self, version: u64) -> (u64, u64) {
        self.history.iter().rev().find(|h| h.0 <= version).map_or((0, 0), |h| (h.1, h.2))
    }
}

/// Checks every checkpoint against the workers' tallies; returns how many were verified.
///
/// # Errors
///
/// The first checkpoint that is not a consistent cut, or a worker whose tags went back.
pub fn verify(checkpoints: &[Checkpoint], tallies: &[Tally]) -> Result<usize, CutError> {
    for (worker, t) in tallies.iter().enumerate() {
        if let Some((previous, tag)) = t.backwards {
            return Err(CutError::TagsNotMonotone { worker, previous, tag });
        }
    }
    for c in checkpoints {
        let (want_a, want_b) = tallies.iter().fold((0u64, 0u64), |(a, b), t| {
            let (ta, tb) = t.prefix(c.version);
            (a.wrapping_add(ta), b.wrapping_add(tb))
        });
        if (c.sum, c.weighted) != (want_a, want_b) {
            return Err(CutError::Inconsistent {
                version: c.version,
                got_a: c.sum,
                got_b: c.weighted,
                want_a,
                want_b,
            });
        }
    }
    Ok(checkpoints.len())
}

/// Latch word of a record: bits 32.. the tag the cut value was preserved for (checkpoint
/// version + 1), bit 31 the copy lock, bits 0..31 shared holders (`cpr-epoch`'s
/// `PREPARE` updates).
const LOCKED: u64 = 1 << 31;
const HOLDERS: u64 = LOCKED - 1;

/// The records, their preserved cut values and latch words.
#[derive(Debug)]
struct Records {
    cur: Vec<AtomicU64>,
    cut: Vec<AtomicU64>,
    latch: Vec<AtomicU64>,
    fault: Fault,
}

/// What a `PREPARE` update found.
enum Latched {
    Applied,
    /// The record was already preserved for this checkpoint: shift to the next version.
    Shift,
}

impl Records {
    fn new(keys: usize, fault: Fault) -> Self {
        assert!(keys.is_power_of_two(), "keys must be a power of two");
        let zeroes = || (0..keys).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        Records { cur: zeroes(), cut: zeroes(), latch: zeroes(), fault }
    }

    #[inline]
    fn key(&self, r: u64) -> usize {
        r as usize & (self.cur.len() - 1)
    }

    #[inline]
    fn read(&self, key: usize) -> u64 {
        // Relaxed: reads return some recent value; the checkpoint does not depend on them.
        self.cur[key].load(Ordering::Relaxed)
    }

    /// An in-place update, by a thread whose version nobody preserves against now.
    #[inline]
    fn add(&self, key: usize, delta: u64) {
        // Relaxed: ordered before the flush by the scheme (a critical section, or the
        // marker handshake), see the module docs.
        self.cur[key].fetch_add(delta, Ordering::Relaxed);
    }

    /// Makes sure `cut[key]` holds the value of `key` at the cut of checkpoint `version`
    /// (copying it from `cur` if nobody did yet).
    #[inline]
    fn preserve(&self, key: usize, version: u64) {
        let tag = (version + 1) << 32;
        let latch = &self.latch[key];
        loop {
            // Acquire: pairs with the Release below, so a preserved value is visible to the
            // flusher that finds the tag, and a writer's update follows the copy.
            let s = latch.load(Ordering::Acquire);
            if s & !(LOCKED | HOLDERS) == tag {
                return;
            }
            if s & (LOCKED | HOLDERS) != 0 {
                std::hint::spin_loop();
                continue;
            }
            // Acquire: pairs with the Release of the last `PREPARE` holder, so its update
            // is in the value copied.
            if latch
                .compare_exchange_weak(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // Relaxed (both): the latch orders them.
                let v = self.cur[key].load(Ordering::Relaxed);
                self.cut[key].store(v, Ordering::Relaxed);
                // Release: publishes the copy; pairs with the Acquire loads above.
                latch.store(tag, Ordering::Release);
                return;
            }
        }
    }

    /// An update of the version after checkpoint `version` (its cut must survive).
    #[inline]
    fn add_after_cut(&self, key: usize, version: u64, delta: u64) {
        if self.fault != Fault::SkipCopyOnWrite {
            self.preserve(key, version);
        }
        self.add(key, delta);
    }

    /// A `cpr-epoch` `PREPARE(version)` update: in place under the shared latch, unless
    /// the record was preserved for `version` already.
    #[inline]
    fn add_latched(&self, key: usize, version: u64, delta: u64) -> Latched {
        let tag = (version + 1) << 32;
        let latch = &self.latch[key];
        loop {
            // Acquire: if the tag is there, this thread must see the global phase that
            // let another thread preserve (see `CprWorker::op`).
            let s = latch.load(Ordering::Acquire);
            if s & !(LOCKED | HOLDERS) == tag {
                return Latched::Shift;
            }
            if s & LOCKED != 0 {
                std::hint::spin_loop();
                continue;
            }
            // Relaxed: the holder's update is published by the Release decrement.
            if latch.compare_exchange_weak(s, s + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                self.add(key, delta);
                // Release: pairs with the Acquire CAS of `preserve`, which copies only
                // with no holder left.
                latch.fetch_sub(1, Ordering::Release);
                return Latched::Applied;
            }
        }
    }

    /// The flush of checkpoint `version`: preserves every record and sums the cut values
    /// (the seed writes them to `/dev/null`; the sums are our sink).
    fn flush(&self, version: u64) -> Checkpoint {
        let (mut sum, mut weighted) = (0u64, 0u64);
        for key in 0..self.cut.len() {
            self.preserve(key, version);
            // Relaxed: `preserve` acquired the copy.
            let v = self.cut[key].load(Ordering::Relaxed);
            sum = sum.wrapping_add(v);
            weighted = weighted.wrapping_add((key as u64 + 1).wrapping_mul(v));
        }
        Checkpoint { version, sum, weighted }
    }
}

/// One random operation: a read (top bit clear) or an update with an odd delta.
#[inline]
fn is_update(r: u64) -> bool {
    r >> 63 == 1
}

#[inline]
fn delta_of(r: u64) -> u64 {
    (r >> 17) | 1
}

/// A store checkpointed by one of the schemes; what the suite drives.
pub trait CheckpointedKv: Send + Sync + 'static {
    /// Report name of the scheme.
    const NAME: &'static str;
    /// A worker's handle.
    type Worker<'a>: KvWorker
    where
        Self: 'a;
    /// A store of `keys` records (a power of two) for `workers` workers.
    fn new(keys: usize, workers: usize, fault: Fault) -> Self;
    /// The handle of worker `index` (`< workers`; one handle per index).
    fn worker(&self, index: usize) -> Self::Worker<'_>;
    /// Takes one checkpoint (blocks until it is flushed and the store is back at rest).
    /// Called by one checkpointer thread at a time, outside any region.
    fn checkpoint(&self) -> Checkpoint;
}

/// A worker of a [`CheckpointedKv`].
pub trait KvWorker {
    /// Runs `ops` random operations (50:50 read/update, uniform keys) as one protected
    /// region; returns a checksum of the values read.
    fn region(&mut self, ops: u32, rng: &mut SplitMix64) -> u64;
    /// The worker's tally; the worker leaves the store.
    fn finish(self) -> Tally;
}

/// The EPVS phase in which the cut is being flushed.
const WAIT_FLUSH: u8 = 1;

/// `epvs`: the store checkpointed by the two-state EPVS machine of Fig. 10.
#[derive(Debug)]
pub struct EpvsKv {
    epvs: Epvs,
    records: Arc<Records>,
}

/// The machine `REST(v) -> WAIT_FLUSH(v) -> REST(v + 1)`; the flusher sets `flushed`.
#[derive(Debug)]
struct Fig10 {
    flushed: Arc<AtomicBool>,
}

impl StateMachine for Fig10 {
    fn next_step(&self, cur: State) -> Option<State> {
        match cur.phase() {
            State::REST => Some(State::new(cur.version(), WAIT_FLUSH)),
            // Acquire: pairs with the flusher's Release store after the flush.
            _ => self.flushed.load(Ordering::Acquire).then(|| State::rest(cur.version() + 1)),
        }
    }

    fn on_entering_state(&self, _from: State, _to: State) {
        // REST -> WAIT_FLUSH is the cut: being here, with no region active, is all it
        // takes. WAIT_FLUSH -> REST: every record was preserved by the flush; nothing to
        // fold back (the current values are in place).
    }
}

impl EpvsKv {
    /// A checkpoint that runs `during_flush` (on this thread, outside any region) once
    /// the store is in `WAIT_FLUSH` and before flushing; for tests.
    pub fn checkpoint_with(&self, during_flush: impl FnOnce()) -> Checkpoint {
        let flushed = Arc::new(AtomicBool::new(false));
        let from = loop {
            match self.epvs.execute_state_machine(Fig10 { flushed: Arc::clone(&flushed) }, None) {
                Ok(from) => break from,
                Err(AdvanceError::Busy) => {
                    self.epvs.wait_until(State::is_rest);
                }
                Err(e) => panic!("epvs checkpoint: {e}"),
            }
        };
        let v = from.version();
        // Our machine cannot leave WAIT_FLUSH(v) before `flushed` is set.
        self.epvs.wait_until(|s| s == State::new(v, WAIT_FLUSH));
        during_flush();
        let checkpoint = self.records.flush(v);
        // Release: pairs with `next_step`.
        flushed.store(true, Ordering::Release);
        self.epvs.try_step();
        self.epvs.wait_for_version(v + 1);
        checkpoint
    }
}

impl CheckpointedKv for EpvsKv {
    const NAME: &'static str = "epvs";
    type Worker<'a> = EpvsWorker<'a>;

    fn new(keys: usize, _workers: usize, fault: Fault) -> Self {
        EpvsKv { epvs: Epvs::new(), records: Arc::new(Records::new(keys, fault)) }
    }

    fn worker(&self, _index: usize) -> EpvsWorker<'_> {
        EpvsWorker { kv: self, tally: Tally::default(), guard: None }
    }

    fn checkpoint(&self) -> Checkpoint {
        self.checkpoint_with(|| ())
    }
}

/// A worker of [`EpvsKv`]. Like a `cpr-epoch` worker, which stays registered and adopts
/// the global phase at each refresh point, it keeps one protected region from its first
/// operation to `finish` and refreshes it at the start of each region of operations (the
/// seed's threads refresh every k operations); the refresh is one load while the version
/// does not move, where a region entered and left per operation cost 5 ns.
#[derive(Debug)]
pub struct EpvsWorker<'a> {
    kv: &'a EpvsKv,
    tally: Tally,
    guard: Option<EpvsGuard<'a>>,
}

impl EpvsWorker<'_> {
    #[inline]
    fn op(records: &Records, tally: &mut Tally, state: State, r: u64) -> u64 {
        let key = records.key(r);
        if !is_update(r) {
            return records.read(key);
        }
        let (delta, v) = (delta_of(r), state.version());
        if state.phase() == WAIT_FLUSH {
            records.add_after_cut(key, v, delta);
            tally.record(v + 1, key, delta);
        } else {
            records.add(key, delta);
            tally.record(v, key, delta);
        }
        0
    }
}

impl KvWorker for EpvsWorker<'_> {
    #[inline]
    fn region(&mut self, ops: u32, rng: &mut SplitMix64) -> u64 {
        let (records, tally) = (&*self.kv.records, &mut self.tally);
        let state = match self.guard.as_mut() {
            // The refresh point: waits out a transition in flight, adopts the new state.
            Some(g) => g.refresh(),
            None => self.guard.insert(self.kv.epvs.enter()).state(),
        };
        let mut sum = 0u64;
        for _ in 0..ops {
            sum = sum.wrapping_add(Self::op(records, tally, state, rng.next_u64()));
        }
        sum
    }

    fn finish(mut self) -> Tally {
        // Leaves the region: later checkpoints no longer wait for this worker.
        self.guard = None;
        std::mem::take(&mut self.tally).finished()
    }
}

/// `cpr-epoch` phases (low byte of the global word and of the markers).
const REST: u64 = 0;
const PREPARE: u64 = 1;
const IN_PROGRESS: u64 = 2;
const CPR_WAIT_FLUSH: u64 = 3;
/// Marker of a worker that left.
const INACTIVE: u64 = u64::MAX;

const fn cpr(version: u64, phase: u64) -> u64 {
    version << 8 | phase
}

/// `cpr-epoch`: the store checkpointed by FASTER's CPR phases and per-thread markers.
#[derive(Debug)]
pub struct CprKv {
    records: Records,
    /// `(version << 8) | phase`.
    global: CachePadded<AtomicU64>,
    /// Each worker's adopted `(version, phase)`, or `INACTIVE`.
    markers: Vec<CachePadded<AtomicU64>>,
    /// `version + 1` of the last flushed checkpoint.
    flushed: AtomicU64,
}

impl CprKv {
    /// Advances the global phase from `g` if every active worker has adopted it (and, from
    /// `WAIT_FLUSH`, the flush is done). Anyone may call it.
    fn try_advance(&self, g: u64) {
        let (version, phase) = (g >> 8, g & 0xff);
        let next = match phase {
            PREPARE => cpr(version, IN_PROGRESS),
            IN_PROGRESS => cpr(version, CPR_WAIT_FLUSH),
            // Acquire: pairs with the flusher's Release (not needed for the data, which
            // the flusher only read, but keeps the phases in one order).
            CPR_WAIT_FLUSH if self.flushed.load(Ordering::Acquire) == version + 1 => {
                cpr(version + 1, REST)
            }
            _ => return,
        };
        // Acquire: pairs with each worker's Release marker store, so every operation a
        // worker made before adopting `g` happens before the advance (and before the flush,
        // which starts after it).
        if self
            .markers
            .iter()
            .all(|m| matches!(m.load(Ordering::Acquire), x if x == g || x == INACTIVE))
        {
            // AcqRel: publishes what the scan acquired to the workers and the flusher that
            // load the new phase (Acquire); a failure means someone else advanced.
            let _ = self.global.compare_exchange(g, next, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Waits (yielding, helping advance) until the global word is `want`.
    fn await_phase(&self, want: u64) {
        loop {
            // Acquire: pairs with the advancing CAS.
            let g = self.global.load(Ordering::Acquire);
            if g == want {
                return;
            }
            self.try_advance(g);
            std::thread::yield_now();
        }
    }
}

impl CheckpointedKv for CprKv {
    const NAME: &'static str = "cpr-epoch";
    type Worker<'a> = CprWorker<'a>;

    fn new(keys: usize, workers: usize, fault: Fault) -> Self {
        CprKv {
            records: Records::new(keys, fault),
            global: CachePadded::new(AtomicU64::new(cpr(0, REST))),
            // Every worker is registered from the start, at REST(0): a worker joining
            // later would need FASTER's epoch-protected join, which the suite does not need.
            markers: (0..workers).map(|_| CachePadded::new(AtomicU64::new(cpr(0, REST)))).collect(),
            flushed: AtomicU64::new(0),
        }
    }

    fn worker(&self, index: usize) -> CprWorker<'_> {
        CprWorker { kv: self, index, local: cpr(0, REST), tally: Tally::default() }
    }

    fn checkpoint(&self) -> Checkpoint {
        // Acquire: pairs with the advancing CAS; only this thread starts checkpoints.
        let g = self.global.load(Ordering::Acquire);
        assert_eq!(g & 0xff, REST, "cpr-epoch: one checkpointer at a time");
        let version = g >> 8;
        // AcqRel: like the advancing CAS in `try_advance`; the workers' Acquire loads in
        // `refresh` pair with it (the start publishes no data of its own).
        let started = self.global.compare_exchange(
            g,
            cpr(version, PREPARE),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        assert!(started.is_ok(), "cpr-epoch: the global phase moved at rest");
        self.await_phase(cpr(version, CPR_WAIT_FLUSH));
        let checkpoint = self.records.flush(version);
        // Release: see `try_advance`.
        self.flushed.store(version + 1, Ordering::Release);
        self.await_phase(cpr(version + 1, REST));
        checkpoint
    }
}

/// A worker of [`CprKv`]; leaves (marks itself inactive) when finished or dropped.
#[derive(Debug)]
pub struct CprWorker<'a> {
    kv: &'a CprKv,
    index: usize,
    /// The adopted `(version, phase)`.
    local: u64,
    tally: Tally,
}

impl CprWorker<'_> {
    /// A refresh point: adopt the global phase; if it changed, acknowledge it and try to
    /// advance.
    #[inline]
    fn refresh(&mut self) {
        // Acquire: pairs with the advancing CAS (see `try_advance`).
        let g = self.kv.global.load(Ordering::Acquire);
        if g != self.local {
            self.local = g;
            // Release: publishes this worker's operations of the earlier phases to the
            // advancer's Acquire scan.
            self.kv.markers[self.index].store(g, Ordering::Release);
            self.kv.try_advance(g);
        }
    }

    #[inline]
    fn op(&mut self, r: u64) -> u64 {
        let records = &self.kv.records;
        let key = records.key(r);
        if !is_update(r) {
            return records.read(key);
        }
        let delta = delta_of(r);
        loop {
            let (v, phase) = (self.local >> 8, self.local & 0xff);
            match phase {
                REST => {
                    records.add(key, delta);
                    self.tally.record(v, key, delta);
                }
                PREPARE if records.fault == Fault::SkipPrepareLatch => {
                    records.add(key, delta);
                    self.tally.record(v, key, delta);
                }
                PREPARE => match records.add_latched(key, v, delta) {
                    Latched::Applied => self.tally.record(v, key, delta),
                    // A worker of version v + 1 preserved the record, so the global phase
                    // is IN_PROGRESS(v) (it cannot pass it without this worker), and this
                    // worker sees it (the latch load acquired the preserving store, which
                    // followed that worker's load of the phase). Shift and retry.
                    Latched::Shift => {
                        self.refresh();
                        continue;
                    }
                },
                _ => {
                    records.add_after_cut(key, v, delta);
                    self.tally.record(v + 1, key, delta);
                }
            }
            return 0;
        }
    }

    fn leave(&self) {
        // Release: publishes this worker's last operations to the advancer's scan.
        self.kv.markers[self.index].store(INACTIVE, Ordering::Release);
    }
}

impl KvWorker for CprWorker<'_> {
    #[inline]
    fn region(&mut self, ops: u32, rng: &mut SplitMix64) -> u64 {
        self.refresh();
        let mut sum = 0u64;
        for _ in 0..ops {
            sum = sum.wrapping_add(self.op(rng.next_u64()));
        }
        sum
    }

    fn finish(mut self) -> Tally {
        self.leave();
        std::mem::take(&mut self.tally).finished()
    }
}

impl Drop for CprWorker<'_> {
    fn drop(&mut self) {
        self.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_ops<K: CheckpointedKv>(kv: &K, index: usize, regions: u32, ops: u32) -> Tally {
        let mut w = kv.worker(index);
        let mut rng = SplitMix64::new(index as u64 + 1);
        for _ in 0..regions {
            w.region(ops, &mut rng);
        }
        w.finish()
    }

    #[test]
    fn sequential_checkpoints_verify() {
        let kv = EpvsKv::new(1 << 8, 1, Fault::None);
        let t1 = run_ops(&kv, 0, 100, 3);
        let c0 = kv.checkpoint();
        assert_eq!(c0.version, 0);
        assert_eq!(verify(&[c0], std::slice::from_ref(&t1)), Ok(1));
        let c1 = kv.checkpoint();
        assert_eq!(verify(&[c0, c1], &[t1]), Ok(2));
    }
}
