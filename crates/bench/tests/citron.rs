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
    let layout = CitronLayout::new(units);
    let words = ShmWords::new(layout.words()).unwrap();
    let checker = Checker::new(units);
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
                for _ in 0..iterations {
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

/// Runs the broken protocol until the checker sees a violation (bounded).
fn catches(fault: Fault) {
    let found = (0..20).map(|_| violations(1024, 4, 4000, Some(fault))).find(|&v| v > 0);
    assert!(found.is_some(), "the checker never caught {fault:?}");
}

#[test]
fn checker_catches_a_tree_without_ancestor_notification() {
    catches(Fault::NoAncestorNotify);
}

#[test]
fn checker_catches_exclusive_leaf_parts_without_bits() {
    catches(Fault::NoLeafBits);
}
