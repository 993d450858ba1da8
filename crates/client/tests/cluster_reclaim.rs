//! A guard survives a planned move and a node's death by reclaiming its pieces at the new
//! owner, with the same tokens; when a reclaim is refused or comes too late, the guard is
//! lost — and says so.
#![cfg(not(loom))]

mod cluster_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cluster_support::*;
use rangelock_client::cluster::{
    token, ClusterClient, ClusterError, ClusterGuard, ClusterOptions, LostCause, LostReason,
};
use rangelock_client::{Mode, Wait};
use rangelock_server::ownership::GiveUp;
use rangelock_server::protocol::{EntryState, Request, Status};

const LIMIT: Duration = Duration::from_secs(20);

/// Counts `on_lost` calls and keeps the last reason.
fn lost_log() -> (Arc<AtomicUsize>, Arc<Mutex<Option<LostReason>>>) {
    (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(None)))
}

#[test]
fn a_planned_move_reclaims_the_guard_at_the_new_owner_with_the_same_token() {
    let c = two_nodes();
    let rt = runtime();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let other = rt.block_on(c.client(ClusterOptions::default()));
    let g = rt.block_on(holder.lock(0..100, Mode::Exclusive, Wait::Forever)).unwrap();
    let tok = g.pieces()[0].token;
    assert_eq!(token::epoch(tok), 10);
    let calls = Arc::new(AtomicUsize::new(0));
    g.on_lost({
        let calls = calls.clone();
        move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
        }
    });
    // The move: a gives partition 0 up (the holder gets a NOTICE), b claims it with a
    // grace period, the nodes publish the new map.
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    c.publish(2, MOVED);
    rt.block_on(async {
        eventually(LIMIT, "the piece is reclaimed at b", || async {
            held(&c.stats(1).await).contains(&(0, 100, tok))
        })
        .await;
        assert!(!g.is_lost());
        g.check().unwrap();
        assert_eq!(g.pieces()[0].token, tok, "a reclaim keeps the token");
        assert!(held(&c.stats(0).await).is_empty(), "a dropped it");
        // During the grace period a conflicting lock is refused (a try) or waits.
        let r = other.lock(50..60, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClusterError::Unavailable { partition: 0 })), "{r:?}");
    });
    let waiter = {
        let other = other.clone();
        rt.spawn(async move {
            other.lock(50..60, Mode::Exclusive, Wait::Timeout(Duration::from_secs(30))).await
        })
    };
    c.nodes[1].own.end_grace(0);
    rt.block_on(async {
        // After the grace period: a lock beside it is granted in the new epoch, the
        // conflicting one once the holder lets go.
        let beside = other.lock(200..300, Mode::Exclusive, Wait::Try).await.unwrap();
        assert_eq!(token::epoch(beside.pieces()[0].token), 20);
        assert!(!waiter.is_finished());
        g.unlock().await.unwrap();
        let granted = waiter.await.unwrap().unwrap();
        assert!(granted.pieces()[0].token > tok, "the new epoch's tokens fence the old ones");
    });
    assert_eq!(calls.load(Ordering::SeqCst), 0, "never lost");
}

#[test]
fn a_refused_reclaim_loses_the_guard_loudly_and_releases_its_other_pieces() {
    let c = two_nodes();
    let rt = runtime();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    // Pieces in partition 0 (at a) and 1 (at b).
    let g = rt.block_on(holder.lock(Q - 100..Q + 100, Mode::Exclusive, Wait::Forever)).unwrap();
    let (calls, last) = lost_log();
    g.on_lost({
        let (calls, last) = (calls.clone(), last.clone());
        move |reason| {
            calls.fetch_add(1, Ordering::SeqCst);
            *last.lock().unwrap() = Some(reason.clone());
        }
    });
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    rt.block_on(async {
        // Someone else reclaims a conflicting lock first (the holder waits for the map).
        let rival = c.nodes[1].session().await;
        let start = Q - 50;
        let tok = token::pack(10, 99);
        let reclaim =
            Request::Reclaim { start, end: start + 10, mode: Mode::Exclusive, token: tok };
        assert_eq!(rival.raw(reclaim).await.unwrap().status, Status::Ok);
        c.publish(2, MOVED);
        let reason = tokio::time::timeout(LIMIT, g.lost()).await.expect("lost in time");
        assert_eq!((reason.partition, reason.cause), (0, LostCause::ReclaimRefused));
        let expected = reason;
        assert!(g.is_lost());
        assert!(matches!(g.check(), Err(ClusterError::Lost(r)) if r == expected));
        eventually(LIMIT, "the callback ran", || async { calls.load(Ordering::SeqCst) > 0 }).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(last.lock().unwrap().clone(), Some(expected.clone()));
        // A callback registered now runs at once; the earlier one does not run again.
        let late = Arc::new(AtomicUsize::new(0));
        g.on_lost({
            let late = late.clone();
            move |_| {
                late.fetch_add(1, Ordering::SeqCst);
            }
        });
        assert_eq!((late.load(Ordering::SeqCst), calls.load(Ordering::SeqCst)), (1, 1));
        // The piece at b was released.
        let probe = c.client(ClusterOptions::default()).await;
        eventually(LIMIT, "the lost guard's other piece is released", || async {
            probe.lock(Q..Q + 100, Mode::Exclusive, Wait::Try).await.is_ok()
        })
        .await;
        match g.unlock().await {
            Err(ClusterError::Lost(r)) => assert_eq!(r, expected),
            other => panic!("unlock of a lost guard: {other:?}"),
        }
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_reclaim_at_an_owner_that_is_already_serving_is_refused() {
    let c = two_nodes();
    let rt = runtime();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let g = rt.block_on(holder.lock(0..100, Mode::Shared, Wait::Forever)).unwrap();
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, None); // no grace period
    let mut owners = MOVED;
    owners[0].1 = rangelock_server::protocol::PartitionState::Serving;
    c.publish(2, owners);
    rt.block_on(async {
        let reason = tokio::time::timeout(LIMIT, g.lost()).await.expect("lost in time");
        assert_eq!((reason.partition, reason.cause), (0, LostCause::ReclaimRefused));
        assert!(matches!(g.unlock().await, Err(ClusterError::Lost(_))));
    });
}

#[test]
fn a_guard_whose_partition_finds_no_new_owner_in_the_window_is_lost() {
    let c = two_nodes();
    let rt = runtime();
    let options =
        ClusterOptions { reclaim_window: Duration::from_millis(300), ..Default::default() };
    let holder = rt.block_on(c.client(options));
    let g = rt.block_on(holder.lock(2 * Q..2 * Q + 1, Mode::Exclusive, Wait::Forever)).unwrap();
    c.nodes[0].own.give_up(2, GiveUp::Moved); // and nobody claims it
    rt.block_on(async {
        let reason = tokio::time::timeout(LIMIT, g.lost()).await.expect("lost in time");
        assert_eq!((reason.partition, reason.cause), (2, LostCause::WindowMissed));
        assert!(reason.to_string().contains("reclaim window"), "{reason}");
    });
}

#[test]
fn a_killed_node_s_locks_are_reclaimed_at_the_node_that_takes_its_partitions_over() {
    let mut c = two_nodes();
    let rt = runtime();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let g = rt.block_on(holder.lock(Q - 10..Q + 10, Mode::Exclusive, Wait::Forever)).unwrap();
    let tokens: Vec<u64> = g.pieces().iter().map(|p| p.token).collect();
    // a dies; b takes partition 0 over (after a's etcd lease, in a real cluster) with a
    // grace period, and publishes the new map. a's sessions are gone with it.
    c.nodes[0].kill();
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    c.nodes[1].own.acquire(2, 21, Some(Duration::from_secs(600)));
    let mut owners = MOVED;
    owners[2] = grace(1, 21);
    c.publish_on(1, 2, owners);
    rt.block_on(async {
        eventually(LIMIT, "the piece of partition 0 is reclaimed at b", || async {
            held(&c.stats(1).await).contains(&(Q - 10, Q, tokens[0]))
        })
        .await;
        assert!(!g.is_lost());
        let now: Vec<u64> = g.pieces().iter().map(|p| p.token).collect();
        assert_eq!(now, tokens);
        assert_eq!(holder.map().revision, 2);
        g.unlock().await.unwrap();
        assert!(held(&c.stats(1).await).is_empty());
    });
}

#[test]
fn a_stopped_node_is_noticed_by_its_silence_and_its_locks_reclaimed_elsewhere() {
    // Node a behind a proxy that can freeze (like SIGSTOP: sockets open, nothing
    // answered), with a short session lease so the client notices within a second.
    let mut c = Cluster::start_with_lease(&["a", "b"], Duration::from_millis(300));
    let rt = runtime();
    let (proxy, frozen) = rt.block_on(freezable_proxy(c.nodes[0].addr.clone()));
    c.nodes[0].addr = proxy;
    c.nodes[0].own.acquire(0, 10, None);
    c.nodes[1].own.acquire(1, 11, None);
    c.publish(1, [serving(0, 10), serving(1, 11), UNOWNED, UNOWNED]);
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let g = rt.block_on(holder.lock(0..100, Mode::Exclusive, Wait::Forever)).unwrap();
    let tok = g.pieces()[0].token;
    frozen.store(true, std::sync::atomic::Ordering::SeqCst);
    // b takes partition 0 over (in a real cluster once a's etcd lease expired) and
    // publishes; a, stopped, cannot even be asked for a map.
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(600)));
    c.publish_on(1, 2, [grace(1, 20), serving(1, 11), UNOWNED, UNOWNED]);
    rt.block_on(async {
        eventually(LIMIT, "the piece is reclaimed at b", || async {
            held(&c.stats(1).await).contains(&(0, 100, tok))
        })
        .await;
        assert!(!g.is_lost());
        assert_eq!(g.pieces()[0].token, tok);
        g.unlock().await.unwrap();
    });
}

/// Two nodes with a 300 ms session lease (a owns partition 0, b the rest) and a client
/// on a single-threaded runtime holding `0..100` at a, for the tests in which the client
/// is "stopped" by blocking that thread: nothing of the client runs meanwhile.
fn lapsing_holder() -> (Cluster, tokio::runtime::Runtime, ClusterClient, ClusterGuard, Duration) {
    let lease = Duration::from_millis(300);
    let c = Cluster::start_with_lease(&["a", "b"], lease);
    c.nodes[0].own.acquire(0, 10, None);
    c.nodes[1].own.acquire(1, 11, None);
    c.nodes[1].own.acquire(2, 12, None);
    c.nodes[1].own.acquire(3, 13, None);
    c.publish(1, [serving(0, 10), serving(1, 11), serving(1, 12), serving(1, 13)]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let g = rt.block_on(holder.lock(0..100, Mode::Exclusive, Wait::Forever)).unwrap();
    (c, rt, holder, g, lease)
}

/// The client process is stopped past its session lease while its node stays alive (the
/// runtime thread is blocked, so no keepalive goes out): the node ends the session and
/// releases the lock. When the client runs again the guard is reported lost at once,
/// by its owner's refusal, never held silently.
#[test]
fn a_guard_whose_session_lapsed_at_a_live_owner_is_lost_not_silently_kept() {
    let (c, rt, _holder, g, lease) = lapsing_holder();
    // "SIGSTOP": nothing of this client runs for three leases.
    rt.block_on(async { std::thread::sleep(3 * lease) });
    let other = rt.block_on(c.client(ClusterOptions::default()));
    rt.block_on(async {
        let reason = tokio::time::timeout(LIMIT, g.lost()).await.expect("lost in time");
        assert_eq!(reason.partition, 0);
        assert!(matches!(g.unlock().await, Err(ClusterError::Lost(_))));
        // The range was indeed free for someone else.
        let h = other.lock(0..100, Mode::Exclusive, Wait::Try).await.unwrap();
        h.unlock().await.unwrap();
    });
}

/// The same, unlocking right after resuming: the release must not hide the loss.
#[test]
fn unlocking_right_after_a_lapse_reports_the_loss() {
    let (_c, rt, _holder, g, lease) = lapsing_holder();
    let r = rt.block_on(async {
        std::thread::sleep(3 * lease);
        g.unlock().await
    });
    assert!(matches!(r, Err(ClusterError::Lost(_))), "{r:?}");
}

/// A lapsed session is not resurrected by a later move: the partition moves to b (in
/// grace, which would accept a reclaim of an earlier epoch) while the client is stopped;
/// the client's guard is lost with `SessionLapsed`, and b sees no reclaim of it.
#[test]
fn a_lapsed_session_is_not_reclaimed_at_a_later_owner() {
    let (c, rt, _holder, g, lease) = lapsing_holder();
    rt.block_on(async { std::thread::sleep(3 * lease) });
    // Meanwhile (the client is stopped), partition 0 moves to b with a grace period.
    c.nodes[0].own.give_up(0, GiveUp::Moved);
    c.nodes[1].own.acquire(0, 20, Some(Duration::from_secs(60)));
    c.publish(2, MOVED);
    rt.block_on(async {
        let reason = tokio::time::timeout(LIMIT, g.lost()).await.expect("lost in time");
        assert_eq!((reason.partition, reason.cause), (0, LostCause::SessionLapsed));
    });
    let st = rt.block_on(c.stats(1));
    assert!(held(&st).iter().all(|(start, ..)| *start != 0), "b reinstalled the lapsed lock");
}

/// Issue 11, item 7: a planned move keeps waiting clients in their places. Two clients
/// wait behind a holder at the old owner; after the move the holder reclaims and both
/// waiters ask again at the new owner, and get the places they had: the earlier waiter
/// is granted first, whatever order the clients came back in.
#[test]
fn a_planned_move_keeps_waiting_clients_in_their_places() {
    let c = two_nodes();
    let rt = runtime();
    let holder = rt.block_on(c.client(ClusterOptions::default()));
    let (w1, w2) = rt.block_on(async {
        (c.client(ClusterOptions::default()).await, c.client(ClusterOptions::default()).await)
    });
    let g = rt.block_on(holder.lock(0..100, Mode::Exclusive, Wait::Forever)).unwrap();
    let first = rt.spawn(async move { w1.lock(0..100, Mode::Exclusive, Wait::Forever).await });
    rt.block_on(eventually(LIMIT, "w1 queued at a", || async {
        c.stats(0).await.entries.len() == 2
    }));
    let second = rt.spawn(async move { w2.lock(50..60, Mode::Shared, Wait::Forever).await });
    rt.block_on(eventually(LIMIT, "w2 queued at a", || async {
        c.stats(0).await.entries.len() == 3
    }));
    let list = c.nodes[0].own.hand_over(0);
    assert_eq!(list.iter().map(|l| l.token == 0).collect::<Vec<_>>(), [false, true, true]);
    let long = Duration::from_secs(600);
    c.nodes[1].own.acquire_handed_over(0, 20, long, long, list);
    c.publish(2, MOVED);
    rt.block_on(eventually(LIMIT, "everyone back at b", || async {
        let e = c.stats(1).await.entries;
        e.len() == 3 && e.iter().all(|e| e.session != 0)
    }));
    let e = rt.block_on(c.stats(1)).entries;
    assert_eq!(
        e.iter().map(|e| (e.start, e.state)).collect::<Vec<_>>(),
        [(0, EntryState::Held), (0, EntryState::Waiting), (50, EntryState::Waiting)],
        "the old order"
    );
    assert_eq!(c.nodes[1].own.take_grace_done(), vec![0], "everyone back: grace can end");
    c.nodes[1].own.end_grace(0);
    assert!(!first.is_finished() && !second.is_finished());
    rt.block_on(g.unlock()).unwrap();
    let g1 = rt.block_on(first).unwrap().unwrap();
    assert_eq!(token::epoch(g1.pieces()[0].token), 20);
    assert!(!second.is_finished(), "w2 waits behind w1, as it did at a");
    drop(g1);
    let g2 = rt.block_on(second).unwrap().unwrap();
    assert_eq!(token::epoch(g2.pieces()[0].token), 20);
}
