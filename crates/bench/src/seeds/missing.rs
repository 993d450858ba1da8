//! The seeds' comparators a set of records lacks.
//!
//! A full report without, say, `dslr-redis` (no `redis-server` on the machine) would read
//! "no matching records" where a seed's comparison should be, and look complete. So
//! `rangelock bench report` refuses to write a report that lacks one, unless it is given
//! `--allow-missing`; then the report names what is missing at its top.

use std::collections::BTreeMap;

use super::claims::{self, Seed};
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

/// What the judged checks of every seed claim need and `records` (per suite; `None`: the
/// suite did not run) lack, in registry order without repeats.
pub fn missing_comparators(records: &BTreeMap<String, Option<Vec<Record>>>) -> Vec<Missing> {
    let mut out: Vec<Missing> = Vec::new();
    for claim in claims::CLAIMS.iter().filter(|c| c.seed != Seed::Project) {
        for check in claim.checks {
            for sel in [&check.num, &check.den] {
                let variant = match records.get(claim.suite).and_then(Option::as_ref) {
                    None => "*".to_owned(),
                    Some(rs) => match sel.variant {
                        Some(v) if !rs.iter().any(|r| r.variant == v) => v.to_owned(),
                        _ => continue,
                    },
                };
                let m = Missing {
                    suite: claim.suite.to_owned(),
                    figure: claim.figure.to_owned(),
                    variant,
                };
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(name: &str, variants: &[&str]) -> (String, Option<Vec<Record>>) {
        let records = variants
            .iter()
            .map(|v| Record { suite: name.to_owned(), ..Record::for_test(v, 2, 1.0) })
            .collect();
        (name.to_owned(), Some(records))
    }

    #[test]
    fn names_every_absent_comparator_once() {
        let mut records: BTreeMap<_, _> = claims::suites()
            .into_iter()
            .map(|s| {
                let mut vs: Vec<&str> = Vec::new();
                for c in claims::for_suite(s) {
                    for check in c.checks {
                        vs.extend(check.num.variant);
                        vs.extend(check.den.variant);
                    }
                }
                suite(s, &vs)
            })
            .collect();
        assert_eq!(missing_comparators(&records), []);
        // Without Redis: both client-sided network peers are missing, once per figure.
        let (name, rs) =
            suite("server-micro", &["combiner", "combiner-shm-poll", "dslr-shm", "citron-like"]);
        records.insert(name, rs);
        let missing = missing_comparators(&records);
        assert!(missing.iter().all(|m| m.suite == "server-micro"), "{missing:?}");
        let fig5: Vec<_> = missing.iter().filter(|m| m.figure == "Fig. 5").collect();
        assert_eq!(fig5.len(), 2, "{missing:?}");
        assert_eq!(fig5[0].to_string(), "Fig. 5 (server-micro): no record of `dslr-redis`");
        // A suite that did not run.
        records.insert("server-oltp".to_owned(), None);
        let missing = missing_comparators(&records);
        assert!(missing.iter().any(|m| m.suite == "server-oltp" && m.variant == "*"));
    }
}
