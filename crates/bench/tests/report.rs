//! The one report: every suite has a claim entry, a quick run produces `report.html` and
//! `report.md` with every suite in them, and the HTML parses (html5ever through `scraper`:
//! the browsers' parsing algorithm, with its parse errors collected).

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use rangelock_bench::harness::Options;
use rangelock_bench::seeds::{self, claims, SuiteStatus};
use rangelock_bench::suites;
use scraper::{Html, Selector};
use support::{TempDir, TEST_BUDGET};

#[test]
fn every_registered_suite_has_a_claim_entry() {
    for suite in suites::all() {
        assert!(
            claims::for_suite(suite.name()).next().is_some(),
            "suite {} has no figure in seeds/registry/",
            suite.name()
        );
    }
    // The suites issue 12 adds in parallel have theirs already.
    for name in [
        "epvs-ownership",
        "epvs-checkpoint",
        "epvs-phases",
        "epvs-nesting",
        "epvs-sharing",
        "server-latency",
    ] {
        assert!(claims::for_suite(name).next().is_some(), "{name}");
    }
    // Keys are unique: one entry per (suite, figure).
    let mut keys: Vec<(&str, &str)> =
        claims::figures().iter().map(|f| (f.suite, f.figure)).collect();
    keys.sort_unstable();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n, "duplicate (suite, figure) in the registry");
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// Parses `html`, failing on any parse error, and returns the document.
///
/// (The check can fail: a stray end tag is a parse error.)
fn parse(html: &str) -> Html {
    assert!(!Html::parse_document("<!DOCTYPE html><p>x</div>").errors.is_empty());
    let doc = Html::parse_document(html);
    assert!(doc.errors.is_empty(), "HTML parse errors: {:?}", doc.errors);
    doc
}

#[test]
fn a_quick_run_produces_a_report_with_every_suite() {
    let dir = TempDir::new("report");
    let opts = Options {
        threads: vec![1],
        oversubscribe: false,
        rounds: 1,
        duration: Duration::from_millis(3),
        // ... and until every thread completed an operation, however busy the machine.
        min_ops: 1,
        out: dir.0.clone(),
        budget: Some(TEST_BUDGET),
        ..Options::quick()
    };
    let notes = seeds::run_suites(&opts);
    let files = seeds::write_report(&dir.0, &dir.0, &notes, true).unwrap();
    let html = std::fs::read_to_string(&files.html).unwrap();
    let markdown = std::fs::read_to_string(&files.markdown).unwrap();
    let doc = parse(&html);

    let registered: Vec<&str> = suites::all().iter().map(|s| s.name()).collect();
    let status: BTreeMap<&str, &SuiteStatus> =
        files.suites.iter().map(|(n, s)| (n.as_str(), s)).collect();
    for name in claims::suites().into_iter().chain(registered.iter().copied()) {
        let sections: Vec<_> =
            doc.select(&sel(&format!("section[data-suite=\"{name}\"]"))).collect();
        assert_eq!(
            sections.len(),
            claims::for_suite(name).count(),
            "{name}: one section per claim entry"
        );
        assert!(markdown.contains(&format!("`{name}`")), "{name} missing from report.md");
        let ran = status[name] == &SuiteStatus::Ran;
        // `cluster` has no cases without etcd: it is then "not run", like a missing JSON.
        assert_eq!(ran, !notes.contains_key(name) && registered.contains(&name), "{name}");
        for section in sections {
            let text: String = section.text().collect();
            let badges: Vec<String> =
                section.select(&sel("span.badge")).map(|b| b.text().collect()).collect();
            if ran {
                assert!(!badges.iter().any(|b| b == "not run"), "{name}: {badges:?}");
                assert!(!text.contains("Not run:"), "{name}");
                // A suite whose every case was skipped (cluster without etcd) has no rows.
                let rows = section.select(&sel("table tr td")).next().is_some();
                let must = ["w1", "aliasing", "epvs-freq", "server-oltp"].contains(&name);
                assert!(rows || !must, "{name}: no rows");
                assert_eq!(section.select(&sel("svg")).next().is_some(), rows, "{name}: plot");
            } else {
                assert!(badges.iter().all(|b| b == "not run"), "{name}: {badges:?}");
                assert!(text.contains("Not run:"), "{name}");
            }
        }
    }
    // Self-contained: nothing to fetch, every link points inside the page.
    assert!(doc.select(&sel("[src], link, script")).next().is_none());
    for a in doc.select(&sel("a[href]")) {
        assert!(a.value().attr("href").unwrap().starts_with('#'), "{:?}", a.value());
    }
    // Every summary row links to a section that exists.
    for a in doc.select(&sel("table a[href]")) {
        let id = &a.value().attr("href").unwrap()[1..];
        assert!(doc.select(&sel(&format!("section[id=\"{id}\"]"))).next().is_some(), "{id}");
    }
}

#[test]
fn a_report_from_an_empty_directory_says_not_run_everywhere() {
    let dir = TempDir::new("report-empty");
    let files = seeds::write_report(&dir.0, &dir.0, &BTreeMap::new(), true).unwrap();
    assert!(files.suites.iter().all(|(_, s)| *s != SuiteStatus::Ran));
    let doc = parse(&std::fs::read_to_string(&files.html).unwrap());
    assert_eq!(doc.select(&sel("section")).count(), claims::figures().len());
    let verdicts: Vec<_> =
        doc.select(&sel("div.claim")).map(|s| s.value().attr("data-verdict")).collect();
    assert_eq!(verdicts.len(), claims::claims().len());
    assert!(verdicts.iter().all(|v| *v == Some("none")));
}
