//! Named resources in a cluster: a name's range is split stripe by stripe and each piece
//! locked at its partition's owner; names never conflict with each other; a named guard
//! is reclaimed by name (`RECLAIM_NAMED`) after a move or a node's death.
#![cfg(not(loom))]

mod cluster_support;

use std::time::Duration;

use cluster_support::*;
use rangelock_client::cluster::{token, ClusterError, ClusterOptions, MAX_NAMED_PIECES};
use rangelock_client::{ClientError, Mode, Wait};
use rangelock_proto::{name_hash, NAME_STRIPE_SHIFT};
use rangelock_server::ownership::GiveUp;

const LIMIT: Duration = Duration::from_secs(20);
const S: u64 = 1 << NAME_STRIPE_SHIFT;

/// A name whose stripe 0 lies in partition `p` (of 4).
fn name_in(p: u32) -> String {
    (0..)
        .map(|i| format!("named-{i}"))
        .find(|n| name_hash(n.as_bytes()) % 4 == u64::from(p))
        .unwrap()
}

#[test]
fn a_named_range_is_locked_stripe_by_stripe_at_each_partition_s_owner() {
    let c = two_nodes();
    let rt = runtime();
    rt.block_on(async {
        let client = c.client(ClusterOptions::default()).await;
        let other = c.client(ClusterOptions::default()).await;
        let name = name_in(1);
        let res = client.resource(&name).unwrap();
        assert_eq!(res.name(), name.as_bytes());
        // Stripes 0, 1, 2 of the name: partitions 1, 2, 3 (b, a, b).
        let g = res.lock(S - 5..2 * S + 5, Mode::Exclusive, Wait::Forever).await.unwrap();
        assert_eq!(g.name(), Some(name.as_bytes()));
        let pieces: Vec<_> = g.pieces().iter().map(|p| (p.partition, p.range.clone())).collect();
        assert_eq!(pieces, [(1, S - 5..S), (2, S..2 * S), (3, 2 * S..2 * S + 5)]);
        let epochs: Vec<_> = g.pieces().iter().map(|p| token::epoch(p.token)).collect();
        assert_eq!(epochs, [11, 12, 13], "each piece has its partition's token");
        assert_eq!(held(&c.stats(0).await), [(S, 2 * S, g.pieces()[1].token)]);
        assert_eq!(held(&c.stats(1).await).len(), 2);
        // The same name conflicts; another name, and the unnamed resource, do not.
        let same = other.resource(&name).unwrap();
        let r = same.lock(2 * S..2 * S + 1, Mode::Shared, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::WouldBlock)), "{r:?}");
        let elsewhere = other.resource("another name").unwrap();
        let e = elsewhere.lock(S - 5..2 * S + 5, Mode::Exclusive, Wait::Try).await.unwrap();
        let u = other.lock(S - 5..2 * S + 5, Mode::Exclusive, Wait::Try).await.unwrap();
        // A waiter on the same name is granted once the holder lets go.
        let waiter = {
            let same = same.clone();
            tokio::spawn(async move { same.lock_exclusive(0..S + 1).await })
        };
        g.unlock().await.unwrap();
        let w = waiter.await.unwrap().unwrap();
        assert_eq!(w.pieces().len(), 2);
        drop((e, u, w));
        // Refused before anything is sent: a bad name, a range over too many stripes.
        assert!(matches!(
            client.resource(""),
            Err(ClusterError::Client(ClientError::InvalidName { len: 0 }))
        ));
        let r = res.lock(0..(MAX_NAMED_PIECES + 1) * S, Mode::Shared, Wait::Try).await;
        assert!(
            matches!(r, Err(ClusterError::TooManyPieces { stripes }) if stripes == MAX_NAMED_PIECES + 1),
            "{r:?}"
        );
    });
}

#[test]
fn a_named_guard_is_reclaimed_by_name_after_a_move_and_after_a_node_dies() {
    let mut c = two_nodes();
    let rt = runtime();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let other = rt.block_on(c.client(ClusterOptions::default()));
    let name = name_in(0);
    let g =
        rt.block_on(holder.resource(&name).unwrap().lock(0..100, Mode::Exclusive, Wait::Forever));
    let g = g.unwrap();
    let tok = g.pieces()[0].token;
    assert_eq!((g.pieces()[0].partition, token::epoch(tok)), (0, 10));
    // The move of partition 0 from a to b (with a grace period).
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    c.publish(2, [grace(1, 20), serving(1, 11), serving(0, 12), serving(1, 13)]);
    rt.block_on(async {
        eventually(LIMIT, "the named piece is reclaimed at b", || async {
            held(&c.stats(1).await).contains(&(0, 100, tok))
        })
        .await;
        assert!(!g.is_lost());
        assert_eq!(g.pieces()[0].token, tok, "a reclaim keeps the token");
        // In the grace period the same name's conflicting try is refused.
        let same = other.resource(&name).unwrap();
        let r = same.lock(50..60, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::Unavailable { partition: 0 })), "{r:?}");
    });
    c.nodes[1].own.end_grace(0);
    // b dies; a takes partition 0 back in a grace period: the guard is reclaimed there.
    c.nodes[1].kill();
    c.nodes[0].own.acquire(0, 30, Some(Duration::from_secs(600)));
    c.publish_on(0, 3, [grace(0, 30), serving(1, 11), serving(0, 12), serving(1, 13)]);
    rt.block_on(async {
        eventually(LIMIT, "the named piece is reclaimed at a", || async {
            held(&c.stats(0).await).contains(&(0, 100, tok))
        })
        .await;
        assert!(!g.is_lost());
        g.check().unwrap();
        // The reclaimed lock is the name's: after the grace period a conflicting lock of
        // the same name waits for it, and its token is of the later epoch.
        let same = other.resource(&name).unwrap();
        c.nodes[0].own.end_grace(0);
        let waiter = tokio::spawn(async move {
            same.lock(50..60, Mode::Exclusive, Wait::Timeout(Duration::from_secs(30))).await
        });
        eventually(LIMIT, "the same name's lock queues behind it", || async {
            c.stats(0).await.counters.waiters == 1
        })
        .await;
        assert!(!waiter.is_finished());
        g.unlock().await.unwrap();
        let granted = waiter.await.unwrap().unwrap();
        assert_eq!(token::epoch(granted.pieces()[0].token), 30);
    });
}
