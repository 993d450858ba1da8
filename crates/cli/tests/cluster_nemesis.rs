//! The nemesis: a real cluster under faults, with checking clients that write every
//! exclusive grant through a fencing store (`docs/CLUSTER.md` §2 and §6).
//!
//! etcd, 3 node processes (`--partitions 8 --etcd-ttl 1 --lease-ms 1000 --grace-ms 1500`),
//! one `rangelock cluster fencing-store` and 4 `rangelock cluster worker` processes (two
//! of them lock 50 named resources every other operation, `--names 50`; two of them, one
//! of each kind, are cached clients, `--cached`, whose kept extents the faults and moves
//! must carry or lose loudly). A
//! nemesis thread injects one fault at a time, in a seeded random order (every kind once
//! per round, client pauses twice, shuffled), a second or two apart:
//!
//! * **kill**: SIGKILL a node; once etcd has expired it, **restart** it with the same id
//!   (and port);
//! * **pause**: SIGSTOP a node for longer than its etcd TTL, then SIGCONT (it wakes
//!   fenced, gives everything up and rejoins);
//! * **client pause**: SIGSTOP a worker for longer than its session lease, then SIGCONT
//!   (its locks are released meanwhile; its writes must be refused as stale, or it must
//!   learn it lost the lock);
//! * **client kill**: SIGKILL a worker, then start it again as the same writer (its
//!   sessions' locks and kept extents go when the nodes find it silent; its report so far
//!   is kept as `w<i>-killed-<n>.json` and counted);
//! * **move**: `rangelock cluster move P --to N`.
//!
//! At the end everything is resumed, the workers finish, and the test asserts: no
//! violation at the store (two writers with one token), no fenced-out guard left untold
//! (`lost_untold`), no operation unanswered, and the whole unit space is lockable again
//! (`0..u64::MAX`, exclusively, within a deadline), as is every unit the workers locked of
//! every name. It prints one summary line.
//!
//! The bounded run takes about 35 s. The long run (ignored by default) lasts
//! `RANGELOCK_NEMESIS_SECS` seconds of faults (default 300):
//!
//! ```sh
//! RANGELOCK_NEMESIS_SECS=600 cargo test -p rangelock-cli --test cluster_nemesis -- --ignored --nocapture
//! ```
//!
//! `RANGELOCK_NEMESIS_SEED` picks the fault order (default: fixed per run kind). Logs of
//! every process are kept in the test's directory (printed) when the test fails, or
//! always with `RANGELOCK_NEMESIS_KEEP=1`.

mod common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{
    log_tail, run_cli, settled, snapshot, start_store, wait_for, NodeOpts, NodeProc, Proc,
};
use common::{rangelock, tempdir};
use rangelock_bench::harness::SplitMix64;
use rangelock_client::cluster::{ClusterClient, ClusterOptions};
use rangelock_client::{Mode, Wait};
use rangelock_cluster::etcd::local_etcd_or_skip;
use rangelock_cluster::fencing::FencingClient;

const NODES: [&str; 3] = ["a", "b", "c"];
const WORKERS: usize = 4;
const PARTITIONS: u32 = 8;
/// The names the `--names` workers lock (`nemesis-0` ...), every unit they lock below
/// stripe 18 (`pick_named_range`).
const NAMES: u64 = 50;
/// The workers go on this long after the nemesis stopped: the cluster heals under load.
const QUIET: Duration = Duration::from_secs(4);

#[test]
fn nemesis_bounded() {
    nemesis("cluster_nemesis::nemesis_bounded", Duration::from_secs(22), seed(0x6e65_6d65));
}

/// The long run; see the module docs for the command.
#[test]
#[ignore = "long: RANGELOCK_NEMESIS_SECS seconds of faults (default 300)"]
fn nemesis_long() {
    let secs = std::env::var("RANGELOCK_NEMESIS_SECS")
        .ok()
        .map(|s| s.parse::<u64>().expect("RANGELOCK_NEMESIS_SECS: whole seconds"))
        .unwrap_or(300);
    nemesis("cluster_nemesis::nemesis_long", Duration::from_secs(secs), seed(0x6c6f_6e67));
}

fn seed(default: u64) -> u64 {
    std::env::var("RANGELOCK_NEMESIS_SEED")
        .ok()
        .map(|s| s.parse().expect("RANGELOCK_NEMESIS_SEED: a number"))
        .unwrap_or(default)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Kill,
    Pause,
    ClientPause,
    ClientKill,
    Move,
}

/// What the nemesis did.
#[derive(Debug, Default)]
struct Done {
    kills: u32,
    restarts: u32,
    pauses: u32,
    client_pauses: u32,
    client_kills: u32,
    moves: u32,
    moves_refused: u32,
    log: Vec<String>,
}

struct Nemesis {
    ep: String,
    nodes: Arc<Mutex<Vec<NodeProc>>>,
    workers: Arc<Mutex<Vec<Proc>>>,
    spawn: WorkerSpawn,
    rng: SplitMix64,
    rt: tokio::runtime::Runtime,
    started: Instant,
    done: Done,
}

impl Nemesis {
    fn note(&mut self, what: String) {
        let line =
            format!("{:>7.3}s ({})  {what}", self.started.elapsed().as_secs_f64(), utc_now());
        println!("nemesis {line}");
        self.done.log.push(line);
    }

    /// Runs faults until `until`.
    fn run(&mut self, until: Instant) {
        let mut order = Vec::new();
        while Instant::now() < until {
            if order.is_empty() {
                // Client pauses twice a round: they are what fencing tokens are for.
                order = vec![
                    Fault::Kill,
                    Fault::Pause,
                    Fault::ClientPause,
                    Fault::ClientPause,
                    Fault::ClientKill,
                    Fault::Move,
                ];
                for i in (1..order.len()).rev() {
                    order.swap(i, self.rng.below(i as u64 + 1) as usize);
                }
            }
            let fault = order.pop().unwrap();
            match fault {
                Fault::Kill => self.kill_and_restart(),
                Fault::Pause => self.pause_node(),
                Fault::ClientPause => self.pause_worker(),
                Fault::ClientKill => self.kill_worker(),
                Fault::Move => self.move_partition(),
            }
            // The schedule: a gap between faults (pacing, not synchronisation).
            let gap =
                between(&mut self.rng, Duration::from_millis(800), Duration::from_millis(2000));
            std::thread::sleep(gap.min(until.saturating_duration_since(Instant::now())));
        }
    }

    fn kill_and_restart(&mut self) {
        let i = self.rng.below(NODES.len() as u64) as usize;
        let id = {
            let mut nodes = self.nodes.lock().unwrap();
            nodes[i].proc.kill();
            nodes[i].id.clone()
        };
        self.done.kills += 1;
        self.note(format!("SIGKILL node {id}"));
        let t = Instant::now();
        wait_for(
            &self.rt,
            &self.ep,
            "etcd expires the killed node",
            Duration::from_secs(10),
            |s| !s.is_live(&id),
        );
        self.note(format!("etcd expired node {id} after {:?}", t.elapsed()));
        // Down for a while longer (the schedule), then back with the same id.
        std::thread::sleep(between(
            &mut self.rng,
            Duration::from_millis(300),
            Duration::from_millis(1500),
        ));
        let addr = {
            let mut nodes = self.nodes.lock().unwrap();
            nodes[i].restart(Duration::from_secs(10));
            nodes[i].addr.clone()
        };
        self.done.restarts += 1;
        self.note(format!("restarted node {id} at {addr}"));
    }

    fn pause_node(&mut self) {
        let i = self.rng.below(NODES.len() as u64) as usize;
        // Longer than the etcd TTL (1 s): the node's lease expires while it is stopped.
        let d = between(&mut self.rng, Duration::from_millis(1800), Duration::from_millis(2800));
        let id = {
            let mut nodes = self.nodes.lock().unwrap();
            nodes[i].proc.pause();
            nodes[i].id.clone()
        };
        self.done.pauses += 1;
        self.note(format!("SIGSTOP node {id} for {d:?}"));
        std::thread::sleep(d); // the fault's length
        self.nodes.lock().unwrap()[i].proc.resume();
        self.note(format!("SIGCONT node {id}"));
    }

    fn pause_worker(&mut self) {
        let i = self.rng.below(WORKERS as u64) as usize;
        // Longer than the session lease (1 s): the nodes end its sessions meanwhile.
        let d = between(&mut self.rng, Duration::from_millis(1500), Duration::from_millis(2500));
        {
            let mut w = self.workers.lock().unwrap();
            if w[i].exited().is_some() {
                return;
            }
            w[i].pause();
        }
        self.done.client_pauses += 1;
        self.note(format!("SIGSTOP worker w{i} for {d:?}"));
        std::thread::sleep(d); // the fault's length
        self.workers.lock().unwrap()[i].resume();
        self.note(format!("SIGCONT worker w{i}"));
    }

    fn kill_worker(&mut self) {
        let i = self.rng.below(WORKERS as u64) as usize;
        {
            let mut w = self.workers.lock().unwrap();
            if w[i].exited().is_some() {
                return;
            }
            w[i].kill();
        }
        self.done.client_kills += 1;
        let n = self.done.client_kills;
        self.note(format!("SIGKILL worker w{i}"));
        let dir = &self.spawn.dir;
        let killed = dir.join(format!("w{i}-killed-{n}.json"));
        // (None yet if it was killed before it wrote one.)
        let _ = std::fs::rename(dir.join(format!("w{i}.json")), killed);
        // Down for a while (the schedule), then back as the same writer.
        std::thread::sleep(between(
            &mut self.rng,
            Duration::from_millis(200),
            Duration::from_millis(800),
        ));
        let seeds = seeds_now(&self.nodes);
        let worker = self.spawn.start(i, &seeds, self.rng.next_u64());
        self.workers.lock().unwrap()[i] = worker;
        self.note(format!("restarted worker w{i}"));
    }

    fn move_partition(&mut self) {
        let Some(snap) = snapshot(&self.rt, &self.ep) else { return };
        let p = self.rng.below(u64::from(PARTITIONS)) as u32;
        let owner = snap.owners[p as usize].as_ref().map(|o| o.node.clone());
        let targets: Vec<&str> = NODES
            .iter()
            .copied()
            .filter(|n| snap.is_live(n) && Some(*n) != owner.as_deref())
            .collect();
        if targets.is_empty() {
            return;
        }
        let to = targets[self.rng.below(targets.len() as u64) as usize];
        let (code, _, err) = run_cli(
            &["cluster", "move", &p.to_string(), "--to", to, "--etcd", &self.ep],
            Duration::from_secs(10),
        );
        if code == Some(0) {
            self.done.moves += 1;
            self.note(format!("move partition {p} ({owner:?}) to {to}"));
        } else {
            self.done.moves_refused += 1;
            self.note(format!("move partition {p} to {to} refused: {}", err.trim()));
        }
    }
}

/// How to start worker `i` (again, after a kill): the same writer, until the same end.
struct WorkerSpawn {
    store: String,
    dir: std::path::PathBuf,
    /// When every worker stops.
    until: Instant,
}

impl WorkerSpawn {
    fn start(&self, i: usize, seeds: &[String], seed: u64) -> Proc {
        let left = self.until.saturating_duration_since(Instant::now());
        let mut cmd = rangelock();
        cmd.args(["cluster", "worker", "--seeds", &seeds.join(","), "--store", &self.store])
            .args(["--writer", &format!("w{i}"), "--ops", "100000000"])
            .args(["--seconds", &left.as_secs_f64().max(0.5).to_string()])
            .args(["--seed", &seed.to_string()])
            .arg("--report")
            .arg(self.dir.join(format!("w{i}.json")))
            .env("RUST_LOG", "info");
        if i % 2 == 1 {
            // Named resources too: placed by their names' stripes, not by unit.
            cmd.args(["--names", &NAMES.to_string()]);
        }
        if i >= WORKERS / 2 {
            // Cached clients (`docs/CACHING.md`, "In a cluster"), next to plain ones.
            cmd.arg("--cached");
        }
        let log = self.dir.join(format!("w{i}.log"));
        Proc::spawn(&format!("w{i}"), &mut cmd, log, Stdio::null())
    }
}

fn nemesis(name: &str, faults_for: Duration, seed: u64) {
    let Some(etcd) = local_etcd_or_skip(name) else { return };
    let t_start = Instant::now();
    let ep = etcd.endpoint();
    let dir = tempdir(&format!("nemesis-{seed:x}"));
    println!("{name}: seed {seed:#x}, {faults_for:?} of faults, logs in {}", dir.display());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let opts = NodeOpts::fast(PARTITIONS);
    let nodes: Vec<NodeProc> =
        NODES.iter().map(|id| NodeProc::start(&ep, id, &opts, &dir)).collect();
    wait_for(
        &rt,
        &etcd.endpoint(),
        "the 3 nodes share the partitions",
        Duration::from_secs(20),
        |s| settled(s, &NODES),
    );
    let seeds: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    let nodes = Arc::new(Mutex::new(nodes));
    let (store, store_addr) = start_store(&dir);

    let spawn = WorkerSpawn {
        store: store_addr.clone(),
        dir: dir.clone(),
        until: Instant::now() + faults_for + QUIET,
    };
    let workers: Vec<Proc> =
        (0..WORKERS).map(|i| spawn.start(i, &seeds, seed ^ i as u64)).collect();
    let workers = Arc::new(Mutex::new(workers));
    // Faults start once every worker is at work.
    common::cluster::poll("every worker has run operations", Duration::from_secs(30), || {
        (0..WORKERS).all(|i| {
            std::fs::read_to_string(dir.join(format!("w{i}.json")))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .is_some_and(|r| r["ops"].as_u64().unwrap_or(0) > 0)
        })
    });

    // The nemesis.
    let mut nem = Nemesis {
        ep: ep.clone(),
        nodes: nodes.clone(),
        workers: workers.clone(),
        spawn,
        rng: SplitMix64::new(seed),
        rt: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
        started: Instant::now(),
        done: Done::default(),
    };
    let until = Instant::now() + faults_for;
    let nem = std::thread::spawn(move || {
        nem.run(until);
        nem.done
    });
    let done = match nem.join() {
        Ok(d) => d,
        Err(panic) => {
            eprintln!("the nemesis failed; logs in {}", dir.display());
            std::panic::resume_unwind(panic);
        }
    };

    // Resume everything, let the workers finish.
    for n in nodes.lock().unwrap().iter_mut() {
        n.proc.resume();
        assert!(n.proc.exited().is_none(), "node {} exited:\n{}", n.id, n.proc.log_tail(30));
    }
    for w in workers.lock().unwrap().iter_mut() {
        w.resume();
    }
    // A worker finishes its last operation (a lock waits at most 2 s, a fenced-out guard
    // waits up to 10 s to be told): the bound is generous, for a loaded machine.
    let finish_by = Instant::now() + QUIET + Duration::from_secs(40);
    for w in workers.lock().unwrap().iter_mut() {
        let left = finish_by.saturating_duration_since(Instant::now());
        let st = common::wait_bounded(&mut w.child, left);
        assert!(
            st.is_some_and(|s| s.success()),
            "worker {} did not finish cleanly ({st:?}); log:\n{}",
            w.name,
            w.log_tail(30)
        );
    }
    let read = |path: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    // The workers as they finished, then the reports of killed ones (counted too).
    let mut reports: Vec<serde_json::Value> =
        (0..WORKERS).map(|i| read(&dir.join(format!("w{i}.json")))).collect();
    for r in &reports {
        assert_eq!(r["finished"], true, "{r}");
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().contains("-killed-") {
            reports.push(read(&path));
        }
    }
    let sum = |k: &str| reports.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for r in &reports {
        for (k, v) in r["errors"].as_object().unwrap() {
            *errors.entry(k.clone()).or_default() += v.as_u64().unwrap();
        }
    }
    let store_stats = rt.block_on(async {
        let mut c = FencingClient::connect(store_addr.as_str()).await.unwrap();
        c.stats().await.unwrap()
    });

    // The whole unit space is lockable again (grace periods may still delay it), and so
    // is every unit the workers locked of every name: nothing was left held or queued.
    let t_all = Instant::now();
    let all = rt.block_on(async {
        let c = ClusterClient::connect(&seeds_now(&nodes), ClusterOptions::default()).await?;
        let wait = Wait::Timeout(Duration::from_secs(30));
        let g = c.lock(0..u64::MAX, Mode::Exclusive, wait).await?;
        let pieces = g.pieces().len();
        g.unlock().await?;
        for i in 0..NAMES {
            let name = c.resource(format!("nemesis-{i}"))?;
            let g = name.lock(0..18 << 24, Mode::Exclusive, wait).await?;
            assert_eq!(g.pieces().len(), 18, "one piece per stripe");
            g.unlock().await?;
        }
        Ok::<_, rangelock_client::cluster::ClusterError>(pieces)
    });

    let violations = store_stats.violations + sum("lost_untold") + sum("unanswered");
    println!(
        "nemesis summary: seed {seed:#x}, {:.0} s; operations {} (granted {}, of names {}, in kept extents {}, writes {}), kills {}, \
         pauses {}, client pauses {}, client kills {}, moves {} (refused {}), restarts {}, stale writes rejected \
         {}, lost guards told {}, violations {} (store {}, lost untold {}, unanswered {})",
        t_start.elapsed().as_secs_f64(),
        sum("ops"),
        sum("granted"),
        sum("named_granted"),
        sum("kept"),
        store_stats.accepted,
        done.kills,
        done.pauses,
        done.client_pauses,
        done.client_kills,
        done.moves,
        done.moves_refused,
        done.restarts,
        store_stats.stale,
        sum("lost_told"),
        violations,
        store_stats.violations,
        sum("lost_untold"),
        sum("unanswered"),
    );
    println!("worker errors by kind: {errors:?}");
    let diagnose = || {
        let mut s = format!("logs in {}\nnemesis:\n{}\n", dir.display(), done.log.join("\n"));
        for r in &reports {
            s += &format!("{}: {r}\n", r["writer"]);
        }
        for id in NODES {
            s +=
                &format!("--- node {id}:\n{}\n", log_tail(&dir.join(format!("node-{id}.log")), 15));
        }
        s
    };
    assert_eq!(
        store_stats.violations,
        0,
        "the store saw two writers with one token\n{}",
        diagnose()
    );
    assert_eq!(sum("lost_untold"), 0, "fenced-out guards were not told\n{}", diagnose());
    assert_eq!(sum("unanswered"), 0, "operations went unanswered\n{}", diagnose());
    if done.client_kills == 0 {
        assert_eq!(store_stats.stale, sum("stale_rejected"), "the store and the workers disagree");
    } else {
        // A killed worker's last half second of counts may be missing from its report.
        assert!(store_stats.stale >= sum("stale_rejected"), "the store and the workers disagree");
    }
    let pieces = all
        .unwrap_or_else(|e| panic!("0..u64::MAX or a name is not lockable: {e}\n{}", diagnose()));
    println!("0..u64::MAX locked exclusively ({pieces} pieces) after {:?}", t_all.elapsed());
    assert_eq!(pieces, PARTITIONS as usize);
    assert!(sum("granted") > 0 && store_stats.accepted > 0, "the workers did work\n{}", diagnose());
    assert!(sum("named_granted") > 0, "the --names workers locked names\n{}", diagnose());
    assert!(sum("kept") > 0, "the --cached workers locked inside kept extents\n{}", diagnose());

    drop(store);
    drop(workers);
    drop(nodes);
    if std::env::var_os("RANGELOCK_NEMESIS_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The wall clock as `HH:MM:SS.mmm` UTC, as in the processes' logs.
fn utc_now() -> String {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let (s, ms) = (d.as_secs() % 86_400, d.subsec_millis());
    format!("{:02}:{:02}:{:02}.{ms:03}", s / 3600, s / 60 % 60, s % 60)
}

/// The nodes' current addresses (a restart may have moved one).
fn seeds_now(nodes: &Mutex<Vec<NodeProc>>) -> Vec<String> {
    nodes.lock().unwrap().iter().map(|n| n.addr.clone()).collect()
}

/// A duration uniform in `lo..=hi`, in whole milliseconds.
fn between(rng: &mut SplitMix64, lo: Duration, hi: Duration) -> Duration {
    lo + Duration::from_millis(rng.below((hi - lo).as_millis() as u64 + 1))
}
