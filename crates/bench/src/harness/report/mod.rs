//! Report writers: the stdout table, the JSON records and the SVG plot.

pub mod json;
pub mod svg;
pub mod table;

/// `12_345_678.9` as `12.35M`, for tables and axis labels.
pub fn human(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "-".to_owned()
    } else if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.1}")
    }
}
