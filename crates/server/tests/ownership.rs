//! A cluster node's server side, without etcd: ownership is driven by hand through
//! `Ownership`, as the cluster manager drives it. Every answer is checked exactly.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{lock, Raw};
use rangelock_server::ownership::{Fence, GiveUp, HandoverLock, Ownership, Phase};
use rangelock_server::protocol::*;
use rangelock_server::{EngineKind, Server, ServerConfig};

const X: Mode = Mode::Exclusive;
const S: Mode = Mode::Shared;

/// A node of a 4-partition cluster with an open fence, on engine `engine`.
fn node(engine: EngineKind) -> (Server, Arc<Ownership>, Partitioning) {
    let parts = Partitioning::new(4).unwrap();
    let own = Ownership::new(parts, "a");
    own.fence().extend_until(Fence::now(), Duration::from_secs(600));
    let config = ServerConfig { engine, cluster: Some(own.clone()), ..ServerConfig::ephemeral() };
    (Server::start(config).unwrap(), own, parts)
}

fn map(parts: Partitioning, owners: &[(Option<u16>, u64)]) -> ClusterMap {
    let nodes = vec![
        NodeInfo::new("a", "127.0.0.1:1").unwrap(),
        NodeInfo::new("b", "127.0.0.1:2").unwrap(),
    ];
    let owners = owners
        .iter()
        .map(|(n, e)| PartitionOwner {
            node: *n,
            state: if n.is_some() { PartitionState::Serving } else { PartitionState::Unowned },
            epoch: *e,
        })
        .collect();
    ClusterMap::new(7, parts, nodes, owners).unwrap()
}

fn table_engines() -> [EngineKind; 3] {
    [EngineKind::Combiner, EngineKind::TreeMutex, EngineKind::TreeSingle]
}

#[test]
fn the_rangelock_engine_cannot_run_a_cluster_node() {
    let own = Ownership::new(Partitioning::new(2).unwrap(), "a");
    let config = ServerConfig {
        engine: EngineKind::RangeLock,
        cluster: Some(own),
        ..ServerConfig::ephemeral()
    };
    let e = Server::start(config).unwrap_err();
    assert!(e.to_string().contains("cannot run a cluster node"), "{e}");
}

#[test]
fn requests_outside_owned_partitions_are_refused_with_where_to_go() {
    for engine in table_engines() {
        let (server, own, parts) = node(engine);
        let mut c = Raw::connect(server.tcp_addr().unwrap());
        // No map yet: MAP says the node is not ready (FENCED), NOT_OWNER has no hint.
        assert_eq!(c.call(1, Request::Map).status, Status::Fenced);
        let r = c.call(2, lock(0, 10, X, Wait::Try));
        assert_eq!((r.status, r.value), (Status::NotOwner, 0));
        assert_eq!(r.owner, Some(OwnerHint::default()));
        own.set_map(map(parts, &[(Some(1), 99), (Some(0), 5), (None, 0), (None, 0)]));
        let r = c.call(3, lock(0, 10, X, Wait::Try));
        assert_eq!((r.status, r.value), (Status::NotOwner, 99), "{engine:?}");
        assert_eq!(r.owner, Some(OwnerHint::new("b", "127.0.0.1:2").unwrap()));
        let m = c.call(4, Request::Map);
        assert_eq!(m.status, Status::Ok);
        assert_eq!(m.map.unwrap().owners[0].epoch, 99);
        // A range across a boundary: where to split.
        own.acquire(0, 5, None);
        let b = parts.start(1);
        let r = c.call(5, lock(b - 1, b + 1, X, Wait::Try));
        assert_eq!((r.status, r.value), (Status::CrossesPartition, b));
        let r = c.call(6, Request::Reclaim { start: 0, end: 1, mode: X, token: 1 });
        assert_eq!(r.status, Status::ReclaimRefused, "no grace period: nothing to reclaim");
        // The fence closed: FENCED before anything else.
        own.fence().close();
        assert_eq!(c.call(7, lock(0, 10, X, Wait::Try)).status, Status::Fenced);
        assert_eq!(c.call(8, lock(b - 1, b + 1, X, Wait::Try)).status, Status::Fenced);
        server.shutdown();
    }
}

#[test]
fn tokens_carry_the_epoch_and_strictly_increase_across_owners() {
    for engine in table_engines() {
        let (server, own, _) = node(engine);
        let mut c = Raw::connect(server.tcp_addr().unwrap());
        own.acquire(0, 40, None);
        let t1 = c.call(1, lock(0, 10, X, Wait::Try));
        assert_eq!((t1.status, t1.value), (Status::Ok, token::pack(40, 1)));
        assert_eq!(c.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
        let t2 = c.call(3, lock(0, 10, X, Wait::Try)).value;
        assert_eq!(t2, token::pack(40, 2));
        c.call(4, Request::Unlock { target: 3 });
        // A later owner (failover or move) has a larger epoch: every token beats the old.
        own.give_up(0, GiveUp::Moved);
        own.acquire(0, 41, None);
        let t3 = c.call(5, lock(0, 10, X, Wait::Try)).value;
        assert_eq!(t3, token::pack(41, 1));
        assert!(t3 > t2);
        // Partitions count separately.
        own.acquire(2, 43, None);
        let p2 = Partitioning::new(4).unwrap().start(2);
        assert_eq!(c.call(6, lock(p2, p2 + 1, S, Wait::Try)).value, token::pack(43, 1));
        server.shutdown();
    }
}

#[test]
fn grace_admits_only_reclaims_of_earlier_epochs_then_grants_above_them() {
    for engine in table_engines() {
        let (server, own, _) = node(engine);
        let addr = server.tcp_addr().unwrap();
        let (mut a, mut b) = (Raw::connect(addr), Raw::connect(addr));
        own.acquire(0, 50, Some(Duration::from_secs(600)));
        assert_eq!(
            own.phase(0),
            Phase::Grace {
                epoch: 50,
                until: match own.phase(0) {
                    Phase::Grace { until, .. } => until,
                    p => panic!("{p:?}"),
                },
                requeue_until: None,
            }
        );
        let r = a.call(1, lock(0, 10, X, Wait::Forever));
        assert_eq!(r.status, Status::InGrace, "{engine:?}");
        assert!(r.value > 590_000 && r.value <= 600_000, "ms left: {}", r.value);
        let old = token::pack(30, 7);
        let r = a.call(2, Request::Reclaim { start: 0, end: 10, mode: X, token: old });
        assert_eq!((r.status, r.value), (Status::Ok, old));
        // A conflicting reclaim (someone else claims to have held an overlap): refused.
        let r = b.call(1, Request::Reclaim { start: 5, end: 15, mode: S, token: old + 1 });
        assert_eq!(r.status, Status::ReclaimRefused);
        // A token of this epoch or later was never granted by an earlier owner.
        let r =
            b.call(2, Request::Reclaim { start: 20, end: 30, mode: X, token: token::pack(50, 1) });
        assert_eq!(r.status, Status::ReclaimRefused);
        // Shared reclaims coexist.
        let r =
            b.call(3, Request::Reclaim { start: 20, end: 30, mode: S, token: token::pack(29, 1) });
        assert_eq!(r.status, Status::Ok);
        let r =
            a.call(3, Request::Reclaim { start: 25, end: 35, mode: S, token: token::pack(29, 2) });
        assert_eq!(r.status, Status::Ok);
        own.end_grace(0);
        assert_eq!(own.phase(0), Phase::Serving { epoch: 50 });
        // After grace: reclaims refused, locks queue behind the reclaimed holder and get
        // a token above the reclaimed one.
        let r = b.call(4, Request::Reclaim { start: 40, end: 41, mode: X, token: 1 });
        assert_eq!(r.status, Status::ReclaimRefused);
        b.send(5, lock(0, 10, X, Wait::Forever));
        assert_eq!(a.call(4, Request::Unlock { target: 2 }).status, Status::Ok);
        let g = b.recv().unwrap();
        assert_eq!((g.id, g.status, g.value), (5, Status::Ok, token::pack(50, 1)));
        assert!(g.value > old);
        server.shutdown();
    }
}

#[test]
fn giving_up_answers_waiters_and_notifies_holders() {
    for engine in table_engines() {
        let (server, own, _) = node(engine);
        let addr = server.tcp_addr().unwrap();
        let (mut a, mut b) = (Raw::connect(addr), Raw::connect(addr));
        own.acquire(0, 60, None);
        own.acquire(1, 61, None);
        assert_eq!(a.call(1, lock(0, 10, X, Wait::Forever)).status, Status::Ok);
        b.send(1, lock(5, 6, S, Wait::Forever)); // waits behind a
        let p1 = Partitioning::new(4).unwrap().start(1);
        assert_eq!(b.call(2, lock(p1, p1 + 1, X, Wait::Try)).status, Status::Ok);
        own.give_up(0, GiveUp::Moved);
        // The waiter is answered, the holder notified (once, naming the partition).
        let w = b.recv().unwrap();
        assert_eq!((w.id, w.status), (1, Status::NotOwner), "{engine:?}");
        let n = a.recv().unwrap();
        assert!(n.is_notice());
        assert_eq!((n.status, n.value), (Status::NotOwner, 0));
        // The dropped lock is gone: its unlock is idempotent; new locks are refused.
        assert_eq!(a.call(2, Request::Unlock { target: 1 }).status, Status::AlreadyReleased);
        assert_eq!(a.call(3, lock(0, 10, X, Wait::Try)).status, Status::NotOwner);
        // Partition 1 is untouched.
        assert_eq!(a.call(4, lock(p1, p1 + 1, X, Wait::Try)).status, Status::WouldBlock);
        // Losing the lease: FENCED notices.
        own.give_up(1, GiveUp::Fenced);
        let n = b.recv().unwrap();
        assert_eq!((n.status, n.value), (Status::Fenced, 1));
        server.shutdown();
    }
}

#[test]
fn a_node_whose_fence_closed_grants_nothing_even_to_queued_waiters() {
    for engine in table_engines() {
        let (server, own, _) = node(engine);
        let addr = server.tcp_addr().unwrap();
        let (mut a, mut b) = (Raw::connect(addr), Raw::connect(addr));
        own.acquire(0, 70, None);
        assert_eq!(a.call(1, lock(0, 10, X, Wait::Forever)).status, Status::Ok);
        b.send(1, lock(0, 10, X, Wait::Forever));
        // The fence passes its deadline (as when the node was paused past its lease).
        own.fence().extend_until(Fence::now(), Duration::from_millis(200));
        let deadline = Instant::now() + Duration::from_secs(5);
        while own.fence().is_open() {
            assert!(Instant::now() < deadline);
            std::thread::yield_now();
        }
        assert_eq!(a.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
        assert_eq!(a.call(3, lock(20, 30, X, Wait::Try)).status, Status::Fenced);
        // The waiter was not granted; the manager's give-up answers it.
        own.give_up(0, GiveUp::Fenced);
        let w = b.recv().unwrap();
        assert_eq!((w.id, w.status), (1, Status::Fenced), "{engine:?}");
        server.shutdown();
    }
}

/// Seed 2, Fig. 8: once `give_up` returns, nothing more is granted on the partition,
/// however many requests were in flight. Clients hammer the partition while it is given
/// up; the grant counter must not move afterwards.
#[test]
fn no_grant_after_give_up_returns() {
    for engine in table_engines() {
        let (server, own, _) = node(engine);
        let addr = server.tcp_addr().unwrap();
        own.acquire(0, 80, None);
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut c = Raw::connect(addr);
                    let mut id = 1;
                    let mut oks = 0u64;
                    // A holder may be sent a NOTICE when the partition is given up.
                    let call = |c: &mut Raw, id, req| {
                        c.send(id, req);
                        loop {
                            let r = c.recv().unwrap();
                            if !r.is_notice() {
                                assert_eq!(r.id, id);
                                return r;
                            }
                        }
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let r = call(&mut c, id, lock(w, w + 1, X, Wait::Try));
                        if r.status == Status::Ok {
                            oks += 1;
                            call(&mut c, id + 1, Request::Unlock { target: id });
                        }
                        id += 2;
                    }
                    oks
                })
            })
            .collect();
        let mut probe = Raw::connect(addr);
        let grants = |c: &mut Raw, id| {
            c.call(id, Request::Stats { max_entries: 0 }).stats.unwrap().counters.grants
        };
        // Let the workers get going, then give the partition up under load.
        let deadline = Instant::now() + Duration::from_secs(10);
        while grants(&mut probe, 1) < 300 {
            assert!(Instant::now() < deadline);
        }
        own.give_up(0, GiveUp::Moved);
        let after = grants(&mut probe, 2);
        // More attempts go on; none is granted.
        let mut c = Raw::connect(addr);
        for i in 0..200 {
            assert_eq!(c.call(i, lock(10, 11, X, Wait::Try)).status, Status::NotOwner);
        }
        assert_eq!(grants(&mut probe, 3), after, "{engine:?}: a grant after give_up returned");
        stop.store(true, Ordering::Relaxed);
        let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(total >= 300);
        server.shutdown();
    }
}

/// The entries of `c`'s server on `[start, end)`, as (session, start, end, state), in
/// arrival order.
fn entries(c: &mut Raw, id: u64) -> Vec<StatsEntry> {
    c.call(id, Request::Stats { max_entries: 100 }).stats.unwrap().entries
}

/// Two nodes of one cluster: a planned move from `a` to `b` of partition 0, by hand (as
/// the manager does it, without etcd).
fn two_nodes(engine: EngineKind) -> ((Server, Arc<Ownership>), (Server, Arc<Ownership>)) {
    let (sa, a, _) = node(engine);
    let (sb, b, _) = node(engine);
    a.acquire(0, 60, None);
    ((sa, a), (sb, b))
}

/// Issue 11, item 7: a planned move hands held *and queued* locks over, and a waiter
/// that asks again at the new owner gets its old place back, however late it comes
/// compared with newcomers and with the other waiters.
#[test]
fn a_planned_move_keeps_every_waiter_in_its_place() {
    for engine in table_engines() {
        let ((sa, a), (sb, b)) = two_nodes(engine);
        let at_a = sa.tcp_addr().unwrap();
        let (mut h, mut w1, mut w2) = (Raw::connect(at_a), Raw::connect(at_a), Raw::connect(at_a));
        let held = h.call(1, lock(0, 10, X, Wait::Forever));
        assert_eq!(held.status, Status::Ok);
        w1.queue(1, lock(0, 10, X, Wait::Forever)); // behind h
        w2.send(1, lock(5, 8, S, Wait::Forever)); // behind w1
        let shared = w2.call(2, lock(20, 30, S, Wait::Forever));
        let list = a.hand_over(0);
        let expected = [
            HandoverLock { name: None, start: 0, end: 10, mode: X, token: held.value },
            HandoverLock { name: None, start: 0, end: 10, mode: X, token: 0 },
            HandoverLock { name: None, start: 5, end: 8, mode: S, token: 0 },
            HandoverLock { name: None, start: 20, end: 30, mode: S, token: shared.value },
        ];
        assert_eq!(list, expected, "{engine:?}: every entry, in arrival order");
        assert_eq!(w1.recv().unwrap().status, Status::NotOwner);
        assert_eq!(w2.recv().unwrap().status, Status::NotOwner);
        assert!(h.recv().unwrap().is_notice());

        b.acquire_handed_over(0, 61, Duration::from_secs(600), Duration::from_secs(600), list);
        let at_b = sb.tcp_addr().unwrap();
        let (mut h, mut w1, mut w2, mut n) =
            (Raw::connect(at_b), Raw::connect(at_b), Raw::connect(at_b), Raw::connect(at_b));
        // A newcomer in the grace period: no place to take, IN_GRACE.
        assert_eq!(n.call(1, lock(0, 3, X, Wait::Forever)).status, Status::InGrace);
        // The waiters come back in the wrong order, before the holders reclaim.
        w2.send(3, lock(5, 8, S, Wait::Forever));
        let e = entries(&mut w2, 4);
        assert_eq!(e.len(), 4, "{engine:?}: the four placeholders, nothing more: {e:?}");
        assert!(e[2].session != 0 && e[2].state == EntryState::Waiting, "w2 in place: {e:?}");
        assert_eq!([e[0].session, e[1].session, e[3].session], [0, 0, 0]);
        assert!(b.take_grace_done().is_empty(), "not everyone is back");
        w1.queue(3, lock(0, 10, X, Wait::Forever));
        let r = h.call(2, Request::Reclaim { start: 0, end: 10, mode: X, token: held.value });
        assert_eq!((r.status, r.value), (Status::Ok, held.value));
        let r = w2.call(5, Request::Reclaim { start: 20, end: 30, mode: S, token: shared.value });
        assert_eq!(r.status, Status::Ok);
        // Everyone is back: the grace period may end at once.
        assert_eq!(b.take_grace_done(), vec![0], "{engine:?}");
        b.end_grace(0);
        n.queue(2, lock(0, 10, S, Wait::Forever)); // after everyone
        assert_eq!(n.call(4, lock(0, 10, X, Wait::Try)).status, Status::WouldBlock);
        // h goes: w1 (the earlier waiter) is granted, not w2 nor the newcomer.
        assert_eq!(h.call(3, Request::Unlock { target: 2 }).status, Status::Ok);
        let g1 = w1.recv().unwrap();
        assert_eq!((g1.id, g1.status), (3, Status::Ok), "{engine:?}");
        assert_eq!(token::epoch(g1.value), 61);
        let waiting: Vec<u64> = entries(&mut n, 5)
            .iter()
            .filter(|e| e.state == EntryState::Waiting)
            .map(|e| e.start)
            .collect();
        assert_eq!(waiting, vec![5, 0], "w2, then the newcomer");
        // w1 goes: w2 and the newcomer (both shared) are granted.
        assert_eq!(w1.call(5, Request::Unlock { target: 3 }).status, Status::Ok);
        let g2 = w2.recv().unwrap();
        assert_eq!((g2.id, g2.status), (3, Status::Ok));
        let gn = n.recv().unwrap();
        assert_eq!((gn.id, gn.status), (2, Status::Ok));
        assert!(g2.value > g1.value && gn.value > g1.value);
        sa.shutdown();
        sb.shutdown();
    }
}

/// Waiters that do not come back within the requeue window lose their places (whoever
/// waited behind them moves up); holders keep theirs to the end of the grace period;
/// placeholders nobody claimed are gone when it ends, and never granted.
#[test]
fn unclaimed_places_are_given_up_at_the_requeue_window_then_the_grace_end() {
    for engine in table_engines() {
        let ((sa, a), (sb, b)) = two_nodes(engine);
        let at_a = sa.tcp_addr().unwrap();
        let (mut h, mut w1, mut w2) = (Raw::connect(at_a), Raw::connect(at_a), Raw::connect(at_a));
        let h1 = h.call(1, lock(0, 10, X, Wait::Forever));
        let h2 = h.call(2, lock(40, 50, X, Wait::Forever));
        w1.queue(1, lock(0, 10, S, Wait::Forever));
        w2.queue(1, lock(40, 50, X, Wait::Forever));
        let list = a.hand_over(0);
        assert_eq!(list.len(), 4);
        b.acquire_handed_over(0, 61, Duration::from_secs(600), Duration::from_secs(600), list);
        assert!(matches!(b.phase(0), Phase::Grace { requeue_until: Some(_), .. }));
        let at_b = sb.tcp_addr().unwrap();
        let (mut h, mut w2) = (Raw::connect(at_b), Raw::connect(at_b));
        // Only h's first lock and w2 come back.
        let r = h.call(1, Request::Reclaim { start: 0, end: 10, mode: X, token: h1.value });
        assert_eq!(r.status, Status::Ok);
        w2.queue(1, lock(40, 50, X, Wait::Forever));
        assert!(b.take_grace_done().is_empty());
        // The requeue window closes: w1's place is gone, LOCKs get IN_GRACE again.
        b.end_requeue(0);
        assert!(matches!(b.phase(0), Phase::Grace { requeue_until: None, .. }));
        assert_eq!(w2.call(3, lock(0, 10, S, Wait::Forever)).status, Status::InGrace);
        assert!(b.take_grace_done().is_empty(), "a holder is still out");
        let e = entries(&mut w2, 4);
        assert_eq!(e.len(), 3, "{engine:?}: {e:?}");
        // The grace period ends with h's second lock unclaimed: its placeholder goes and
        // w2, which waited behind it, is granted.
        b.end_grace(0);
        let g = w2.recv().unwrap();
        assert_eq!((g.id, g.status), (1, Status::Ok), "{engine:?}");
        assert_eq!(token::epoch(g.value), 61);
        let e = entries(&mut w2, 5);
        assert!(e.iter().all(|e| e.session != 0 && e.state == EntryState::Held), "{e:?}");
        assert_eq!(
            h.call(2, Request::Reclaim { start: 40, end: 50, mode: X, token: h2.value }).status,
            Status::ReclaimRefused
        );
        sa.shutdown();
        sb.shutdown();
    }
}

/// A partition given up again during a handover grace: placeholders go quietly, the
/// clients that took theirs over are answered as usual.
#[test]
fn giving_up_during_a_handover_grace_drops_placeholders_and_answers_requeued_waiters() {
    for engine in table_engines() {
        let ((sa, a), (sb, b)) = two_nodes(engine);
        let at_a = sa.tcp_addr().unwrap();
        let (mut h, mut w) = (Raw::connect(at_a), Raw::connect(at_a));
        assert_eq!(h.call(1, lock(0, 10, X, Wait::Forever)).status, Status::Ok);
        w.queue(1, lock(0, 10, X, Wait::Forever));
        let list = a.hand_over(0);
        b.acquire_handed_over(0, 61, Duration::from_secs(600), Duration::from_secs(600), list);
        let mut w = Raw::connect(sb.tcp_addr().unwrap());
        w.queue(1, lock(0, 10, X, Wait::Forever));
        b.give_up(0, GiveUp::Fenced);
        let r = w.recv().unwrap();
        assert_eq!((r.id, r.status), (1, Status::Fenced), "{engine:?}");
        let stats = w.call(3, Request::Stats { max_entries: 10 }).stats.unwrap();
        assert!(stats.entries.is_empty(), "{engine:?}: {:?}", stats.entries);
        assert_eq!((stats.counters.holders, stats.counters.waiters), (0, 0));
        sa.shutdown();
        sb.shutdown();
    }
}

/// `WATCH_MAP` (PROTOCOL.md §7.7): the session is told of each change of the node's map
/// (nodes, owners, states, epochs) with its revision, and of nothing else; a session that
/// did not ask is told nothing, and a server that is not a cluster node refuses.
#[test]
fn a_session_that_watches_the_map_is_told_of_each_change_and_only_then() {
    let (server, own, parts) = node(EngineKind::Combiner);
    let addr = server.tcp_addr().unwrap();
    let (mut watcher, mut other) = (Raw::connect(addr), Raw::connect(addr));
    let r = watcher.call(1, Request::WatchMap);
    assert_eq!((r.op, r.status, r.value), (op::WATCH_MAP, Status::Ok, 0), "no map yet");
    let owners = [(Some(1), 99), (Some(0), 5), (None, 0), (None, 0)];
    own.set_map(map(parts, &owners));
    let n = watcher.recv().unwrap();
    assert!(n.is_notice(), "{n:?}");
    assert_eq!((n.status, n.value), (Status::MapChanged, 7));
    // Asking again answers the current revision and changes nothing.
    let r = watcher.call(2, Request::WatchMap);
    assert_eq!((r.status, r.value), (Status::Ok, 7));
    // A later revision with the same owners: nothing to tell (the keepalive's answer is
    // the next frame).
    let mut same = map(parts, &owners);
    same.revision = 8;
    own.set_map(same);
    assert_eq!(watcher.call(3, Request::Keepalive).status, Status::Ok);
    // A grace period ends: the state changes, not the revision.
    let mut graced = map(parts, &owners);
    graced.revision = 8;
    graced.owners[1].state = PartitionState::Grace;
    own.set_map(graced);
    assert_eq!(
        watcher.recv().map(|n| (n.op, n.status, n.value)),
        Some((op::NOTICE, Status::MapChanged, 8))
    );
    own.set_map(ClusterMap { revision: 8, ..map(parts, &owners) });
    assert_eq!(watcher.recv().map(|n| (n.status, n.value)), Some((Status::MapChanged, 8)));
    // A partition changes hands.
    own.set_map(ClusterMap {
        revision: 9,
        ..map(parts, &[(Some(0), 100), (Some(0), 5), (None, 0), (None, 0)])
    });
    assert_eq!(watcher.recv().map(|n| (n.status, n.value)), Some((Status::MapChanged, 9)));
    // The other session never asked: its first frame is its keepalive's answer.
    assert_eq!(other.call(1, Request::Keepalive).status, Status::Ok);
    server.shutdown();

    let single = Server::start(ServerConfig::ephemeral()).unwrap();
    let r = Raw::connect(single.tcp_addr().unwrap()).call(1, Request::WatchMap);
    assert_eq!((r.op, r.status), (op::WATCH_MAP, Status::NotClustered));
    single.shutdown();
}

/// A named lock on `name`.
fn named(name: &[u8], start: u64, end: u64, mode: Mode, wait: Wait) -> Request<'_> {
    Request::LockNamed { start, end, mode, wait, name }
}

/// Two names of the 4-partition cluster: the first's stripe 0 lies in partition 0, the
/// second's in partition 1.
fn names_in_0_and_1(parts: Partitioning) -> (Vec<u8>, Vec<u8>) {
    let find = |p: u32| {
        (0..)
            .map(|i| format!("res-{i}").into_bytes())
            .find(|n| parts.partition_of_named(name_hash(n), 0) == p)
            .unwrap()
    };
    (find(0), find(1))
}

/// Cluster nodes serve named locks in the partition of the name's stripe: owned ones are
/// granted with the partition's tokens, others are refused NOT_OWNER, a range across a
/// stripe CROSSES_PARTITION at the stripe's end; names do not conflict with each other
/// nor with the unnamed resource.
#[test]
fn named_locks_are_placed_by_the_stripe_of_their_name() {
    for engine in table_engines() {
        let (server, own, parts) = node(engine);
        let (n0, n1) = names_in_0_and_1(parts);
        let mut c = Raw::connect(server.tcp_addr().unwrap());
        own.acquire(0, 40, None);
        let r = c.call(1, named(&n0, 0, 10, X, Wait::Try));
        assert_eq!((r.op, r.status, r.value), (op::LOCK, Status::Ok, token::pack(40, 1)));
        // The same units of the unnamed resource, and of the name in partition 1 (not
        // owned): a grant, and NOT_OWNER.
        assert_eq!(c.call(2, lock(0, 10, X, Wait::Try)).value, token::pack(40, 2));
        let r = c.call(3, named(&n1, 0, 10, X, Wait::Try));
        assert_eq!((r.op, r.status), (op::LOCK, Status::NotOwner), "{engine:?}");
        // The name's next stripe lies in partition 1: where to split.
        let s = 1u64 << NAME_STRIPE_SHIFT;
        let r = c.call(4, named(&n0, s - 1, s + 1, X, Wait::Try));
        assert_eq!((r.status, r.value), (Status::CrossesPartition, s));
        // The same name conflicts.
        let r = c.call(5, named(&n0, 5, 6, S, Wait::Try));
        assert_eq!(r.status, Status::WouldBlock);
        // n1's stripe 3 is in partition 0 (1 + 3 = 4 = 0 mod 4): served here.
        let r = c.call(6, named(&n1, 3 * s, 3 * s + 1, X, Wait::Try));
        assert_eq!((r.status, r.value), (Status::Ok, token::pack(40, 3)), "{engine:?}");
        // Giving partition 0 up notifies the holder and drops its named locks too.
        own.give_up(0, GiveUp::Moved);
        assert!(c.recv().unwrap().is_notice());
        own.acquire(0, 41, None);
        let r = c.call(7, named(&n0, 0, 10, X, Wait::Try));
        assert_eq!((r.status, r.value), (Status::Ok, token::pack(41, 1)), "{engine:?}: gone");
        server.shutdown();
    }
}

/// A planned move hands named holders and waiters over with their names: the new owner
/// reclaims a named holder with RECLAIM_NAMED, keeps a named waiter's place, and refuses
/// a reclaim under another name; after a failover (no handover) RECLAIM_NAMED reinstates
/// a named lock in the grace period, and the same name's conflicting lock then waits.
#[test]
fn named_locks_move_and_are_reclaimed_by_name() {
    for engine in table_engines() {
        let ((sa, a), (sb, b)) = two_nodes(engine);
        let (n0, _) = names_in_0_and_1(Partitioning::new(4).unwrap());
        let at_a = sa.tcp_addr().unwrap();
        let (mut h, mut w) = (Raw::connect(at_a), Raw::connect(at_a));
        let held = h.call(1, named(&n0, 0, 10, X, Wait::Forever));
        assert_eq!(held.status, Status::Ok);
        w.queue(1, named(&n0, 2, 4, S, Wait::Forever));
        let list = a.hand_over(0);
        let name: Option<Arc<[u8]>> = Some(Arc::from(n0.as_slice()));
        let expected = [
            HandoverLock { name: name.clone(), start: 0, end: 10, mode: X, token: held.value },
            HandoverLock { name: name.clone(), start: 2, end: 4, mode: S, token: 0 },
        ];
        assert_eq!(list, expected, "{engine:?}");
        assert_eq!(w.recv().unwrap().status, Status::NotOwner);
        assert!(h.recv().unwrap().is_notice());

        b.acquire_handed_over(0, 61, Duration::from_secs(600), Duration::from_secs(600), list);
        let at_b = sb.tcp_addr().unwrap();
        let (mut h, mut w, mut n) = (Raw::connect(at_b), Raw::connect(at_b), Raw::connect(at_b));
        // The unnamed resource's same range and mode is not the named holder's.
        let r = n.call(1, Request::Reclaim { start: 0, end: 10, mode: X, token: held.value });
        assert_eq!(r.status, Status::ReclaimRefused, "{engine:?}");
        w.queue(2, named(&n0, 2, 4, S, Wait::Forever));
        let reclaim =
            Request::ReclaimNamed { start: 0, end: 10, mode: X, token: held.value, name: &n0 };
        let r = h.call(2, reclaim);
        assert_eq!((r.op, r.status, r.value), (op::RECLAIM, Status::Ok, held.value));
        assert_eq!(b.take_grace_done(), vec![0], "{engine:?}: both came back");
        b.end_grace(0);
        assert_eq!(n.call(3, named(&n0, 0, 1, X, Wait::Try)).status, Status::WouldBlock);
        assert_eq!(h.call(3, Request::Unlock { target: 2 }).status, Status::Ok);
        let g = w.recv().unwrap();
        assert_eq!((g.id, g.status, token::epoch(g.value)), (2, Status::Ok, 61), "{engine:?}");

        // A failover: b's partition 0 goes to a (no handover), held named locks are
        // reclaimed by name.
        b.give_up(0, GiveUp::Fenced);
        assert!(w.recv().unwrap().is_notice());
        a.acquire(0, 70, Some(Duration::from_secs(600)));
        let mut w = Raw::connect(at_a);
        let mut other = Raw::connect(at_a);
        assert_eq!(other.call(1, named(&n0, 2, 4, X, Wait::Try)).status, Status::InGrace);
        let reclaim =
            Request::ReclaimNamed { start: 2, end: 4, mode: S, token: g.value, name: &n0 };
        assert_eq!(w.call(1, reclaim).status, Status::Ok, "{engine:?}");
        // A conflicting reclaim of the same name is refused; of another name, accepted.
        let clash = Request::ReclaimNamed { start: 3, end: 5, mode: X, token: g.value, name: &n0 };
        assert_eq!(other.call(2, clash).status, Status::ReclaimRefused);
        let elsewhere =
            Request::ReclaimNamed { start: 3, end: 5, mode: X, token: g.value, name: b"zz" };
        let zz = Partitioning::new(4).unwrap().partition_of_named(name_hash(b"zz"), 3);
        let r = other.call(3, elsewhere);
        if zz == 0 {
            assert_eq!(r.status, Status::Ok);
        } else {
            assert_eq!(r.status, Status::NotOwner);
        }
        a.end_grace(0);
        other.queue(4, named(&n0, 0, 10, X, Wait::Forever));
        assert_eq!(w.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
        let g = other.recv().unwrap();
        assert_eq!((g.id, g.status, token::epoch(g.value)), (4, Status::Ok, 70), "{engine:?}");
        sa.shutdown();
        sb.shutdown();
    }
}
