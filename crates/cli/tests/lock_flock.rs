//! `rangelock lock` as flock(1) and `etcdctl lock` users expect it, through the binary:
//! every range form (checked by what the server lists as held), `-x`/`-e`, `-s`, `-w`,
//! `-c`, `-q`, the command after RANGE with or without `--`, the hold mode without a
//! command (token on stdout, held until SIGTERM, SIGINT, SIGHUP or SIGQUIT),
//! `$RANGELOCK_SERVER` / `$RANGELOCK_CLUSTER` below the flags, and the exit codes of the
//! refusals docs/OPERATIONS.md shows.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use common::{dead_addr, lock_cmd, rangelock, signal, wait_bounded, ServerProc, BIN};
use rangelock_client::{Client, ClientError, Endpoint, Mode, Wait};

const LIMIT: Duration = Duration::from_secs(30);

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `rangelock lock ARGS…` with the server `addr` given by flag.
fn lock(addr: &str, args: &[&str]) -> Output {
    rangelock().args(["lock", "--server", addr]).args(args).output().unwrap()
}

/// The held entries `rangelock stat` lists: (token, start, end).
fn held_entries(stat_out: &str) -> Vec<(u64, u64, u64)> {
    stat_out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.first() == Some(&"held"))
        .map(|f| (f[4].parse().unwrap(), f[5].parse().unwrap(), f[6].parse().unwrap()))
        .collect()
}

/// Whether a try-lock of `range` is refused because someone holds it.
fn taken(addr: &str, range: std::ops::Range<u64>) -> bool {
    let ep: Endpoint = addr.parse().unwrap();
    let c = Client::connect(&ep).unwrap();
    match c.lock(range, Mode::Exclusive, Wait::Try) {
        Ok(g) => {
            g.unlock().unwrap();
            false
        }
        Err(ClientError::WouldBlock) => true,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn every_range_form_locks_the_units_it_names() {
    let server = ServerProc::start(&[]);
    let stat = format!("'{BIN}' stat --server {}", server.addr);
    for (form, start, end) in [
        ("10", 10, 11),
        ("0..10", 0, 10),
        ("0..=10", 0, 11),
        ("..10", 0, 10),
        ("..=10", 0, 11),
        ("5..", 5, u64::MAX),
        ("..", 0, u64::MAX),
        ("16..+16", 16, 32),
        ("0x10..+0x10", 16, 32),
        ("0x10..0x20", 16, 32),
        ("1_000..1_001", 1000, 1001),
        ("4KiB", 4096, 4097),
        ("0..4KiB", 0, 4096),
        ("1MiB..+4KiB", 1 << 20, (1 << 20) + 4096),
        ("..=1GiB", 0, (1 << 30) + 1),
        ("1TiB..0x1PiB", 1 << 40, 1 << 50),
        ("15EiB..", 15 << 60, u64::MAX),
    ] {
        // The command runs under the lock and asks the server what it holds.
        let out = lock(&server.addr, &[form, "-c", &stat]);
        assert_eq!(out.status.code(), Some(0), "{form}: {}", stderr(&out));
        let held = held_entries(&stdout(&out));
        assert_eq!(held.len(), 1, "{form}: {}", stdout(&out));
        assert_eq!((held[0].1, held[0].2), (start, end), "{form}");
    }
}

#[test]
fn bad_ranges_are_usage_errors_that_quote_the_input() {
    for (form, says) in [
        ("0x10..+0", "it is empty"),
        ("10..10", "it is empty"),
        ("4K", "the suffix \"K\" is ambiguous; write 4KiB"),
        ("4MB", "write 4MiB"),
        ("1..2..3", "more than one `..`"),
        ("..+5", "needs a start"),
        ("+5", "is not a number"),
        ("0x1g", "is not a hex number"),
        ("16EiB", "is more than 2^64-1"),
        ("18446744073709551615", "past the last lockable unit"),
    ] {
        let out = rangelock().args(["lock", form, "--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{form}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("invalid range {form:?}: ")), "{form}: {err}");
        assert!(err.contains(says), "{form}: {err}");
    }
}

#[test]
fn a_conflict_names_the_range_as_written() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let holder = Client::connect(&ep).unwrap();
    let _g = holder.lock_exclusive(0..100).unwrap();
    let out = lock(&server.addr, &["-n", "0x10..+16", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("rangelock: lock 0x10..+16 (16..32) not available: "), "{err}");
}

#[test]
fn exclusive_and_shared_as_flock() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let holder = Client::connect(&ep).unwrap();
    // Unheld: -x and -e take it.
    for flag in ["-x", "-e", "--exclusive"] {
        let out = lock(&server.addr, &[flag, "0..10", "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr(&out));
    }
    // Shared-held: -s joins it, -x (and the default) does not.
    let g = holder.lock(0..10, Mode::Shared, Wait::Try).unwrap();
    let out = lock(&server.addr, &["-s", "-n", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for flag in ["-x", "-e"] {
        let out = lock(&server.addr, &[flag, "-n", "0..10", "--", "true"]);
        assert_eq!(out.status.code(), Some(1), "{flag}: {}", stderr(&out));
    }
    let out = lock(&server.addr, &["-n", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(1), "the default is exclusive: {}", stderr(&out));
    g.unlock().unwrap();
    // Both at once is a usage error.
    let out = lock(&server.addr, &["-x", "-s", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn wait_seconds_as_flock() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let holder = Client::connect(&ep).unwrap();
    // Free: -w with fractional seconds locks at once.
    for w in [["-w", "1.5"], ["--wait", "0.5"]] {
        let out = lock(&server.addr, &[w[0], w[1], "0..10", "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{w:?}: {}", stderr(&out));
    }
    let _g = holder.lock_exclusive(0..10).unwrap();
    let out = lock(&server.addr, &["-w", "0.2", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));
    // `-w 0` is --nonblock, as with flock(1).
    let out = lock(&server.addr, &["-w", "0", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("range is locked"), "{}", stderr(&out));
    // -w and -n together are a usage error, as -t and -n are.
    let out = lock(&server.addr, &["-w", "1", "-n", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_shell_command_with_c() {
    let server = ServerProc::start(&[]);
    let out = lock(&server.addr, &["0..10", "-c", "echo token=$RANGELOCK_TOKEN; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let token = stdout(&out);
    let token = token.trim().strip_prefix("token=").expect("the token line");
    assert!(token.parse::<u64>().is_ok(), "{token}");
    let out = lock(&server.addr, &["0..10", "--command", "test \"$0\" = /bin/sh"]);
    assert_eq!(out.status.code(), Some(0), "run by /bin/sh: {}", stderr(&out));
    // -c and a command after `--` are a usage error.
    let out = lock(&server.addr, &["0..10", "-c", "true", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// As `flock FILE CMD ARGS…`: the first argument after RANGE that is not an option starts
/// the command, and every argument from there on is the command's, options of rangelock's
/// included; `--` is still allowed.
#[test]
fn the_command_may_follow_the_range_without_dashdash_as_with_flock() {
    let server = ServerProc::start(&[]);
    let out = lock(&server.addr, &["0..10", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // `-c` is sh's here: rangelock's own `-c` would conflict with a command (exit 2).
    let out = lock(&server.addr, &["0..10", "sh", "-c", "echo token=$RANGELOCK_TOKEN; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("token="), "{}", stdout(&out));
    // Options before the command are rangelock's, after it the command's.
    let out = lock(&server.addr, &["0..10", "-n", "printf", "%s|", "-n", "--server", "x", "--"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "-n|--server|x|--|");
    let out = lock(&server.addr, &["0..10", "--", "printf", "%s|", "a"]);
    assert_eq!((out.status.code(), stdout(&out)), (Some(0), "a|".to_owned()), "{}", stderr(&out));
}

/// A command that starts with `-` reads as an option: one `lock` does not know is a usage
/// error that says to add `--`; with `--` it is the command.
#[test]
fn a_command_that_starts_with_a_dash_needs_dashdash_and_the_error_says_so() {
    let server = ServerProc::start(&[]);
    let out = lock(&server.addr, &["0..10", "-rangelock-no-such-command"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("tip: add `--` before the command"), "{err}");
    assert!(!err.contains("as a value"), "only our tip: {err}");
    let out = lock(&server.addr, &["0..10", "--", "-rangelock-no-such-command"]);
    assert_eq!(out.status.code(), Some(127), "run as the command: {}", stderr(&out));
    // A misspelled option keeps clap's suggestion beside the tip.
    let out = lock(&server.addr, &["0..10", "--nonblok", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--nonblock") && err.contains("add `--` before"), "{err}");
}

#[test]
fn quiet_prints_nothing_on_a_conflict_but_still_says_other_errors() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let holder = Client::connect(&ep).unwrap();
    let _g = holder.lock_exclusive(0..10).unwrap();
    for args in [&["-q", "-n"][..], &["--quiet", "-w", "0.1"], &["-q", "-n", "-E", "9"]] {
        let out = lock(&server.addr, &[args, &["5", "--", "true"]].concat());
        let code = if args.contains(&"-E") { 9 } else { 1 };
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        assert_eq!(stderr(&out), "", "{args:?}");
    }
    // Without -q the conflict is told.
    let out = lock(&server.addr, &["-n", "5", "--", "true"]);
    assert!(stderr(&out).contains("not available"), "{}", stderr(&out));
    // An unreachable server is no conflict: told, 69.
    let out = lock(&dead_addr(), &["-q", "-n", "5", "--", "true"]);
    assert_eq!(out.status.code(), Some(69));
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
}

/// `rangelock lock ARGS…` holding without a command: the child and the token it printed.
fn start_hold(addr: &str, range: &str) -> (Child, u64) {
    let mut child = rangelock()
        .args(["lock", "--server", addr, range])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let token = line.trim().parse().unwrap_or_else(|_| panic!("a token line: {line:?}"));
    (child, token)
}

#[test]
fn without_a_command_it_prints_the_token_and_holds_until_sigterm_or_sigint() {
    let server = ServerProc::start(&[]);
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let (mut child, token) = start_hold(&server.addr, "0x100..+0x100");
        // Held: a try-lock is refused, and stat lists it with the printed token.
        assert!(taken(&server.addr, 0x100..0x101));
        assert!(!taken(&server.addr, 0..0x100), "only the range is held");
        let out = rangelock().args(["stat", "--server", &server.addr]).output().unwrap();
        assert_eq!(held_entries(&stdout(&out)), [(token, 0x100, 0x200)], "{}", stdout(&out));
        assert!(signal(child.id(), sig));
        let st = wait_bounded(&mut child, LIMIT).expect("it exits on the signal");
        assert_eq!(st.code(), Some(0), "signal {sig}");
        // Released: it is free at once.
        assert!(!taken(&server.addr, 0x100..0x200), "signal {sig}");
    }
}

#[test]
fn a_hold_whose_lease_lapses_exits_75() {
    let server = ServerProc::start(&["--lease-ms", "300"]);
    let (mut child, _) = start_hold(&server.addr, "0..10");
    // Stop it (and its keepalive thread) until another client is granted the range: the
    // grant is the synchronization.
    assert!(signal(child.id(), libc::SIGSTOP));
    let ep: Endpoint = server.addr.parse().unwrap();
    let other = Client::connect(&ep).unwrap();
    let g = other.lock(0..10, Mode::Exclusive, Wait::Forever).unwrap();
    assert!(signal(child.id(), libc::SIGCONT));
    let st = wait_bounded(&mut child, LIMIT);
    if st.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(st.and_then(|s| s.code()), Some(75), "{}", stderr(&out));
    assert!(stderr(&out).contains("lock 0..10 lost: "), "{}", stderr(&out));
    g.unlock().unwrap();
}

#[test]
fn the_environment_gives_the_address_and_the_flags_win() {
    let server = ServerProc::start(&[]);
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut c = rangelock();
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let dead = dead_addr();
    // $RANGELOCK_SERVER alone.
    let out = run(&[("RANGELOCK_SERVER", &server.addr)], &["lock", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&[("RANGELOCK_SERVER", &server.addr)], &["stat"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("server            {}", server.addr)));
    // --server beats it, and $RANGELOCK_CLUSTER.
    for var in ["RANGELOCK_SERVER", "RANGELOCK_CLUSTER"] {
        let mut cmd = lock_cmd(&server.addr, "0..10", &[], &["true"]);
        let out = cmd.env(var, &dead).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{var}: {}", stderr(&out));
    }
    // $RANGELOCK_CLUSTER alone is read as a cluster: here a node that does not answer.
    let out = run(&[("RANGELOCK_CLUSTER", &dead)], &["lock", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains("connecting to the cluster at"), "{}", stderr(&out));
    // An etcd that does not answer is 69 too.
    let etcd = format!("http://{dead}");
    for sub in [&["lock", "0..10", "--", "true"][..], &["stat"]] {
        let out = run(&[("RANGELOCK_CLUSTER", &etcd)], sub);
        assert_eq!(out.status.code(), Some(69), "{sub:?}: {}", stderr(&out));
    }
    // --cluster beats $RANGELOCK_SERVER.
    let out = run(&[("RANGELOCK_SERVER", &server.addr)], &["lock", "--cluster", &dead, "0..1"]);
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    // Both variables and no flag: which one? A usage error.
    let both = [("RANGELOCK_SERVER", server.addr.as_str()), ("RANGELOCK_CLUSTER", &dead)];
    let out = run(&both, &["lock", "0..10", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("both $RANGELOCK_SERVER and $RANGELOCK_CLUSTER"));
    // Both flags: a usage error.
    let out = run(&[], &["lock", "--server", &server.addr, "--cluster", &dead, "0", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // --help shows the variables.
    for sub in ["lock", "stat"] {
        let help = stdout(&run(&[], &[sub, "--help"]));
        assert!(help.contains("[env: RANGELOCK_SERVER="), "{sub}: {help}");
        assert!(help.contains("[env: RANGELOCK_CLUSTER="), "{sub}: {help}");
    }
}

/// The refused range docs/OPERATIONS.md shows is what `lock` prints, word for word.
#[test]
fn the_documented_range_error_is_the_real_one() {
    let doc = include_str!("../../../docs/OPERATIONS.md");
    let line = doc
        .lines()
        .find(|l| l.starts_with("error: invalid value '4K'"))
        .expect("docs/OPERATIONS.md shows the error for 4K");
    let out = rangelock().args(["lock", "4K", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().next(), Some(line));
}
