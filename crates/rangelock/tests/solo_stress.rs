//! Stress of a lock's first holds (`skiplist::solo`): a fresh lock holds its first range as
//! a *solo* hold, with no core; the first hold that meets another builds the core, adopts
//! the solo hold into it and publishes it. Each round here races a few threads on a fresh
//! lock, so solo claims, releases and downgrades race with builds, adoptions and the
//! holds that follow on the core (stripe slots, claims, coarse claims, list nodes, reader
//! announcements). A thread sometimes takes a second range while it holds one (so a thread
//! meets its own solo hold) and sometimes downgrades. Every hold goes through
//! [`support::Checker`], which writes the holder's id over its cells and verifies them.
#![cfg(not(loom))]

mod support;

use std::ops::Range;
use std::sync::Barrier;
use std::thread;

use rangelock::internals::{Lock, SkipList};
use rangelock::{Mode, RangeLock};
use support::{acquire, pause, Call, Checker, Rng};

const THREADS: usize = 3;
/// Operations per thread per round: few, so most of a round is its first holds.
const OPS: u64 = 6;

/// One geometry: how to build the lock and the units where ranges start and end.
struct Geometry {
    name: &'static str,
    build: fn() -> Lock<SkipList>,
    bounds: Vec<u64>,
}

fn geometries() -> [Geometry; 2] {
    [
        Geometry {
            name: "tiny (16-unit stripes, 64-unit windows, 2 window tables)",
            build: || {
                Lock::from_raw(
                    RangeLock::builder().stripes(4, 4).windows(2).max_height(4).build_raw(),
                )
            },
            bounds: vec![0, 1, 8, 16, 17, 32, 48, 64, 100, 128, 256, 1024, 4096, u64::MAX],
        },
        Geometry {
            name: "default",
            build: || Lock::from_raw(SkipList::new()),
            bounds: vec![0, 1, 1024, 1 << 14, (1 << 14) + 1, 1 << 16, 1 << 20, 1 << 22, u64::MAX],
        },
    ]
}

/// A range between two different bounds.
fn range(rng: &mut Rng, bounds: &[u64]) -> Range<u64> {
    let n = bounds.len() as u64;
    let a = rng.below(n - 1) as usize;
    let b = a + 1 + rng.below(n - 1 - a as u64).min(2 + rng.below(n)) as usize;
    bounds[a]..bounds[b.min(bounds.len() - 1)]
}

fn mode(rng: &mut Rng) -> Mode {
    if rng.below(100) < 35 {
        Mode::Shared
    } else {
        Mode::Exclusive
    }
}

/// One thread's operations on a fresh lock.
fn run(lock: &Lock<SkipList>, checker: &Checker, bounds: &[u64], t: usize, rng: &mut Rng) {
    for _ in 0..OPS {
        let (r, m) = (range(rng, bounds), mode(rng));
        let call = Call::random(rng, 200);
        let Some(guard) = acquire(lock, r.clone(), m, call) else { continue };
        let held = checker.enter(t, r.clone(), m, call);
        pause(rng);
        if rng.below(3) == 0 {
            // A second hold while holding: only calls with a deadline (two blocking holds
            // could deadlock with any range lock).
            let (r2, m2) = (range(rng, bounds), mode(rng));
            let call2 = Call::random_bounded(rng, 200);
            if let Some(g2) = acquire(lock, r2.clone(), m2, call2) {
                let held2 = checker.enter(t, r2, m2, call2);
                checker.check(&held);
                pause(rng);
                checker.leave(t, held2);
                drop(g2);
            }
        }
        checker.check(&held);
        if m == Mode::Exclusive && rng.below(4) == 0 {
            checker.leave(t, held);
            let shared = guard.downgrade();
            let held = checker.enter(t, r, Mode::Shared, call);
            pause(rng);
            checker.leave(t, held);
            drop(shared);
        } else {
            checker.leave(t, held);
            drop(guard);
        }
    }
}

#[test]
fn first_holds_race_the_build_of_the_core() {
    let mut seeds = Rng::new(0x5010);
    for geo in geometries() {
        for _ in 0..300 {
            let lock = (geo.build)();
            let checker = Checker::new(geo.name, geo.bounds.iter().copied(), THREADS);
            let barrier = Barrier::new(THREADS);
            thread::scope(|s| {
                for t in 0..THREADS {
                    let mut rng = Rng::new(seeds.next_u64());
                    let (lock, checker, barrier, bounds) = (&lock, &checker, &barrier, &geo.bounds);
                    s.spawn(move || {
                        barrier.wait();
                        run(lock, checker, bounds, t, &mut rng);
                    });
                }
            });
            // Everything was released, the adopted holds included.
            let all = lock.try_lock(0..u64::MAX);
            assert!(all.is_ok(), "{}: a hold stayed after every guard was dropped", geo.name);
        }
    }
}

#[test]
fn a_thread_that_holds_alone_builds_nothing_until_it_holds_two() {
    let lock = RangeLock::new();
    for i in 0..1000u64 {
        let g = if i % 3 == 0 { lock.lock_shared(i..i + 7) } else { lock.lock(i..u64::MAX) };
        drop(g);
    }
    assert_eq!(lock.raw().allocated_nodes(), 0);
    let a = lock.lock(0..10);
    let b = lock.lock(10..20); // adjacent: both hold (and the core is built)
    assert!(lock.try_lock(9..11).is_err());
    drop((a, b));
    assert!(lock.try_lock(0..u64::MAX).is_ok());
}
