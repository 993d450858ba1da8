//! Running a suite: interleaved rounds, work budgets, medians, ratios, report files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::budget::{Budget, CpuClock, WorkBudget};
use super::case::{Case, Ceiling, Measure, Sample, Suite};
use super::error::BenchError;
use super::machine;
use super::options::Options;
use super::progress::suite_bar;
use super::record::Record;
use super::report;
use super::run_info::RunInfo;
use super::stats::{median, Percentiles};

/// What one suite run produced.
#[derive(Debug)]
pub struct SuiteReport {
    /// The records, in case order.
    pub records: Vec<Record>,
    /// Cases left out, as `(variant, threads, params, reason)` lines.
    pub skipped: Vec<String>,
    /// Cases cut by their work budget, left out of the records, as `(variant, threads,
    /// params, how far it got, CPU time spent, budget)` lines.
    pub cut: Vec<String>,
    /// The work of every case, in case order.
    pub work: Vec<CaseWork>,
    /// The table printed on stdout.
    pub table: String,
    /// `<out>/<suite>.json`.
    pub json: PathBuf,
    /// `<out>/<suite>.svg`.
    pub svg: PathBuf,
    /// Wall-clock time of the run: building the cases, every round, the report files.
    pub elapsed: Duration,
}

/// The work of one case: what its measurements cost the process in CPU time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseWork {
    /// The case: `variant xthreads params`.
    pub case: String,
    /// The most CPU time (the process's, all threads) one of its measurements took, from
    /// the call of its closure to the return: setup, measurement and teardown.
    pub cpu: Duration,
    /// Measurements taken (a cut case's last is the one that was cut).
    pub measurements: usize,
    /// Whether the case was cut by its budget.
    pub cut: bool,
}

/// A case as the table's notes name it: `variant xthreads params`.
fn label(case: &Case) -> String {
    format!("{} x{} {}", case.variant, case.threads, Value::Object(case.params.clone()))
}

/// Runs `suite` with `opts`: measures every case once per round, interleaved, keeps
/// medians, prints the table on stdout and writes `<out>/<suite>.json` and
/// `<out>/<suite>.svg`, then prints the suite's wall-clock time (`w1: 3.2 s`).
///
/// With [`Options::budget`], every measurement gets a fresh [`WorkBudget`] in its
/// [`Span`](super::Span). A measurement that spends more than it (the process's CPU time,
/// read before and after the call) or says it gave up ([`Sample::cut`]) **cuts** its
/// case: the case runs no more rounds, is left out of the records (so nothing judges a
/// half-measured case) and is named under the table with the CPU time it spent and the
/// budget (`cut: ...`), and in [`SuiteReport::cut`].
pub fn run_suite(suite: &dyn Suite, opts: &Options) -> Result<SuiteReport, BenchError> {
    let started = Instant::now();
    let mut cases = suite.cases(opts);
    if cases.is_empty() {
        return Err(BenchError::NoCases(suite.name().to_owned()));
    }
    let rounds = opts.rounds.max(1);
    let bar = suite_bar(suite.name(), (rounds * cases.len()) as u64);
    let mut samples: Vec<Vec<Sample>> = cases.iter().map(|_| Vec::with_capacity(rounds)).collect();
    let mut work: Vec<CaseWork> = cases
        .iter()
        .map(|case| CaseWork {
            case: label(case),
            cpu: Duration::ZERO,
            measurements: 0,
            cut: false,
        })
        .collect();
    let mut cut: Vec<Option<String>> = vec![None; cases.len()];
    let probe = suite.measure() == Measure::Throughput && machine::can_probe();
    for round in 0..rounds {
        for (i, case) in cases.iter_mut().enumerate() {
            if cut[i].is_some() {
                bar.inc(1);
                continue;
            }
            bar.set_message(format!("round {}/{rounds}: {}", round + 1, work[i].case));
            let meter = Budget::start_on(CpuClock::Process, Duration::MAX);
            let span = opts.span().with_budget(opts.budget.map(WorkBudget::start));
            let mut sample = (case.run)(span);
            let spent = meter.spent();
            work[i].cpu = work[i].cpu.max(spent);
            work[i].measurements += 1;
            let over = opts.budget.is_some_and(|budget| spent > budget.cpu);
            if over || sample.cut_reason().is_some() {
                let how = sample.cut_reason().map_or_else(String::new, |w| format!("{w}; "));
                let budget = opts.budget.map_or_else(
                    || "no budget".to_owned(),
                    |b| format!("its budget is {} ms per measurement", b.cpu.as_millis()),
                );
                cut[i] = Some(format!(
                    "{how}round {} spent {} ms of CPU time, {budget}",
                    round + 1,
                    spent.as_millis()
                ));
                work[i].cut = true;
                bar.inc(1);
                continue;
            }
            if probe && case.threads >= 2 {
                // What a line between two cores cost as the case ended (`machine`).
                if let Some(ns) = machine::line_transfer_ns(machine::PROBE_ROUND_TRIPS) {
                    sample.extra.insert(machine::LINE_TRANSFER_NS.to_owned(), ns.into());
                }
            }
            samples[i].push(sample);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();

    let run_info = RunInfo::current();
    let mut records = Vec::with_capacity(cases.len());
    let mut skipped = Vec::new();
    let mut cut_lines = Vec::new();
    for (((case, samples), cut), work) in cases.iter().zip(samples).zip(cut).zip(&work) {
        if let Some(why) = cut {
            cut_lines.push(format!("{}: {why}", work.case));
            continue;
        }
        match samples.iter().find_map(Sample::skip_reason) {
            Some(reason) => skipped.push(format!("{}: {reason}", work.case)),
            None => records.push(summarise(suite.name(), case, samples, rounds, opts, &run_info)),
        }
    }
    fill_ratios(&mut records, suite.baseline(), suite.ceilings());

    let mut table = report::table::render(suite, opts, &records);
    for line in &skipped {
        table.push_str(&format!("   skipped: {line}\n"));
    }
    for line in &cut_lines {
        table.push_str(&format!("   cut: {line}\n"));
    }
    for line in ceiling_breaches(&records, suite.ceilings()) {
        // Loud: in the table, and on stderr for a run whose stdout goes to a file.
        table.push_str(&format!("   WARNING: {line}\n"));
        eprintln!("warning: {}: {line}", suite.name());
    }
    print!("{table}");
    std::fs::create_dir_all(&opts.out)
        .map_err(|source| BenchError::Io { path: opts.out.clone(), source })?;
    let json = opts.out.join(format!("{}.json", suite.name()));
    report::json::write(&json, suite.name(), &records)?;
    let svg = opts.out.join(format!("{}.svg", suite.name()));
    let quantity = suite.quantity();
    report::svg::write(&svg, suite.name(), &quantity, suite.x_axis(), suite.measure(), &records)?;
    let elapsed = started.elapsed();
    println!("{}: {:.1} s", suite.name(), elapsed.as_secs_f64());
    Ok(SuiteReport { records, skipped, cut: cut_lines, work, table, json, svg, elapsed })
}

/// Folds a case's per-round samples into its record, stamped with the run's machine block
/// (ratios filled in later).
fn summarise(
    suite: &str,
    case: &Case,
    samples: Vec<Sample>,
    rounds: usize,
    opts: &Options,
    run_info: &RunInfo,
) -> Record {
    let mut rates: Vec<f64> = samples.iter().map(Sample::ops_per_sec).collect();
    let ops_per_sec_min = rates.iter().copied().reduce(f64::min);
    let ops_per_sec_max = rates.iter().copied().reduce(f64::max);
    let ops_per_sec = median(&mut rates).unwrap_or(0.0);
    let mut extra = median_extras(&samples);
    // The probe's spread too: rounds of one case may run at different vCPU placements.
    let probes = samples.iter().filter_map(|s| s.extra.get(machine::LINE_TRANSFER_NS));
    let probes: Vec<f64> = probes.filter_map(Value::as_f64).collect();
    if let (Some(min), Some(max)) =
        (probes.iter().copied().reduce(f64::min), probes.iter().copied().reduce(f64::max))
    {
        extra.insert(machine::LINE_TRANSFER_MIN_NS.to_owned(), min.into());
        extra.insert(machine::LINE_TRANSFER_MAX_NS.to_owned(), max.into());
    }
    let mut latencies: Vec<u64> =
        samples.iter().flat_map(|s| s.latencies_ns.iter().copied()).collect();
    let pct = Percentiles::of(&mut latencies);
    let (p50_ns_min, p50_ns_max, p99_ns_min, p99_ns_max) = round_extremes(samples);
    Record {
        suite: suite.to_owned(),
        variant: case.variant.clone(),
        threads: case.threads,
        oversubscribed: case.oversubscribed,
        params: case.params.clone(),
        ops_per_sec,
        ops_per_sec_min,
        ops_per_sec_max,
        ns_per_op: (ops_per_sec > 0.0).then(|| 1e9 / ops_per_sec),
        p50_ns: pct.p50,
        p99_ns: pct.p99,
        p999_ns: pct.p999,
        p50_ns_min,
        p50_ns_max,
        p99_ns_min,
        p99_ns_max,
        latency_samples: latencies.len(),
        rounds,
        duration_ms: u64::try_from(opts.duration.as_millis()).unwrap_or(u64::MAX),
        ratio_vs_baseline: None,
        ratio_vs_best_other: None,
        machine: Some(run_info.clone()),
        extra,
    }
}

/// The smallest and largest p50 and p99 of one round, each round's percentiles taken from
/// its own samples (rounds without samples are left out): `(p50 min, p50 max, p99 min,
/// p99 max)`.
fn round_extremes(samples: Vec<Sample>) -> (Option<u64>, Option<u64>, Option<u64>, Option<u64>) {
    let per_round: Vec<Percentiles> = samples
        .into_iter()
        .filter(|s| !s.latencies_ns.is_empty())
        .map(|mut s| Percentiles::of(&mut s.latencies_ns))
        .collect();
    let p50s = || per_round.iter().filter_map(|p| p.p50);
    let p99s = || per_round.iter().filter_map(|p| p.p99);
    (p50s().min(), p50s().max(), p99s().min(), p99s().max())
}

/// Median over rounds of each numeric extra field; a non-numeric field keeps its last value.
fn median_extras(samples: &[Sample]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut numeric: Vec<(String, Vec<f64>)> = Vec::new();
    for sample in samples {
        for (key, value) in &sample.extra {
            match value.as_f64() {
                Some(x) => match numeric.iter_mut().find(|(k, _)| k == key) {
                    Some((_, xs)) => xs.push(x),
                    None => numeric.push((key.clone(), vec![x])),
                },
                None => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    for (key, mut xs) in numeric {
        let m = median(&mut xs).unwrap_or(0.0);
        let value = if m.fract() == 0.0 && m.abs() < 9.0e15 {
            Value::from(m as i64)
        } else {
            serde_json::Number::from_f64(m).map_or(Value::Null, Value::Number)
        };
        out.insert(key, value);
    }
    out
}

/// Fills the ratios of every record against the baseline and the best other variant of its
/// (params, threads) group; a `ceilings` variant is nobody's best other.
pub(crate) fn fill_ratios(records: &mut [Record], baseline: &str, ceilings: &[Ceiling]) {
    let mut groups: HashMap<(String, usize), Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        groups.entry(r.group_key()).or_default().push(i);
    }
    for members in groups.values() {
        let base = members
            .iter()
            .find(|&&i| records[i].variant == baseline)
            .map(|&i| records[i].ops_per_sec);
        for &i in members {
            let own = records[i].ops_per_sec;
            let best_other = members
                .iter()
                .filter(|&&j| records[j].variant != records[i].variant)
                .filter(|&&j| !ceilings.iter().any(|c| c.name == records[j].variant))
                .map(|&j| records[j].ops_per_sec)
                .fold(None, |acc: Option<f64>, x| Some(acc.map_or(x, |a| a.max(x))));
            records[i].ratio_vs_baseline = base.and_then(|b| ratio(own, b));
            records[i].ratio_vs_best_other = best_other.and_then(|b| ratio(own, b));
        }
    }
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0 && num.is_finite()).then(|| num / den)
}

/// How far a variant may run above a ceiling of its group before the harness warns: a
/// ceiling decides nothing, so more than this is the machine's doing (a busy core, a run
/// too short to settle), not the variant's.
const CEILING_SLACK: f64 = 1.10;

/// One line per record, within the cores, that ran more than [`CEILING_SLACK`] times a
/// ceiling of its (params, threads) group. Oversubscribed rows are left out: who runs
/// when is up to the scheduler there, and the ratios say so.
pub(crate) fn ceiling_breaches(records: &[Record], ceilings: &[Ceiling]) -> Vec<String> {
    let is_ceiling = |r: &Record| ceilings.iter().any(|c| c.name == r.variant);
    let mut lines = Vec::new();
    for r in records.iter().filter(|r| !r.oversubscribed && !is_ceiling(r)) {
        for top in records.iter().filter(|t| is_ceiling(t) && t.group_key() == r.group_key()) {
            if top.ops_per_sec > 0.0 && r.ops_per_sec > top.ops_per_sec * CEILING_SLACK {
                lines.push(format!(
                    "{} ran {:.2}x its ceiling {} at {} thr {}: a ceiling decides nothing, so \
                     this measurement is off (a busy machine or too short a run: raise \
                     --duration-ms / --rounds, or run on an idle machine)",
                    r.variant,
                    r.ops_per_sec / top.ops_per_sec,
                    top.variant,
                    r.threads,
                    Value::Object(r.params.clone()),
                ));
            }
        }
    }
    lines
}

#[cfg(test)]
mod round_extremes_tests {
    use super::*;

    fn round(latencies: Vec<u64>) -> Sample {
        Sample { latencies_ns: latencies, ..Sample::default() }
    }

    /// Each round's percentiles come from its own samples: a slow round shows as the max
    /// even where the pooled p50 hides it; a round without samples counts for nothing.
    #[test]
    fn extremes_are_of_each_rounds_own_percentiles() {
        let fast = round((1..=100).collect());
        let slow = round((1..=100).map(|x| x * 10).collect());
        let empty = round(Vec::new());
        let (p50_min, p50_max, p99_min, p99_max) = round_extremes(vec![slow, empty, fast]);
        assert_eq!((p50_min, p50_max), (Some(50), Some(500)));
        assert_eq!((p99_min, p99_max), (Some(99), Some(990)));
        assert_eq!(round_extremes(vec![round(Vec::new())]), (None, None, None, None));
    }
}

#[cfg(test)]
mod ceiling_tests {
    use super::*;

    const UNLOCKED: Ceiling = Ceiling { name: "unlocked", leaves_out: "the lock" };

    /// A variant well above its group's ceiling is named once, with the ratio; noise
    /// within the slack, other groups and oversubscribed rows are not.
    #[test]
    fn a_beaten_ceiling_is_reported() {
        let rec = Record::for_test;
        let records = [
            rec("unlocked", 1, 100.0),
            rec("rangelock", 1, 105.0),
            rec("unlocked", 2, 100.0),
            rec("rangelock", 2, 217.0),
            rec("unlocked", 16, 100.0),
            rec("rangelock", 16, 300.0),
        ];
        let lines = ceiling_breaches(&records, &[UNLOCKED]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("rangelock ran 2.17x its ceiling unlocked at 2 thr"),
            "{}",
            lines[0]
        );
        assert!(ceiling_breaches(&records, &[]).is_empty(), "no ceiling, nothing to beat");
    }
}
