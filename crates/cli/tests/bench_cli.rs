//! The `rangelock bench` binary end to end.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn temp_out(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rangelock-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn rangelock() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rangelock"));
    c.env("CI", "true");
    c
}

#[test]
fn bench_w1_quick_writes_json_and_svg() {
    let out = temp_out("w1");
    let o = rangelock()
        .args([
            "bench",
            "w1",
            "--quick",
            "--duration-ms",
            "20",
            "--rounds",
            "1",
            "--threads",
            "1,2",
            // ... and until every thread completed an operation, however busy the machine.
            "--min-ops",
            "1",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("== w1"), "{stdout}");
    assert!(stdout.contains("params {"), "the parameters are printed: {stdout}");
    assert!(stdout.contains(" duration=20ms min_ops=1 "), "the floor is named: {stdout}");
    let took = stdout.lines().find(|l| l.starts_with("w1: ")).expect("the suite's time");
    assert!(took.ends_with(" s") && took[4..took.len() - 2].parse::<f64>().is_ok(), "{took}");

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("w1.json")).unwrap()).unwrap();
    let records = json.as_array().unwrap();
    assert!(!records.is_empty());
    let threads: Vec<u64> = records.iter().map(|r| r["threads"].as_u64().unwrap()).collect();
    assert!(threads.contains(&1) && threads.contains(&2) && threads.iter().all(|&t| t <= 2));
    for r in records {
        assert_eq!(r["suite"], "w1");
        assert!(r["variant"].is_string());
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0);
        assert!(r["ns_per_op"].as_f64().unwrap() > 0.0);
        assert!(r["p50_ns"].as_u64().is_some() && r["p99_ns"].as_u64().is_some());
        assert_eq!(r["rounds"], 1);
        assert_eq!(r["duration_ms"], 20);
        assert_eq!(r["params"]["range_bytes"], 1024);
    }
    assert!(std::fs::read_to_string(out.join("w1.svg")).unwrap().starts_with("<svg"));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bench_list_names_every_suite() {
    let o = rangelock().args(["bench", "list"]).output().unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    for name in ["w1", "w2", "contended", "height", "held", "mixed", "memory", "quick"] {
        assert!(stdout.lines().any(|l| l.starts_with(name)), "{name} missing from:\n{stdout}");
    }
}

/// The binary installs the counting allocator, so `memory` has cases and real byte counts.
/// (`rangelock` only: the other locks' counts are `crates/bench/tests/memory.rs`'s; the
/// quick work budget bounds each case.)
#[test]
fn bench_memory_counts_bytes_through_the_binarys_allocator() {
    let out = temp_out("memory");
    let o = rangelock()
        .args(["bench", "memory", "--quick", "--rounds", "1"])
        .arg("--out")
        .arg(&out)
        .env("RANGELOCK_BENCH_ONLY", "rangelock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("bytes_per_range"), "{stdout}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("memory.json")).unwrap()).unwrap();
    assert!(json.as_array().unwrap().iter().all(|r| r["variant"] == "rangelock"), "{json}");
    let rangelock = |param: &str| -> Vec<&Value> {
        let rows = json.as_array().unwrap().iter();
        rows.filter(|r| r["variant"] == "rangelock" && !r["params"][param].is_null()).collect()
    };
    assert!(!rangelock("held_ranges").is_empty());
    for r in rangelock("held_ranges") {
        // Used by one holder at a time, the lock has allocated nothing; one range held is
        // still a solo hold (0 bytes), a thousand build the core and take list nodes: the
        // allocator saw them.
        assert_eq!(r["idle_bytes"].as_f64().unwrap(), 0.0, "{r}");
        if r["params"]["held_ranges"].as_u64() != Some(1) {
            assert!(r["bytes_per_range"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    // A million idle locks, and one lock used by one holder at a time (issue 33).
    for (param, most) in [("idle_locks", 256.0), ("one_holder_ops", 1024.0)] {
        let rows = rangelock(param);
        assert_eq!(rows.len(), 1, "{param}");
        let bytes = rows[0]["bytes_per_lock"].as_f64().unwrap();
        assert!(bytes > 0.0 && bytes <= most, "{}", rows[0]);
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_input_is_a_clear_error() {
    let o = rangelock().args(["bench", "nosuch"]).output().unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("no suite named \"nosuch\"") && stderr.contains("w1"), "{stderr}");

    let o = rangelock().args(["bench", "w1", "--threads", "1,0"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least 1"));

    let o = rangelock().args(["bench", "w1", "--min-ops", "x"]).output().unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("--min-ops"), "{stderr}");
}

#[test]
fn bench_report_from_existing_json_writes_html_and_markdown() {
    let out = temp_out("report");
    let o = rangelock()
        .args(["bench", "w1", "--quick", "--duration-ms", "5", "--min-ops", "1", "--rounds", "1"])
        .args(["--threads", "1"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Only w1 ran: every other seed comparator is missing, so the report is refused ...
    let o = rangelock().args(["bench", "report", "--from"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--allow-missing") && stderr.contains("Fig. 5.3 (w2)"), "{stderr}");
    assert!(!out.join("report.md").exists());
    // ... unless allowed; then the report says what is missing.
    let o = rangelock().args(["bench", "report", "--allow-missing", "--from"]).arg(&out).output();
    let o = o.unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    // Only w1 ran: the others are listed as not run, and w1 is not among them.
    let not_run = stdout.lines().find(|l| l.starts_with("not run: ")).expect("a not-run line");
    assert!(not_run.contains("w2") && !not_run.split([' ', ',']).any(|n| n == "w1"), "{not_run}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("data-suite=\"w1\"") && html.contains("<svg"), "{html}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### Fig. 5.2 — `w1`"), "{md}");
    assert!(md.contains("## Incomplete: comparators missing"), "{md}");
    assert!(md.contains("- Fig. 5.3 (w2): the suite did not run"), "{md}");

    let o = rangelock().args(["bench", "w1", "--from"]).arg(&out).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--from is only for"));
    std::fs::remove_dir_all(&out).unwrap();
}

/// `aliasing-counts` runs the binary itself under cachegrind (one variant, a few
/// transactions): instructions and simulated L1d misses per transaction come out positive
/// and finite; without valgrind the case is skipped and says why.
#[test]
fn bench_aliasing_counts_counts_a_transaction_under_cachegrind() {
    let out = temp_out("aliasing-counts");
    let o = rangelock()
        .args(["bench", "aliasing-counts", "--rounds", "1", "--duration-ms", "20"])
        .arg("--out")
        .arg(&out)
        .env("RANGELOCK_BENCH_ONLY", "segments")
        .env("RANGELOCK_ALIASING_TXNS", "2,6")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("aliasing-counts.json")).unwrap())
            .unwrap();
    let records = json.as_array().unwrap();
    let valgrind =
        Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !valgrind {
        assert!(records.is_empty(), "{records:?}");
        assert!(stdout.contains("skipped: segments") && stdout.contains("valgrind"), "{stdout}");
        return;
    }
    assert_eq!(records.len(), 1, "{stdout}");
    let r = &records[0];
    assert_eq!((r["variant"].as_str(), r["threads"].as_u64()), (Some("segments"), Some(1)));
    assert_eq!(
        (r["params"]["txns_small"].as_u64(), r["params"]["txns_large"].as_u64()),
        (Some(2), Some(6))
    );
    for field in ["instructions_per_txn", "l1d_misses_per_txn"] {
        let v = r[field].as_f64().unwrap_or(f64::NAN);
        assert!(v.is_finite() && v > 0.0, "{field} = {v}: {stdout}");
    }
    // Two 1 MiB copies: at least one instruction per 64 bytes, one miss per line of one copy.
    assert!(r["instructions_per_txn"].as_f64().unwrap() > (2 << 20) as f64 / 64.0, "{stdout}");
    assert!(r["l1d_misses_per_txn"].as_f64().unwrap() > (1 << 20) as f64 / 64.0, "{stdout}");
    std::fs::remove_dir_all(&out).unwrap();
}

/// Every flag `rangelock bench --help` shows has its row in docs/BENCH.md's flag table.
#[test]
fn every_bench_flag_is_in_the_docs_table() {
    let o = rangelock().args(["bench", "--help"]).output().unwrap();
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/BENCH.md"),
    )
    .unwrap();
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| *w != "--help")
        .collect();
    assert!(flags.contains(&"--allow-missing"), "{help}");
    for flag in flags {
        assert!(docs.contains(&format!("| `{flag}")), "{flag} has no row in docs/BENCH.md");
    }
}
