//! Cached locks in a cluster (`docs/CACHING.md`, "In a cluster"): kept extents serve
//! local locks, grow only inside their partition, and are carried to a partition's new
//! owner after a move or a failover while local guards are inside them.
#![cfg(not(loom))]

mod cluster_support;

use std::time::Duration;

use cluster_support::*;
use rangelock_client::cluster::{
    token, BlockingCachedClusterClient, CachedClusterClient, CachedClusterGuard, ClusterError,
    ClusterOptions, LostCause,
};
use rangelock_client::{CacheOptions, Mode, Wait};
use rangelock_server::ownership::GiveUp;
use rangelock_server::protocol::{Request, Status};

const LIMIT: Duration = Duration::from_secs(20);

/// A cached client asking for 1024-unit granules.
async fn cached(c: &Cluster) -> CachedClusterClient {
    let cache = CacheOptions { granule: 1024, ..CacheOptions::default() };
    CachedClusterClient::connect(&c.seeds(), ClusterOptions::default(), cache).await.unwrap()
}

/// The locks a node holds for clients (not a move's placeholders, session 0), with their
/// tokens.
fn reclaimed(stats: &rangelock_client::StatsBody) -> Vec<(u64, u64, u64)> {
    stats.entries.iter().filter(|e| e.session != 0).map(|e| (e.start, e.end, e.token)).collect()
}

fn kept(g: &CachedClusterGuard) -> bool {
    g.guards().all(|(_, g)| g.is_kept())
}

#[test]
fn kept_extents_serve_local_locks_and_tokens_stay_in_their_partition() {
    let c = two_nodes();
    let rt = runtime();
    rt.block_on(async {
        let client = cached(&c).await;
        // Partition 2 first (epoch 12), then partition 0 (epoch 10), both at a.
        let g2 = client.lock_exclusive(2 * Q..2 * Q + 10).await.unwrap();
        assert_eq!(token::epoch(g2.pieces()[0].token), 12);
        let g0 = client.lock_exclusive(0..10).await.unwrap();
        assert!(kept(&g0) && kept(&g2));
        assert_eq!(
            token::epoch(g0.pieces()[0].token),
            10,
            "a guard takes the highest token of its own partition, not the session's"
        );
        drop((g0, g2));
        assert_eq!(client.kept_extents(), 2);
        let stats = c.stats(0).await;
        // Grown to the granule, never past it.
        assert!(held(&stats).iter().any(|&(s, e, _)| (s, e) == (0, 1024)), "{stats:?}");
        // Inside the extent: no round trip (the node sees no new lock).
        let before = c.stats(0).await.counters.grants;
        let g = client.lock_exclusive(100..200).await.unwrap();
        assert!(kept(&g));
        assert_eq!(c.stats(0).await.counters.grants, before);
        // Across partitions 0 and 1: a piece at each owner, each with its own epoch.
        let across = client.lock_exclusive(Q - 10..Q + 10).await.unwrap();
        let epochs: Vec<_> = across.pieces().iter().map(|p| token::epoch(p.token)).collect();
        assert_eq!(epochs, [10, 11]);
        across.check().unwrap();
        assert!(!across.is_lost());
    });
}

#[test]
fn a_planned_move_carries_an_extent_in_use_and_frees_an_idle_one_at_once() {
    let c = two_nodes();
    let rt = runtime();
    let client = rt.block_on(cached(&c));
    // In use: a guard inside the extent 0..1024 of partition 0. Idle: 2Q..2Q+1024.
    let g = rt.block_on(client.lock_exclusive(10..20)).unwrap();
    let tok = g.pieces()[0].token;
    drop(rt.block_on(client.lock_exclusive(2 * Q..2 * Q + 1)).unwrap());
    assert_eq!(client.kept_extents(), 2);
    let long = Duration::from_secs(600);
    let list = c.nodes[0].own.hand_over(0);
    assert_eq!(list.len(), 1, "the kept extent is handed over like any hold");
    c.nodes[1].own.acquire_handed_over(0, 20, long, long, list);
    let idle = c.nodes[0].own.hand_over(2);
    c.nodes[1].own.acquire_handed_over(2, 22, long, long, idle);
    let mut owners = MOVED;
    owners[2] = grace(1, 22);
    c.publish(2, owners);
    rt.block_on(async {
        eventually(LIMIT, "the extent in use is reclaimed at b", || async {
            reclaimed(&c.stats(1).await).contains(&(0, 1024, tok))
        })
        .await;
        eventually(LIMIT, "the idle extent's placeholder is taken and freed", || async {
            c.nodes[1].own.take_grace_done().contains(&2)
                && !held(&c.stats(1).await).iter().any(|&(s, ..)| s >= 2 * Q)
        })
        .await;
        assert_eq!(client.kept_extents(), 0, "moved extents serve no local lock");
        assert!(!g.is_lost());
        g.check().unwrap();
        // Everyone else waits for the carried lock, in the new epoch.
        c.nodes[1].own.end_grace(0);
        let other = cached(&c).await;
        let waiter = tokio::spawn(async move { other.lock_exclusive(0..100).await });
        // The holder's own next lock through b waits for it too.
        let client2 = client.clone();
        let again = tokio::spawn(async move { client2.lock_exclusive(15..16).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished() && !again.is_finished(), "the carried lock holds");
        drop(g);
        let a = again.await.unwrap().unwrap();
        let w = if a.pieces()[0].token > tok {
            drop(a);
            waiter.await.unwrap().unwrap()
        } else {
            panic!("the holder's next lock must come from the new epoch: {a:?}")
        };
        assert_eq!(token::epoch(w.pieces()[0].token), 20);
        assert!(w.pieces()[0].token > tok, "the new epoch's tokens fence the old one");
    });
}

#[test]
fn a_failover_carries_extents_in_use_and_forgets_idle_ones() {
    let mut c = two_nodes();
    let rt = runtime();
    let client = rt.block_on(cached(&c));
    let g = rt.block_on(client.lock_shared(Q - 10..Q - 5)).unwrap();
    let tok = g.pieces()[0].token;
    drop(rt.block_on(client.lock_exclusive(2 * Q..2 * Q + 1)).unwrap());
    c.nodes[0].kill();
    let long = Some(Duration::from_secs(600));
    c.nodes[1].own.acquire(0, 20, long);
    c.nodes[1].own.acquire(2, 22, long);
    let mut owners = MOVED;
    owners[2] = grace(1, 22);
    c.publish_on(1, 2, owners);
    rt.block_on(async {
        let start = Q - 1024;
        eventually(LIMIT, "the extent in use is reclaimed at b", || async {
            reclaimed(&c.stats(1).await).contains(&(start, Q, tok))
        })
        .await;
        assert!(!g.is_lost());
        assert_eq!(held(&c.stats(1).await).len(), 1, "the idle extent is forgotten");
        drop(g);
        eventually(LIMIT, "released after its last local holder", || async {
            held(&c.stats(1).await).is_empty()
        })
        .await;
    });
}

#[test]
fn an_extent_in_use_that_cannot_be_carried_loses_its_guards() {
    let c = two_nodes();
    let rt = runtime();
    let client = rt.block_on(cached(&c));
    let g = rt.block_on(client.lock_exclusive(10..20)).unwrap();
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    rt.block_on(async {
        // Someone else reclaims a conflicting lock first.
        let rival = c.nodes[1].session().await;
        let reclaim = Request::Reclaim {
            start: 500,
            end: 510,
            mode: Mode::Exclusive,
            token: token::pack(10, 99),
        };
        assert_eq!(rival.raw(reclaim).await.unwrap().status, Status::Ok);
        c.publish(2, MOVED);
        eventually(LIMIT, "the guard is lost", || async { g.is_lost() }).await;
        match g.check() {
            Err(ClusterError::Lost(r)) => {
                assert_eq!((r.partition, r.cause), (0, LostCause::ReclaimRefused))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(g.unlock(), Err(ClusterError::Lost(_))));
    });
}

#[test]
fn a_cached_lock_waits_out_a_grace_period_like_any_other() {
    let c = two_nodes();
    let rt = runtime();
    let client = rt.block_on(cached(&c));
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    c.publish(2, MOVED);
    rt.block_on(async {
        let r = client.lock(0..10, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::Unavailable { partition: 0 })), "{r:?}");
        c.nodes[1].own.end_grace(0);
        let g = client.lock_exclusive(0..10).await.unwrap();
        assert_eq!(token::epoch(g.pieces()[0].token), 20);
        assert!(kept(&g));
    });
}

#[test]
fn the_blocking_client_orders_its_threads_inside_a_kept_extent_and_survives_a_move() {
    let c = two_nodes();
    let rt = runtime();
    let cache = CacheOptions { granule: 1024, ..CacheOptions::default() };
    let client =
        BlockingCachedClusterClient::connect(&c.seeds(), ClusterOptions::default(), cache).unwrap();
    drop(client.lock_exclusive(0..10).unwrap());
    let held = client.lock_exclusive(0..5).unwrap();
    assert!(held.guards().all(|(_, g)| g.is_kept()));
    // Another thread of the same client: the local lock orders it, no round trip.
    let r = client.lock(3..4, Mode::Exclusive, Wait::Try);
    assert!(matches!(r, Err(ClusterError::WouldBlock)), "{r:?}");
    let beside =
        std::thread::scope(|s| s.spawn(|| client.lock_exclusive(5..10)).join()).unwrap().unwrap();
    assert!(beside.guards().all(|(_, g)| g.is_kept()));
    drop(beside);
    let tok = held.pieces()[0].token;
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    c.publish(2, MOVED);
    rt.block_on(eventually(LIMIT, "the extent in use is reclaimed at b", || async {
        reclaimed(&c.stats(1).await).contains(&(0, 1024, tok))
    }));
    held.check().unwrap();
    held.unlock().unwrap();
    rt.block_on(eventually(LIMIT, "unlocked at b after its holder", || async {
        reclaimed(&c.stats(1).await).is_empty()
    }));
}

#[test]
fn a_dropped_client_closes_its_node_sessions_and_their_extents_go() {
    let c = two_nodes();
    let rt = runtime();
    rt.block_on(async {
        let client = cached(&c).await;
        drop(client.lock_exclusive(0..10).await.unwrap());
        drop(client.lock_exclusive(Q..Q + 10).await.unwrap());
        assert_eq!(client.kept_extents(), 2);
        drop(client);
        // The probe's own session (stats) is the only one left on each node.
        for i in 0..2 {
            eventually(LIMIT, "the node's cached session is closed", || async {
                let s = c.stats(i).await;
                s.counters.sessions_open == 1 && s.counters.cached_extents == 0
            })
            .await;
        }
    });
}
