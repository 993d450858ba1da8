//! The table printed on stdout: one block per params group, the suite's parameters first.

use std::fmt::Write;

use serde_json::Value;

use super::{human, rate_range, ratio, value_with_unit};
use crate::harness::case::{Measure, Suite};
use crate::harness::machine::{LINE_TRANSFER_MAX_NS, LINE_TRANSFER_MIN_NS, LINE_TRANSFER_NS};
use crate::harness::options::Options;
use crate::harness::record::Record;
use crate::harness::run_info::RunInfo;

/// Renders the table of a suite's records.
pub fn render(suite: &dyn Suite, opts: &Options, records: &[Record]) -> String {
    let mut s = String::new();
    let threads: Vec<String> = {
        let mut seen: Vec<(usize, bool)> = Vec::new();
        for r in records {
            if !seen.contains(&(r.threads, r.oversubscribed)) {
                seen.push((r.threads, r.oversubscribed));
            }
        }
        seen.sort_unstable();
        seen.into_iter().map(|(t, o)| if o { format!("{t}*") } else { t.to_string() }).collect()
    };
    let _ = writeln!(s, "\n== {} : {}", suite.name(), suite.about());
    // A floor of operations (tiny test runs) is named; full runs have none.
    let min_ops = match opts.min_ops {
        0 => String::new(),
        n => format!(" min_ops={n}"),
    };
    let _ = writeln!(
        s,
        "   rounds={} (median) duration={}ms{min_ops} quick={} threads={} baseline={}",
        opts.rounds.max(1),
        opts.duration.as_millis(),
        opts.quick,
        threads.join(","),
        suite.baseline()
    );
    // The block the records carry (the run's); this process's for records without one.
    let run_info = records.iter().find_map(|r| r.machine.clone()).unwrap_or_else(RunInfo::current);
    let _ = writeln!(s, "   machine: {run_info}");
    let _ = writeln!(
        s,
        "   (* = oversubscribed: more threads than cores; robustness view, not scaling)"
    );
    for ceiling in suite.ceilings() {
        let _ = writeln!(
            s,
            "   ({} = {}: a bound for every variant, left out of \"vs best\")",
            ceiling.name, ceiling.leaves_out
        );
    }
    let xfer = |r: &Record| r.extra.get(LINE_TRANSFER_NS).and_then(Value::as_f64);
    let probed = records.iter().any(|r| xfer(r).is_some());
    if probed {
        let _ = writeln!(
            s,
            "   (xfer ns = one cache line moved between two cores, probed after each case of 2+ \
             threads: what every shared line cost as it ran; see docs/BENCH.md)"
        );
    }
    for (k, header) in suite.table_extras() {
        if records.iter().any(|r| r.extra.contains_key(*k)) {
            let _ = writeln!(s, "   ({header} = the JSON field {k}; see the suite's docs)");
        }
    }
    let mut groups: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in records {
        let key = Value::Object(r.params.clone()).to_string();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    for (params, mut rows) in groups {
        rows.sort_by_key(|r| r.threads); // stable: keeps variant order within a thread count
        let _ = writeln!(s, "\n   params {params}");
        if let Measure::Extras(keys) = suite.measure() {
            extras_block(&mut s, keys, &rows);
            continue;
        }
        let _ = write!(
            s,
            "   {:<14} {:>4} {:>10} {:>10} {:>9} {:>9} {:>9} {:>8} {:>8}",
            "variant", "thr", "ops/s", "ns/op", "p50 ns", "p99 ns", "p999 ns", "vs base", "vs best"
        );
        let spread = rows.iter().any(|r| rate_range(r).is_some());
        if spread {
            let _ = write!(s, " {:>15}", "ops/s min–max");
        }
        if probed {
            let _ = write!(s, " {:>8}", "xfer ns");
        }
        let extras: Vec<(&str, &str)> = suite
            .table_extras()
            .iter()
            .copied()
            .filter(|(k, _)| rows.iter().any(|r| r.extra.contains_key(*k)))
            .collect();
        for (_, header) in &extras {
            let _ = write!(s, " {header:>w$}", w = header.len().max(8));
        }
        s.push('\n');
        let mut last_threads = None;
        for r in rows {
            if last_threads.is_some_and(|t| t != r.threads) {
                s.push('\n');
            }
            last_threads = Some(r.threads);
            let thr =
                if r.oversubscribed { format!("{}*", r.threads) } else { r.threads.to_string() };
            let _ = write!(
                s,
                "   {:<14} {:>4} {:>10} {:>10} {:>9} {:>9} {:>9} {:>8} {:>8}",
                r.variant,
                thr,
                human(r.ops_per_sec),
                r.ns_per_op.map_or_else(|| "-".to_owned(), |n| format!("{n:.1}")),
                opt(r.p50_ns),
                opt(r.p99_ns),
                opt(r.p999_ns),
                opt_ratio(r.ratio_vs_baseline),
                opt_ratio(r.ratio_vs_best_other),
            );
            if spread {
                let _ = write!(s, " {:>15}", rate_range(r).unwrap_or_else(|| "-".to_owned()));
            }
            if probed {
                let _ = write!(s, " {:>8}", xfer_cell(r));
            }
            for (k, header) in &extras {
                let cell = r.extra.get(*k).and_then(Value::as_f64);
                let cell = cell.map_or_else(|| "-".to_owned(), |v| value_with_unit(k, v));
                let _ = write!(s, " {cell:>w$}", w = header.len().max(8));
            }
            s.push('\n');
        }
    }
    s
}

/// The `xfer ns` cell: the probe's median over rounds, or its range (`min-max`) when the
/// largest is more than twice the smallest (rounds at different vCPU placements).
fn xfer_cell(r: &Record) -> String {
    let get = |k: &str| r.extra.get(k).and_then(Value::as_f64);
    match (get(LINE_TRANSFER_NS), get(LINE_TRANSFER_MIN_NS), get(LINE_TRANSFER_MAX_NS)) {
        (Some(_), Some(min), Some(max)) if max > 2.0 * min => format!("{min:.0}-{max:.0}"),
        (Some(median), ..) => format!("{median:.0}"),
        (None, ..) => "-".to_owned(),
    }
}

/// A block of a [`Measure::Extras`] suite: the listed extra fields instead of ops/s.
fn extras_block(s: &mut String, keys: &[&str], rows: &[&Record]) {
    let _ = write!(s, "   {:<14} {:>4}", "variant", "thr");
    for k in keys {
        let _ = write!(s, " {k:>w$}", w = k.len().max(10));
    }
    s.push('\n');
    for r in rows {
        let thr = if r.oversubscribed { format!("{}*", r.threads) } else { r.threads.to_string() };
        let _ = write!(s, "   {:<14} {:>4}", r.variant, thr);
        for k in keys {
            let cell = match r.extra.get(*k) {
                Some(Value::Number(n)) if n.is_f64() => format!("{:.1}", n.as_f64().unwrap_or(0.0)),
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::String(t)) => t.clone(),
                _ => "-".to_owned(),
            };
            let _ = write!(s, " {cell:>w$}", w = k.len().max(10));
        }
        s.push('\n');
    }
}

fn opt(x: Option<u64>) -> String {
    x.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// A ratio as [`ratio`] prints it (`0.0042x`, never `4e-3x`), `-` without one.
fn opt_ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), ratio)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_probe(probe: &[(&str, f64)]) -> Record {
        Record {
            ns_per_op: Some(1e9),
            rounds: 3,
            duration_ms: 5,
            extra: probe.iter().map(|&(k, v)| (k.to_owned(), Value::from(v))).collect(),
            ..Record::for_test("v", 2, 1.0)
        }
    }

    #[test]
    fn the_xfer_cell_shows_the_range_only_when_rounds_ran_at_different_prices() {
        let probe = |median, min, max| {
            with_probe(&[
                (LINE_TRANSFER_NS, median),
                (LINE_TRANSFER_MIN_NS, min),
                (LINE_TRANSFER_MAX_NS, max),
            ])
        };
        assert_eq!(xfer_cell(&probe(26.0, 24.0, 31.0)), "26");
        assert_eq!(xfer_cell(&probe(188.0, 25.0, 201.0)), "25-201");
        assert_eq!(xfer_cell(&with_probe(&[(LINE_TRANSFER_NS, 40.0)])), "40");
        assert_eq!(xfer_cell(&with_probe(&[])), "-");
    }
}
