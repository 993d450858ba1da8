//! The one readable report: every figure and table of the three seeds next to our numbers.
//!
//! [`claims`] is the registry's model (figures, and under each the seed's sentences with the
//! rules that decide them; the data in `registry/`, one file per seed), [`quote`] the seeds'
//! own text the quotes come from, [`check`] judges our records against the rules; [`write_report`] reads
//! `<dir>/<suite>.json` for every suite of the registry and of [`crate::suites::all`] and
//! writes `report.md` (plots as SVG files beside it) and `report.html` (self-contained:
//! inline SVG, inline CSS, no scripts, nothing fetched). A suite whose JSON is missing is
//! shown as "not run". [`run_suites`] runs every registered suite first (what
//! `rangelock bench report` does without `--from`).
//!
//! The report depends on the records alone: the machine block at its top is the records'
//! (each record carries the one of the run that measured it), and nothing in it names the
//! rendering machine, the time of rendering or a directory. Why a suite did not run is
//! kept beside the records ([`NOT_RUN_FILE`]). So `rangelock bench report --from D --out
//! D2` writes, byte for byte, the `report.md`, `report.html` and plots the run into `D`
//! wrote; [`regenerate_matches`] checks that of a directory.

pub mod check;
pub mod claims;
pub mod glossary;
pub mod listing;
pub mod missing;
pub mod names;
pub mod plots;
pub mod quote;
mod registry;
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
    /// The records lack comparators a seed claim is judged against, and the caller did
    /// not allow that (`rangelock bench report --allow-missing`).
    #[error(
        "the records lack the comparators of {} seed claims (install what the suites' notes \
         name, or pass --allow-missing to write the report anyway, saying so at its top):\n  {}",
        .0.len(),
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  ")
    )]
    MissingComparators(Vec<missing::Missing>),
    /// The notes of suites that did not run ([`NOT_RUN_FILE`]) are not a map of suite
    /// names to reasons.
    #[error("{path} is not a map of suite names to why they did not run: {source}")]
    Notes {
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

/// The file beside the records (in the report's directory) with why suites did not run:
/// a JSON object of suite name to reason, read back by a report `--from` that directory.
pub const NOT_RUN_FILE: &str = "not-run.json";

/// The files a report consists of in `dir`: `report.md`, `report.html` and the
/// `report-*.svg` plots, sorted by name.
pub fn report_files(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let io = |source| ReportError::Io { path: dir.to_owned(), source };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let name = entry.map_err(io)?.file_name().to_string_lossy().into_owned();
        let plot = name.starts_with("report-") && name.ends_with(".svg");
        if plot || name == "report.md" || name == "report.html" {
            files.push(dir.join(name));
        }
    }
    files.sort();
    Ok(files)
}

/// Whether the report in `dir` is what its records render to: writes the report from
/// `dir`'s JSON into a fresh temporary directory and compares `report.md`, `report.html`
/// and every plot byte for byte (and that neither side has a file the other lacks). The
/// error names the first difference.
///
/// For a test of a committed report (`docs/results`):
/// `regenerate_matches(Path::new("../../docs/results")).unwrap()` from `crates/bench`.
pub fn regenerate_matches(dir: &Path) -> Result<(), String> {
    static UNIQUE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = UNIQUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let again =
        std::env::temp_dir().join(format!("rangelock-regenerate-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&again);
    let result = (|| {
        write_report(dir, &again, &BTreeMap::new(), true).map_err(|e| e.to_string())?;
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
        let ours = report_files(dir).map_err(|e| e.to_string())?;
        let theirs = report_files(&again).map_err(|e| e.to_string())?;
        let (a, b): (Vec<_>, Vec<_>) =
            (ours.iter().map(name).collect(), theirs.iter().map(name).collect());
        if a != b {
            return Err(format!(
                "{} has the report files {a:?}, its records render {b:?}",
                dir.display()
            ));
        }
        for (old, new) in ours.iter().zip(&theirs) {
            let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
            let (x, y) = (read(old)?, read(new)?);
            if x != y {
                let line = x
                    .split(|&c| c == b'\n')
                    .zip(y.split(|&c| c == b'\n'))
                    .position(|(l, m)| l != m)
                    .map_or(0, |i| i + 1);
                return Err(format!(
                    "{} differs from what its records render (first at line {line}; regenerated \
                     into {})",
                    old.display(),
                    new.display()
                ));
            }
        }
        Ok(())
    })();
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&again);
    }
    result
}

/// Runs every suite of [`crate::suites::all`] with `opts` (JSON and SVG into `opts.out`;
/// each suite's time after its table, the total at the end, on stdout); returns, per suite
/// that could not run, why (the report shows it as not run).
pub fn run_suites(opts: &Options) -> BTreeMap<String, String> {
    let started = std::time::Instant::now();
    let mut failed = BTreeMap::new();
    let mut ran = 0;
    for suite in crate::suites::all() {
        // A stale JSON from an earlier run must not pass for this run's.
        let _ = std::fs::remove_file(opts.out.join(format!("{}.json", suite.name())));
        match run_suite(suite.as_ref(), opts) {
            Ok(_) => ran += 1,
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
    println!("\nreport: {ran} suites in {:.1} s", started.elapsed().as_secs_f64());
    failed
}

/// Reads the records of every suite from `from` and writes `report.md`, `report.html` and
/// the per-figure plots into `out`. `notes` says why a suite did not run (from
/// [`run_suites`]); they are added to those of `<from>/not-run.json` (an earlier run's),
/// and the ones of suites without records are written to `<out>/not-run.json`.
///
/// When the records lack a comparator of a seed claim ([`missing::missing_comparators`]),
/// nothing is written unless `allow_missing`; then the report lists what is missing at its
/// top.
pub fn write_report(
    from: &Path,
    out: &Path,
    notes: &BTreeMap<String, String>,
    allow_missing: bool,
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
    let mut all_notes = read_notes(&from.join(NOT_RUN_FILE))?;
    all_notes.extend(notes.iter().map(|(k, v)| (k.clone(), v.clone())));
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
        let settings = suite
            .as_ref()
            .zip(records.as_ref().and_then(|r| r.first()))
            .map(|(s, first)| s.settings(first));
        suites.push(render::SuiteData {
            settings,
            name: name.clone(),
            about: suite.as_ref().map(|s| s.about().to_owned()),
            x_axis: suite.as_ref().map_or(XAxis::Threads, |s| s.x_axis()),
            measure: suite.as_ref().map_or(Measure::Throughput, |s| s.measure()),
            quantity: suite
                .as_ref()
                .map_or_else(|| Measure::Throughput.quantity(), |s| s.quantity()),
            table_extras: suite.as_ref().map_or(&[], |s| s.table_extras()),
            records,
            note: all_notes.get(name).cloned(),
        });
    }
    let by_suite: BTreeMap<String, Option<Vec<Record>>> =
        suites.iter().map(|s| (s.name.clone(), s.records.clone())).collect();
    let missing = missing::missing_comparators(&by_suite);
    if !missing.is_empty() && !allow_missing {
        return Err(ReportError::MissingComparators(missing));
    }
    let kept: BTreeMap<&str, &str> = suites
        .iter()
        .filter(|s| s.records.is_none())
        .filter_map(|s| Some((s.name.as_str(), s.note.as_deref()?)))
        .collect();
    let notes_path = out.join(NOT_RUN_FILE);
    if kept.is_empty() {
        match std::fs::remove_file(&notes_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ReportError::Io { path: notes_path, source: e })
            }
            _ => {}
        }
    } else {
        let text = serde_json::to_string_pretty(&kept).expect("a map of strings serialises");
        std::fs::write(&notes_path, text + "\n").map_err(io(&notes_path))?;
    }
    let doc = render::Document::build(&suites, &missing);
    // Plots of an earlier report in `out` that this one does not have would pass for its.
    for old in report_files(out)? {
        let name = old.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.ends_with(".svg") && !doc.plots.iter().any(|(file, _)| *file == name) {
            std::fs::remove_file(&old).map_err(io(&old))?;
        }
    }
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

/// The notes of `path` ([`NOT_RUN_FILE`]); none when it does not exist.
fn read_notes(path: &Path) -> Result<BTreeMap<String, String>, ReportError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|source| ReportError::Notes { path: path.to_owned(), source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(ReportError::Io { path: path.to_owned(), source: e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::report::json;
    use crate::harness::RunInfo;

    fn temp(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rangelock-seeds-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn machine(cpu: &str, commit: &str, date: &str) -> RunInfo {
        RunInfo {
            cpu: cpu.into(),
            cpu_mhz: Some(2445.4),
            cores: 7,
            threads_per_core: Some(1),
            caches: vec![crate::harness::hardware::Cache {
                level: 3,
                kind: "Unified".into(),
                size_kib: 32768,
                shared_by: 7,
            }],
            virtualization: Some("VM (KVM): hypervisor flag in /proc/cpuinfo".into()),
            memory_gib: Some(3.5),
            kernel: "6.1.0-test".into(),
            rustc: "rustc 1.99.0 (test)".into(),
            commit: commit.into(),
            date: date.into(),
        }
    }

    /// Records of `suite` at 1 and 2 threads of two variants, with spread and `info`.
    fn records(suite: &str, info: &RunInfo) -> Vec<Record> {
        let mut out = Vec::new();
        for (variant, rate) in [("a", 1000.0), ("b", 2500.0)] {
            for threads in [1, 2] {
                let ops = rate * threads as f64;
                let mut r = Record::for_test(variant, threads, ops);
                r.suite = suite.into();
                r.rounds = 3;
                r.ops_per_sec_min = Some(ops * 0.9);
                r.ops_per_sec_max = Some(ops * 1.2);
                r.machine = Some(info.clone());
                r.extra.insert("first_grant_ms".into(), 2180.5.into());
                r.extra.insert("lost".into(), 0.into());
                out.push(r);
            }
        }
        out
    }

    fn write(dir: &Path, suite: &str, info: &RunInfo) {
        json::write(&dir.join(format!("{suite}.json")), suite, &records(suite, info)).unwrap();
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    /// A report written where the run wrote its records, then again `--from` there into
    /// another directory, is the same byte for byte: report.md, report.html and every plot;
    /// it shows the records' machine, no directory, and why a suite did not run.
    #[test]
    fn a_report_regenerated_from_its_records_is_identical() {
        let (run, again) = (temp("run"), temp("again"));
        let info = machine("Test CPU 9000", "abc1234", "2031-05-17");
        for suite in ["contended", "cluster-failover", "cluster", "server-micro"] {
            write(&run, suite, &info);
        }
        let notes = BTreeMap::from([("memory".to_owned(), "no counting allocator".to_owned())]);
        write_report(&run, &run, &notes, true).unwrap();
        write_report(&run, &again, &BTreeMap::new(), true).unwrap();

        let files = report_files(&run).unwrap();
        assert!(files.iter().filter(|f| f.extension().is_some_and(|e| e == "svg")).count() >= 3);
        for file in &files {
            let twin = again.join(file.file_name().unwrap());
            assert!(
                std::fs::read(file).unwrap() == std::fs::read(&twin).unwrap(),
                "{}",
                file.display()
            );
        }
        assert_eq!(report_files(&again).unwrap().len(), files.len());
        assert_eq!(regenerate_matches(&run), Ok(()));

        let md = read(&run.join("report.md"));
        assert!(md.contains("- **cpu:** Test CPU 9000\n"), "{md}");
        assert!(md.contains("- **commit:** abc1234\n") && md.contains("2031-05-17"), "{md}");
        assert!(md.contains("The records' machine has 7 cores"), "{md}");
        assert!(md.contains("**Not run:** no counting allocator"), "{md}");
        let dir = run.display().to_string();
        assert!(!md.contains(&dir) && !read(&run.join("report.html")).contains(&dir));
        // Rates with their rounds' range; milliseconds as milliseconds.
        assert!(md.contains("| 2.50k (2.25k–3.00k) |"), "{md}");
        assert!(md.contains("| 2180 ms |") || md.contains("| 2181 ms |"), "{md}");
        assert!(!md.contains("### -"), "a project suite's heading names it: {md}");
        assert!(md.contains("### `cluster-failover` — first new grant after a node crash"), "{md}");

        // A changed report file is caught.
        std::fs::write(run.join("report.md"), md.replace("Test CPU", "Other CPU")).unwrap();
        let err = regenerate_matches(&run).unwrap_err();
        assert!(err.contains("report.md differs"), "{err}");
        for dir in [run, again] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// The report of the committed records (`docs/results`) can be read without the code:
    /// every column and parameter its tables show is in its glossary, the seeds' names are
    /// mapped, the settings line says what each suite did, the latency table has a latency
    /// plot, the network plots name what they leave off, and no table ratio has an exponent.
    #[test]
    fn the_committed_records_render_a_readable_report() {
        let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
        let out = temp("readable");
        write_report(&results, &out, &BTreeMap::new(), true).unwrap();
        let md = read(&out.join("report.md"));
        let glossary = &md[md.find("\n## Glossary\n").expect("a glossary")..];
        let mut shown = 0;
        for line in md.lines() {
            let columns: Vec<&str> = if line.starts_with("| variant |") {
                line.trim_matches('|').split(" | ").map(str::trim).collect()
            } else if let Some(params) = line.strip_prefix("- **Params:** ") {
                params.split(' ').filter_map(|kv| kv.split_once('=')).map(|(k, _)| k).collect()
            } else {
                continue;
            };
            for c in columns {
                shown += 1;
                assert!(glossary::lookup(c).is_some(), "column {c:?} has no glossary entry");
                assert!(glossary.contains(&format!("| `{c}` |")), "{c} not in the glossary");
            }
        }
        assert!(shown > 50, "{shown} columns and params");
        assert!(glossary.contains("| `*` |") && glossary.contains("| `vs base` |"));
        // Table ratios are plain decimals.
        for line in md.lines().filter(|l| l.starts_with("| ") && l.contains("x |")) {
            let ratios = line.split(" | ").filter_map(|c| c.strip_suffix('x'));
            for r in ratios.filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) {
                assert!(r.parse::<f64>().is_ok() && !r.contains('e'), "{r}x in {line}");
            }
        }
        assert!(md.contains("\n## Seed names\n") && md.contains("| Scalable RL | `kogan-list` |"));
        let section = |anchor: &str| {
            let at = md.find(&format!("<a id=\"{anchor}\"></a>")).expect(anchor);
            let end = md[at + 1..].find("<a id=").map_or(md.len(), |e| at + 1 + e);
            &md[at..end]
        };
        let settings = [
            ("memory", "heap bytes counted by the counting allocator"),
            ("aliasing-counts-fig-5-5", "cachegrind counts (simulated caches) from two runs of"),
            ("cluster-failover", "one crash timeline per round"),
            ("server-latency-table-5", "one client; every operation timed on its own"),
            ("w1-fig-5-2", "median of 3 rounds of 500 ms per case"),
        ];
        for (anchor, words) in settings {
            let s = section(anchor);
            assert!(s.contains(&format!("- **Settings:** {words}")), "{anchor}: {s}");
        }
        let table6 = section("server-oltp-table-6");
        assert!(table6.contains("(report-server-oltp-table-6.svg)"), "{table6}");
        assert!(table6.contains("(report-server-oltp-table-6-latency.svg)"), "{table6}");
        assert!(out.join("report-server-oltp-table-6-latency.svg").exists());
        let note = "_Plot: local-memory references dslr-shm, citron-like are left off the axes: \
                    no network; their numbers are in the table._";
        assert!(table6.contains(note) && section("server-micro-fig-7").contains(note), "{table6}");
        let table5 = read(&out.join("report-server-latency-table-5.svg"));
        assert!(table5.contains("latency (µs)") && !table5.contains(">\nshm-read\n<"));
        std::fs::remove_dir_all(out).unwrap();
    }

    /// Records of two machines (or commits) give two blocks, each with its suites; one
    /// machine's runs on two days give one block with both dates.
    #[test]
    fn records_of_different_machines_show_each_block_with_its_suites() {
        let dir = temp("machines");
        write(&dir, "contended", &machine("CPU one", "abc1234", "2031-05-17"));
        write(&dir, "mixed", &machine("CPU one", "abc1234", "2031-05-18"));
        write(&dir, "held", &machine("CPU two", "def5678-dirty", "2031-05-18"));
        write_report(&dir, &dir, &BTreeMap::new(), true).unwrap();
        let md = read(&dir.join("report.md"));
        let one = md.find("## Machine 1\n").expect("first block");
        let two = md.find("## Machine 2\n").expect("second block");
        assert!(one < two && !md.contains("## Machine 3"), "{md}");
        let (first, second) = (&md[one..two], &md[two..]);
        assert!(first.contains("CPU one") && first.contains("2031-05-17 to 2031-05-18"), "{first}");
        assert!(first.contains("- **suites:** contended, mixed\n"), "{first}");
        assert!(second.contains("def5678-dirty") && second.contains("- **suites:** held\n"));
        let html = read(&dir.join("report.html"));
        assert!(html.contains("<h2>Machine 2</h2>") && html.contains("<td>CPU two</td>"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
