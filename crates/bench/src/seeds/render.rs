//! `report.md` and `report.html` from the claims and the records.
//!
//! HTML text and attribute values go through `html-escape` (a small, dependency-free
//! escaper); the document is assembled with `format!`: one page with a fixed structure
//! does not need a template engine. The plots are the harness's own SVG (plotters),
//! inlined in the HTML and written as files beside the Markdown.

use std::collections::BTreeSet;
use std::fmt::Write;

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};
use serde_json::Value;

use super::check::{self, Outcome, Verdict};
use super::claims::{self, Claim, Seed};
use super::glossary::Glossary;
use super::missing::Missing;
use super::names;
use super::plots;
use crate::harness::report::{rate_with_range, ratio, svg, value_with_unit};
use crate::harness::{timing_settings, Measure, Record, RunInfo, XAxis};

/// The heading of a report's list of missing comparators.
const MISSING_TITLE: &str = "Incomplete: comparators missing";
/// What that list means.
const MISSING_TEXT: &str = "This report was written with `--allow-missing`: the records \
    lack these comparators of the seeds' claims, so the claims below that need them read \
    \"no matching records\" instead of a verdict.";

/// One suite's input to the report.
pub(super) struct SuiteData {
    pub name: String,
    pub about: Option<String>,
    pub x_axis: XAxis,
    pub measure: Measure,
    /// What its plots show, in words ([`crate::harness::Suite::quantity`]).
    pub quantity: String,
    /// The extra fields the suite's tables show ([`crate::harness::Suite::table_extras`]);
    /// empty: every extra field.
    pub table_extras: &'static [(&'static str, &'static str)],
    /// How its records were measured ([`crate::harness::Suite::settings`] of its first
    /// record); `None` (a suite not registered): the timing sentence of the records shown.
    pub settings: Option<String>,
    /// `None`: no JSON.
    pub records: Option<Vec<Record>>,
    /// Why it did not run, when known.
    pub note: Option<String>,
}

/// One figure of the report.
struct Figure {
    seed: Seed,
    figure: String,
    suite: String,
    anchor: String,
    /// What the suite measures, in words, for the heading of a figure without a seed
    /// figure (`None` for a seed's figure: its heading is the figure).
    quantity: Option<String>,
    claim: String,
    about: Option<String>,
    verdict: Verdict,
    settings: Option<String>,
    fixed: Vec<(String, String)>,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
    /// (file name, SVG) of each of its plots ([`plots::spec`]).
    plots: Vec<(String, String)>,
    /// The note under its plots: the variants left off their axes.
    plot_note: Option<String>,
}

/// One distinct machine block of the records and the suites whose records carry it.
struct MachineBlock {
    /// The block with its `date` and `cpu_mhz` cleared: runs a day apart on one machine
    /// and commit are one block (a full run may pass midnight), and so are runs that read
    /// different current clocks (frequency scaling).
    info: RunInfo,
    /// The distinct dates, sorted.
    dates: Vec<String>,
    /// The smallest and largest `cpu MHz` of its runs (`None`: not recorded).
    mhz: Option<(f64, f64)>,
    suites: Vec<String>,
}

/// The whole report, ready to print. Nothing in it depends on the machine, the time or
/// the directories of the rendering: only on the records (and the notes of suites that
/// did not run), so a report regenerated from a run's JSON is the run's, byte for byte.
pub(super) struct Document {
    machines: Vec<MachineBlock>,
    /// Suites with records but no machine block (JSON older than the block).
    unknown_machine: Vec<String>,
    figures: Vec<Figure>,
    /// The seed comparators the records lack (a report written with `--allow-missing`).
    missing: Vec<String>,
    /// (file name, SVG) of every plot.
    pub plots: Vec<(String, String)>,
    /// What the columns, parameters and marks the tables show mean.
    pub glossary: Glossary,
}

impl Document {
    pub fn build(suites: &[SuiteData], missing: &[Missing]) -> Document {
        // Registry order (seed, then figure as listed), then suites without an entry.
        let mut figures = Vec::new();
        for claim in claims::CLAIMS {
            if let Some(suite) = suites.iter().find(|s| s.name == claim.suite) {
                figures.push(figure(suite, claim));
            }
        }
        for suite in suites.iter().filter(|s| claims::for_suite(&s.name).next().is_none()) {
            let claim = Claim {
                suite: "",
                figure: "-",
                seed: Seed::Project,
                claim: "(no entry in the claim registry)",
                show: &[],
                checks: &[],
                because: &[],
                why: "no claim registered for this suite",
            };
            figures.push(figure(suite, &claim));
        }
        figures.sort_by_key(|f| f.seed); // stable: keeps registry order within a seed
        let plots = figures.iter().flat_map(|f| f.plots.clone()).collect();
        let (machines, unknown_machine) = machine_blocks(suites);
        let missing = missing.iter().map(ToString::to_string).collect();
        let glossary = Glossary::of(figures.iter().flat_map(Figure::terms));
        Document { machines, unknown_machine, figures, missing, plots, glossary }
    }

    fn intro(&self) -> String {
        let mut cores: Vec<usize> = self.machines.iter().map(|m| m.info.cores).collect();
        cores.sort_unstable();
        cores.dedup();
        let cores = match cores.as_slice() {
            [] => "The records do not say how many cores their machine had".to_owned(),
            [n] => format!("The records' machine has {n} cores (see Machine below)"),
            several => {
                let list: Vec<String> = several.iter().map(usize::to_string).collect();
                format!("The records' machines have {} cores (see below)", list.join(" or "))
            }
        };
        format!(
            "{cores}: rows marked `*` oversubscribe them (robustness, not \
             scaling). A verdict divides our medians the way the seed's claim does, at the most \
             threads that fit the cores (at the most clients for the server suites), and says \
             whether the seed's ratio is reached (reproduced), only its direction (direction \
             reproduced), or neither (differs), and why. Rates are medians over rounds, with \
             the slowest and fastest round in brackets. At the end, \"Seed names\" maps the \
             seeds' names to our variants and the glossary explains every column."
        )
    }

    /// The machine blocks as (heading, `key: value` lines) pairs.
    fn machine_sections(&self) -> Vec<(String, Vec<(String, String)>)> {
        let several = self.machines.len() > 1;
        let mut out = Vec::new();
        for (i, m) in self.machines.iter().enumerate() {
            let heading = if several { format!("Machine {}", i + 1) } else { "Machine".to_owned() };
            let mut lines: Vec<(String, String)> = m
                .info
                .lines()
                .into_iter()
                .filter(|(k, _)| *k != "date")
                .map(|(k, v)| match k {
                    "clock" => (k.to_owned(), m.info.clock(m.mhz)),
                    _ => (k.to_owned(), v),
                })
                .collect();
            let dates = match m.dates.as_slice() {
                [one] => one.clone(),
                [first, .., last] => format!("{first} to {last}"),
                [] => "unknown".to_owned(),
            };
            lines.push(("date (UTC)".to_owned(), dates));
            if several || !self.unknown_machine.is_empty() {
                lines.push(("suites".to_owned(), m.suites.join(", ")));
            }
            out.push((heading, lines));
        }
        if !self.unknown_machine.is_empty() {
            out.push((
                "Machine unknown".to_owned(),
                vec![(
                    "suites".to_owned(),
                    format!(
                        "{} (records written before they carried a machine block)",
                        self.unknown_machine.join(", ")
                    ),
                )],
            ));
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# rangelock: the seeds, figure by figure\n\n{}\n", self.intro());
        if !self.missing.is_empty() {
            let _ = writeln!(s, "## {MISSING_TITLE}\n\n{MISSING_TEXT}\n");
            for m in &self.missing {
                let _ = writeln!(s, "- {}", md(m));
            }
            s.push('\n');
        }
        for (heading, lines) in self.machine_sections() {
            let _ = writeln!(s, "## {heading}\n");
            for (k, v) in lines {
                let _ = writeln!(s, "- **{k}:** {}", md(&v));
            }
            s.push('\n');
        }
        let _ = writeln!(s, "## Summary\n\n| seed | figure | suite | verdict |\n|---|---|---|---|");
        for f in &self.figures {
            let _ = writeln!(
                s,
                "| {} | [{}](#{}) | `{}` | {} |",
                short(f.seed),
                md(&f.link_text()),
                f.anchor,
                f.suite,
                f.verdict.outcome.label()
            );
        }
        for seed in Seed::ALL {
            let figs: Vec<&Figure> = self.figures.iter().filter(|f| f.seed == seed).collect();
            if figs.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\n## {}\n\n_Seed setup: {}._", seed.title(), seed.setup());
            for f in figs {
                let heading = match &f.quantity {
                    None => format!("{} — `{}`", md(&f.figure), f.suite),
                    Some(q) => format!("`{}` — {}", f.suite, md(q)),
                };
                let _ = writeln!(s, "\n<a id=\"{}\"></a>\n### {heading}\n", f.anchor);
                let _ = writeln!(s, "- **Seed:** {}", md(&f.claim));
                let _ = writeln!(s, "- **Ours:** {}", md(&f.verdict.line));
                if let Some(about) = &f.about {
                    let _ = writeln!(s, "- **Suite:** {}", md(about));
                }
                if let Some(settings) = &f.settings {
                    let _ = writeln!(s, "- **Settings:** {}", md(settings));
                }
                if !f.fixed.is_empty() {
                    let fixed: Vec<String> =
                        f.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    let _ = writeln!(s, "- **Params:** {}", md(&fixed.join(" ")));
                }
                if !f.rows.is_empty() {
                    let _ = writeln!(s, "\n| {} |", f.columns.join(" | "));
                    let _ = writeln!(s, "|{}", "---|".repeat(f.columns.len()));
                    for row in &f.rows {
                        let cells: Vec<String> = row.iter().map(|c| md(c)).collect();
                        let _ = writeln!(s, "| {} |", cells.join(" | "));
                    }
                }
                for (file, _) in &f.plots {
                    let alt = f.quantity.clone().unwrap_or_else(|| f.figure.clone());
                    let _ = writeln!(s, "\n![{} {}]({file})", f.suite, md(&alt));
                }
                if let Some(note) = f.plot_note.as_ref().filter(|_| !f.plots.is_empty()) {
                    let _ = writeln!(s, "\n_Plot: {}_", md(note));
                }
            }
        }
        let (header, rows) = names::table(short);
        let _ = writeln!(s, "\n<a id=\"seed-names\"></a>\n## Seed names\n");
        let _ = writeln!(s, "| {} |\n|{}", header.join(" | "), "---|".repeat(header.len()));
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| md(c)).collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(s, "\n<a id=\"glossary\"></a>\n{}", self.glossary.markdown());
        s
    }

    pub fn html(&self) -> String {
        let mut s = String::new();
        s.push_str(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>rangelock: the seeds, figure by figure</title>\n<style>\n\
             body{font-family:sans-serif;max-width:1060px;margin:2em auto;padding:0 1em;color:#222}\n\
             table{border-collapse:collapse;margin:.6em 0;font-size:13px}\n\
             th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}\n\
             th:first-child,td:first-child,.summary td,.summary th,.machine td{text-align:left}\n\
             .names td,.names th,.glossary td,.glossary th{text-align:left}\n\
             .badge{padding:1px 6px;border-radius:3px;font-size:12px;white-space:nowrap}\n\
             .ok{background:#c8efc8}.partly{background:#f6e7a8}.differs{background:#f4c2c2}\n\
             .none{background:#e4e4e4}\nsection{border-top:1px solid #999;margin-top:1.5em}\n\
             svg{max-width:100%;height:auto}\n.claim{font-style:italic}\n\
             </style>\n</head>\n<body>\n<h1>rangelock: the seeds, figure by figure</h1>\n",
        );
        let _ = writeln!(s, "<p>{}</p>", text(&self.intro().replace('`', "")));
        if !self.missing.is_empty() {
            let _ = writeln!(s, "<h2>{MISSING_TITLE}</h2>\n<p>{}</p>\n<ul>", text(MISSING_TEXT));
            for m in &self.missing {
                let _ = writeln!(s, "<li>{}</li>", text(&m.replace('`', "")));
            }
            s.push_str("</ul>\n");
        }
        for (heading, lines) in self.machine_sections() {
            let _ = writeln!(s, "<h2>{}</h2>\n<table class=\"machine\">", text(&heading));
            for (k, v) in lines {
                let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", text(&k), text(&v));
            }
            s.push_str("</table>\n");
        }
        s.push_str("<h2>Summary</h2>\n<table class=\"summary\">\n<tr><th>seed</th><th>figure</th><th>suite</th><th>verdict</th></tr>\n");
        for f in &self.figures {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td>{}</td><td><span class=\"badge {}\">{}</span></td></tr>",
                text(short(f.seed)),
                attr(&f.anchor),
                text(&f.link_text()),
                text(&f.suite),
                f.verdict.outcome.class(),
                text(f.verdict.outcome.label())
            );
        }
        s.push_str("</table>\n");
        for seed in Seed::ALL {
            let figs: Vec<&Figure> = self.figures.iter().filter(|f| f.seed == seed).collect();
            if figs.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "<h2>{}</h2>\n<p><em>Seed setup: {}.</em></p>",
                text(seed.title()),
                text(seed.setup())
            );
            for f in figs {
                let _ = writeln!(
                    s,
                    "<section id=\"{}\" data-suite=\"{}\" data-figure=\"{}\" data-verdict=\"{}\">",
                    attr(&f.anchor),
                    attr(&f.suite),
                    attr(&f.figure),
                    f.verdict.outcome.class()
                );
                let _ = match &f.quantity {
                    None => writeln!(
                        s,
                        "<h3>{} — <code>{}</code></h3>",
                        text(&f.figure),
                        text(&f.suite)
                    ),
                    Some(q) => {
                        writeln!(s, "<h3><code>{}</code> — {}</h3>", text(&f.suite), text(q))
                    }
                };
                let _ =
                    writeln!(s, "<p class=\"claim\"><strong>Seed:</strong> {}</p>", text(&f.claim));
                let _ = writeln!(
                    s,
                    "<p><strong>Ours:</strong> <span class=\"badge {}\">{}</span> {}</p>",
                    f.verdict.outcome.class(),
                    text(f.verdict.outcome.label()),
                    text(&f.verdict.line)
                );
                if let Some(about) = &f.about {
                    let _ = writeln!(s, "<p><strong>Suite:</strong> {}</p>", text(about));
                }
                if let Some(settings) = &f.settings {
                    let _ = writeln!(s, "<p><strong>Settings:</strong> {}</p>", text(settings));
                }
                if !f.fixed.is_empty() {
                    let fixed: Vec<String> =
                        f.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    let _ =
                        writeln!(s, "<p><strong>Params:</strong> {}</p>", text(&fixed.join(" ")));
                }
                if !f.rows.is_empty() {
                    s.push_str("<table>\n<tr>");
                    for c in &f.columns {
                        let _ = write!(s, "<th>{}</th>", text(c));
                    }
                    s.push_str("</tr>\n");
                    for row in &f.rows {
                        s.push_str("<tr>");
                        for c in row {
                            let _ = write!(s, "<td>{}</td>", text(c));
                        }
                        s.push_str("</tr>\n");
                    }
                    s.push_str("</table>\n");
                }
                for (_, svg) in &f.plots {
                    let _ = writeln!(s, "<figure>{}</figure>", strip_prolog(svg));
                }
                if let Some(note) = f.plot_note.as_ref().filter(|_| !f.plots.is_empty()) {
                    let _ = writeln!(s, "<p class=\"note\"><em>Plot: {}</em></p>", text(note));
                }
                s.push_str("</section>\n");
            }
        }
        let (header, rows) = names::table(short);
        s.push_str("<h2 id=\"seed-names\">Seed names</h2>\n<table class=\"names\">\n<tr>");
        for h in header {
            let _ = write!(s, "<th>{}</th>", text(h));
        }
        s.push_str("</tr>\n");
        for row in rows {
            s.push_str("<tr>");
            for c in row {
                let _ = write!(s, "<td>{}</td>", text(&c.replace('`', "")));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
        s.push_str(&self.glossary.html());
        s.push_str("</body>\n</html>\n");
        s
    }
}

impl Figure {
    /// The terms its table shows: its columns, its fixed parameters, and `*` when a row is
    /// oversubscribed.
    fn terms(&self) -> Vec<&str> {
        let mut terms: Vec<&str> = self.columns.iter().map(String::as_str).collect();
        terms.extend(self.fixed.iter().map(|(k, _)| k.as_str()));
        if self.rows.iter().any(|r| r.get(1).is_some_and(|t| t.ends_with('*'))) {
            terms.push("*");
        }
        terms
    }

    /// The summary's link: the figure, or `(suite)` for a project suite.
    fn link_text(&self) -> String {
        if self.figure == "-" {
            format!("({})", self.suite)
        } else {
            self.figure.clone()
        }
    }
}

fn figure(suite: &SuiteData, claim: &Claim) -> Figure {
    let shown: Option<Vec<Record>> = suite.records.as_ref().map(|records| {
        let sel = claims::Sel { variant: None, params: claim.show };
        records.iter().filter(|r| check::matches(&sel, r)).cloned().collect()
    });
    let all = suite.records.as_deref().unwrap_or(&[]);
    let mut verdict = check::verdict(claim, shown.as_deref(), all);
    if verdict.outcome == Outcome::NotRun {
        if let Some(note) = &suite.note {
            verdict.line = format!("not run: {note}");
        }
    }
    let anchor = slug(&format!("{}-{}", suite.name, claim.figure));
    let (mut fixed, mut columns, mut rows, mut settings) =
        (Vec::new(), Vec::new(), Vec::new(), None);
    let (mut plots, mut plot_note) = (Vec::new(), None);
    if let Some(shown) = shown.as_ref().filter(|s| !s.is_empty()) {
        let varying = varying_params(shown);
        fixed = shown[0]
            .params
            .iter()
            .filter(|(k, _)| !varying.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), plain(v)))
            .collect();
        let found: BTreeSet<&str> = shown
            .iter()
            .flat_map(|r| r.extra.keys().map(String::as_str))
            .filter(|k| *k != crate::harness::SKIPPED)
            .collect();
        // A measure's own fields first, in its order, then the others by name.
        let mut extras: Vec<&str> = match suite.measure {
            Measure::Extras(keys) => keys.iter().copied().filter(|k| found.contains(k)).collect(),
            Measure::Throughput => Vec::new(),
        };
        if suite.table_extras.is_empty() {
            extras
                .extend(found.iter().copied().filter(|k| !extras.contains(k)).collect::<Vec<_>>());
        } else {
            // The suite chose the fields that explain its rates; the rest stay in its JSON.
            extras.extend(suite.table_extras.iter().map(|(k, _)| *k).filter(|k| found.contains(k)));
        }
        columns = ["variant", "threads"].map(str::to_owned).to_vec();
        columns.extend(varying.iter().map(|k| (*k).to_owned()));
        // A suite that measures no throughput shows only its extra fields.
        let timed = suite.measure == Measure::Throughput;
        if timed {
            columns.extend(["ops/s (min–max)", "p50 ns", "p99 ns", "vs base"].map(str::to_owned));
        }
        columns.extend(extras.iter().map(|k| (*k).to_owned()));
        for r in shown {
            let star = if r.oversubscribed { "*" } else { "" };
            let mut row = vec![r.variant.clone(), format!("{}{star}", r.threads)];
            row.extend(varying.iter().map(|k| r.params.get(*k).map_or("-".to_owned(), plain)));
            if timed {
                row.push(rate_with_range(r));
                row.push(r.p50_ns.map_or("-".to_owned(), |x| x.to_string()));
                row.push(r.p99_ns.map_or("-".to_owned(), |x| x.to_string()));
                row.push(r.ratio_vs_baseline.map_or("-".to_owned(), ratio));
            }
            row.extend(
                extras.iter().map(|k| r.extra.get(*k).map_or("-".to_owned(), |v| number(k, v))),
            );
            rows.push(row);
        }
        settings = Some(
            suite
                .settings
                .clone()
                .unwrap_or_else(|| timing_settings(shown[0].rounds, shown[0].duration_ms)),
        );
        let spec = plots::spec(&suite.name, claim.figure);
        plot_note = spec.note(shown);
        for (i, y) in spec.plots.iter().enumerate() {
            let file = match i {
                0 => format!("report-{anchor}.svg"),
                _ => format!("report-{anchor}-{}.svg", y.suffix()),
            };
            let plot = svg::Plot {
                suite: &suite.name,
                quantity: &suite.quantity,
                x_axis: suite.x_axis,
                measure: suite.measure,
                y: *y,
                spec: &spec,
            };
            match plot.render(shown) {
                Ok(svg) => plots.push((file, svg)),
                Err(e) => eprintln!("report: cannot draw {}: {e}", suite.name),
            }
        }
    }
    Figure {
        seed: claim.seed,
        figure: claim.figure.to_owned(),
        suite: suite.name.clone(),
        anchor,
        quantity: (claim.figure == "-").then(|| suite.quantity.clone()),
        claim: claim.claim.to_owned(),
        about: suite.about.clone(),
        verdict,
        settings,
        fixed,
        columns,
        rows,
        plots,
        plot_note,
    }
}

/// The params whose value differs between the records.
fn varying_params(records: &[Record]) -> Vec<&str> {
    let mut keys: Vec<&str> = Vec::new();
    for r in records {
        for k in r.params.keys() {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    keys.retain(|k| {
        let first = records[0].params.get(*k);
        records.iter().any(|r| r.params.get(*k) != first)
    });
    keys
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An extra field's value with the unit its name ends in (`first_grant_ms` in ms).
fn number(key: &str, v: &Value) -> String {
    match v.as_f64() {
        Some(x) => value_with_unit(key, x),
        None => plain(v),
    }
}

/// The distinct machine blocks of the records (dates merged), in suite order, and the
/// suites with records that carry none.
fn machine_blocks(suites: &[SuiteData]) -> (Vec<MachineBlock>, Vec<String>) {
    let mut blocks: Vec<MachineBlock> = Vec::new();
    let mut unknown = Vec::new();
    for suite in suites {
        let Some(records) = &suite.records else { continue };
        for r in records {
            let Some(info) = &r.machine else {
                if !unknown.contains(&suite.name) {
                    unknown.push(suite.name.clone());
                }
                continue;
            };
            let undated = RunInfo { date: String::new(), cpu_mhz: None, ..info.clone() };
            let i = match blocks.iter().position(|b| b.info == undated) {
                Some(i) => i,
                None => {
                    blocks.push(MachineBlock {
                        info: undated,
                        dates: Vec::new(),
                        mhz: None,
                        suites: Vec::new(),
                    });
                    blocks.len() - 1
                }
            };
            let block = &mut blocks[i];
            if let Some(m) = info.cpu_mhz {
                block.mhz = Some(block.mhz.map_or((m, m), |(lo, hi)| (lo.min(m), hi.max(m))));
            }
            if !block.dates.contains(&info.date) {
                block.dates.push(info.date.clone());
                block.dates.sort();
            }
            if !block.suites.contains(&suite.name) {
                block.suites.push(suite.name.clone());
            }
        }
    }
    (blocks, unknown)
}

fn short(seed: Seed) -> &'static str {
    match seed {
        Seed::RangeThesis => "Concurrent Range Locking",
        Seed::Epvs => "EPVS",
        Seed::ServerThesis => "Server-sided Range Locking",
        Seed::Project => "project",
    }
}

/// `Fig. 5.2` of `w1` as `w1-fig-5-2`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// Markdown table cells and lines: pipes escaped, no line breaks.
fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The SVG element without an XML declaration (not allowed inside HTML).
fn strip_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}
