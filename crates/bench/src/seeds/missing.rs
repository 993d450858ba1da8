//! The seeds' comparators a set of records lacks.
//!
//! A full report without, say, `dslr-redis` (no `redis-server` on the machine) would read
//! "no matching records" where a seed's comparison should be, and look complete. So
//! `rangelock bench report` refuses to write a report that lacks one, unless it is given
//! `--allow-missing`; then the report names what is missing at its top.

use std::collections::BTreeMap;

use super::claims::{self, Over, Rule, Seed, Side};
use crate::harness::Record;

/// One comparator a judged seed claim needs and the records lack.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Missing {
    /// The suite.
    pub suite: String,
    /// The seed's figure or table.
    pub figure: String,
    /// The variant with no record (or `*` when the suite has no records at all).
    pub variant: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.variant == "*" {
            write!(f, "{} ({}): the suite did not run", self.figure, self.suite)
        } else {
            write!(f, "{} ({}): no record of `{}`", self.figure, self.suite, self.variant)
        }
    }
}

/// What the judged claims of every seed need and `records` (per suite; `None`: the suite
/// did not run) lack, in registry order without repeats.
pub fn missing_comparators(records: &BTreeMap<String, Option<Vec<Record>>>) -> Vec<Missing> {
    let mut out: Vec<Missing> = Vec::new();
    for claim in claims::claims().iter().filter(|c| c.figure().seed != Seed::Project) {
        for variant in variants(&claim.rule) {
            let variant = match records.get(claim.suite).and_then(Option::as_ref) {
                None => "*".to_owned(),
                Some(rs) if !rs.iter().any(|r| r.variant == variant) => variant.to_owned(),
                Some(_) => continue,
            };
            let m =
                Missing { suite: claim.suite.to_owned(), figure: claim.figure.to_owned(), variant };
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

/// The variants a rule reads (none for a claim not tested here).
pub fn variants(rule: &Rule) -> Vec<&'static str> {
    let of = |s: &Side| s.variants.to_vec();
    let mut out = match rule {
        Rule::Value(s) => of(s),
        Rule::Ratio(r) => [of(&r.num), of(&r.den)].concat(),
        Rule::Contrast { first, second } => {
            [of(&first.num), of(&first.den), of(&second.num), of(&second.den)].concat()
        }
        Rule::Steps { side, over, points }
        | Rule::Spread { side, over, points }
        | Rule::Peak { side, over, points, .. } => match over {
            Over::Variants => points.to_vec(),
            _ => of(side),
        },
        Rule::NotTestable(_) | Rule::NotCovered(_) => Vec::new(),
    };
    out.dedup();
    out
}
