//! Rotation without dropping locks: SIGHUP makes a real `rangelock serve` read its auth
//! file and its TLS certificate and key again. A client holding a lock over TLS keeps it
//! across a certificate rotation, and new handshakes see the new certificate; a client
//! whose token was removed from the auth file is told (`SESSION_ENDED`, reason
//! `TOKEN_REVOKED`) and loses its session, while a client whose token stayed keeps its
//! lock; a bad new file is refused with a log line and the old material stays in force.
//! Every signal the server handles is logged. Each step waits for the server's log line
//! (`reloaded`, `reload refused`), never for a fixed time. Certificates come from
//! throwaway PKIs generated at run time.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{rangelock, signal, tempdir};
use rangelock_bench::tls_pki::TempPki;
use rangelock_client::{
    Client, ClientError, ConnectOptions, EndReason, Endpoint, LossCause, Mode, TlsOptions, Wait,
};
use rangelock_cluster::etcd::local_etcd_or_skip;

/// A generous bound on each wait for an event (a log line, a loss).
const LIMIT: Duration = Duration::from_secs(30);

const KEEP: &str = "keep-secret-0123456789";
const GONE: &str = "gone-secret-0123456789";

/// A `rangelock serve` whose log (stderr, at info) is read line by line.
struct Served {
    child: Child,
    addr: Endpoint,
    lines: mpsc::Receiver<String>,
    /// Every line read so far, for failure messages.
    log: Vec<String>,
    /// Lines read but not returned by [`Served::wait_line`].
    skipped: Vec<String>,
}

impl Served {
    fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Served {
        let mut child = rangelock()
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        // `listening on ADDR`, or `listening on ADDR (cluster node ID)`.
        let addr = line.trim().strip_prefix("listening on ").expect("listening line");
        let addr = addr.split_whitespace().next().unwrap();
        let addr: std::net::SocketAddr = addr.parse().unwrap();
        let (tx, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Served { child, addr: addr.into(), lines, log: Vec::new(), skipped: Vec::new() }
    }

    /// Waits for a log line that contains `what`, not returned before, and returns it:
    /// the first such line of those read and passed over so far, else the next one read.
    /// (Lines of different threads come in either order: a session's end can be logged
    /// before the reload's own line.)
    fn wait_line(&mut self, what: &str) -> String {
        if let Some(i) = self.skipped.iter().position(|l| l.contains(what)) {
            return self.skipped.remove(i);
        }
        let end = Instant::now() + LIMIT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.log.push(l.clone());
                    if l.contains(what) {
                        return l;
                    }
                    self.skipped.push(l);
                }
                Err(e) => panic!("no log line with {what:?} ({e}); log:\n{}", self.log.join("\n")),
            }
        }
    }

    /// SIGHUP, then the reload's outcome line (`reloaded` or `reload refused`).
    fn hup(&mut self) -> String {
        assert!(signal(self.child.id(), libc::SIGHUP));
        let l = self.wait_line("signal received");
        assert!(l.contains("SIGHUP"), "{l}");
        self.wait_line("reload")
    }

    fn connect(&self, ca: &Path, token: Option<&str>) -> Result<Client, ClientError> {
        let mut opts = ConnectOptions::new().tls(TlsOptions::from_ca_file(ca)?);
        if let Some(t) = token {
            opts = opts.token(t);
        }
        Client::connect_with(&self.addr, &opts)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Writes `text` to `path` as an editor would: a new file renamed over the old one.
fn replace(path: &Path, text: &[u8]) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// An auth file with the tokens `(name, secret)`.
fn auth_file(tokens: &[(&str, &str)]) -> String {
    tokens.iter().map(|(n, s)| format!("[[token]]\nname = \"{n}\"\nsecret = \"{s}\"\n\n")).collect()
}

/// The server's certificate and key files, copied from `pki` into `dir`.
/// A PKI, and an auth file with the tokens `keep` and `gone` in a new directory.
fn two_tokens(name: &str) -> (TempPki, PathBuf) {
    let dir = tempdir(name);
    let pki = TempPki::generate().unwrap();
    let auth = dir.join("auth.toml");
    std::fs::write(&auth, auth_file(&[("keep", KEEP), ("gone", GONE)])).unwrap();
    (pki, auth)
}

/// `extra`, then the flags of a server with `pki`'s certificate and the auth file `auth`.
fn secured(pki: &TempPki, auth: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = extra.iter().map(|a| (*a).to_owned()).collect();
    for (flag, path) in [
        ("--tls-cert", pki.server_cert()),
        ("--tls-key", pki.server_key()),
        ("--auth-file", auth.to_owned()),
    ] {
        args.extend([flag.to_owned(), s(&path)]);
    }
    args
}

fn install_cert(pki: &TempPki, dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
    replace(&cert, &std::fs::read(pki.server_cert()).unwrap());
    replace(&key, &std::fs::read(pki.server_key()).unwrap());
    (cert, key)
}

/// Whether the server's lock table lists a lock of `range` (asked over a new session).
fn listed(served: &Served, ca: &Path, range: std::ops::Range<u64>) -> bool {
    let c = served.connect(ca, Some(KEEP)).expect("a new session");
    c.stats(100).unwrap().entries.iter().any(|e| e.start == range.start && e.end == range.end)
}

fn handshake_refused(r: Result<Client, ClientError>) -> bool {
    match r {
        Err(e) => e.to_string().contains("TLS"),
        Ok(_) => false,
    }
}

#[test]
fn a_certificate_rotation_keeps_the_locks_and_new_handshakes_see_the_new_certificate() {
    let dir = tempdir("rotate-cert");
    let (old, new) = (TempPki::generate().unwrap(), TempPki::generate().unwrap());
    let (cert, key) = install_cert(&old, &dir);
    let auth = dir.join("auth.toml");
    std::fs::write(&auth, auth_file(&[("keep", KEEP)])).unwrap();
    let mut served =
        Served::start(&["--tls-cert", &s(&cert), "--tls-key", &s(&key), "--auth-file", &s(&auth)]);
    let holder = served.connect(&old.ca(), Some(KEEP)).unwrap();
    let guard = holder.lock_exclusive(100..200).unwrap();
    // The new CA is not trusted by the server's certificate yet.
    assert!(handshake_refused(served.connect(&new.ca(), Some(KEEP))));

    install_cert(&new, &dir);
    let line = served.hup();
    assert!(line.contains("reloaded; sessions and locks stay"), "{line}");

    // New handshakes get the new certificate: only the new CA accepts it.
    assert!(handshake_refused(served.connect(&old.ca(), Some(KEEP))), "old certificate served");
    assert!(listed(&served, &new.ca(), 100..200), "the lock is gone from the table");
    // The holder's session (old handshake) is still up, and the lock is still its own.
    assert!(holder.is_connected());
    holder.ping().unwrap();
    let other = served.connect(&new.ca(), Some(KEEP)).unwrap();
    let conflict = other.lock(150..160, Mode::Exclusive, Wait::Try);
    assert!(conflict.is_err(), "the range is still held: {conflict:?}");
    guard.unlock().unwrap();
    assert!(!listed(&served, &new.ca(), 100..200), "the unlock released the range");
}

#[test]
fn a_removed_token_ends_its_sessions_and_says_so_and_a_kept_token_keeps_its_lock() {
    let (pki, auth) = two_tokens("rotate-token");
    let ca = pki.ca();
    let mut served = Served::start(&secured(&pki, &auth, &[]));
    let kept = served.connect(&ca, Some(KEEP)).unwrap();
    let kept_guard = kept.lock_exclusive(0..10).unwrap();
    let gone = served.connect(&ca, Some(GONE)).unwrap();
    let _gone_guard = gone.lock_exclusive(20..30).unwrap();

    replace(&auth, auth_file(&[("keep", KEEP)]).as_bytes());
    let line = served.hup();
    assert!(line.contains("reloaded") && line.contains("revoked=1"), "{line}");

    // The revoked client is told why its session ended.
    let loss = gone.wait_lost_timeout(LIMIT).expect("the revoked session ends");
    assert_eq!(loss.cause, LossCause::SessionEnded(EndReason::TokenRevoked), "{loss:?}");
    let l = served.wait_line("its token was revoked");
    assert!(l.contains("token_name=\"gone\""), "{l}");
    // Its token no longer opens a session; its lock was released; the other stays.
    let refused = served.connect(&ca, Some(GONE)).expect_err("a revoked token is refused");
    assert!(refused.to_string().contains("auth"), "{refused}");
    assert!(!listed(&served, &ca, 20..30), "the revoked session's lock is released");
    assert!(listed(&served, &ca, 0..10), "the kept session's lock is gone");
    assert!(kept.is_connected());
    kept_guard.unlock().unwrap();
}

#[test]
fn a_bad_new_file_is_refused_and_the_old_material_stays_in_force() {
    let dir = tempdir("rotate-bad");
    let (old, other) = (TempPki::generate().unwrap(), TempPki::generate().unwrap());
    let (cert, key) = install_cert(&old, &dir);
    let auth = dir.join("auth.toml");
    std::fs::write(&auth, auth_file(&[("keep", KEEP), ("gone", GONE)])).unwrap();
    let mut served =
        Served::start(&["--tls-cert", &s(&cert), "--tls-key", &s(&key), "--auth-file", &s(&auth)]);
    let holder = served.connect(&old.ca(), Some(GONE)).unwrap();
    let guard = holder.lock_exclusive(5..6).unwrap();

    // Unparsable TOML.
    replace(&auth, b"[[token]\nname = ");
    let line = served.hup();
    assert!(line.contains("reload refused") && line.contains(&s(&auth)), "{line}");
    // A good auth file (without `gone`) but a key that is not the certificate's: the whole
    // reload is refused, the auth file included.
    replace(&auth, auth_file(&[("keep", KEEP)]).as_bytes());
    replace(&key, &std::fs::read(other.server_key()).unwrap());
    let line = served.hup();
    assert!(line.contains("reload refused") && line.contains("does not hold the private key"));
    // A missing certificate file.
    install_cert(&old, &dir);
    std::fs::remove_file(&cert).unwrap();
    let line = served.hup();
    assert!(line.contains("reload refused") && line.contains(&s(&cert)), "{line}");

    // The old certificate and tokens are still in force, and the session kept its lock.
    let again = served.connect(&old.ca(), Some(GONE)).expect("old material in force");
    assert!(listed(&served, &old.ca(), 5..6));
    drop(again);
    assert!(holder.is_connected());
    guard.unlock().unwrap();

    // Once the files are good, the reload goes through and `gone` is revoked.
    install_cert(&old, &dir);
    let line = served.hup();
    assert!(line.contains("reloaded") && line.contains("revoked=1"), "{line}");
    let loss = holder.wait_lost_timeout(LIMIT).expect("the revoked session ends");
    assert_eq!(loss.cause, LossCause::SessionEnded(EndReason::TokenRevoked));
}

#[test]
fn every_signal_is_logged_and_sighup_does_not_stop_the_server() {
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let mut served = Served::start::<&str>(&[]);
        // Nothing to reload: SIGHUP is logged, and the server goes on.
        let line = served.hup();
        assert!(line.contains("reloaded") && line.contains("tls=false"), "{line}");
        let c = Client::connect(&served.addr).expect("still serving after SIGHUP");
        drop(c);
        assert!(signal(served.child.id(), sig));
        let l = served.wait_line("signal received");
        assert!(l.contains(name) && l.contains("shutting down"), "{l}");
        served.wait_line("server stopped");
        let st = common::wait_bounded(&mut served.child, LIMIT).expect("exits");
        assert!(st.success(), "{name}: {st:?}");
    }
}

/// A cluster node reloads as a single server does: the session of a removed token ends
/// and is told, the other stays, and the node goes on serving (and owning its partitions).
#[test]
fn a_cluster_node_reloads_its_files_on_sighup() {
    let Some(etcd) = local_etcd_or_skip("a_cluster_node_reloads_its_files_on_sighup") else {
        return;
    };
    let (pki, auth) = two_tokens("rotate-node");
    let ca = pki.ca();
    let node = ["--cluster", &etcd.endpoint(), "--node-id", "a", "--partitions", "1"];
    let mut served = Served::start(&secured(&pki, &auth, &node));
    let kept = served.connect(&ca, Some(KEEP)).unwrap();
    let gone = served.connect(&ca, Some(GONE)).unwrap();

    replace(&auth, auth_file(&[("keep", KEEP)]).as_bytes());
    let line = served.hup();
    assert!(line.contains("reloaded") && line.contains("revoked=1"), "{line}");
    let loss = gone.wait_lost_timeout(LIMIT).expect("the revoked session ends");
    assert_eq!(loss.cause, LossCause::SessionEnded(EndReason::TokenRevoked), "{loss:?}");
    assert!(served.connect(&ca, Some(GONE)).is_err(), "a revoked token is refused");
    assert!(kept.is_connected());
    assert!(served.connect(&ca, Some(KEEP)).is_ok(), "the node goes on serving");
    assert!(served.child.try_wait().unwrap().is_none(), "SIGHUP does not stop a node");
}
