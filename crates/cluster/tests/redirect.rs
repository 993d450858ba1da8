//! How fast a client finds a partition's new owner after a planned move, with real nodes
//! on a private etcd and a real cluster client.
//!
//! The cluster has 3 nodes and 2 partitions, so one node owns nothing and a move to it
//! cascades into no rebalancing. Each trial moves partition 0 to the idle node. As soon
//! as the old owner has given the partition up, a client whose map still names the old
//! owner asks for the partition (`Wait::Forever`); the trial ends with its grant from the
//! new owner. The **redirect delay** is the time from the new owner's claim (its
//! ownership of the partition changes) to the grant.
//!
//! `a_waiter_moved_with_its_partition_is_redirected_by_the_pushed_map_not_by_backoff`
//! checks that a client learns of the new owner from a node's push (`MAP_CHANGED`), not
//! from its backoff, which the test sets to a minute.
//!
//! `measure_redirect_delay` prints the delays (median, p90, max) for the node defaults
//! (etcd TTL 5 s, so a manager round every second):
//!
//! ```sh
//! RANGELOCK_REDIRECT_RUNS=20 cargo test -p rangelock-cluster --test redirect \
//!     measure_redirect_delay -- --ignored --nocapture
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rangelock_client::cluster::{ClusterClient, ClusterOptions};
use rangelock_client::{Mode, Wait};
use rangelock_cluster::admin;
use rangelock_cluster::etcd::{local_etcd_or_skip, Etcd, LocalEtcd};
use rangelock_cluster::{Node, NodeConfig};
use rangelock_proto::{token, PartitionState};
use rangelock_server::ownership::Phase;

const PARTITIONS: u32 = 2;
/// The moved partition and the range the client locks in it.
const P: u32 = 0;
const RANGE: std::ops::Range<u64> = 0..4096;

/// Three nodes of a 2-partition cluster on `etcd`, with the etcd TTL `ttl` and a grace
/// period `grace`.
fn start(etcd: &LocalEtcd, ttl: Duration, grace: Duration) -> Vec<Node> {
    let nodes: Vec<Node> = ["a", "b", "c"]
        .iter()
        .map(|id| {
            let mut c = NodeConfig::new(vec![etcd.endpoint()], id);
            c.partitions = Some(PARTITIONS);
            c.etcd_ttl = ttl;
            c.grace = Some(grace);
            Node::start(c).unwrap()
        })
        .collect();
    nodes
}

fn serving(node: &Node, p: u32) -> bool {
    matches!(node.ownership().phase(p), Phase::Serving { .. })
}

/// Waits until every partition is served and every node's published map names its
/// server, serving.
fn wait_settled(nodes: &[Node]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let settled = (0..PARTITIONS).all(|p| {
            let Some(owner) = nodes.iter().find(|n| serving(n, p)) else { return false };
            nodes.iter().all(|n| {
                n.ownership().map().is_some_and(|m| {
                    m.owner_of(p).is_some_and(|(node, o)| {
                        node.id == owner.ownership().node() && o.state == PartitionState::Serving
                    })
                })
            })
        });
        if settled {
            return;
        }
        assert!(Instant::now() < deadline, "the cluster did not settle within 30 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One trial's times.
#[derive(Debug)]
struct Trial {
    /// From the move request to the new owner's claim.
    claim: Duration,
    /// From the claim to the client's grant: the redirect delay.
    redirect: Duration,
}

/// Moves partition [`P`] to the node that owns nothing, and times the client's way to
/// it (see the module docs).
fn trial(
    rt: &tokio::runtime::Runtime,
    etcd: &Etcd,
    nodes: &[Node],
    client: &ClusterClient,
) -> Trial {
    wait_settled(nodes);
    // The client's map names the current owner.
    rt.block_on(client.refresh_map()).unwrap();
    let from = nodes.iter().position(|n| serving(n, P)).unwrap();
    let to = nodes.iter().position(|n| n.ownership().owned().is_empty()).unwrap();
    let to_id = nodes[to].ownership().node().to_owned();
    let asked = Instant::now();
    rt.block_on(admin::request_move(etcd, "default", P, &to_id)).unwrap();
    // The client asks once the old owner has let go: a LOCK it granted would be handed
    // over, not redirected.
    let deadline = asked + Duration::from_secs(30);
    while nodes[from].ownership().phase(P) != Phase::Unowned {
        assert!(Instant::now() < deadline, "the old owner did not let go within 30 s");
        std::hint::spin_loop();
    }
    // The claim's moment, watched closely from another thread.
    let done = AtomicBool::new(false);
    let claimed = std::thread::scope(|s| {
        let watcher = s.spawn(|| loop {
            if nodes[to].ownership().phase(P) != Phase::Unowned {
                return Some(Instant::now());
            }
            if done.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_micros(100));
        });
        let guard = rt.block_on(client.lock(RANGE, Mode::Exclusive, Wait::Forever)).unwrap();
        let granted = Instant::now();
        done.store(true, Ordering::Relaxed);
        let claimed = watcher.join().unwrap().expect("granted, so claimed");
        let epoch = match nodes[to].ownership().phase(P) {
            Phase::Serving { epoch } | Phase::Grace { epoch, .. } => epoch,
            Phase::Unowned => panic!("the new owner let go"),
        };
        assert_eq!(token::epoch(guard.pieces()[0].token), epoch, "granted by the new owner");
        rt.block_on(guard.unlock()).unwrap();
        (claimed, granted)
    });
    let (claimed, granted) = claimed;
    Trial { claim: claimed - asked, redirect: granted.saturating_duration_since(claimed) }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// `(median, p90, max)` in milliseconds.
fn spread(mut d: Vec<Duration>) -> (f64, f64, f64) {
    d.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at = |q: f64| ms(d[((d.len() - 1) as f64 * q).round() as usize]);
    (at(0.5), at(0.9), ms(*d.last().unwrap()))
}

/// Polls `cond` until it holds, failing after `within`.
fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A holder and a waiter at the old owner; the partition moves. The old owner answers
/// the waiter `NOT_OWNER` before anyone has claimed the partition, so the waiter's client
/// finds no newer map and pauses: a minute, by its options. The new owner's claim
/// changes the nodes' maps, they push `MAP_CHANGED`, and the waiter asks the new owner
/// at once, taking its handed-over place back. (Without the push it would sleep through
/// its requeue window, 2 s, and lose its place; the holder's unlock would then find it
/// still asleep, and the grant would come a minute late.)
#[test]
fn a_waiter_moved_with_its_partition_is_redirected_by_the_pushed_map_not_by_backoff() {
    let test = "a_waiter_moved_with_its_partition_is_redirected_by_the_pushed_map_not_by_backoff";
    let Some(etcd) = local_etcd_or_skip(test) else { return };
    let rt = runtime();
    let pause = Duration::from_secs(60);
    let nodes = start(&etcd, Duration::from_secs(5), pause);
    wait_settled(&nodes);
    let admin_etcd =
        rt.block_on(Etcd::connect(&[etcd.endpoint()], Duration::from_secs(2))).unwrap();
    let seeds: Vec<String> = nodes.iter().map(|n| n.addr().to_owned()).collect();
    let options = ClusterOptions { backoff_first: pause, backoff_max: pause, ..Default::default() };
    let connect = || rt.block_on(ClusterClient::connect(&seeds, options.clone())).unwrap();
    let (holder_client, waiter_client) = (connect(), connect());
    let from = nodes.iter().position(|n| serving(n, P)).unwrap();
    let to = nodes.iter().position(|n| n.ownership().owned().is_empty()).unwrap();

    let held = rt.block_on(holder_client.lock(RANGE, Mode::Exclusive, Wait::Forever)).unwrap();
    let waiter = {
        let client = waiter_client.clone();
        rt.spawn(async move { client.lock(RANGE, Mode::Exclusive, Wait::Forever).await })
    };
    let stats = rt
        .block_on(rangelock_client::AsyncClient::connect(&nodes[from].addr().parse().unwrap()))
        .unwrap();
    wait_for("the waiter to queue at the old owner", Duration::from_secs(10), || {
        rt.block_on(stats.stats(0)).unwrap().counters.waiters == 1
    });

    let to_id = nodes[to].ownership().node().to_owned();
    rt.block_on(admin::request_move(&admin_etcd, "default", P, &to_id)).unwrap();
    // Both came back (the holder reclaimed, the waiter re-queued in its place): the new
    // owner ended its grace period early.
    wait_for("the new owner to serve the partition", Duration::from_secs(20), || {
        serving(&nodes[to], P)
    });
    rt.block_on(held.unlock()).unwrap();
    let granted = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), waiter).await })
        .expect("the waiter is granted long before its one-minute pause ends")
        .unwrap()
        .unwrap();
    let Phase::Serving { epoch } = nodes[to].ownership().phase(P) else { panic!("let go") };
    assert_eq!(token::epoch(granted.pieces()[0].token), epoch, "granted by the new owner");
    rt.block_on(granted.unlock()).unwrap();
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture (module docs)"]
fn measure_redirect_delay() {
    let Some(etcd) = local_etcd_or_skip("measure_redirect_delay") else { return };
    let runs: usize =
        std::env::var("RANGELOCK_REDIRECT_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let rt = runtime();
    // A grace period far longer than any trial: a trial that waited for it would show.
    let nodes = start(&etcd, Duration::from_secs(5), Duration::from_secs(20));
    let admin_etcd =
        rt.block_on(Etcd::connect(&[etcd.endpoint()], Duration::from_secs(2))).unwrap();
    wait_settled(&nodes);
    let seeds: Vec<String> = nodes.iter().map(|n| n.addr().to_owned()).collect();
    let client = rt.block_on(ClusterClient::connect(&seeds, ClusterOptions::default())).unwrap();
    let trials: Vec<Trial> = (0..runs).map(|_| trial(&rt, &admin_etcd, &nodes, &client)).collect();
    for (i, t) in trials.iter().enumerate() {
        println!(
            "move {i:2}: claimed {:7.1} ms after the request, granted {:7.1} ms after the claim",
            t.claim.as_secs_f64() * 1e3,
            t.redirect.as_secs_f64() * 1e3
        );
    }
    let (m, p90, max) = spread(trials.iter().map(|t| t.redirect).collect());
    let (cm, cp90, cmax) = spread(trials.iter().map(|t| t.claim).collect());
    println!("n = {runs} moves");
    println!("request -> claim: median {cm:.1} ms, p90 {cp90:.1} ms, max {cmax:.1} ms");
    println!("claim -> grant (redirect delay): median {m:.1} ms, p90 {p90:.1} ms, max {max:.1} ms");
    drop(client);
    drop(nodes);
}
