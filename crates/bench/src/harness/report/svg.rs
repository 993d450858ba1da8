//! `<out>/<suite>.svg`: ops/s (or the suite's [`Measure`]) against the x axis, one line per
//! variant, one panel per params group (the params with the x-axis parameter removed).
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

use super::human;
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

/// Draws the plot of `records` into `path`.
pub fn write(
    path: &Path,
    suite: &str,
    x_axis: XAxis,
    measure: Measure,
    records: &[Record],
) -> Result<(), BenchError> {
    let svg = render(suite, x_axis, measure, records)
        .map_err(|message| BenchError::Plot { path: path.to_owned(), message })?;
    std::fs::write(path, svg).map_err(|source| BenchError::Io { path: path.to_owned(), source })
}

/// The plot of `records` as an SVG document (what [`write()`] puts in the file); the error is
/// plotters' message.
pub fn render(
    suite: &str,
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
            let caption = format!("{suite}: {}", panel.title);
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
                draw_panel(area, &caption, &ticks, panel, 0.0..ymax * 1.15, label)
                    .map_err(|e| err(&e))?;
            }
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(out)
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
        .caption(caption, ("sans-serif", 16))
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
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (ticks.index_of(x), y)).collect();
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        let y = 40 + 18 * i32::try_from(i).unwrap_or(i32::MAX / 32);
        legend.draw(&PathElement::new(vec![(4, y), (28, y)], color.stroke_width(3)))?;
        legend.draw(&Text::new(name.clone(), (34, y - 7), ("sans-serif", 13)))?;
    }
    Ok(())
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
            let over = x_axis == XAxis::Threads
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
        XAxis::Param(p) => p.to_owned(),
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
            XAxis::Threads => (r.threads as f64, r.params.clone()),
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

/// `{"a":1,"b":"x"}` as `a=1 b=x`.
fn short(params: &Map<String, Value>) -> String {
    if params.is_empty() {
        return "all cases".to_owned();
    }
    params
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
