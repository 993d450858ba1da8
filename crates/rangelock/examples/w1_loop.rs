//! A single-thread W1-shaped loop (lock a 1 KiB range, unlock) on `RangeLock` or a
//! variant, for profiling with `valgrind --tool=callgrind` (instruction counts are
//! repeatable) and for quick timing.
//!
//! `cargo run --release -p rangelock --example w1_loop -- [ops] [held] [variant] [threads]`:
//! `held` one-unit ranges stay locked below the loop's ranges (as in the `held` suite);
//! `variant` is `rangelock` (default), `kogan-list` or `kernel-tree`; with `threads` > 1 each
//! thread runs `ops` operations on its own contiguous share of the ranges (as W1 partitions
//! them) and the line reports the total throughput.

use std::hint::black_box;
use std::time::Instant;

use rangelock::variants::{KernelTree, KoganList};
use rangelock::{Lock, RangeLock, RawRangeLock};

/// `ops` lock+unlock pairs over the 16384 ranges of share `share`, starting at `base`.
fn w1<R: RawRangeLock>(lock: &Lock<R>, ops: u64, base: u64, share: u64) {
    let base = base + share * (16384 * 1024);
    for i in 0..ops {
        // A cheap permutation of 16384 ranges (odd multiplier mod 2^14).
        let r = ((i & 16383).wrapping_mul(40503)) & 16383;
        let start = base + r * 1024;
        let g = lock.lock(start..start + 1024).unwrap();
        black_box(&g);
        drop(g);
    }
}

fn run<R: RawRangeLock>(lock: &Lock<R>, ops: u64, held: u64, threads: u64) {
    let kept: Vec<_> =
        (0..held).rev().map(|j| lock.lock(j * 1024..j * 1024 + 1).unwrap()).collect();
    let base = (held * 1024).next_power_of_two().max(1 << 20);
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 1..threads {
            s.spawn(move || w1(lock, ops, base, t));
        }
        w1(lock, ops, base, 0);
    });
    let ns = started.elapsed().as_nanos() as f64 / (ops * threads) as f64;
    drop(kept);
    println!(
        "{}: {threads} x {ops} ops with {held} held, {ns:.1} ns/op, {:.2}M ops/s",
        R::NAME,
        1e3 / ns
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: u64 = args.next().map_or(200_000, |a| a.parse().expect("ops: a number"));
    let held: u64 = args.next().map_or(0, |a| a.parse().expect("held: a number"));
    let variant = args.next();
    let threads: u64 = args.next().map_or(1, |a| a.parse().expect("threads: a number"));
    match variant.as_deref().unwrap_or("rangelock") {
        "rangelock" => run(&RangeLock::new(), ops, held, threads),
        "kogan-list" => run(&Lock::from_raw(KoganList::new()), ops, held, threads),
        "kernel-tree" => run(&Lock::from_raw(KernelTree::new()), ops, held, threads),
        other => panic!("unknown variant {other}"),
    }
}
