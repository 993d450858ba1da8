//! Helpers of the cluster tests: node, fencing-store and worker processes of the real
//! binary (each killed and reaped on drop, also when the test panics), and polling the
//! cluster's state in etcd with a deadline.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rangelock_client::cluster::GuardPiece;
use rangelock_client::{Client, EntryState, StatsBody};
use rangelock_cluster::admin;
use rangelock_cluster::etcd::Etcd;
use rangelock_cluster::keys::Snapshot;

use super::{rangelock, signal};

/// A child process of the test: SIGCONT (in case it is stopped) + SIGKILL and reaped on
/// drop.
#[derive(Debug)]
pub struct Proc {
    pub name: String,
    pub child: Child,
    /// Its stderr (and, for nodes, its log).
    pub log: PathBuf,
}

impl Proc {
    /// Spawns `cmd` with stderr to `log` and stdout piped, and returns once it printed
    /// `listening on ADDR` (with ADDR), or panics with its log if it exits or stays
    /// silent for `limit`.
    pub fn spawn_listening(
        name: &str,
        cmd: Command,
        log: PathBuf,
        limit: Duration,
    ) -> (Proc, String) {
        Proc::try_listening(name, cmd, log, limit).unwrap_or_else(|(mut p, why)| {
            let st = p.exited();
            panic!("{name} {why} (exit: {st:?}); log {}:\n{}", p.log.display(), p.log_tail(40))
        })
    }

    /// [`Proc::spawn_listening`], returning the process and what went wrong instead of
    /// panicking.
    pub fn try_listening(
        name: &str,
        mut cmd: Command,
        log: PathBuf,
        limit: Duration,
    ) -> Result<(Proc, String), (Proc, String)> {
        let mut p = Proc::spawn(name, &mut cmd, log, Stdio::piped());
        let out = p.child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            // Keep draining: the process must never block on a full pipe.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
        let line = rx.recv_timeout(limit).unwrap_or_default();
        match line.trim().strip_prefix("listening on ") {
            // `ADDR (cluster node ID)` for nodes.
            Some(addr) => {
                let addr = addr.split(' ').next().unwrap().to_owned();
                Ok((p, addr))
            }
            None => Err((p, format!("did not print 'listening on' within {limit:?}"))),
        }
    }

    /// Spawns `cmd` with stderr to `log`.
    pub fn spawn(name: &str, cmd: &mut Command, log: PathBuf, stdout: Stdio) -> Proc {
        let err = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        let child = cmd.stdin(Stdio::null()).stdout(stdout).stderr(err).spawn().unwrap();
        Proc { name: name.to_owned(), child, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (reaping it if so).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        if self.exited().is_none() {
            signal(self.pid(), libc::SIGCONT);
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    /// SIGSTOP: returns once every thread of it is stopped.
    pub fn pause(&mut self) {
        assert!(self.exited().is_none(), "{} exited", self.name);
        assert!(signal(self.pid(), libc::SIGSTOP));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !all_threads_stopped(self.pid()) {
            assert!(Instant::now() < deadline, "{} did not stop within 5 s", self.name);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGCONT.
    pub fn resume(&mut self) {
        signal(self.pid(), libc::SIGCONT);
    }

    /// SIGTERM, then waits at most `limit` for it to exit.
    pub fn terminate(&mut self, limit: Duration) -> Option<ExitStatus> {
        if let Some(st) = self.exited() {
            return Some(st);
        }
        signal(self.pid(), libc::SIGCONT);
        signal(self.pid(), libc::SIGTERM);
        super::wait_bounded(&mut self.child, limit)
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        log_tail(&self.log, n)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `n` lines of a file.
pub fn log_tail(path: &Path, n: usize) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Whether every thread of process `pid` is stopped (or it is gone).
pub fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
    tasks.flatten().all(|t| {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next());
        state.is_none_or(|c| c == 'T' || c == 't')
    })
}

/// The flags of a cluster node.
#[derive(Clone, Debug)]
pub struct NodeOpts {
    pub partitions: u32,
    pub etcd_ttl_s: u64,
    pub lease_ms: u64,
    pub grace_ms: u64,
    /// Whether the node gets `--etcd-ttl`, `--lease-ms` and `--grace-ms`; without them it
    /// runs with its defaults, which the fields then name ([`NodeOpts::defaults`]).
    pub timing_flags: bool,
}

impl NodeOpts {
    /// Short timings: etcd TTL 1 s, lease 1 s, grace 1.5 s.
    pub fn fast(partitions: u32) -> NodeOpts {
        NodeOpts::timed(partitions, 1, 1000, 1500)
    }

    /// These timings, passed as flags.
    pub fn timed(partitions: u32, etcd_ttl_s: u64, lease_ms: u64, grace_ms: u64) -> NodeOpts {
        NodeOpts { partitions, etcd_ttl_s, lease_ms, grace_ms, timing_flags: true }
    }

    /// No timing flag: the node's defaults (etcd TTL 5 s, lease 10 s, grace = lease).
    pub fn defaults(partitions: u32) -> NodeOpts {
        let lease_ms = rangelock_server::ServerConfig::default().lease.as_millis() as u64;
        NodeOpts {
            partitions,
            etcd_ttl_s: rangelock_cluster::DEFAULT_ETCD_TTL.as_secs(),
            lease_ms,
            grace_ms: lease_ms,
            timing_flags: false,
        }
    }
}

/// A `rangelock serve --cluster` process.
#[derive(Debug)]
pub struct NodeProc {
    pub id: String,
    pub addr: String,
    pub proc: Proc,
    etcd: String,
    opts: NodeOpts,
    dir: PathBuf,
    /// Starts so far (a restart appends to the same log).
    pub starts: u32,
}

impl NodeProc {
    /// Starts node `id` on a free port; its log (RUST_LOG=info) is `dir/node-ID.log`.
    pub fn start(etcd: &str, id: &str, opts: &NodeOpts, dir: &Path) -> NodeProc {
        let (proc, addr) = start_node(etcd, id, opts, dir, "127.0.0.1:0");
        NodeProc {
            id: id.to_owned(),
            addr,
            proc,
            etcd: etcd.to_owned(),
            opts: opts.clone(),
            dir: dir.to_owned(),
            starts: 1,
        }
    }

    /// Starts it again with the same id (after it was killed), on the same port if that
    /// is free. Retries while etcd still has the old registration (its lease not yet
    /// expired), at most `limit`.
    pub fn restart(&mut self, limit: Duration) {
        self.proc.kill();
        let deadline = Instant::now() + limit;
        loop {
            let cmd = node_command(&self.etcd, &self.id, &self.opts, &self.addr);
            let log = self.dir.join(format!("node-{}.log", self.id));
            match Proc::try_listening(&self.id, cmd, log.clone(), Duration::from_secs(20)) {
                Ok((p, addr)) => {
                    self.addr = addr;
                    self.proc = p;
                    self.starts += 1;
                    return;
                }
                Err((mut p, why)) => {
                    p.kill();
                    let tail = log_tail(&log, 5);
                    let again = tail.contains("already registered");
                    let port_taken = tail.contains("Address already in use");
                    assert!(
                        (again || port_taken) && Instant::now() < deadline,
                        "node {} {why}; it did not restart within {limit:?}:\n{tail}",
                        self.id
                    );
                    if port_taken {
                        self.addr = "127.0.0.1:0".into();
                    }
                }
            }
            // etcd still has the old registration: try again shortly.
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn node_command(etcd: &str, id: &str, o: &NodeOpts, addr: &str) -> Command {
    let mut cmd = rangelock();
    cmd.args(["serve", "--addr", addr, "--cluster", etcd, "--node-id", id])
        .args(["--partitions", &o.partitions.to_string()])
        .env("RUST_LOG", "info");
    if o.timing_flags {
        cmd.args(["--etcd-ttl", &o.etcd_ttl_s.to_string()])
            .args(["--lease-ms", &o.lease_ms.to_string()])
            .args(["--grace-ms", &o.grace_ms.to_string()]);
    }
    cmd
}

fn start_node(etcd: &str, id: &str, o: &NodeOpts, dir: &Path, addr: &str) -> (Proc, String) {
    let log = dir.join(format!("node-{id}.log"));
    Proc::spawn_listening(id, node_command(etcd, id, o, addr), log, Duration::from_secs(20))
}

/// A `rangelock cluster fencing-store` process.
pub fn start_store(dir: &Path) -> (Proc, String) {
    let mut cmd = rangelock();
    cmd.args(["cluster", "fencing-store", "--listen", "127.0.0.1:0", "--file"])
        .arg(dir.join("store.data"))
        .env("RUST_LOG", "info");
    Proc::spawn_listening("store", cmd, dir.join("store.log"), Duration::from_secs(10))
}

/// Runs `rangelock ARGS…` to completion (bounded by `limit`): exit status, stdout, stderr.
pub fn run_cli(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    run_cli_cached(args, Path::new(super::CACHE), limit)
}

/// [`run_cli`] with `$XDG_CACHE_HOME` at `cache`.
pub fn run_cli_cached(
    args: &[&str],
    cache: &Path,
    limit: Duration,
) -> (Option<i32>, String, String) {
    let mut child = rangelock()
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let st = super::wait_bounded(&mut child, limit);
    if st.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("rangelock {args:?} did not exit within {limit:?}");
    }
    (st.unwrap().code(), t_out.join().unwrap(), t_err.join().unwrap())
}

/// Reads the cluster from etcd (`None` while the cluster does not exist or etcd does not
/// answer).
pub fn snapshot(rt: &tokio::runtime::Runtime, etcd: &str) -> Option<Snapshot> {
    rt.block_on(async {
        let e = Etcd::connect(&[etcd.to_owned()], Duration::from_secs(2)).await.ok()?;
        admin::snapshot(&e, "default").await.ok()
    })
}

/// Polls etcd until `cond` holds for the snapshot, at most `limit`; panics with the last
/// snapshot otherwise.
pub fn wait_for(
    rt: &tokio::runtime::Runtime,
    etcd: &str,
    what: &str,
    limit: Duration,
    mut cond: impl FnMut(&Snapshot) -> bool,
) -> Snapshot {
    let deadline = Instant::now() + limit;
    loop {
        let snap = snapshot(rt, etcd);
        if let Some(s) = &snap {
            if cond(s) {
                return snap.unwrap();
            }
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for: {what}; last snapshot: {}",
            snap.map(|s| admin::render_status("default", &s)).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every partition has an owner that is a live node, no move is pending, and every node
/// in `ids` is live and owns its share (`⌈P/n⌉` at most).
pub fn settled(s: &Snapshot, ids: &[&str]) -> bool {
    let n = ids.len().max(1);
    let share = s.owners.len().div_ceil(n);
    ids.iter().all(|id| s.is_live(id))
        && s.owners.iter().all(|o| o.as_ref().is_some_and(|o| s.is_live(&o.node)))
        && s.moves.iter().all(Option::is_none)
        && s.counts().iter().all(|&c| c <= share)
}

/// The partitions node `id` owns.
pub fn owned_by(s: &Snapshot, id: &str) -> Vec<u32> {
    (0..s.owners.len() as u32)
        .filter(|&p| s.owners[p as usize].as_ref().is_some_and(|o| o.node == id))
        .collect()
}

/// Polls `cond` every 20 ms until it holds, at most `limit`.
pub fn poll(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `STATS` of the node at `addr` (`None` if it does not answer).
pub fn stats(addr: &str) -> Option<StatsBody> {
    let c = Client::connect(&addr.parse().unwrap()).ok()?;
    c.stats(1000).ok()
}

/// Whether `s` shows `piece` held (same range, same token).
pub fn holds(s: &StatsBody, piece: &GuardPiece) -> bool {
    s.entries.iter().any(|e| {
        e.state == EntryState::Held
            && e.start == piece.range.start
            && e.end == piece.range.end
            && e.token == piece.token
    })
}
