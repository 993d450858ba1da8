use super::*;
use crate::harness::RunInfo;
use crate::seeds::claims::{Band, Claim, Row, SeedNumber};

/// A record of `variant` at `threads` with a rate spanning `lo..=hi` over its rounds.
fn rec(variant: &str, threads: usize, pct: u64, (lo, ops, hi): (f64, f64, f64)) -> Record {
    let mut r = Record::for_test(variant, threads, ops);
    r.params.insert("pct".into(), pct.into());
    r.ops_per_sec_min = Some(lo);
    r.ops_per_sec_max = Some(hi);
    r
}

const A: Side = Side {
    variants: &["a"],
    pick: Pick::Min,
    params: &[("pct", "20")],
    at: At::Cores,
    metric: Metric::OpsPerSec,
};
const B: Side = Side { variants: &["b"], ..A };

fn claim(rule: Rule, seed: Option<SeedNumber>, test: Test) -> Claim {
    Claim {
        suite: "s",
        figure: "Fig. 1",
        quote: "a beats b four times",
        gist: "a beats b",
        row: Row::Seed,
        seed,
        band: Some(Band { test, reason: "ours" }),
        rule,
    }
}

const FOUR: Option<SeedNumber> =
    Some(SeedNumber::Stated { written: "four", test: Test::AtLeast(4.0) });

fn judge(records: &[Record]) -> Verdict {
    verdict(&claim(Rule::Ratio(A.over_for_test(B)), FOUR, Test::Above(1.0)), Some(records))
}

impl Side {
    fn over_for_test(self, den: Side) -> Ratio {
        Ratio { num: self, den }
    }
}

/// The ratio is read at the most threads within the cores, and every verdict word follows
/// the table of the module docs: the seed's number and our band, over the rounds' span.
#[test]
fn verdicts_follow_the_span_of_the_rounds() {
    let with = |a: (f64, f64, f64), b: (f64, f64, f64)| {
        vec![
            rec("a", 1, 20, (10.0, 10.0, 10.0)),
            rec("b", 1, 20, (1.0, 1.0, 1.0)),
            rec("a", 2, 20, a),
            rec("b", 2, 20, b),
            rec("a", 8, 20, (1.0, 1.0, 1.0)),
            rec("b", 8, 20, (9.0, 9.0, 9.0)),
            rec("a", 2, 0, (1.0, 1.0, 1.0)),
            rec("b", 2, 0, (9.0, 9.0, 9.0)),
        ]
    };
    // 9 / 2 = 4.5x, and even the slowest rounds give 8 / 2 = 4x: reproduced.
    let v = judge(&with((8.0, 9.0, 9.5), (1.9, 2.0, 2.0)));
    assert_eq!(v.outcome, Outcome::Reproduced, "{}", v.line);
    assert!(
        v.line.contains("a [pct=20] / b [pct=20] at 2 thr = 4.50x (rounds 4.00x–5.00x)"),
        "{}",
        v.line
    );
    // The median passes the seed's 4x, the slowest rounds do not: magnitude inconclusive.
    let v = judge(&with((7.0, 9.0, 9.5), (1.9, 2.0, 2.0)));
    assert_eq!(v.outcome, Outcome::MagnitudeInconclusive, "{}", v.line);
    // Ahead at every round, never 4x: the direction only.
    let v = judge(&with((2.9, 3.0, 3.1), (1.9, 2.0, 2.1)));
    assert_eq!(v.outcome, Outcome::Direction, "{}", v.line);
    assert!(v.line.contains("seed's >= 4.00x: fails at every round"), "{}", v.line);
    // The median leads, a slow round of a and a fast one of b do not: inconclusive.
    let v = judge(&with((1.5, 2.5, 2.6), (1.9, 2.0, 2.1)));
    assert_eq!(v.outcome, Outcome::Inconclusive, "{}", v.line);
    // Behind at every round: differs.
    let v = judge(&with((0.9, 1.0, 1.1), (1.9, 2.0, 2.1)));
    assert_eq!(v.outcome, Outcome::Differs, "{}", v.line);
    // Parity is not a lead.
    let v = judge(&with((2.0, 2.0, 2.0), (2.0, 2.0, 2.0)));
    assert_eq!(v.outcome, Outcome::Differs, "{}", v.line);
    assert_eq!(judge(&[]).outcome, Outcome::NoData);
    let c = claim(Rule::Ratio(A.over_for_test(B)), FOUR, Test::Above(1.0));
    assert_eq!(verdict(&c, None).outcome, Outcome::NotRun);
}

/// The worst of several variants against the best of others; groups of unpinned params
/// each give a value, and the worst value decides.
#[test]
fn sets_pick_the_worst_and_the_best() {
    let servers = Side { variants: &["s1", "s2"], pick: Pick::Min, params: &[], ..A };
    let clients = Side { variants: &["c1", "c2"], pick: Pick::Max, params: &[], ..A };
    let rule = Rule::Ratio(servers.over_for_test(clients));
    let c = claim(rule, None, Test::Above(1.0));
    let rs = |s1: f64, s2: f64, c1: f64, c2: f64, pct: u64| {
        [("s1", s1), ("s2", s2), ("c1", c1), ("c2", c2)]
            .map(|(v, x)| rec(v, 2, pct, (x, x, x)))
            .to_vec()
    };
    let mut records = rs(5.0, 3.0, 2.0, 2.5, 0);
    let v = verdict(&c, Some(&records));
    assert_eq!(v.outcome, Outcome::Reproduced, "{}", v.line);
    assert!((v.measured[0].span.median - 1.2).abs() < 1e-9, "3 / 2.5: {:?}", v.measured);
    records.extend(rs(5.0, 3.0, 2.0, 3.5, 20));
    let v = verdict(&c, Some(&records));
    assert_eq!(v.measured.len(), 2, "one value per pct: {:?}", v.measured);
    assert!(v.measured.iter().any(|m| m.at.contains("pct=20")), "{:?}", v.measured);
    assert_eq!(v.outcome, Outcome::Differs, "at 20 % the best client wins: {}", v.line);
}

/// A contrast divides two ratios; steps take each consecutive pair; a spread is the
/// largest over the smallest; a peak the best inside over the best outside.
#[test]
fn shapes_are_measured_point_by_point() {
    let h = |height: u64, ops: f64| {
        let mut r = rec("a", 2, 20, (ops, ops, ops));
        r.params.insert("height".into(), height.into());
        r
    };
    let records = [h(4, 10.0), h(6, 12.0), h(8, 11.0), h(10, 13.0)];
    let side = Side { params: &[], ..A };
    let steps = Rule::Steps { side, over: Over::Param("height"), points: &["4", "6", "8", "10"] };
    let v = verdict(&claim(steps, None, Test::Above(1.0)), Some(&records));
    assert_eq!(v.measured.len(), 3, "{:?}", v.measured);
    assert_eq!(v.outcome, Outcome::Differs, "8 falls below 6: {}", v.line);
    let spread = Rule::Spread { side, over: Over::Param("height"), points: &["4", "6", "8", "10"] };
    let v = verdict(&claim(spread, None, Test::AtMost(1.1)), Some(&records));
    assert!((v.measured[0].span.median - 1.3).abs() < 1e-9, "{:?}", v.measured);
    assert_eq!(v.outcome, Outcome::Differs, "{}", v.line);
    let peak = Rule::Peak {
        side,
        over: Over::Param("height"),
        points: &["4", "6", "8", "10"],
        inside: &["6", "8"],
    };
    let v = verdict(&claim(peak, None, Test::Above(1.0)), Some(&records));
    assert!((v.measured[0].span.median - 12.0 / 13.0).abs() < 1e-9, "{:?}", v.measured);
    let first = Ratio {
        num: Side { params: &[("height", "10")], ..A },
        den: Side { params: &[("height", "4")], ..A },
    };
    let second = Ratio {
        num: Side { params: &[("height", "8")], ..A },
        den: Side { params: &[("height", "6")], ..A },
    };
    let mut rs = records.to_vec();
    for r in &mut rs {
        r.params.insert("pct".into(), 20.into());
    }
    let v = verdict(&claim(Rule::Contrast { first, second }, None, Test::Above(1.0)), Some(&rs));
    let want = (13.0 / 10.0) / (11.0 / 12.0);
    assert!((v.measured[0].span.median - want).abs() < 1e-9, "{:?}", v.measured);
    assert_eq!(v.outcome, Outcome::Reproduced, "{}", v.line);
}

/// Latency ratios use each round's percentiles for their span.
#[test]
fn latency_spans_come_from_the_rounds_percentiles() {
    let lat = |v: &str, p50: u64, lo: u64, hi: u64| {
        let mut r = rec(v, 1, 20, (1.0, 1.0, 1.0));
        r.p50_ns = Some(p50);
        r.p50_ns_min = Some(lo);
        r.p50_ns_max = Some(hi);
        r
    };
    let p50 = |s: Side| Side { metric: Metric::P50, ..s };
    let seed = Some(SeedNumber::Derived { num: "2.74", den: "3.52", at_least: false });
    let c = claim(Rule::Ratio(p50(A).over_for_test(p50(B))), seed, Test::Below(1.0));
    let v = verdict(&c, Some(&[lat("a", 70, 65, 72), lat("b", 100, 95, 105)]));
    assert_eq!(v.outcome, Outcome::Reproduced, "{}", v.line);
    let v = verdict(&c, Some(&[lat("a", 90, 85, 110), lat("b", 100, 95, 105)]));
    assert_eq!(v.outcome, Outcome::Inconclusive, "{}", v.line);
}

/// "Not testable here" names the fact of the records that rules the claim out.
#[test]
fn untestable_claims_say_what_the_records_lack() {
    let mut r = rec("a", 2, 20, (1.0, 1.0, 1.0));
    r.machine = Some(RunInfo { cores: 2, ..RunInfo::current() });
    let c = claim(Rule::NotTestable(Needs::Cores(25)), None, Test::Above(1.0));
    let v = verdict(&c, Some(std::slice::from_ref(&r)));
    assert_eq!(v.outcome, Outcome::NotTestable);
    assert!(v.line.contains("needs at least 25 threads") && v.line.contains("has 2"), "{}", v.line);
    r.extra.insert("hardware_counters".into(), 0.into());
    r.extra.insert("hardware_counters_why".into(), "perf: not supported".into());
    let c = claim(Rule::NotTestable(Needs::HardwareCounters), None, Test::Above(1.0));
    let v = verdict(&c, Some(std::slice::from_ref(&r)));
    assert_eq!(v.outcome, Outcome::NotTestable);
    assert!(v.line.contains("(perf: not supported)"), "{}", v.line);
    let c = claim(Rule::NotCovered("a hypothesis"), None, Test::Above(1.0));
    assert_eq!(verdict(&c, Some(&[])).outcome, Outcome::NotCovered);
}

#[test]
fn ratios_print_as_plain_decimals() {
    assert_eq!(fmt_ratio(0.095), "0.095x");
    assert_eq!(fmt_ratio(0.0012), "0.0012x");
    assert_eq!(fmt_ratio(0.78), "0.78x");
    assert_eq!(fmt_ratio(4.0), "4.00x");
    assert_eq!(fmt_ratio(12.3), "12.3x");
    assert_eq!(fmt_ratio(286.0), "286x");
}

#[test]
fn params_match_numerically() {
    assert!(value_is(&Value::from(0.0001), "1e-4"));
    assert!(value_is(&Value::from(16384), "16384"));
    assert!(!value_is(&Value::from(1), "10"));
    assert!(value_is(&Value::from("shared"), "shared"));
}
