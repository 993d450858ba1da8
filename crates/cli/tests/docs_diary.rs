//! The docs under `docs/` hold today's facts and how to reproduce them, never a diary, and
//! `docs/BENCH.md` stays a guide (results live in `docs/results/`, derivations in module
//! docs). This test keeps it so:
//!
//! - `docs/BENCH.md` has at most [`BENCH_MAX_LINES`] lines;
//! - no line of a `docs/*.md` file matches what
//!   `grep -nE '[Ii]ssue [0-9]|20(2[5-9])-[0-9]{2}-[0-9]{2}([^T]|$)' docs/*.md` matches: an
//!   issue number, or a date of 2025-2029 that is not a timestamp's (`2026-01-05T09:12`,
//!   as example log lines show, passes).

use std::path::{Path, PathBuf};

/// The most lines `docs/BENCH.md` may have.
const BENCH_MAX_LINES: usize = 400;

/// The repository's `docs/` directory.
fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

/// Whether `line` matches `[Ii]ssue [0-9]|20(2[5-9])-[0-9]{2}-[0-9]{2}([^T]|$)` (the
/// extended regular expression above, without a regex engine).
fn diary_match(line: &str) -> bool {
    let b = line.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    (0..b.len()).any(|i| {
        let issue = matches!(b[i], b'I' | b'i') && b[i + 1..].starts_with(b"ssue ") && digit(i + 6);
        let date = b[i..].starts_with(b"202")
            && b.get(i + 3).is_some_and(|c| (b'5'..=b'9').contains(c))
            && b.get(i + 4) == Some(&b'-')
            && digit(i + 5)
            && digit(i + 6)
            && b.get(i + 7) == Some(&b'-')
            && digit(i + 8)
            && digit(i + 9)
            && b.get(i + 10) != Some(&b'T');
        issue || date
    })
}

#[test]
fn the_matcher_is_the_grep() {
    for hit in [
        "issue 12 asks",
        "see Issue 4.",
        "on 2026-11-27 we ran",
        "date 2025-01-31",
        "\"date\": \"2029-12-01\"",
        "xissue 9",
    ] {
        assert!(diary_match(hit), "{hit:?} should match");
    }
    for miss in [
        "issues 4",
        "ISSUE 4",
        "issue #4",
        "2026-01-05T09:12:44.101Z",
        "rustc 1.83.0 (90b35a623 2024-11-26)",
        "2031-05-17",
        "2026-11",
        "20261-11-27",
        "2026-1-27",
        "session lease",
    ] {
        assert!(!diary_match(miss), "{miss:?} should not match");
    }
}

#[test]
fn bench_md_is_a_guide_not_a_lab_book() {
    let text = std::fs::read_to_string(docs().join("BENCH.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= BENCH_MAX_LINES,
        "docs/BENCH.md has {lines} lines, at most {BENCH_MAX_LINES}: results belong in \
         docs/results/, derivations in the module docs of the code they explain"
    );
}

#[test]
fn no_diary_in_docs() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(docs())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "docs/*.md: {files:?}");
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if diary_match(line) {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "issue numbers or dates of our runs in docs/ (state today's facts instead):\n{}",
        found.join("\n")
    );
}
