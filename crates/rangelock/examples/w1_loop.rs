//! A single-thread W1-shaped loop (lock a 1 KiB range, unlock) on `RangeLock` or a
//! variant, for profiling with `valgrind --tool=callgrind` (instruction counts are
//! repeatable) and for quick timing.
//!
//! `cargo run --release -p rangelock --example w1_loop -- [ops] [held] [variant] [threads]`:
//! `held` one-unit ranges stay locked below the loop's ranges (as in the `held` suite);
//! `variant` is `rangelock` (default), `rangelock-list` (no stripe table), `kogan-list`,
//! `kernel-tree`, `segments` (1 KiB segments over 2^32 units, as in the bench), or
//! `separate-list` (each thread on a `rangelock-list` of its own: what sharing one skip
//! list costs); with `threads` > 1 each thread runs `ops` operations on its own contiguous
//! share of the ranges (as W1 partitions them) and the line reports the total throughput.
//! With `RANGELOCK_W1_MEMSET=1` each operation also writes its range's 1 KiB of a 16 MiB
//! buffer per thread while holding it, as the `w1` suite does (the lock's lines then
//! compete with the memset for the caches). With `RANGELOCK_W1_SHARED=1` the loop locks
//! its ranges shared (the cost of a shared hold); `variant` `none` runs the loop with no
//! lock at all (the ceiling).

#[path = "common/no_lock.rs"]
mod no_lock;

use no_lock::NoLock;

use std::hint::black_box;
use std::time::Instant;

use rangelock::internals::{Guard, Lock, RawRangeLock, SkipList};
use rangelock::{LockError, RangeLock};
use rangelock_baselines::{KernelTree, KoganList, Segments};

/// `ops` lock+unlock pairs over the 16384 ranges of share `share`, starting at `base`
/// (exclusive, or shared with `RANGELOCK_W1_SHARED`).
fn w1<R: RawRangeLock>(lock: &Lock<R>, ops: u64, base: u64, share: u64) {
    if std::env::var_os("RANGELOCK_W1_SHARED").is_some() {
        w1_with(lock, ops, base, share, |range| lock.lock_shared(range));
    } else {
        w1_with(lock, ops, base, share, |range| lock.lock(range));
    }
}

/// The loop of [`w1`], acquiring each range with `acquire`.
fn w1_with<'a, R: RawRangeLock>(
    _lock: &'a Lock<R>,
    ops: u64,
    base: u64,
    share: u64,
    acquire: impl Fn(std::ops::Range<u64>) -> Result<Guard<'a, R>, LockError>,
) {
    let base = base + share * (16384 * 1024);
    let mut buffer = std::env::var_os("RANGELOCK_W1_MEMSET").map(|_| vec![0u8; 16384 * 1024]);
    for i in 0..ops {
        // A cheap permutation of 16384 ranges (odd multiplier mod 2^14).
        let r = ((i & 16383).wrapping_mul(40503)) & 16383;
        let start = base + r * 1024;
        let g = acquire(start..start + 1024).unwrap();
        if let Some(buffer) = buffer.as_mut() {
            let at = r as usize * 1024;
            buffer[at..at + 1024].fill(i as u8);
            black_box(&buffer[at]);
        }
        black_box(&g);
        drop(g);
    }
}

/// Runs `ops` W1 operations on each of `threads` threads, thread `t` on share `t` of the
/// lock `lock_of(t)` returns, with `held` ranges held in `lock_of(0)` below the loop's ranges.
fn run<'a, R: RawRangeLock + 'a>(
    name: &str,
    lock_of: impl Fn(u64) -> &'a Lock<R> + Sync,
    ops: u64,
    held: u64,
    threads: u64,
) {
    let kept: Vec<_> = (0..held).rev().map(|j| lock_of(0).lock(j * 1024..j * 1024 + 1)).collect();
    let base = (held * 1024).next_power_of_two().max(1 << 20);
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 1..threads {
            let lock_of = &lock_of;
            s.spawn(move || w1(lock_of(t), ops, base, t));
        }
        w1(lock_of(0), ops, base, 0);
    });
    let ns = started.elapsed().as_nanos() as f64 / (ops * threads) as f64;
    drop(kept);
    println!(
        "{name}: {threads} x {ops} ops with {held} held, {ns:.1} ns/op, {:.2}M ops/s",
        1e3 / ns
    );
}

/// [`run`] with every thread on `lock`.
fn shared<R: RawRangeLock>(lock: &Lock<R>, ops: u64, held: u64, threads: u64) {
    run(R::NAME, |_| lock, ops, held, threads);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: u64 = args.next().map_or(200_000, |a| a.parse().expect("ops: a number"));
    let held: u64 = args.next().map_or(0, |a| a.parse().expect("held: a number"));
    let variant = args.next();
    let threads: u64 = args.next().map_or(1, |a| a.parse().expect("threads: a number"));
    match variant.as_deref().unwrap_or("rangelock") {
        // The product's core under the same generic wrapper as the others.
        "rangelock" => shared(&Lock::from_raw(SkipList::new()), ops, held, threads),
        "rangelock-list" => {
            let lock = Lock::from_raw(RangeLock::builder().stripes(0, 0).build_raw());
            run("rangelock-list", |_| &lock, ops, held, threads);
        }
        "separate-list" => {
            let locks: Vec<_> = (0..threads)
                .map(|_| Lock::from_raw(RangeLock::builder().stripes(0, 0).build_raw()))
                .collect();
            run("separate-list", |t| &locks[t as usize], ops, held, threads);
        }
        "kogan-list" => shared(&Lock::from_raw(KoganList::new()), ops, held, threads),
        "kernel-tree" => shared(&Lock::from_raw(KernelTree::new()), ops, held, threads),
        "segments" => shared(&Lock::from_raw(Segments::new(1 << 32, 1024)), ops, held, threads),
        "none" => shared(&Lock::from_raw(NoLock), ops, held, threads),
        other => panic!("unknown variant {other}"),
    }
}
