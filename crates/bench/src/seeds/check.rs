//! Judging a [`Claim`] against a suite's records: values with the spread of their rounds,
//! tests at the extremes, and the verdict's words.
//!
//! Every value a rule measures is a [`Span`]: the ratio of the medians, and how far the
//! rounds let it move. A record's rate spans its slowest to its fastest round
//! (`ops_per_sec_min..=ops_per_sec_max`; for latencies `p50_ns_min..=p50_ns_max`), so a
//! ratio `a / b` spans `a_min / b_max ..= a_max / b_min`, and a ratio of ratios composes
//! the same way. A test ([`Test`]) *passes* when it holds over the whole span, *fails*
//! when it fails over the whole span, and is *undecided* when the span straddles it.
//!
//! A claim's outcome, per measured value, then the worst of them:
//!
//! | our band (direction) | the seed's number | outcome |
//! |---|---|---|
//! | passes | passes, or the seed states none | reproduced |
//! | passes | undecided | direction reproduced, magnitude inconclusive |
//! | passes | fails | direction reproduced, magnitude differs |
//! | undecided | — | inconclusive |
//! | fails | — | differs |
//!
//! A claim this machine cannot test reads "not testable here" with the fact from the
//! records that rules it out (their machine's cores, or that hardware counters could not
//! be read); a claim no suite measures reads "not covered" with why.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{Map, Value};

use super::claims::{At, Claim, Metric, Needs, Over, Pick, Ratio, Rule, Side, Test};
use crate::harness::Record;

/// How a claim fared, from best to worst (a claim takes the worst of its values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Our band and the seed's number (if any) hold over the whole span of the rounds.
    Reproduced,
    /// Our band holds; the rounds straddle the seed's number.
    MagnitudeInconclusive,
    /// Our band holds; the seed's number is missed over the whole span.
    Direction,
    /// The rounds straddle our band.
    Inconclusive,
    /// Our band fails over the whole span.
    Differs,
    /// This machine cannot test the claim (the line says which fact of the records).
    NotTestable,
    /// No suite measures the claim.
    NotCovered,
    /// The suite ran, but no record matches (a point a quick run leaves out).
    NoData,
    /// The suite's JSON is missing.
    NotRun,
}

impl Outcome {
    /// The words shown in the report.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::MagnitudeInconclusive => "direction reproduced, magnitude inconclusive",
            Outcome::Direction => "direction reproduced, magnitude differs",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Differs => "differs",
            Outcome::NotTestable => "not testable here",
            Outcome::NotCovered => "not covered",
            Outcome::NoData => "no data in this run",
            Outcome::NotRun => "not run",
        }
    }

    /// A CSS class for the HTML badge.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Reproduced => "ok",
            Outcome::MagnitudeInconclusive | Outcome::Direction => "partly",
            Outcome::Inconclusive => "unsure",
            Outcome::Differs => "differs",
            Outcome::NotTestable | Outcome::NotCovered | Outcome::NoData | Outcome::NotRun => {
                "none"
            }
        }
    }

    /// Whether a rule was judged against numbers (the outcomes of [`Outcome::Reproduced`]
    /// through [`Outcome::Differs`]).
    pub fn judged(self) -> bool {
        self <= Outcome::Differs
    }
}

/// A value with the spread its rounds allow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// From the medians.
    pub median: f64,
    /// The low end over the rounds.
    pub lo: f64,
    /// The high end over the rounds.
    pub hi: f64,
}

impl Span {
    fn point(x: f64) -> Span {
        Span { median: x, lo: x, hi: x }
    }

    /// `self / other`: the medians' ratio, and the extremes (`lo / other.hi`,
    /// `hi / other.lo`). `None` when a divisor can be 0.
    fn div(self, other: Span) -> Option<Span> {
        (other.lo > 0.0 && other.median > 0.0).then(|| Span {
            median: self.median / other.median,
            lo: self.lo / other.hi,
            hi: self.hi / other.lo,
        })
    }
}

/// One measured value of a rule: what it is, where it was read, and its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// `rangelock-list / kogan-list`.
    pub label: String,
    /// `2 thr`, `64 thr exclusive_pct=20`, ...
    pub at: String,
    /// The value.
    pub span: Span,
    /// A ratio (printed with `x`) or a plain value.
    pub ratio: bool,
}

impl Measured {
    /// `label at 2 thr = 0.71x (rounds 0.66x–0.76x)`.
    pub fn text(&self) -> String {
        let f = |x| if self.ratio { fmt_ratio(x) } else { fmt_value(x) };
        let spread = if self.span.lo == self.span.hi {
            String::new()
        } else {
            format!(" (rounds {}–{})", f(self.span.lo), f(self.span.hi))
        };
        format!("{} at {} = {}{spread}", self.label, self.at, f(self.span.median))
    }
}

/// A claim's verdict: its outcome, the values it rests on, and one line saying so.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The outcome.
    pub outcome: Outcome,
    /// The measured values (none for a claim not tested here).
    pub measured: Vec<Measured>,
    /// Each value with the tests and how they came out, or why the claim was not tested.
    pub line: String,
}

/// Three-valued result of a test on a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tri {
    Pass,
    Undecided,
    Fail,
}

fn test(t: Test, s: Span) -> Tri {
    let (pass, fail) = match t {
        Test::AtLeast(x) => (s.lo >= x, s.hi < x),
        Test::Above(x) => (s.lo > x, s.hi <= x),
        Test::AtMost(x) => (s.hi <= x, s.lo > x),
        Test::Below(x) => (s.hi < x, s.lo >= x),
        Test::Within(a, b) => (s.lo > a && s.hi < b, s.hi <= a || s.lo >= b),
    };
    if pass {
        Tri::Pass
    } else if fail {
        Tri::Fail
    } else {
        Tri::Undecided
    }
}

/// A test as printed: `>= 4x`, `> 1x`, `in (0.85x, 1x)`.
pub fn test_text(t: Test, ratio: bool) -> String {
    let f = |x| if ratio { fmt_ratio(x) } else { fmt_value(x) };
    match t {
        Test::AtLeast(x) => format!(">= {}", f(x)),
        Test::Above(x) => format!("> {}", f(x)),
        Test::AtMost(x) => format!("<= {}", f(x)),
        Test::Below(x) => format!("< {}", f(x)),
        Test::Within(a, b) => format!("in ({}, {})", f(a), f(b)),
    }
}

/// A ratio as a plain decimal with `x`: `12x`, `4.0x`... never an exponent (`0.095x`).
pub fn fmt_ratio(r: f64) -> String {
    format!("{}x", fmt_value(r))
}

/// A number as a plain decimal with about three significant digits.
pub fn fmt_value(r: f64) -> String {
    let a = r.abs();
    let s = if a == 0.0 || a >= 100.0 {
        format!("{r:.0}")
    } else if a >= 10.0 {
        format!("{r:.1}")
    } else if a >= 1.0 || a >= 0.1 {
        format!("{r:.2}")
    } else if a >= 0.01 {
        format!("{r:.3}")
    } else {
        format!("{r:.4}")
    };
    s
}

/// The verdict of `claim` over the records of its suite (`None`: the suite did not run).
pub fn verdict(claim: &Claim, records: Option<&[Record]>) -> Verdict {
    let Some(records) = records else {
        return Verdict {
            outcome: Outcome::NotRun,
            measured: Vec::new(),
            line: format!("not run: no {}.json in the report directory", claim.suite),
        };
    };
    match claim.rule {
        Rule::NotCovered(why) => {
            return Verdict {
                outcome: Outcome::NotCovered,
                measured: Vec::new(),
                line: format!("not covered: {why}"),
            }
        }
        Rule::NotTestable(needs) => return not_testable(needs, records),
        _ => {}
    }
    let measured = measure(&claim.rule, records);
    let Some(band) = claim.band else {
        return Verdict {
            outcome: Outcome::NoData,
            measured,
            line: "no band registered for a judged claim".to_owned(),
        };
    };
    if measured.is_empty() {
        return Verdict {
            outcome: Outcome::NoData,
            measured,
            line: format!("no data in this run: no records match ({})", describe(&claim.rule)),
        };
    }
    let seed = claim.seed.and_then(|s| s.test());
    let mut worst = Outcome::Reproduced;
    let mut parts = Vec::new();
    for m in &measured {
        let ours = test(band.test, m.span);
        let theirs = seed.map(|t| test(t, m.span));
        let outcome = match (ours, theirs) {
            (Tri::Fail, _) => Outcome::Differs,
            (Tri::Undecided, _) => Outcome::Inconclusive,
            (Tri::Pass, None | Some(Tri::Pass)) => Outcome::Reproduced,
            (Tri::Pass, Some(Tri::Undecided)) => Outcome::MagnitudeInconclusive,
            (Tri::Pass, Some(Tri::Fail)) => Outcome::Direction,
        };
        worst = worst.max(outcome);
        let mut text = m.text();
        let said = |tri| match tri {
            Tri::Pass => "holds",
            Tri::Undecided => "straddled by the rounds",
            Tri::Fail => "fails at every round",
        };
        if let (Some(t), Some(tri)) = (seed, theirs) {
            let _ = write!(text, "; seed's {}: {}", test_text(t, m.ratio), said(tri));
        }
        let _ = write!(text, "; ours {}: {}", test_text(band.test, m.ratio), said(ours));
        parts.push(text);
    }
    Verdict { outcome: worst, line: format!("{}: {}", worst.label(), parts.join(". ")), measured }
}

/// The measured context of a figure: each ratio's values over the records (never judged).
pub fn context(label: &str, ratio: &Ratio, records: &[Record]) -> Vec<Measured> {
    ratio_values(label, ratio, records)
}

fn not_testable(needs: Needs, records: &[Record]) -> Verdict {
    let untested = |outcome, line: String| Verdict { outcome, measured: Vec::new(), line };
    match needs {
        Needs::Cores(n) => {
            let cores = records.iter().filter_map(|r| r.machine.as_ref().map(|m| m.cores)).max();
            match cores {
                Some(c) if c < n => untested(
                    Outcome::NotTestable,
                    format!(
                        "not testable here: needs at least {n} threads running at once on as \
                         many cores; the records' machine has {c}"
                    ),
                ),
                Some(c) => untested(
                    Outcome::NotCovered,
                    format!("not covered: the records' machine has {c} cores, but no rule is registered"),
                ),
                None => untested(
                    Outcome::NotTestable,
                    format!(
                        "not testable here: needs at least {n} cores; the records do not say \
                         how many their machine had"
                    ),
                ),
            }
        }
        Needs::HardwareCounters => {
            let flags: Vec<f64> = records
                .iter()
                .filter_map(|r| r.extra.get("hardware_counters").and_then(Value::as_f64))
                .collect();
            let why: Vec<&str> = records
                .iter()
                .flat_map(|r| r.extra.iter())
                .filter(|(k, _)| k.starts_with("hardware_counters_"))
                .filter_map(|(_, v)| v.as_str())
                .collect();
            if flags.iter().any(|&f| f > 0.0) {
                untested(
                    Outcome::NotCovered,
                    "not covered: hardware counters were readable, but no rule is registered"
                        .to_owned(),
                )
            } else if flags.is_empty() {
                untested(
                    Outcome::NotTestable,
                    "not testable here: needs per-thread hardware counters (cycles, misses); \
                     the records do not say whether they could be read"
                        .to_owned(),
                )
            } else {
                let because = why.first().map(|w| format!(" ({w})")).unwrap_or_default();
                untested(
                    Outcome::NotTestable,
                    format!(
                        "not testable here: needs per-thread hardware counters (cycles, \
                         misses); the records' machine could not read them{because}"
                    ),
                )
            }
        }
    }
}

/// What a rule measures, in words (`rangelock bench claims`).
pub fn describe(rule: &Rule) -> String {
    let side = |s: &Side| side_text(s);
    match rule {
        Rule::Value(s) => format!("{}, {}", side(s), at_text(s.at)),
        Rule::Ratio(r) => ratio_text(r),
        Rule::Contrast { first, second } => {
            format!("({}) / ({})", ratio_text(first), ratio_text(second))
        }
        Rule::Steps { side: s, over, points } => format!(
            "each step of {} along {}: the value at a point over the one before",
            side(s),
            over_text(*over, points)
        ),
        Rule::Spread { side: s, over, points } => format!(
            "the largest over the smallest of {} along {}",
            side(s),
            over_text(*over, points)
        ),
        Rule::Peak { side: s, over, points, inside } => format!(
            "the best of {} at {} over its best at the other points of {}",
            side(s),
            inside.join(", "),
            over_text(*over, points)
        ),
        Rule::NotTestable(Needs::Cores(n)) => format!("not testable here: needs {n} cores"),
        Rule::NotTestable(Needs::HardwareCounters) => {
            "not testable here: needs hardware counters".to_owned()
        }
        Rule::NotCovered(why) => format!("not covered: {why}"),
    }
}

fn ratio_text(r: &Ratio) -> String {
    let at = if r.num.at == r.den.at {
        at_text(r.num.at)
    } else {
        format!("{} over {}", at_text(r.num.at), at_text(r.den.at))
    };
    format!("{} / {}, {at}", side_text(&r.num), side_text(&r.den))
}

fn side_text(s: &Side) -> String {
    let who = match s.variants {
        [one] => (*one).to_owned(),
        many => {
            let pick = match s.pick {
                Pick::Min => "the worst",
                Pick::Max => "the best",
            };
            format!("{pick} of {{{}}}", many.join(", "))
        }
    };
    let params: Vec<String> = s.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let params = if params.is_empty() { String::new() } else { format!(" [{}]", params.join(" ")) };
    format!("{who}{params} {}", metric_text(s.metric))
}

fn metric_text(m: Metric) -> String {
    match m {
        Metric::OpsPerSec => "ops/s".to_owned(),
        Metric::P50 => "p50".to_owned(),
        Metric::P99 => "p99".to_owned(),
        Metric::Extra(f) => f.to_owned(),
    }
}

fn at_text(at: At) -> String {
    match at {
        At::Cores => "at the most threads within the cores".to_owned(),
        At::Most => "at the most threads (clients) measured".to_owned(),
        At::Threads(1) => "at 1 thread (client)".to_owned(),
        At::Threads(n) => format!("at {n} threads (clients)"),
    }
}

fn over_text(over: Over, points: &[&str]) -> String {
    let what = match over {
        Over::Param(p) => p.to_owned(),
        Over::Threads => "threads".to_owned(),
        Over::Variants => "variants".to_owned(),
    };
    format!("{what} = {}", points.join(", "))
}

/// A side with its params and variants owned (a rule's points override them).
#[derive(Clone, Debug)]
struct Sel {
    variants: Vec<String>,
    pick: Pick,
    params: Vec<(String, String)>,
    at: At,
    metric: Metric,
}

impl Sel {
    fn of(s: &Side) -> Sel {
        Sel {
            variants: s.variants.iter().map(|v| (*v).to_owned()).collect(),
            pick: s.pick,
            params: s.params.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            at: s.at,
            metric: s.metric,
        }
    }

    /// The side at one point of `over`.
    fn at_point(&self, over: Over, point: &str) -> Sel {
        let mut s = self.clone();
        match over {
            Over::Param(p) => {
                s.params.retain(|(k, _)| k != p);
                s.params.push((p.to_owned(), point.to_owned()));
            }
            Over::Threads => s.at = At::Threads(point.parse().unwrap_or(0)),
            Over::Variants => s.variants = vec![point.to_owned()],
        }
        s
    }

    fn label(&self) -> String {
        let who = if self.variants.len() == 1 {
            self.variants[0].clone()
        } else {
            let pick = if self.pick == Pick::Min { "worst" } else { "best" };
            format!("{pick} of {}", self.variants.join("|"))
        };
        let mut extra: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if self.metric != Metric::OpsPerSec {
            extra.push(metric_text(self.metric));
        }
        if let At::Threads(n) = self.at {
            extra.push(format!("{n} thr"));
        }
        if extra.is_empty() {
            who
        } else {
            format!("{who} [{}]", extra.join(" "))
        }
    }
}

/// A side's value per group of the records' remaining params (those `strip` leaves),
/// with the thread count it was read at.
fn values(sel: &Sel, records: &[Record], strip: &[String]) -> BTreeMap<String, (Span, usize)> {
    let matching: Vec<&Record> = records
        .iter()
        .filter(|r| sel.variants.contains(&r.variant))
        .filter(|r| {
            sel.params.iter().all(|(k, want)| r.params.get(k).is_some_and(|v| value_is(v, want)))
        })
        .collect();
    let key = |r: &Record| {
        let mut p: Map<String, Value> = r.params.clone();
        for k in strip {
            p.remove(k);
        }
        Value::Object(p).to_string()
    };
    let mut groups: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in matching {
        groups.entry(key(r)).or_default().push(r);
    }
    let mut out = BTreeMap::new();
    for (k, rs) in groups {
        let threads = match sel.at {
            At::Cores => rs
                .iter()
                .filter(|r| !r.oversubscribed)
                .map(|r| r.threads)
                .max()
                .or_else(|| rs.iter().map(|r| r.threads).max()),
            At::Most => rs.iter().map(|r| r.threads).max(),
            At::Threads(n) => Some(n),
        };
        let Some(threads) = threads else { continue };
        let spans: Option<Vec<Span>> = sel
            .variants
            .iter()
            .map(|v| {
                let r = rs.iter().find(|r| r.variant == *v && r.threads == threads)?;
                metric(sel.metric, r)
            })
            .collect();
        let Some(spans) = spans.filter(|s| !s.is_empty()) else { continue };
        let pick = |f: fn(f64, f64) -> f64, get: fn(&Span) -> f64| {
            spans.iter().map(get).reduce(f).expect("non-empty")
        };
        let span = match sel.pick {
            Pick::Min => Span {
                median: pick(f64::min, |s| s.median),
                lo: pick(f64::min, |s| s.lo),
                hi: pick(f64::min, |s| s.hi),
            },
            Pick::Max => Span {
                median: pick(f64::max, |s| s.median),
                lo: pick(f64::max, |s| s.lo),
                hi: pick(f64::max, |s| s.hi),
            },
        };
        out.insert(k, (span, threads));
    }
    out
}

/// A record's value of `m` with the spread of its rounds.
fn metric(m: Metric, r: &Record) -> Option<Span> {
    let spread = |median: f64, lo: Option<f64>, hi: Option<f64>| Span {
        median,
        lo: lo.unwrap_or(median).min(median),
        hi: hi.unwrap_or(median).max(median),
    };
    match m {
        Metric::OpsPerSec => (r.ops_per_sec > 0.0)
            .then(|| spread(r.ops_per_sec, r.ops_per_sec_min, r.ops_per_sec_max)),
        Metric::P50 => {
            let f = |x: Option<u64>| x.map(|v| v as f64);
            r.p50_ns.map(|p| spread(p as f64, f(r.p50_ns_min), f(r.p50_ns_max)))
        }
        Metric::P99 => {
            let f = |x: Option<u64>| x.map(|v| v as f64);
            r.p99_ns.map(|p| spread(p as f64, f(r.p99_ns_min), f(r.p99_ns_max)))
        }
        Metric::Extra(field) => {
            r.extra.get(field)?.as_f64().filter(|x| x.is_finite()).map(Span::point)
        }
    }
}

/// The keys two sides pin (their group keys leave them out), plus `more`.
fn pinned(sides: &[&Sel], more: Option<&str>) -> Vec<String> {
    let mut keys: Vec<String> =
        sides.iter().flat_map(|s| s.params.iter().map(|(k, _)| k.clone())).collect();
    keys.extend(more.map(str::to_owned));
    keys.sort();
    keys.dedup();
    keys
}

/// `where` of a value: the thread counts and, when several groups match, the group.
fn at_label(nt: usize, dt: usize, group: &str, several: bool) -> String {
    let mut at = if nt == dt { format!("{nt} thr") } else { format!("{nt} / {dt} thr") };
    if several {
        if let Ok(Value::Object(p)) = serde_json::from_str::<Value>(group) {
            for (k, v) in p {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                let _ = write!(at, " {k}={v}");
            }
        }
    }
    at
}

/// Values of `num / den` per group both sides have.
fn ratio_of(num: &Sel, den: &Sel, records: &[Record], label: &str) -> Vec<Measured> {
    let strip = pinned(&[num, den], None);
    let (a, b) = (values(num, records, &strip), values(den, records, &strip));
    let common: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
    let several = common.len() > 1;
    let mut out = Vec::new();
    for k in common {
        let ((x, nt), (y, dt)) = (a[k], b[k]);
        if let Some(span) = x.div(y) {
            out.push(Measured {
                label: label.to_owned(),
                at: at_label(nt, dt, k, several),
                span,
                ratio: true,
            });
        }
    }
    out
}

fn ratio_label(num: &Sel, den: &Sel) -> String {
    format!("{} / {}", num.label(), den.label())
}

fn ratio_values(label: &str, r: &Ratio, records: &[Record]) -> Vec<Measured> {
    ratio_of(&Sel::of(&r.num), &Sel::of(&r.den), records, label)
}

/// The rule's measured values (empty: no records match).
fn measure(rule: &Rule, records: &[Record]) -> Vec<Measured> {
    match rule {
        Rule::Value(side) => {
            let sel = Sel::of(side);
            let strip = pinned(&[&sel], None);
            let vals = values(&sel, records, &strip);
            let several = vals.len() > 1;
            vals.iter()
                .map(|(k, (span, t))| Measured {
                    label: sel.label(),
                    at: at_label(*t, *t, k, several),
                    span: *span,
                    ratio: false,
                })
                .collect()
        }
        Rule::Ratio(r) => {
            let (n, d) = (Sel::of(&r.num), Sel::of(&r.den));
            ratio_of(&n, &d, records, &ratio_label(&n, &d))
        }
        Rule::Contrast { first, second } => {
            let (a, b) = (Sel::of(&first.num), Sel::of(&first.den));
            let (c, d) = (Sel::of(&second.num), Sel::of(&second.den));
            let strip = pinned(&[&a, &b, &c, &d], None);
            let one = |n: &Sel, d: &Sel| -> BTreeMap<String, (Span, usize)> {
                let (x, y) = (values(n, records, &strip), values(d, records, &strip));
                x.iter()
                    .filter_map(|(k, (sx, t))| Some((k.clone(), (sx.div(y.get(k)?.0)?, *t))))
                    .collect()
            };
            let (p, q) = (one(&a, &b), one(&c, &d));
            let common: Vec<&String> = p.keys().filter(|k| q.contains_key(*k)).collect();
            let several = common.len() > 1;
            let label = format!("({}) / ({})", ratio_label(&a, &b), ratio_label(&c, &d));
            common
                .into_iter()
                .filter_map(|k| {
                    let ((x, t), (y, u)) = (p[k], q[k]);
                    Some(Measured {
                        label: label.clone(),
                        at: at_label(t, u, k, several),
                        span: x.div(y)?,
                        ratio: true,
                    })
                })
                .collect()
        }
        Rule::Steps { side, over, points } => {
            let sel = Sel::of(side);
            points
                .windows(2)
                .flat_map(|w| {
                    let (n, d) = (sel.at_point(*over, w[1]), sel.at_point(*over, w[0]));
                    ratio_of(&n, &d, records, &ratio_label(&n, &d))
                })
                .collect()
        }
        Rule::Spread { side, over, points } => {
            let sel = Sel::of(side);
            let over_key = match over {
                Over::Param(p) => Some(*p),
                _ => None,
            };
            let strip = pinned(&[&sel], over_key);
            let per_point: Vec<BTreeMap<String, (Span, usize)>> =
                points.iter().map(|p| values(&sel.at_point(*over, p), records, &strip)).collect();
            let Some(first) = per_point.first() else { return Vec::new() };
            let keys: Vec<&String> =
                first.keys().filter(|k| per_point.iter().all(|m| m.contains_key(*k))).collect();
            let several = keys.len() > 1;
            keys.into_iter()
                .map(|k| {
                    let spans: Vec<(Span, usize)> = per_point.iter().map(|m| m[k]).collect();
                    let (hi_med, lo_med) =
                        spans.iter().fold((f64::MIN, f64::MAX), |(a, b), (s, _)| {
                            (a.max(s.median), b.min(s.median))
                        });
                    let max_lo = spans.iter().map(|(s, _)| s.lo).fold(f64::MIN, f64::max);
                    let min_hi = spans.iter().map(|(s, _)| s.hi).fold(f64::MAX, f64::min);
                    let max_hi = spans.iter().map(|(s, _)| s.hi).fold(f64::MIN, f64::max);
                    let min_lo = spans.iter().map(|(s, _)| s.lo).fold(f64::MAX, f64::min);
                    let span = Span {
                        median: hi_med / lo_med,
                        lo: (max_lo / min_hi).max(1.0),
                        hi: max_hi / min_lo,
                    };
                    let t = spans[0].1;
                    Measured {
                        label: format!(
                            "largest / smallest of {} over {}",
                            sel.label(),
                            over_text(*over, points)
                        ),
                        at: at_label(t, t, k, several),
                        span,
                        ratio: true,
                    }
                })
                .collect()
        }
        Rule::Peak { side, over, points, inside } => {
            let sel = Sel::of(side);
            let over_key = match over {
                Over::Param(p) => Some(*p),
                _ => None,
            };
            let strip = pinned(&[&sel], over_key);
            let best = |pts: Vec<&str>| -> BTreeMap<String, (Span, usize)> {
                let mut out: BTreeMap<String, (Span, usize)> = BTreeMap::new();
                for p in pts {
                    for (k, (s, t)) in values(&sel.at_point(*over, p), records, &strip) {
                        let e = out.entry(k).or_insert((s, t));
                        e.0 = Span {
                            median: e.0.median.max(s.median),
                            lo: e.0.lo.max(s.lo),
                            hi: e.0.hi.max(s.hi),
                        };
                    }
                }
                out
            };
            let ins = best(inside.to_vec());
            let outs = best(points.iter().copied().filter(|p| !inside.contains(p)).collect());
            let common: Vec<&String> = ins.keys().filter(|k| outs.contains_key(*k)).collect();
            let several = common.len() > 1;
            common
                .into_iter()
                .filter_map(|k| {
                    let ((x, t), (y, _)) = (ins[k], outs[k]);
                    Some(Measured {
                        label: format!(
                            "best of {} at {} / best elsewhere on {}",
                            sel.label(),
                            inside.join(", "),
                            over_text(*over, points)
                        ),
                        at: at_label(t, t, k, several),
                        span: x.div(y)?,
                        ratio: true,
                    })
                })
                .collect()
        }
        Rule::NotTestable(_) | Rule::NotCovered(_) => Vec::new(),
    }
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

/// Whether `r` has all of `params` (the records a figure shows).
pub fn shows(params: &[(&str, &str)], r: &Record) -> bool {
    params.iter().all(|(k, want)| r.params.get(*k).is_some_and(|v| value_is(v, want)))
}

#[cfg(test)]
mod tests;
