//! `rangelock bench claims [--json]`: every claim of the registry, with its quote, the
//! seed's number, our band and the rule that decides it.
//!
//! The JSON is an array with one object per claim:
//!
//! | field | what |
//! |---|---|
//! | `seed` | the seed's short name (`Concurrent Range Locking`, `EPVS`, `Server-sided Range Locking`, `project`) |
//! | `figure`, `section`, `suite` | where the claim is shown, and the suite whose records decide it |
//! | `quote` | the seed's sentence, verbatim (for `project`, our bar in our words) |
//! | `gist` | the claim in a few words |
//! | `row` | `seed` (the seed's design) or `beyond` (the product past it) |
//! | `seed_ratio` | the number the quote states, as a ratio: a number, `[lo, hi]` for a range ("two to nine times"), or `null` where the seed states none |
//! | `seed_says` | that number's test and the words it is read from, or `null` |
//! | `our_band` | `{"test": ">= 1.5x", "reason": "..."}`, or `null` for a claim not tested here |
//! | `rule` | what is measured, or why the claim is not tested here |
//! | `judged` | whether the claim is decided by numbers (`false`: not testable here or not covered) |

use serde::Serialize;
use serde_json::Value;

use super::check;
use super::claims::{self, Row, Rule, Test};

/// Our band as listed.
#[derive(Clone, Debug, Serialize)]
pub struct BandEntry {
    /// The test (`> 1.00x`).
    pub test: String,
    /// Why it reads the seed's words.
    pub reason: String,
}

/// One claim as listed.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimEntry {
    /// The seed's short name.
    pub seed: String,
    /// The figure or table.
    pub figure: String,
    /// The seed's section.
    pub section: String,
    /// The suite.
    pub suite: String,
    /// The seed's sentence, verbatim.
    pub quote: String,
    /// In a few words.
    pub gist: String,
    /// `seed` or `beyond`.
    pub row: String,
    /// The quote's number as a ratio (a number, `[lo, hi]`, or `null`).
    pub seed_ratio: Value,
    /// The seed's test and its words.
    pub seed_says: Option<String>,
    /// Our band.
    pub our_band: Option<BandEntry>,
    /// What is measured (or why not).
    pub rule: String,
    /// Decided by numbers.
    pub judged: bool,
}

/// Every claim, in report order.
pub fn entries() -> Vec<ClaimEntry> {
    claims::claims()
        .iter()
        .map(|c| {
            let f = c.figure();
            let ratio = !matches!(c.rule, Rule::Value(_));
            let seed_ratio = match c.seed.and_then(|n| n.test()) {
                Some(Test::Within(lo, hi)) => Value::from(vec![lo, hi]),
                Some(_) => c.seed.and_then(|n| n.value()).map_or(Value::Null, Value::from),
                None => Value::Null,
            };
            ClaimEntry {
                seed: f.seed.short().to_owned(),
                figure: c.figure.to_owned(),
                section: f.section.to_owned(),
                suite: c.suite.to_owned(),
                quote: super::quote::normalise(c.quote),
                gist: c.gist.to_owned(),
                row: match c.row {
                    Row::Seed => "seed",
                    Row::Beyond => "beyond",
                }
                .to_owned(),
                seed_ratio,
                seed_says: c.seed.map(|n| {
                    let test =
                        n.test().map_or_else(|| "?".to_owned(), |t| check::test_text(t, true));
                    format!("{test} ({})", n.written().join(" / "))
                }),
                our_band: c.band.map(|b| BandEntry {
                    test: check::test_text(b.test, ratio),
                    reason: b.reason.to_owned(),
                }),
                rule: check::describe(&c.rule),
                judged: !matches!(c.rule, Rule::NotTestable(_) | Rule::NotCovered(_)),
            }
        })
        .collect()
}

/// The listing as text: per figure, each claim's quote, number, band and rule.
pub fn text() -> String {
    let mut out = String::new();
    let mut last = (String::new(), String::new());
    for e in entries() {
        if (e.seed.clone(), e.figure.clone()) != last {
            out.push_str(&format!("\n{} {} ({}, {})\n", e.seed, e.figure, e.section, e.suite));
            last = (e.seed.clone(), e.figure.clone());
        }
        out.push_str(&format!("  - {} [{}]\n    \"{}\"\n", e.gist, e.row, e.quote));
        if let Some(s) = &e.seed_says {
            out.push_str(&format!("    seed: {s}\n"));
        }
        if let Some(b) = &e.our_band {
            out.push_str(&format!("    ours: {} ({})\n", b.test, b.reason));
        }
        out.push_str(&format!("    rule: {}\n", e.rule));
    }
    out
}
