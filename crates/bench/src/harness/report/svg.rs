//! `<out>/<suite>.svg` and the report's plots: a quantity against the x axis, one line per
//! variant, one panel per params group (the params with the x-axis parameter removed).
//!
//! What a plot shows is a [`Plot`]: the suite's measure (ops/s, or its first extra field),
//! sampled latency (p50 and p99 in µs, as a solid and a dashed line of one colour, the p99
//! marker hollow), or any named numeric field of the records ([`Y`]); and which variants it
//! leaves off its axes, with a note under the plot that names them ([`LeaveOut`]). The
//! report picks these per figure ([`PlotSpec`], from `seeds::plots`).
//!
//! Every point that has a spread over rounds carries an error bar from the slowest to the
//! fastest round (`ops_per_sec_min`/`_max`, or a field's `<field>_min`/`<field>_max`), and
//! the legend then says "bars: slowest–fastest round". All panels of one plot share one y
//! scale, so a panel's lines can be compared with another's by eye.
//!
//! A panel's title says what is measured in words ([`Suite::quantity`]) and the panel's fixed
//! parameters in a compact form. Lines take the colour-blind-safe colours of Okabe and Ito,
//! then Paul Tol's muted scheme (yellow and sand left out: unreadable on white), and each
//! line has its own marker shape, shown in the legend, so lines stay apart in grey too.
//!
//! Points sit at the *index* of their x value and are labelled with the value, so 1, 2, 8,
//! 16 threads (or heights 4..16) spread evenly. Oversubscribed thread counts are labelled
//! with `*`. A plot whose records all share one x value (a table of the seed's, such as one
//! client count) puts the variants on the x axis instead, one column each. A plot whose
//! values span more than [`LOG_SPAN`]x uses a logarithmic y axis (which leaves out points at
//! or below 0: a log axis cannot show them).

use std::collections::BTreeSet;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use serde_json::{Map, Value};

use super::{field_label, human, unit_of};
#[cfg(doc)]
use crate::harness::case::Suite;
use crate::harness::case::{Measure, XAxis};
use crate::harness::error::BenchError;
use crate::harness::record::Record;

const PANEL_W: u32 = 1000;
const PANEL_H: u32 = 420;
const LEGEND_W: u32 = 190;
/// Height of the note under a plot that leaves variants out.
const NOTE_H: u32 = 30;
/// Ratio of largest to smallest value above which a plot's y axis is logarithmic.
pub const LOG_SPAN: f64 = 50.0;
/// What the legend says of the error bars.
pub const BARS: &str = "bars: slowest–fastest round";

/// What a plot puts on its y axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Y {
    /// The suite's [`Measure`]: ops/s, or its first extra field.
    Measure,
    /// Sampled latency in µs: `p50_ns` (solid line, filled marker) and `p99_ns` (dashed
    /// line, hollow marker) of each variant.
    Latency,
    /// A numeric field of the records, standard (`ns_per_op`) or extra (`cycles_per_sec`).
    Field(&'static str),
}

/// Variants a figure's plots leave off their axes, and why (their numbers stay in the
/// table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaveOut {
    /// What they are, in words: `local-memory references`.
    pub what: &'static str,
    /// Their names.
    pub variants: &'static [&'static str],
    /// Why they are left off: `no network`.
    pub why: &'static str,
}

/// How a figure is plotted: one plot per entry of `plots`, each leaving out `leave_out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlotSpec {
    /// The plots, in order (a latency table gets `[Y::Measure, Y::Latency]`: two plots).
    pub plots: &'static [Y],
    /// The variants left off every plot's axes.
    pub leave_out: &'static [LeaveOut],
}

impl PlotSpec {
    /// One plot of the suite's measure, every variant on it.
    pub const DEFAULT: PlotSpec = PlotSpec { plots: &[Y::Measure], leave_out: &[] };

    /// Whether `variant` is left off the axes.
    pub fn leaves_out(&self, variant: &str) -> bool {
        self.leave_out.iter().any(|l| l.variants.contains(&variant))
    }

    /// The note under the plots naming the variants of `records` left off their axes
    /// ("local-memory references dslr-shm, citron-like are left off the axes: no network;
    /// their numbers are in the table"), or `None` when none of them is in the records.
    pub fn note(&self, records: &[Record]) -> Option<String> {
        let parts: Vec<String> = self
            .leave_out
            .iter()
            .filter_map(|l| {
                let present: Vec<&str> = l
                    .variants
                    .iter()
                    .copied()
                    .filter(|v| records.iter().any(|r| r.variant == *v))
                    .collect();
                match present.as_slice() {
                    [] => None,
                    [one] => Some(format!("{} {one} is left off the axes: {}", l.what, l.why)),
                    several => Some(format!(
                        "{} {} are left off the axes: {}",
                        l.what,
                        several.join(", "),
                        l.why
                    )),
                }
            })
            .collect();
        (!parts.is_empty()).then(|| {
            let one = parts.len() == 1 && !parts[0].contains(" are ");
            let whose = if one { "its number is" } else { "their numbers are" };
            format!("{}; {whose} in the table.", parts.join("; "))
        })
    }
}

impl Y {
    /// The words of the title for a suite whose measure reads `quantity`.
    fn quantity(self, quantity: &str) -> String {
        match self {
            Y::Measure => quantity.to_owned(),
            Y::Latency => "sampled latency, p50 (solid) and p99 (dashed)".to_owned(),
            Y::Field(k) => field_label(k),
        }
    }

    /// The y-axis label.
    fn label(self, measure: Measure) -> String {
        match self {
            Y::Measure => measure.y_label(),
            Y::Latency => "latency (µs)".to_owned(),
            Y::Field(k) => field_label(k),
        }
    }

    /// The file name's suffix of a figure's plot after its first (`latency`, the field).
    pub fn suffix(self) -> String {
        match self {
            Y::Measure => "measure".to_owned(),
            Y::Latency => "latency".to_owned(),
            Y::Field(k) => k.replace('_', "-"),
        }
    }
}

/// One plot to draw: what it shows ([`Y`]) of a suite's records, and what it leaves out.
#[derive(Clone, Copy, Debug)]
pub struct Plot<'a> {
    /// The suite's name (the title's first word).
    pub suite: &'a str,
    /// What the suite measures, in words ([`Suite::quantity`]).
    pub quantity: &'a str,
    /// The suite's x axis.
    pub x_axis: XAxis,
    /// The suite's measure.
    pub measure: Measure,
    /// What goes on the y axis.
    pub y: Y,
    /// What is left off the axes (with the note under the plot).
    pub spec: &'a PlotSpec,
}

/// Which value of a record a line shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Series {
    /// The plot's one value per record.
    Main,
    /// Latency's p50.
    P50,
    /// Latency's p99 (dashed, hollow marker).
    P99,
}

/// The slowest and the fastest round's value of a point.
type Bar = (f64, f64);

#[derive(Clone, Debug)]
struct Point {
    /// The x value (threads, clients, the parameter), then its position on the axis.
    x: f64,
    y: f64,
    /// The slowest and fastest round's value, when the record has them.
    bar: Option<Bar>,
}

#[derive(Clone, Debug)]
struct Line {
    /// The legend's name: the variant (with its thread count on a parameter axis).
    group: String,
    series: Series,
    points: Vec<Point>,
}

struct Panel {
    title: String,
    lines: Vec<Line>,
}

/// The x positions shared by all panels.
struct XTicks {
    labels: Vec<String>,
    name: String,
}

impl XTicks {
    fn label(&self, at: f64) -> String {
        let r = at.round();
        if (at - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < self.labels.len() {
            self.labels[r as usize].clone()
        } else {
            String::new()
        }
    }
}

/// Draws the plot of `records` of `suite`, which shows `quantity` ([`Suite::quantity`]),
/// into `path`.
pub fn write(
    path: &Path,
    suite: &str,
    quantity: &str,
    x_axis: XAxis,
    measure: Measure,
    records: &[Record],
) -> Result<(), BenchError> {
    let svg = render(suite, quantity, x_axis, measure, records)
        .map_err(|message| BenchError::Plot { path: path.to_owned(), message })?;
    std::fs::write(path, svg).map_err(|source| BenchError::Io { path: path.to_owned(), source })
}

/// The plot of `records` as an SVG document (what [`write()`] puts in the file): the
/// suite's measure, every variant; the error is plotters' message.
pub fn render(
    suite: &str,
    quantity: &str,
    x_axis: XAxis,
    measure: Measure,
    records: &[Record],
) -> Result<String, String> {
    Plot { suite, quantity, x_axis, measure, y: Y::Measure, spec: &PlotSpec::DEFAULT }
        .render(records)
}

impl Plot<'_> {
    /// The plot of `records` as an SVG document; the error is plotters' message.
    pub fn render(&self, records: &[Record]) -> Result<String, String> {
        let kept: Vec<Record> =
            records.iter().filter(|r| !self.spec.leaves_out(&r.variant)).cloned().collect();
        let mut panels = panels(self.x_axis, self.measure, self.y, &kept);
        let ticks = layout(self.x_axis, &kept, &mut panels);
        let note = self.spec.note(records);
        let bars =
            panels.iter().flat_map(|p| &p.lines).flat_map(|l| &l.points).any(|p| p.bar.is_some());
        let err = |e: &dyn std::fmt::Display| e.to_string();
        // Tall enough for the longest legend (one 18 px row per entry, from y = 40).
        let most = panels.iter().map(|p| legend_rows(p, self.y)).max().unwrap_or(0);
        let panel_h = PANEL_H.max(u32::try_from(60 + 18 * most).unwrap_or(u32::MAX / 64));
        let note_h = if note.is_some() { NOTE_H } else { 0 };
        let height = panel_h * u32::try_from(panels.len().max(1)).unwrap_or(1) + note_h;
        let (ymin, ymax) = y_range(&panels);
        let log = ymax / ymin > LOG_SPAN;
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (PANEL_W, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let (plots, foot) = root.split_vertically(height - note_h);
            if let Some(note) = &note {
                let size = caption_size(note).min(13);
                foot.draw(&Text::new(note.clone(), (12, 8), ("sans-serif", size)))
                    .map_err(|e| err(&e))?;
            }
            let areas = plots.split_evenly((panels.len().max(1), 1));
            let quantity = self.y.quantity(self.quantity);
            let label = self.y.label(self.measure);
            for (area, panel) in areas.iter().zip(&panels) {
                let caption = match panel.title.as_str() {
                    "" => format!("{}: {quantity}", self.suite),
                    params => format!("{}: {quantity}, {params}", self.suite),
                };
                let look = Look { bars, plain_y: self.y == Y::Latency };
                let drawn = if log {
                    let mut positive = Panel { title: String::new(), lines: panel.lines.clone() };
                    for line in &mut positive.lines {
                        line.points.retain(|p| p.y > 0.0);
                        for p in &mut line.points {
                            p.bar = p.bar.filter(|&(lo, _)| lo > 0.0);
                        }
                    }
                    let y = (ymin / 2.0..ymax * 2.0).log_scale();
                    draw_panel(
                        area,
                        &caption,
                        &ticks,
                        &positive,
                        y,
                        &format!("{label} (log)"),
                        look,
                    )
                } else {
                    draw_panel(area, &caption, &ticks, panel, 0.0..ymax * 1.15, &label, look)
                };
                drawn.map_err(|e| err(&e))?;
            }
            root.present().map_err(|e| err(&e))?;
        }
        Ok(out)
    }
}

/// The smallest positive and the largest value of every point and bar of every panel (the
/// one y scale of the plot); (1, 1) for a plot without points.
fn y_range(panels: &[Panel]) -> (f64, f64) {
    let values = panels
        .iter()
        .flat_map(|p| &p.lines)
        .flat_map(|l| &l.points)
        .flat_map(|p| [Some(p.y), p.bar.map(|b| b.0), p.bar.map(|b| b.1)])
        .flatten()
        .filter(|v| v.is_finite());
    let ymax = values.clone().fold(0.0f64, f64::max).max(1.0);
    let ymin = values.filter(|&y| y > 0.0).fold(f64::INFINITY, f64::min).min(ymax);
    (ymin, ymax)
}

/// Rows of a panel's legend: one per line group, plus the style key of a latency plot and
/// the line that says what the bars are.
fn legend_rows(panel: &Panel, y: Y) -> usize {
    let groups: BTreeSet<&str> = panel.lines.iter().map(|l| l.group.as_str()).collect();
    groups.len() + if y == Y::Latency { 2 } else { 0 } + 1
}

/// How a panel is drawn beyond its data.
#[derive(Clone, Copy, Debug)]
struct Look {
    /// Some point has a bar: the legend says what bars are ([`BARS`]).
    bars: bool,
    /// The y labels as plain numbers (`5000`, not `5.00k`: latencies in µs).
    plain_y: bool,
}

/// A y label: `12.35M`, or with `plain` the number itself (`5000`, `82.5`).
fn y_label(v: f64, plain: bool) -> String {
    match plain {
        false => human(v),
        true if v.abs() >= 100.0 || v == 0.0 => format!("{v:.0}"),
        true => format!("{v:.1}"),
    }
}

/// The caption's font size: 16 px, smaller for a caption that would not fit the plot's
/// width at 16 (a sans-serif character is about 0.55 em wide), but not below 9 px.
fn caption_size(caption: &str) -> u32 {
    let width = f64::from(PANEL_W - LEGEND_W) - 24.0;
    let fits = (width / (0.55 * 16.0)) as usize;
    let chars = caption.chars().count().max(1);
    if chars <= fits {
        16
    } else {
        ((16 * fits / chars) as u32).max(9)
    }
}

fn draw_panel<'a, DB, R>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    ticks: &XTicks,
    panel: &Panel,
    y: R,
    y_desc: &str,
    look: Look,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    R: AsRangedCoord<Value = f64>,
    R::CoordDescType: ValueFormatter<f64>,
{
    let nx = ticks.labels.len().max(1);
    let x: RangedCoordf64 = (-0.5f64..(nx as f64 - 0.5)).into();
    // The legend gets its own column right of the plot, so it never hides a line.
    let (plot, legend) = area.split_horizontally(PANEL_W - LEGEND_W);
    let mut chart = ChartBuilder::on(&plot)
        .caption(caption, ("sans-serif", caption_size(caption)))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_labels(nx * 2 + 1)
        .x_label_formatter(&|v| ticks.label(*v))
        .y_label_formatter(&|v| y_label(*v, look.plain_y))
        .x_desc(ticks.name.as_str())
        .y_desc(y_desc)
        .disable_x_mesh()
        .draw()?;
    let mut groups: Vec<&str> = Vec::new();
    for line in &panel.lines {
        if !groups.contains(&line.group.as_str()) {
            groups.push(&line.group);
        }
    }
    for line in &panel.lines {
        let i = groups.iter().position(|g| *g == line.group).unwrap_or(0);
        let color = line_color(i);
        let hollow = line.series == Series::P99;
        let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (p.x, p.y)).collect();
        if pts.len() > 1 {
            if hollow {
                chart.draw_series(DashedLineSeries::new(
                    pts.clone(),
                    7,
                    5,
                    color.stroke_width(2),
                ))?;
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
            }
        }
        for p in &line.points {
            let Some((lo, hi)) = p.bar else { continue };
            let cap = |y: f64| {
                EmptyElement::at((p.x, y))
                    + PathElement::new(vec![(-5, 0), (5, 0)], color.stroke_width(1))
            };
            chart.draw_series([PathElement::new(
                vec![(p.x, lo), (p.x, hi)],
                color.stroke_width(1),
            )])?;
            chart.draw_series([cap(lo), cap(hi)])?;
        }
        chart.draw_series(pts.iter().map(|&p| EmptyElement::at(p) + marker(i, color, hollow)))?;
        chart.draw_series(pts.iter().map(|&p| EmptyElement::at(p) + outline(i, color)))?;
    }
    let row = |k: usize| 40 + 18 * i32::try_from(k).unwrap_or(i32::MAX / 32);
    for (i, name) in groups.iter().enumerate() {
        let (color, y) = (line_color(i), row(i));
        legend.draw(&PathElement::new(vec![(4, y), (36, y)], color.stroke_width(2)))?;
        legend.draw(&(EmptyElement::at((20, y)) + marker(i, color, false)))?;
        legend.draw(&(EmptyElement::at((20, y)) + outline(i, color)))?;
        legend.draw(&Text::new((*name).to_owned(), (42, y - 7), ("sans-serif", 13)))?;
    }
    let mut next = groups.len();
    if panel.lines.iter().any(|l| l.series == Series::P99) {
        let black = RGBColor(0x44, 0x44, 0x44).to_rgba();
        let y = row(next);
        legend.draw(&PathElement::new(vec![(4, y), (36, y)], black.stroke_width(2)))?;
        legend.draw(&(EmptyElement::at((20, y)) + marker(0, black, false)))?;
        legend.draw(&(EmptyElement::at((20, y)) + outline(0, black)))?;
        legend.draw(&Text::new("p50".to_owned(), (42, y - 7), ("sans-serif", 13)))?;
        let y = row(next + 1);
        legend.draw(&DashedPathElement::new(vec![(4, y), (36, y)], 7, 5, black.stroke_width(2)))?;
        legend.draw(&(EmptyElement::at((20, y)) + marker(0, black, true)))?;
        legend.draw(&(EmptyElement::at((20, y)) + outline(0, black)))?;
        legend.draw(&Text::new("p99".to_owned(), (42, y - 7), ("sans-serif", 13)))?;
        next += 2;
    }
    if look.bars {
        legend.draw(&Text::new(BARS.to_owned(), (4, row(next) - 4), ("sans-serif", 12)))?;
    }
    Ok(())
}

/// Okabe and Ito's colour-blind-safe colours (their yellow left out), then Paul Tol's
/// muted scheme (its sand left out): 15 colours, then again from the first (the marker
/// shapes keep lines apart past that).
const COLORS: [(u8, u8, u8); 15] = [
    (0x00, 0x72, 0xB2), // blue
    (0xD5, 0x5E, 0x00), // vermillion
    (0x00, 0x9E, 0x73), // bluish green
    (0xCC, 0x79, 0xA7), // reddish purple
    (0xE6, 0x9F, 0x00), // orange
    (0x56, 0xB4, 0xE9), // sky blue
    (0x00, 0x00, 0x00), // black
    (0x33, 0x22, 0x88), // indigo
    (0xCC, 0x66, 0x77), // rose
    (0x44, 0xAA, 0x99), // teal
    (0x88, 0x22, 0x55), // wine
    (0x99, 0x99, 0x33), // olive
    (0x88, 0xCC, 0xEE), // cyan
    (0xAA, 0x44, 0x99), // purple
    (0x11, 0x77, 0x33), // green
];

/// The colour of line `i`.
fn line_color(i: usize) -> RGBAColor {
    let (r, g, b) = COLORS[i % COLORS.len()];
    RGBColor(r, g, b).to_rgba()
}

/// Marker shapes, as polygons around the point (pixels): circle, square, triangle,
/// diamond, cross, plus, downward triangle, hexagon.
const MARKERS: usize = 8;

/// The inside of the marker of line `i`: its shape ([`MARKERS`] of them, then again),
/// filled with `color`, or white when `hollow` (a latency plot's p99); [`outline`] draws
/// its edge.
fn marker(i: usize, color: RGBAColor, hollow: bool) -> Polygon<(i32, i32)> {
    let fill = if hollow { WHITE.to_rgba() } else { color };
    Polygon::new(shape(i), fill.filled())
}

/// The edge of the marker of line `i`, in `color`.
fn outline(i: usize, color: RGBAColor) -> PathElement<(i32, i32)> {
    let mut points = shape(i);
    if let Some(&first) = points.first() {
        points.push(first);
    }
    PathElement::new(points, color.stroke_width(1))
}

/// The polygon of marker `i` around the point (pixels).
fn shape(i: usize) -> Vec<(i32, i32)> {
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, TAU};
    let ring = |n: usize, r: f64, turn: f64| -> Vec<(i32, i32)> {
        (0..n)
            .map(|k| {
                let a = turn + TAU * k as f64 / n as f64;
                ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
            })
            .collect()
    };
    // A plus of arm half-width 1.5 px and reach 5 px, turned by `turn`.
    let plus = |turn: f64| -> Vec<(i32, i32)> {
        let arm = [(1.5, 5.0), (1.5, 1.5), (5.0, 1.5)];
        (0..4)
            .flat_map(|q| {
                let a = turn + FRAC_PI_2 * f64::from(q);
                let (sin, cos) = a.sin_cos();
                arm.map(|(x, y): (f64, f64)| {
                    ((x * cos - y * sin).round() as i32, (x * sin + y * cos).round() as i32)
                })
            })
            .collect()
    };
    match i % MARKERS {
        0 => ring(12, 4.0, 0.0),
        1 => vec![(-4, -4), (4, -4), (4, 4), (-4, 4)],
        2 => ring(3, 5.0, -FRAC_PI_2),
        3 => ring(4, 5.0, 0.0),
        4 => plus(FRAC_PI_4),
        5 => plus(0.0),
        6 => ring(3, 5.0, FRAC_PI_2),
        _ => ring(6, 4.5, 0.0),
    }
}

/// Places the points of `panels` on the x axis and names its ticks: each distinct x value
/// of all panels at its index, labelled with the value (`16*` for an oversubscribed thread
/// count); or, when all records share one x value, each line group (variant) at its own
/// index, labelled with its name (`*` when it oversubscribes), p50 and p99 of one variant
/// side by side.
fn layout(x_axis: XAxis, records: &[Record], panels: &mut [Panel]) -> XTicks {
    let set: BTreeSet<u64> = panels
        .iter()
        .flat_map(|p| p.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x.to_bits())))
        .collect();
    let mut values: Vec<f64> = set.into_iter().map(f64::from_bits).collect();
    values.sort_by(f64::total_cmp);
    let label = |v: f64| {
        let text = if v.fract() == 0.0 { format!("{}", v as i64) } else { format!("{v}") };
        let over = matches!(x_axis, XAxis::Threads | XAxis::Clients)
            && records.iter().any(|r| r.oversubscribed && r.threads as f64 == v);
        if over {
            format!("{text}*")
        } else {
            text
        }
    };
    let axis = match x_axis {
        XAxis::Threads => "threads (* = oversubscribed)".to_owned(),
        XAxis::Clients => "clients (* = oversubscribed)".to_owned(),
        XAxis::Param(p) => field_label(p),
    };
    if let [only] = values.as_slice() {
        let mut groups: Vec<String> = Vec::new();
        for line in panels.iter().flat_map(|p| &p.lines) {
            if !groups.contains(&line.group) {
                groups.push(line.group.clone());
            }
        }
        if groups.len() > 1 {
            for line in panels.iter_mut().flat_map(|p| &mut p.lines) {
                let at = groups.iter().position(|g| *g == line.group).unwrap_or(0) as f64;
                let shift = match line.series {
                    Series::Main => 0.0,
                    Series::P50 => -0.1,
                    Series::P99 => 0.1,
                };
                for p in &mut line.points {
                    p.x = at + shift;
                }
            }
            // The value without its star: which variants oversubscribe, their labels say.
            let at =
                if only.fract() == 0.0 { format!("{}", *only as i64) } else { format!("{only}") };
            let all_at = match x_axis {
                XAxis::Threads => format!("all at {at} threads"),
                XAxis::Clients => format!("all at {at} clients"),
                XAxis::Param(p) => format!("all at {} {at}", field_label(p)),
            };
            let over = |g: &str| records.iter().any(|r| r.oversubscribed && r.variant == g);
            let starred = groups.iter().any(|g| over(g));
            let axis = match starred {
                true => format!("variant ({all_at}; * = oversubscribed)"),
                false => format!("variant ({all_at})"),
            };
            let groups =
                groups.into_iter().map(|g| if over(&g) { format!("{g}*") } else { g }).collect();
            return XTicks { labels: groups, name: axis };
        }
    }
    for p in panels.iter_mut().flat_map(|p| &mut p.lines).flat_map(|l| &mut l.points) {
        p.x = values.iter().position(|&v| v == p.x).unwrap_or(0) as f64;
    }
    XTicks { labels: values.into_iter().map(label).collect(), name: axis }
}

/// A numeric field of `record` by its JSON name, standard or extra (`None` when it is
/// missing, null or not a number).
fn field(record: &Value, key: &str) -> Option<f64> {
    record.get(key)?.as_f64()
}

/// The points a record gives a plot of `y`: (series, value, slowest–fastest round).
fn values(measure: Measure, y: Y, r: &Record) -> Vec<(Series, f64, Option<Bar>)> {
    let json = serde_json::to_value(r).unwrap_or(Value::Null);
    // A field's spread over rounds, where the record keeps one (`<key>_min`, `<key>_max`).
    let spread = |key: &str, scale: f64| match (
        field(&json, &format!("{key}_min")),
        field(&json, &format!("{key}_max")),
    ) {
        (Some(lo), Some(hi)) if r.rounds > 1 => Some((lo * scale, hi * scale)),
        _ => None,
    };
    let one = |key: &str, scale: f64| field(&json, key).map(|v| (v * scale, spread(key, scale)));
    let main = |v: Option<(f64, Option<Bar>)>| {
        v.map(|(y, bar)| (Series::Main, y, bar)).into_iter().collect::<Vec<_>>()
    };
    match (y, measure) {
        (Y::Measure, Measure::Throughput) => main(one("ops_per_sec", 1.0)),
        (Y::Measure, Measure::Extras(keys)) => main(keys.first().and_then(|k| one(k, 1.0))),
        (Y::Field(k), _) => main(one(k, 1.0)),
        (Y::Latency, _) => [(Series::P50, "p50_ns"), (Series::P99, "p99_ns")]
            .into_iter()
            .filter_map(|(series, k)| one(k, 1e-3).map(|(y, bar)| (series, y, bar)))
            .collect(),
    }
}

/// Groups records into panels (by params minus the x parameter) and lines (by variant, and
/// by thread count too when the x axis is a parameter and several thread counts exist; a
/// latency plot has a p50 and a p99 line per group).
fn panels(x_axis: XAxis, measure: Measure, y: Y, records: &[Record]) -> Vec<Panel> {
    let multi_threads = records.iter().any(|r| r.threads != records[0].threads);
    let mut panels: Vec<Panel> = Vec::new();
    for r in records {
        let (x, panel_params) = match x_axis {
            XAxis::Threads | XAxis::Clients => (r.threads as f64, r.params.clone()),
            XAxis::Param(name) => {
                let mut rest: Map<String, Value> = r.params.clone();
                let x = rest.remove(name).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
                (x, rest)
            }
        };
        if !x.is_finite() {
            continue;
        }
        let group = match x_axis {
            XAxis::Param(_) if multi_threads => {
                let star = if r.oversubscribed { "*" } else { "" };
                format!("{} ({}{star} thr)", r.variant, r.threads)
            }
            _ => r.variant.clone(),
        };
        let title = short(&panel_params);
        for (series, value, bar) in values(measure, y, r) {
            if !value.is_finite() {
                continue;
            }
            let panel = match panels.iter().position(|p| p.title == title) {
                Some(i) => &mut panels[i],
                None => {
                    panels.push(Panel { title: title.clone(), lines: Vec::new() });
                    panels.last_mut().expect("just pushed")
                }
            };
            let point = Point { x, y: value, bar };
            match panel.lines.iter_mut().find(|l| l.group == group && l.series == series) {
                Some(line) => line.points.push(point),
                None => {
                    panel.lines.push(Line { group: group.clone(), series, points: vec![point] })
                }
            }
        }
    }
    for p in &mut panels {
        for line in &mut p.lines {
            line.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
    }
    panels
}

/// `{"exclusive_pct":20,"mode":"x","range_bytes":1024}` as `exclusive 20 %, mode x, range
/// 1024 B` (empty without params).
fn short(params: &Map<String, Value>) -> String {
    params
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match unit_of(k) {
                Some((name, unit)) if !name.is_empty() => {
                    format!("{} {value} {unit}", name.replace('_', " "))
                }
                _ => format!("{} {value}", k.replace('_', " ")),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `variant` at `threads` with `params`, `ops` ops/s and, when `spread`,
    /// rounds from 0.9x to 1.1x of it.
    fn rec(
        variant: &str,
        threads: usize,
        params: &[(&str, i64)],
        ops: f64,
        spread: bool,
    ) -> Record {
        let mut r = Record::for_test(variant, threads, ops);
        r.params = params.iter().map(|&(k, v)| (k.to_owned(), Value::from(v))).collect();
        r.rounds = 3;
        if spread {
            r.ops_per_sec_min = Some(ops * 0.9);
            r.ops_per_sec_max = Some(ops * 1.1);
        }
        r.p50_ns = Some(2_000);
        r.p99_ns = Some(9_000);
        r
    }

    fn plot<'a>(y: Y, spec: &'a PlotSpec, x_axis: XAxis) -> Plot<'a> {
        Plot {
            suite: "s",
            quantity: "things per second",
            x_axis,
            measure: Measure::Throughput,
            y,
            spec,
        }
    }

    /// The `<text>` elements of an SVG.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect()
    }

    /// Two panels, one with values ten times the other's: both get the y ticks of the larger.
    #[test]
    fn the_panels_of_one_plot_share_one_y_scale() {
        let records = [
            rec("a", 1, &[("mode", 1)], 400.0, false),
            rec("a", 2, &[("mode", 1)], 300.0, false),
            rec("a", 1, &[("mode", 2)], 1000.0, false),
            rec("a", 2, &[("mode", 2)], 900.0, false),
        ];
        let svg = plot(Y::Measure, &PlotSpec::DEFAULT, XAxis::Threads).render(&records).unwrap();
        let top = texts(&svg).iter().filter(|t| **t == "1.00k").count();
        assert_eq!(top, 2, "the 1000 tick on both panels: {:?}", texts(&svg));
    }

    /// A point with a spread over rounds gets a bar, and the title says what the bars are;
    /// without a spread neither.
    #[test]
    fn spreads_draw_error_bars_and_the_title_says_so() {
        let with: Vec<Record> = [1, 2].map(|t| rec("a", t, &[], 100.0 * t as f64, true)).to_vec();
        let without: Vec<Record> =
            [1, 2].map(|t| rec("a", t, &[], 100.0 * t as f64, false)).to_vec();
        let spec = PlotSpec::DEFAULT;
        let (a, b) = (
            plot(Y::Measure, &spec, XAxis::Threads).render(&with).unwrap(),
            plot(Y::Measure, &spec, XAxis::Threads).render(&without).unwrap(),
        );
        assert!(texts(&a).contains(&BARS), "{a}");
        assert!(!b.contains("slowest"));
        // One bar and two caps per point, thin lines in the line's colour: three more per
        // point (the markers' outlines are the others).
        let paths = |svg: &str| svg.matches("stroke=\"#0072B2\" stroke-width=\"1\"").count();
        assert_eq!(paths(&a), paths(&b) + 3 * 2, "{a}");
    }

    /// Variants left out are not drawn; the note under the plot names those present.
    #[test]
    fn left_out_variants_are_named_under_the_plot_not_drawn() {
        const OUT: &[LeaveOut] = &[LeaveOut {
            what: "local-memory references",
            variants: &["shm", "absent"],
            why: "no network",
        }];
        let spec = PlotSpec { plots: &[Y::Measure], leave_out: OUT };
        let records = [1, 2].map(|t| rec("net", t, &[], 10.0, false));
        let records = [&records[..], &[1, 2].map(|t| rec("shm", t, &[], 1e7, false))[..]].concat();
        let svg = plot(Y::Measure, &spec, XAxis::Clients).render(&records).unwrap();
        let texts = texts(&svg);
        assert!(texts.contains(&"net") && !texts.contains(&"shm"), "{texts:?}");
        let note = "local-memory references shm is left off the axes: no network; its number \
                    is in the table.";
        assert_eq!(spec.note(&records).as_deref(), Some(note));
        assert!(texts.contains(&note), "{texts:?}");
        assert!(!texts.iter().any(|t| t.contains("(log)")), "no log scale once shm is out");
        assert_eq!(PlotSpec::DEFAULT.note(&records), None);
    }

    /// A latency plot draws p50 and p99 per variant in µs; with one x value (a table) the
    /// variants go on the x axis.
    #[test]
    fn a_latency_table_plots_p50_and_p99_per_variant_on_a_variant_axis() {
        let mut records = ["echo", "redis-get", "redis-cas"].map(|v| rec(v, 1, &[], 1e4, true));
        let svg = plot(Y::Latency, &PlotSpec::DEFAULT, XAxis::Clients).render(&records).unwrap();
        let texts = texts(&svg);
        for t in ["p50", "p99", "latency (µs)", "variant (all at 1 clients)", "redis-cas"] {
            assert!(texts.contains(&t), "{t}: {texts:?}");
        }
        assert!(texts.iter().any(|t| t.starts_with("s: sampled latency, p50")), "{texts:?}");
        let ticks: Vec<&str> = texts.iter().copied().filter(|t| *t == "echo").collect();
        assert_eq!(ticks.len(), 2, "a tick and a legend entry: {texts:?}");
        assert!(svg.contains("stroke-dasharray") || svg.matches("<polyline").count() > 0);
        // Only the variant that oversubscribes is starred.
        records[2].oversubscribed = true;
        let svg = plot(Y::Latency, &PlotSpec::DEFAULT, XAxis::Clients).render(&records).unwrap();
        let starred = super::tests::texts(&svg);
        for t in ["variant (all at 1 clients; * = oversubscribed)", "redis-cas*", "echo"] {
            assert!(starred.contains(&t), "{t}: {starred:?}");
        }
        assert!(!starred.contains(&"echo*"), "{starred:?}");
    }

    #[test]
    fn long_captions_get_a_smaller_font() {
        assert_eq!(caption_size("w1: lock+unlock per second"), 16);
        let long = "x".repeat(200);
        assert!(caption_size(&long) < 16 && caption_size(&long) >= 9);
    }
}
