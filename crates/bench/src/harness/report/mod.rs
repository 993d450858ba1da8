//! Report writers: the stdout table, the JSON records and the SVG plot.

pub mod json;
pub mod svg;
pub mod table;

use crate::harness::record::Record;

/// The smallest and largest round of `r`'s ops/s as `12.1M–12.6M`, or `None` when the
/// record has no spread to show (one round, or older JSON without it).
pub fn rate_range(r: &Record) -> Option<String> {
    match (r.ops_per_sec_min, r.ops_per_sec_max) {
        (Some(min), Some(max)) if r.rounds > 1 => Some(format!("{}–{}", human(min), human(max))),
        _ => None,
    }
}

/// `r`'s median ops/s with its spread over rounds: `12.35M (12.1M–12.6M)`, or the median
/// alone (see [`rate_range`]).
pub fn rate_with_range(r: &Record) -> String {
    match rate_range(r) {
        Some(range) => format!("{} ({range})", human(r.ops_per_sec)),
        None => human(r.ops_per_sec),
    }
}

/// The unit a field's name ends in (`first_grant_ms` -> `ms`) and the name without it:
/// `_ms`, `_us`, `_ns`, `_pct`, `_bytes` and `_per_sec`; `None` for a name without one.
pub fn unit_of(key: &str) -> Option<(&str, &'static str)> {
    const UNITS: [(&str, &str); 6] = [
        ("_per_sec", "/s"),
        ("_bytes", "B"),
        ("_pct", "%"),
        ("_ms", "ms"),
        ("_us", "µs"),
        ("_ns", "ns"),
    ];
    UNITS.iter().find_map(|&(suffix, unit)| Some((key.strip_suffix(suffix)?, unit)))
}

/// A field's name in words with its unit: `first_grant_ms` as `first grant (ms)`,
/// `bytes_per_range` as `bytes per range` (for axis labels).
pub fn field_label(key: &str) -> String {
    match unit_of(key) {
        Some((name, unit)) if !name.is_empty() => format!("{} ({unit})", name.replace('_', " ")),
        _ => key.replace('_', " "),
    }
}

/// A field's value with its unit (see [`unit_of`]): `first_grant_ms` 2180.4 as `2180 ms`,
/// `line_transfer_ns` 63.459 as `63.5 ns`, `requests_per_sec` as `12.35M/s`, `held_bytes`
/// 40960 as `40.96kB`; a field without a unit as a plain number (`human` from 1000 up).
pub fn value_with_unit(key: &str, x: f64) -> String {
    let plain = |x: f64| {
        if (x.fract() == 0.0 && x.abs() < 1e4) || x.abs() >= 100.0 {
            format!("{x:.0}")
        } else if x.abs() >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.2}")
        }
    };
    match unit_of(key) {
        // Durations and shares in full: 2180 ms, not 2.18k ms.
        Some((_, unit @ ("ms" | "µs" | "ns"))) => format!("{} {unit}", plain(x)),
        Some((_, "%")) => format!("{} %", plain(x)),
        Some((_, unit)) if x.abs() >= 1e4 => format!("{}{unit}", human(x)),
        Some((_, unit)) => format!("{} {unit}", plain(x)),
        None if x.fract() == 0.0 && x.abs() < 1e4 => format!("{x:.0}"),
        None if x.abs() < 1e3 => format!("{x:.3}"),
        None => human(x),
    }
}

/// A ratio as a plain decimal and `x`, never with an exponent: two decimals from 0.1 to 10
/// (`0.41x`, `7.20x`), one from 10 (`12.3x`), none from 100 (`123x`), and two significant
/// digits below 0.1 (`0.095x`, `0.0042x`); `0x` for zero, `-` for what is not a number.
pub fn ratio(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "-".to_owned()
    } else if a == 0.0 {
        "0x".to_owned()
    } else if a >= 100.0 {
        format!("{x:.0}x")
    } else if a >= 10.0 {
        format!("{x:.1}x")
    } else if a >= 0.1 {
        format!("{x:.2}x")
    } else {
        // Two significant digits: 0.095 has its first digit at the 2nd decimal.
        let first = (-a.log10()).ceil() as usize; // 0.095 -> 2, 0.0042 -> 3
        let decimals = (first + 1).min(17);
        format!("{x:.decimals$}x")
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_shows_its_rounds_range_only_with_several_rounds() {
        let mut r = Record { rounds: 3, ..Record::for_test("v", 1, 12_345_678.9) };
        assert_eq!(rate_with_range(&r), "12.35M", "no spread recorded");
        r.ops_per_sec_min = Some(12_100_000.0);
        r.ops_per_sec_max = Some(12_600_000.0);
        assert_eq!(rate_with_range(&r), "12.35M (12.10M–12.60M)");
        r.rounds = 1;
        assert_eq!(rate_with_range(&r), "12.35M");
    }

    #[test]
    fn ratios_print_as_plain_decimals() {
        assert_eq!(ratio(0.095), "0.095x");
        assert_eq!(ratio(0.0946), "0.095x");
        assert_eq!(ratio(0.0042), "0.0042x");
        assert_eq!(ratio(0.00001234), "0.000012x");
        assert_eq!(ratio(0.41), "0.41x");
        assert_eq!(ratio(1.0), "1.00x");
        assert_eq!(ratio(7.2), "7.20x");
        assert_eq!(ratio(12.34), "12.3x");
        assert_eq!(ratio(123.4), "123x");
        assert_eq!(ratio(0.0), "0x");
        assert_eq!(ratio(f64::NAN), "-");
        for x in [3e-9, 0.05, 0.099_999, 0.5, 9.999, 99.99, 1e6] {
            let text = ratio(x);
            assert!(!text.contains('e') && text.ends_with('x'), "{x}: {text}");
        }
    }

    #[test]
    fn fields_print_with_their_units() {
        assert_eq!(value_with_unit("first_grant_ms", 2180.4), "2180 ms");
        assert_eq!(value_with_unit("bar_ms", 3000.0), "3000 ms");
        assert_eq!(value_with_unit("line_transfer_ns", 63.459), "63.5 ns");
        assert_eq!(value_with_unit("seed_p50_us", 2.5), "2.50 µs");
        assert_eq!(value_with_unit("requests_per_sec", 12_345_678.9), "12.35M/s");
        assert_eq!(value_with_unit("held_bytes", 40_960.0), "40.96kB");
        assert_eq!(value_with_unit("idle_bytes", 48.0), "48 B");
        assert_eq!(value_with_unit("reclaimed", 32.0), "32");
        assert_eq!(value_with_unit("share", 0.25), "0.250");
        assert_eq!(field_label("first_grant_ms"), "first grant (ms)");
        assert_eq!(field_label("bytes_per_range"), "bytes per range");
        assert_eq!(field_label("held_bytes"), "held (B)");
    }
}
