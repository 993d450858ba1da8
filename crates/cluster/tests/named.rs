//! Named resources on real cluster nodes with a private etcd and a real cluster client:
//! many names spread over three nodes; a planned move hands named locks over (through
//! the `handover/<p>` key, names included) and the holder reclaims them by name; a
//! crashed node's named locks are reclaimed by name at the node that takes its
//! partitions over.

use std::time::{Duration, Instant};

use rangelock_client::cluster::{ClusterClient, ClusterError, ClusterOptions};
use rangelock_client::{Mode, Wait};
use rangelock_cluster::admin;
use rangelock_cluster::etcd::{local_etcd_or_skip, Etcd, LocalEtcd};
use rangelock_cluster::{Node, NodeConfig};
use rangelock_proto::{token, PartitionState};
use rangelock_server::ownership::Phase;

const PARTITIONS: u32 = 16;

fn config(etcd: &LocalEtcd, id: &str) -> NodeConfig {
    let mut c = NodeConfig::new(vec![etcd.endpoint()], id);
    c.partitions = Some(PARTITIONS);
    c.etcd_ttl = Duration::from_secs(1);
    c.grace = Some(Duration::from_secs(3));
    c
}

fn serving(node: &Node) -> usize {
    node.ownership().owned().iter().filter(|(_, ph)| matches!(ph, Phase::Serving { .. })).count()
}

/// Polls `cond` until it holds, failing after `within`.
fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three nodes that serve every partition between them, balanced (counts differ by at
/// most one, so the balancer moves nothing more), and whose published maps all say so.
fn three_nodes(etcd: &LocalEtcd) -> Vec<Node> {
    let nodes: Vec<Node> =
        ["a", "b", "c"].iter().map(|id| Node::start(config(etcd, id)).unwrap()).collect();
    wait_for("the partitions spread over 3 nodes", Duration::from_secs(30), || {
        let counts: Vec<usize> = nodes.iter().map(serving).collect();
        counts.iter().sum::<usize>() == PARTITIONS as usize
            && counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1
            && nodes.iter().all(|n| {
                n.ownership().map().is_some_and(|m| {
                    m.nodes.len() == 3
                        && m.owners.iter().all(|o| o.state == PartitionState::Serving)
                })
            })
    });
    nodes
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

async fn client(nodes: &[Node]) -> ClusterClient {
    let seeds: Vec<String> = nodes.iter().map(|n| n.addr().to_owned()).collect();
    ClusterClient::connect(&seeds, ClusterOptions::default()).await.unwrap()
}

/// 1 000 names spread over 3 nodes: each node holds some of their locks and none more
/// than half (counted by the nodes themselves, in STATS); the same units of different
/// names never conflict, of one name always do.
#[test]
fn a_thousand_names_spread_over_three_nodes_and_names_do_not_conflict() {
    let Some(etcd) = local_etcd_or_skip("a_thousand_names_spread_over_three_nodes") else {
        return;
    };
    let nodes = three_nodes(&etcd);
    rt().block_on(async {
        let c = client(&nodes).await;
        let mut guards = Vec::new();
        for i in 0..1000 {
            let res = c.resource(format!("tenant-{i}/table")).unwrap();
            // A wait, not a try: a partition in a move's grace period is retried.
            let wait = Wait::Timeout(Duration::from_secs(10));
            guards.push(res.lock(0..4096, Mode::Exclusive, wait).await.unwrap());
        }
        let all = c.stats_all(0).await.unwrap();
        let holders: Vec<u64> = all.iter().map(|(_, s)| s.counters.holders).collect();
        println!("1 000 names' locks per node: {holders:?}");
        assert_eq!(holders.iter().sum::<u64>(), 1000, "one piece per name");
        assert!(holders.iter().all(|&h| h > 0 && h < 500), "{holders:?}");
        // The same units of the same name: taken; of another name: free.
        let other = client(&nodes).await;
        let r = other.resource("tenant-7/table").unwrap().lock(5..6, Mode::Shared, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::WouldBlock)), "{r:?}");
        let g = other.resource("tenant-7/index").unwrap().lock(5..6, Mode::Shared, Wait::Try).await;
        g.unwrap().unlock().await.unwrap();
        for g in guards {
            g.unlock().await.unwrap();
        }
    });
    for n in nodes {
        n.shutdown();
    }
}

/// A planned move of the partition of a named lock: the old owner hands it over with its
/// name, the holder reclaims it by name at the new owner with its token, another client's
/// conflicting lock on the same name waits for it, and gets a later epoch's token. Then
/// the new owner crashes: the lock is reclaimed by name where its partition goes next.
#[test]
fn a_named_lock_survives_a_planned_move_and_a_crash_of_its_node() {
    let Some(etcd) = local_etcd_or_skip("a_named_lock_survives_a_planned_move_and_a_crash") else {
        return;
    };
    let mut nodes: Vec<Option<Node>> = three_nodes(&etcd).into_iter().map(Some).collect();
    let live =
        |nodes: &[Option<Node>]| -> Vec<usize> { (0..3).filter(|&i| nodes[i].is_some()).collect() };
    let rt = rt();
    let seeds: Vec<String> = nodes.iter().flatten().map(|n| n.addr().to_owned()).collect();
    let connect = || ClusterClient::connect(&seeds, ClusterOptions::default());
    let (holder, other) =
        rt.block_on(async { (connect().await.unwrap(), connect().await.unwrap()) });
    let res = holder.resource("orders").unwrap();
    let g = rt.block_on(res.lock(100..200, Mode::Exclusive, Wait::Forever)).unwrap();
    let piece = g.pieces()[0].clone();
    let (p, tok) = (piece.partition, piece.token);
    let from = (0..3).find(|&i| nodes[i].as_ref().unwrap().ownership().phase(p) != Phase::Unowned);
    let from = from.unwrap();
    let to = (from + 1) % 3;
    rt.block_on(async {
        let etcd = Etcd::connect(&[etcd.endpoint()], Duration::from_secs(2)).await.unwrap();
        let to_id = ["a", "b", "c"][to];
        admin::request_move(&etcd, "default", p, to_id).await.unwrap();
    });
    let node = |i: usize, nodes: &[Option<Node>]| nodes[i].as_ref().unwrap().ownership().clone();
    let new_owner = node(to, &nodes);
    wait_for("the move", Duration::from_secs(15), || new_owner.phase(p) != Phase::Unowned);
    // Every handed-over lock came back (ours is the only one), so the grace period ends
    // early: the holder reclaimed it by name at the new owner.
    wait_for("the grace period to end", Duration::from_secs(15), || {
        matches!(new_owner.phase(p), Phase::Serving { .. })
    });
    assert!(!g.is_lost());
    assert_eq!(g.pieces()[0].token, tok, "a reclaim keeps the token");
    rt.block_on(async {
        let at = |i: usize| {
            let addr = nodes[i].as_ref().unwrap().addr().to_owned();
            async move {
                let c =
                    rangelock_client::AsyncClient::connect(&addr.parse().unwrap()).await.unwrap();
                c.stats(10).await.unwrap()
            }
        };
        let held = at(to).await;
        assert!(
            held.entries.iter().any(|e| (e.start, e.end, e.token) == (100, 200, tok)),
            "{held:?}"
        );
        // The same name's conflicting lock: refused to a try, and it waits otherwise.
        let same = other.resource("orders").unwrap();
        let r = same.lock(150..160, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::WouldBlock)), "{r:?}");
    });
    // The new owner crashes: the partition goes to a survivor after the etcd lease (1 s),
    // in a grace period, and the holder reclaims the named lock there.
    nodes[to].take().unwrap().crash();
    let survivors = live(&nodes);
    wait_for("a survivor to take the partition", Duration::from_secs(20), || {
        survivors.iter().any(|&i| node(i, &nodes).phase(p) != Phase::Unowned)
    });
    let next = *survivors.iter().find(|&&i| node(i, &nodes).phase(p) != Phase::Unowned).unwrap();
    rt.block_on(async {
        let addr = nodes[next].as_ref().unwrap().addr().to_owned();
        let plain = rangelock_client::AsyncClient::connect(&addr.parse().unwrap()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let st = plain.stats(10).await.unwrap();
            if st.entries.iter().any(|e| (e.start, e.end, e.token) == (100, 200, tok)) {
                break;
            }
            assert!(Instant::now() < deadline, "not reclaimed at the survivor: {st:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!g.is_lost());
        g.check().unwrap();
        // After the grace period the same name's lock waits for the holder, and is then
        // granted with a token of the survivor's later epoch.
        let same = other.resource("orders").unwrap();
        let waiter = tokio::spawn(async move {
            same.lock(150..160, Mode::Exclusive, Wait::Timeout(Duration::from_secs(30))).await
        });
        loop {
            let st = plain.stats(10).await.unwrap();
            if st.counters.waiters == 1 {
                break;
            }
            assert!(Instant::now() < deadline + Duration::from_secs(10), "no waiter: {st:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!waiter.is_finished());
        g.unlock().await.unwrap();
        let granted = waiter.await.unwrap().unwrap();
        assert!(token::epoch(granted.pieces()[0].token) > token::epoch(tok));
    });
    for n in nodes.into_iter().flatten() {
        n.shutdown();
    }
}
