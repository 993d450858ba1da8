//! `<out>/<suite>.svg`: ops/s (or the suite's [`Measure`]) against the x axis, one line per
//! variant, one panel per params group (the params with the x-axis parameter removed).
//!
//! A panel's title says what is measured in words ([`Suite::quantity`]) and the panel's fixed
//! parameters in a compact form. Lines take the colour-blind-safe colours of Okabe and Ito,
//! then Paul Tol's muted scheme (yellow and sand left out: unreadable on white), and each
//! line has its own marker shape, shown in the legend, so lines stay apart in grey too.
//!
//! Points sit at the *index* of their x value and are labelled with the value, so 1, 2, 8,
//! 16 threads (or heights 4..16) spread evenly. Oversubscribed thread counts are labelled
//! with `*`. A panel whose values span more than [`LOG_SPAN`]x uses a logarithmic y axis
//! (which leaves out points at or below 0: a log axis cannot show them).

use std::collections::BTreeSet;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
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
/// Ratio of largest to smallest value above which a panel's y axis is logarithmic.
pub const LOG_SPAN: f64 = 50.0;

struct Panel {
    title: String,
    /// (line name, (x value, y value) points)
    lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// The x positions shared by all panels.
struct XTicks {
    values: Vec<f64>,
    labels: Vec<String>,
    name: String,
}

impl XTicks {
    fn index_of(&self, x: f64) -> f64 {
        self.values.iter().position(|&v| v == x).unwrap_or(0) as f64
    }

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

/// The plot of `records` as an SVG document (what [`write()`] puts in the file); the error is
/// plotters' message.
pub fn render(
    suite: &str,
    quantity: &str,
    x_axis: XAxis,
    measure: Measure,
    records: &[Record],
) -> Result<String, String> {
    let panels = panels(x_axis, measure, records);
    let ticks = ticks(x_axis, records, &panels);
    let err = |e: &dyn std::fmt::Display| e.to_string();
    // Tall enough for the longest legend (one 18 px row per line, from y = 40).
    let most_lines = panels.iter().map(|p| p.lines.len()).max().unwrap_or(0);
    let panel_h = PANEL_H.max(u32::try_from(60 + 18 * most_lines).unwrap_or(u32::MAX / 64));
    let height = panel_h * u32::try_from(panels.len().max(1)).unwrap_or(1);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (PANEL_W, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for (area, panel) in areas.iter().zip(&panels) {
            let ys = panel.lines.iter().flat_map(|(_, pts)| pts.iter().map(|&(_, y)| y));
            let ymax = ys.clone().fold(0.0f64, f64::max).max(1.0);
            let ymin = ys.filter(|&y| y > 0.0).fold(f64::INFINITY, f64::min).min(ymax);
            let caption = match panel.title.as_str() {
                "" => format!("{suite}: {quantity}"),
                params => format!("{suite}: {quantity}, {params}"),
            };
            let label = measure.y_label();
            if ymax / ymin > LOG_SPAN {
                let y = (ymin / 2.0..ymax * 2.0).log_scale();
                let mut positive = Panel { title: String::new(), lines: panel.lines.clone() };
                for (_, pts) in &mut positive.lines {
                    pts.retain(|&(_, y)| y > 0.0);
                }
                draw_panel(area, &caption, &ticks, &positive, y, &format!("{label} (log)"))
                    .map_err(|e| err(&e))?;
            } else {
                draw_panel(area, &caption, &ticks, panel, 0.0..ymax * 1.15, &label)
                    .map_err(|e| err(&e))?;
            }
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(out)
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

fn draw_panel<'a, DB, Y>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    ticks: &XTicks,
    panel: &Panel,
    y: Y,
    y_desc: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let nx = ticks.values.len().max(1);
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
        .y_label_formatter(&|v| human(*v))
        .x_desc(ticks.name.as_str())
        .y_desc(y_desc)
        .disable_x_mesh()
        .draw()?;
    for (i, (name, pts)) in panel.lines.iter().enumerate() {
        let color = line_color(i);
        let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (ticks.index_of(x), y)).collect();
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.into_iter().map(|p| EmptyElement::at(p) + marker(i, color)))?;
        let y = 40 + 18 * i32::try_from(i).unwrap_or(i32::MAX / 32);
        legend.draw(&PathElement::new(vec![(4, y), (36, y)], color.stroke_width(2)))?;
        legend.draw(&(EmptyElement::at((20, y)) + marker(i, color)))?;
        legend.draw(&Text::new(name.clone(), (42, y - 7), ("sans-serif", 13)))?;
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

/// The marker of line `i`: its shape ([`MARKERS`] of them, then again), filled with `color`.
fn marker(i: usize, color: RGBAColor) -> Polygon<(i32, i32)> {
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
    let points = match i % MARKERS {
        0 => ring(12, 4.0, 0.0),
        1 => vec![(-4, -4), (4, -4), (4, 4), (-4, 4)],
        2 => ring(3, 5.0, -FRAC_PI_2),
        3 => ring(4, 5.0, 0.0),
        4 => plus(FRAC_PI_4),
        5 => plus(0.0),
        6 => ring(3, 5.0, FRAC_PI_2),
        _ => ring(6, 4.5, 0.0),
    };
    Polygon::new(points, color.filled())
}

/// The sorted distinct x values of all panels and their labels (`16*` for an oversubscribed
/// thread count).
fn ticks(x_axis: XAxis, records: &[Record], panels: &[Panel]) -> XTicks {
    let set: BTreeSet<u64> = panels
        .iter()
        .flat_map(|p| p.lines.iter().flat_map(|(_, pts)| pts.iter().map(|&(x, _)| x.to_bits())))
        .collect();
    let mut values: Vec<f64> = set.into_iter().map(f64::from_bits).collect();
    values.sort_by(f64::total_cmp);
    let labels = values
        .iter()
        .map(|&v| {
            let text = if v.fract() == 0.0 { format!("{}", v as i64) } else { format!("{v}") };
            let over = matches!(x_axis, XAxis::Threads | XAxis::Clients)
                && records.iter().any(|r| r.oversubscribed && r.threads as f64 == v);
            if over {
                format!("{text}*")
            } else {
                text
            }
        })
        .collect();
    let name = match x_axis {
        XAxis::Threads => "threads (* = oversubscribed)".to_owned(),
        XAxis::Clients => "clients (* = oversubscribed)".to_owned(),
        XAxis::Param(p) => field_label(p),
    };
    XTicks { values, labels, name }
}

/// Groups records into panels (by params minus the x parameter) and lines (by variant, and
/// by thread count too when the x axis is a parameter and several thread counts exist).
fn panels(x_axis: XAxis, measure: Measure, records: &[Record]) -> Vec<Panel> {
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
        let Some(y) = measure.y(r).filter(|y| y.is_finite()) else { continue };
        if !x.is_finite() {
            continue;
        }
        let line = match x_axis {
            XAxis::Param(_) if multi_threads => {
                let star = if r.oversubscribed { "*" } else { "" };
                format!("{} ({}{star} thr)", r.variant, r.threads)
            }
            _ => r.variant.clone(),
        };
        let title = short(&panel_params);
        let panel = match panels.iter().position(|p| p.title == title) {
            Some(i) => &mut panels[i],
            None => {
                panels.push(Panel { title, lines: Vec::new() });
                panels.last_mut().expect("just pushed")
            }
        };
        match panel.lines.iter_mut().find(|(n, _)| *n == line) {
            Some((_, pts)) => pts.push((x, y)),
            None => panel.lines.push((line, vec![(x, y)])),
        }
    }
    for p in &mut panels {
        for (_, pts) in &mut p.lines {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
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

    #[test]
    fn long_captions_get_a_smaller_font() {
        assert_eq!(caption_size("w1: lock+unlock per second"), 16);
        let long = "x".repeat(200);
        assert!(caption_size(&long) < 16 && caption_size(&long) >= 9);
    }
}
