//! The operator docs run as written: the marked shell blocks of `README.md`,
//! `docs/OPERATIONS.md`, `docs/CLUSTER.md` and `docs/CACHING.md` are executed here, and their output is
//! compared with the `text output` block that follows them.
//!
//! # Markers
//!
//! A fenced block's info string is its language, then words this test reads:
//!
//! - `sh run`: run the block with `bash -e -o pipefail`. A failing command fails the
//!   test, so a command the docs show failing is written `cmd || echo "exit code $?"`,
//!   and its exit code is checked through the output.
//! - `sh no-run`: shown, not run (placeholder hosts such as `lock1.example.com`, the test
//!   suite itself). Every `sh`, `bash`, `shell` or `console` block carries `run` or
//!   `no-run`: an unmarked one fails the test, so no block is skipped silently.
//! - `session=NAME`: the run blocks of one session run in order, in one shell (background
//!   jobs, variables and the directory carry over). Without it a block is its own session.
//! - `cwd=repo`: the session starts in the repository (it installs the CLI with
//!   `cargo install --path crates/cli --locked`); otherwise in a fresh empty directory.
//! - `needs=etcd`: the session needs `etcd` on `PATH`. Outside CI it is skipped, loudly,
//!   without it; in CI (`CI` set) a missing etcd fails.
//! - `file=NAME` (any language, with `session=`): the block's text is written to `NAME`
//!   in the session's directory before the session runs, so a config file shown in the
//!   docs is the one the commands read.
//! - `text output`, right after a run block: what that block prints on stdout. A line
//!   that is only `…` stands for any number of lines; `…` inside a line for any text.
//! - `console run`: a block of `$ command` lines, each followed by what it prints (same
//!   patterns): the commands run as above, and the other lines are the expected output.
//!
//! # Where the binary comes from
//!
//! The docs install it (`cargo install --path crates/cli --locked`), and so does this test,
//! for real: into a temporary root put first on `PATH`, building in `target/docs` (kept
//! between runs, so only the first run compiles). Each session runs in its own process
//! group, killed when the session ends, so no server a block started outlives it.

mod common;

use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// One fenced block of a Markdown file.
#[derive(Clone, Debug)]
struct Block {
    /// The file's name, for messages.
    file: String,
    /// The line of the opening fence (1-based).
    line: usize,
    /// The language (the info string's first word).
    lang: String,
    /// The other words of the info string.
    words: Vec<String>,
    /// The text between the fences.
    text: String,
}

impl Block {
    fn has(&self, word: &str) -> bool {
        self.words.iter().any(|w| w == word)
    }

    fn attr(&self, key: &str) -> Option<&str> {
        self.words.iter().find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    }

    fn is_shell(&self) -> bool {
        matches!(self.lang.as_str(), "sh" | "bash" | "shell" | "console")
    }

    fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The fenced blocks of `text` (fences of three or more backticks, not indented).
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, Vec<String>, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut open {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    let mut words = info.split_whitespace().map(str::to_owned);
                    let lang = words.next().unwrap_or_default();
                    open = Some((i + 1, lang, words.collect(), String::new()));
                }
            }
            Some((start, lang, words, body)) => {
                if line.trim_end() == "```" {
                    out.push(Block {
                        file: file.to_owned(),
                        line: *start,
                        lang: std::mem::take(lang),
                        words: std::mem::take(words),
                        text: std::mem::take(body),
                    });
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "{file}: a fenced block is not closed");
    out
}

/// A run block and the output the docs say it prints.
#[derive(Debug)]
struct Step {
    block: Block,
    expected: Option<Block>,
}

/// The blocks of one session, in order.
#[derive(Debug, Default)]
struct Session {
    name: String,
    steps: Vec<Step>,
    files: Vec<Block>,
    in_repo: bool,
    needs_etcd: bool,
}

/// Reads a doc's sessions, checking its markers.
fn sessions(file: &str, text: &str) -> Result<Vec<Session>, String> {
    let all = blocks(file, text);
    let mut problems = String::new();
    let mut found: Vec<Session> = Vec::new();
    fn session(found: &mut Vec<Session>, name: String) -> &mut Session {
        match found.iter().position(|s| s.name == name) {
            Some(i) => &mut found[i],
            None => {
                found.push(Session { name, ..Session::default() });
                found.last_mut().unwrap()
            }
        }
    }
    for (i, b) in all.iter().enumerate() {
        let name = b.attr("session").map(str::to_owned).unwrap_or_else(|| b.place());
        if b.is_shell() {
            match (b.has("run"), b.has("no-run")) {
                (true, false) => {}
                (false, true) => continue,
                _ => {
                    let _ = writeln!(
                        problems,
                        "{}: a {} block must be marked `run` or `no-run` (info string `{} {}`)",
                        b.place(),
                        b.lang,
                        b.lang,
                        b.words.join(" ")
                    );
                    continue;
                }
            }
            let mut block = b.clone();
            let mut expected =
                all.get(i + 1).filter(|n| n.lang == "text" && n.has("output")).cloned();
            if b.lang == "console" {
                // `$ command` lines, each followed by what it prints.
                let (mut commands, mut output) = (String::new(), String::new());
                for line in b.text.lines() {
                    match line.strip_prefix("$ ") {
                        Some(c) => writeln!(commands, "{c}"),
                        None => writeln!(output, "{line}"),
                    }
                    .unwrap();
                }
                if !output.trim().is_empty() {
                    expected = Some(Block { text: output, ..b.clone() });
                }
                block.text = commands;
            }
            let s = session(&mut found, name);
            s.in_repo |= b.attr("cwd") == Some("repo");
            s.needs_etcd |= b.attr("needs") == Some("etcd");
            s.steps.push(Step { block, expected });
        } else if b.attr("file").is_some() {
            if b.attr("session").is_none() {
                let _ = writeln!(problems, "{}: a `file=` block needs a `session=`", b.place());
                continue;
            }
            session(&mut found, name).files.push(b.clone());
        } else if b.has("output") {
            let follows_run = i > 0 && all[i - 1].is_shell() && all[i - 1].has("run");
            if !follows_run {
                let _ =
                    writeln!(problems, "{}: an output block must follow a run block", b.place());
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    found.retain(|s| !s.steps.is_empty());
    Ok(found)
}

/// Whether `actual` (one line) matches `pattern`, where `…` stands for any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let mut parts = pattern.split('…');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for p in middle {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether the lines of `actual` match those of `expected`, where a line `…` stands for
/// any number of lines.
fn output_matches(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"…", rest)) => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((p, rest)) => {
            actual.first().is_some_and(|a| line_matches(p, a)) && output_matches(rest, &actual[1..])
        }
    }
}

fn trimmed_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().map(str::trim_end).collect();
    while v.last() == Some(&"") {
        v.pop();
    }
    while v.first() == Some(&"") {
        v.remove(0);
    }
    v
}

/// Where sessions install the CLI and build it.
struct Install {
    root: PathBuf,
    target: PathBuf,
}

impl Install {
    fn new(name: &str) -> Install {
        let root =
            std::env::temp_dir().join(format!("rangelock-docs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target"))
            .join("docs");
        Install { root, target }
    }
}

impl Drop for Install {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The marker a session prints before each block, to split its output.
fn separator(i: usize) -> String {
    format!("@@@ docs block {i} @@@")
}

/// Runs a session; `Err` says what differs or failed.
fn run(session: &Session, install: &Install, limit: Duration) -> Result<(), String> {
    let dir = install.root.join(format!("session-{}", session.name.replace(['/', ':'], "-")));
    std::fs::create_dir_all(&dir).unwrap();
    for f in &session.files {
        std::fs::write(dir.join(f.attr("file").unwrap()), &f.text).unwrap();
    }
    let mut script = String::from("set -e -o pipefail\n");
    for (i, step) in session.steps.iter().enumerate() {
        let _ = writeln!(script, "printf '\\n%s\\n' '{}'", separator(i));
        script.push_str(&step.block.text);
    }
    let (out_path, err_path) = (dir.join(".stdout"), dir.join(".stderr"));
    let bin = install.root.join("bin");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(if session.in_repo { repo() } else { dir.clone() })
        .env("PATH", path)
        .env("CARGO_INSTALL_ROOT", &install.root)
        .env("CARGO_TARGET_DIR", &install.target)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env_remove("RANGELOCK_SERVER")
        .env_remove("RANGELOCK_CLUSTER")
        .env_remove("RANGELOCK_AUTH_TOKEN")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = child.id() as i32;
    let status = common::wait_bounded(&mut child, limit);
    // SAFETY: kill(2) on our own child's process group: no memory is involved.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    let context =
        || format!("--- stdout\n{}\n--- stderr (last 40 lines)\n{}", tail(&stdout), tail(&stderr));
    // Split the output by block.
    let mut outputs: Vec<String> = vec![String::new(); session.steps.len()];
    let mut current: Option<usize> = None;
    for line in stdout.lines() {
        if let Some(i) = (0..session.steps.len()).find(|&i| line == separator(i)) {
            current = Some(i);
            continue;
        }
        if let Some(i) = current {
            outputs[i].push_str(line);
            outputs[i].push('\n');
        }
    }
    let ran = current.map_or(0, |i| i + 1);
    match status {
        None => {
            return Err(format!(
                "session {} did not end within {limit:?} (in the block at {})\n{}",
                session.name,
                session.steps[ran.saturating_sub(1)].block.place(),
                context()
            ))
        }
        Some(st) if !st.success() => {
            return Err(format!(
                "the block at {} failed ({st})\n{}",
                session.steps[ran.saturating_sub(1)].block.place(),
                context()
            ))
        }
        Some(_) => {}
    }
    for (step, out) in session.steps.iter().zip(&outputs) {
        let Some(expected) = &step.expected else { continue };
        let (e, a) = (trimmed_lines(&expected.text), trimmed_lines(out));
        if !output_matches(&e, &a) {
            return Err(format!(
                "the block at {} printed\n{}\nbut {} says\n{}\n--- stderr (last 40 lines)\n{}",
                step.block.place(),
                a.join("\n"),
                expected.place(),
                e.join("\n"),
                tail(&stderr)
            ));
        }
    }
    Ok(())
}

/// Runs every session of the doc at `rel` (relative to the repository).
fn run_doc(rel: &str) {
    let text = std::fs::read_to_string(repo().join(rel)).unwrap();
    let sessions = sessions(rel, &text).unwrap_or_else(|e| panic!("{e}"));
    let install = Install::new(&rel.replace('/', "-"));
    let ci = std::env::var_os("CI").is_some();
    let has_etcd = Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut failures = Vec::new();
    for s in &sessions {
        if s.needs_etcd && !has_etcd {
            assert!(
                !ci,
                "{rel}: session {} needs etcd, which CI installs (ci/install-etcd.sh)",
                s.name
            );
            eprintln!(
                "SKIPPED: {rel}: session {} needs etcd; install it with \
                 `bash ci/install-etcd.sh` (Debian: apt-get install etcd-server)",
                s.name
            );
            continue;
        }
        eprintln!("running {rel}: session {} ({} blocks)", s.name, s.steps.len());
        if let Err(e) = run(s, &install, Duration::from_secs(30 * 60)) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn readme_runs_as_written() {
    run_doc("README.md");
}

#[test]
fn operations_runs_as_written() {
    run_doc("docs/OPERATIONS.md");
}

#[test]
fn cluster_runs_as_written() {
    run_doc("docs/CLUSTER.md");
}

#[test]
fn caching_runs_as_written() {
    run_doc("docs/CACHING.md");
}

/// The runner catches what it is for: a changed output, a changed exit code, a failing
/// command, an unmarked block.
#[test]
fn the_runner_fails_when_the_docs_are_wrong() {
    let install = Install::new("self-test");
    let doc = |body: &str| sessions("self.md", body);
    let one = |body: &str| {
        let s = doc(body).unwrap();
        assert_eq!(s.len(), 1, "{s:?}");
        run(&s[0], &install, Duration::from_secs(60))
    };
    let ok = "```sh run\necho one; echo two; false || echo \"exit code $?\"\n```\n\
              ```text output\none\n…\nexit code 1\n```\n";
    one(ok).unwrap();
    let wrong_output = ok.replace("text output\none", "text output\nuno");
    assert!(one(&wrong_output).unwrap_err().contains("printed"));
    let console = "```console run\n$ echo a; echo b\na\n…\n$ echo c\nc\n```\n";
    one(console).unwrap();
    assert!(one(&console.replace("\nc\n```", "\nd\n```")).is_err());
    let wrong_code = ok.replace("exit code 1\n```", "exit code 2\n```");
    assert!(one(&wrong_code).is_err());
    let failing = "```sh run\ntrue\nfalse\necho after\n```\n";
    assert!(one(failing).unwrap_err().contains("failed"));
    assert!(doc("```sh\necho unmarked\n```\n").unwrap_err().contains("must be marked"));
    assert!(doc("```text output\nx\n```\n").unwrap_err().contains("must follow"));
    // Sessions keep state; files are written first; background jobs do not outlive them.
    let session = "```toml file=a.toml session=s\nk = 1\n```\n\
                   ```sh run session=s\nX=$(cat a.toml); sleep 600 &\n```\n\
                   ```sh run session=s\necho \"$X\"\n```\n```text output\nk = 1\n```\n";
    let started = Instant::now();
    one(session).unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn patterns_match_as_documented() {
    assert!(line_matches("a…c", "abbbc"));
    assert!(line_matches("…", ""));
    assert!(line_matches("token …", "token 17"));
    assert!(!line_matches("token …", "tok 17"));
    assert!(!line_matches("a…c", "ab"));
    assert!(line_matches("exact", "exact"));
    assert!(!line_matches("exact", "exact!"));
    assert!(output_matches(&["…"], &[]));
    assert!(output_matches(&["a", "…", "z"], &["a", "b", "c", "z"]));
    assert!(!output_matches(&["a", "…", "z"], &["a", "b"]));
}

/// The signals named right after `marker` in `text` (its words joined by single spaces):
/// `SIGTERM, SIGINT, SIGHUP or SIGQUIT` and `TERM, INT, HUP or QUIT` both give
/// `[TERM, INT, HUP, QUIT]`. Panics if `marker` is not in `text`.
fn signals_after(text: &str, marker: &str, what: &str) -> Vec<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = text.find(marker).unwrap_or_else(|| panic!("{what}: no {marker:?}"));
    let mut signals = Vec::new();
    for word in text[at + marker.len()..].split(' ').filter(|w| !w.is_empty()) {
        let word = word.trim_matches(|c: char| c == ',' || c == '`' || c == '.');
        if word == "or" || word == "and" {
            continue;
        }
        let name = word.strip_prefix("SIG").unwrap_or(word);
        if name.len() < 2 || !name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()) {
            break;
        }
        signals.push(name.to_owned());
    }
    assert!(!signals.is_empty(), "{what}: no signal after {marker:?}");
    signals
}

/// The signals that end `rangelock lock` without a command are named by `--help` (twice)
/// and by the README (twice): every list is the same, so the README cannot drift from
/// what the code does again.
#[test]
fn the_readme_names_the_signals_that_end_a_hold_as_the_help_does() {
    let out = Command::new(common::BIN).args(["lock", "--help"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8(out.stdout).unwrap();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let want = signals_after(&help, "hold the lock until", "lock --help");
    for (text, marker, what) in [
        (&help, "exits 0 once", "lock --help"),
        (&readme, "holds the range until", "README.md"),
        (&readme, "Without a command: `0` once", "README.md"),
    ] {
        assert_eq!(signals_after(text, marker, what), want, "{what}, after {marker:?}");
    }
}

/// The rule that tells NAME from RANGE in `rangelock lock [NAME] RANGE`: `lock --help`
/// and docs/OPERATIONS.md state it in the same words, and OPERATIONS.md's example of
/// named locks (its session `names`) runs as written with this build's binary.
#[test]
fn the_name_rule_of_lock_is_the_helps_and_its_example_runs() {
    const MARK: &str = "NAME and RANGE: ";
    /// The paragraph of `text` that starts with [`MARK`], its words joined by single spaces.
    fn rule(text: &str, what: &str) -> String {
        let at = text.find(MARK).unwrap_or_else(|| panic!("{what}: no paragraph {MARK:?}"));
        let para = &text[at..];
        let para = &para[..para.find("\n\n").unwrap_or(para.len())];
        para.split_whitespace().collect::<Vec<_>>().join(" ")
    }
    let out = Command::new(common::BIN).args(["lock", "--help"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8(out.stdout).unwrap();
    let ops = std::fs::read_to_string(repo().join("docs/OPERATIONS.md")).unwrap();
    let said = rule(&help, "lock --help");
    assert!(said.len() > 200, "the rule is stated, not only named: {said}");
    assert_eq!(rule(&ops, "docs/OPERATIONS.md"), said, "OPERATIONS.md and `lock --help` differ");

    let sessions = sessions("docs/OPERATIONS.md", &ops).unwrap_or_else(|e| panic!("{e}"));
    let names = sessions.iter().find(|s| s.name == "names").expect("a session `names`");
    assert!(!names.in_repo && names.steps.iter().all(|s| s.expected.is_some()));
    // This build's binary first on PATH, where `run` looks (no install).
    let install = Install::new("names");
    std::fs::create_dir_all(install.root.join("bin")).unwrap();
    std::os::unix::fs::symlink(common::BIN, install.root.join("bin/rangelock")).unwrap();
    run(names, &install, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"));
}
