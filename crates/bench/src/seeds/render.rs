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
use super::claims::{self, Row, Seed, SeedNumber};
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

/// One claim under a figure: the seed's sentence, what decides it, and the verdict.
struct ClaimView {
    quote: String,
    gist: String,
    row: Row,
    /// `>= 4.00x ("four")`, or `None` when the seed states no number.
    seed_says: Option<String>,
    /// Our band and its reason (`None` for a claim not tested here).
    band: Option<String>,
    /// What is measured.
    rule: String,
    verdict: Verdict,
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
    /// The seed's section and caption (a seed figure), or the question (a project suite).
    caption: String,
    section: String,
    about: Option<String>,
    caveats: Vec<String>,
    /// Measured context, one line each.
    context: Vec<String>,
    claims: Vec<ClaimView>,
    /// Why the suite has no records, when it has none.
    not_run: Option<String>,
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
        for f in claims::figures() {
            if let Some(suite) = suites.iter().find(|s| s.name == f.suite) {
                figures.push(figure(suite, f));
            }
        }
        for suite in suites.iter().filter(|s| claims::for_suite(&s.name).next().is_none()) {
            let f = claims::Figure {
                suite: "",
                figure: "-",
                seed: Seed::Project,
                section: "-",
                caption: "(no entry in the claim registry)",
                show: &[],
                caveats: &[],
                context: &[],
            };
            figures.push(figure(suite, &f));
        }
        figures.sort_by_key(|f| f.seed); // stable: keeps registry order within a seed
        let plots = figures.iter().flat_map(|f| f.plots.clone()).collect();
        let (machines, unknown_machine) = machine_blocks(suites);
        let missing = missing.iter().map(ToString::to_string).collect();
        let glossary = Glossary::of(figures.iter().flat_map(Figure::terms));
        Document { machines, unknown_machine, figures, missing, plots, glossary }
    }

    /// Every claim with its figure, in report order.
    fn all_claims(&self) -> impl Iterator<Item = (&Figure, &ClaimView)> {
        self.figures.iter().flat_map(|f| f.claims.iter().map(move |c| (f, c)))
    }

    /// How many claims of the seeds' evaluations each outcome has, in outcome order.
    fn tally(&self) -> Vec<(Outcome, usize)> {
        let mut out: Vec<(Outcome, usize)> = Vec::new();
        for (f, c) in self.all_claims() {
            if f.seed == Seed::Project || c.row != Row::Seed {
                continue;
            }
            match out.iter_mut().find(|(o, _)| *o == c.verdict.outcome) {
                Some((_, n)) => *n += 1,
                None => out.push((c.verdict.outcome, 1)),
            }
        }
        out.sort();
        out
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
            "{cores}: rows marked `*` oversubscribe them (robustness, not scaling). Each \
             figure lists every claim the seed's text makes about it, quoted verbatim, with \
             the rule that decides it: a number the quote states is the seed's; every band is \
             ours, with its reason. A value is the ratio of medians over rounds, and its span \
             over the rounds (slowest against fastest); a test counts only where it holds over \
             the whole span. Verdicts: reproduced (our band and the seed's number hold), \
             direction reproduced (our band holds; the seed's number is missed at every round, \
             or straddled: magnitude inconclusive), inconclusive (the rounds straddle our \
             band), differs (our band fails at every round), not testable here (with the fact \
             of the records that rules it out), not covered (with why). Rows marked \
             \"beyond\" judge the product where it goes past the seed's design. Rates are \
             medians over rounds, with the slowest and fastest round in brackets. At the end, \
             \"Seed names\" maps the seeds' names to our variants and the glossary explains \
             every column."
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
        let _ = writeln!(s, "## Summary\n");
        let tally: Vec<String> =
            self.tally().iter().map(|(o, n)| format!("{n} {}", o.label())).collect();
        let _ = writeln!(
            s,
            "Claims of the seeds' evaluations, the seed's design only: {}.\n",
            tally.join(", ")
        );
        let _ = writeln!(s, "| seed | figure | claim | row | verdict |\n|---|---|---|---|---|");
        for f in &self.figures {
            if f.claims.is_empty() {
                let outcome = if f.not_run.is_some() { "not run" } else { "records shown, no bar" };
                let _ = writeln!(
                    s,
                    "| {} | [{}](#{}) | {} | - | {outcome} |",
                    short(f.seed),
                    md(&f.link_text()),
                    f.anchor,
                    md(&f.caption)
                );
            }
            for c in &f.claims {
                let _ = writeln!(
                    s,
                    "| {} | [{}](#{}) | {} | {} | {} |",
                    short(f.seed),
                    md(&f.link_text()),
                    f.anchor,
                    md(&c.gist),
                    row_label(f.seed, c.row),
                    c.verdict.outcome.label()
                );
            }
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
                if f.seed == Seed::Project {
                    let _ = writeln!(s, "_{}_\n", md(&f.caption));
                } else {
                    let _ =
                        writeln!(s, "_{} {}: {}_\n", md(&f.section), md(&f.figure), md(&f.caption));
                }
                if let Some(note) = &f.not_run {
                    let _ = writeln!(s, "- **Not run:** {}", md(note));
                }
                if !f.caveats.is_empty() {
                    let _ = writeln!(s, "- **Caveats** (they hold for every verdict below):");
                    for c in &f.caveats {
                        let _ = writeln!(s, "  - {}", md(c));
                    }
                }
                if !f.context.is_empty() {
                    let _ = writeln!(s, "- **Measured context** (not judged):");
                    for c in &f.context {
                        let _ = writeln!(s, "  - {}", md(c));
                    }
                }
                for (i, c) in f.claims.iter().enumerate() {
                    let _ = writeln!(
                        s,
                        "\n**Claim {}: {}** ({}) — **{}**\n",
                        i + 1,
                        md(&c.gist),
                        row_label(f.seed, c.row),
                        c.verdict.outcome.label()
                    );
                    let _ = writeln!(s, "> {}\n", md(&c.quote));
                    let _ = writeln!(s, "- **Measured:** {}", md(&c.rule));
                    match &c.seed_says {
                        Some(n) => {
                            let _ = writeln!(s, "- **The seed's number:** {}", md(n));
                        }
                        None if c.band.is_some() => {
                            let _ = writeln!(s, "- **The seed's number:** none stated");
                        }
                        None => {}
                    }
                    if let Some(b) = &c.band {
                        let _ = writeln!(s, "- **Our band:** {}", md(b));
                    }
                    let _ = writeln!(s, "- **Verdict:** {}", md(&c.verdict.line));
                }
                if !f.claims.is_empty() {
                    s.push('\n');
                }
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
             .unsure{background:#d6e4f5}blockquote{margin:.3em 1.5em;color:#444}\n\
             .none{background:#e4e4e4}\nsection{border-top:1px solid #999;margin-top:1.5em}\n\
             svg{max-width:100%;height:auto}\n.claim{margin:.8em 0}\n\
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
        let tally: Vec<String> =
            self.tally().iter().map(|(o, n)| format!("{n} {}", o.label())).collect();
        let _ = writeln!(
            s,
            "<h2>Summary</h2>\n<p>Claims of the seeds' evaluations, the seed's design only: {}.</p>",
            text(&tally.join(", "))
        );
        s.push_str("<table class=\"summary\">\n<tr><th>seed</th><th>figure</th><th>claim</th><th>row</th><th>verdict</th></tr>\n");
        for f in &self.figures {
            let mut lines: Vec<(String, &str, &str, &str)> = f
                .claims
                .iter()
                .map(|c| {
                    let o = c.verdict.outcome;
                    (c.gist.clone(), row_label(f.seed, c.row), o.class(), o.label())
                })
                .collect();
            if lines.is_empty() {
                let outcome = if f.not_run.is_some() { "not run" } else { "records shown, no bar" };
                lines.push((f.caption.clone(), "-", "none", outcome));
            }
            for (gist, row, class, label) in lines {
                let _ = writeln!(
                    s,
                    "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td><span class=\"badge {class}\">{}</span></td></tr>",
                    text(short(f.seed)),
                    attr(&f.anchor),
                    text(&f.link_text()),
                    text(&gist),
                    text(row),
                    text(label)
                );
            }
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
                    "<section id=\"{}\" data-suite=\"{}\" data-figure=\"{}\">",
                    attr(&f.anchor),
                    attr(&f.suite),
                    attr(&f.figure),
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
                let caption = if f.seed == Seed::Project {
                    f.caption.clone()
                } else {
                    format!("{} {}: {}", f.section, f.figure, f.caption)
                };
                let _ = writeln!(s, "<p><em>{}</em></p>", text(&caption));
                if let Some(note) = &f.not_run {
                    let _ = writeln!(s, "<p><strong>Not run:</strong> {}</p>", text(note));
                }
                let list = |s: &mut String, title: &str, items: &[String]| {
                    if !items.is_empty() {
                        let _ = writeln!(s, "<p><strong>{}</strong></p>\n<ul>", text(title));
                        for i in items {
                            let _ = writeln!(s, "<li>{}</li>", text(&i.replace('`', "")));
                        }
                        s.push_str("</ul>\n");
                    }
                };
                list(&mut s, "Caveats (they hold for every verdict below):", &f.caveats);
                list(&mut s, "Measured context (not judged):", &f.context);
                for (i, c) in f.claims.iter().enumerate() {
                    let o = c.verdict.outcome;
                    let _ = writeln!(
                        s,
                        "<div class=\"claim\" data-verdict=\"{}\">\n<p><strong>Claim {}: {}</strong> ({}) <span class=\"badge {}\">{}</span></p>\n<blockquote>{}</blockquote>\n<ul>",
                        o.class(),
                        i + 1,
                        text(&c.gist),
                        text(row_label(f.seed, c.row)),
                        o.class(),
                        text(o.label()),
                        text(&c.quote)
                    );
                    let _ = writeln!(s, "<li><strong>Measured:</strong> {}</li>", text(&c.rule));
                    match &c.seed_says {
                        Some(n) => {
                            let _ = writeln!(
                                s,
                                "<li><strong>The seed's number:</strong> {}</li>",
                                text(n)
                            );
                        }
                        None if c.band.is_some() => {
                            let _ = writeln!(
                                s,
                                "<li><strong>The seed's number:</strong> none stated</li>"
                            );
                        }
                        None => {}
                    }
                    if let Some(b) = &c.band {
                        let _ = writeln!(s, "<li><strong>Our band:</strong> {}</li>", text(b));
                    }
                    let _ = writeln!(
                        s,
                        "<li><strong>Verdict:</strong> {}</li>\n</ul>\n</div>",
                        text(&c.verdict.line)
                    );
                }
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

fn figure(suite: &SuiteData, f: &claims::Figure) -> Figure {
    let shown: Option<Vec<Record>> = suite
        .records
        .as_ref()
        .map(|records| records.iter().filter(|r| check::shows(f.show, r)).cloned().collect());
    let all = suite.records.as_deref();
    let not_run = all.is_none().then(|| {
        suite
            .note
            .clone()
            .unwrap_or_else(|| format!("no {}.json in the report directory", suite.name))
    });
    let claims = claims::of_figure(f)
        .map(|c| {
            let mut verdict = check::verdict(c, all);
            if let (Outcome::NotRun, Some(note)) = (verdict.outcome, &not_run) {
                verdict.line = format!("not run: {note}");
            }
            ClaimView {
                quote: c.quote.to_owned(),
                gist: c.gist.to_owned(),
                row: c.row,
                seed_says: c.seed.map(seed_says),
                band: c.band.map(|b| {
                    format!(
                        "{}; {}",
                        check::test_text(b.test, !matches!(c.rule, claims::Rule::Value(_))),
                        b.reason
                    )
                }),
                rule: check::describe(&c.rule),
                verdict,
            }
        })
        .collect();
    let context = match all {
        Some(records) => f
            .context
            .iter()
            .flat_map(|(label, ratio)| {
                let values = check::context(label, ratio, records);
                if values.is_empty() {
                    vec![format!("{label}: no matching records")]
                } else {
                    values.iter().map(check::Measured::text).collect()
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let anchor = slug(&format!("{}-{}", suite.name, f.figure));
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
        let spec = plots::spec(&suite.name, f.figure);
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
        seed: f.seed,
        figure: f.figure.to_owned(),
        suite: suite.name.clone(),
        anchor,
        quantity: (f.figure == "-").then(|| suite.quantity.clone()),
        caption: f.caption.to_owned(),
        section: f.section.to_owned(),
        about: suite.about.clone(),
        caveats: f.caveats.iter().map(|c| (*c).to_owned()).collect(),
        context,
        claims,
        not_run,
        settings,
        fixed,
        columns,
        rows,
        plots,
        plot_note,
    }
}

/// The seed's number as the report prints it: the test and the words it is read from.
fn seed_says(n: SeedNumber) -> String {
    let test = n.test().map_or_else(|| "unreadable".to_owned(), |t| check::test_text(t, true));
    let words: Vec<String> = n.written().iter().map(|w| format!("\"{w}\"")).collect();
    match n {
        SeedNumber::Derived { .. } => {
            format!("{test} (the quote's {} over {})", words[0], words[1])
        }
        _ => format!("{test} (the quote's {})", words.join(" to ")),
    }
}

/// How the summary names a claim's row.
fn row_label(seed: Seed, row: Row) -> &'static str {
    match (seed, row) {
        (Seed::Project, _) => "our bar",
        (_, Row::Seed) => "the seed's design",
        (_, Row::Beyond) => "beyond: the product",
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
    seed.short()
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
