//! Human durations for `--timeout`: `500ms`, `2s`, `1.5s`, `1m`, `1h30m`, `2d`; a bare
//! number is seconds (`1.5` is 1.5 s).
//!
//! Written here rather than taken from `humantime`: that crate accepts neither bare
//! numbers nor fractions (`1.5s`), both of which this option always took, so it would
//! need the same hand parsing around it; the whole grammar is a few lines.

use std::time::Duration;

use rangelock_client::MAX_TIMEOUT;

/// Units, longest suffix first so `ms` is not read as `m`.
const UNITS: &[(&str, u128)] = &[
    ("ms", 1_000_000),
    ("min", 60 * NS_PER_S),
    ("sec", NS_PER_S),
    ("s", NS_PER_S),
    ("m", 60 * NS_PER_S),
    ("h", 3600 * NS_PER_S),
    ("d", 86_400 * NS_PER_S),
    ("y", 365 * 86_400 * NS_PER_S),
];

const NS_PER_S: u128 = 1_000_000_000;

/// Parses a duration: one or more `NUMBER UNIT` parts (`1h30m`, `1h 30m`), or a bare
/// `NUMBER` of seconds. Numbers may have a fraction (`1.5h`). Units: `ms`, `s`/`sec`,
/// `m`/`min`, `h`, `d`, `y` (365 days).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    let bad = |why: &str| format!("invalid duration {text:?}: {why} (try 500ms, 2s, 1.5, 1h30m)");
    let mut rest = text;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        if number.is_empty() {
            return Err(bad("expected a number"));
        }
        let after = after.trim_start();
        let unit_len = after.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale = if unit.is_empty() {
            // A bare number is seconds, but only on its own: `1h30` is a mistake.
            if total != 0 || !after.trim().is_empty() || text.len() != number.len() {
                return Err(bad("a number without a unit must stand alone"));
            }
            NS_PER_S
        } else {
            UNITS
                .iter()
                .find(|(u, _)| u.eq_ignore_ascii_case(unit))
                .map(|&(_, ns)| ns)
                .ok_or_else(|| bad(&format!("unknown unit {unit:?}")))?
        };
        total = total
            .checked_add(scaled(number, scale).ok_or_else(|| bad("bad number"))?)
            .ok_or_else(|| bad("too long"))?;
        rest = after.trim_start();
    }
    let secs = u64::try_from(total / NS_PER_S).map_err(|_| bad("too long"))?;
    Ok(Duration::new(secs, (total % NS_PER_S) as u32))
}

/// `number` (decimal, optional fraction) times `scale` nanoseconds, truncated to whole
/// nanoseconds; `None` if it is not a number or overflows.
fn scaled(number: &str, scale: u128) -> Option<u128> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return None;
    }
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    // Digits past the 18th are worth less than a nanosecond of any unit here (a year is
    // 3.2e16 ns), and 18 digits times a unit fit a u128.
    let frac = &frac[..frac.len().min(18)];
    let frac_ns = if frac.is_empty() {
        0
    } else {
        frac.parse::<u128>().ok()?.checked_mul(scale)? / 10u128.pow(frac.len() as u32)
    };
    int.checked_mul(scale)?.checked_add(frac_ns)
}

/// Parses a `--timeout`: a duration the protocol can carry (at most [`MAX_TIMEOUT`]).
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > MAX_TIMEOUT {
        return Err(format!(
            "timeout {} is longer than the protocol's maximum of {}; omit --timeout to wait \
             forever",
            s.trim(),
            format_duration(MAX_TIMEOUT)
        ));
    }
    Ok(d)
}

/// `49d 17h 2m 47s 295ms`: days to milliseconds, zero parts left out.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    let parts = [
        (ms / 86_400_000, "d"),
        (ms / 3_600_000 % 24, "h"),
        (ms / 60_000 % 60, "m"),
        (ms / 1000 % 60, "s"),
        (ms % 1000, "ms"),
    ];
    let s: Vec<String> =
        parts.iter().filter(|(n, _)| *n != 0).map(|(n, u)| format!("{n}{u}")).collect();
    if s.is_empty() {
        "0ms".into()
    } else {
        s.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn units_combinations_fractions_and_bare_seconds() {
        assert_eq!(parse_duration("250ms"), Ok(ms(250)));
        assert_eq!(parse_duration("2s"), Ok(ms(2000)));
        assert_eq!(parse_duration("2"), Ok(ms(2000)));
        assert_eq!(parse_duration("1.5"), Ok(ms(1500)));
        assert_eq!(parse_duration("1.5s"), Ok(ms(1500)));
        assert_eq!(parse_duration(".5s"), Ok(ms(500)));
        assert_eq!(parse_duration("1m"), Ok(ms(60_000)));
        assert_eq!(parse_duration("1h"), Ok(ms(3_600_000)));
        assert_eq!(parse_duration("1h30m"), Ok(ms(5_400_000)));
        assert_eq!(parse_duration(" 1h 30m 5s "), Ok(ms(5_405_000)));
        assert_eq!(parse_duration("1.5h"), Ok(ms(5_400_000)));
        assert_eq!(parse_duration("2d"), Ok(ms(2 * 86_400_000)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0.000000001"), Ok(Duration::from_nanos(1)));
    }

    #[test]
    fn malformed_durations_are_refused() {
        for bad in ["", "-1", "1x", "h", "1h30", "1..5s", "1.2.3", "s1", "1e3", "nan", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_duration("1h30").unwrap_err().contains("alone"));
    }

    #[test]
    fn timeouts_the_protocol_cannot_carry_are_refused_with_the_maximum() {
        assert_eq!(parse_timeout("1h"), Ok(ms(3_600_000)));
        assert_eq!(parse_timeout("4294967295ms"), Ok(MAX_TIMEOUT));
        let e = parse_timeout("100000000000").unwrap_err();
        assert!(e.contains("maximum of 49d 17h 2m 47s 295ms"), "{e}");
        assert!(e.contains("omit --timeout"), "{e}");
        let e = parse_timeout("3y").unwrap_err();
        assert!(e.starts_with("timeout 3y is longer"), "{e}");
        assert!(parse_timeout("4294967296ms").is_err());
        assert!(parse_timeout("99999999999999999999999999999y").is_err());
    }

    #[test]
    fn durations_format_from_days_to_milliseconds() {
        assert_eq!(format_duration(MAX_TIMEOUT), "49d 17h 2m 47s 295ms");
        assert_eq!(format_duration(ms(90_000)), "1m 30s");
        assert_eq!(format_duration(Duration::ZERO), "0ms");
    }
}
