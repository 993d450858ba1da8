//! `rangelock lock [NAME] RANGE [--] CMD…` through the binary against a real server: named
//! locks hold beside each other and beside the unnamed resource, the two leading
//! arguments are read by the documented rule (which form a command line takes is checked
//! by what conflicts on the server), ambiguous forms and bad names are usage errors before
//! anything connects, and a server that serves no names is a clear error with a
//! documented exit code.

mod common;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::{Child, ChildStdin, Output, Stdio};
use std::time::Duration;

use common::{dead_addr, rangelock, signal, wait_bounded, ServerProc};
use rangelock_client::{Client, ClientError, Endpoint, LockGuard, Mode, Wait};

const LIMIT: Duration = Duration::from_secs(30);

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `rangelock lock --server ADDR ARGS…`, run to its end.
fn lock(addr: &str, args: &[&str]) -> Output {
    rangelock().args(["lock", "--server", addr]).args(args).output().unwrap()
}

/// Its exit code, with stderr for the assertion's message.
fn code(addr: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = lock(addr, args);
    (out.status.code(), stderr(&out))
}

/// A client of the server at `addr`.
fn client(addr: &str) -> Client {
    Client::connect(&addr.parse::<Endpoint>().unwrap()).unwrap()
}

/// Holds `range` of resource `name` (`""`: the unnamed one) exclusively.
fn hold(c: &Client, name: &[u8], range: std::ops::Range<u64>) -> LockGuard {
    if name.is_empty() {
        c.lock_exclusive(range).unwrap()
    } else {
        c.resource(name).unwrap().lock_exclusive(range).unwrap()
    }
}

/// A `rangelock lock ARGS… -- sh -c 'echo held; read _'`: it prints `held` once its lock
/// is held, and holds it until [`Holder::release`] writes it a line.
struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Holder {
    /// Starts it and returns once the command runs under the lock.
    fn start(addr: &str, args: &[&str]) -> Holder {
        let mut child = rangelock()
            .args(["lock", "--server", addr])
            .args(args)
            .args(["--", "sh", "-c", "echo held; read _"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, "held\n", "{args:?} did not start its command under the lock");
        let stdin = child.stdin.take();
        Holder { child, stdin }
    }

    /// Ends the command (its `read` reads a line); returns rangelock's exit code.
    fn release(mut self) -> Option<i32> {
        let mut stdin = self.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
        drop(stdin);
        wait_bounded(&mut self.child, LIMIT).expect("rangelock lock ended").code()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The issue's done-when: `lock a 0..10 -- CMD` and `lock --nonblock b 0..10 -- true` hold at
/// once; `lock --nonblock a 5..6 -- true` exits 1 while the first runs, and 0 after.
#[test]
fn different_names_hold_at_once_and_the_same_name_conflicts() {
    let server = ServerProc::start(&[]);
    let a = Holder::start(&server.addr, &["a", "0..10"]);
    assert_eq!(code(&server.addr, &["--nonblock", "b", "0..10", "--", "true"]).0, Some(0));
    let (c, err) = code(&server.addr, &["--nonblock", "a", "5..6", "--", "true"]);
    assert_eq!(c, Some(1), "{err}");
    assert!(err.contains("lock 5..6 of \"a\" not available"), "{err}");
    // The unnamed resource is another line again.
    assert_eq!(code(&server.addr, &["--nonblock", "0..10", "--", "true"]).0, Some(0));
    assert_eq!(a.release(), Some(0));
    assert_eq!(code(&server.addr, &["--nonblock", "a", "5..6", "--", "true"]).0, Some(0));
}

/// Which form a command line took is told by the server: NAME RANGE conflicts with a
/// holder of that name, RANGE CMD with a holder of the unnamed resource; the command's
/// own exit code shows it ran, with its arguments.
#[test]
fn the_leading_arguments_are_read_by_the_rule() {
    let server = ServerProc::start(&[]);
    let addr = &server.addr;
    let c = client(addr);
    let _held = [
        hold(&c, b"a", 0..10),
        hold(&c, b"", 100..110),
        hold(&c, b"/tmp/file", 0..10),
        hold(&c, b"5", 0..10),
    ];
    for (args, want) in [
        // NAME RANGE [--] CMD: the second reads as a range, the first does not.
        (&["-n", "a", "0..10", "--", "true"][..], 1),
        (&["-n", "b", "0..10", "--", "sh", "-c", "exit 3"], 3),
        (&["-n", "/tmp/file", "0..10", "cat", "/nonexistent"], 1),
        (&["-n", "/tmp/other", "0..10", "sh", "-c", "exit 5"], 5),
        // Options before, between and after NAME and RANGE.
        (&["a", "-n", "0..10", "true"], 1),
        (&["a", "0..10", "-n", "--", "true"], 1),
        (&["--timeout", "0", "a", "0..10", "true"], 1),
        (&["-qw", "0", "b", "0..10", "-s", "--on-lost", "KILL", "--", "sh", "-c", "exit 6"], 6),
        // RANGE CMD: the first reads as a range, the second does not; as without names.
        (&["-n", "100..110", "true"], 1),
        (&["-n", "0..10", "sh", "-c", "exit 4"], 4),
        (&["-n", "0..10", "--", "0..10"], 127), // `--` ends NAME and RANGE: a command
        // --name NAME: always the name, the first argument always RANGE.
        (&["-n", "--name", "5", "0..10", "--", "true"], 1),
        (&["-n", "--name=5", "10..20", "--", "sh", "-c", "exit 7"], 7),
        (&["-n", "--name", "x", "0..10", "0..1"], 127),
    ] {
        let (got, err) = code(addr, args);
        assert_eq!(got, Some(want), "{args:?}: {err}");
    }
}

#[test]
fn a_command_after_dashdash_may_start_with_a_dash() {
    let server = ServerProc::start(&[]);
    let (c, err) = code(&server.addr, &["a", "0..10", "--", "-rangelock-no-such-command"]);
    assert_eq!(c, Some(127), "{err}");
    assert!(err.contains("-rangelock-no-such-command: command not found"), "{err}");
    // Without `--`, an option `lock` does not know, with the hint.
    let (c, err) = code(&server.addr, &["a", "0..10", "-rangelock"]);
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("add `--` before the command"), "{err}");
}

/// Refused before connecting: the server address is dead, so exit 2 (not 69) shows that
/// nothing connected.
#[test]
fn ambiguous_forms_and_two_names_are_usage_errors() {
    let dead = dead_addr();
    for args in [&["5", "0..10", "--", "true"][..], &["0..10", "5..6"], &["-n", "1", "2"]] {
        let (c, err) = code(&dead, args);
        assert_eq!(c, Some(2), "{args:?}: {err}");
        assert!(err.contains("ambiguous"), "{args:?}: {err}");
        assert!(err.contains("give the name with --name NAME"), "{args:?}: {err}");
        assert!(err.contains("Usage: rangelock lock [OPTIONS] [NAME] <RANGE>"), "{err}");
    }
    let (_, err) = code(&dead, &["5", "0..10", "--", "true"]);
    assert!(err.contains("rangelock lock --name 5 0..10"), "{err}");
    for args in [&["--name", "a", "b", "0..10", "--", "true"][..], &["b", "0..10", "--name", "a"]] {
        let (c, err) = code(&dead, args);
        assert_eq!(c, Some(2), "{args:?}: {err}");
        assert!(err.contains("a NAME argument and --name were both given"), "{args:?}: {err}");
    }
}

#[test]
fn an_empty_or_too_long_name_is_a_usage_error() {
    let dead = dead_addr();
    let long = "n".repeat(1025);
    for args in [
        &["", "0..10", "--", "true"][..],
        &["--name", "", "0..10", "--", "true"],
        &[&long, "0..10", "--", "true"],
        &["--name", &long, "0..10", "--", "true"],
    ] {
        let (c, err) = code(&dead, args);
        assert_eq!(c, Some(2), "{err}");
        assert!(err.contains("a name is 1 to 1024 bytes"), "{err}");
        assert!(err.contains(if args.contains(&"") { "(0 bytes)" } else { "(1025 bytes)" }));
        assert!(err.len() < 1000, "the name is not echoed whole: {err}");
    }
    // 1024 bytes is a name.
    let server = ServerProc::start(&[]);
    let c = client(&server.addr);
    let max = "n".repeat(1024);
    let _held = hold(&c, max.as_bytes(), 0..10);
    assert_eq!(code(&server.addr, &["-n", &max, "0..10", "--", "true"]).0, Some(1));
}

/// On unix a name is the argument's bytes: a path that is no UTF-8 names its resource.
#[test]
fn a_name_that_is_no_utf8_is_its_bytes() {
    let server = ServerProc::start(&[]);
    let c = client(&server.addr);
    let name = b"/tmp/caf\xe9";
    let _held = hold(&c, name, 0..10);
    for how in [&[][..], &["--name"]] {
        let out = rangelock()
            .args(["lock", "-n", "--server", &server.addr])
            .args(how)
            .arg(OsStr::from_bytes(name))
            .args(["0..10", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{how:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(r#"lock 0..10 of "/tmp/caf\xE9" not available"#));
    }
    let out = rangelock()
        .args(["lock", "-n", "--server", &server.addr])
        .arg(OsStr::from_bytes(b"/tmp/caf\xe8"))
        .args(["0..10", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "another name: {}", stderr(&out));
}

/// `-s` and the hold without a command work with a name.
#[test]
fn shared_locks_and_the_hold_work_with_a_name() {
    let server = ServerProc::start(&[]);
    let c = client(&server.addr);
    let shared = c.resource("a").unwrap().lock_shared(0..10).unwrap();
    assert_eq!(code(&server.addr, &["-n", "-s", "a", "0..10", "--", "true"]).0, Some(0));
    assert_eq!(code(&server.addr, &["-n", "a", "0..10", "--", "true"]).0, Some(1));
    shared.unlock().unwrap();

    // No command: the token on stdout, the lock held until SIGTERM.
    let mut child = rangelock()
        .args(["lock", "--server", &server.addr, "a", "0..10"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.trim().parse::<u64>().is_ok(), "a token: {line:?}");
    let a = c.resource("a").unwrap();
    let taken = a.lock(5..6, Mode::Exclusive, Wait::Try);
    assert!(matches!(taken, Err(ClientError::WouldBlock)), "a 0..10 is held: {taken:?}");
    c.lock(5..6, Mode::Exclusive, Wait::Try).unwrap().unlock().unwrap();
    assert!(signal(child.id(), libc::SIGTERM));
    assert_eq!(wait_bounded(&mut child, LIMIT).unwrap().code(), Some(0));
    a.lock(5..6, Mode::Exclusive, Wait::Try).unwrap().unlock().unwrap();
}

/// A fake server: takes one connection's hello and answers with `hello`; with `answer`,
/// then reads one request, checks it is a `LOCK_NAMED` of `a`, and answers it with that
/// status. Returns its address.
fn fake_server(
    hellos: Vec<rangelock_server::protocol::ServerHello>,
    answer: Option<rangelock_server::protocol::Status>,
) -> (String, std::thread::JoinHandle<()>) {
    use rangelock_server::protocol::{Request, RequestFrame, ResponseFrame, CLIENT_HELLO_LEN};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let thread = std::thread::spawn(move || {
        let mut last = None;
        for hello in hellos {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; CLIENT_HELLO_LEN];
            s.read_exact(&mut buf).unwrap();
            let mut out = Vec::new();
            hello.encode(&mut out);
            s.write_all(&out).unwrap();
            last = Some(s);
        }
        let mut s = last.unwrap();
        if let Some(status) = answer {
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
            s.read_exact(&mut body).unwrap();
            let frame = RequestFrame::decode(&body).unwrap();
            assert!(matches!(frame.request, Request::LockNamed { name: b"a", .. }), "{frame:?}");
            let mut out = Vec::new();
            ResponseFrame::new(frame.request.op(), frame.id, status, 0).encode(&mut out);
            s.write_all(&out).unwrap();
        }
        // Until the client closes.
        let _ = s.read_to_end(&mut Vec::new());
    });
    (addr, thread)
}

fn hello(
    version: u16,
    status: rangelock_server::protocol::HelloStatus,
) -> rangelock_server::protocol::ServerHello {
    use rangelock_server::protocol::{GrantMode, ServerHello};
    let grant = GrantMode::Push;
    ServerHello { version, status, grant, session: 1, lease_ms: 10_000, max_frame: 65_536 }
}

/// A server before protocol version 5 (the client falls back to 4), and one that answers
/// a named lock `UNKNOWN_OP` (a cluster node, an engine without names): exit 70, saying
/// the server does not serve names; `FORBIDDEN` (a token without names): exit 77.
#[test]
fn a_server_without_names_is_a_clear_error() {
    use rangelock_server::protocol::{HelloStatus, Status};
    let (old, t) = fake_server(
        vec![hello(4, HelloStatus::UnsupportedVersion), hello(4, HelloStatus::Accepted)],
        None,
    );
    let (c, err) = code(&old, &["a", "0..10", "--", "true"]);
    t.join().unwrap();
    assert_eq!(c, Some(70), "{err}");
    assert!(
        err.contains("the server does not serve named resources: it speaks protocol version 4"),
        "{err}"
    );

    for (status, want, says) in [
        (
            Status::UnknownOp,
            70,
            "the server does not serve named resources: it answered UNKNOWN_OP",
        ),
        (Status::Forbidden, 77, "server refused a named lock (FORBIDDEN)"),
    ] {
        let (addr, t) = fake_server(vec![hello(5, HelloStatus::Accepted)], Some(status));
        let (c, err) = code(&addr, &["a", "0..10", "--", "true"]);
        t.join().unwrap();
        assert_eq!(c, Some(want), "{status:?}: {err}");
        assert!(err.contains(says), "{status:?}: {err}");
        assert!(err.contains(&format!("locking 0..10 of \"a\" on {addr}")), "{err}");
    }
}
