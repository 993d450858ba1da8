//! Cluster nodes in this process against a private etcd: claims, balance, planned moves,
//! self-fencing when etcd stops answering, duplicate ids. (Failover of killed node
//! processes and the nemesis run are in `crates/cli/tests/cluster_*.rs`.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rangelock_cluster::admin;
use rangelock_cluster::etcd::{local_etcd_or_skip, Etcd, LocalEtcd};
use rangelock_cluster::{Node, NodeConfig, NodeError};
use rangelock_proto::*;
use rangelock_server::ownership::Phase;

fn config(etcd: &LocalEtcd, id: &str, partitions: u32) -> NodeConfig {
    let mut c = NodeConfig::new(vec![etcd.endpoint()], id);
    c.partitions = Some(partitions);
    c.etcd_ttl = Duration::from_secs(1);
    c.grace = Some(Duration::from_millis(800));
    // Longer than any wait below: the test connections send no keepalives.
    c.server.lease = Duration::from_secs(30);
    c
}

/// Polls `cond` until it holds, failing after `within`.
fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn serving(node: &Node) -> usize {
    node.ownership().owned().iter().filter(|(_, ph)| matches!(ph, Phase::Serving { .. })).count()
}

/// A minimal blocking protocol connection.
struct Conn(TcpStream);

impl Conn {
    fn open(node: &Node) -> Conn {
        let mut s = TcpStream::connect(node.tcp_addr().unwrap()).unwrap();
        let mut out = Vec::new();
        ClientHello::new(VERSION).encode(&mut out);
        s.write_all(&out).unwrap();
        let mut hello = [0; SERVER_HELLO_LEN];
        s.read_exact(&mut hello).unwrap();
        Conn(s)
    }

    fn send(&mut self, id: u64, request: Request<'_>) {
        let mut out = Vec::new();
        RequestFrame { id, request }.encode(&mut out);
        self.0.write_all(&out).unwrap();
    }

    fn call(&mut self, id: u64, request: Request<'_>) -> ResponseFrame {
        self.send(id, request);
        let r = self.recv();
        assert_eq!(r.id, id);
        r
    }

    /// The next response that is not a `NOTICE`.
    fn recv(&mut self) -> ResponseFrame {
        loop {
            let mut len = [0; 4];
            self.0.read_exact(&mut len).unwrap();
            let mut body = vec![0; u32::from_le_bytes(len) as usize];
            self.0.read_exact(&mut body).unwrap();
            let r = ResponseFrame::decode(&body).unwrap();
            if !r.is_notice() {
                return r;
            }
        }
    }
}

fn lock(start: u64) -> Request<'static> {
    Request::Lock { start, end: start + 1, mode: Mode::Exclusive, wait: Wait::Try }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn nodes_share_the_partitions_and_a_move_goes_through_grace() {
    let Some(etcd) = local_etcd_or_skip("nodes_share_the_partitions_and_a_move_goes_through_grace")
    else {
        return;
    };
    let a = Node::start(config(&etcd, "a", 4)).unwrap();
    // A lone node claims everything, without grace (nobody can hold a lock yet).
    wait_for("a to serve 4 partitions", Duration::from_secs(10), || serving(&a) == 4);
    let parts = Partitioning::new(4).unwrap();
    let mut ca = Conn::open(&a);
    let r = ca.call(1, lock(parts.start(3)));
    assert_eq!(r.status, Status::Ok);
    let epoch3 = token::epoch(r.value);
    // A second node joins: planned moves give it two partitions.
    let b = Node::start(config(&etcd, "b", 4)).unwrap();
    wait_for("2 + 2", Duration::from_secs(15), || serving(&a) == 2 && serving(&b) == 2);
    // A duplicate id is refused; so is another partition count.
    match Node::start(config(&etcd, "b", 4)) {
        Err(NodeError::DuplicateId(id)) => assert_eq!(id, "b"),
        other => panic!("{other:?}"),
    }
    match Node::start(config(&etcd, "c", 8)) {
        Err(NodeError::PartitionsMismatch { have: 4, asked: 8, .. }) => {}
        other => panic!("{other:?}"),
    }
    // The MAP names both nodes.
    let m = ca.call(2, Request::Map).map.unwrap();
    assert_eq!(m.nodes.len(), 2);
    // Partition 3 moved to b (a shed its highest); a's holder was notified, and b
    // serves it under a larger epoch.
    let mut cb = Conn::open(&b);
    let owner_of = |p: u32| if a.ownership().phase(p) != Phase::Unowned { "a" } else { "b" };
    assert_eq!(owner_of(3), "b");
    let r = cb.call(1, lock(parts.start(3) + 10));
    assert_eq!(r.status, Status::Ok);
    assert!(token::epoch(r.value) > epoch3);
    // An explicit move of a partition of a to b: grace on b, then served.
    let p = (0..4).find(|p| owner_of(*p) == "a").unwrap();
    rt().block_on(async {
        let etcd = Etcd::connect(&[etcd.endpoint()], Duration::from_secs(2)).await.unwrap();
        admin::request_move(&etcd, "default", p, "b").await.unwrap();
        assert!(admin::request_move(&etcd, "default", 99, "b").await.is_err());
        assert!(admin::request_move(&etcd, "default", p, "ghost").await.is_err());
    });
    wait_for("the move", Duration::from_secs(10), || b.ownership().phase(p) != Phase::Unowned);
    let r = cb.call(2, lock(parts.start(p)));
    assert!(matches!(r.status, Status::InGrace | Status::Ok), "{:?}", r.status);
    wait_for("grace to end", Duration::from_secs(10), || {
        matches!(b.ownership().phase(p), Phase::Serving { .. })
    });
    assert_eq!(cb.call(3, lock(parts.start(p) + 1)).status, Status::Ok);
    // Rebalancing after the explicit move hands a partition back to a at some point;
    // either way every partition ends owned by exactly one node.
    wait_for("balance", Duration::from_secs(15), || serving(&a) + serving(&b) == 4);
    b.shutdown();
    // b left in order: a takes everything over.
    wait_for("a takes over", Duration::from_secs(10), || serving(&a) == 4);
    a.shutdown();
}

/// A node that cannot refresh its etcd lease stops granting before the lease can expire,
/// and serves again once etcd is back.
#[test]
fn a_node_that_loses_etcd_fences_itself_within_the_lease() {
    let Some(etcd) = local_etcd_or_skip("a_node_that_loses_etcd_fences_itself_within_the_lease")
    else {
        return;
    };
    let a = Node::start(config(&etcd, "a", 2)).unwrap();
    wait_for("a to serve", Duration::from_secs(10), || serving(&a) == 2);
    let mut c = Conn::open(&a);
    assert_eq!(c.call(1, lock(0)).status, Status::Ok);
    etcd.pause().unwrap();
    let paused = Instant::now();
    let mut id = 2;
    loop {
        let r = c.call(id, lock(100 + id));
        id += 1;
        if r.status == Status::Fenced {
            break;
        }
        assert_eq!(r.status, Status::Ok);
        assert!(paused.elapsed() < Duration::from_secs(2), "still granting after 2 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    let fenced_after = paused.elapsed();
    // The lease is 1 s, and the last keepalive was sent before the pause.
    assert!(fenced_after < Duration::from_secs(1), "fenced after {fenced_after:?}");
    println!("fenced {fenced_after:?} after etcd stopped answering (etcd lease TTL 1 s)");
    etcd.resume().unwrap();
    // Back: the lease expired in the meantime (or not); either way the node serves
    // again, under new epochs if it had to re-register.
    wait_for("a to serve again", Duration::from_secs(15), || {
        serving(&a) == 2 && c.call(1000, lock(5000)).status == Status::Ok && {
            c.call(1001, Request::Unlock { target: 1000 });
            true
        }
    });
    a.shutdown();
}

/// etcd stops answering just long enough for the node to fence itself, and comes back
/// before the node's lease expires: the node's owner keys are still in etcd, but it gave
/// the partitions up. It must free and claim them again (new epochs), not leave them
/// owned-but-unserved.
#[test]
fn a_node_fenced_by_a_short_etcd_outage_serves_again_under_new_epochs() {
    let Some(etcd) =
        local_etcd_or_skip("a_node_fenced_by_a_short_etcd_outage_serves_again_under_new_epochs")
    else {
        return;
    };
    let mut cfg = config(&etcd, "a", 2);
    // The fence closes 1.5 s into a 3 s lease: room to bring etcd back in between.
    cfg.etcd_ttl = Duration::from_secs(3);
    cfg.fence_margin = Some(Duration::from_millis(1500));
    let a = Node::start(cfg).unwrap();
    wait_for("a to serve", Duration::from_secs(10), || serving(&a) == 2);
    let mut c = Conn::open(&a);
    let before = token::epoch(c.call(1, lock(0)).value);
    etcd.pause().unwrap();
    let mut id = 2;
    while c.call(id, lock(100 + id)).status != Status::Fenced {
        id += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    // The fence closed before the lease could expire, and the node gives its partitions
    // up (telling its clients) at once.
    wait_for("a to give up", Duration::from_secs(2), || a.ownership().owned().is_empty());
    etcd.resume().unwrap();
    wait_for("a to serve again", Duration::from_secs(20), || {
        let r = c.call(1000, lock(5000));
        if r.status == Status::Ok {
            assert!(token::epoch(r.value) > before, "a new epoch after the outage");
            c.call(1001, Request::Unlock { target: 1000 });
            true
        } else {
            false
        }
    });
    a.shutdown();
}

/// A planned move hands the held locks over: the new owner accepts exactly those
/// reclaims (a forged one is refused) and ends its grace period as soon as all are in,
/// long before the 30 s it would otherwise wait.
#[test]
fn a_planned_move_hands_held_and_queued_locks_over_and_ends_grace_when_all_are_back() {
    let Some(etcd) = local_etcd_or_skip("a_planned_move_hands_held_locks_over") else { return };
    let mut ca = config(&etcd, "a", 2);
    ca.grace = Some(Duration::from_secs(30));
    let mut cb = config(&etcd, "b", 2);
    cb.grace = Some(Duration::from_secs(30));
    cb.requeue = Some(Duration::from_millis(700));
    let a = Node::start(ca).unwrap();
    wait_for("a to serve 2", Duration::from_secs(10), || serving(&a) == 2);
    let b = Node::start(cb).unwrap();
    // Balancing moves one partition to b (a planned move, with nothing held: no grace
    // to sit out beyond the handover).
    wait_for("1 + 1", Duration::from_secs(15), || serving(&a) == 1 && serving(&b) == 1);
    let p = (0..2).find(|p| matches!(a.ownership().phase(*p), Phase::Serving { .. })).unwrap();
    let base = Partitioning::new(2).unwrap().start(p);
    let mut conn_a = Conn::open(&a);
    let x = conn_a.call(
        1,
        Request::Lock { start: base, end: base + 10, mode: Mode::Exclusive, wait: Wait::Try },
    );
    let s = conn_a.call(
        2,
        Request::Lock { start: base + 20, end: base + 30, mode: Mode::Shared, wait: Wait::Try },
    );
    assert_eq!((x.status, s.status), (Status::Ok, Status::Ok));
    // Two waiters behind x; only the first will come back to the new owner.
    let (mut w1, mut w2) = (Conn::open(&a), Conn::open(&a));
    let wait_x =
        Request::Lock { start: base, end: base + 10, mode: Mode::Exclusive, wait: Wait::Forever };
    let wait_s =
        Request::Lock { start: base + 2, end: base + 3, mode: Mode::Shared, wait: Wait::Forever };
    w1.send(1, wait_x);
    w1.call(2, Request::Stats { max_entries: 0 });
    w2.send(1, wait_s);
    w2.call(2, Request::Stats { max_entries: 0 });
    rt().block_on(async {
        let etcd = Etcd::connect(&[etcd.endpoint()], Duration::from_secs(2)).await.unwrap();
        admin::request_move(&etcd, "default", p, "b").await.unwrap();
    });
    wait_for("b to claim p", Duration::from_secs(10), || {
        matches!(b.ownership().phase(p), Phase::Grace { .. })
    });
    let claimed = Instant::now();
    assert_eq!(w1.recv().status, Status::NotOwner);
    assert_eq!(w2.recv().status, Status::NotOwner);
    let mut conn_b = Conn::open(&b);
    let mut w1 = Conn::open(&b);
    w1.send(3, wait_x);
    let reclaim =
        |start: u64, end: u64, mode: Mode, token: u64| Request::Reclaim { start, end, mode, token };
    // Not handed over: refused, though its token is of an earlier epoch.
    let forged = conn_b.call(1, reclaim(base + 50, base + 60, Mode::Exclusive, x.value + 100));
    assert_eq!(forged.status, Status::ReclaimRefused);
    // The real ones: accepted with their tokens.
    let r1 = conn_b.call(2, reclaim(base, base + 10, Mode::Exclusive, x.value));
    let r2 = conn_b.call(3, reclaim(base + 20, base + 30, Mode::Shared, s.value));
    assert_eq!((r1.status, r1.value), (Status::Ok, x.value));
    assert_eq!((r2.status, r2.value), (Status::Ok, s.value));
    let reclaimed = Instant::now();
    // w2 does not come back: the grace period ends with the requeue window (0.7 s), not
    // after its 30 s.
    wait_for("grace to end early", Duration::from_secs(5), || {
        matches!(b.ownership().phase(p), Phase::Serving { .. })
    });
    println!(
        "grace ended {:?} after the claim, {:?} after the last reclaim (requeue window 0.7 s, \
         grace period 30 s)",
        claimed.elapsed(),
        reclaimed.elapsed()
    );
    // x goes: w1, which came back, is granted in b's epoch; w2's place is gone.
    assert_eq!(conn_b.call(9, Request::Unlock { target: 2 }).status, Status::Ok);
    let g = w1.recv();
    assert_eq!((g.id, g.status), (3, Status::Ok));
    assert!(g.value > x.value);
    let stats = conn_b.call(10, Request::Stats { max_entries: 10 }).stats.unwrap();
    assert!(
        stats.entries.iter().all(|e| e.session != 0),
        "no placeholder left: {:?}",
        stats.entries
    );
    // New locks now: above the reclaimed tokens.
    let n = conn_b.call(
        4,
        Request::Lock { start: base + 40, end: base + 41, mode: Mode::Exclusive, wait: Wait::Try },
    );
    assert_eq!(n.status, Status::Ok);
    assert!(n.value > x.value);
    b.shutdown();
    a.shutdown();
}

/// Issue 30, item 8: a node started without `--partitions` takes the cluster's count;
/// one with another count is refused, and the error says where the cluster's count came
/// from (the default, set by a first node without `--partitions`) and what to do.
#[test]
fn a_node_without_a_partition_count_takes_the_clusters_and_another_count_is_refused_clearly() {
    let Some(etcd) = local_etcd_or_skip("a_node_without_a_partition_count") else { return };
    let plain = |cluster: &str, id: &str, partitions: Option<u32>| {
        let mut c = config(&etcd, id, 1);
        c.cluster = cluster.into();
        c.partitions = partitions;
        c
    };
    // The first node names the count; a node without one takes it.
    let a = Node::start(plain("explicit", "a", Some(8))).unwrap();
    let b = Node::start(plain("explicit", "b", None)).unwrap();
    assert_eq!(b.ownership().partitioning().count(), 8);
    // The first node has none: the cluster gets the default, and says so to a node that
    // asks for another count.
    let c = Node::start(plain("defaulted", "c", None)).unwrap();
    assert_eq!(c.ownership().partitioning().count(), rangelock_cluster::DEFAULT_PARTITIONS);
    let e = Node::start(plain("defaulted", "d", Some(8))).unwrap_err();
    let msg = e.to_string();
    println!("{msg}");
    assert!(
        matches!(e, NodeError::PartitionsMismatch { have: 64, asked: 8, defaulted: true, .. }),
        "{e:?}"
    );
    assert!(msg.contains("the cluster has 64 partitions, the default"), "{msg}");
    assert!(msg.contains("\"c\", started without --partitions"), "{msg}");
    assert!(msg.contains("start every node of a cluster with the same --partitions"), "{msg}");
    drop((a, b, c));
}

/// A node grants cached locks, grown only inside the partition the required range lies
/// in (`docs/CACHING.md`, "In a cluster"): never over units another node may own.
#[test]
fn a_node_grows_cached_locks_only_inside_their_partition() {
    let Some(etcd) = local_etcd_or_skip("a_node_grows_cached_locks_only_inside_their_partition")
    else {
        return;
    };
    let a = Node::start(config(&etcd, "a", 4)).unwrap();
    wait_for("a to serve 4 partitions", Duration::from_secs(10), || serving(&a) == 4);
    let mut c = Conn::open(&a);
    let r = c.call(1, Request::CacheOn);
    assert_eq!((r.op, r.status), (op::CACHE_ON, Status::Ok));
    let parts = Partitioning::new(4).unwrap();
    let cached = Request::LockCached {
        start: parts.start(1),
        end: parts.start(1) + 1,
        mode: Mode::Exclusive,
        wait: Wait::Try,
        desired_start: 0,
        desired_end: u64::MAX,
        name: b"",
    };
    let r = c.call(2, cached);
    assert_eq!((r.op, r.status), (op::LOCK_CACHED, Status::Ok));
    let grant = r.grant.expect("a cached grant");
    assert!(grant.cached);
    assert_eq!((grant.start, grant.end), (parts.start(1), parts.start(2)), "partition 1 only");
    drop(a);
}
