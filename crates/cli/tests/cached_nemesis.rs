//! Cached clients under faults, checked through a fencing store (`docs/CACHING.md`,
//! "Failure behaviour"; the checker of `docs/CLUSTER.md` §6, on one server).
//!
//! * `a_cached_client_cut_off_takes_nothing_from_its_extents_once_its_lease_may_be_over`:
//!   a cached client whose link to the server goes silent (a proxy stops forwarding,
//!   without closing anything) keeps serving its threads from its kept extents only while
//!   the server still holds them for it: no local lock that *starts* after another client
//!   was granted the range may succeed. Without the client's lease check it would, for
//!   the tenth of a lease between the server ending the session and the client finding
//!   its keepalives unanswered.
//! * `cached_workers_under_kill_and_pause`: 4 worker processes (this test binary, run as a
//!   worker), each a cached client with 2 threads that lock mostly in the worker's own
//!   region and sometimes in one region all of them share, and write every exclusive
//!   grant through a fencing store. A nemesis kills workers (SIGKILL, then starts them
//!   again) and stops them past their lease (SIGSTOP, then SIGCONT). At the end: no
//!   violation at the store, no refused write whose guard was not told it was lost
//!   (`lost_untold`), no step left unanswered, kept extents and callbacks were exercised,
//!   and the whole line is lockable again.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use common::cluster::{poll, start_store, Proc};
use common::{tempdir, ServerProc};
use rangelock_bench::harness::SplitMix64;
use rangelock_client::{
    BlockingCachedClient, BlockingCachedGuard, CacheOptions, Client, ClientError, ConnectOptions,
    Endpoint, Mode, Wait,
};
use rangelock_cluster::fencing::{FencingClient, Verify, Write};

/// The server's session lease in these tests.
const LEASE_MS: u64 = 600;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A TCP proxy to `to` that can be frozen: while frozen it forwards nothing in either
/// direction and closes nothing, as a network that went silent.
struct Proxy {
    addr: String,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

impl Proxy {
    fn start(to: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let frozen = Arc::new((Mutex::new(false), Condvar::new()));
        let f = frozen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(&to).unwrap();
                for (from, into) in
                    [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)]
                {
                    let f = f.clone();
                    std::thread::spawn(move || forward(from, into, &f));
                }
            }
        });
        Proxy { addr, frozen }
    }

    fn freeze(&self) {
        *self.frozen.0.lock().unwrap() = true;
    }
}

/// Copies `from` to `into` until either side closes; holds what it read while frozen.
fn forward(mut from: TcpStream, mut into: TcpStream, frozen: &(Mutex<bool>, Condvar)) {
    let mut buf = [0; 16 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut f = frozen.0.lock().unwrap();
        while *f {
            f = frozen.1.wait(f).unwrap();
        }
        drop(f);
        if into.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

#[test]
fn a_cached_client_cut_off_takes_nothing_from_its_extents_once_its_lease_may_be_over() {
    let dir = tempdir("cached-cut-off");
    let lease = LEASE_MS.to_string();
    let server = ServerProc::start(&["--lease-ms", &lease]);
    let (_store, store_addr) = start_store(&dir);
    let proxy = Proxy::start(server.addr.clone());
    let cached = BlockingCachedClient::connect_with(
        &proxy.addr.parse().unwrap(),
        &ConnectOptions::default(),
        CacheOptions::default(),
    )
    .unwrap();
    assert!(cached.is_cached());
    let rt = runtime();
    let range = 0..16;

    // The cached client's thread: lock, write through the store, unlock, as fast as it
    // can; it records when each successful lock call started.
    let start = Instant::now();
    let last_start = Arc::new(AtomicU64::new(0));
    let granted = Arc::new(AtomicU64::new(0));
    let worker = {
        let (cached, last_start, granted) = (cached.clone(), last_start.clone(), granted.clone());
        let (store_addr, range) = (store_addr.clone(), range.clone());
        std::thread::spawn(move || {
            let rt = runtime();
            let mut store = rt.block_on(FencingClient::connect(store_addr.as_str())).unwrap();
            let mut stale = 0u64;
            loop {
                let t0 = start.elapsed().as_nanos() as u64;
                let g = match cached.lock(range.clone(), Mode::Exclusive, Wait::Try) {
                    Ok(g) => g,
                    Err(ClientError::WouldBlock) => continue,
                    Err(_) => return stale, // the session is gone
                };
                last_start.fetch_max(t0, Ordering::Relaxed);
                granted.fetch_add(1, Ordering::Relaxed);
                let w = rt.block_on(store.write(range.clone(), g.token(), "cached")).unwrap();
                if w != Write::Accepted {
                    stale += 1;
                }
            }
        })
    };
    poll("the cached client to lock locally", Duration::from_secs(10), || {
        granted.load(Ordering::Relaxed) > 100
    });
    assert!(cached.kept_extents() > 0);

    proxy.freeze();
    // Another client asks for the range: the server calls the cached client back, gets
    // no answer, ends its session after the lease and grants.
    let other = Client::connect(&server.addr.parse::<Endpoint>().unwrap()).unwrap();
    let g = other.lock(range.clone(), Mode::Exclusive, Wait::Timeout(Duration::from_secs(10)));
    let other_granted = start.elapsed().as_nanos() as u64;
    let g = g.expect("granted once the cached client's session ended");
    let mut store = rt.block_on(FencingClient::connect(store_addr.as_str())).unwrap();
    assert_eq!(
        rt.block_on(store.write(range.clone(), g.token(), "other")).unwrap(),
        Write::Accepted
    );

    let stale = worker.join().unwrap();
    let last = last_start.load(Ordering::Relaxed);
    println!(
        "cached client: {} grants, the last one asked {:.1} ms before the other client's \
         grant, {stale} refused write(s)",
        granted.load(Ordering::Relaxed),
        (other_granted as f64 - last as f64) / 1e6,
    );
    assert!(
        last < other_granted,
        "the cut-off client took the range {:.1} ms after another client was granted it",
        (last - other_granted) as f64 / 1e6
    );
    assert!(!cached.is_connected());
    let st = rt.block_on(store.stats()).unwrap();
    assert_eq!(st.violations, 0, "{st:?}");
    drop(g);
}

// ---------------------------------------------------------------------------------------
// The worker: this test binary run with `RANGELOCK_CACHED_WORKER` set (see `spawn_worker`).

/// How long a guard has to be told it is lost after a refused write or a bad verification.
const TOLD_WITHIN: Duration = Duration::from_secs(10);
/// A step (lock, store request) longer than this is `unanswered`.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// Units of each worker's own region, and of the region all of them share.
const OWN_UNITS: u64 = 4096;
const SHARED_UNITS: u64 = 64;

/// What a worker counts; written as JSON to its report file.
#[derive(Debug, Default)]
struct Counts {
    granted: u64,
    /// Grants inside a kept extent (no round trip).
    kept: u64,
    /// Grants in the shared region.
    shared_region: u64,
    exclusive: u64,
    timed_out: u64,
    errors: BTreeMap<String, u64>,
    writes: u64,
    stale_rejected: u64,
    verify_bad: u64,
    lost_told: u64,
    lost_untold: u64,
    unanswered: u64,
    /// Sessions found lost (and replaced by a new connection).
    sessions_lost: u64,
}

impl Counts {
    fn json(&self, finished: bool) -> String {
        serde_json::json!({
            "granted": self.granted, "kept": self.kept, "shared_region": self.shared_region,
            "exclusive": self.exclusive, "timed_out": self.timed_out, "errors": self.errors,
            "writes": self.writes, "stale_rejected": self.stale_rejected,
            "verify_bad": self.verify_bad, "lost_told": self.lost_told,
            "lost_untold": self.lost_untold, "unanswered": self.unanswered,
            "sessions_lost": self.sessions_lost, "finished": finished,
        })
        .to_string()
    }
}

/// The worker's settings, from its environment.
struct WorkerEnv {
    server: Endpoint,
    store: String,
    writer: String,
    region: u64,
    seed: u64,
    until: Instant,
    report: PathBuf,
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("worker: {key} unset"))
}

/// Runs as a worker when spawned by `spawn_worker`; does nothing in an ordinary run.
#[test]
#[ignore = "a worker process of cached_workers_under_kill_and_pause, not a test"]
fn worker_process() {
    let Ok(report) = std::env::var("RANGELOCK_CACHED_WORKER") else { return };
    let w = WorkerEnv {
        server: env("CW_SERVER").parse().unwrap(),
        store: env("CW_STORE"),
        writer: env("CW_WRITER"),
        region: env("CW_REGION").parse().unwrap(),
        seed: env("CW_SEED").parse().unwrap(),
        until: Instant::now() + Duration::from_millis(env("CW_MILLIS").parse().unwrap()),
        report: PathBuf::from(report),
    };
    let w = Arc::new(w);
    let counts = Arc::new(Mutex::new(Counts::default()));
    let client = Arc::new(Mutex::new(connect_cached(&w.server)));
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let (w, counts, client) = (w.clone(), counts.clone(), client.clone());
            std::thread::spawn(move || work(&w, t, &counts, &client))
        })
        .collect();
    while threads.iter().any(|t| !t.is_finished()) {
        write_report(&w.report, &counts, false);
        std::thread::sleep(Duration::from_millis(100));
    }
    for t in threads {
        t.join().unwrap();
    }
    write_report(&w.report, &counts, true);
}

fn connect_cached(server: &Endpoint) -> BlockingCachedClient {
    let cache = CacheOptions { granule: 1024, ..CacheOptions::default() };
    let c = BlockingCachedClient::connect_with(server, &ConnectOptions::default(), cache).unwrap();
    assert!(c.is_cached());
    c
}

fn bump(counts: &Mutex<Counts>, f: impl FnOnce(&mut Counts)) {
    f(&mut counts.lock().unwrap_or_else(PoisonError::into_inner));
}

fn write_report(path: &Path, counts: &Mutex<Counts>, finished: bool) {
    let json = counts.lock().unwrap_or_else(PoisonError::into_inner).json(finished);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// One worker thread: random locks until `w.until`, each exclusive grant written and
/// verified through the store.
fn work(w: &WorkerEnv, thread: u64, counts: &Mutex<Counts>, client: &Mutex<BlockingCachedClient>) {
    let rt = runtime();
    let mut store = rt.block_on(FencingClient::connect(w.store.as_str())).unwrap();
    let mut rng = SplitMix64::new(w.seed ^ (thread + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    while Instant::now() < w.until {
        let c = client.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let shared_region = rng.next_u64() % 4 == 0;
        let (base, units) =
            if shared_region { (0, SHARED_UNITS) } else { ((w.region + 1) << 32, OWN_UNITS) };
        let start = base + rng.next_u64() % units;
        let range = start..start + 1 + rng.next_u64() % 16;
        let mode = if rng.next_u64() % 4 == 0 { Mode::Shared } else { Mode::Exclusive };
        let t = Instant::now();
        let r = c.lock(range.clone(), mode, Wait::Timeout(Duration::from_secs(2)));
        if t.elapsed() > ANSWER_WITHIN {
            bump(counts, |c| c.unanswered += 1);
        }
        let g = match r {
            Ok(g) => g,
            Err(ClientError::TimedOut | ClientError::WouldBlock) => {
                bump(counts, |c| c.timed_out += 1);
                continue;
            }
            Err(e) => {
                let kind = format!("{e:?}").split(['(', ' ', '{']).next().unwrap().to_owned();
                bump(counts, |c| *c.errors.entry(kind).or_default() += 1);
                if !c.is_connected() {
                    let mut slot = client.lock().unwrap_or_else(PoisonError::into_inner);
                    if !slot.is_connected() {
                        *slot = connect_cached(&w.server);
                        bump(counts, |c| c.sessions_lost += 1);
                    }
                }
                continue;
            }
        };
        bump(counts, |c| {
            c.granted += 1;
            c.kept += u64::from(g.is_kept());
            c.shared_region += u64::from(shared_region);
            c.exclusive += u64::from(mode == Mode::Exclusive);
        });
        // The work under the lock: longer where others wait for it, so that a pause
        // often catches a worker between its grant and its write.
        let work = if shared_region { 2000 } else { 200 };
        std::thread::sleep(Duration::from_micros(rng.next_u64() % work));
        if mode == Mode::Exclusive {
            check_through_store(w, &rt, &mut store, &g, counts);
        }
        drop(g);
    }
}

/// Writes the guard's range with its token, then verifies it; a refusal or another writer
/// must be followed by the guard saying it is lost.
fn check_through_store(
    w: &WorkerEnv,
    rt: &tokio::runtime::Runtime,
    store: &mut FencingClient,
    g: &BlockingCachedGuard,
    counts: &Mutex<Counts>,
) {
    if g.is_lost() {
        bump(counts, |c| c.lost_told += 1);
        return;
    }
    let t = Instant::now();
    let written = rt.block_on(store.write(g.range(), g.token(), &w.writer)).unwrap();
    let bad = match written {
        Write::Accepted => {
            bump(counts, |c| c.writes += 1);
            match rt.block_on(store.verify(g.range(), &w.writer)).unwrap() {
                Verify::Ok => false,
                Verify::Bad { .. } => {
                    bump(counts, |c| c.verify_bad += 1);
                    true
                }
            }
        }
        Write::Stale { .. } => {
            bump(counts, |c| c.stale_rejected += 1);
            true
        }
    };
    if t.elapsed() > ANSWER_WITHIN {
        bump(counts, |c| c.unanswered += 1);
    }
    if bad {
        let end = Instant::now() + TOLD_WITHIN;
        while !g.is_lost() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        if g.is_lost() {
            bump(counts, |c| c.lost_told += 1);
        } else {
            bump(counts, |c| c.lost_untold += 1);
            eprintln!(
                "untold: {:?} {:?} token {} kept {} after {written:?}",
                g.range(),
                g.mode(),
                g.token(),
                g.is_kept()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The nemesis.

/// A worker process: its incarnation and report file.
struct Worker {
    proc: Proc,
    report: PathBuf,
}

fn spawn_worker(
    dir: &Path,
    server: &str,
    store: &str,
    region: u64,
    gen: u64,
    millis: u64,
) -> Worker {
    let name = format!("w{region}-{gen}");
    let report = dir.join(format!("{name}.json"));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["worker_process", "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("RANGELOCK_CACHED_WORKER", &report)
        .env("CW_SERVER", server)
        .env("CW_STORE", store)
        .env("CW_WRITER", &name)
        .env("CW_REGION", region.to_string())
        .env("CW_SEED", (region * 1000 + gen).to_string())
        .env("CW_MILLIS", millis.to_string());
    let proc = Proc::spawn(&name, &mut cmd, dir.join(format!("{name}.log")), Stdio::null());
    Worker { proc, report }
}

fn read_report(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[test]
fn cached_workers_under_kill_and_pause() {
    const WORKERS: u64 = 4;
    let faults_for = Duration::from_secs(8);
    let quiet = Duration::from_secs(3);
    let dir = tempdir("cached-nemesis");
    let lease = LEASE_MS.to_string();
    let server = ServerProc::start(&["--lease-ms", &lease]);
    let (store_proc, store_addr) = start_store(&dir);
    let end = Instant::now() + faults_for + quiet;
    let left = || end.saturating_duration_since(Instant::now()).as_millis() as u64;
    let mut workers: Vec<Worker> =
        (0..WORKERS).map(|i| spawn_worker(&dir, &server.addr, &store_addr, i, 0, left())).collect();
    let mut gens = vec![0u64; WORKERS as usize];
    let mut done: Vec<PathBuf> = Vec::new();
    let mut rng = SplitMix64::new(0x6361_6368);
    let mut faults = Vec::new();
    let faults_end = Instant::now() + faults_for;
    while Instant::now() < faults_end {
        let i = (rng.next_u64() % WORKERS) as usize;
        poll("the worker to report", Duration::from_secs(20), || {
            read_report(&workers[i].report).is_some()
        });
        let fault = rng.next_u64() % 4;
        if fault == 0 {
            workers[i].proc.kill();
            gens[i] += 1;
            let w = spawn_worker(&dir, &server.addr, &store_addr, i as u64, gens[i], left());
            done.push(std::mem::replace(&mut workers[i], w).report);
            faults.push(format!("kill w{i}"));
        } else if fault == 1 {
            // The server past the lease: every client stops trusting its extents until a
            // keepalive is answered again; the server judges the silence its own.
            assert!(common::signal(server.child.id(), libc::SIGSTOP));
            std::thread::sleep(Duration::from_millis(LEASE_MS * 3 / 2));
            assert!(common::signal(server.child.id(), libc::SIGCONT));
            faults.push("pause server".to_owned());
        } else {
            // Past the lease: the server ends the session and gives its locks to others.
            workers[i].proc.pause();
            std::thread::sleep(Duration::from_millis(LEASE_MS * 3 / 2));
            workers[i].proc.resume();
            faults.push(format!("pause w{i}"));
        }
        std::thread::sleep(Duration::from_millis(300 + rng.next_u64() % 500));
    }
    for w in &mut workers {
        let st = common::wait_bounded(&mut w.proc.child, Duration::from_millis(left() + 30_000));
        assert!(
            st.is_some_and(|s| s.success()),
            "{} did not finish: {}",
            w.proc.name,
            w.proc.log_tail(20)
        );
        done.push(w.report.clone());
    }

    // The counts of every incarnation (a killed one: its last report).
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for path in &done {
        let r = read_report(path).unwrap_or_else(|| panic!("no report {}", path.display()));
        for (k, v) in r.as_object().unwrap() {
            if let Some(n) = v.as_u64() {
                *total.entry(k.clone()).or_default() += n;
            }
        }
    }
    let rt = runtime();
    let mut store = rt.block_on(FencingClient::connect(store_addr.as_str())).unwrap();
    let st = rt.block_on(store.stats()).unwrap();
    println!("faults: {}", faults.join(", "));
    println!("workers: {total:?}");
    println!("store: {st}");
    assert_eq!(st.violations, 0, "two holders wrote with one token: {st}");
    assert_eq!(total["lost_untold"], 0, "a refused write's guard was never told it was lost");
    assert!(total["verify_bad"] <= total["lost_told"], "a bad verification went untold");
    assert_eq!(total["unanswered"], 0);
    assert_eq!(total["stale_rejected"], st.stale, "every stale write was refused and counted");
    assert!(total["kept"] > 1000, "kept extents served locks: {total:?}");
    assert!(total["shared_region"] > 0, "the shared region was locked: {total:?}");
    assert!(total["sessions_lost"] > 0, "a paused worker lost its session: {total:?}");
    // Nothing is left behind: the whole line is lockable.
    let c = Client::connect(&server.addr.parse::<Endpoint>().unwrap()).unwrap();
    let g = c.lock(0..u64::MAX, Mode::Exclusive, Wait::Timeout(Duration::from_secs(10)));
    assert!(g.is_ok(), "the line stays locked: {g:?}");
    drop((g, store_proc));
}
