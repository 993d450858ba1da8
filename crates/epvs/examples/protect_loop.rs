//! Single-thread loops over one protection per operation, for profiling with
//! `valgrind --tool=callgrind` (instruction counts are repeatable) and for quick timing.
//!
//! `cargo run --release -p epvs --example protect_loop -- <case> [ops]`, where `case` is
//! - `epvs`: `Epvs::enter` + leave (asymmetric epoch, the default);
//! - `epvs-fenced`: the same on a fenced epoch;
//! - `lightepoch-asym` / `lightepoch-fenced`: `LightEpoch::protect` + drop;
//! - `epvs-refresh`: `EpvsGuard::refresh` of a held guard;
//! - `instances-K`: `Epvs::enter` + leave over K instances in random order (one region at
//!   a time), as a sharded store enters the shard of a random key;
//! - `change` / `change-fenced`: `Epvs::enter` + leave, then a version change with an empty
//!   critical section (`epvs-freq` at p = 1, one thread), on the default or a fenced epoch;
//! - `array` / `array-none`: the `epvs-array` 0 %-push mix (random read or write of a
//!   1 Mi-element array) through `ResizableArray`, or on plain atomics with no protection;
//! - `array-asym` / `array-fenced` / `array-epvs`: the plain-atomics mix, each operation
//!   inside a `LightEpoch` protection (either mode) or an `Epvs` region: what the
//!   protection alone costs the array.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use epvs::array::ResizableArray;
use epvs::epoch::LightEpoch;
use epvs::version::Epvs;

/// The array length of the `array` cases (the suite's "1 million elements").
const ARRAY_LEN: usize = 1 << 20;

/// SplitMix64, as the bench harness uses.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A random index below `len` and a coin (read or write).
    fn pick(&mut self, len: usize) -> (usize, bool, u64) {
        let r = self.next_u64();
        ((((r >> 32) * len as u64) >> 32) as usize, r & 1 == 0, r)
    }
}

// Each loop is its own function, kept out of `main`, so that the codegen of one case does
// not depend on the others.

#[inline(never)]
fn epvs_loop(ops: u64, e: &Epvs) -> u64 {
    (0..ops).map(|_| black_box(e.enter().version())).sum()
}

#[inline(never)]
fn lightepoch_loop(ops: u64, e: &LightEpoch) -> u64 {
    (0..ops).map(|_| black_box(e.protect().epoch())).sum()
}

#[inline(never)]
fn refresh_loop(ops: u64, e: &Epvs) -> u64 {
    let mut g = e.enter();
    (0..ops).map(|_| black_box(g.refresh()).version()).sum()
}

#[inline(never)]
fn instances_loop(ops: u64, es: &[Epvs]) -> u64 {
    let mut rng = Rng(1);
    (0..ops).map(|_| black_box(es[rng.pick(es.len()).0].enter().version())).sum()
}

#[inline(never)]
fn change_loop(ops: u64, e: &Epvs) -> u64 {
    let mut sum = 0;
    for _ in 0..ops {
        sum += black_box(e.enter().version());
        // Alone, nothing else is installed: every change is accepted.
        let _ = black_box(e.advance_version(|| {}, None));
    }
    sum
}

#[inline(never)]
fn array_loop(ops: u64) -> u64 {
    let a = ResizableArray::with_capacity(ARRAY_LEN);
    {
        let mut g = a.enter();
        for _ in 0..ARRAY_LEN {
            a.push_with(&mut g, 0);
        }
    }
    let (mut rng, mut sum) = (Rng(1), 0u64);
    for _ in 0..ops {
        let (i, read, r) = rng.pick(ARRAY_LEN);
        if read {
            sum = sum.wrapping_add(a.read(i).unwrap_or(0));
        } else {
            let _ = a.write(i, r);
        }
    }
    sum
}

/// The mix on plain atomics, each operation inside whatever `protect` returns.
#[inline(always)]
fn atomics_loop<G>(ops: u64, mut protect: impl FnMut() -> G) -> u64 {
    let a: Vec<AtomicU64> = (0..ARRAY_LEN).map(|_| AtomicU64::new(0)).collect();
    let (mut rng, mut sum) = (Rng(1), 0u64);
    for _ in 0..ops {
        let (i, read, r) = rng.pick(ARRAY_LEN);
        let _protection = protect();
        if read {
            sum = sum.wrapping_add(a[i].load(Relaxed));
        } else {
            a[i].store(r, Relaxed);
        }
    }
    sum
}

#[inline(never)]
fn array_none_loop(ops: u64) -> u64 {
    atomics_loop(ops, || ())
}

#[inline(never)]
fn array_epoch_loop(ops: u64, e: &LightEpoch) -> u64 {
    atomics_loop(ops, || e.protect())
}

#[inline(never)]
fn array_epvs_loop(ops: u64, e: &Epvs) -> u64 {
    atomics_loop(ops, || e.enter())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "epvs".to_owned());
    let ops: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
    let started = Instant::now();
    let sum = match case.as_str() {
        "epvs" => epvs_loop(ops, &Epvs::new()),
        "epvs-fenced" => epvs_loop(ops, &Epvs::with_epoch(LightEpoch::new())),
        "lightepoch-asym" => lightepoch_loop(ops, &LightEpoch::asymmetric()),
        "lightepoch-fenced" => lightepoch_loop(ops, &LightEpoch::new()),
        "epvs-refresh" => refresh_loop(ops, &Epvs::new()),
        "change" => change_loop(ops, &Epvs::new()),
        "change-fenced" => change_loop(ops, &Epvs::with_epoch(LightEpoch::new())),
        "array" => array_loop(ops),
        "array-none" => array_none_loop(ops),
        "array-asym" => array_epoch_loop(ops, &LightEpoch::asymmetric()),
        "array-fenced" => array_epoch_loop(ops, &LightEpoch::new()),
        "array-epvs" => array_epvs_loop(ops, &Epvs::new()),
        other if other.starts_with("instances-") => {
            let k: usize = other["instances-".len()..].parse().expect("instances-K: K a number");
            let es: Vec<Epvs> = (0..k).map(|_| Epvs::new()).collect();
            instances_loop(ops, &es)
        }
        other => {
            eprintln!("unknown case {other:?}; see the example's docs");
            std::process::exit(2);
        }
    };
    let ns = started.elapsed().as_nanos() as f64 / ops as f64;
    println!("{case}: {ops} ops, {ns:.2} ns/op (checksum {sum})");
}
