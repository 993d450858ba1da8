//! The `mixed` bench suite's loop without the harness, for profiling with
//! `valgrind --tool=callgrind` and for timing one octave of range lengths at a time.
//!
//! `cargo run --release -p rangelock --example mixed_loop -- [ops] [variant] [threads]
//! [exclusive_pct] [octaves]`: each operation locks a range of log-uniform length (octave
//! `b` uniform in `octaves`, default `0..20`, then a length in `2^b..2^(b+1)`) at a uniform
//! position of a 2^40-unit domain, exclusively with probability `exclusive_pct` % (default
//! 20), writes (exclusive) or reads (shared) 256 bytes of a per-thread buffer, and unlocks.
//! `variant`: `rangelock` (default), `separate` (each thread on a `rangelock` of its own:
//! what sharing one lock costs), `rangelock-list`, `kernel-tree`, `segments` (the
//! suite's `segments-256Ki`: 2^22 segments of 256 Ki units), `none` (no lock: the loop
//! alone), `floor` (no lock, but one atomic RMW per acquisition and a store per release, on
//! a word of the thread's own: the suite's `rmw-floor`, the least any lock pays),
//! `floor2` (an RMW each way, as a reader count others may join pays) or `shared-floor`
//! (`floor`'s RMW and store on the slot of the range's first stripe in one table all threads
//! share, `RANGELOCK_FLOOR_SLOTS` slots, 2048 by default: the suite's `shared-floor`, the
//! least a lock whose threads meet in a table pays) or `claim-floor` (every RMW, store and
//! load of `rangelock`'s stripe protocol on tables of its default geometry, and none of its
//! decisions: the suite's `claim-floor`, the least that protocol pays) or `announce-floor`
//! (`claim-floor` for writers, with readers that announce on a line of their own thread and
//! load their stripes' slots: the suite's `announce-floor`, the least a protocol whose
//! readers write no shared line pays).
//! `RANGELOCK_CLAIM_STRIPES=n` sets `rangelock`'s `claim_stripes`,
//! `RANGELOCK_NO_COARSE=1` turns its coarse claims off. `octaves` is `lo..hi` (e.g. `14..20` for the ranges that span stripes).
//!
//! `RANGELOCK_MIXED_OWN_SLOTS=1` (ranges inside one stripe only: octaves up to `0..14`)
//! moves each range to a stripe whose slot in the default stripe table lies in its thread's
//! share of the table (thread `t` of `n`: slots `t * 2048 / n ..`), still at a random
//! window, so no two threads ever write one slot line: what is left of the shared lock's
//! cost over `separate` is then not the slot lines (`rangelock-bench`'s `suites::mixed`,
//! "At 2 threads: the lines both cores write").

#[path = "common/floor.rs"]
mod floor;
#[path = "common/no_lock.rs"]
mod no_lock;
#[path = "common/rng.rs"]
mod rng;

use floor::{AnnounceFloor, AsLock, ClaimFloor, Floor, SharedFloor};
use no_lock::NoLock;
use rng::Rng;

use std::hint::black_box;
use std::ops::Range;
use std::time::Instant;

use rangelock::internals::{Lock, RawRangeLock, SkipList};
use rangelock::{Mode, RangeLock};
use rangelock_baselines::{KernelTree, Segments};

/// The loop's parameters.
#[derive(Clone)]
struct Shape {
    ops: u64,
    exclusive_pct: u64,
    octaves: Range<u64>,
    /// `Some(threads)`: each thread's ranges use its own share of the stripe table's slots.
    own_slots: Option<u64>,
}

/// `shape.ops` operations of thread `index` on `lock`.
fn run_thread<R: RawRangeLock>(lock: &Lock<R>, shape: &Shape, index: u64) {
    const SPAN: u64 = 1 << 40;
    let mut rng = Rng(0x0d15_ea5e ^ index);
    let mut buf = [0u8; 256];
    let mut byte = index as u8;
    let width = shape.octaves.end - shape.octaves.start;
    for _ in 0..shape.ops {
        let octave = shape.octaves.start + rng.below(width);
        let len = (1 << octave) + rng.below(1 << octave);
        let mut start = rng.below(SPAN - len + 1);
        if let Some(threads) = shape.own_slots {
            start = in_own_slots(start, index, threads);
        }
        let mode =
            if rng.below(100) < shape.exclusive_pct { Mode::Exclusive } else { Mode::Shared };
        let g = lock.lock_mode(start..start + len, mode);
        if mode == Mode::Exclusive {
            byte = byte.wrapping_add(1);
            buf.fill(byte);
            black_box(&mut buf);
        } else {
            black_box(black_box(&buf).iter().map(|&b| u64::from(b)).sum::<u64>());
        }
        drop(g);
    }
}

/// `start` moved to the stripe of the same window and offset whose slot (stripe modulo the
/// default table) lies in thread `index`'s share of the table (`RANGELOCK_MIXED_OWN_SLOTS`).
fn in_own_slots(start: u64, index: u64, threads: u64) -> u64 {
    let (shift, slots) = (
        rangelock::internals::DEFAULT_STRIPE_SHIFT,
        rangelock::internals::DEFAULT_STRIPE_SLOTS as u64,
    );
    let share = slots / threads;
    let stripe = start >> shift;
    let slot = index * share + (stripe % slots) % share;
    (((stripe - stripe % slots) + slot) << shift) | (start & ((1 << shift) - 1))
}

/// Runs the loop on `threads` threads sharing `lock` and prints ns/op.
fn run<R: RawRangeLock>(name: &str, lock: &Lock<R>, shape: &Shape, threads: u64) {
    run_each(name, |_| lock, shape, threads);
}

/// Runs the loop on `threads` threads, thread `t` on `lock_of(t)`, and prints ns/op.
fn run_each<'a, R: RawRangeLock + 'a>(
    name: &str,
    lock_of: impl Fn(u64) -> &'a Lock<R> + Sync,
    shape: &Shape,
    threads: u64,
) {
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 1..threads {
            let lock_of = &lock_of;
            s.spawn(move || run_thread(lock_of(t), shape, t));
        }
        run_thread(lock_of(0), shape, 0);
    });
    let ns = started.elapsed().as_nanos() as f64 / (shape.ops * threads) as f64;
    println!(
        "{name}: {threads} x {} ops, {}% exclusive, octaves {:?}: {ns:.1} ns/op, {:.2}M ops/s",
        shape.ops,
        shape.exclusive_pct,
        shape.octaves,
        1e3 / ns
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: u64 = args.next().map_or(1_000_000, |a| a.parse().expect("ops: a number"));
    let variant = args.next().unwrap_or_else(|| "rangelock".into());
    let threads: u64 = args.next().map_or(1, |a| a.parse().expect("threads: a number"));
    let exclusive_pct: u64 = args.next().map_or(20, |a| a.parse().expect("pct: a number"));
    let octaves = args.next().map_or(0..20, |a| {
        let (lo, hi) = a.split_once("..").expect("octaves: lo..hi");
        lo.parse().expect("octaves: lo")..hi.parse().expect("octaves: hi")
    });
    assert!(octaves.start < octaves.end && octaves.end <= 30, "octaves: a non-empty lo..hi");
    let own_slots = std::env::var_os("RANGELOCK_MIXED_OWN_SLOTS").map(|_| threads);
    assert!(
        own_slots.is_none() || octaves.end <= u64::from(rangelock::internals::DEFAULT_STRIPE_SHIFT),
        "RANGELOCK_MIXED_OWN_SLOTS: ranges inside one stripe only (octaves up to 0..{})",
        rangelock::internals::DEFAULT_STRIPE_SHIFT
    );
    let shape = Shape { ops, exclusive_pct, octaves, own_slots };
    match variant.as_str() {
        "rangelock" => {
            let claim = std::env::var("RANGELOCK_CLAIM_STRIPES").ok();
            let claim =
                claim.map_or(rangelock::internals::DEFAULT_CLAIM_STRIPES, |c| c.parse().unwrap());
            let coarse = std::env::var_os("RANGELOCK_NO_COARSE").is_none();
            let lock = RangeLock::builder().claim_stripes(claim).coarse_claims(coarse).build_raw();
            run("rangelock", &Lock::from_raw(lock), &shape, threads)
        }
        "rangelock-list" => {
            let lock = Lock::from_raw(RangeLock::builder().stripes(0, 0).build_raw());
            run("rangelock-list", &lock, &shape, threads)
        }
        "separate" => {
            let locks: Vec<_> = (0..threads).map(|_| Lock::from_raw(SkipList::new())).collect();
            run_each("separate", |t| &locks[t as usize], &shape, threads)
        }
        "kernel-tree" => run("kernel-tree", &Lock::from_raw(KernelTree::new()), &shape, threads),
        "segments" => {
            let lock = Lock::from_raw(Segments::new(1 << 40, 1 << 18));
            run("segments-256Ki", &lock, &shape, threads)
        }
        "none" => run("none", &Lock::from_raw(NoLock), &shape, threads),
        "floor" => run("floor", &Lock::from_raw(AsLock(Floor::<1>)), &shape, threads),
        "floor2" => run("floor2", &Lock::from_raw(AsLock(Floor::<2>)), &shape, threads),
        "shared-floor" => {
            let slots = std::env::var("RANGELOCK_FLOOR_SLOTS").ok();
            let slots =
                slots.map_or(rangelock::internals::DEFAULT_STRIPE_SLOTS, |s| s.parse().unwrap());
            run(
                "shared-floor",
                &Lock::from_raw(AsLock(SharedFloor::with_slots(slots))),
                &shape,
                threads,
            )
        }
        "claim-floor" => {
            run("claim-floor", &Lock::from_raw(AsLock(ClaimFloor::new())), &shape, threads)
        }
        "announce-floor" => {
            run("announce-floor", &Lock::from_raw(AsLock(AnnounceFloor::new())), &shape, threads)
        }
        other => panic!("unknown variant {other}"),
    }
}
