//! Helpers shared by the tests that drive the real `rangelock` binary.

#![allow(dead_code)] // each test file uses a part

pub mod cluster;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_rangelock");

/// The `$XDG_CACHE_HOME` of every `rangelock` a test runs (where `lock` and `stat` keep
/// the nodes they read from etcd): the target's, never the user's.
pub const CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/cache");

/// `rangelock`, with its cache in [`CACHE`], and no server or cluster from the
/// environment of whoever runs the tests.
pub fn rangelock() -> Command {
    let mut c = Command::new(BIN);
    c.env("XDG_CACHE_HOME", CACHE);
    c.env_remove("RANGELOCK_SERVER").env_remove("RANGELOCK_CLUSTER");
    c
}

/// A `rangelock serve` child, killed and reaped when dropped.
pub struct ServerProc {
    pub child: Child,
    pub addr: String,
}

impl ServerProc {
    pub fn start(extra: &[&str]) -> ServerProc {
        let mut child = rangelock()
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on ").expect("listening line").to_owned();
        ServerProc { child, addr }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.addr.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    /// The server's TCP address.
    pub fn socket_addr(&self) -> std::net::SocketAddr {
        self.addr.parse().expect("a TCP address")
    }

    /// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`).
    pub fn status_kib(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.child.id()))
    }

    /// Stops it with SIGTERM and returns how it exited.
    pub fn terminate(mut self) -> ExitStatus {
        assert!(signal(self.child.id(), libc::SIGTERM));
        let st = self.child.wait().unwrap();
        std::mem::forget(self);
        st
    }

    /// Kills it now (SIGKILL) and reaps it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sends `sig` to `pid`; whether it was delivered.
pub fn signal(pid: u32, sig: i32) -> bool {
    // SAFETY: kill(2) has no memory effects; the callers name processes they started.
    unsafe { libc::kill(pid as libc::pid_t, sig) == 0 }
}

/// `rangelock lock RANGE --server ADDR EXTRA… -- CMD…`.
pub fn lock_cmd(addr: &str, range: &str, extra: &[&str], cmd: &[&str]) -> Command {
    let mut c = rangelock();
    c.args(["lock", range, "--server", addr]).args(extra).arg("--").args(cmd);
    c
}

/// A fresh directory for one test.
pub fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rangelock-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A TCP address with nothing listening: bound, then released.
pub fn dead_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Waits for `child` to exit, at most `limit` (a bound for a test that would otherwise hang
/// on a bug, not a synchronization): `None` if it is still running then.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
