//! `rangelock serve` as an operator sees it: a log written to a file is plain text with
//! peers and addresses in their ordinary form, a flood of bad connections costs a line or
//! two instead of one each, a refused start names what it could not use and says nothing
//! about a server that never ran, and `--addr` takes a host name.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_rangelock");

/// Runs `rangelock serve ARGS`, lets `f` use the printed address, stops it with SIGTERM
/// and returns its stderr (the log).
fn serve_log(args: &[&str], f: impl FnOnce(&str)) -> String {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").expect("listening line").to_owned();
    f(&addr);
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let mut log = String::new();
    child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(child.wait().unwrap().success());
    log
}

#[test]
fn a_log_file_is_plain_and_a_flood_of_bad_connections_costs_a_line() {
    let log = serve_log(&["--addr", "127.0.0.1:0"], |addr| {
        for _ in 0..200 {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\n").unwrap(); // not a rangelock hello
            let mut b = [0u8; 1];
            assert_eq!(s.read(&mut b).unwrap_or(0), 0, "the server closes a bad hello");
        }
    });
    assert!(!log.contains('\u{1b}'), "ANSI escape codes in a log file:\n{log}");
    assert!(!log.contains("Some("), "Debug forms in the log:\n{log}");
    let ended: Vec<&str> =
        log.lines().filter(|l| l.contains("connection closed before a session opened")).collect();
    assert!(!ended.is_empty(), "bad connections are reported:\n{log}");
    assert!(ended.len() <= 2, "200 bad connections took {} lines:\n{log}", ended.len());
    assert!(ended[0].contains("peer=127.0.0.1:"), "the line names the peer: {}", ended[0]);
    assert!(ended[0].contains("bad hello"), "and the reason: {}", ended[0]);
}

#[test]
fn a_refused_start_names_the_address_and_does_not_claim_a_server_stopped() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(BIN)
        .args(["serve", "--addr", &addr])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&addr), "names the address: {err}");
    assert!(err.to_lowercase().contains("in use"), "says why: {err}");
    assert!(!err.contains("server stopped"), "no server ran: {err}");
    let out = Command::new(BIN)
        .args(["serve", "--unix", "/nonexistent-rangelock-dir/s.sock"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("/nonexistent-rangelock-dir/s.sock"), "names the path: {err}");
}

#[test]
fn serve_resolves_host_names_and_refuses_a_too_short_lease() {
    let log = serve_log(&["--addr", "localhost:0"], |addr| {
        assert!(addr.starts_with("127.0.0.1:"), "localhost resolves to loopback: {addr}");
    });
    assert!(log.contains("listening"));
    for lease in ["0", "5", "99"] {
        let out = Command::new(BIN).args(["serve", "--lease-ms", lease]).output().unwrap();
        assert!(!out.status.success(), "--lease-ms {lease} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("at least 100 ms"), "--lease-ms {lease}: {err}");
    }
}

#[test]
fn a_second_server_on_a_live_unix_socket_is_refused() {
    let dir = std::env::temp_dir().join(format!("rangelock-serve-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.sock");
    let p = path.to_str().unwrap().to_owned();
    let log = serve_log(&["--unix", &p], |_| {
        let out = Command::new(BIN).args(["serve", "--unix", &p]).output().unwrap();
        assert!(!out.status.success(), "a second server took over {p}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&p), "names the path: {err}");
    });
    assert!(log.contains("server stopped"));
    assert!(!path.exists(), "the first server removed its socket on exit");
}

#[test]
fn serve_announces_its_shm_slot_file_removes_it_on_stop_and_refuses_it_with_poll_grants() {
    let dir = std::env::temp_dir().join(format!("rl-serve-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--shm-slots", "4", "--shm-dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut listening, mut shm) = (String::new(), String::new());
    out.read_line(&mut listening).unwrap();
    out.read_line(&mut shm).unwrap();
    assert!(listening.starts_with("listening on "), "{listening}");
    let path = std::path::PathBuf::from(shm.trim().strip_prefix("shm slots in ").expect(&shm));
    assert!(path.starts_with(&dir), "{path:?} is in --shm-dir");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 * 64, "4 slots of one cache line");
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(child.wait().unwrap().success());
    assert!(!path.exists(), "the slot file is removed when the server stops");
    let _ = std::fs::remove_dir_all(&dir);

    let out = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--grant", "poll", "--shm-slots", "2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("push grants"), "says why: {err}");
}

/// Limits under which some answer could never be sent are refused before anything is
/// bound, naming the limit and the size it needs (issue 30: `--max-output-bytes 21` made
/// every session die at its first answer).
#[test]
fn serve_refuses_limits_that_make_an_answer_impossible() {
    let cases: [(&[&str], &str); 4] = [
        (&["--max-output-bytes", "21"], "max_output_bytes 21 is below 162"),
        (
            &["--max-output-bytes", "4125", "--shm-slots", "1"],
            "max_output_bytes 4125 is below 4126",
        ),
        (&["--max-stats-entries", "399455"], "max_stats_entries 399455 is above 399454"),
        (&["--max-stats-entries", "1000000"], "16 MiB"),
    ];
    for (args, want) in cases {
        let out = Command::new(BIN)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing was bound");
    }
    let log = serve_log(&["--max-output-bytes", "162", "--max-stats-entries", "399454"], |a| {
        let c = rangelock_client::Client::connect(&a.parse().unwrap()).unwrap();
        let st = c.stats(1000).unwrap();
        assert_eq!((st.entries.len(), st.omitted), (0, 0));
        c.ping().unwrap();
    });
    assert!(log.contains("listening"), "{log}");
}
