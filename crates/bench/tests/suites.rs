//! The real range-lock suites over test locks and the fcntl peer, tiny and quick.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use rangelock_bench::harness::{run_suite, Options, Record, Suite};
use rangelock_bench::suites::{contended::Contended, height::Height, held::Held, w1::W1, w2::W2};
use support::{TempDir, TestSet};

fn run(suite: &dyn Suite) -> Vec<Record> {
    let dir = TempDir::new(suite.name());
    let opts = Options {
        threads: vec![1, 2],
        oversubscribe: false,
        rounds: 1,
        duration: Duration::from_millis(5),
        out: dir.0.clone(),
        ..Options::quick()
    };
    let report = run_suite(suite, &opts).unwrap();
    assert!(report.json.exists() && report.svg.exists());
    for r in &report.records {
        assert!(r.ops_per_sec > 0.0, "{r:?}");
        assert!(!r.oversubscribed);
    }
    report.records
}

fn variants(records: &[Record]) -> BTreeSet<&str> {
    records.iter().map(|r| r.variant.as_str()).collect()
}

#[test]
fn w1_runs_every_variant_and_the_peer() {
    let records = run(&W1::<TestSet>::default());
    assert_eq!(
        variants(&records),
        BTreeSet::from(["fcntl-ofd", "test-list", "test-whole", "unlocked"])
    );
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| r.params["range_bytes"] == 1024));
    assert_best_other_leaves_out_the_ceiling(&records);
}

/// Every record's `ratio_vs_best_other` divides by the best *lock* of its group: the
/// `unlocked` ceiling is nobody's best other (it still gets its own ratio).
fn assert_best_other_leaves_out_the_ceiling(records: &[Record]) {
    for r in records {
        let best = records
            .iter()
            .filter(|o| o.threads == r.threads && o.params == r.params)
            .filter(|o| o.variant != r.variant && o.variant != "unlocked")
            .map(|o| o.ops_per_sec)
            .fold(0.0, f64::max);
        assert_eq!(r.ratio_vs_best_other, Some(r.ops_per_sec / best), "{r:?}");
    }
}

#[test]
fn w2_skips_a_coarse_lock() {
    let records = run(&W2::<TestSet>::default());
    assert_eq!(variants(&records), BTreeSet::from(["fcntl-ofd", "test-list", "unlocked"]));
    assert_best_other_leaves_out_the_ceiling(&records);
    assert!(records.iter().all(|r| r.params["batch"] == 16 && r.ops_per_sec > 0.0));
}

#[test]
fn contended_sweeps_the_exclusive_share() {
    let records = run(&Contended::<TestSet>::default());
    let pcts: BTreeSet<u64> =
        records.iter().map(|r| r.params["exclusive_pct"].as_u64().unwrap()).collect();
    assert_eq!(pcts, BTreeSet::from([0, 20, 100]));
    assert_eq!(variants(&records), BTreeSet::from(["test-list", "test-whole"]));
}

#[test]
fn height_sweeps_heights_in_quick_mode() {
    let records = run(&Height::<TestSet>::default());
    let heights: BTreeSet<u64> =
        records.iter().map(|r| r.params["height"].as_u64().unwrap()).collect();
    assert_eq!(heights, BTreeSet::from([4, 10, 16]));
}

#[test]
fn held_runs_k_per_thread_and_skips_the_coarse_lock() {
    let records = run(&Held::<TestSet>::default());
    assert_eq!(variants(&records), BTreeSet::from(["fcntl-ofd", "test-list", "unlocked"]));
    // The ceiling runs at both quick Ks (16, 1000) and both thread counts. (Quick mode has
    // no K above fcntl's limit of 1000, so this cannot show that the ceiling is exempt.)
    assert_eq!(records.iter().filter(|r| r.variant == "unlocked").count(), 4);
    let ks: BTreeSet<u64> =
        records.iter().map(|r| r.params["held_per_thread"].as_u64().unwrap()).collect();
    assert_eq!(ks, BTreeSet::from([16, 1000]));
}

#[test]
fn registry_names_are_unique_and_findable() {
    let names: Vec<&str> = rangelock_bench::suites::all().iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "w1",
            "w2",
            "contended",
            "height",
            "held",
            "aliasing",
            "epvs-array",
            "epvs-ops",
            "epvs-freq",
            "epvs-table",
            "server-micro",
            "server-oltp",
            "cluster",
            "cluster-failover"
        ]
    );
    assert!(rangelock_bench::suites::find("w2").is_some());
    assert!(rangelock_bench::suites::find("nope").is_none());
}

#[test]
fn held_gives_up_on_a_slow_setup_and_releases_what_it_took() {
    use rangelock::Lock;
    use rangelock_bench::workload::loops::{self, Layout};
    use rangelock_bench::workload::SharedRegion;
    use support::ListUnderMutex;

    let lock = Lock::<ListUnderMutex>::default();
    let layout = Layout { ranges: 64, base: 1 << 30 };
    let region = SharedRegion::new(layout.region_bytes()).unwrap();
    let d = Duration::from_millis(2);
    let sample = loops::held(&lock, &region, layout, 1000, 2, d, Duration::ZERO);
    assert!(sample.skip_reason().unwrap().contains("holding 2000 ranges"), "{sample:?}");
    assert_eq!(sample.ops, 0);
    let all = lock.try_lock(0..u64::MAX).expect("nothing is left held after giving up");
    drop(all);
    let sample = loops::held(&lock, &region, layout, 1000, 2, d, Duration::from_secs(3600));
    assert_eq!(sample.skip_reason(), None);
    assert!(sample.ops > 0);
    drop(lock.try_lock(0..u64::MAX).expect("held ranges are released after measuring"));
}

#[test]
fn w1_and_w2_with_more_threads_than_ranges_still_stop() {
    use rangelock::Lock;
    use rangelock_bench::workload::loops::{self, Layout};
    use rangelock_bench::workload::SharedRegion;
    use support::ListUnderMutex;

    let lock = Lock::<ListUnderMutex>::default();
    let layout = Layout { ranges: 1, base: 0 };
    let region = SharedRegion::new(layout.region_bytes()).unwrap();
    let s = loops::w1(&lock, &region, layout, 3, Duration::from_millis(2));
    assert!(s.ops > 0);
    let s = loops::w2(&lock, &region, layout, 16, 3, Duration::from_millis(2));
    assert!(s.ops > 0);
}

#[test]
fn aliasing_runs_the_five_locks_and_verifies_every_read() {
    use rangelock_bench::suites::aliasing::Aliasing;
    let records = run(&Aliasing);
    assert_eq!(
        variants(&records),
        BTreeSet::from(["kernel-tree", "kogan-list", "rangelock", "segments", "song-skiplist"])
    );
    assert_eq!(records.len(), 10);
    for r in &records {
        // Each worker checks every page it read back (a mismatch panics the run); the count
        // of checked transactions is the record's.
        assert!(r.extra["transactions"].as_u64().unwrap() > 0, "{r:?}");
        assert!(r.extra["failed_tries_per_txn"].as_f64().unwrap() >= 0.0, "{r:?}");
        assert_eq!(r.params["blob_bytes"], 1 << 20);
    }
}
