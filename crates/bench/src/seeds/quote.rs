//! The seeds' own words: the text a quote must come from, and the numbers a quote states.
//!
//! A claim in the registry carries the seed's sentence verbatim ([`super::claims::Claim`]'s
//! `quote`), and only numbers in that sentence count as the seed's. This module holds the
//! evaluation section of each seed (copied verbatim from the project's `shared/seeds/`
//! texts into `text/`, so a fresh clone can check quotes; a test compares the copies with
//! the originals wherever those are present) and the two checks every quote must pass:
//!
//! - [`contains`]: the quote is in its seed's text, whitespace normalised (runs of
//!   whitespace compare as one space; Markdown emphasis `*`/`**` around words is kept, so a
//!   quote copies it too);
//! - [`number`]: a number as the seed writes it (`4`, `0.78`, `286491`, `four`, `twelve`,
//!   `twice`) read as a value, so the registry cannot call a number the seed's unless the
//!   quote holds it.

use super::claims::Seed;

/// The evaluation section of the Concurrent Range Locking thesis (§5).
const RANGE_THESIS: &str = include_str!("text/range-thesis-ch5.txt");
/// The evaluation section of the EPVS paper (§6).
const EPVS: &str = include_str!("text/epvs-s6.txt");
/// The evaluation chapter of the Server-sided Range Locking thesis (ch. 5).
const SERVER_THESIS: &str = include_str!("text/server-thesis-ch5.txt");

/// The evaluation text of `seed`, as the seed has it (`None` for the project's own suites).
pub fn evaluation_text(seed: Seed) -> Option<&'static str> {
    match seed {
        Seed::RangeThesis => Some(RANGE_THESIS),
        Seed::Epvs => Some(EPVS),
        Seed::ServerThesis => Some(SERVER_THESIS),
        Seed::Project => None,
    }
}

/// The file of `shared/seeds/` the copy of `seed`'s evaluation text comes from.
pub fn source_file(seed: Seed) -> Option<&'static str> {
    match seed {
        Seed::RangeThesis => Some("concurrent-range-locking-thesis.txt"),
        Seed::Epvs => Some("epvs-epoch-protected-version-scheme.txt"),
        Seed::ServerThesis => Some("server-sided-range-locking-thesis.txt"),
        Seed::Project => None,
    }
}

/// `text` with every run of whitespace as one space, trimmed.
pub fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `quote` occurs in `text`, whitespace normalised.
pub fn contains(text: &str, quote: &str) -> bool {
    let quote = normalise(quote);
    !quote.is_empty() && normalise(text).contains(&quote)
}

/// Number words the seeds use for ratios.
const WORDS: &[(&str, f64)] = &[
    ("one", 1.0),
    ("two", 2.0),
    ("twice", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("eleven", 11.0),
    ("twelve", 12.0),
    ("sixteen", 16.0),
];

/// The value of a number as a seed writes it: digits (`286491`, `0.78`, `1e-4`, `16,384`)
/// or a word (`four`, `twelve`, `twice`); `None` for anything else.
pub fn number(written: &str) -> Option<f64> {
    let w = written.trim();
    if let Some(&(_, v)) = WORDS.iter().find(|(word, _)| word.eq_ignore_ascii_case(w)) {
        return Some(v);
    }
    w.replace(',', "").parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Whether `written` occurs in `quote` as a whole token (not inside a longer number or
/// word): `4` is not found in `48`, `two` not in `network`.
pub fn has_token(quote: &str, written: &str) -> bool {
    let quote = normalise(quote);
    let b = quote.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    // A '.' is part of a number only between digits ("3.52"), not at a sentence's end.
    let part = |i: usize| {
        b[i].is_ascii_alphanumeric() || (b[i] == b'.' && digit(i + 1) && i > 0 && digit(i - 1))
    };
    let mut from = 0;
    while let Some(i) = quote[from..].find(written) {
        let (start, end) = (from + i, from + i + written.len());
        let open = start == 0 || !part(start - 1);
        let close = end == b.len() || !part(end);
        if open && close {
            return true;
        }
        from = start + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_match_with_whitespace_normalised() {
        let text = "We archive four times\nmore operations than  Scalable RL.";
        assert!(contains(text, "four times more operations than Scalable RL."));
        assert!(!contains(text, "five times more operations"));
        assert!(!contains(text, "   "), "an empty quote is in no text");
    }

    #[test]
    fn numbers_read_as_the_seed_writes_them() {
        assert_eq!(number("four"), Some(4.0));
        assert_eq!(number("Twelve"), Some(12.0));
        assert_eq!(number("286491"), Some(286_491.0));
        assert_eq!(number("16,384"), Some(16_384.0));
        assert_eq!(number("1e-4"), Some(1e-4));
        assert_eq!(number("many"), None);
    }

    #[test]
    fn tokens_are_whole() {
        let q = "with 48 clients, two to nine times more, at 3.52 us.";
        assert!(has_token(q, "48") && has_token(q, "two") && has_token(q, "nine"));
        assert!(has_token(q, "3.52"));
        assert!(
            !has_token(q, "4") && !has_token(q, "3.5") && !has_token(q, "52") && !has_token(q, "o")
        );
        assert!(has_token("costs 0.78.", "0.78"));
    }

    /// The copies are the seeds' own text: each is a verbatim run of lines of its original
    /// in `shared/seeds/` (checked where the originals are, i.e. in the project's
    /// workspace; a lone clone of the repository has only the copies).
    #[test]
    fn the_copies_are_verbatim_runs_of_the_seeds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds");
        for seed in [Seed::RangeThesis, Seed::Epvs, Seed::ServerThesis] {
            let copy = evaluation_text(seed).unwrap();
            assert!(copy.len() > 10_000, "{seed:?}: the whole evaluation section");
            let path = dir.join(source_file(seed).unwrap());
            match std::fs::read_to_string(&path) {
                Ok(original) => {
                    assert!(original.contains(copy), "{seed:?}: not verbatim in {path:?}")
                }
                Err(_) => eprintln!(
                    "NOTE: {} not found: the copies are checked against their originals only \
                     in the project's workspace",
                    path.display()
                ),
            }
        }
    }
}
