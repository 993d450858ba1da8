//! `rangelock serve --config FILE`, `--print-config` and `--log-format`, through the real
//! binary: a file's values are used and flags override them, the printed settings read
//! back to themselves, a bad file is refused before anything is bound with the key and
//! the line, JSON logs are JSON and text logs to a pipe are plain, and
//! docs/rangelock.example.toml lists exactly the settings there are.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Output, Stdio};
use std::time::Duration;

use common::{dead_addr, rangelock, signal, tempdir};
use rangelock_client::{Client, Endpoint, GrantMode};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rangelock.example.toml");

/// A running `rangelock serve ARGS`.
struct Serve {
    child: Child,
    addr: String,
    stderr: ChildStderr,
}

impl Serve {
    /// Starts it (with `RUST_LOG` as given) and waits for its `listening on` line.
    fn start(args: &[&str], rust_log: &str) -> Serve {
        let mut child = rangelock()
            .arg("serve")
            .args(args)
            .env("RUST_LOG", rust_log)
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on ").expect(&line).to_owned();
        let stderr = child.stderr.take().unwrap();
        Serve { child, addr, stderr }
    }

    fn client(&self) -> Client {
        Client::connect(&self.addr.parse::<Endpoint>().unwrap()).unwrap()
    }

    /// Stops it with SIGTERM; checks it exits 0 and returns its log.
    fn stop(mut self) -> String {
        assert!(signal(self.child.id(), libc::SIGTERM));
        let mut log = String::new();
        self.stderr.read_to_string(&mut log).unwrap();
        assert!(self.child.wait().unwrap().success(), "{log}");
        log
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `rangelock serve ARGS` run to its end.
fn serve(args: &[&str]) -> Output {
    rangelock().arg("serve").args(args).env("RUST_LOG", "info").output().unwrap()
}

/// `rangelock serve ARGS --print-config`: its stdout, which it must print with exit 0.
fn print_config(args: &[&str]) -> String {
    let out = serve(&[args, &["--print-config"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--print-config {args:?} failed: {err}");
    assert!(err.is_empty(), "--print-config logs nothing: {err}");
    String::from_utf8(out.stdout).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Every key a config text names: set (`key = value`) or shown unset (`# key = …`).
fn keys(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| {
            let (key, _) = line.strip_prefix("# ").unwrap_or(line).split_once(" = ")?;
            let is_key = !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            is_key.then(|| key.to_owned())
        })
        .collect()
}

/// The keys a config text sets, as TOML reads it.
fn set_keys(text: &str) -> BTreeSet<String> {
    text.parse::<toml::Table>().unwrap().keys().cloned().collect()
}

#[test]
fn values_come_from_the_file_and_flags_override_them() {
    let dir = tempdir("config-values");
    let file = write(
        &dir,
        "serve.toml",
        "addr = \"127.0.0.1:0\"\nlease_ms = 1234\ngrant = \"poll\"\nengine = \"tree-mutex\"\n",
    );
    let file = file.to_str().unwrap();

    // No --addr: the file's port 0 is used (the default, 7878, could not be asserted on).
    let s = Serve::start(&["--config", file], "info");
    let c = s.client();
    assert_eq!(c.lease(), Duration::from_millis(1234), "lease_ms from the file");
    assert_eq!(c.grant_mode(), GrantMode::Poll, "grant from the file");
    c.lock_exclusive(0..10).unwrap().unlock().unwrap();
    drop(c);
    let log = s.stop();
    assert!(log.contains("engine=\"tree-mutex\""), "engine from the file: {log}");

    let s = Serve::start(&["--config", file, "--lease-ms", "2000", "--engine", "combiner"], "info");
    let c = s.client();
    assert_eq!(c.lease(), Duration::from_millis(2000), "the flag wins over the file");
    assert_eq!(c.grant_mode(), GrantMode::Poll, "what no flag says still comes from the file");
    drop(c);
    let log = s.stop();
    assert!(log.contains("engine=\"combiner\""), "{log}");

    // The same through --print-config, including a cluster list from the file.
    let file = write(&dir, "cluster.toml", "cluster = [\"http://a:2379\", \"http://b:2379\"]\n");
    let printed = print_config(&["--config", file.to_str().unwrap(), "--node-id", "n1"]);
    assert!(printed.contains("\ncluster = [\"http://a:2379\", \"http://b:2379\"]\n"), "{printed}");
    assert!(printed.contains("\nnode_id = \"n1\"\n"), "{printed}");
    assert!(printed.contains("\ncluster_name = \"default\"\n"), "a node gets its default name");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cluster_settings_from_the_file_reach_the_node() {
    // etcd refuses at once: the node's start fails with the file's node id and endpoint.
    let dir = tempdir("config-cluster");
    let etcd = dead_addr();
    let file = write(
        &dir,
        "node.toml",
        &format!("cluster = [\"http://{etcd}\"]\nnode_id = \"from-file\"\netcd_ttl = 1\n"),
    );
    let out = serve(&["--config", file.to_str().unwrap(), "--addr", "127.0.0.1:0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot start cluster node \"from-file\""), "{err}");
    assert!(err.contains(&etcd), "names the file's endpoint: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn print_config_reads_back_to_itself_and_binds_nothing() {
    let dir = tempdir("config-print");
    // An address in use and a socket path: binding either would show.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let sock = dir.join("s.sock");
    let file = write(
        &dir,
        "a.toml",
        &format!(
            "addr = \"{taken}\"\nunix = \"{}\"\nthreads = 3\nlog_format = \"json\"\n",
            sock.display()
        ),
    );
    let first = print_config(&["--config", file.to_str().unwrap(), "--max-locks", "7"]);
    assert!(!sock.exists(), "--print-config created the socket");
    assert!(first.contains(&format!("\naddr = \"{taken}\"\n")), "{first}");
    assert!(first.contains("\nthreads = 3\n") && first.contains("\nmax_locks = 7\n"), "{first}");
    assert!(first.contains("\nlease_ms = 10000\n"), "defaults are shown: {first}");
    assert!(first.contains("\n# node_id = (not set)\n"), "unset keys are listed: {first}");

    let again = write(&dir, "printed.toml", &first);
    let second = print_config(&["--config", again.to_str().unwrap()]);
    assert_eq!(first, second, "the printed settings, read back, print the same");

    // Only a Unix socket: no TCP address, and that too reads back.
    let unix_only = write(&dir, "u.toml", &format!("unix = \"{}\"\n", sock.display()));
    let first = print_config(&["--config", unix_only.to_str().unwrap()]);
    assert!(first.contains("\n# addr = (not set)\n"), "{first}");
    let again = write(&dir, "printed-u.toml", &first);
    assert_eq!(first, print_config(&["--config", again.to_str().unwrap()]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_key_is_refused_with_its_name_before_anything_is_bound() {
    let dir = tempdir("config-unknown");
    let addr = dead_addr();
    let sock = dir.join("s.sock");
    let file = write(
        &dir,
        "bad.toml",
        &format!("addr = \"{addr}\"\nunix = \"{}\"\n\nlease = 500\n", sock.display()),
    );
    let path = file.to_str().unwrap();
    for extra in [&[][..], &["--print-config"]] {
        let out = serve(&[&["--config", path][..], extra].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(out.stdout.is_empty(), "nothing printed, nothing bound: {err}");
        assert!(
            err.starts_with(&format!("rangelock: config file {path}: line 4: unknown key `lease`")),
            "{err}"
        );
        assert!(err.contains("`lease_ms`"), "the keys there are are listed: {err}");
        assert!(!sock.exists(), "the socket was bound");
        std::net::TcpListener::bind(&addr).expect("the address is still free");
    }
    // A table of settings is not a setting either.
    let file = write(&dir, "table.toml", "[serve]\nlease_ms = 500\n");
    let out = serve(&["--config", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("line 1: unknown key `serve`"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_value_is_refused_naming_the_key_and_line() {
    let dir = tempdir("config-bad");
    let cases: &[(&str, &str)] = &[
        (
            "threads = 2\nlease_ms = \"ten\"\n",
            "line 2, key `lease_ms`: invalid type: string \"ten\"",
        ),
        ("backlog = -1\n", "line 1, key `backlog`: invalid value: integer `-1`"),
        ("engine = \"fast\"\n", "line 1, key `engine`: unknown engine \"fast\""),
        ("grant = 1\n", "line 1, key `grant`: invalid type: integer `1`, expected a string"),
        ("addr = \"nowhere\"\n", "line 1, key `addr`: \"nowhere\" is not an address"),
        ("log_format = \"xml\"\n", "line 1, key `log_format`: unknown variant `xml`"),
        ("cluster = [\n  \"http://a:2379\",\n  2,\n]\n", "line 3, key `cluster`:"),
        ("lease_ms = \n", "line 1:"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let file = write(&dir, &format!("bad{i}.toml"), text);
        let out = serve(&["--config", file.to_str().unwrap(), "--addr", "127.0.0.1:0"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text:?} accepted");
        assert!(out.stdout.is_empty(), "{text:?}: nothing bound");
        let want = format!("rangelock: config file {}: {want}", file.display());
        assert!(err.starts_with(&want), "{text:?}:\n{err}\nwanted: {want}");
    }
    // Values of the right type that cannot be served are refused as flags are.
    let file = write(&dir, "short.toml", "lease_ms = 5\n");
    let out = serve(&["--config", file.to_str().unwrap(), "--print-config"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 100 ms"));
    // A cluster setting without a cluster is a mistake, whichever layer it is in.
    let file = write(&dir, "node.toml", "node_id = \"a\"\n");
    let out = serve(&["--config", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("`node_id` (--node-id) is a setting of cluster nodes"), "{err}");
    let out = serve(&["--config", "/nonexistent-rangelock/serve.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read config file /nonexistent-rangelock/serve.toml"), "{err}");
    assert_eq!(out.status.code(), Some(66), "EX_NOINPUT: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every file `serve` is given that cannot be read exits 66 (EX_NOINPUT), naming it; a
/// cluster node that cannot reach etcd exits 69 (EX_UNAVAILABLE); the table is in
/// docs/OPERATIONS.md ("Exit codes").
#[test]
fn unreadable_files_exit_66_and_an_unreachable_etcd_69() {
    let cases: [(&[&str], &str); 4] = [
        (&["--config", "/nonexistent-rangelock/serve.toml"], "cannot read config file"),
        (&["--auth-file", "/nonexistent-rangelock/auth.toml"], "cannot read the auth file"),
        (
            &[
                "--tls-cert",
                "/nonexistent-rangelock/c.pem",
                "--tls-key",
                "/nonexistent-rangelock/k.pem",
            ],
            "cannot read the TLS certificate file",
        ),
        (&["--unix", "/nonexistent-rangelock/dir/sock"], ""),
    ];
    for (args, says) in &cases[..3] {
        let out = serve(&[&["--addr", "127.0.0.1:0"], *args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(66), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Not an input file: a socket that cannot be created is a plain failure (1).
    let out = serve(cases[3].0);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let etcd = format!("http://{dead}");
    let out = serve(&["--addr", "127.0.0.1:0", "--cluster", &etcd, "--node-id", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(err.contains("etcd"), "{err}");
}

/// Spoils one connection with a bad hello: the server logs the session's end.
fn bad_hello(addr: &str) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut b = [0u8; 1];
    assert_eq!(s.read(&mut b).unwrap_or(0), 0, "the server closes a bad hello");
}

#[test]
fn json_logs_are_one_object_per_line_with_level_and_message() {
    let dir = tempdir("config-json");
    let file = write(&dir, "j.toml", "log_format = \"json\"\n");
    let s = Serve::start(&["--config", file.to_str().unwrap(), "--addr", "127.0.0.1:0"], "info");
    bad_hello(&s.addr);
    let log = s.stop();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for e in &events {
        assert!(e["timestamp"].is_string() && e["target"].is_string(), "{e}");
        assert!(["INFO", "WARN", "ERROR"].contains(&e["level"].as_str().unwrap()), "{e}");
        assert!(e["fields"]["message"].is_string(), "{e}");
    }
    let messages: Vec<&str> =
        events.iter().map(|e| e["fields"]["message"].as_str().unwrap()).collect();
    let listening =
        &events[messages.iter().position(|m| *m == "rangelock server listening").unwrap()];
    assert_eq!(listening["fields"]["engine"], "combiner", "fields are fields: {listening}");
    let ended = events.iter().find(|e| e["fields"]["reason"].is_string()).expect(&log);
    assert!(ended["fields"]["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{ended}");
    assert!(messages.contains(&"server stopped"), "{messages:?}");

    // The flag overrides the file's json.
    let s = Serve::start(
        &["--config", file.to_str().unwrap(), "--addr", "127.0.0.1:0", "--log-format", "text"],
        "info",
    );
    let log = s.stop();
    assert!(log.lines().all(|l| !l.starts_with('{')), "{log}");
    assert!(log.contains(" INFO ") && log.contains("server stopped"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_logs_to_a_pipe_have_no_colour_and_a_bad_filter_is_reported() {
    let s = Serve::start(&["--addr", "127.0.0.1:0"], "debug");
    bad_hello(&s.addr);
    let log = s.stop();
    assert!(
        log.contains("DEBUG") && log.contains("connection closed before a session opened"),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "ANSI escape codes on a pipe:\n{log}");

    let s = Serve::start(&["--addr", "127.0.0.1:0"], "rangelock=[");
    let log = s.stop();
    let first = log.lines().next().unwrap_or_default();
    assert!(first.contains("WARN") && first.contains("RUST_LOG ignored"), "{log}");
    assert!(log.contains("rangelock server listening"), "info applies instead: {log}");
}

#[test]
fn the_example_file_lists_every_setting_and_holds_the_defaults() {
    let example = std::fs::read_to_string(EXAMPLE).unwrap();
    let defaults = print_config(&[]);
    let all = keys(&defaults);
    assert!(all.contains("lease_ms") && all.contains("log_format"), "{all:?}");
    assert_eq!(
        keys(&example),
        all,
        "docs/rangelock.example.toml must show every key --print-config prints, and no other"
    );
    assert_eq!(set_keys(&example), set_keys(&defaults), "the same keys are set, the rest shown");
    // It parses, and as it is changes nothing.
    assert_eq!(print_config(&["--config", EXAMPLE]), defaults, "the example sets the defaults");

    // Its example values for the unset keys are valid too: with every line in use it is
    // a complete config (a cluster node's), and every key is set.
    let dir = tempdir("config-example");
    let full: String = example
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest) if keys(rest).len() == 1 => rest,
            _ => l,
        })
        .fold(String::new(), |s, l| s + l + "\n");
    let full_path = write(&dir, "full.toml", &full);
    let printed = print_config(&["--config", full_path.to_str().unwrap()]);
    assert!(!printed.contains("(not set)"), "every key set:\n{printed}");
    assert_eq!(set_keys(&printed), all);
    let _ = std::fs::remove_dir_all(&dir);
}
