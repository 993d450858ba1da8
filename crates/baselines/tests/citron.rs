//! The `citron-like` peer under the exclusivity checker: threads lock random ranges, of
//! every size from some bits of a leaf to whole internal nodes, shared or exclusive;
//! exclusive holders write their id over their range and verify it after, shared holders
//! count themselves in and check that no writer is inside. Violations are counted, not
//! asserted inside the critical section, so a broken lock fails the test instead of
//! leaving other threads waiting on a range a panicked thread held.
//!
//! `citron-redis` (the same tree with its words in Redis, tickets taken in one atomic
//! batch) runs under the same checker against a private `redis-server`.
//!
//! The negative controls run the same checker on the deliberately broken protocols
//! (`Fault`): without "notify ancestors" and without the leaf bitmaps it must count
//! violations, or the checker could not fail.

/// The exclusivity checker of `crates/bench/tests` (the server suites' tests use it too).
#[path = "../../bench/tests/exclusivity/mod.rs"]
mod exclusivity;
/// The checkers of `crates/rangelock/tests`, for their generator.
#[path = "../../rangelock/tests/support/mod.rs"]
mod support;

use exclusivity::Checker;

use rangelock::Mode;
use rangelock_baselines::peers::citron_redis::CitronRedis;
use rangelock_baselines::peers::citron_shm::{CitronClient, CitronLayout, Fault, ShmWords};
use rangelock_baselines::peers::redis::RedisServer;

/// Runs `threads` clients for `iterations` lock/unlock cycles each on a fresh tree of
/// `units` units; returns the number of violations seen.
fn violations(units: u64, threads: usize, iterations: u64, fault: Option<Fault>) -> u64 {
    run(units, threads, iterations, fault, false)
}

/// As [`violations`]; with `until_caught`, each client yields its CPU inside every hold (see
/// [`Checker::yielding`]) and stops early once the checker has seen a violation.
fn run(
    units: u64,
    threads: usize,
    iterations: u64,
    fault: Option<Fault>,
    until_caught: bool,
) -> u64 {
    let layout = CitronLayout::new(units);
    let words = ShmWords::new(layout.words()).unwrap();
    let checker = if until_caught { Checker::new(units).yielding() } else { Checker::new(units) };
    std::thread::scope(|s| {
        for t in 0..threads {
            let (checker, words) = (&checker, &words);
            s.spawn(move || {
                let id = t as u64 + 1;
                let mut client = CitronClient::new(words.clone(), layout);
                if let Some(fault) = fault {
                    client = client.with_fault(fault);
                }
                let mut rng = support::Rng::new(id);
                for i in 0..iterations {
                    if until_caught && i % 64 == 0 && checker.violations() > 0 {
                        break;
                    }
                    // Lengths on a log scale: bits of one leaf up to a quarter of the space.
                    let max = 1 << rng.below(u64::from(layout.units.ilog2()) - 1);
                    let len = 1 + rng.below(max);
                    let start = rng.below(layout.units - len + 1);
                    let range = start..start + len;
                    let mode = if rng.below(2) == 0 { Mode::Exclusive } else { Mode::Shared };
                    let held = client.lock(range.clone(), mode);
                    checker.hold(id, &range, mode);
                    client.unlock(held);
                }
            });
        }
    });
    checker.violations()
}

#[test]
fn citron_like_excludes_on_a_small_tree() {
    // 1024 units: leaves, three internal levels; ranges hit every level.
    assert_eq!(violations(1024, 4, 4000, None), 0, "holders overlapped");
}

#[test]
fn citron_like_excludes_on_the_suites_tree() {
    assert_eq!(violations(1 << 16, 4, 1500, None), 0, "holders overlapped");
}

#[test]
fn citron_like_excludes_with_many_clients_per_word() {
    // 256 units (4 leaves, one root): 16 clients on 5 node words.
    assert_eq!(violations(256, 16, 1000, None), 0, "holders overlapped");
}

/// Cycles each client of [`catches`] runs at most: a generous bound on the wait for the
/// first violation (as many as the 20 tries of 4000 cycles that bounded it before the
/// clients yielded inside their holds).
const CATCH_ITERATIONS: u64 = 80_000;

/// Runs the broken protocol on 4 clients over a 256-unit tree (4 leaves under the root:
/// holds collide often) until the checker sees a violation. Each client
/// yields its CPU inside its holds, so the others run while it holds, however the
/// scheduler deals out the CPUs: without it, a busy machine (or one CPU) runs a few
/// thousand short cycles of each client in a time slice, one client after another, and
/// nothing overlaps.
fn catches(fault: Fault) {
    let found = run(256, 4, CATCH_ITERATIONS, Some(fault), true);
    assert!(found > 0, "the checker never caught {fault:?}");
    // The same run over the sound protocol: what the yields caught is the fault's.
    assert_eq!(run(256, 4, 1000, None, true), 0, "holders overlapped in the sound tree");
}

#[test]
fn checker_catches_a_tree_without_ancestor_notification() {
    catches(Fault::NoAncestorNotify);
}

#[test]
fn checker_catches_exclusive_leaf_parts_without_bits() {
    catches(Fault::NoLeafBits);
}

/// A random range of `layout`'s space on a log scale of lengths (bits of one leaf up to a
/// quarter of the space), and a mode.
fn random_request(rng: &mut support::Rng, layout: CitronLayout) -> (std::ops::Range<u64>, Mode) {
    let max = 1 << rng.below(u64::from(layout.units.ilog2()) - 1);
    let len = 1 + rng.below(max);
    let start = rng.below(layout.units - len + 1);
    let mode = if rng.below(2) == 0 { Mode::Exclusive } else { Mode::Shared };
    (start..start + len, mode)
}

/// Runs 6 `citron-redis` clients (half of them with pipelined releases, read by their
/// next lock's batch) for up to `iterations` cycles each on a tree of `units` units in a
/// fresh `redis-server`; returns the violations seen (stopping early once there is one).
fn redis_violations(
    server: &RedisServer,
    units: u64,
    iterations: u64,
    fault: Option<Fault>,
) -> u64 {
    let layout = CitronLayout::new(units);
    let checker = Checker::new(layout.units).yielding();
    std::thread::scope(|s| {
        for t in 0..6u64 {
            let (checker, server) = (&checker, server);
            s.spawn(move || {
                let id = t + 1;
                let mut client = CitronRedis::connect(server.addr(), layout).unwrap();
                if let Some(fault) = fault {
                    client = client.with_fault(fault);
                }
                client.set_pipelined_releases(t % 2 == 0);
                let mut rng = support::Rng::new(id);
                for _ in 0..iterations {
                    if checker.violations() > 0 {
                        break;
                    }
                    let (range, mode) = random_request(&mut rng, layout);
                    let held = client.lock(range.clone(), mode).unwrap();
                    checker.hold(id, &range, mode);
                    client.unlock(held).unwrap();
                }
            });
        }
    });
    checker.violations()
}

#[test]
fn citron_redis_excludes() {
    let Some(server) = RedisServer::start_or_skip("citron_redis_excludes") else { return };
    // 1024 units: ranges hit every level.
    assert_eq!(redis_violations(&server, 1024, 400, None), 0, "holders overlapped");
}

#[test]
fn checker_catches_citron_redis_without_leaf_bits() {
    let Some(server) = RedisServer::start_or_skip("citron_redis_fault") else { return };
    let found = redis_violations(&server, 256, 20_000, Some(Fault::NoLeafBits));
    assert!(found > 0, "the checker never caught citron-redis without leaf bits");
}

#[test]
fn citron_redis_round_trips_and_idle_words() {
    let Some(server) = RedisServer::start_or_skip("citron_redis_round_trips") else { return };
    let layout = CitronLayout::new(1 << 16);
    let mut client = CitronRedis::connect(server.addr(), layout).unwrap();
    let mut round_trips = |range: std::ops::Range<u64>, mode| {
        let before = client.round_trips();
        let held = client.lock(range, mode).unwrap();
        let locked = client.round_trips();
        client.unlock(held).unwrap();
        (locked - before, client.round_trips() - locked)
    };
    // Uncontended: all tickets in one batch; exclusive leaf bits one more; an unlock one.
    assert_eq!(round_trips(0..1 << 16, Mode::Exclusive), (1, 1), "the root");
    assert_eq!(round_trips(100..2000, Mode::Shared), (1, 1), "two nodes, shared");
    assert_eq!(round_trips(3..5, Mode::Exclusive), (2, 1), "bits of one leaf");
    assert_eq!(round_trips(60..70, Mode::Exclusive), (2, 1), "bits of two leaves");
    // Every word idle again after random requests: tickets all done, bits all clear.
    let mut rng = support::Rng::new(9);
    for _ in 0..300 {
        let (range, mode) = random_request(&mut rng, layout);
        let held = client.lock(range, mode).unwrap();
        client.unlock(held).unwrap();
    }
    // A second client sees the root free for an exclusive hold at once: nothing was left
    // taken below it.
    let mut other = CitronRedis::connect(server.addr(), layout).unwrap();
    let before = other.round_trips();
    let held = other.lock(0..1 << 16, Mode::Exclusive).unwrap();
    assert_eq!(other.round_trips() - before, 1, "the root waited: a ticket was left taken");
    other.unlock(held).unwrap();
}
