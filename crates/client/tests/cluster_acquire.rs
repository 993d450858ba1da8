//! The cluster client acquires a range piece by piece at each partition's owner, all or
//! nothing, and follows (a bounded number of) redirects.
#![cfg(not(loom))]

mod cluster_support;

use std::time::{Duration, Instant};

use cluster_support::*;
use rangelock_client::cluster::{token, ClusterClient, ClusterError, ClusterOptions, GuardPiece};
use rangelock_client::{Mode, Wait};
use rangelock_server::ownership::GiveUp;

#[test]
fn a_range_across_three_partitions_on_two_nodes_is_one_guard_with_a_token_per_piece() {
    let c = two_nodes();
    let rt = runtime();
    rt.block_on(async {
        let client = c.client(ClusterOptions::default()).await;
        assert_eq!(client.map().revision, 1);
        let range = Q - 5..2 * Q + 5;
        let g = client.lock(range.clone(), Mode::Exclusive, Wait::Forever).await.unwrap();
        assert_eq!((g.range(), g.mode(), g.is_lost()), (range, Mode::Exclusive, false));
        let pieces = g.pieces();
        let ranges: Vec<_> = pieces.iter().map(|p| (p.partition, p.range.clone())).collect();
        assert_eq!(ranges, [(0, Q - 5..Q), (1, Q..2 * Q), (2, 2 * Q..2 * Q + 5)]);
        // Each token carries its partition's epoch; each is the first grant there.
        let epochs: Vec<_> =
            pieces.iter().map(|p| (token::epoch(p.token), token::seq(p.token))).collect();
        assert_eq!(epochs, [(10, 1), (11, 1), (12, 1)]);
        // The pieces are held where they belong.
        let on_a = held(&c.stats(0).await);
        assert_eq!(on_a, [(Q - 5, Q, pieces[0].token), (2 * Q, 2 * Q + 5, pieces[2].token)]);
        assert_eq!(held(&c.stats(1).await), [(Q, 2 * Q, pieces[1].token)]);
        // stat --cluster: every node's STATS, in the map's order.
        let all = client.stats_all(10).await.unwrap();
        let ids: Vec<_> = all.iter().map(|(n, s)| (n.id.as_str(), s.counters.holders)).collect();
        assert_eq!(ids, [("a", 2), ("b", 1)]);
        g.check().unwrap();
        g.unlock().await.unwrap();
        assert!(held(&c.stats(0).await).is_empty() && held(&c.stats(1).await).is_empty());
        // Dropping a guard releases it too.
        let g = client.lock(0..10, Mode::Shared, Wait::Try).await.unwrap();
        assert_eq!(
            g.pieces(),
            [GuardPiece { partition: 0, range: 0..10, token: token::pack(10, 2) }]
        );
        drop(g);
        let other = c.client(ClusterOptions::default()).await;
        eventually(Duration::from_secs(10), "the dropped guard is released", || async {
            other.lock(0..10, Mode::Exclusive, Wait::Try).await.is_ok()
        })
        .await;
    });
}

#[test]
fn a_failed_piece_releases_the_pieces_already_held_before_the_error_returns() {
    let c = two_nodes();
    let rt = runtime();
    rt.block_on(async {
        let client = c.client(ClusterOptions::default()).await;
        // Another session holds a unit of partition 1, at b.
        let blocker = c.nodes[1].session().await;
        let _b = blocker.lock(Q + 1..Q + 2, Mode::Exclusive, Wait::Try).await.unwrap();
        let r = client.lock(Q - 5..Q + 5, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::WouldBlock)), "{r:?}");
        // The first piece (partition 0, at a) is free again — at once, not eventually.
        let a = c.nodes[0].session().await;
        a.lock(Q - 5..Q, Mode::Exclusive, Wait::Try).await.unwrap().unlock().await.unwrap();
        // A timeout is one deadline for the whole range, and fails the same way.
        let t0 = Instant::now();
        let r = client
            .lock(Q - 5..Q + 5, Mode::Exclusive, Wait::Timeout(Duration::from_millis(200)))
            .await;
        assert!(matches!(r, Err(ClusterError::TimedOut)), "{r:?}");
        assert!(t0.elapsed() >= Duration::from_millis(200), "{:?}", t0.elapsed());
        let _held = a.lock(Q - 5..Q, Mode::Exclusive, Wait::Try).await.unwrap();
        assert_eq!(c.stats(0).await.counters.holders, 1, "only the plain session's lock");
        // Refused before anything is sent.
        let r = client.lock(5..5, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::Client(_))), "{r:?}");
    });
}

#[test]
fn a_client_with_a_stale_map_follows_the_owner_hint() {
    let c = two_nodes();
    let rt = runtime();
    // Partition 0 moves from a to b (nothing was held there: no notice), and a publishes
    // the new map before the client connects (so a pushes it nothing); the client reads
    // revision 1 from b.
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, None);
    c.publish_on(0, 2, [serving(1, 20), serving(1, 11), serving(0, 12), serving(1, 13)]);
    let seed = [c.nodes[1].addr.clone()];
    let client = rt.block_on(ClusterClient::connect(&seed, ClusterOptions::default())).unwrap();
    assert_eq!(client.map().revision, 1);
    rt.block_on(async {
        let g = client.lock(0..100, Mode::Exclusive, Wait::Try).await.unwrap();
        assert_eq!(token::epoch(g.pieces()[0].token), 20, "granted by b");
        assert_eq!(held(&c.stats(1).await), [(0, 100, g.pieces()[0].token)]);
        assert_eq!(client.map().revision, 1, "a's hint named b: no need to re-read the map");
    });
    // Partition 2 moves too, but a knows no owner (its hint is empty) and only b's map
    // says where it went: the client finds the newer map on b (re-reading it, or pushed).
    c.nodes[0].own.give_up(2, GiveUp::Moved);
    c.nodes[1].own.acquire(2, 22, None);
    c.publish_on(0, 3, [serving(1, 20), serving(1, 11), UNOWNED, serving(1, 13)]);
    c.publish_on(1, 4, [serving(1, 20), serving(1, 11), serving(1, 22), serving(1, 13)]);
    rt.block_on(async {
        let g = client.lock(2 * Q..2 * Q + 1, Mode::Shared, Wait::Forever).await.unwrap();
        assert_eq!(token::epoch(g.pieces()[0].token), 22);
        assert_eq!(client.map().revision, 4);
    });
}

#[test]
fn nodes_that_point_at_each_other_end_in_too_many_redirects_soon() {
    let c = Cluster::start(&["a", "b"]);
    // Neither owns partition 0; each believes the other does, in ever "newer" maps.
    c.publish_on(0, 5, [serving(1, 30), UNOWNED, UNOWNED, UNOWNED]);
    c.publish_on(1, 6, [serving(0, 31), UNOWNED, UNOWNED, UNOWNED]);
    let rt = runtime();
    rt.block_on(async {
        let client = c.client(ClusterOptions::default()).await;
        let t0 = Instant::now();
        // Even a wait without limit ends.
        let r = client.lock(0..10, Mode::Exclusive, Wait::Forever).await;
        match r {
            Err(ClusterError::TooManyRedirects { partition: 0, redirects }) => {
                assert_eq!(redirects, 17, "more than max_redirects (16)")
            }
            other => panic!("{other:?}"),
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let client = c.client(ClusterOptions { max_redirects: 2, ..Default::default() }).await;
        let r = client.lock(0..10, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::TooManyRedirects { redirects: 3, .. })), "{r:?}");
        assert_eq!(c.stats(0).await.counters.holders + c.stats(1).await.counters.holders, 0);
    });
}

#[test]
fn a_partition_in_grace_is_unavailable_to_a_try_and_granted_to_a_wait_once_grace_ends() {
    let c = Cluster::start(&["a"]);
    c.nodes[0].own.acquire(0, 7, Some(Duration::from_secs(600)));
    c.publish(1, [grace(0, 7), UNOWNED, UNOWNED, UNOWNED]);
    let rt = runtime();
    let client = rt.block_on(c.client(ClusterOptions::default()));
    let r = rt.block_on(client.lock(0..10, Mode::Exclusive, Wait::Try));
    assert!(matches!(r, Err(ClusterError::Unavailable { partition: 0 })), "{r:?}");
    // Nobody owns partition 1: a try says so; a timed wait times out.
    let r = rt.block_on(client.lock(Q..Q + 1, Mode::Exclusive, Wait::Try));
    assert!(matches!(r, Err(ClusterError::Unavailable { partition: 1 })), "{r:?}");
    let r = rt.block_on(client.lock(
        Q..Q + 1,
        Mode::Exclusive,
        Wait::Timeout(Duration::from_millis(100)),
    ));
    assert!(matches!(r, Err(ClusterError::TimedOut)), "{r:?}");
    let waiter = {
        let client = client.clone();
        rt.spawn(async move {
            client.lock(0..10, Mode::Exclusive, Wait::Timeout(Duration::from_secs(30))).await
        })
    };
    c.nodes[0].own.end_grace(0);
    let g = rt.block_on(waiter).unwrap().unwrap();
    assert_eq!(g.pieces()[0].token, token::pack(7, 1));
}

/// Nodes that are starting answer MAP with FENCED until they have a map: connect asks
/// again until one has (a client started with its cluster), and gives up after
/// `map_wait`.
#[test]
fn connect_waits_for_starting_nodes_to_publish_their_map_up_to_map_wait() {
    let c = Cluster::start(&["a", "b"]);
    let rt = runtime();
    let options = ClusterOptions { map_wait: Duration::from_millis(300), ..Default::default() };
    let t0 = Instant::now();
    let r = rt.block_on(ClusterClient::connect(&c.seeds(), options));
    let e = r.map(|_| ()).unwrap_err();
    assert!(matches!(e, ClusterError::NoNode(_)), "{e:?}");
    assert!(e.to_string().contains("node fenced"), "{e}");
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(150), "gave up after {waited:?}");
    // Several rounds were asked of each node, not one.
    let asked = rt.block_on(c.stats(0)).counters.errors;
    assert!(asked >= 3, "node a answered {asked} MAPs with FENCED");
    // With the default wait, connect returns once a node publishes its map.
    let connecting = {
        let seeds = c.seeds();
        rt.spawn(async move { ClusterClient::connect(&seeds, ClusterOptions::default()).await })
    };
    rt.block_on(eventually(Duration::from_secs(5), "connect asks again", || async {
        c.stats(1).await.counters.errors > asked
    }));
    assert!(!connecting.is_finished());
    c.nodes[1].own.acquire(1, 11, None);
    c.publish_on(1, 4, [UNOWNED, serving(1, 11), UNOWNED, UNOWNED]);
    let client = rt.block_on(connecting).unwrap().unwrap();
    assert_eq!(client.map().revision, 4);
}

/// The blocking cluster client: the same guard without a runtime of the caller's; its
/// runtime thread keeps reclaiming while the caller blocks elsewhere.
#[test]
fn the_blocking_cluster_client_locks_follows_a_move_and_unlocks() {
    use rangelock_client::cluster::BlockingClusterClient;
    let c = two_nodes();
    let client = BlockingClusterClient::connect(&c.seeds(), ClusterOptions::default()).unwrap();
    let g = client.lock(Q - 5..Q + 5, Mode::Exclusive, Wait::Forever).unwrap();
    let tokens: Vec<u64> = g.pieces().iter().map(|p| p.token).collect();
    assert_eq!(tokens.len(), 2);
    // A conflicting try is refused.
    assert!(matches!(
        client.lock(Q - 1..Q, Mode::Shared, Wait::Try),
        Err(ClusterError::WouldBlock)
    ));
    // Partition 0 moves to b (grace); the guard is reclaimed there with the same tokens
    // while this thread does nothing but wait for it.
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(60)));
    c.publish(2, [grace(1, 20), serving(1, 11), serving(0, 12), serving(1, 13)]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = runtime().block_on(c.stats(1));
        if held(&st).iter().any(|(start, _, t)| *start == Q - 5 && *t == tokens[0]) {
            break;
        }
        assert!(Instant::now() < deadline, "not reclaimed on b");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!g.is_lost());
    assert!(g.check().is_ok());
    assert_eq!(g.pieces().iter().map(|p| p.token).collect::<Vec<_>>(), tokens);
    g.unlock().unwrap();
}
