//! The harness end to end: a fake suite with deterministic samples into a temp dir.

mod support;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use rangelock_bench::harness::{
    machine, run_suite, BenchError, Case, Options, Record, Sample, Span, Suite, XAxis,
};
use serde_json::{json, Map, Value};
use support::TempDir;

/// Two variants x three thread counts (1, 2 and, as for a suite whose claims read the most
/// threads, the oversubscribed 16) x two params;
/// "fast" does 2x the ops of "slow".
struct Fake {
    x: XAxis,
    calls: Rc<Cell<usize>>,
}

impl Suite for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn about(&self) -> &'static str {
        "a fake suite"
    }
    fn baseline(&self) -> &'static str {
        "slow"
    }
    fn x_axis(&self) -> XAxis {
        self.x
    }
    fn cases(&self, opts: &Options) -> Vec<Case> {
        let span = opts.span();
        let mut cases = Vec::new();
        for size in [1u64, 2] {
            for (threads, over) in opts.threads_with_most() {
                for (variant, factor) in [("slow", 1u64), ("fast", 2)] {
                    let calls = self.calls.clone();
                    let mut round = 0u64;
                    let params: Map<String, Value> =
                        [("size".to_owned(), json!(size))].into_iter().collect();
                    cases.push(Case {
                        variant: variant.to_owned(),
                        threads,
                        params,
                        oversubscribed: over,
                        run: Box::new(move |given: Span| {
                            assert_eq!(
                                Span { budget: None, ..given },
                                span,
                                "each case gets the options' span"
                            );
                            assert!(given.budget.is_some(), "and, in a quick run, a budget");
                            calls.set(calls.get() + 1);
                            round += 1;
                            // Rounds give 1000, 2000, 3000 (x factor) ops in 1 s: median 2000.
                            let mut extra = Map::new();
                            extra.insert("bytes".to_owned(), json!(round * 10));
                            Sample {
                                ops: round * 1000 * factor * size,
                                elapsed: Duration::from_secs(1),
                                latencies_ns: (1..=100).map(|l| l * factor).collect(),
                                extra,
                            }
                        }),
                    });
                }
            }
        }
        cases
    }
}

fn opts(dir: &TempDir) -> Options {
    Options {
        rounds: 3,
        duration: Duration::from_millis(1),
        out: dir.0.clone(),
        ..Options::quick()
    }
}

#[test]
fn fake_suite_runs_end_to_end_into_json_and_svg() {
    let dir = TempDir::new("fake");
    let calls = Rc::new(Cell::new(0));
    let suite = Fake { x: XAxis::Threads, calls: calls.clone() };
    // A floor of operations reaches the cases and the table header, not the records.
    let opts = Options { min_ops: 2, ..opts(&dir) };
    assert_eq!(opts.span(), Span::new(Duration::from_millis(1), 2));
    let report = run_suite(&suite, &opts).unwrap();
    // 2 sizes x 3 thread counts x 2 variants, 3 rounds each.
    assert_eq!(calls.get(), 12 * 3);
    assert_eq!(report.records.len(), 12);
    assert!(report.cut.is_empty() && report.work.iter().all(|w| w.measurements == 3));
    assert_eq!(report.json, dir.0.join("fake.json"));
    assert_eq!(report.svg, dir.0.join("fake.svg"));

    let text = std::fs::read_to_string(&report.json).unwrap();
    let parsed: Vec<Record> = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, report.records);

    // Exact field names of one record.
    let raw: Vec<Value> = serde_json::from_str(&text).unwrap();
    let obj = raw[0].as_object().unwrap();
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "bytes",
            "duration_ms",
            "latency_samples",
            "machine",
            "ns_per_op",
            "ops_per_sec",
            "ops_per_sec_max",
            "ops_per_sec_min",
            "oversubscribed",
            "p50_ns",
            "p50_ns_max",
            "p50_ns_min",
            "p999_ns",
            "p99_ns",
            "p99_ns_max",
            "p99_ns_min",
            "params",
            "ratio_vs_baseline",
            "ratio_vs_best_other",
            "rounds",
            "suite",
            "threads",
            "variant",
        ]
    );
    assert_eq!(obj["suite"], "fake");
    // The run's machine block, and the rounds' spread around the median.
    assert!(obj["machine"]["cores"].as_u64().is_some_and(|n| n >= 1), "{obj:?}");
    assert!(obj["machine"]["commit"].as_str().is_some_and(|c| !c.is_empty()), "{obj:?}");
    for r in &parsed {
        let (min, max) = (r.ops_per_sec_min.unwrap(), r.ops_per_sec_max.unwrap());
        assert!(min <= r.ops_per_sec && r.ops_per_sec <= max, "{r:?}");
    }

    for r in &parsed {
        let factor = if r.variant == "fast" { 2.0 } else { 1.0 };
        let size = r.params["size"].as_f64().unwrap();
        assert_eq!(r.ops_per_sec, 2000.0 * factor * size, "median over rounds: {r:?}");
        assert_eq!(r.ns_per_op, Some(1e9 / r.ops_per_sec));
        assert_eq!(r.latency_samples, 300);
        assert_eq!(r.duration_ms, 1, "the duration, not what a floor added");
        assert_eq!(r.p50_ns, Some(50 * factor as u64));
        assert_eq!(r.p99_ns, Some(99 * factor as u64));
        assert_eq!(r.p999_ns, None, "fewer than 1000 samples");
        assert_eq!(r.extra["bytes"], json!(20));
        assert_eq!(r.oversubscribed, r.threads > 2);
        // The machine probe: on every record of two threads or more, and only there.
        let xfer = r.extra.get(machine::LINE_TRANSFER_NS).and_then(Value::as_f64);
        if r.threads >= 2 && machine::can_probe() {
            assert!(xfer.is_some_and(|ns| ns > 0.0), "{r:?}");
            // With its range over the rounds around the median.
            let get = |k| r.extra.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
            let (min, max) =
                (get(machine::LINE_TRANSFER_MIN_NS), get(machine::LINE_TRANSFER_MAX_NS));
            assert!(xfer.is_some_and(|ns| min <= ns && ns <= max), "{r:?}");
        } else {
            assert_eq!(xfer, None, "{r:?}");
        }
        if r.variant == "fast" {
            assert_eq!(r.ratio_vs_baseline, Some(2.0));
            assert_eq!(r.ratio_vs_best_other, Some(2.0));
        } else {
            assert_eq!(r.ratio_vs_baseline, Some(1.0));
            assert_eq!(r.ratio_vs_best_other, Some(0.5));
        }
    }

    assert!(report.table.contains("fake"));
    assert!(report.table.contains(" duration=1ms min_ops=2 quick="), "{}", report.table);
    assert!(report.table.contains("params {\"size\":1}"));
    assert!(report.table.contains("2.00x"));
    assert!(report.table.contains("16*"));
    assert_eq!(report.table.contains("xfer ns"), machine::can_probe());
    let svg = std::fs::read_to_string(&report.svg).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.contains("fast") && svg.contains("slow") && svg.contains("size 2"));
}

#[test]
fn param_axis_plots_and_missing_baseline_gives_null_ratios() {
    struct Lonely;
    impl Suite for Lonely {
        fn name(&self) -> &'static str {
            "lonely"
        }
        fn about(&self) -> &'static str {
            "one variant, no baseline"
        }
        fn baseline(&self) -> &'static str {
            "absent"
        }
        fn x_axis(&self) -> XAxis {
            XAxis::Param("height")
        }
        fn cases(&self, opts: &Options) -> Vec<Case> {
            (4..=6u64)
                .flat_map(|h| {
                    opts.threads_for(false).into_iter().map(move |(threads, over)| Case {
                        variant: "only".to_owned(),
                        threads,
                        params: [("height".to_owned(), json!(h))].into_iter().collect(),
                        oversubscribed: over,
                        run: Box::new(move |_| Sample {
                            ops: h * 100,
                            elapsed: Duration::from_millis(100),
                            latencies_ns: Vec::new(),
                            extra: Map::new(),
                        }),
                    })
                })
                .collect()
        }
    }
    let dir = TempDir::new("lonely");
    let report = run_suite(&Lonely, &opts(&dir)).unwrap();
    assert_eq!(report.records.len(), 6);
    assert!(!report.table.contains("min_ops"), "no floor, none named: {}", report.table);
    for r in &report.records {
        assert_eq!(r.ratio_vs_baseline, None);
        assert_eq!(r.ratio_vs_best_other, None);
        assert_eq!((r.p50_ns, r.p99_ns), (None, None));
    }
    let raw: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&report.json).unwrap()).unwrap();
    assert_eq!(raw[0]["p50_ns"], Value::Null);
    let svg = std::fs::read_to_string(&report.svg).unwrap();
    assert!(svg.contains("only (1 thr)") && svg.contains("only (2 thr)"), "lines per thread count");
}

#[test]
fn a_suite_without_cases_is_an_error() {
    struct Empty;
    impl Suite for Empty {
        fn name(&self) -> &'static str {
            "empty"
        }
        fn about(&self) -> &'static str {
            ""
        }
        fn baseline(&self) -> &'static str {
            ""
        }
        fn cases(&self, _: &Options) -> Vec<Case> {
            Vec::new()
        }
    }
    let dir = TempDir::new("empty");
    let err = run_suite(&Empty, &opts(&dir)).unwrap_err();
    assert!(matches!(err, BenchError::NoCases(ref s) if s == "empty"), "{err}");
    assert!(!dir.0.join("empty.json").exists());
}

#[test]
fn skipped_cases_leave_the_records_and_are_noted() {
    struct Skips;
    impl Suite for Skips {
        fn name(&self) -> &'static str {
            "skips"
        }
        fn about(&self) -> &'static str {
            "one case skips in its second round"
        }
        fn baseline(&self) -> &'static str {
            "kept"
        }
        fn cases(&self, _: &Options) -> Vec<Case> {
            let ok = |_| Sample { ops: 10, elapsed: Duration::from_secs(1), ..Sample::default() };
            let mut round = 0;
            vec![
                Case {
                    variant: "kept".into(),
                    threads: 1,
                    params: Map::new(),
                    oversubscribed: false,
                    run: Box::new(ok),
                },
                Case {
                    variant: "dropped".into(),
                    threads: 1,
                    params: Map::new(),
                    oversubscribed: false,
                    run: Box::new(move |d| {
                        round += 1;
                        if round == 2 {
                            Sample::skipped("too slow")
                        } else {
                            ok(d)
                        }
                    }),
                },
            ]
        }
    }
    let dir = TempDir::new("skips");
    let report = run_suite(&Skips, &opts(&dir)).unwrap();
    assert_eq!(report.records.len(), 1);
    assert_eq!(report.records[0].variant, "kept");
    assert_eq!(report.records[0].ratio_vs_best_other, None);
    assert_eq!(report.skipped.len(), 1);
    assert!(report.skipped[0].starts_with("dropped x1") && report.skipped[0].ends_with("too slow"));
    assert!(report.table.contains("skipped: dropped x1"));
}

#[test]
fn cut_cases_leave_the_records_run_no_more_rounds_and_are_noted() {
    struct Cuts(Rc<Cell<usize>>);
    impl Suite for Cuts {
        fn name(&self) -> &'static str {
            "cuts"
        }
        fn about(&self) -> &'static str {
            "one case gives up on its budget in its first round"
        }
        fn baseline(&self) -> &'static str {
            "kept"
        }
        fn cases(&self, _: &Options) -> Vec<Case> {
            let ok = |_| Sample { ops: 10, elapsed: Duration::from_secs(1), ..Sample::default() };
            let calls = self.0.clone();
            vec![
                Case {
                    variant: "kept".into(),
                    threads: 1,
                    params: Map::new(),
                    oversubscribed: false,
                    run: Box::new(ok),
                },
                Case {
                    variant: "cut".into(),
                    threads: 1,
                    params: Map::new(),
                    oversubscribed: false,
                    run: Box::new(move |_| {
                        calls.set(calls.get() + 1);
                        Sample::cut("took 3 of 5 steps")
                    }),
                },
            ]
        }
    }
    let dir = TempDir::new("cuts");
    let calls = Rc::new(Cell::new(0));
    let report = run_suite(&Cuts(calls.clone()), &opts(&dir)).unwrap();
    assert_eq!(calls.get(), 1, "a cut case runs no more rounds");
    assert_eq!(report.records.len(), 1);
    assert_eq!(report.records[0].variant, "kept");
    assert_eq!(report.cut.len(), 1);
    let line = &report.cut[0];
    assert!(line.starts_with("cut x1 {}: took 3 of 5 steps; round 1 spent "), "{line}");
    assert!(line.ends_with("its budget is 1000 ms per measurement"), "{line}");
    assert!(report.table.contains(&format!("   cut: {line}\n")), "{}", report.table);
    let [kept, cut] = &report.work[..] else { panic!("{:?}", report.work) };
    assert_eq!((kept.measurements, kept.cut, cut.measurements, cut.cut), (3, false, 1, true));
}
