//! The counting allocator and the `memory` suite over the shipped locks (this test binary
//! installs the allocator, as the `rangelock` command does).

mod support;

use std::collections::BTreeMap;

use rangelock_bench::alloc::{counting, net_bytes, CountingAlloc};
use rangelock_bench::harness::{run_suite, Options, Record};
use rangelock_bench::seeds;
use rangelock_bench::suites::memory::{Memory, FIELDS, HELD, IDLE_LOCKS};
use rangelock_bench::suites::mixed::SEGMENTS_NAME;
use rangelock_bench::variants::Registered;
use support::TempDir;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn the_allocator_counts_this_threads_bytes() {
    assert!(counting());
    let before = net_bytes();
    let mut v: Vec<u8> = Vec::with_capacity(10_000);
    assert_eq!(net_bytes() - before, 10_000);
    v.reserve_exact(20_000); // a realloc counts the difference
    assert_eq!(net_bytes() - before, 20_000);
    drop(v);
    assert_eq!(net_bytes(), before);
    // Another thread's allocations are its own (spawning and joining allocate a little
    // here, so only the thread's own count is exact).
    let (kept, there) = std::thread::spawn(|| {
        let before = net_bytes();
        let v = vec![0u8; 4096];
        let there = net_bytes() - before;
        (v, there)
    })
    .join()
    .unwrap();
    assert_eq!(there, 4096);
    let before = net_bytes();
    drop(kept); // allocated there, freed here: counted here
    assert_eq!(net_bytes() - before, -4096);
}

fn extra(r: &Record, key: &str) -> f64 {
    r.extra.get(key).and_then(serde_json::Value::as_f64).unwrap_or_else(|| panic!("{key}: {r:?}"))
}

#[test]
fn memory_reports_plausible_numbers_for_every_lock() {
    let dir = TempDir::new("memory");
    let opts = Options { rounds: 1, out: dir.0.clone(), ..Options::quick() };
    let report = run_suite(&Memory::<Registered>::default(), &opts).unwrap();
    let records = &report.records;
    for field in FIELDS {
        assert!(report.table.contains(field), "{}", report.table);
    }
    assert!(!report.table.contains("ops/s"), "{}", report.table);

    let of = |variant: &str, param: &str| -> Vec<&Record> {
        records.iter().filter(|r| r.variant == variant && r.params.contains_key(param)).collect()
    };
    let rangelock = of("rangelock", "held_ranges");
    assert_eq!(rangelock.len(), 2 * HELD.len(), "both layouts, every K");
    for r in &rangelock {
        let per = extra(r, "bytes_per_range");
        // One range inside a stripe is a slot of a table the idle lock already has: no
        // bytes of its own. Many ranges take list nodes, or window tables.
        let held = r.params.get("held_ranges").and_then(serde_json::Value::as_u64).unwrap();
        let plausible = if held == 1 { 0.0..=4096.0 } else { 8.0..=4096.0 };
        assert!(plausible.contains(&per), "{r:?}");
        // Nothing is allocated before two holds meet (`skiplist::solo`).
        assert!(extra(r, "new_bytes") == 0.0 && extra(r, "idle_bytes") == 0.0, "{r:?}");
        assert!(extra(r, "inline_bytes") > 0.0, "{r:?}");
    }
    // A million idle locks in 512 MiB or less, 256 bytes or less each; one lock used by one
    // holder at a time in 1 KiB or less (issue 33).
    let [idle] = of("rangelock", "idle_locks")[..] else { panic!("one idle-locks case") };
    assert!(extra(idle, "bytes_per_lock") <= 256.0, "{idle:?}");
    assert!(extra(idle, "total_bytes") <= (512 << 20) as f64, "{idle:?}");
    assert!(extra(idle, "total_bytes") >= (IDLE_LOCKS * 8) as f64, "{idle:?}");
    let [one] = of("rangelock", "one_holder_ops")[..] else { panic!("one one-holder case") };
    assert!((8.0..=1024.0).contains(&extra(one, "total_bytes")), "{one:?}");
    // Static segments allocate nothing per range; their counters are the idle lock.
    for name in ["segments", SEGMENTS_NAME] {
        let rows = of(name, "held_ranges");
        assert!(!rows.is_empty(), "{name}");
        for r in rows {
            assert_eq!(extra(r, "held_bytes"), 0.0, "{r:?}");
            assert!(extra(r, "new_bytes") >= (16 << 20) as f64, "{r:?}");
        }
    }
    // Segments cannot hold ranges closer than a segment, nor past their domain.
    let skipped: Vec<&str> = report.skipped.iter().map(String::as_str).collect();
    // Locks whose one idle lock costs over 4 KiB skip the million idle locks.
    let (idle, skipped): (Vec<&str>, Vec<&str>) =
        skipped.iter().partition(|s| s.contains("\"idle_locks\""));
    assert!(idle.iter().all(|s| !s.starts_with("rangelock")), "{idle:?}");
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped.iter().all(|s| s.starts_with("segments")), "{skipped:?}");
    // The quick work budget cuts what runs away: the global mutex (a vector scanned per
    // insertion) at 100 000 ranges, and segments' one-holder ranges over the whole domain
    // (2^22 counters each).
    assert!(!report.cut.is_empty(), "segments' one-holder case outlasts any quick budget");
    for s in &report.cut {
        let scans = s.starts_with("global-mutex") && s.contains("\"held_ranges\":100000");
        let wide = s.starts_with("segments") && s.contains("\"one_holder_ops\"");
        assert!(scans || wide, "{s}");
        assert!(s.contains("its budget is 1000 ms per measurement"), "{s}");
    }

    // The report shows the byte counts, not ops/s.
    let files = seeds::write_report(&dir.0, &dir.0, &BTreeMap::new(), true).unwrap();
    let md = std::fs::read_to_string(files.markdown).unwrap();
    let section = &md[md.find("### `memory`").expect("memory section")..];
    let section = &section[..section.find("\n### ").unwrap_or(section.len())];
    assert!(section.contains("| bytes_per_range |"), "{section}");
    assert!(!section.contains("ops/s"), "{section}");
}
