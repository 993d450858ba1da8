//! [`LocalEtcd`]: a private single-member etcd for tests, benchmarks and examples.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::Etcd;

/// How long [`LocalEtcd::start`] waits for etcd to answer.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// Spawns tried when a port picked as free was taken before etcd bound it.
const START_ATTEMPTS: usize = 5;

/// Why a [`LocalEtcd`] did not start.
#[derive(Debug, thiserror::Error)]
pub enum LocalEtcdError {
    /// No etcd binary: `RANGELOCK_ETCD` unset, none on `PATH`, no `/usr/bin/etcd`.
    #[error(
        "etcd is not installed (install with: bash ci/install-etcd.sh, or set RANGELOCK_ETCD)"
    )]
    NotInstalled,
    /// Preparing or spawning failed.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// etcd exited before answering.
    #[error("etcd exited during startup ({status}); its log is {}:\n{tail}", log.display())]
    Exited {
        /// How it exited.
        status: ExitStatus,
        /// Its log (kept for inspection).
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// etcd did not answer in time (it was killed).
    #[error("etcd did not answer within {after:?}; its log is {}:\n{tail}", log.display())]
    NotReady {
        /// The deadline.
        after: Duration,
        /// Its log (kept for inspection).
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
}

/// A private etcd: one member on free `127.0.0.1` ports, data and log in a
/// temporary directory, killed and removed on drop.
///
/// It runs with `--heartbeat-interval 10 --election-timeout 100`: it elects
/// itself within milliseconds and its minimum lease TTL (1.5 election timeouts,
/// rounded up to seconds) is 1 s, so short-TTL tests see the TTLs they ask for.
///
/// [`LocalEtcd::kill`], [`LocalEtcd::pause`] and [`LocalEtcd::resume`] take `&self`,
/// so a test can share one instance (e.g. in an `Arc`) with the code it disturbs.
#[derive(Debug)]
pub struct LocalEtcd {
    child: Mutex<Child>,
    pid: u32,
    client_port: u16,
    log: PathBuf,
    // Dropped after `child` is killed (see `Drop`).
    _dir: tempfile::TempDir,
}

enum Attempt {
    Ready(LocalEtcd),
    /// A port picked as free was taken meanwhile.
    PortTaken(LocalEtcdError),
}

impl LocalEtcd {
    /// Starts an etcd ([`etcd_binary`]) and waits until it answers (at most 20 s).
    ///
    /// Blocking (it waits on a helper thread, so it may also be called from async
    /// code, where it blocks the calling task for the startup, typically 0.1 s).
    pub fn start() -> Result<LocalEtcd, LocalEtcdError> {
        let binary = etcd_binary().ok_or(LocalEtcdError::NotInstalled)?;
        LocalEtcd::start_with(&binary)
    }

    /// [`LocalEtcd::start`] with the given etcd binary.
    pub fn start_with(binary: &Path) -> Result<LocalEtcd, LocalEtcdError> {
        for attempt in 1..START_ATTEMPTS {
            match LocalEtcd::try_start(binary, false)? {
                Attempt::Ready(etcd) => return Ok(etcd),
                Attempt::PortTaken(e) => {
                    tracing::debug!(attempt, error = %e, "local etcd lost a port race, retrying")
                }
            }
        }
        match LocalEtcd::try_start(binary, true)? {
            Attempt::Ready(etcd) => Ok(etcd),
            Attempt::PortTaken(e) => Err(e),
        }
    }

    /// One spawn; `last`: a lost port race is an error too.
    fn try_start(binary: &Path, last: bool) -> Result<Attempt, LocalEtcdError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| LocalEtcdError::Io { what, source }
        };
        let dir = tempfile::Builder::new()
            .prefix("rangelock-etcd-")
            .tempdir()
            .map_err(io("create a temporary directory"))?;
        let log = dir.path().join("etcd.log");
        let out = File::create(&log).map_err(io("create the etcd log"))?;
        let err = out.try_clone().map_err(io("open the etcd log"))?;
        let (client_port, peer_port) = free_ports().map_err(io("find free ports"))?;
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        // A name of its own: the readiness check must not mistake another etcd that
        // got the same "free" port for this one.
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let name = format!("rangelock-{}-{}", std::process::id(), STARTED.fetch_add(1, Relaxed));
        let mut child = Command::new(binary)
            .arg(format!("--name={name}"))
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={name}={peer}"))
            .arg("--initial-cluster-state=new")
            .arg("--heartbeat-interval=10")
            .arg("--election-timeout=100")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(io(&format!("run {}", binary.display())))?;
        let exited = match wait_ready(&mut child, &client, &name) {
            Ok(()) => {
                return Ok(Attempt::Ready(LocalEtcd {
                    pid: child.id(),
                    child: Mutex::new(child),
                    client_port,
                    log,
                    _dir: dir,
                }))
            }
            Err(exited) => exited,
        };
        let _ = child.kill();
        let _ = child.wait();
        let tail = log_tail(&log);
        if let Some(status) = exited {
            if !last && tail.contains("address already in use") {
                return Ok(Attempt::PortTaken(LocalEtcdError::Exited { status, log, tail }));
            }
        }
        // Keep the directory: the log is the diagnosis.
        let log = dir.keep().join("etcd.log");
        Err(match exited {
            Some(status) => LocalEtcdError::Exited { status, log, tail },
            None => LocalEtcdError::NotReady { after: START_DEADLINE, log, tail },
        })
    }

    /// Its client endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its log (stdout and stderr), in the temporary directory.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Kills it (SIGKILL) and waits for it to exit. Idempotent.
    pub fn kill(&self) -> io::Result<()> {
        let mut child = self.lock();
        child.kill()?;
        child.wait().map(drop)
    }

    /// Stops it (SIGSTOP): connections are still accepted, requests not answered.
    ///
    /// Returns once every thread of etcd has stopped: a stop signal reaches one
    /// thread first, and the others would serve requests until it spreads.
    pub fn pause(&self) -> io::Result<()> {
        self.signal(libc::SIGSTOP)?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !all_threads_stopped(self.pid)? {
            if Instant::now() >= deadline {
                return Err(io::Error::other("etcd did not stop within 5 s of SIGSTOP"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Continues it after [`LocalEtcd::pause`] (SIGCONT).
    pub fn resume(&self) -> io::Result<()> {
        self.signal(libc::SIGCONT)
    }

    fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        let mut child = self.lock();
        if let Some(status) = child.try_wait()? {
            return Err(io::Error::other(format!("etcd already exited ({status})")));
        }
        let pid = libc::pid_t::try_from(self.pid).map_err(io::Error::other)?;
        // SAFETY: kill(2) touches no memory of ours. `pid` is our child, not yet
        // reaped (try_wait saw it running and we hold the lock that reaps), so the
        // pid cannot have been reused by another process.
        if unsafe { libc::kill(pid, signal) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        // SIGKILL also ends a paused etcd. `_dir` is removed after this.
        let _ = self.kill();
    }
}

/// Polls until the etcd named `name` answers at `endpoint`: `Err(Some(status))` if
/// it exits first, `Err(None)` at the deadline.
fn wait_ready(child: &mut Child, endpoint: &str, name: &str) -> Result<(), Option<ExitStatus>> {
    let deadline = Instant::now() + START_DEADLINE;
    let endpoints = [endpoint.to_owned()];
    // A runtime of its own, on a thread of its own: the caller may be async.
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|_| None)?;
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(Some(status));
                }
                let answered = rt.block_on(async {
                    let etcd = Etcd::connect(&endpoints, Duration::from_secs(1)).await.ok()?;
                    etcd.member_names().await.ok()
                });
                if answered.is_some_and(|names| names == [name]) {
                    return Ok(());
                }
                if Instant::now() >= deadline {
                    return Err(None);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .join()
        .unwrap_or(Err(None))
    })
}

/// Whether every thread of process `pid` is stopped (state `T` in
/// `/proc/PID/task/TID/stat`).
fn all_threads_stopped(pid: u32) -> io::Result<bool> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = match std::fs::read_to_string(task?.path().join("stat")) {
            Ok(stat) => stat,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // thread exited
            Err(e) => return Err(e),
        };
        // "TID (COMM) STATE ...", where COMM may hold spaces and parentheses.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if state != Some('T') {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Two distinct ports that were free a moment ago.
fn free_ports() -> io::Result<(u16, u16)> {
    let a = TcpListener::bind("127.0.0.1:0")?;
    let b = TcpListener::bind("127.0.0.1:0")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// The last lines of the log, for error messages.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The etcd binary: `$RANGELOCK_ETCD` if set, else `etcd` on `PATH`, else
/// `/usr/bin/etcd`; `None` if none is installed.
pub fn etcd_binary() -> Option<PathBuf> {
    resolve_binary(
        std::env::var_os("RANGELOCK_ETCD"),
        std::env::var_os("PATH"),
        Path::new("/usr/bin/etcd"),
    )
}

fn resolve_binary(
    configured: Option<OsString>,
    path: Option<OsString>,
    fallback: &Path,
) -> Option<PathBuf> {
    if let Some(configured) = configured.filter(|c| !c.is_empty()) {
        return Some(configured.into());
    }
    let executable =
        |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    path.iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("etcd"))
        .find(|p| executable(p))
        .or_else(|| executable(fallback).then(|| fallback.to_owned()))
}

/// A [`LocalEtcd`] for the test named `test`, or `None` when etcd is not installed
/// (after a loud `SKIPPED` line on stderr). In CI (`CI` set) a missing etcd panics
/// instead, as does an etcd that fails to start.
pub fn local_etcd_or_skip(test: &str) -> Option<LocalEtcd> {
    match LocalEtcd::start() {
        Ok(etcd) => Some(etcd),
        Err(LocalEtcdError::NotInstalled) if !in_ci() => {
            eprintln!(
                "\n************************************************************\n\
                 SKIPPED {test}: etcd not installed; install with: bash ci/install-etcd.sh\n\
                 ************************************************************\n"
            );
            None
        }
        Err(LocalEtcdError::NotInstalled) => {
            panic!("{test}: etcd is required in CI: run `bash ci/install-etcd.sh`")
        }
        Err(e) => panic!("{test}: cannot start a local etcd: {e}"),
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

#[cfg(test)]
mod tests {
    use super::resolve_binary;
    use std::path::Path;

    #[test]
    fn binary_is_configured_then_on_path_then_the_fallback() {
        let sh = Path::new("/bin/sh");
        let none = Path::new("/nonexistent/etcd");
        assert_eq!(
            resolve_binary(Some("/opt/etcd".into()), Some("/bin".into()), sh).unwrap(),
            Path::new("/opt/etcd")
        );
        // An empty RANGELOCK_ETCD counts as unset; a PATH without etcd falls back.
        assert_eq!(resolve_binary(Some("".into()), Some("/nonexistent".into()), sh).unwrap(), sh);
        assert_eq!(resolve_binary(None, None, none), None);
    }
}
