//! Turning a [`Claim`]'s checks and a suite's records into a [`Verdict`].

use serde_json::Value;

use super::claims::{At, Check, Claim, Expect, Metric, Sel};
use crate::harness::Record;

/// How a claim fared, from best to worst (a claim takes the worst of its checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Every check holds at the seed's magnitude.
    Reproduced,
    /// Every check points the seed's way, some at a smaller magnitude.
    Direction,
    /// Some check points the other way (or falls outside the seed's band).
    Differs,
    /// The claim has no computed check: its verdict is the registry's text.
    Stated,
    /// The suite ran, but no record matches a check (e.g. a point a quick run leaves out).
    NoData,
    /// The suite's JSON is missing: not run.
    NotRun,
}

impl Outcome {
    /// The one-word label shown in the report.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::Direction => "direction reproduced, magnitude differs",
            Outcome::Differs => "differs",
            Outcome::Stated => "not computed",
            Outcome::NoData => "no data in this run",
            Outcome::NotRun => "not run",
        }
    }

    /// A CSS class for the HTML badge.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Reproduced => "ok",
            Outcome::Direction => "partly",
            Outcome::Differs => "differs",
            Outcome::Stated | Outcome::NoData | Outcome::NotRun => "none",
        }
    }
}

/// A claim's verdict: the outcome and one line saying what was measured and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Overall outcome.
    pub outcome: Outcome,
    /// `reproduced: a / b = 1.3x at 2 thr (seed 4x); ...` and, unless reproduced, the why.
    pub line: String,
}

/// The verdict of `claim` over `records`, the figure's records (`None`: the suite was not
/// run). Its measured reasons ([`Claim::because`]) are taken over `all` the suite's
/// records: a ceiling may lie outside the figure (e.g. the same array without the delay).
pub fn verdict(claim: &Claim, records: Option<&[Record]>, all: &[Record]) -> Verdict {
    let Some(records) = records else {
        return Verdict {
            outcome: Outcome::NotRun,
            line: format!("not run: no {}.json in the report directory", claim.suite),
        };
    };
    if claim.checks.is_empty() {
        let line = format!("{}{}", claim.why, measured(claim, all));
        return Verdict { outcome: Outcome::Stated, line };
    }
    let mut parts = Vec::new();
    let mut worst: Option<Outcome> = None;
    for check in claim.checks {
        let (outcome, text) = evaluate(check, records);
        parts.push(text);
        if outcome != Outcome::NoData {
            worst = Some(worst.map_or(outcome, |w| w.max(outcome)));
        }
    }
    let outcome = worst.unwrap_or(Outcome::NoData);
    let mut line = format!("{}: {}", outcome.label(), parts.join("; "));
    if matches!(outcome, Outcome::Direction | Outcome::Differs) && !claim.why.is_empty() {
        line.push_str(&format!(". Why: {}{}", claim.why, measured(claim, all)));
    }
    Verdict { outcome, line }
}

/// The claim's measured reasons ([`Claim::because`]) over the same records:
/// `. Measured: c / d = 1.10x at 2 thr (the seed's ratio needs >= 2.00x)` (no "needs"
/// for an [`Expect::Reference`]), or nothing.
fn measured(claim: &Claim, records: &[Record]) -> String {
    if claim.because.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = claim
        .because
        .iter()
        .map(|check| {
            let ratios = ratios(check, records);
            if ratios.is_empty() {
                return format!("{} = no matching records", check.label);
            }
            let values: Vec<String> =
                ratios.iter().map(|(r, at)| format!("{} at {at}", fmt(*r))).collect();
            let needs = match check.expect {
                Expect::AtLeast { seed, .. } => format!(">= {}", fmt(seed)),
                Expect::AtMost { seed, .. } => format!("<= {}", fmt(seed)),
                Expect::Within { lo, hi, .. } => format!("{}..{}", fmt(lo), fmt(hi)),
                Expect::Reference => return format!("{} = {}", check.label, values.join(", ")),
            };
            format!("{} = {} (the seed's ratio needs {needs})", check.label, values.join(", "))
        })
        .collect();
    format!(". Measured: {}", parts.join("; "))
}

/// One check: its outcome and `label = 1.30x at 2 thr (seed 4x)`.
fn evaluate(check: &Check, records: &[Record]) -> (Outcome, String) {
    let ratios = ratios(check, records);
    if ratios.is_empty() {
        return (Outcome::NoData, format!("{} = no matching records", check.label));
    }
    let outcome = ratios.iter().map(|&(r, _)| judge(check.expect, r)).max().expect("non-empty");
    let values: Vec<String> = ratios.iter().map(|(r, at)| format!("{} at {at}", fmt(*r))).collect();
    let seed = match check.expect {
        Expect::AtLeast { seed, .. } | Expect::AtMost { seed, .. } => fmt(seed),
        Expect::Within { seed, lo, hi } => format!("{}, band {}..{}", fmt(seed), fmt(lo), fmt(hi)),
        Expect::Reference => "none".to_owned(),
    };
    (outcome, format!("{} = {} (seed {seed})", check.label, values.join(", ")))
}

fn judge(expect: Expect, r: f64) -> Outcome {
    match expect {
        Expect::AtLeast { seed, .. } if r >= seed => Outcome::Reproduced,
        Expect::AtLeast { direction, .. } if r >= direction => Outcome::Direction,
        Expect::AtMost { seed, .. } if r <= seed => Outcome::Reproduced,
        Expect::AtMost { direction, .. } if r <= direction => Outcome::Direction,
        Expect::Within { lo, hi, .. } if (lo..=hi).contains(&r) => Outcome::Reproduced,
        Expect::Reference => Outcome::Reproduced,
        _ => Outcome::Differs,
    }
}

fn fmt(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}x")
    } else if r >= 0.1 {
        format!("{r:.2}x")
    } else {
        format!("{r:.1e}x")
    }
}

/// The check's ratios with where each was taken (`2 thr`, plus the pairing params when
/// several groups match), at the thread count its [`At`] picks.
fn ratios(check: &Check, records: &[Record]) -> Vec<(f64, String)> {
    let strip: Vec<&str> =
        check.num.params.iter().chain(check.den.params).map(|(k, _)| *k).collect();
    let by_variant = check.num.variant.is_none() && check.den.variant.is_none();
    let key = |r: &Record| {
        let mut p = r.params.clone();
        for k in &strip {
            p.remove(*k);
        }
        let v = if by_variant { r.variant.clone() } else { String::new() };
        (r.threads, r.oversubscribed, Value::Object(p).to_string(), v)
    };
    let mut pairs: Vec<(&Record, &Record)> = Vec::new();
    for n in records.iter().filter(|r| matches(&check.num, r)) {
        if let Some(d) = records.iter().find(|d| matches(&check.den, d) && key(d) == key(n)) {
            pairs.push((n, d));
        }
    }
    let threads = match check.at {
        At::Cores => pairs
            .iter()
            .filter(|(n, _)| !n.oversubscribed)
            .map(|(n, _)| n.threads)
            .max()
            .or_else(|| pairs.iter().map(|(n, _)| n.threads).max()),
        At::Most => pairs.iter().map(|(n, _)| n.threads).max(),
    };
    let Some(threads) = threads else { return Vec::new() };
    let chosen: Vec<_> = pairs.into_iter().filter(|(n, _)| n.threads == threads).collect();
    let chosen_len = chosen.len();
    // Where several groups match, name them by the params that tell them apart.
    let differ: Vec<String> = match chosen.first() {
        Some((first, _)) if chosen.len() > 1 => first
            .params
            .keys()
            .filter(|k| chosen.iter().any(|(n, _)| n.params.get(*k) != first.params.get(*k)))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    chosen
        .into_iter()
        .filter_map(|(n, d)| {
            let (a, b) = (metric(check.metric, n)?, metric(check.metric, d)?);
            let r = (b > 0.0).then(|| a / b)?;
            let star = if n.oversubscribed { "*" } else { "" };
            let mut at = format!("{threads}{star} thr");
            for k in &differ {
                let value = n.params.get(k).map_or_else(String::new, Value::to_string);
                at.push_str(&format!(" {k}={value}"));
            }
            if by_variant && differ.is_empty() && chosen_len > 1 {
                at.push_str(&format!(" {}", n.variant));
            }
            Some((r, at))
        })
        .collect()
}

fn metric(m: Metric, r: &Record) -> Option<f64> {
    match m {
        Metric::OpsPerSec => Some(r.ops_per_sec).filter(|x| *x > 0.0),
        Metric::P50 => r.p50_ns.map(|x| x as f64),
        Metric::P99 => r.p99_ns.map(|x| x as f64),
        Metric::Extra(field) => r.extra.get(field)?.as_f64().filter(|x| x.is_finite()),
    }
}

/// Whether `r` is one of the records `sel` picks.
pub fn matches(sel: &Sel, r: &Record) -> bool {
    sel.variant.is_none_or(|v| v == r.variant)
        && sel.params.iter().all(|(k, want)| r.params.get(*k).is_some_and(|v| value_is(v, want)))
}

/// Whether a JSON param equals `want`: strings literally, numbers numerically, booleans
/// as `true`/`false`.
pub fn value_is(v: &Value, want: &str) -> bool {
    match v {
        Value::String(s) => s == want,
        Value::Number(n) => match (n.as_f64(), want.parse::<f64>()) {
            (Some(a), Ok(b)) => a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
            _ => false,
        },
        Value::Bool(b) => want.parse::<bool>() == Ok(*b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeds::claims::Seed;

    fn rec(variant: &str, threads: usize, pct: u64, ops: f64) -> Record {
        let mut r = Record::for_test(variant, threads, ops);
        r.params.insert("pct".into(), pct.into());
        r
    }

    const CHECK: Check = Check {
        label: "a / b",
        num: Sel { variant: Some("a"), params: &[("pct", "20")] },
        den: Sel { variant: Some("b"), params: &[("pct", "20")] },
        metric: Metric::OpsPerSec,
        at: At::Cores,
        expect: Expect::AtLeast { seed: 4.0, direction: 1.0 },
    };

    fn claim(checks: &'static [Check]) -> Claim {
        Claim {
            suite: "s",
            figure: "Fig. 1",
            seed: Seed::RangeThesis,
            claim: "a beats b 4x",
            show: &[],
            checks,
            because: &[],
            why: "2 cores",
        }
    }

    #[test]
    fn ratios_are_taken_at_the_most_threads_within_the_cores() {
        let records = [
            rec("a", 1, 20, 10.0),
            rec("b", 1, 20, 1.0),
            rec("a", 2, 20, 3.0),
            rec("b", 2, 20, 2.0),
            rec("a", 8, 20, 1.0),
            rec("b", 8, 20, 9.0),
            rec("a", 2, 0, 1.0),
            rec("b", 2, 0, 9.0),
        ];
        let v = verdict(&claim(&[CHECK]), Some(&records), &records);
        assert_eq!(v.outcome, Outcome::Direction, "{v:?}");
        assert!(v.line.contains("a / b = 1.50x at 2 thr (seed 4.00x)"), "{}", v.line);
        assert!(v.line.ends_with("Why: 2 cores"), "{}", v.line);
        let flipped = [rec("a", 2, 20, 1.0), rec("b", 2, 20, 2.0)];
        assert_eq!(verdict(&claim(&[CHECK]), Some(&flipped), &flipped).outcome, Outcome::Differs);
        let strong = [rec("a", 2, 20, 9.0), rec("b", 2, 20, 2.0)];
        assert_eq!(verdict(&claim(&[CHECK]), Some(&strong), &strong).outcome, Outcome::Reproduced);
        assert_eq!(verdict(&claim(&[CHECK]), Some(&[]), &[]).outcome, Outcome::NoData);
        assert_eq!(verdict(&claim(&[CHECK]), None, &[]).outcome, Outcome::NotRun);
        assert_eq!(verdict(&claim(&[]), Some(&strong), &strong).outcome, Outcome::Stated);
    }

    /// A measured reason is printed with its ratio from the same records, after the why.
    #[test]
    fn measured_reasons_follow_the_why() {
        const CEILING: Check = Check {
            label: "c / b",
            num: Sel { variant: Some("c"), params: &[("pct", "20")] },
            ..CHECK
        };
        let with_reason = Claim { because: &[CEILING], ..claim(&[CHECK]) };
        let records = [rec("a", 2, 20, 3.0), rec("b", 2, 20, 2.0), rec("c", 2, 20, 2.4)];
        let v = verdict(&with_reason, Some(&records), &records);
        assert!(
            v.line.ends_with(
                "Why: 2 cores. Measured: c / b = 1.20x at 2 thr (the seed's ratio needs >= 4.00x)"
            ),
            "{}",
            v.line
        );
        let strong = [rec("a", 2, 20, 9.0), rec("b", 2, 20, 2.0), rec("c", 2, 20, 9.0)];
        let v = verdict(&with_reason, Some(&strong), &strong);
        assert!(!v.line.contains("Measured"), "a reproduced claim needs no reason: {}", v.line);
    }

    /// A counting suite's ratio divides the named extra field, not ops/s (which is 0).
    #[test]
    fn extra_fields_are_divided_by_name() {
        const COUNT: Check = Check {
            label: "a / b instructions",
            metric: Metric::Extra("instructions_per_txn"),
            expect: Expect::Within { seed: 1.0, lo: 0.9, hi: 1.1 },
            ..CHECK
        };
        let counted = |variant, n: f64| {
            let mut r = rec(variant, 1, 20, 0.0);
            r.extra.insert("instructions_per_txn".into(), n.into());
            r
        };
        let records = [counted("a", 1050.0), counted("b", 1000.0)];
        let v = verdict(&claim(&[COUNT]), Some(&records), &records);
        assert_eq!(v.outcome, Outcome::Reproduced, "{v:?}");
        assert!(v.line.contains("a / b instructions = 1.05x at 1 thr"), "{}", v.line);
        let far = [counted("a", 2000.0), counted("b", 1000.0)];
        assert_eq!(verdict(&claim(&[COUNT]), Some(&far), &far).outcome, Outcome::Differs);
        let none = [rec("a", 1, 20, 5.0), rec("b", 1, 20, 5.0)];
        assert_eq!(verdict(&claim(&[COUNT]), Some(&none), &none).outcome, Outcome::NoData);
    }

    #[test]
    fn params_match_numerically() {
        assert!(value_is(&Value::from(0.0001), "1e-4"));
        assert!(value_is(&Value::from(16384), "16384"));
        assert!(!value_is(&Value::from(1), "10"));
        assert!(value_is(&Value::from("shared"), "shared"));
    }
}
