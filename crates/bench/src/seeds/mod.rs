//! The one readable report: every figure and table of the three seeds next to our numbers.
//!
//! [`claims::CLAIMS`] is the registry (suite + figure -> the seed's claim and the ratios
//! that test it); [`check`] judges our records against it; [`write_report`] reads
//! `<dir>/<suite>.json` for every suite of the registry and of [`crate::suites::all`] and
//! writes `report.md` (plots as SVG files beside it) and `report.html` (self-contained:
//! inline SVG, inline CSS, no scripts, nothing fetched). A suite whose JSON is missing is
//! shown as "not run". [`run_suites`] runs every registered suite first (what
//! `rangelock bench report` does without `--from`).

pub mod check;
pub mod claims;
pub mod missing;
mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::harness::{run_suite, BenchError, Measure, Options, Record, XAxis};

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading a suite's JSON or writing a report file failed.
    #[error("cannot access {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A suite's JSON is not an array of records.
    #[error("{path} is not a suite's records: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

/// What a suite contributed to the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuiteStatus {
    /// Its records were read.
    Ran,
    /// No JSON (or the suite could not run: the note says why).
    NotRun(String),
}

/// The files written and what each suite contributed.
#[derive(Debug)]
pub struct ReportFiles {
    /// `report.html`.
    pub html: PathBuf,
    /// `report.md`.
    pub markdown: PathBuf,
    /// Per suite (registry suites first, then any other registered suite).
    pub suites: Vec<(String, SuiteStatus)>,
}

/// Runs every suite of [`crate::suites::all`] with `opts` (JSON and SVG into `opts.out`);
/// returns, per suite that could not run, why (the report shows it as not run).
pub fn run_suites(opts: &Options) -> BTreeMap<String, String> {
    let mut failed = BTreeMap::new();
    for suite in crate::suites::all() {
        // A stale JSON from an earlier run must not pass for this run's.
        let _ = std::fs::remove_file(opts.out.join(format!("{}.json", suite.name())));
        match run_suite(suite.as_ref(), opts) {
            Ok(_) => {}
            Err(BenchError::NoCases(name)) => {
                eprintln!("{name}: skipped, no registered variant applies to it");
                failed.insert(name, "no registered variant applies to it".to_owned());
            }
            Err(e) => {
                eprintln!("{}: {e}", suite.name());
                failed.insert(suite.name().to_owned(), e.to_string());
            }
        }
    }
    failed
}

/// Reads the records of every suite from `from` and writes `report.md`, `report.html` and
/// the per-figure plots into `out`. `notes` says why a suite did not run (from
/// [`run_suites`]).
pub fn write_report(
    from: &Path,
    out: &Path,
    notes: &BTreeMap<String, String>,
) -> Result<ReportFiles, ReportError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut names: Vec<String> = claims::suites().into_iter().map(str::to_owned).collect();
    for s in crate::suites::all() {
        if !names.iter().any(|n| n == s.name()) {
            names.push(s.name().to_owned());
        }
    }
    let mut suites = Vec::new();
    for name in &names {
        let path = from.join(format!("{name}.json"));
        let records = match std::fs::read(&path) {
            Ok(bytes) => Some(
                serde_json::from_slice::<Vec<Record>>(&bytes)
                    .map_err(|source| ReportError::Json { path: path.clone(), source })?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ReportError::Io { path, source: e }),
        };
        let suite = crate::suites::find(name);
        suites.push(render::SuiteData {
            name: name.clone(),
            about: suite.as_ref().map(|s| s.about().to_owned()),
            x_axis: suite.as_ref().map_or(XAxis::Threads, |s| s.x_axis()),
            measure: suite.as_ref().map_or(Measure::Throughput, |s| s.measure()),
            records,
            note: notes.get(name).cloned(),
        });
    }
    let doc = render::Document::build(&suites, from);
    for (file, svg) in &doc.plots {
        let path = out.join(file);
        std::fs::write(&path, svg).map_err(io(&path))?;
    }
    let markdown = out.join("report.md");
    std::fs::write(&markdown, doc.markdown()).map_err(io(&markdown))?;
    let html = out.join("report.html");
    std::fs::write(&html, doc.html()).map_err(io(&html))?;
    let suites = suites
        .into_iter()
        .map(|s| {
            let status = match (&s.records, s.note) {
                (Some(_), _) => SuiteStatus::Ran,
                (None, Some(note)) => SuiteStatus::NotRun(note),
                (None, None) => SuiteStatus::NotRun("no JSON".to_owned()),
            };
            (s.name, status)
        })
        .collect();
    Ok(ReportFiles { html, markdown, suites })
}
