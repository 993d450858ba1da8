//! The range argument of `rangelock lock`: one grammar, one parser, messages that echo
//! what the user wrote.
//!
//! | form      | units                                 |
//! |-----------|---------------------------------------|
//! | `N`       | `N..N+1` (one unit)                   |
//! | `a..b`    | `a` up to `b`, `b` left out           |
//! | `a..=b`   | `a` up to and including `b`           |
//! | `..b`     | `0..b` (and `..=b` is `0..=b`)        |
//! | `a..`     | `a` to the end of the unit space      |
//! | `..`      | the whole unit space, `0..2^64-1`     |
//! | `a..+len` | `len` units from `a`                  |
//!
//! Every number is decimal (`4096`) or hex (`0x1000`, `0X1000`), with `_` allowed
//! between digits (`1_000_000`), and may end with a binary size suffix: `KiB`, `MiB`,
//! `GiB`, `TiB`, `PiB`, `EiB` (2^10 … 2^60 units; `4KiB` is 4096, `0x10MiB` is 16 MiB).
//! Decimal suffixes (`K`, `kB`, `M`, `MB`, `G`, …) are refused: tools disagree on whether
//! `4K` is 4000 or 4096, so the message asks for `4KiB` or `4000`. Signs, empty ranges
//! (`5..5`, `5..+0`) and numbers past 2^64-1 are refused; the end of a range is at most
//! 2^64-1, so the last unit, 2^64-1 itself, cannot be locked.
//!
//! An error quotes the argument as written (`invalid range "0x10..+0x": …`), and a parsed
//! range shows as written too, with its units in decimal when they differ (`0x10..+16
//! (16..32)`), so a refusal from the server names the range the user typed.

use std::fmt;
use std::ops::Range;

/// A parsed range argument: its units and the text it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RangeArg {
    /// The units, half-open and non-empty.
    pub(crate) range: Range<u64>,
    /// The argument as written (trimmed).
    pub(crate) text: String,
}

impl fmt::Display for RangeArg {
    /// The text as written, then the units when they read differently: `0x10..+16
    /// (16..32)`, `0..4096`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let canonical = format!("{}..{}", self.range.start, self.range.end);
        if canonical == self.text {
            f.write_str(&self.text)
        } else {
            write!(f, "{} ({canonical})", self.text)
        }
    }
}

/// Binary size suffixes and their shifts; all contain `i`, which is no hex digit, so
/// `0x1EiB` is 1 EiB and never hex `1E` followed by `iB`.
const SUFFIXES: &[(&str, u32)] =
    &[("KiB", 10), ("MiB", 20), ("GiB", 30), ("TiB", 40), ("PiB", 50), ("EiB", 60)];

/// Suffixes refused as ambiguous (decimal or binary?), and lookalikes of the binary ones
/// in the wrong case; each gets a hint.
const AMBIGUOUS: &[&str] = &[
    "K", "k", "KB", "kB", "kb", "Kb", "M", "MB", "m", "G", "GB", "g", "T", "TB", "P", "PB", "E",
    "EB", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
];

/// Parses a range argument (the grammar of the module docs).
pub(crate) fn parse_range(s: &str) -> Result<RangeArg, String> {
    let text = s.trim();
    let bad = |why: String| {
        format!(
            "invalid range {text:?}: {why} (forms: N, A..B, A..=B, ..B, A.., A..+LEN; numbers \
             decimal or 0x hex, optionally with KiB, MiB, GiB…)"
        )
    };
    let range = match text.split_once("..") {
        None => {
            // The number is the whole argument: say "it", not the argument twice.
            let n = parse_number(text).map_err(|e| {
                let quoted = format!("{text:?}");
                bad(match e.strip_prefix(&quoted) {
                    Some(rest) => match rest.strip_prefix(": ") {
                        Some(why) => why.to_owned(),
                        None => format!("it{rest}"),
                    },
                    None => e,
                })
            })?;
            let end = n.checked_add(1).ok_or_else(|| {
                bad(format!(
                    "unit {text} is past the last lockable unit ({} = 0x{:x})",
                    u64::MAX - 1,
                    u64::MAX - 1
                ))
            })?;
            n..end
        }
        Some((a, b)) => {
            if b.contains("..") {
                return Err(bad("more than one `..`".into()));
            }
            let start = if a.is_empty() { None } else { Some(parse_number(a).map_err(bad)?) };
            let end = if let Some(len) = b.strip_prefix('+') {
                let Some(start) = start else {
                    return Err(bad("`..+LEN` needs a start: write A..+LEN".into()));
                };
                let len = parse_number(len).map_err(bad)?;
                if len == 0 {
                    return Err(bad("it is empty: a length must be at least 1".into()));
                }
                start.checked_add(len).ok_or_else(|| {
                    bad(format!("{start} + {len} is past the end of the unit space (2^64-1)"))
                })?
            } else if let Some(last) = b.strip_prefix('=') {
                let last = parse_number(last).map_err(bad)?;
                last.checked_add(1).ok_or_else(|| {
                    bad(format!(
                        "the last unit {last} cannot be locked; the end is at most 2^64-1 \
                         (write A.. to lock up to it)"
                    ))
                })?
            } else if b.is_empty() {
                u64::MAX
            } else {
                parse_number(b).map_err(bad)?
            };
            let start = start.unwrap_or(0);
            if start >= end {
                return Err(bad(format!("it is empty: units {start}..{end} (start < end needed)")));
            }
            start..end
        }
    };
    Ok(RangeArg { range, text: text.to_owned() })
}

/// One number: decimal or `0x` hex, `_` between digits, an optional binary suffix.
fn parse_number(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err("a number is missing".into());
    }
    if s != s.trim() {
        return Err(format!("{s:?} has spaces"));
    }
    let (body, shift) = match SUFFIXES.iter().find(|(suf, _)| s.ends_with(suf)) {
        Some(&(suf, shift)) => (&s[..s.len() - suf.len()], shift),
        None => (s, 0),
    };
    let (digits, radix) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (body, 10),
    };
    let is_digit = |c: char| c.is_digit(radix);
    if shift == 0 && radix == 10 {
        // A suffix we refuse: say why.
        let tail = digits.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
        if !tail.is_empty() && tail.len() < digits.len() && AMBIGUOUS.contains(&tail) {
            let n = &digits[..digits.len() - tail.len()];
            return Err(format!(
                "{s:?}: the suffix {tail:?} is ambiguous; write {n}{}iB for binary or the \
                 number of units",
                tail[..1].to_ascii_uppercase()
            ));
        }
    }
    if digits.is_empty() {
        return Err(format!("{s:?} has no digits"));
    }
    let underscores_ok = !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c == '_' || is_digit(c));
    if !underscores_ok {
        let what = if radix == 16 { "a hex number" } else { "a number" };
        return Err(format!("{s:?} is not {what}"));
    }
    let too_big = || format!("{s:?} is more than 2^64-1 ({})", u64::MAX);
    let n = u64::from_str_radix(&digits.replace('_', ""), radix).map_err(|_| too_big())?;
    n.checked_mul(1u64 << shift).ok_or_else(too_big)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn units(s: &str) -> Range<u64> {
        parse_range(s).unwrap_or_else(|e| panic!("{s:?}: {e}")).range
    }

    #[test]
    fn every_form() {
        assert_eq!(units("10"), 10..11);
        assert_eq!(units("0..10"), 0..10);
        assert_eq!(units("0..=10"), 0..11);
        assert_eq!(units("..10"), 0..10);
        assert_eq!(units("..=10"), 0..11);
        assert_eq!(units("5.."), 5..u64::MAX);
        assert_eq!(units(".."), 0..u64::MAX);
        assert_eq!(units("16..+16"), 16..32);
        assert_eq!(units(" 1..2 "), 1..2);
        assert_eq!(units("18446744073709551614"), u64::MAX - 1..u64::MAX);
    }

    #[test]
    fn every_number_takes_hex_underscores_and_binary_suffixes() {
        assert_eq!(units("0x10..0x20"), 16..32);
        assert_eq!(units("0X10..+0x10"), 16..32);
        assert_eq!(units("0x10..+16"), 16..32);
        assert_eq!(units("1_000..1_000_000"), 1000..1_000_000);
        assert_eq!(units("0x10_00..0xffff"), 4096..65535);
        assert_eq!(units("4KiB"), 4096..4097);
        assert_eq!(units("0..4KiB"), 0..4096);
        assert_eq!(units("1MiB..+4KiB"), 1 << 20..(1 << 20) + 4096);
        assert_eq!(units("..=1GiB"), 0..(1 << 30) + 1);
        assert_eq!(units("1TiB..1PiB"), 1 << 40..1 << 50);
        assert_eq!(units("0x10MiB..0x1EiB"), 16 << 20..1 << 60);
        assert_eq!(units("15EiB.."), 15 << 60..u64::MAX);
    }

    #[test]
    fn bad_input_is_refused_quoting_it() {
        for bad in [
            "",
            "..+5",
            "a",
            "1..2..3",
            "1...3",
            "+5",
            "-1",
            "1..-2",
            "10..10",
            "10..5",
            "5..+0",
            "0x",
            "0x..1",
            "0xg",
            "1_",
            "_1",
            "1__0",
            "1 ..2",
            "4K",
            "4k",
            "4KB",
            "4kB",
            "4M",
            "4MB",
            "4G",
            "4Ki",
            "4kib",
            "4KIB",
            "KiB",
            "0xKiB",
            "4 KiB",
            "4KiBKiB",
            "1.5",
            "1e3",
            "18446744073709551615",
            "..=18446744073709551615",
            "0..0x1_0000_0000_0000_0000",
            "16EiB",
            "1..+18446744073709551615",
            "1..=",
            "..=",
            "..+",
            "=5",
            "1..=+5",
        ] {
            let Err(e) = parse_range(bad) else { panic!("{bad:?} accepted") };
            assert!(e.contains(&format!("{:?}", bad.trim())), "{bad:?}: {e}");
        }
    }

    #[test]
    fn messages_say_why() {
        let e = parse_range("0x10..+0").unwrap_err();
        assert!(e.starts_with("invalid range \"0x10..+0\": it is empty"), "{e}");
        let e = parse_range("4K").unwrap_err();
        assert!(
            e.starts_with("invalid range \"4K\": the suffix \"K\" is ambiguous; write 4KiB"),
            "{e}"
        );
        let e = parse_range("+5").unwrap_err();
        assert!(e.starts_with("invalid range \"+5\": it is not a number"), "{e}");
        let e = parse_range("1..+x").unwrap_err();
        assert!(e.starts_with("invalid range \"1..+x\": \"x\" is not a number"), "{e}");
        let e = parse_range("4MB").unwrap_err();
        assert!(e.contains("write 4MiB"), "{e}");
        let e = parse_range("..+5").unwrap_err();
        assert!(e.contains("needs a start"), "{e}");
        let e = parse_range("18446744073709551615").unwrap_err();
        assert!(e.contains("past the last lockable unit"), "{e}");
    }

    #[test]
    fn a_range_shows_as_written_with_its_units_when_they_differ() {
        assert_eq!(parse_range("0..4096").unwrap().to_string(), "0..4096");
        assert_eq!(parse_range("0x10..+16").unwrap().to_string(), "0x10..+16 (16..32)");
        assert_eq!(parse_range("7").unwrap().to_string(), "7 (7..8)");
    }

    /// `n` written one of the ways the grammar allows, chosen by `pick`.
    fn written(n: u64, pick: usize) -> String {
        let mut ways = vec![n.to_string(), format!("0x{n:x}"), format!("0X{n:X}")];
        for &(suf, shift) in SUFFIXES {
            if n != 0 && n % (1 << shift) == 0 {
                ways.push(format!("{}{suf}", n >> shift));
            }
        }
        ways.swap_remove(pick % ways.len())
    }

    /// Interesting numbers: small, round (so the suffixes come up), near the top.
    fn number() -> impl Strategy<Value = u64> {
        prop_oneof![
            0..100_000u64,
            (0..64u64, 0..6u32).prop_map(|(k, s)| k << (10 * s)),
            u64::MAX - 1000..u64::MAX,
            any::<u64>(),
        ]
    }

    proptest! {
        #[test]
        fn written_ranges_parse_to_their_units(
            x in number(), y in number(), picks in any::<[usize; 5]>(),
        ) {
            let (a, b) = (x.min(y), x.max(y));
            prop_assume!(a < b);
            let w = |n, i: usize| written(n, picks[i]);
            prop_assert_eq!(units(&format!("{}..{}", w(a, 0), w(b, 1))), a..b);
            prop_assert_eq!(units(&format!("{}..+{}", w(a, 0), w(b - a, 2))), a..b);
            prop_assert_eq!(units(&format!("{}..={}", w(a, 0), w(b - 1, 3))), a..b);
            prop_assert_eq!(units(&format!("..{}", w(b, 1))), 0..b);
            prop_assert_eq!(units(&w(a, 4)), a..a + 1);
        }

        #[test]
        fn anything_parses_or_is_refused_quoting_it(s in "[0-9a-zA-Z_.=+ -]{0,24}") {
            match parse_range(&s) {
                Ok(r) => prop_assert!(r.range.start < r.range.end),
                Err(e) => prop_assert!(e.contains(&format!("{:?}", s.trim())), "{}", e),
            }
        }
    }
}
