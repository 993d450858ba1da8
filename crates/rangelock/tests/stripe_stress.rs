//! Stress of `RangeLock` where its stripe table has edges (issue 13): ranges inside one
//! stripe (the fast path), over a few stripes of one window (multi-stripe claims, and
//! without them in one geometry), across a stripe boundary, across a window boundary, over five or
//! more stripes (the `wide` count), over three or more windows (`wide_check`), the whole
//! domain and the last unit; exclusive and shared; try, blocking and timeout calls. Tiny
//! geometries (16-unit stripes, 64-unit windows, two directory entries) make a short run
//! reach every path, aliasing in the overflow table included; the default geometry is
//! stressed around its window boundaries (`k << 25`). Another phase races threads for the
//! window directory on fresh locks, so later windows land in the overflow table while other
//! threads hold ranges there. Every hold goes through [`support::Checker`].
//!
//! Two tests bound latencies: the worst overrun of contended `try_lock_for(.., 1 ms)` calls
//! and the worst `try_lock` call, both at 8 threads.
//!
//! The long run is ignored by default; it runs the same phases over several geometries for
//! `RANGELOCK_STRESS_SECS` seconds in all (default 600) and prints what it did:
//!
//! ```text
//! cargo test --release -p rangelock --test stripe_stress -- --ignored --nocapture
//! RANGELOCK_STRESS_SECS=20 cargo test --release -p rangelock --test stripe_stress -- --ignored --nocapture
//! ```
//!
//! The tests of this binary take turns (`serial`): the latency bounds must not measure the
//! stress tests' threads, and 2 cores are shared already.
#![cfg(not(loom))]

mod support;

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use rangelock::internals::{Guard, Lock, RawRangeLock, SkipList};
use rangelock::{LockError, Mode, RangeLock};
use support::{acquire, pause, Call, Checker, Held, Rng};

const MAX: u64 = u64::MAX;

/// The units the tiny geometries use: 8 windows of 64 units, or 16 of 32.
const SMALL_DOMAIN: Range<u64> = 0..512;

/// Longest timeout of the stress calls, in microseconds.
const TIMEOUT_US: u64 = 200;

/// Percentage of shared acquisitions.
const SHARED_PERCENT: u64 = 35;

/// The tests of this binary run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    // A failed test poisons it; the next ones still run.
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shape of a lock and the parts of the domain its ranges use.
#[derive(Clone, Debug)]
struct Geometry {
    name: &'static str,
    /// Stripe width, log2 units.
    shift: u32,
    /// Stripes per window.
    slots: u64,
    /// Window directory entries.
    windows: usize,
    /// The most stripes a stripe hold may span (`Builder::claim_stripes`).
    claim: usize,
    max_height: usize,
    /// Stripe-aligned regions where the mix picks its ranges (ranges over three windows,
    /// to the top or over everything reach beyond them).
    regions: Vec<Range<u64>>,
    /// Whether every unit of the regions is a bound (else: the stripe boundaries and a few
    /// units in each stripe).
    dense: bool,
    /// Windows the directory phase spreads over (more than `windows`; empty: no phase).
    fill: Vec<u64>,
}

impl Geometry {
    fn stripe(&self) -> u64 {
        1 << self.shift
    }

    fn window(&self) -> u64 {
        self.stripe() * self.slots
    }

    fn build(&self) -> Lock<SkipList> {
        Lock::from_raw(
            RangeLock::builder()
                .stripes(self.shift, self.slots as usize)
                .windows(self.windows)
                .claim_stripes(self.claim)
                .max_height(self.max_height)
                .build_raw(),
        )
    }

    /// 16-unit stripes, 64-unit windows, two directory entries, over 512 units: of the 8
    /// windows, the first two in use get tables and the others share the overflow table,
    /// where stripes 64 units apart share a slot.
    fn tiny() -> Self {
        Geometry {
            name: "tiny: stripes(4, 4).windows(2)",
            shift: 4,
            slots: 4,
            windows: 2,
            claim: rangelock::internals::DEFAULT_CLAIM_STRIPES,
            max_height: 12,
            regions: vec![SMALL_DOMAIN],
            dense: true,
            fill: (0..8).collect(),
        }
    }

    /// The tiny geometry with no directory: every window in the one overflow table.
    fn overflow_only() -> Self {
        Geometry {
            name: "overflow only: stripes(4, 4).windows(0)",
            windows: 0,
            fill: Vec::new(),
            ..Self::tiny()
        }
    }

    /// The tiny geometry with claims of one stripe only: every range over two stripes or
    /// more is a list writer or a reader in the table.
    fn one_stripe_claims() -> Self {
        Geometry { name: "tiny, one-stripe claims: claim_stripes(1)", claim: 1, ..Self::tiny() }
    }

    /// 4-unit stripes, 32-unit windows, four entries, a 3-level list, over 512 units (16
    /// windows): more windows per entry and a list whose top level grows long.
    fn narrow() -> Self {
        Geometry {
            name: "narrow: stripes(2, 8).windows(4).max_height(3)",
            shift: 2,
            slots: 8,
            windows: 4,
            claim: rangelock::internals::DEFAULT_CLAIM_STRIPES,
            max_height: 3,
            regions: vec![SMALL_DOMAIN],
            dense: true,
            fill: (0..16).collect(),
        }
    }

    /// The default lock (16 Ki-unit stripes, 32 Mi-unit windows, 64 entries), around the
    /// window boundaries `k << 25` for k = 1..=4; its directory phase spreads over 72
    /// windows.
    fn default_windows() -> Self {
        let (shift, slots) = (
            rangelock::internals::DEFAULT_STRIPE_SHIFT,
            rangelock::internals::DEFAULT_STRIPE_SLOTS,
        );
        let (stripe, window) = (1u64 << shift, (1u64 << shift) * slots as u64);
        Geometry {
            name: "default, at window boundaries",
            shift,
            slots: slots as u64,
            windows: rangelock::internals::DEFAULT_STRIPE_WINDOWS,
            claim: rangelock::internals::DEFAULT_CLAIM_STRIPES,
            max_height: rangelock::internals::DEFAULT_MAX_HEIGHT,
            regions: (1..=4u64).map(|k| k * window - 8 * stripe..k * window + 8 * stripe).collect(),
            dense: false,
            fill: (0..72).collect(),
        }
    }

    /// The stripes a home range of the directory phase may lie in, per window.
    fn home_stripes(&self) -> u64 {
        if self.dense {
            self.slots
        } else {
            2
        }
    }
}

/// What a generated range is meant to exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Inside one stripe: the fast path.
    InStripe,
    /// Across one stripe boundary (two stripes).
    AcrossStripes,
    /// Across a window boundary (two windows, two to four stripes).
    AcrossWindows,
    /// Five to eight stripes: counted in `wide`.
    Wide,
    /// Three or more windows: `wide_check`.
    ThreeWindows,
    /// Up to three stripes anywhere in a region.
    Short,
    /// From a region to `u64::MAX`.
    ToTop,
    /// `0..u64::MAX`.
    Whole,
    /// `u64::MAX - 1..u64::MAX`.
    LastUnit,
}

/// Kinds with their weights.
const KINDS: [(Kind, u64); 9] = [
    (Kind::InStripe, 30),
    (Kind::AcrossStripes, 14),
    (Kind::AcrossWindows, 14),
    (Kind::Wide, 10),
    (Kind::ThreeWindows, 5),
    (Kind::Short, 15),
    (Kind::ToTop, 2),
    (Kind::Whole, 2),
    (Kind::LastUnit, 4),
];

fn kind_index(kind: Kind) -> usize {
    KINDS.iter().position(|(k, _)| *k == kind).expect("every kind has a weight")
}

/// Range generator of a geometry; its bounds are the checker's.
#[derive(Debug)]
struct Ranges {
    geo: Geometry,
    bounds: Vec<u64>,
    /// Stripe boundaries strictly inside a region.
    stripe_bounds: Vec<u64>,
    /// Window boundaries strictly inside a region.
    window_bounds: Vec<u64>,
    /// Regions of at least 6 stripes (room for a wide range).
    wide_regions: Vec<Range<u64>>,
}

impl Ranges {
    fn new(geo: &Geometry) -> Self {
        let (s, w) = (geo.stripe(), geo.window());
        let mut bounds = vec![0, MAX - 1, MAX];
        let stripe_units = |s0: u64, bounds: &mut Vec<u64>| {
            if geo.dense {
                bounds.extend(s0..=s0 + s);
            } else {
                bounds.extend([0, 1, 2, 3, s / 2, s - 2, s - 1, s].map(|o| s0 + o));
            }
        };
        for r in &geo.regions {
            assert!(r.start % s == 0 && r.end % s == 0, "regions are stripe-aligned");
            for s0 in (r.start..r.end).step_by(s as usize) {
                stripe_units(s0, &mut bounds);
            }
        }
        for &window in &geo.fill {
            for i in 0..geo.home_stripes() {
                stripe_units(window * w + i * s, &mut bounds);
            }
        }
        bounds.sort_unstable();
        bounds.dedup();
        let inside = |step: u64| {
            geo.regions
                .iter()
                .flat_map(|r| (r.start / step + 1..r.end.div_ceil(step)).map(move |k| k * step))
                .collect::<Vec<_>>()
        };
        Ranges {
            bounds,
            stripe_bounds: inside(s),
            window_bounds: inside(w),
            wide_regions: geo
                .regions
                .iter()
                .filter(|r| r.end - r.start >= 6 * s)
                .cloned()
                .collect(),
            geo: geo.clone(),
        }
    }

    /// A bound in `lo..=hi`, uniformly.
    fn pick(&self, rng: &mut Rng, lo: u64, hi: u64) -> u64 {
        let i = self.bounds.partition_point(|&b| b < lo);
        let j = self.bounds.partition_point(|&b| b <= hi);
        assert!(i < j, "no bound in {lo}..={hi}");
        self.bounds[i + rng.below((j - i) as u64) as usize]
    }

    fn region(&self, rng: &mut Rng) -> Range<u64> {
        self.geo.regions[rng.below(self.geo.regions.len() as u64) as usize].clone()
    }

    /// A range inside one stripe, the one starting at `s0`.
    fn in_stripe(&self, rng: &mut Rng, s0: u64) -> Range<u64> {
        let a = self.pick(rng, s0, s0 + self.geo.stripe() - 1);
        a..self.pick(rng, a + 1, s0 + self.geo.stripe())
    }

    /// A random range, and what it exercises.
    fn next(&self, rng: &mut Rng) -> (Kind, Range<u64>) {
        let total: u64 = KINDS.iter().map(|(_, w)| w).sum();
        let mut roll = rng.below(total);
        let kind = KINDS
            .iter()
            .find(|(_, w)| {
                let hit = roll < *w;
                roll = roll.saturating_sub(*w);
                hit
            })
            .map(|(k, _)| *k)
            .expect("the weights sum to total");
        (kind, self.of_kind(rng, kind))
    }

    fn of_kind(&self, rng: &mut Rng, kind: Kind) -> Range<u64> {
        let (s, w) = (self.geo.stripe(), self.geo.window());
        let any = |v: &[u64], rng: &mut Rng| v[rng.below(v.len() as u64) as usize];
        match kind {
            Kind::InStripe => {
                let r = self.region(rng);
                let s0 = r.start + s * rng.below((r.end - r.start) / s);
                self.in_stripe(rng, s0)
            }
            Kind::AcrossStripes => {
                let t = any(&self.stripe_bounds, rng);
                self.pick(rng, t - s, t - 1)..self.pick(rng, t + 1, t + s)
            }
            Kind::AcrossWindows => {
                let t = any(&self.window_bounds, rng);
                self.pick(rng, t - 2 * s, t - 1)..self.pick(rng, t + 1, t + 2 * s)
            }
            Kind::Wide => {
                let r = &self.wide_regions[rng.below(self.wide_regions.len() as u64) as usize];
                let first = r.start + s * rng.below((r.end - r.start) / s - 5);
                let a = self.pick(rng, first, first + s - 1);
                // The last unit lies at least 4 stripes after `a`'s: 5 stripes or more.
                a..self.pick(rng, first + 4 * s + 1, (a + 8 * s).min(r.end))
            }
            Kind::ThreeWindows => {
                let t1 = any(&self.window_bounds, rng);
                let later: Vec<u64> =
                    self.window_bounds.iter().copied().filter(|&t| t >= t1 + w).collect();
                if later.is_empty() {
                    // The last window boundaries: go down to an earlier one instead.
                    let t0 = self.window_bounds[0];
                    return self.pick(rng, t0 - s, t0 - 1)..self.pick(rng, t1 + 1, t1 + s);
                }
                let t2 = any(&later, rng);
                // From window(t1) - 1 to at least window(t1) + 1.
                self.pick(rng, t1 - s, t1 - 1)..self.pick(rng, t2 + 1, t2 + s)
            }
            Kind::Short => {
                let r = self.region(rng);
                let a = self.pick(rng, r.start, r.end - 1);
                a..self.pick(rng, a + 1, (a + 3 * s).min(r.end))
            }
            Kind::ToTop => {
                let r = self.region(rng);
                self.pick(rng, r.start, r.end - 1)..MAX
            }
            Kind::Whole => 0..MAX,
            Kind::LastUnit => MAX - 1..MAX,
        }
    }

    /// Checks that a range is what its kind says (the generator's own test).
    fn assert_kind(&self, kind: Kind, r: &Range<u64>) {
        let (shift, w) = (self.geo.shift, self.geo.window());
        let stripes = ((r.end - 1) >> shift) - (r.start >> shift) + 1;
        let windows = (r.end - 1) / w - r.start / w + 1;
        let ok = match kind {
            Kind::InStripe => stripes == 1,
            Kind::AcrossStripes => stripes == 2,
            Kind::AcrossWindows => windows == 2,
            Kind::Wide => (5..=9).contains(&stripes),
            Kind::ThreeWindows => windows >= 3,
            Kind::Short => stripes <= 4,
            Kind::ToTop => r.end == MAX && windows >= 3,
            Kind::Whole => *r == (0..MAX),
            Kind::LastUnit => *r == (MAX - 1..MAX),
        };
        assert!(
            ok,
            "{}: {kind:?} generated {r:?} ({stripes} stripes, {windows} windows)",
            self.geo.name
        );
    }
}

/// How long a phase runs.
#[derive(Clone, Copy, Debug)]
enum Budget {
    /// Operations per thread (rounds of the directory phase).
    Ops(u64),
    /// Until this instant.
    Until(Instant),
}

impl Budget {
    fn more(self, done: u64) -> bool {
        match self {
            Budget::Ops(n) => done < n,
            Budget::Until(end) => Instant::now() < end,
        }
    }
}

/// What a phase did.
#[derive(Clone, Debug, Default)]
struct Report {
    /// Acquisitions by kind (in `KINDS` order) and mode (exclusive, shared).
    acquired: [[u64; 2]; KINDS.len()],
    refused: u64,
    timed_out: u64,
    /// Directory-phase rounds (fresh locks).
    rounds: u64,
    /// The largest `allocated_nodes` seen after a run.
    nodes: usize,
}

impl Report {
    fn add(&mut self, other: &Report) {
        for (a, b) in self.acquired.iter_mut().zip(&other.acquired) {
            a[0] += b[0];
            a[1] += b[1];
        }
        self.refused += other.refused;
        self.timed_out += other.timed_out;
        self.rounds += other.rounds;
        self.nodes = self.nodes.max(other.nodes);
    }

    fn total(&self) -> u64 {
        self.acquired.iter().map(|a| a[0] + a[1]).sum()
    }

    fn attempts(&self) -> u64 {
        self.total() + self.refused + self.timed_out
    }

    /// Every kind was acquired, exclusively and shared (so the run took every path).
    fn assert_every_kind(&self, name: &str) {
        for ((kind, _), [exclusive, shared]) in KINDS.iter().zip(&self.acquired) {
            assert!(
                *exclusive > 0 && *shared > 0,
                "{name}: {kind:?} acquired {exclusive} times exclusive, {shared} shared: {self:?}"
            );
        }
    }

    fn summary(&self) -> String {
        let kinds: Vec<String> = KINDS
            .iter()
            .zip(&self.acquired)
            .map(|((k, _), [x, s])| format!("{k:?} {x}/{s}"))
            .collect();
        format!(
            "{} acquired (exclusive/shared: {}), {} refused, {} timed out, {} directory rounds, \
             at most {} nodes allocated",
            self.total(),
            kinds.join(", "),
            self.refused,
            self.timed_out,
            self.rounds,
            self.nodes
        )
    }
}

/// One thread's stream of operations, checked by `checker` as thread `t`.
struct Worker<'a> {
    lock: &'a Lock<SkipList>,
    checker: &'a Checker,
    ranges: &'a Ranges,
    t: usize,
    rng: Rng,
    report: Report,
}

impl<'a> Worker<'a> {
    fn mode(&mut self) -> Mode {
        if self.rng.below(100) < SHARED_PERCENT {
            Mode::Shared
        } else {
            Mode::Exclusive
        }
    }

    /// Acquires a random range through `call`, and enters the checker.
    fn take(&mut self, call: Call) -> Option<(Guard<'a, SkipList>, Held)> {
        let (kind, range) = self.ranges.next(&mut self.rng);
        let mode = self.mode();
        let Some(guard) = acquire(self.lock, range.clone(), mode, call) else {
            match call {
                Call::Try => self.report.refused += 1,
                _ => self.report.timed_out += 1,
            }
            return None;
        };
        self.report.acquired[kind_index(kind)][usize::from(mode == Mode::Shared)] += 1;
        Some((guard, self.checker.enter(self.t, range, mode, call)))
    }

    fn give_back(&mut self, (guard, held): (Guard<'a, SkipList>, Held)) {
        self.checker.leave(self.t, held);
        drop(guard);
    }

    /// One operation: a range through any call (blocking only when `holding` nothing
    /// else), held for a moment; one time in eight a second range (try or timeout) while
    /// holding the first.
    fn op(&mut self, holding: bool) {
        let call = if holding {
            Call::random_bounded(&mut self.rng, TIMEOUT_US)
        } else {
            Call::random(&mut self.rng, TIMEOUT_US)
        };
        let Some(first) = self.take(call) else { return };
        if self.rng.below(8) == 0 {
            let call = Call::random_bounded(&mut self.rng, TIMEOUT_US);
            if let Some(second) = self.take(call) {
                pause(&mut self.rng);
                self.give_back(second);
            }
        }
        pause(&mut self.rng);
        self.give_back(first);
    }
}

/// Runs `f(t, rng)` on `threads` threads started together; re-raises the first panic.
fn on_threads<T: Send>(threads: usize, seed: u64, f: impl Fn(usize, Rng) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(threads);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || {
                    let rng = Rng::new(seed ^ ((t as u64 + 1) << 32));
                    barrier.wait();
                    f(t, rng)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// After a run: everything is free again, and the nodes the lock allocated stay far below
/// one per acquisition (they are recycled).
fn after_run(geo: &Geometry, lock: &Lock<SkipList>, report: &mut Report) {
    let all = lock.try_lock(0..MAX).unwrap_or_else(|e| panic!("{}: after the run: {e}", geo.name));
    drop(all);
    let nodes = lock.raw().allocated_nodes();
    report.nodes = report.nodes.max(nodes);
    // `allocated_nodes` stays bounded by the peak number of nodes in use plus the
    // retirement batches in flight (its docs): a few per thread plus, for 8 threads, a few
    // thousand waiting to be reused, not a share of every attempt. The floor covers short
    // runs.
    let attempts = report.attempts() as usize;
    assert!(
        nodes <= 4096.max(attempts / 4),
        "{}: {nodes} nodes allocated for {attempts} attempts",
        geo.name
    );
}

/// The mix on `threads` threads over one lock of `geo`.
fn mix(geo: &Geometry, threads: usize, budget: Budget, seed: u64) -> Report {
    let lock = geo.build();
    let ranges = Ranges::new(geo);
    let checker = Checker::new(geo.name, ranges.bounds.iter().copied(), threads);
    let reports = on_threads(threads, seed, |t, rng| {
        let mut w = Worker {
            lock: &lock,
            checker: &checker,
            ranges: &ranges,
            t,
            rng,
            report: Report::default(),
        };
        let mut done = 0;
        while !checker.failed() && budget.more(done) {
            w.op(false);
            done += 1;
        }
        w.report
    });
    let mut report = Report::default();
    for r in &reports {
        report.add(r);
    }
    after_run(geo, &lock, &mut report);
    report
}

/// Counts a thread in when dropped (also when it unwinds).
struct Arrival<'a>(&'a AtomicUsize);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The directory phase: rounds on fresh locks. Each round shuffles `geo.fill` (more
/// windows than the directory has entries) among the threads; on a signal they all claim
/// one range inside one stripe in each of their windows at once (so windows race for the
/// entries and the later ones land in the overflow table) and hold them while they run
/// the mix (bounded calls only) for `ops` operations, re-checking their holds.
fn race_for_directory(
    geo: &Geometry,
    threads: usize,
    budget: Budget,
    ops: u64,
    seed: u64,
) -> Report {
    assert!(geo.fill.len() > geo.windows, "{}: the phase must overfill the directory", geo.name);
    let ranges = Ranges::new(geo);
    let mut report = Report::default();
    let mut rng = Rng::new(seed);
    let mut round = 0;
    while budget.more(round) {
        round += 1;
        let lock = geo.build();
        let checker = Checker::new(geo.name, ranges.bounds.iter().copied(), threads);
        let mut fill = geo.fill.clone();
        for i in (1..fill.len()).rev() {
            fill.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let claimed = AtomicUsize::new(0);
        let reports = on_threads(threads, rng.next_u64(), |t, rng| {
            let mut w = Worker {
                lock: &lock,
                checker: &checker,
                ranges: &ranges,
                t,
                rng,
                report: Report::default(),
            };
            // Counts this thread in when it has claimed its windows, or when it panicked
            // trying (so the others do not wait for it forever).
            let arrival = Arrival(&claimed);
            let mut homes = Vec::new();
            for &window in fill.iter().skip(t).step_by(threads) {
                let stripe = w.rng.below(geo.home_stripes());
                let range =
                    w.ranges.in_stripe(&mut w.rng, window * geo.window() + stripe * geo.stripe());
                // Nobody else locks anything that overlaps until every thread has claimed
                // its windows: a try must succeed.
                let guard = lock.try_lock(range.clone()).unwrap_or_else(|e| {
                    panic!("{}: {range:?} (window {window}) overlaps nothing held: {e}", geo.name)
                });
                homes.push((guard, checker.enter(t, range, Mode::Exclusive, Call::Try)));
            }
            drop(arrival);
            while claimed.load(Ordering::SeqCst) < threads && !checker.failed() {
                thread::yield_now();
            }
            for i in 0..ops {
                if checker.failed() {
                    break;
                }
                w.op(true);
                if i % 16 == 0 {
                    for (_, held) in &homes {
                        checker.check(held);
                    }
                }
            }
            for home in homes {
                w.give_back(home);
            }
            w.report
        });
        let mut r = Report { rounds: 1, ..Report::default() };
        for rep in &reports {
            r.add(rep);
        }
        after_run(geo, &lock, &mut r);
        report.add(&r);
    }
    report
}

#[test]
fn generated_ranges_are_of_their_kind() {
    for geo in [Geometry::tiny(), Geometry::narrow(), Geometry::default_windows()] {
        let ranges = Ranges::new(&geo);
        let checker = Checker::new(geo.name, ranges.bounds.iter().copied(), 1);
        let mut rng = Rng::new(7);
        for _ in 0..20_000 {
            let (kind, range) = ranges.next(&mut rng);
            ranges.assert_kind(kind, &range);
            // Every range starts and ends at bounds: the checker takes it (or panics).
            let held = checker.enter(0, range, Mode::Shared, Call::Try);
            checker.leave(0, held);
        }
    }
}

/// One short mixed run over `geo` that must acquire every kind of range in both modes.
fn short_mix(geo: Geometry, threads: usize, ops: u64, seed: u64) {
    let _serial = serial();
    let report = mix(&geo, threads, Budget::Ops(ops), seed);
    eprintln!("{}: {}", geo.name, report.summary());
    report.assert_every_kind(geo.name);
}

#[test]
fn tiny_windows_mixed() {
    short_mix(Geometry::tiny(), 8, 5000, 0x71AE);
}

#[test]
fn tiny_windows_one_stripe_claims_mixed() {
    short_mix(Geometry::one_stripe_claims(), 6, 4000, 0x1C1A);
}

#[test]
fn narrow_windows_and_a_short_list_mixed() {
    short_mix(Geometry::narrow(), 6, 4000, 0x3A77);
}

#[test]
fn overflow_table_only_mixed() {
    short_mix(Geometry::overflow_only(), 4, 4000, 0x0F10);
}

#[test]
fn default_geometry_at_window_boundaries() {
    short_mix(Geometry::default_windows(), 6, 4000, 0xDEF0);
}

#[test]
fn threads_race_for_the_window_directory() {
    let _serial = serial();
    for (geo, rounds) in
        [(Geometry::tiny(), 80), (Geometry::narrow(), 50), (Geometry::default_windows(), 10)]
    {
        let report = race_for_directory(&geo, 8, Budget::Ops(rounds), 60, 0xD1 + rounds);
        eprintln!("{} (directory): {}", geo.name, report.summary());
        assert!(report.total() > rounds * geo.fill.len() as u64, "{report:?}");
    }
}

/// The checker over the stripe mix catches a lock that grants everything.
#[test]
#[should_panic(expected = "no-lock: mutual exclusion violated")]
fn the_checker_catches_a_lock_that_grants_everything() {
    let _serial = serial();
    let geo = Geometry::tiny();
    let ranges = Ranges::new(&geo);
    let lock = Lock::from_raw(support::NoLock);
    let checker = Checker::new("no-lock", ranges.bounds.iter().copied(), 4);
    on_threads(4, 1, |t, mut rng| {
        while !checker.failed() {
            let (_, range) = ranges.next(&mut rng);
            let Some(guard) = acquire(&lock, range.clone(), Mode::Exclusive, Call::Blocking) else {
                continue;
            };
            let held = checker.enter(t, range, Mode::Exclusive, Call::Blocking);
            pause(&mut rng);
            checker.leave(t, held);
            drop(guard);
        }
    });
}

/// `RangeLock` with shared acquisitions that take nothing: the checker's reader checks
/// must catch the writers that come in.
#[derive(Debug, Default)]
struct ReadersTakeNothing(SkipList);

// SAFETY: deliberately broken for shared ranges, only to show that the checker detects it;
// the checker uses atomics and `Lock`'s safe API only.
unsafe impl RawRangeLock for ReadersTakeNothing {
    type Token = Option<rangelock::internals::SkipToken>;
    const NAME: &'static str = "readers-take-nothing";
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token> {
        match mode {
            Mode::Shared => Some(None),
            Mode::Exclusive => self.0.try_lock(range, mode).map(Some),
        }
    }
    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token {
        match mode {
            Mode::Shared => None,
            Mode::Exclusive => Some(self.0.lock(range, mode)),
        }
    }
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token> {
        match mode {
            Mode::Shared => Some(None),
            Mode::Exclusive => self.0.lock_until(range, mode, deadline).map(Some),
        }
    }
    unsafe fn unlock(&self, token: Self::Token) {
        if let Some(token) = token {
            // SAFETY: the token is the inner lock's, passed back once (our caller's contract).
            unsafe { self.0.unlock(token) };
        }
    }
}

#[test]
#[should_panic(expected = "readers-take-nothing: mutual exclusion violated")]
fn the_checker_catches_writers_under_readers() {
    let _serial = serial();
    let geo = Geometry::tiny();
    let ranges = Ranges::new(&geo);
    let lock = Lock::from_raw(ReadersTakeNothing::default());
    let checker = Checker::new("readers-take-nothing", ranges.bounds.iter().copied(), 4);
    on_threads(4, 2, |t, mut rng| {
        while !checker.failed() {
            let (_, range) = ranges.next(&mut rng);
            let mode = if t % 2 == 0 { Mode::Shared } else { Mode::Exclusive };
            let Some(guard) = acquire(&lock, range.clone(), mode, Call::Blocking) else {
                continue;
            };
            let held = checker.enter(t, range, mode, Call::Blocking);
            pause(&mut rng);
            checker.leave(t, held);
            drop(guard);
        }
    });
}

/// Spins until `d` has passed (a holder's critical section of a given length).
fn spin_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// How long the calling thread has waited on a run queue so far (runnable, but the CPUs
/// busy with other threads), if the kernel reports it: the second field of
/// `/proc/thread-self/schedstat`, in nanoseconds.
fn run_queue_wait() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().nth(1)?.parse().ok()
}

/// How long the calling thread has run on a CPU so far, to the nanosecond
/// (`CLOCK_THREAD_CPUTIME_ID`; schedstat's first field moves only at scheduler ticks, 4 ms
/// here).
fn cpu_time() -> Option<Duration> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec for the call's duration.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0).then(|| Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
}

/// The time one call took: on the wall clock; without the time its thread waited on a run
/// queue meanwhile (the scheduler's delay, which no lock controls: on 2 shared cores a
/// woken or preempted thread has waited 80 ms for a CPU); and the time it ran on a CPU
/// (what a call that spins shows, without its sleeps behind a preempted holder of an
/// internal latch, which are the run queue's delay passed on). Without `schedstat` or the
/// thread's CPU clock, the measure missing is the wall-clock time.
#[derive(Clone, Copy, Debug, Default)]
struct Took {
    own: Duration,
    cpu: Duration,
    wall: Duration,
}

impl Took {
    /// The larger of each.
    fn worse(self, other: Took) -> Took {
        Took {
            own: self.own.max(other.own),
            cpu: self.cpu.max(other.cpu),
            wall: self.wall.max(other.wall),
        }
    }
}

/// Runs `f` and says how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Took) {
    let window = Instant::now();
    let before = run_queue_wait();
    let ran_before = cpu_time();
    let start = Instant::now();
    let result = f();
    let wall = start.elapsed();
    let ran_after = cpu_time();
    let after = run_queue_wait();
    let window = window.elapsed();
    let own = match (before, after) {
        (Some(before), Some(after)) => {
            // Waits between the two reads that may lie outside `f` (the reads themselves)
            // are not subtracted.
            let queued = Duration::from_nanos(after - before).saturating_sub(window - wall);
            wall.saturating_sub(queued)
        }
        _ => wall,
    };
    let cpu = match (ran_before, ran_after) {
        (Some(before), Some(after)) => after.saturating_sub(before),
        _ => wall,
    };
    (result, Took { own, cpu, wall })
}

/// Contended `try_lock_for(.., 1 ms)` / `try_lock_shared_for` calls at 8 threads: none
/// gives up before its timeout, some do give up, and none returns 50 ms or more after its
/// deadline (acquired or not); on the wall clock if `wall_clock`, else without the time
/// the caller waited for a CPU.
fn timeout_overruns(wall_clock: bool) {
    const TIMEOUT: Duration = Duration::from_millis(1);
    const BOUND: Duration = Duration::from_millis(50);
    let _serial = serial();
    let geo = Geometry::tiny();
    let ranges = Ranges::new(&geo);
    let lock = geo.build();
    // Per thread: the worst overrun of a timed-out call and of an acquired one, timeouts,
    // acquisitions.
    let results = on_threads(8, 0x713E, |_, mut rng| {
        let (mut timed_out, mut acquired) = (Took::default(), Took::default());
        let (mut timeouts, mut acquisitions) = (0u64, 0u64);
        for _ in 0..200 {
            let (_, range) = ranges.next(&mut rng);
            let shared = rng.below(4) == 0;
            let (result, took) = timed(|| {
                if shared {
                    lock.try_lock_shared_for(range.clone(), TIMEOUT)
                } else {
                    lock.try_lock_for(range.clone(), TIMEOUT)
                }
            });
            let over = Took {
                own: took.own.saturating_sub(TIMEOUT),
                wall: took.wall.saturating_sub(TIMEOUT),
                ..took
            };
            match result {
                Ok(guard) => {
                    acquisitions += 1;
                    acquired = acquired.worse(over);
                    // Hold long enough that others time out.
                    spin_for(Duration::from_micros(rng.below(600)));
                    drop(guard);
                }
                Err(LockError::TimedOut) => {
                    assert!(took.wall >= TIMEOUT, "{range:?} gave up after {:?}", took.wall);
                    timeouts += 1;
                    timed_out = timed_out.worse(over);
                }
                Err(e) => panic!("{range:?}: {e}"),
            }
        }
        (timed_out, acquired, timeouts, acquisitions)
    });
    let timeouts: u64 = results.iter().map(|r| r.2).sum();
    let acquisitions: u64 = results.iter().map(|r| r.3).sum();
    let late_timeout = results.iter().fold(Took::default(), |w, r| w.worse(r.0));
    let late_acquired = results.iter().fold(Took::default(), |w, r| w.worse(r.1));
    eprintln!(
        "try_lock_for(1 ms) at 8 threads: {timeouts} timed out, worst overrun {:?} without run \
         queue waits ({:?} wall clock); {acquisitions} acquired, worst {:?} after the deadline \
         ({:?} wall clock){}",
        late_timeout.own,
        late_timeout.wall,
        late_acquired.own,
        late_acquired.wall,
        if run_queue_wait().is_some() { "" } else { "; no schedstat: all wall clock" }
    );
    assert!(
        timeouts > 0 && acquisitions > 0,
        "not contended: {timeouts} timeouts, {acquisitions} acquired"
    );
    let measure = |t: Took| if wall_clock { (t.wall, "wall clock") } else { (t.own, "own time") };
    let (late, how) = measure(late_timeout);
    assert!(late < BOUND, "a timed-out call returned {late:?} after its deadline ({how})");
    let (late, how) = measure(late_acquired);
    assert!(late < BOUND, "a call acquired {late:?} after its deadline ({how})");
}

#[test]
fn lock_timeout_overrun_is_bounded() {
    timeout_overruns(false);
}

#[test]
#[ignore = "wall clock: fails on a loaded 2-core machine (overruns up to 80 ms seen, all of \
            it the caller waiting on the run queue); see lock_timeout_overrun_is_bounded"]
fn lock_timeout_wall_clock_overrun_is_bounded() {
    timeout_overruns(true);
}

/// Contended `try_lock` calls at 8 threads: none takes 5 ms or more (on the wall clock if
/// `wall_clock`, else running on a CPU: a `try_lock` that spun would show here). Without
/// the wall clock, the time without run-queue waits is printed too: it also holds sleeps
/// behind a preempted holder of an internal latch and the hypervisor's steal (8 ms seen in
/// CI, 12 ms wall clock), which are the machine's, not the call's.
fn try_lock_times(wall_clock: bool) {
    const BOUND: Duration = Duration::from_millis(5);
    let _serial = serial();
    let geo = Geometry::tiny();
    let ranges = Ranges::new(&geo);
    let lock = geo.build();
    let results = on_threads(8, 0x7121, |_, mut rng| {
        let (mut worst, mut refused, mut acquired) = (Took::default(), 0u64, 0u64);
        for _ in 0..2000 {
            let (_, range) = ranges.next(&mut rng);
            let mode = if rng.below(3) == 0 { Mode::Shared } else { Mode::Exclusive };
            let (result, took) = timed(|| lock.try_lock_mode(range.clone(), mode));
            worst = worst.worse(took);
            match result {
                Ok(guard) => {
                    acquired += 1;
                    spin_for(Duration::from_micros(rng.below(20)));
                    drop(guard);
                }
                Err(LockError::WouldBlock) => refused += 1,
                Err(e) => panic!("{range:?}: {e}"),
            }
        }
        (worst, refused, acquired)
    });
    let own = results.iter().map(|r| r.0.own).max().unwrap_or_default();
    let cpu = results.iter().map(|r| r.0.cpu).max().unwrap_or_default();
    let wall = results.iter().map(|r| r.0.wall).max().unwrap_or_default();
    let refused: u64 = results.iter().map(|r| r.1).sum();
    let acquired: u64 = results.iter().map(|r| r.2).sum();
    eprintln!(
        "try_lock at 8 threads: {acquired} acquired, {refused} refused, worst {cpu:?} on a CPU, \
         {own:?} without run queue waits ({wall:?} wall clock){}",
        if run_queue_wait().is_some() { "" } else { "; no schedstat: all wall clock" }
    );
    assert!(refused > 0 && acquired > 0, "not contended: {refused} refused, {acquired} acquired");
    let (worst, how) = if wall_clock { (wall, "wall clock") } else { (cpu, "on a CPU") };
    assert!(worst < BOUND, "a try_lock took {worst:?} ({how})");
}

#[test]
fn try_lock_time_is_bounded() {
    try_lock_times(false);
}

#[test]
#[ignore = "wall clock: fails on a loaded 2-core machine (up to 68 ms seen, all of it the \
            caller preempted and waiting on the run queue); see try_lock_time_is_bounded"]
fn try_lock_wall_clock_time_is_bounded() {
    try_lock_times(true);
}

/// The long run: every geometry in turn, the mix and (where the geometry has a directory)
/// the directory phase, for `RANGELOCK_STRESS_SECS` seconds in all (default 600).
#[test]
#[ignore = "long run: RANGELOCK_STRESS_SECS (default 600)"]
fn ten_minute_stress() {
    let _serial = serial();
    let geometries = [
        Geometry::tiny(),
        Geometry::one_stripe_claims(),
        Geometry::overflow_only(),
        Geometry::narrow(),
        Geometry::default_windows(),
    ];
    let share = support::long_duration() / geometries.len() as u32;
    let mut seed = 0x10_4E57;
    let mut lines = Vec::new();
    for geo in &geometries {
        let phase_end = Instant::now() + share;
        let mut report = Report::default();
        let (mix_share, fill) =
            if geo.fill.is_empty() { (share, false) } else { (share * 3 / 4, true) };
        // Fresh locks now and then, so the directory fills in different orders and the
        // pools start over.
        let mix_end = Instant::now() + mix_share;
        while Instant::now() < mix_end {
            seed += 1;
            let until = (Instant::now() + Duration::from_secs(10)).min(mix_end);
            report.add(&mix(geo, 8, Budget::Until(until), seed));
        }
        if fill {
            report.add(&race_for_directory(geo, 8, Budget::Until(phase_end), 200, seed));
        }
        report.assert_every_kind(geo.name);
        let line = format!("{}: {}", geo.name, report.summary());
        eprintln!("{line}");
        lines.push(line);
    }
    println!("ops per geometry:");
    for line in lines {
        println!("  {line}");
    }
}
