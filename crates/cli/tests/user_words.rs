//! User-facing text names the papers by title, never by the project's internal words:
//! `rangelock bench list` (the suites' descriptions) and `rangelock serve --help` (the
//! settings' docs) must not say "seed 1/2/3", "thesis" or "issue <number>".

use std::process::Command;

/// The internal words `text` contains (case-insensitive), each with its line.
fn internal_words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let lower = line.to_lowercase();
        let mut hit = ["seed 1", "seed 2", "seed 3", "thesis"].iter().any(|w| lower.contains(w));
        // "issue" followed by a space and a digit.
        hit |= lower
            .match_indices("issue ")
            .any(|(i, w)| lower[i + w.len()..].chars().next().is_some_and(|c| c.is_ascii_digit()));
        if hit {
            found.push(line.to_owned());
        }
    }
    found
}

fn output_of(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_rangelock")).args(args).output().unwrap();
    assert!(o.status.success(), "rangelock {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_check_finds_each_internal_word() {
    for bad in ["W1 (Seed 1 Fig. 2)", "the THESIS says", "bar (issue 11)", "x seed 3"] {
        assert_eq!(internal_words(bad), [bad], "{bad}");
    }
    for fine in ["the issue of 4 threads", "seeds, 12 of them", "Concurrent Range Locking"] {
        assert!(internal_words(fine).is_empty(), "{fine}");
    }
}

#[test]
fn bench_list_and_serve_help_use_no_internal_words() {
    for args in [&["bench", "list"][..], &["serve", "--help"], &["bench", "--help"], &["--help"]] {
        let text = output_of(args);
        assert!(text.lines().count() > 3, "rangelock {args:?} printed:\n{text}");
        let found = internal_words(&text);
        assert!(found.is_empty(), "rangelock {args:?} says:\n{}", found.join("\n"));
    }
}
