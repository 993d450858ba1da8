//! A single-thread W1-shaped loop (lock a 1 KiB range, unlock) on `RangeLock` or a
//! variant, for profiling with `valgrind --tool=callgrind` (instruction counts are
//! repeatable) and for quick timing.
//!
//! `cargo run --release -p rangelock --example w1_loop -- [ops] [held] [variant]`: `held`
//! one-unit ranges stay locked below the loop's ranges (as in the `held` suite); `variant` is
//! `rangelock` (default), `kogan-list` or `kernel-tree`.

use std::hint::black_box;
use std::time::Instant;

use rangelock::variants::{KernelTree, KoganList};
use rangelock::{Lock, RangeLock, RawRangeLock};

fn run<R: RawRangeLock>(lock: &Lock<R>, ops: u64, held: u64) {
    let kept: Vec<_> =
        (0..held).rev().map(|j| lock.lock(j * 1024..j * 1024 + 1).unwrap()).collect();
    let base = (held * 1024).next_power_of_two().max(1 << 20);
    let started = Instant::now();
    for i in 0..ops {
        // A cheap permutation of 16384 ranges (odd multiplier mod 2^14).
        let r = ((i & 16383).wrapping_mul(40503)) & 16383;
        let start = base + r * 1024;
        let g = lock.lock(start..start + 1024).unwrap();
        black_box(&g);
        drop(g);
    }
    let ns = started.elapsed().as_nanos() as f64 / ops as f64;
    drop(kept);
    println!("{}: {ops} ops with {held} held, {ns:.1} ns/op", R::NAME);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: u64 = args.next().map_or(200_000, |a| a.parse().expect("ops: a number"));
    let held: u64 = args.next().map_or(0, |a| a.parse().expect("held: a number"));
    match args.next().as_deref().unwrap_or("rangelock") {
        "rangelock" => run(&RangeLock::new(), ops, held),
        "kogan-list" => run(&Lock::from_raw(KoganList::new()), ops, held),
        "kernel-tree" => run(&Lock::from_raw(KernelTree::new()), ops, held),
        other => panic!("unknown variant {other}"),
    }
}
