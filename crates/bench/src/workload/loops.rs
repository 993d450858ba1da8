//! The measured loops of the range-lock suites, generic over the [`RangeTarget`].

use core::hint::black_box;
use core::ops::Range;
use std::time::Duration;

use rangelock::Mode;

use super::{partition, RangeTarget, SharedRegion, RANGE_BYTES};
use crate::harness::{
    run_threads_with, Budget, LatencySampler, Sample, Span, SplitMix64, ThreadResult,
};

/// One operation in this many is timed for the latency percentiles.
pub const SAMPLE_EVERY: u32 = 16;

/// The W1/W2 layout: `ranges` ranges of [`RANGE_BYTES`] bytes each; range `i` is the lock
/// units `base + i * RANGE_BYTES ..` and the region bytes `i * RANGE_BYTES ..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Number of ranges.
    pub ranges: u64,
    /// First lock unit of range 0.
    pub base: u64,
}

impl Layout {
    /// The lock units of range `i`.
    #[inline]
    pub fn units(&self, i: u64) -> Range<u64> {
        let start = self.base + i * RANGE_BYTES;
        start..start + RANGE_BYTES
    }

    /// Region bytes needed.
    pub fn region_bytes(&self) -> usize {
        usize::try_from(self.ranges * RANGE_BYTES).expect("region fits in memory")
    }

    /// All ranges' lock units, highest first (the cheap insertion order for list locks).
    pub fn all_descending(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        (0..self.ranges).rev().map(|i| self.units(i))
    }
}

/// W1: each thread locks one of its ranges exclusively, memsets it, unlocks, and moves on to
/// the next of its shuffled ranges.
pub fn w1<T: RangeTarget>(
    target: &T,
    region: &SharedRegion,
    layout: Layout,
    threads: usize,
    span: Span,
) -> Sample {
    run_threads_with(
        threads,
        span,
        |index| (target.local(), partition(layout.ranges, threads, index)),
        |index, (mut local, queue), ctl| {
            let mut sampler = LatencySampler::new(SAMPLE_EVERY);
            let byte = index as u8 ^ 0x5a;
            let mut ops = 0;
            'run: while !queue.is_empty() {
                for &i in &queue {
                    if !ctl.running() {
                        break 'run;
                    }
                    let t = sampler.start();
                    let held = target.acquire(&mut local, layout.units(i), Mode::Exclusive);
                    // SAFETY: range `i` is held exclusively; its bytes are range `i`'s alone.
                    unsafe { region.write((i * RANGE_BYTES) as usize, RANGE_BYTES as usize, byte) };
                    target.release(&mut local, held);
                    sampler.finish(t);
                    ops += 1;
                }
            }
            ThreadResult { ops, latencies_ns: sampler.into_latencies() }
        },
    )
}

/// W2: each thread locks the next `batch` of its shuffled ranges exclusively, memsets them,
/// then unlocks them all. Counts ranges as operations; latencies are per batch.
pub fn w2<T: RangeTarget>(
    target: &T,
    region: &SharedRegion,
    layout: Layout,
    batch: usize,
    threads: usize,
    span: Span,
) -> Sample {
    run_threads_with(
        threads,
        span,
        |index| (target.local(), partition(layout.ranges, threads, index)),
        |index, (mut local, queue), ctl| {
            let mut sampler = LatencySampler::new(SAMPLE_EVERY);
            let byte = index as u8 ^ 0xa5;
            // A batch never repeats a range (that would wait on itself).
            let batch = batch.min(queue.len()).max(1);
            let mut held = Vec::with_capacity(batch);
            let (mut ops, mut pos) = (0, 0);
            while ctl.running() && !queue.is_empty() {
                let t = sampler.start();
                for _ in 0..batch {
                    let i = queue[pos];
                    pos = if pos + 1 == queue.len() { 0 } else { pos + 1 };
                    held.push((i, target.acquire(&mut local, layout.units(i), Mode::Exclusive)));
                }
                for (i, _) in &held {
                    // SAFETY: range `i` is held exclusively (just acquired, not yet released).
                    unsafe { region.write((i * RANGE_BYTES) as usize, RANGE_BYTES as usize, byte) };
                }
                for (_, h) in held.drain(..) {
                    target.release(&mut local, h);
                }
                sampler.finish(t);
                ops += batch as u64;
            }
            ThreadResult { ops, latencies_ns: sampler.into_latencies() }
        },
    )
}

/// The `contended` workload's shape: random ranges over a small domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contended {
    /// Domain size in units.
    pub domain: u64,
    /// Longest range in units (lengths are uniform in `1..=max_len`, clipped at the domain).
    pub max_len: u64,
    /// Region bytes per unit.
    pub unit_bytes: u64,
    /// Percentage of exclusive (writing) operations; the rest are shared (reading).
    pub exclusive_pct: u64,
}

/// Contended: each thread locks random, overlapping ranges, memsets them when exclusive and
/// reads them when shared.
pub fn contended<T: RangeTarget>(
    target: &T,
    region: &SharedRegion,
    shape: Contended,
    threads: usize,
    span: Span,
) -> Sample {
    run_threads_with(
        threads,
        span,
        |index| (target.local(), SplitMix64::new(0xc0ffee ^ index as u64)),
        |index, (mut local, mut rng), ctl| {
            let mut sampler = LatencySampler::new(SAMPLE_EVERY);
            let byte = index as u8 ^ 0x3c;
            let mut ops = 0;
            while ctl.running() {
                let start = rng.below(shape.domain);
                let end = (start + 1 + rng.below(shape.max_len)).min(shape.domain);
                let exclusive = rng.below(100) < shape.exclusive_pct;
                let (off, len) = (
                    (start * shape.unit_bytes) as usize,
                    ((end - start) * shape.unit_bytes) as usize,
                );
                let t = sampler.start();
                if exclusive {
                    let held = target.acquire(&mut local, start..end, Mode::Exclusive);
                    // SAFETY: the units `start..end` (these bytes) are held exclusively.
                    unsafe { region.write(off, len, byte) };
                    target.release(&mut local, held);
                } else {
                    let held = target.acquire(&mut local, start..end, Mode::Shared);
                    // SAFETY: the units are held shared: no writer overlaps them.
                    black_box(unsafe { region.read(off, len) });
                    target.release(&mut local, held);
                }
                sampler.finish(t);
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: sampler.into_latencies() }
        },
    )
}

/// Units between consecutive held ranges: one per [`RANGE_BYTES`], so locks with 1 KiB
/// granularity (segments) can hold them all, and kernel locks never merge them.
pub const HELD_STRIDE: u64 = RANGE_BYTES;

/// The `j`-th background range of [`held`]: `[j * HELD_STRIDE, j * HELD_STRIDE + 1)`.
#[inline]
pub fn held_range(j: u64) -> Range<u64> {
    j * HELD_STRIDE..j * HELD_STRIDE + 1
}

/// The first `total` held ranges, highest first.
pub fn held_ranges_descending(total: u64) -> impl Iterator<Item = Range<u64>> {
    (0..total).rev().map(held_range)
}

/// Held: a background holder keeps `per_thread * threads` one-unit ranges ([`held_range`],
/// below the W1 area, acquired highest first) while the threads run [`w1`]. Setting up and
/// tearing down the held ranges is not timed; a setup that takes more than `budget` of the
/// thread's CPU time (a lock whose insertions cost O(held); see [`Budget`]) is abandoned
/// and the sample marked [`Sample::skipped`], and one that outlasts the span's work budget
/// ([`Span::running`]) marked [`Sample::cut`].
pub fn held<T: RangeTarget>(
    target: &T,
    region: &SharedRegion,
    layout: Layout,
    per_thread: u64,
    threads: usize,
    span: Span,
    budget: Duration,
) -> Sample {
    let total = per_thread * threads as u64;
    assert!(total * HELD_STRIDE <= layout.base, "held ranges must stay below the W1 area");
    let mut bg = target.local();
    let mut kept = Vec::with_capacity(usize::try_from(total).expect("fits"));
    let spent = Budget::start(budget);
    for (n, range) in held_ranges_descending(total).enumerate() {
        let cut = n % 256 == 255 && !span.running();
        if cut || (n % 256 == 255 && spent.exceeded()) {
            for h in kept {
                target.release(&mut bg, h);
            }
            if cut {
                return Sample::cut(format!("took {n} of {total} background ranges"));
            }
            return Sample::skipped(format!(
                "holding {total} ranges took over {budget:?} of CPU time after {n} (setup cost \
                 grows with the held count)"
            ));
        }
        kept.push(target.acquire(&mut bg, range, Mode::Exclusive));
    }
    let sample = w1(target, region, layout, threads, span);
    for h in kept {
        target.release(&mut bg, h);
    }
    sample
}

/// Width of the wide exclusive background range (and the alignment of [`Background::at`]):
/// 64 Mi units, thousands of the lock's 16 Ki-unit stripes.
pub const BACKGROUND_WIDE: u64 = 1 << 26;
/// Length of the shared background range: 1 Ki units.
pub const BACKGROUND_SHARED: u64 = 1 << 10;
/// Units a [`Background`] spans from its start: the shared range in the first
/// [`BACKGROUND_WIDE`] units, the wide exclusive one in the next.
pub const BACKGROUND_UNITS: u64 = 2 * BACKGROUND_WIDE;

/// The `background = reader+wide` holders of `held` and `mixed`: one long-lived shared range
/// and one wide exclusive range, both away from every range the measured threads touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Background {
    /// Held shared: `start .. start + BACKGROUND_SHARED`.
    pub shared: Range<u64>,
    /// Held exclusively: `start + BACKGROUND_WIDE .. start + 2 * BACKGROUND_WIDE`.
    pub wide: Range<u64>,
}

impl Background {
    /// The `background` parameter of a case with these holders.
    pub const NAME: &'static str = "reader+wide";
    /// The `background` parameter of a case without.
    pub const NONE: &'static str = "none";

    /// The holders placed at `start` (rounded up to a multiple of [`BACKGROUND_WIDE`]); they
    /// span [`BACKGROUND_UNITS`] units from there.
    pub fn at(start: u64) -> Self {
        let start = start.next_multiple_of(BACKGROUND_WIDE);
        Background {
            shared: start..start + BACKGROUND_SHARED,
            wide: start + BACKGROUND_WIDE..start + 2 * BACKGROUND_WIDE,
        }
    }

    /// First unit of the holders.
    pub fn start(&self) -> u64 {
        self.shared.start
    }

    /// The ranges, highest first (for [`holds_disjoint`](super::holds_disjoint)).
    pub fn ranges_descending(&self) -> [Range<u64>; 2] {
        [self.wide.clone(), self.shared.clone()]
    }
}

/// Runs `measure` while a background thread holds `background`'s shared and wide exclusive
/// ranges (acquired before, released after; both untimed); just `measure` for `None`.
///
/// The ranges must not overlap anything `measure` locks, or it waits forever.
pub fn with_background<T: RangeTarget, R>(
    target: &T,
    background: Option<&Background>,
    measure: impl FnOnce() -> R,
) -> R {
    let Some(bg) = background else { return measure() };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut local = target.local();
            let shared = target.acquire(&mut local, bg.shared.clone(), Mode::Shared);
            let wide = target.acquire(&mut local, bg.wide.clone(), Mode::Exclusive);
            let _ = ready_tx.send(());
            // Until the measurement ends: `stop_tx` is dropped then (or while unwinding).
            let _ = stop_rx.recv();
            target.release(&mut local, wide);
            target.release(&mut local, shared);
        });
        // An error here means the holder panicked; the scope re-raises its panic.
        if ready_rx.recv().is_err() {
            return None;
        }
        let out = measure();
        drop(stop_tx);
        Some(out)
    })
    .expect("the background holder panicked")
}

/// The `mixed` workload's shape: ranges of log-uniform length at uniform positions of a huge
/// domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mixed {
    /// Ranges lie in `[0, span)`.
    pub span: u64,
    /// Lengths are log-uniform in `[1, 2^len_log2)`: an octave `2^b`, `b` uniform in
    /// `0..len_log2`, then a length uniform in `[2^b, 2^(b+1))`.
    pub len_log2: u32,
    /// Percentage of exclusive operations; the rest are shared.
    pub exclusive_pct: u64,
}

/// Bytes of the per-thread buffer `mixed`'s critical section touches: four cache lines.
pub const MIXED_BUFFER_BYTES: usize = 256;

/// Mixed: each thread locks a random range (log-uniform length, uniform position in
/// `[0, span)`) in exclusive mode with probability `exclusive_pct` %, shared otherwise, and
/// in its critical section writes (exclusive) or reads (shared) its own
/// [`MIXED_BUFFER_BYTES`]-byte buffer: the domain is far too large to back with memory, so
/// the lock guards nothing shared here and the section is a fixed, small amount of work.
pub fn mixed<T: RangeTarget>(target: &T, shape: Mixed, threads: usize, span: Span) -> Sample {
    assert!(shape.len_log2 < 63 && shape.span > 1 << shape.len_log2, "ranges fit in the span");
    run_threads_with(
        threads,
        span,
        |index| (target.local(), SplitMix64::new(0x0d15_ea5e ^ index as u64)),
        |index, (mut local, mut rng), ctl| {
            let mut sampler = LatencySampler::new(SAMPLE_EVERY);
            let mut buf = [0u8; MIXED_BUFFER_BYTES];
            let mut byte = index as u8;
            let mut ops = 0;
            while ctl.running() {
                let octave = rng.below(u64::from(shape.len_log2));
                let len = (1 << octave) + rng.below(1 << octave);
                let start = rng.below(shape.span - len + 1);
                let exclusive = rng.below(100) < shape.exclusive_pct;
                let t = sampler.start();
                if exclusive {
                    let held = target.acquire(&mut local, start..start + len, Mode::Exclusive);
                    byte = byte.wrapping_add(1);
                    buf.fill(byte);
                    black_box(&mut buf);
                    target.release(&mut local, held);
                } else {
                    let held = target.acquire(&mut local, start..start + len, Mode::Shared);
                    black_box(black_box(&buf).iter().map(|&b| u64::from(b)).sum::<u64>());
                    target.release(&mut local, held);
                }
                sampler.finish(t);
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: sampler.into_latencies() }
        },
    )
}
