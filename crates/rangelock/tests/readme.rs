//! The READMEs tell the truth about publishing (issue 43, item 5): the crate is not on
//! crates.io, so the dependency line they give is a path to the crate in a checkout, not a
//! version requirement that cannot resolve.

use std::path::Path;

/// The `rangelock = ...` lines of the `toml` blocks of `text`.
fn dependency_lines(text: &str) -> Vec<&str> {
    let mut in_toml = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_toml = line.trim_start_matches('`').starts_with("toml");
            continue;
        }
        if in_toml && line.trim_start().starts_with("rangelock =") {
            lines.push(line.trim());
        }
    }
    lines
}

#[test]
fn readmes_give_a_dependency_line_that_works_today() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\nname = \"rangelock\"\n"));
    for readme in [crate_dir.join("README.md"), crate_dir.join("../../README.md")] {
        let text = std::fs::read_to_string(&readme).unwrap();
        let lines = dependency_lines(&text);
        assert_eq!(lines.len(), 1, "{}: one dependency line, got {lines:?}", readme.display());
        let line = lines[0];
        assert!(
            !line.starts_with("rangelock = \""),
            "{}: `{line}` asks crates.io, where the crate is not published",
            readme.display()
        );
        let path =
            line.split("path = \"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_else(
                || panic!("{}: `{line}` is not a path dependency", readme.display()),
            );
        assert!(path.ends_with("/crates/rangelock"), "{path}: the crate's directory in a checkout");
        assert!(text.contains("not on crates.io"), "{}: says why", readme.display());
    }
}
