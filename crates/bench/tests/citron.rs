//! The `citron-like` peer under the exclusivity checker: threads lock random ranges, of
//! every size from some bits of a leaf to whole internal nodes, shared or exclusive;
//! exclusive holders write their id over their range and verify it after, shared holders
//! count themselves in and check that no writer is inside. Violations are counted, not
//! asserted inside the critical section, so a broken lock fails the test instead of
//! leaving other threads waiting on a range a panicked thread held.
//!
//! The negative controls run the same checker on the deliberately broken protocols
//! (`Fault`): without "notify ancestors" and without the leaf bitmaps it must count
//! violations, or the checker could not fail.

mod exclusivity;

use exclusivity::Checker;

use rangelock::Mode;
use rangelock_bench::harness::SplitMix64;
use rangelock_bench::peers::citron_shm::{CitronClient, CitronLayout, Fault, ShmWords};

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
                let mut rng = SplitMix64::new(id);
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
