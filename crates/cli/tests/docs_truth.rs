//! Lines in the docs that the code has made untrue.
//!
//! The server reads its auth file and its TLS files again on SIGHUP; a sentence that says
//! they are read once, or that rotating them needs a restart, is stale (the auth file
//! section of OPERATIONS.md said so long after the reload landed). The README's first
//! lines say how long its two commands take.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What a sentence must be about to be checked: the files SIGHUP reloads.
const RELOADED: &[&str] = &[
    "auth file",
    "auth-file",
    "auth_file",
    "tls-cert",
    "tls_cert",
    "tls-key",
    "tls_key",
    "tls-client-ca",
    "tls_client_ca",
    "certificate",
    "a token",
];

/// What a stale sentence says about them.
const STALE: &[&str] = &[
    "read once",
    "only at start",
    "restart to rotate",
    "restart the server",
    "restart rangelockd",
    "needs a restart",
    "need a restart",
];

/// The paragraphs of `text`: blocks between blank lines, and each list item on its own,
/// each with the heading it is under (a paragraph of "The auth file" section may say only
/// "the file", which then means the heading's).
fn paragraphs(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let bare = line.trim_start_matches(['#', '/', ' ']).trim();
        let item = bare.starts_with("- ") || bare.starts_with("* ") || bare.starts_with("| ");
        let is_heading = line.starts_with("##") && line.trim_start_matches('#').starts_with(' ');
        if bare.is_empty() || item || is_heading {
            out.extend(current.take().map(|(l, p)| (l, heading.clone(), p)));
        }
        if is_heading {
            heading = bare.to_string();
        } else if !bare.is_empty() {
            let (_, p) = current.get_or_insert_with(|| (i + 1, String::new()));
            p.push(' ');
            p.push_str(bare);
        }
    }
    out.extend(current.map(|(l, p)| (l, heading, p)));
    out
}

/// Every paragraph of `text` that is about a reloaded file and says it is not reloaded:
/// `(line, paragraph)`.
fn stale_reload_claims(text: &str) -> Vec<(usize, String)> {
    let flat = |s: &str| s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    paragraphs(text)
        .into_iter()
        .filter(|(_, heading, p)| {
            let (heading, p) = (flat(heading), flat(p));
            let names = |t: &str| RELOADED.iter().any(|s| t.contains(s));
            let about = names(&p) || p.contains("the file") && names(&heading);
            about && STALE.iter().any(|s| p.contains(s))
        })
        .map(|(line, _, p)| (line, p))
        .collect()
}

fn docs() -> Vec<PathBuf> {
    let root = repo();
    let mut files = vec![root.join("README.md"), root.join("clients/python/README.md")];
    for dir in ["docs", "crates"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if name != "target" && name != "results" {
                        stack.push(path);
                    }
                } else if name.ends_with(".md") || name.ends_with(".toml") && dir == "docs" {
                    files.push(path);
                }
            }
        }
    }
    files
}

/// The checker flags the sentences that were stale, and not the ones that replaced them.
#[test]
fn the_checker_finds_the_old_stale_lines() {
    for old in [
        "### The auth file\n\nThe file is read once, at startup. A file the server cannot use stops it from starting,\nwith a message naming the file and the entry:",
        "### The auth file\n\nError messages and logs never quote a line of the file (it could hold a secret). To add,\nremove or change a token, edit the file and restart the server; a restart ends every\nsession, and with it every lock.",
        "/// Speak TLS on the TCP listener with the certificate chain in this PEM file (the\n/// server's certificate first); needs --tls-key. The Unix socket stays plain. Read\n/// once at start: restart to rotate. See docs/OPERATIONS.md [default: no TLS].",
        "# TLS on the TCP listener (docs/OPERATIONS.md, \"TLS\"): the certificate chain and its key,\n# PEM; both or neither. Read once at start (restart to rotate). Not set: plain TCP.",
    ] {
        assert_eq!(stale_reload_claims(old).len(), 1, "not flagged: {old}");
    }
    let fine = "- **Everything else** (`--addr`, `--lease-ms`, the config file) is read only at start.\n- A **cluster node** (`--cluster`) reloads the same way.";
    assert!(stale_reload_claims(fine).is_empty());
}

/// No doc, and no `--help`, says a file SIGHUP reloads is read once or needs a restart.
#[test]
fn no_doc_says_a_reloaded_file_needs_a_restart() {
    let mut found = Vec::new();
    let files = docs();
    assert!(files.iter().any(|f| f.ends_with("docs/OPERATIONS.md")), "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, p) in stale_reload_claims(&text) {
            found.push(format!("{}:{line}:{p}", file.display()));
        }
    }
    for args in [&["serve", "--help"][..], &["serve", "-h"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_rangelock")).args(args).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        for (line, p) in stale_reload_claims(&help) {
            found.push(format!("rangelock {}:{line}:{p}", args.join(" ")));
        }
        if args[1] == "--help" {
            for flag in ["--auth-file", "--tls-cert"] {
                let about = &help[help.find(&format!("{flag} <")).unwrap()..];
                let about = &about[..about[2..].find("\n      --").map_or(about.len(), |e| e + 2)];
                assert!(
                    about.contains("SIGHUP"),
                    "`serve --help` on {flag} does not say SIGHUP reloads it: {about}"
                );
            }
        }
    }
    assert!(
        found.is_empty(),
        "stale: the server reloads these files on SIGHUP:\n{}",
        found.join("\n")
    );
}

/// The README opens with its two commands and says how long each takes.
#[test]
fn the_readme_says_how_long_its_two_commands_take() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let head: String = readme.lines().take(14).collect::<Vec<_>>().join(" ");
    let head = head.split_whitespace().collect::<Vec<_>>().join(" ");
    let block = readme.find("```sh").expect("a command block first");
    assert!(readme[block..]
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("cargo run --release -- bench quick"));
    assert!(readme[block..].lines().nth(2).unwrap().starts_with("cargo test --workspace"));
    // "`bench quick` takes about 2 minutes ... and `cargo test --workspace` about 10".
    for (command, what, unit) in [
        ("`bench quick` takes about ", "bench quick", "minute"),
        ("`cargo test --workspace` about ", "the tests", ""),
    ] {
        let at = head.find(command).unwrap_or_else(|| {
            panic!("the README's head does not say how long {what} takes: {head}")
        });
        let rest = &head[at + command.len()..];
        let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
        assert!(!number.is_empty(), "no number of minutes for {what}: {rest}");
        assert!(rest[number.len()..].trim_start().starts_with(unit), "{rest}");
    }
    assert!(head.contains("On 2 quiet cores"), "the README does not say on what machine: {head}");
}

/// The README's CI section names every script `.ci/run` runs, and the test command.
#[test]
fn the_readme_names_every_step_of_ci() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let ci = &readme[readme.find("\n## CI\n").expect("a CI section")..];
    let ci = ci.split_whitespace().collect::<Vec<_>>().join(" ");
    let run = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let mut steps = 0;
    for line in run.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
        if let Some(script) = line.strip_prefix("bash ") {
            assert!(
                ci.contains(&format!("`{script}`")),
                "the README's CI section does not name {script}"
            );
            steps += 1;
        } else if line.starts_with("cargo ") {
            assert!(
                ci.contains(&format!("`{line}`")),
                "the README's CI section does not name `{line}`"
            );
            steps += 1;
        }
    }
    assert!(steps >= 7, "found only {steps} steps in .ci/run");
}
