//! `cluster` and `cluster-failover`: the cost of running `rangelockd` as a cluster, and
//! what a failover looks like.
//!
//! **`cluster`**: the `server-micro` workload (16 clients; a random range of 1..=1024
//! units, 20 % exclusive, lock + unlock per cycle) with the ranges spread over the
//! partitions: each cycle picks a partition at random and a range inside its first 2^16
//! units, so no range crosses a boundary (the cost measured is routing and ownership
//! checks, not splitting). Variants, all through async clients, each client thread on
//! its own single-threaded tokio runtime:
//!
//! * `single`: one `rangelockd` (combiner), no cluster: the baseline;
//! * `cluster-1`, `cluster-2`, `cluster-3`: that many nodes in this process on a private
//!   etcd (8 partitions, spread evenly), reached through `ClusterClient`.
//!
//! * `cluster-3-names`: 3 nodes, each cycle on one of 1 000 named resources (chosen at
//!   random; the range inside the name's first stripe, so one piece a cycle), placed by
//!   the names' hashes. Recorded per node: its share of the grants (`node_shares`, from
//!   each node's STATS after the run), and the largest (`max_node_share`).
//!
//! On 2 cores, 2 and 3 nodes are marked oversubscribed: they show the overhead of the
//! extra hops and processes, not scaling. The bars: `cluster-1 ≥ 0.8 × single`, and no
//! node of `cluster-3-names` grants more than half of the names' locks.
//!
//! **`cluster-failover`**: two nodes (etcd TTL 1 s, grace 1 s, 8 partitions). 32 clients
//! each hold an exclusive lock on a partition of node A; node A then crashes: its
//! manager stops without giving anything up (its etcd lease is left to expire) and its
//! server closes every connection, which is what the clients of a killed process see.
//! A probe client tries a fresh lock on one of A's partitions every 5 ms. Printed (and
//! recorded as extra fields, in ms after the crash): lease expiry (A's node key gone from
//! etcd), claim (B owns every partition of A), grace end, first new grant, and how many
//! of the 32 locks were reclaimed and how many reported lost. The bar: first new grant
//! ≤ TTL + grace + 1 s, every lock reclaimed.

use std::ops::Range;
use std::time::{Duration, Instant};

use rangelock_client::cluster::{ClusterClient, ClusterGuard, ClusterOptions, ClusterResource};
use rangelock_client::{AsyncClient, Endpoint, Mode, Wait};
use rangelock_cluster::etcd::{Etcd, LocalEtcd};
use rangelock_cluster::{keys, Node, NodeConfig};
use rangelock_proto::{token, Partitioning};
use rangelock_server::ownership::Phase;
use rangelock_server::{Server, ServerConfig};
use serde_json::Value;

use super::common;
use crate::harness::{
    run_threads_with, Case, LatencySampler, Options, Sample, Span, SplitMix64, Suite, ThreadResult,
};

/// Partitions of the benchmark clusters.
const PARTITIONS: u32 = 8;
/// Units used at the start of each partition.
const UNITS: u64 = 1 << 16;
/// Longest range.
const MAX_RANGE_UNITS: u64 = 1 << 10;
/// Exclusive share of the cycles, in percent.
const EXCLUSIVE_PCT: u64 = 20;
/// Clients of the throughput cases.
const CLIENTS: usize = 16;
/// One cycle in this many is timed.
const SAMPLE_EVERY: u32 = 16;
/// Names of `cluster-3-names`.
const NAMES: u64 = 1000;

/// What to run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Single,
    Cluster(usize),
    /// That many nodes; each cycle on one of [`NAMES`] names.
    ClusterNames(usize),
}

impl Variant {
    fn name(self) -> String {
        match self {
            Variant::Single => "single".into(),
            Variant::Cluster(n) => format!("cluster-{n}"),
            Variant::ClusterNames(n) => format!("cluster-{n}-names"),
        }
    }
}

/// A running cluster of `n` nodes on a private etcd.
struct Cluster {
    nodes: Vec<Node>,
    // Dropped last: the nodes leave through it.
    _etcd: LocalEtcd,
}

impl Cluster {
    /// Starts `n` nodes and waits until they are balanced; gives up when `span`'s work
    /// budget runs out first.
    fn start(n: usize, ttl: Duration, grace: Duration, span: Span) -> Result<Cluster, String> {
        let etcd = LocalEtcd::start().map_err(|e| e.to_string())?;
        let mut nodes = Vec::new();
        for i in 0..n {
            let mut c = NodeConfig::new(vec![etcd.endpoint()], &format!("n{i}"));
            c.partitions = Some(PARTITIONS);
            c.etcd_ttl = ttl;
            c.grace = Some(grace);
            nodes.push(Node::start(c).map_err(|e| e.to_string())?);
        }
        let cluster = Cluster { nodes, _etcd: etcd };
        cluster.wait_balanced(span)?;
        Ok(cluster)
    }

    fn serving(node: &Node) -> usize {
        node.ownership().owned().iter().filter(|(_, p)| matches!(p, Phase::Serving { .. })).count()
    }

    /// Waits until every partition is served, the counts differ by at most one, and every
    /// node's published map says so (clients read the map from any node: one that still
    /// shows a partition unowned sends them into backoff, which would be measured).
    fn wait_balanced(&self, span: Span) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let counts: Vec<usize> = self.nodes.iter().map(Cluster::serving).collect();
            let total: usize = counts.iter().sum();
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            if total == PARTITIONS as usize && hi - lo <= 1 && self.maps_agree() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("cluster not balanced after 30 s: {counts:?}"));
            }
            if !span.running() {
                return Err(format!("cluster not balanced yet: {counts:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether every node's published map names each partition's serving node.
    fn maps_agree(&self) -> bool {
        let serving_node = |p: u32| {
            self.nodes.iter().find(|n| matches!(n.ownership().phase(p), Phase::Serving { .. }))
        };
        self.nodes.iter().all(|n| {
            let Some(map) = n.ownership().map() else { return false };
            (0..PARTITIONS).all(|p| {
                let named = map.owner_of(p).map(|(node, _)| node.id.as_str());
                named.is_some() && named == serving_node(p).map(|s| s.ownership().node())
            })
        })
    }

    fn seeds(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr().to_owned()).collect()
    }

    /// Each node's share of the cluster's grants since it started (its STATS).
    fn grant_shares(&self) -> Result<Vec<f64>, String> {
        runtime().block_on(async {
            let mut grants = Vec::new();
            for addr in self.seeds() {
                let endpoint: Endpoint = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
                let c = AsyncClient::connect(&endpoint).await.map_err(|e| e.to_string())?;
                grants.push(c.stats(0).await.map_err(|e| e.to_string())?.counters.grants);
            }
            let total = grants.iter().sum::<u64>().max(1) as f64;
            Ok(grants.iter().map(|&g| g as f64 / total).collect())
        })
    }
}

/// A client of one variant.
enum Conn {
    Single(AsyncClient),
    Cluster(ClusterClient),
    /// One handle per name, made (and its name hashed) once.
    Names(Vec<ClusterResource>),
}

impl Conn {
    /// Lock + unlock of `range` (of name `name` for [`Conn::Names`]).
    async fn cycle(&self, name: usize, range: Range<u64>, mode: Mode) -> Result<(), String> {
        match self {
            Conn::Names(names) => {
                let g = names[name].lock(range, mode, Wait::Forever).await;
                g.map_err(|e| e.to_string())?.unlock().await.map_err(|e| e.to_string())
            }
            Conn::Single(c) => {
                let g = c.lock(range, mode, Wait::Forever).await.map_err(|e| e.to_string())?;
                g.unlock().await.map_err(|e| e.to_string())
            }
            Conn::Cluster(c) => {
                let g = c.lock(range, mode, Wait::Forever).await.map_err(|e| e.to_string())?;
                g.unlock().await.map_err(|e| e.to_string())
            }
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

fn run_cycles(variant: Variant, clients: usize, span: Span) -> Sample {
    let (server, cluster) = match variant {
        Variant::Single => match Server::start(ServerConfig::ephemeral()) {
            Ok(s) => (Some(s), None),
            Err(e) => return Sample::skipped(format!("cannot start the server: {e}")),
        },
        Variant::Cluster(n) | Variant::ClusterNames(n) => {
            match Cluster::start(n, Duration::from_secs(5), Duration::from_secs(1), span) {
                Ok(c) => (None, Some(c)),
                Err(e) if !span.running() => return Sample::cut(format!("starting: {e}")),
                Err(e) => return Sample::skipped(format!("cannot start the cluster: {e}")),
            }
        }
    };
    let parts = Partitioning::new(PARTITIONS).expect("power of two");
    let failure = std::sync::Mutex::new(None::<String>);
    let sample = run_threads_with(
        clients,
        span,
        |_| {
            let rt = runtime();
            let conn = rt.block_on(async {
                match (&server, &cluster) {
                    (Some(s), _) => {
                        let addr = s.tcp_addr().expect("tcp");
                        AsyncClient::connect(&Endpoint::from(addr))
                            .await
                            .map(Conn::Single)
                            .map_err(|e| e.to_string())
                    }
                    (_, Some(c)) => {
                        let client = ClusterClient::connect(&c.seeds(), ClusterOptions::default())
                            .await
                            .map_err(|e| e.to_string())?;
                        if !matches!(variant, Variant::ClusterNames(_)) {
                            return Ok(Conn::Cluster(client));
                        }
                        let names = (0..NAMES).map(|i| client.resource(format!("bench/{i}")));
                        names.collect::<Result<_, _>>().map(Conn::Names).map_err(|e| e.to_string())
                    }
                    _ => unreachable!(),
                }
            });
            (rt, conn)
        },
        |i, (rt, conn), ctl| {
            let conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    failure.lock().unwrap().get_or_insert(format!("connect: {e}"));
                    return ThreadResult::default();
                }
            };
            let mut rng = SplitMix64::new(0xC1_0000 + i as u64);
            let mut sampler = LatencySampler::new(SAMPLE_EVERY);
            let mut cycles = 0u64;
            while ctl.running() {
                let p = rng.below(u64::from(PARTITIONS)) as u32;
                let len = 1 + rng.below(MAX_RANGE_UNITS);
                // A named range lies in its name's first stripe (2^24 units); an unnamed
                // one at the start of partition `p`.
                let (name, base) = match conn {
                    Conn::Names(_) => (rng.below(NAMES) as usize, 0),
                    _ => (0, parts.start(p)),
                };
                let start = base + rng.below(UNITS - len + 1);
                let mode =
                    if rng.below(100) < EXCLUSIVE_PCT { Mode::Exclusive } else { Mode::Shared };
                let t = sampler.start();
                if let Err(e) = rt.block_on(conn.cycle(name, start..start + len, mode)) {
                    failure.lock().unwrap().get_or_insert(e);
                    break;
                }
                sampler.finish(t);
                cycles += 1;
            }
            ThreadResult { ops: 2 * cycles, latencies_ns: sampler.into_latencies() }
        },
    );
    let shares = match (&cluster, variant) {
        (Some(c), Variant::ClusterNames(_)) => Some(c.grant_shares()),
        _ => None,
    };
    drop(cluster);
    if let Some(s) = server {
        s.shutdown();
    }
    if let Some(e) = failure.into_inner().unwrap() {
        return Sample::skipped(format!("{} failed: {e}", variant.name()));
    }
    let mut sample = sample;
    let secs = sample.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    sample.extra.insert("cycles_per_sec".into(), Value::from(sample.ops as f64 / 2.0 / secs));
    match shares {
        Some(Ok(shares)) => {
            let max = shares.iter().copied().fold(0.0, f64::max);
            // Three decimals: the record and the report list them as they are.
            let shares: Vec<f64> = shares.iter().map(|s| (s * 1000.0).round() / 1000.0).collect();
            sample.extra.insert("node_shares".into(), Value::from(shares));
            sample.extra.insert("max_node_share".into(), Value::from(max));
        }
        Some(Err(e)) => return Sample::skipped(format!("reading the nodes' grants: {e}")),
        None => {}
    }
    sample
}

/// The `cluster` suite.
#[derive(Debug, Default)]
pub struct ClusterSuite;

impl Suite for ClusterSuite {
    fn name(&self) -> &'static str {
        "cluster"
    }

    fn quantity(&self) -> String {
        "lock+unlock requests per second".to_owned()
    }

    fn x_axis(&self) -> crate::harness::XAxis {
        crate::harness::XAxis::Clients
    }

    fn about(&self) -> &'static str {
        "server-micro's workload (16 clients, 20% exclusive) spread over 8 partitions: one \
         server vs clusters of 1, 2, 3 nodes on a private etcd, and 3 nodes on 1 000 names \
         (ops = requests)"
    }

    fn baseline(&self) -> &'static str {
        "single"
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut variants = vec![Variant::Single];
        if rangelock_cluster::etcd::etcd_binary().is_some() {
            variants.extend([1, 2, 3].map(Variant::Cluster));
            variants.push(Variant::ClusterNames(3));
        } else {
            eprintln!("cluster: skipping the cluster variants: etcd is not installed (bash ci/install-etcd.sh)");
        }
        let clients = if opts.quick { 4 } else { CLIENTS };
        variants
            .into_iter()
            .map(|v| Case {
                variant: v.name(),
                threads: clients,
                params: common::params([
                    ("partitions", PARTITIONS.into()),
                    ("exclusive_pct", EXCLUSIVE_PCT.into()),
                    ("max_range_units", MAX_RANGE_UNITS.into()),
                ]),
                // Nodes beyond the cores (each node is a server plus its manager).
                oversubscribed: matches!(v, Variant::Cluster(n) | Variant::ClusterNames(n) if n > cores.saturating_sub(1).max(1)),
                run: Box::new(move |d| run_cycles(v, clients, d)),
            })
            .collect()
    }
}

/// The `cluster-failover` suite.
#[derive(Debug, Default)]
pub struct ClusterFailover;

impl Suite for ClusterFailover {
    fn name(&self) -> &'static str {
        "cluster-failover"
    }

    fn quantity(&self) -> String {
        "first new grant after a node crash".to_owned()
    }

    fn measure(&self) -> crate::harness::Measure {
        // A timeline and counts, not a rate: ops/s would be locks reclaimed per second.
        crate::harness::Measure::Extras(&[
            "first_grant_ms",
            "lease_expiry_ms",
            "claim_ms",
            "grace_end_ms",
            "bar_ms",
            "reclaimed",
            "lost",
        ])
    }

    fn about(&self) -> &'static str {
        "a node holding 32 locks crashes: the timeline (lease expiry, claim, grace end, first \
         new grant, ms after the crash) and how many locks were reclaimed or lost (etcd TTL \
         1 s, grace 1 s; ops = locks reclaimed)"
    }

    fn baseline(&self) -> &'static str {
        "failover"
    }

    fn settings(&self, record: &crate::harness::Record) -> String {
        let rounds = match record.rounds {
            1 => "1 round".to_owned(),
            n => format!("{n} rounds"),
        };
        format!(
            "one crash timeline per round (a fresh two-node cluster each time), median of \
             {rounds}; the measurement time does not apply"
        )
    }

    fn cases(&self, _opts: &Options) -> Vec<Case> {
        if rangelock_cluster::etcd::etcd_binary().is_none() {
            eprintln!("cluster-failover: skipped: etcd is not installed (bash ci/install-etcd.sh)");
            return Vec::new();
        }
        vec![Case {
            variant: "failover".into(),
            threads: 1,
            params: common::params([("partitions", PARTITIONS.into()), ("held_locks", 32.into())]),
            oversubscribed: false,
            run: Box::new(failover),
        }]
    }
}

const TTL: Duration = Duration::from_secs(1);
const GRACE: Duration = Duration::from_secs(1);
const HELD: usize = 32;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One failover run; given up on (cut) when `span`'s work budget runs out first.
fn failover(span: Span) -> Sample {
    match runtime().block_on(failover_async(span)) {
        Ok(s) => s,
        Err(e) if !span.running() => Sample::cut(e),
        Err(e) => Sample::skipped(format!("failover run failed: {e}")),
    }
}

async fn failover_async(span: Span) -> Result<Sample, String> {
    let cluster = tokio::task::spawn_blocking(move || Cluster::start(2, TTL, GRACE, span))
        .await
        .map_err(|e| e.to_string())??;
    let Cluster { mut nodes, _etcd: etcd } = cluster;
    let (a, b) = (nodes.remove(0), nodes.remove(0));
    let parts = Partitioning::new(PARTITIONS).expect("power of two");
    let a_parts: Vec<u32> = a.ownership().owned().into_iter().map(|(p, _)| p).collect();
    let seeds = vec![a.addr().to_owned(), b.addr().to_owned()];
    let client = ClusterClient::connect(&seeds, ClusterOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    // 32 exclusive locks on A's partitions, each 16 units.
    let mut held: Vec<ClusterGuard> = Vec::new();
    for i in 0..HELD {
        let p = a_parts[i % a_parts.len()];
        let start = parts.start(p) + 16 * i as u64;
        let g = client
            .lock(start..start + 16, Mode::Exclusive, Wait::Try)
            .await
            .map_err(|e| e.to_string())?;
        held.push(g);
    }
    let tokens_before: Vec<u64> = held.iter().map(|g| g.pieces()[0].token).collect();
    let probe_p = a_parts[0];
    let old_epoch = token::epoch(tokens_before[0]);
    let etcd_client = Etcd::connect(&[etcd.endpoint()], Duration::from_secs(1))
        .await
        .map_err(|e| e.to_string())?;
    let node_key = keys::node("default", "n0");
    // Crash A.
    let crashed = Instant::now();
    let b_own = b.ownership().clone();
    tokio::task::spawn_blocking(move || a.crash()).await.map_err(|e| e.to_string())?;
    let (mut expiry, mut claim, mut grace_end, mut first_grant) = (None, None, None, None);
    let probe_start = parts.start(probe_p) + UNITS; // away from the held locks
    let deadline = crashed + Duration::from_secs(30);
    while first_grant.is_none() && Instant::now() < deadline && span.running() {
        if expiry.is_none() {
            if let Ok((_, None)) = etcd_client.get(&node_key).await {
                expiry = Some(crashed.elapsed());
            }
        }
        let phases: Vec<Phase> = a_parts.iter().map(|p| b_own.phase(*p)).collect();
        if claim.is_none() && phases.iter().all(|ph| *ph != Phase::Unowned) {
            claim = Some(crashed.elapsed());
        }
        if grace_end.is_none() && phases.iter().all(|ph| matches!(ph, Phase::Serving { .. })) {
            grace_end = Some(crashed.elapsed());
        }
        if let Ok(g) = client.lock(probe_start..probe_start + 1, Mode::Exclusive, Wait::Try).await {
            if token::epoch(g.pieces()[0].token) > old_epoch {
                let t = crashed.elapsed();
                first_grant = Some(t);
                // The grace period ended between the phase check above and the grant.
                grace_end.get_or_insert(t);
            }
            let _ = g.unlock().await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first_grant = first_grant.ok_or_else(|| {
        let after = crashed.elapsed().as_millis();
        if span.running() {
            "no new grant within 30 s".to_owned()
        } else {
            format!("no new grant yet {after} ms after the crash")
        }
    })?;
    let reclaimed = held.iter().filter(|g| !g.is_lost()).count();
    let lost = held.len() - reclaimed;
    let same_tokens = held
        .iter()
        .zip(&tokens_before)
        .filter(|(g, t)| !g.is_lost() && g.pieces()[0].token == **t)
        .count();
    let bar = TTL + GRACE + Duration::from_secs(1);
    eprintln!(
        "cluster-failover: crash at 0 ms; lease expiry {:.0} ms; claim {:.0} ms; grace end {:.0} ms; \
         first new grant {:.0} ms (bar: ≤ {:.0} ms = TTL + grace + 1 s); locks reclaimed {reclaimed}/{HELD} \
         (same token: {same_tokens}), reported lost {lost}",
        expiry.map_or(f64::NAN, ms),
        claim.map_or(f64::NAN, ms),
        grace_end.map_or(f64::NAN, ms),
        ms(first_grant),
        ms(bar),
    );
    for g in held {
        let _ = g.unlock().await;
    }
    drop(client);
    tokio::task::spawn_blocking(move || b.shutdown()).await.map_err(|e| e.to_string())?;
    let mut s = Sample { ops: reclaimed as u64, elapsed: first_grant, ..Sample::default() };
    for (k, v) in [
        ("lease_expiry_ms", expiry.map(ms)),
        ("claim_ms", claim.map(ms)),
        ("grace_end_ms", grace_end.map(ms)),
        ("first_grant_ms", Some(ms(first_grant))),
        ("bar_ms", Some(ms(bar))),
    ] {
        s.extra.insert(k.into(), v.map_or(Value::Null, Value::from));
    }
    s.extra.insert("reclaimed".into(), Value::from(reclaimed));
    s.extra.insert("lost".into(), Value::from(lost));
    drop(etcd);
    Ok(s)
}
