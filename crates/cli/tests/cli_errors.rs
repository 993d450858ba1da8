//! Exit codes and error messages of `rangelock lock` and `rangelock stat`: each failure
//! has its own documented code, is told once on one line of stderr (no backtrace, even
//! with `RUST_BACKTRACE=1`), durations are human and bounded, and a refusal of the
//! protocol version names every version this client speaks.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use common::{dead_addr, lock_cmd, rangelock, tempdir, ServerProc};
use rangelock_client::{Client, Endpoint};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs with `RUST_BACKTRACE=1`, and checks the error is one line without a backtrace.
fn run_failing(cmd: &mut std::process::Command) -> (Option<i32>, String) {
    let out = cmd.env("RUST_BACKTRACE", "1").output().unwrap();
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "exactly one line on stderr:\n{err}");
    assert!(err.starts_with("rangelock: "), "{err}");
    assert!(!err.to_lowercase().contains("backtrace"), "{err}");
    (out.status.code(), err)
}

#[test]
fn an_unreachable_server_exits_69_with_one_line_naming_the_address() {
    let addr = dead_addr();
    let (code, err) = run_failing(&mut lock_cmd(&addr, "0..10", &[], &["true"]));
    assert_eq!(code, Some(69));
    assert_eq!(err.trim(), format!("rangelock: cannot connect to {addr}: connection refused"));
    let (code, err) = run_failing(rangelock().args(["stat", "--server", &addr]));
    assert_eq!(code, Some(69));
    assert!(err.contains(&format!("cannot connect to {addr}")), "{err}");
}

#[test]
fn a_command_not_found_exits_127_and_one_not_executable_126() {
    let server = ServerProc::start(&[]);
    let (code, err) =
        run_failing(&mut lock_cmd(&server.addr, "0..10", &[], &["rangelock-no-such-command"]));
    assert_eq!(code, Some(127), "{err}");
    assert!(err.contains("rangelock-no-such-command: command not found"), "{err}");

    let dir = tempdir("noexec");
    let script = dir.join("script.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, err) =
        run_failing(&mut lock_cmd(&server.addr, "0..10", &[], &[script.to_str().unwrap()]));
    assert_eq!(code, Some(126), "{err}");
    assert!(err.contains("permission denied"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);

    // The lock was released each time: a --nonblock lock of the range succeeds.
    let st = lock_cmd(&server.addr, "0..10", &["--nonblock"], &["true"]).status().unwrap();
    assert_eq!(st.code(), Some(0));
}

#[test]
fn a_lock_not_available_exits_1_or_the_conflict_exit_code() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let holder = Client::connect(&ep).unwrap();
    let _guard = holder.lock_exclusive(0..10).unwrap();
    let (code, err) = run_failing(&mut lock_cmd(&server.addr, "5..6", &["--nonblock"], &["true"]));
    assert_eq!(code, Some(1));
    assert!(err.contains("lock 5..6 not available"), "{err}");
    let (code, _) = run_failing(&mut lock_cmd(&server.addr, "5..6", &["-n", "-E", "7"], &["true"]));
    assert_eq!(code, Some(7));
    let (code, err) = run_failing(&mut lock_cmd(&server.addr, "5..6", &["-t", "20ms"], &["true"]));
    assert_eq!(code, Some(1));
    assert!(err.contains("timed out"), "{err}");
}

#[test]
fn timeouts_take_human_durations_and_refuse_what_the_protocol_cannot_carry() {
    let server = ServerProc::start(&[]);
    for t in ["1h", "1h30m", "1.5", "250ms"] {
        let st = lock_cmd(&server.addr, "0..10", &["--timeout", t], &["true"]).status().unwrap();
        assert_eq!(st.code(), Some(0), "--timeout {t}");
    }
    for t in ["100000000000", "3y"] {
        let out = lock_cmd(&server.addr, "0..10", &["--timeout", t], &["true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "a usage error");
        let err = stderr(&out);
        assert!(err.contains("maximum of 49d 17h 2m 47s 295ms"), "{err}");
        assert!(err.contains("omit --timeout"), "{err}");
    }
}

#[test]
fn localhost_is_a_valid_server_name() {
    let server = ServerProc::start(&[]);
    let addr = format!("localhost:{}", server.port());
    let out = lock_cmd(&addr, "0..10", &[], &["true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn stat_does_not_count_its_own_session() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let other = Client::connect(&ep).unwrap();
    other.ping().unwrap(); // the server has opened its session
    let out = rangelock().args(["stat", "--server", &server.addr]).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let s = String::from_utf8(out.stdout).unwrap();
    let line = s.lines().find(|l| l.starts_with("sessions open")).unwrap();
    assert_eq!(line, "sessions open     1 (not counting this one)", "{s}");
}

#[test]
fn help_documents_the_exit_codes_and_the_lease() {
    let out = rangelock().args(["lock", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for row in [
        "  1  lock not available",
        " 66  cannot read --token-file, --tls-ca, --tls-cert or --tls-key",
        " 69  cannot reach the server (connection, handshake or TLS handshake failed)",
        " 75  the lock was lost",
        "126  the command was found but is not executable",
        "127  the command was not found",
    ] {
        assert!(help.contains(row), "{row:?} missing from\n{help}");
    }
    assert!(help.contains("Unlike flock(1)") && help.contains("--on-lost"), "{help}");
    assert!(help.contains("passed on to the command"), "{help}");
}

#[test]
fn the_first_line_of_help_names_every_subcommand() {
    let out = rangelock().arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let first = help.lines().next().unwrap();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 5, "{help}");
    for c in commands {
        assert!(first.split(' ').any(|w| w == c), "{c} missing from the first line {first:?}");
    }
}

/// A server of a version this client does not speak (2, older than any it does): the
/// message names the versions the client speaks, all of them, and the exit code is 69.
#[test]
fn a_server_of_an_unknown_version_is_told_the_versions_this_client_speaks() {
    use rangelock_server::protocol::{
        GrantMode, HelloStatus, ServerHello, CLIENT_HELLO_LEN, MIN_VERSION, VERSION,
    };
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    // A version 2 server: refuses the hello, naming its version, and closes.
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; CLIENT_HELLO_LEN];
        s.read_exact(&mut hello).unwrap();
        let mut out = Vec::new();
        let (status, grant) = (HelloStatus::UnsupportedVersion, GrantMode::Push);
        ServerHello { version: 2, status, grant, session: 0, lease_ms: 0, max_frame: 0 }
            .encode(&mut out);
        s.write_all(&out).unwrap();
    });
    let (code, err) = run_failing(&mut lock_cmd(&addr, "0..10", &[], &["true"]));
    server.join().unwrap();
    assert_eq!(code, Some(69), "{err}");
    let speaks = format!(
        "server speaks protocol version 2, this client speaks versions {MIN_VERSION} to {VERSION}"
    );
    assert!(err.contains(&speaks), "{err}");
}
