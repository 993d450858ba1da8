//! Session semantics: release on close and on lease expiry, fencing tokens, idempotent
//! unlock, limits and bad input answered with errors, poll mode, Unix sockets.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{lock, Raw};
use rangelock_client::{
    AsyncClient, Client, ClientError, Endpoint, EntryState, LossCause, Mode, Wait,
};
use rangelock_server::protocol::*;
use rangelock_server::{EngineKind, Server, ServerConfig};

fn server(f: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut c = ServerConfig::ephemeral();
    f(&mut c);
    Server::start(c).unwrap()
}

#[test]
fn closing_a_session_releases_its_locks_and_grants_waiters() {
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let ep = Endpoint::from(srv.tcp_addr().unwrap());
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        let b = Client::connect(&ep).unwrap();
        assert_eq!(a.call(1, lock(0, 100, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
        assert_eq!(a.call(2, lock(200, 300, Mode::Shared, Wait::Forever)).status, Status::Ok);
        assert!(matches!(b.lock(50..60, Mode::Shared, Wait::Try), Err(ClientError::WouldBlock)));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.lock_exclusive(0..300).map(|g| g.token()));
            // Whether b queued before or after, closing a's connection (no UNLOCK) must
            // let it through.
            drop(a);
            let token = waiter.join().unwrap().unwrap();
            assert!(token > 2);
        });
        let st = b.stats(10).unwrap();
        assert_eq!(st.counters.released_by_close, 2);
        assert_eq!(st.counters.holders, 0, "b's guard was dropped at the end of the scope");
        drop(b);
        srv.shutdown();
    }
}

#[test]
fn an_expired_lease_releases_the_session() {
    let srv = server(|c| c.lease = Duration::from_millis(300));
    let addr = srv.tcp_addr().unwrap();
    let mut silent = Raw::connect(addr);
    assert_eq!(silent.hello.lease_ms, 300);
    let r = silent.call(1, lock(0, 10, Mode::Exclusive, Wait::Forever));
    assert_eq!(r.status, Status::Ok);
    // The blocking client's keepalive task keeps its own session alive meanwhile.
    let other = Client::connect(&Endpoint::from(addr)).unwrap();
    let g = other.lock_exclusive(5..6).unwrap(); // granted once `silent` expires
    assert!(g.token() > r.value);
    // The server says why it ended the session (version 4, PROTOCOL.md §2.1).
    assert_eq!(silent.end_reason(), Ok(Some(EndReason::LeaseExpired)));
    let st = other.stats(10).unwrap();
    assert_eq!(st.counters.released_by_close, 1);
    drop(g);
    drop(other);
    srv.shutdown();
}

#[test]
fn a_version_3_session_is_served_and_gets_no_end_notice() {
    let srv = server(|c| c.lease = Duration::from_millis(300));
    let addr = srv.tcp_addr().unwrap();
    let mut old = Raw::connect_version(addr, MIN_VERSION);
    assert_eq!((old.hello.version, MIN_VERSION), (3, 3));
    assert_eq!(old.call(1, lock(0, 10, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
    // Silent for a lease: the session ends with no notice, as before version 4.
    assert_eq!(old.end_reason(), Ok(None));
    let mut new = Raw::connect(addr);
    assert_eq!(new.hello.version, VERSION);
    assert_eq!(new.end_reason(), Ok(Some(EndReason::LeaseExpired)));
    srv.shutdown();
}

#[test]
fn a_client_learns_that_the_server_shut_down() {
    let srv = server(|_| {});
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = AsyncClient::connect(&ep).await.unwrap();
        let _g = c.lock_exclusive(0..10).await.unwrap();
        let (srv, c) = (srv, c);
        tokio::task::spawn_blocking(move || srv.shutdown()).await.unwrap();
        c.lost().await;
        let loss = c.loss().unwrap();
        assert_eq!(loss.cause, LossCause::SessionEnded(EndReason::Shutdown), "{loss:?}");
        assert_eq!(loss.to_string(), "session ended by the server: the server is shutting down");
        assert!(!loss.lease_lapsed());
    });
}

#[test]
fn fencing_tokens_strictly_increase_across_sessions() {
    let srv = server(|_| {});
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    let a = Client::connect(&ep).unwrap();
    let b = Client::connect(&ep).unwrap();
    let mut last = 0;
    for i in 0..50u64 {
        let c = if i % 2 == 0 { &a } else { &b };
        let g = if i % 3 == 0 {
            c.lock_shared(0..10).unwrap()
        } else {
            c.lock_exclusive(i..i + 1).unwrap()
        };
        assert!(g.token() > last);
        last = g.token();
    }
    drop((a, b));
    srv.shutdown();
}

#[test]
fn bad_requests_get_errors_and_do_not_disturb_other_sessions() {
    for engine in EngineKind::ALL {
        bad_requests(engine);
    }
}

fn bad_requests(engine: EngineKind) {
    let srv = server(|c| {
        c.max_locks_per_session = 4;
        c.engine = engine;
    });
    let addr = srv.tcp_addr().unwrap();
    let mut bystander = Raw::connect(addr);
    let held = bystander.call(1, lock(1000, 2000, Mode::Exclusive, Wait::Forever));
    assert_eq!(held.status, Status::Ok);

    let mut c = Raw::connect(addr);
    // Idempotent unlock.
    assert_eq!(c.call(1, lock(0, 10, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
    assert_eq!(c.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
    assert_eq!(c.call(3, Request::Unlock { target: 1 }).status, Status::AlreadyReleased);
    assert_eq!(c.call(4, Request::Unlock { target: 99 }).status, Status::NotHeld);
    // Unlocking another session's lock id is just "not held" here.
    assert_eq!(c.call(5, Request::Unlock { target: held.id }).status, Status::AlreadyReleased);
    assert_eq!(c.call(6, Request::Cancel { target: 77 }).status, Status::NotHeld);
    // Duplicate id of a live lock.
    assert_eq!(c.call(7, lock(0, 10, Mode::Shared, Wait::Forever)).status, Status::Ok);
    assert_eq!(c.call(7, lock(20, 30, Mode::Shared, Wait::Forever)).status, Status::DuplicateId);
    assert_eq!(c.call(8, Request::Cancel { target: 7 }).status, Status::NotWaiting);
    // Conflicts with the bystander: try and timeout.
    assert_eq!(c.call(9, lock(1500, 1501, Mode::Shared, Wait::Try)).status, Status::WouldBlock);
    let r = c.call(10, lock(1500, 1501, Mode::Shared, Wait::Timeout(Duration::from_millis(30))));
    assert_eq!(r.status, Status::TimedOut);
    // Cancel of a waiting lock: the LOCK is answered CANCELLED, the CANCEL OK.
    c.send(11, lock(1999, 2001, Mode::Exclusive, Wait::Forever));
    c.send(12, Request::Cancel { target: 11 });
    let mut got = [c.recv().unwrap(), c.recv().unwrap()];
    got.sort_by_key(|r| r.id);
    assert_eq!((got[0].id, got[0].status), (11, Status::Cancelled));
    assert_eq!((got[1].id, got[1].status), (12, Status::Ok));
    // Limit: 4 live locks per session (7 is live).
    for id in 13..16 {
        assert_eq!(
            c.call(id, lock(id * 10, id * 10 + 1, Mode::Exclusive, Wait::Forever)).status,
            Status::Ok
        );
    }
    assert_eq!(
        c.call(16, lock(500, 501, Mode::Exclusive, Wait::Forever)).status,
        Status::TooManyLocks
    );
    // Malformed payloads on a well-delimited frame: answered, connection goes on.
    let mut inverted = Vec::new();
    RequestFrame { id: 17, request: lock(5, 6, Mode::Shared, Wait::Try) }.encode(&mut inverted);
    inverted[13..21].copy_from_slice(&9u64.to_le_bytes());
    c.send_bytes(&inverted);
    assert_eq!(c.recv().unwrap().status, Status::InvalidRange);
    c.send_bytes(&[9, 0, 0, 0, 0x55, 18, 0, 0, 0, 0, 0, 0, 0]);
    let r = c.recv().unwrap();
    assert_eq!((r.op, r.id, r.status), (op::UNKNOWN, 18, Status::UnknownOp));
    // An op byte with the response bit set is not echoed: the answer to 0x81 must not look
    // like a LOCK reply (0x81 on the wire).
    c.send_bytes(&[9, 0, 0, 0, 0x81, 18, 0, 0, 0, 0, 0, 0, 0]);
    let r = c.recv().unwrap();
    assert_eq!((r.op, r.id, r.status), (op::UNKNOWN, 18, Status::UnknownOp));
    c.send_bytes(&[10, 0, 0, 0, op::KEEPALIVE, 19, 0, 0, 0, 0, 0, 0, 0, 0xff]);
    assert_eq!(c.recv().unwrap().status, Status::Malformed);
    assert_eq!(c.call(20, Request::Keepalive).status, Status::Ok);
    // Garbage framing: an answer with id 0, then the server closes the connection.
    let mut c2 = Raw::connect(addr);
    c2.send_bytes(&u32::MAX.to_le_bytes());
    assert_eq!(c2.recv().unwrap().status, Status::FrameTooLarge);
    assert!(c2.closed_by_server());
    let mut c3 = Raw::connect(addr);
    c3.send_bytes(&[3, 0, 0, 0, 1, 2, 3]);
    assert_eq!(c3.recv().unwrap().status, Status::Malformed);
    assert!(c3.closed_by_server());
    // Version mismatch and bad magic.
    let mut v = std::net::TcpStream::connect(addr).unwrap();
    v.write_all(b"RLCK\x09\x00\x00\x00").unwrap();
    let mut buf = [0u8; SERVER_HELLO_LEN];
    std::io::Read::read_exact(&mut v, &mut buf).unwrap();
    let h = ServerHello::decode(&buf).unwrap();
    assert_eq!((h.status, h.version), (HelloStatus::UnsupportedVersion, VERSION));
    let mut m = Raw { s: std::net::TcpStream::connect(addr).unwrap(), hello: h };
    m.send_bytes(b"GET / HTTP/1.1\r\n\r\n");
    assert!(m.closed_by_server());

    // The bystander still holds its lock with its token; the errors were counted.
    let st = bystander.call(2, Request::Stats { max_entries: 100 }).stats.unwrap();
    let mine: Vec<_> = st.entries.iter().filter(|e| e.session == bystander.hello.session).collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(
        (mine[0].start, mine[0].end, mine[0].state, mine[0].token),
        (1000, 2000, EntryState::Held, held.value)
    );
    assert!(st.counters.errors >= 9, "errors counted: {}", st.counters.errors);
    srv.shutdown();
}

#[test]
fn poll_mode_grants_on_poll() {
    for engine in EngineKind::ALL {
        poll_mode(engine);
    }
}

fn poll_mode(engine: EngineKind) {
    let srv = server(|c| {
        c.grant = GrantMode::Poll;
        c.engine = engine;
    });
    let addr = srv.tcp_addr().unwrap();
    let mut a = Raw::connect(addr);
    let mut b = Raw::connect(addr);
    assert_eq!(b.hello.grant, GrantMode::Poll);
    assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
    assert_eq!(b.call(1, lock(5, 6, Mode::Shared, Wait::Forever)).status, Status::Pending);
    assert_eq!(b.call(2, Request::Poll { target: 1 }).status, Status::Pending);
    assert_eq!(
        b.call(3, lock(9, 10, Mode::Exclusive, Wait::Timeout(Duration::from_millis(1)))).status,
        Status::Pending
    );
    // Releasing a's lock grants b's first request; the second timed out (or will).
    assert_eq!(a.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
    // Table engines grant inside the UNLOCK; the rangelock engine's waiting thread takes
    // the range a moment later: poll (on replies) until the request settles.
    let settle = |b: &mut Raw, target: u64, id: u64| {
        for _ in 0..100_000 {
            let r = b.call(id, Request::Poll { target });
            if r.status != Status::Pending {
                return r;
            }
        }
        panic!("request {target} never settled");
    };
    let r = settle(&mut b, 1, 4);
    assert_eq!(r.status, Status::Ok);
    assert!(r.value > 1);
    assert_eq!(b.call(5, Request::Unlock { target: 1 }).status, Status::Ok);
    assert_eq!(b.call(6, Request::Poll { target: 1 }).status, Status::AlreadyReleased);
    let r = settle(&mut b, 3, 7);
    assert!(matches!(r.status, Status::TimedOut | Status::Ok), "{:?}", r.status);
    srv.shutdown();
}

/// The blocking client counts the `POLL`s it sends: none with push grants or for a lock
/// granted at once, at least one for a lock that waited in poll mode.
#[test]
fn the_blocking_client_counts_its_polls() {
    for grant in [GrantMode::Push, GrantMode::Poll] {
        let srv = server(|c| c.grant = grant);
        let ep = Endpoint::from(srv.tcp_addr().unwrap());
        let a = Client::connect(&ep).unwrap();
        let b = Client::connect(&ep).unwrap();
        let held = a.lock_exclusive(0..10).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.lock_exclusive(0..10).map(|g| g.token()));
            // Wait (on replies) until b's LOCK is queued and, in poll mode, b has polled.
            let mut ready = false;
            for _ in 0..100_000 {
                let queued = a.stats(0).unwrap().counters.waiters == 1;
                if queued && (grant == GrantMode::Push || b.polls() > 0) {
                    ready = true;
                    break;
                }
            }
            assert!(ready, "b's lock never queued (and polled)");
            held.unlock().unwrap();
            assert!(waiter.join().unwrap().is_ok());
        });
        assert_eq!(a.polls(), 0, "a's lock was granted at once");
        match grant {
            GrantMode::Push => assert_eq!(b.polls(), 0),
            GrantMode::Poll => assert!(b.polls() >= 1, "{}", b.polls()),
        }
        srv.shutdown();
    }
}

#[test]
fn dropping_a_waiting_lock_future_withdraws_it() {
    let srv = server(|_| {});
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let a = AsyncClient::connect(&ep).await.unwrap();
        let b = AsyncClient::connect(&ep).await.unwrap();
        let g = a.lock_exclusive(0..10).await.unwrap();
        {
            let fut = b.lock_exclusive(0..10);
            tokio::pin!(fut);
            // Let the request reach the server (a stats round trip on b orders after it).
            tokio::select! {
                biased;
                _ = &mut fut => panic!("granted while held"),
                st = b.stats(10) => assert_eq!(st.unwrap().counters.waiters, 1),
            }
        } // dropped: withdrawn
        let st = b.stats(10).await.unwrap();
        assert_eq!(st.counters.waiters, 0);
        assert_eq!(st.counters.cancels, 1);
        g.unlock().await.unwrap();
        let g2 = b.lock(0..10, Mode::Exclusive, Wait::Try).await.unwrap();
        assert_eq!(g2.range(), 0..10);
    });
    drop(rt);
    srv.shutdown();
}

#[test]
fn unix_socket_works() {
    let dir = std::env::temp_dir().join(format!("rangelock-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let srv = server(|c| {
        c.tcp = None;
        c.unix = Some(path.clone());
    });
    assert!(srv.tcp_addr().is_none());
    let c = Client::connect(&Endpoint::Unix(path.clone())).unwrap();
    let g = c.lock_exclusive(0..u64::MAX).unwrap();
    assert!(matches!(c.lock(7..8, Mode::Shared, Wait::Try), Err(ClientError::WouldBlock)));
    g.unlock().unwrap();
    drop(c);
    srv.shutdown();
    assert!(!path.exists(), "socket file removed on shutdown");
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn a_client_that_sends_without_reading_is_paused_not_buffered_without_bound() {
    let srv = server(|c| c.max_locks_per_session = 8);
    let mut raw = Raw::connect(srv.tcp_addr().unwrap());
    let mut tx = raw.s.try_clone().unwrap();
    const N: u64 = 20_000; // far beyond the backlog limit
    let sender = std::thread::spawn(move || {
        let mut out = Vec::new();
        for id in 0..N {
            RequestFrame { id, request: Request::Keepalive }.encode(&mut out);
        }
        tx.write_all(&out).unwrap();
    });
    // Reading late: every request is still answered exactly once, in order.
    for id in 0..N {
        let r = raw.recv().unwrap();
        assert_eq!((r.id, r.status), (id, Status::Ok));
    }
    sender.join().unwrap();
    srv.shutdown();
}

#[test]
fn dropping_a_guard_releases_and_unlock_is_confirmed() {
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let ep = Endpoint::from(srv.tcp_addr().unwrap());
        let c = Client::connect(&ep).unwrap();
        let g = c.lock_exclusive(0..10).unwrap();
        assert_eq!((g.range(), g.mode()), (0..10, Mode::Exclusive));
        assert!(matches!(c.lock(5..6, Mode::Shared, Wait::Try), Err(ClientError::WouldBlock)));
        drop(g); // UNLOCK sent without waiting; later requests of the session follow it
        let g = c.lock(5..6, Mode::Shared, Wait::Try).expect("released by drop");
        g.unlock().unwrap();
        let st = c.stats(10).unwrap();
        assert_eq!((st.counters.holders, st.counters.releases), (0, 2));
        assert!(c.is_connected());
        drop(c);
        srv.shutdown();
    }
}

#[test]
fn server_shutdown_answers_waiters_then_closes() {
    for engine in EngineKind::ALL {
        for grant in [GrantMode::Push, GrantMode::Poll] {
            shutdown_with_a_waiter(engine, grant);
        }
    }
}

/// PROTOCOL.md §2.1: at shutdown a version 4 session with a waiting LOCK gets the
/// `SESSION_ENDED` notice (reason shutdown) first, then the `SHUTTING_DOWN` answer of the
/// LOCK, then the connection closes. On every engine, 20 times each: the order was a race
/// (the engine's answer could reach the socket before the session's notice).
#[test]
fn shutdown_sends_the_end_notice_before_the_shutting_down_answers() {
    let mut wrong = Vec::new();
    for engine in EngineKind::ALL {
        let mut bad = 0;
        let mut first = None;
        for round in 0..20 {
            if let Err(e) = shutdown_order(engine) {
                bad += 1;
                first.get_or_insert(format!("round {round}: {e}"));
            }
        }
        if let Some(first) = first {
            wrong.push(format!("{engine:?}: {bad} of 20 rounds, first {first}"));
        }
    }
    assert!(wrong.is_empty(), "the shutdown order was wrong:\n{}", wrong.join("\n"));
}

/// One server, a holder and a waiter, a shutdown; what the waiter reads after it.
fn shutdown_order(engine: EngineKind) -> Result<(), String> {
    let srv = server(|c| c.engine = engine);
    let addr = srv.tcp_addr().unwrap();
    let mut holder = Raw::connect(addr);
    assert_eq!(holder.call(1, lock(0, 10, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
    let mut waiter = Raw::connect(addr);
    // Returns once the server has taken the LOCK (it waits behind the holder).
    waiter.queue(7, lock(0, 10, Mode::Exclusive, Wait::Forever));
    srv.shutdown();
    let frames: Vec<ResponseFrame> = std::iter::from_fn(|| waiter.recv()).collect();
    let notice = ResponseFrame::session_ended(EndReason::Shutdown);
    let answer = ResponseFrame::new(op::LOCK, 7, Status::ShuttingDown, 0);
    if frames != [notice, answer] {
        return Err(format!("the waiter read {frames:?}, not the notice, the answer, EOF"));
    }
    // The holder had nothing waiting: the notice alone, then EOF.
    match holder.end_reason() {
        Ok(Some(EndReason::Shutdown)) => Ok(()),
        other => Err(format!("the holder's end: {other:?}")),
    }
}

fn shutdown_with_a_waiter(engine: EngineKind, grant: GrantMode) {
    let srv = server(|c| {
        c.engine = engine;
        c.grant = grant;
    });
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    let a = Client::connect(&ep).unwrap();
    let b = Client::connect(&ep).unwrap();
    let _held = a.lock_exclusive(0..10).unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| b.lock_exclusive(0..10).map(|g| g.token()));
        // Wait (on replies) until b's LOCK is queued.
        let mut waiters = 0;
        for _ in 0..100_000 {
            waiters = b.stats(0).unwrap().counters.waiters;
            if waiters == 1 {
                break;
            }
        }
        assert_eq!(waiters, 1);
        srv.shutdown();
        // The server stops granting before it tears sessions down: the waiter is told
        // (push), or learns it on its next poll or from the closed connection (poll) —
        // it is never granted the lock a's teardown frees.
        let r = waiter.join().unwrap();
        assert!(
            matches!(
                r,
                Err(ClientError::Server(Status::ShuttingDown) | ClientError::ConnectionLost)
            ),
            "{engine:?} {grant:?}: {r:?}"
        );
        if grant == GrantMode::Push {
            assert!(matches!(r, Err(ClientError::Server(Status::ShuttingDown))), "{r:?}");
        }
    });
    assert!(matches!(b.lock_exclusive(20..30), Err(ClientError::ConnectionLost)));
    assert!(!b.is_connected());
}

#[test]
fn pipelined_unlocks_take_effect_before_later_requests() {
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let ep = Endpoint::from(srv.tcp_addr().unwrap());
        let c = Client::connect(&ep).unwrap();
        let other = Client::connect(&ep).unwrap();
        for i in 0..100u64 {
            let g = c.lock_exclusive(0..10).unwrap();
            g.unlock_pipelined().unwrap();
            // The UNLOCK was not waited for, but the server handles it before this
            // session's next frame: a try-lock of this client always succeeds.
            let g = c.lock(0..10, Mode::Exclusive, Wait::Try).unwrap_or_else(|e| {
                panic!("{engine:?} round {i}: {e}");
            });
            // `unlock_and_lock`: UNLOCK and LOCK in one write, in that order.
            let g = g.unlock_and_lock(&c, 5..15, Mode::Exclusive, Wait::Try).unwrap();
            assert_eq!(g.range(), 5..15);
            g.unlock_pipelined().unwrap();
        }
        c.flush().unwrap();
        // Every unlock was answered and took effect: another session gets the range.
        other.lock(0..15, Mode::Exclusive, Wait::Try).unwrap().unlock().unwrap();
        let st = c.stats(10).unwrap();
        assert_eq!(st.counters.holders, 0, "{engine:?}");
        assert_eq!(st.counters.releases, 301, "{engine:?}");
        assert!(c.is_connected());
        drop((c, other));
        srv.shutdown();
    }
}

#[test]
fn a_blocking_client_is_shared_by_threads() {
    let srv = server(|_| {});
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    let c = Client::connect(&ep).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let c = &c;
            s.spawn(move || {
                for i in 0..200u64 {
                    let start = (t * 1000 + i) % 4000;
                    let g = c.lock_exclusive(start..start + 1).unwrap();
                    if i % 2 == 0 {
                        g.unlock().unwrap();
                    } else {
                        drop(g);
                    }
                    if i % 50 == 0 {
                        c.ping().unwrap();
                    }
                }
            });
        }
    });
    c.flush().unwrap();
    assert_eq!(c.stats(0).unwrap().counters.holders, 0);
    drop(c);
    srv.shutdown();
}

/// Version 5 sessions of a table engine lock named resources: locks on different names
/// and on the unnamed resource never conflict, the same name does, a bad name is refused
/// and the session goes on. Where names are not served (a version 4 session, the
/// rangelock engine, and RECLAIM_NAMED on a single server) the named ops are unknown, as
/// to a server that predates them.
#[test]
fn version_5_sessions_lock_named_resources_on_every_engine() {
    let named = |name: &'static [u8], start, end, wait| Request::LockNamed {
        start,
        end,
        mode: Mode::Exclusive,
        wait,
        name,
    };
    let engines = [
        EngineKind::Combiner,
        EngineKind::TreeMutex,
        EngineKind::TreeSingle,
        EngineKind::RangeLock,
    ];
    for engine in engines {
        let srv = server(|c| c.engine = engine);
        let addr = srv.tcp_addr().unwrap();
        let (mut a, mut b) = (Raw::connect_version(addr, 5), Raw::connect_version(addr, 5));
        assert_eq!(a.hello.version, 5);
        let ok = |r: ResponseFrame| (r.op, r.status);
        assert_eq!(ok(a.call(1, named(b"db/a", 0, 10, Wait::Try))), (op::LOCK, Status::Ok));
        assert_eq!(ok(b.call(1, named(b"db/b", 0, 10, Wait::Try))), (op::LOCK, Status::Ok));
        assert_eq!(b.call(2, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        let r = b.call(3, named(b"db/a", 5, 6, Wait::Try));
        assert_eq!((r.op, r.status), (op::LOCK, Status::WouldBlock), "{engine:?}: same name");
        b.queue(4, named(b"db/a", 5, 6, Wait::Forever));
        assert_eq!(a.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
        let r = b.recv().unwrap();
        assert_eq!((r.id, r.status), (4, Status::Ok), "{engine:?}: the waiter on db/a");
        let st = a.call(3, Request::Stats { max_entries: 10 }).stats.unwrap();
        assert_eq!(st.counters.holders, 3, "{engine:?}");
        for bad in [vec![], vec![b'n'; MAX_RESOURCE_NAME_LEN + 1]] {
            let mut bytes = Vec::new();
            let request = Request::LockNamed {
                start: 0,
                end: 1,
                mode: Mode::Shared,
                wait: Wait::Try,
                name: &bad,
            };
            RequestFrame { id: 9, request }.encode(&mut bytes);
            a.send_bytes(&bytes);
            let r = a.recv().unwrap();
            assert_eq!(
                (r.op, r.id, r.status),
                (op::LOCK, 9, Status::BadName),
                "{engine:?}: {} bytes",
                bad.len()
            );
        }
        assert_eq!(a.call(10, Request::Keepalive).status, Status::Ok);
        let reclaim =
            Request::ReclaimNamed { start: 0, end: 1, mode: Mode::Shared, token: 1, name: b"x" };
        let r = a.call(11, reclaim);
        assert_eq!((r.op, r.status), (op::UNKNOWN, Status::UnknownOp), "{engine:?}");
        srv.shutdown();
    }
    // Not served: a version 4 session.
    for engine in [EngineKind::Combiner, EngineKind::RangeLock] {
        let srv = server(|c| c.engine = engine);
        let mut old = Raw::connect_version(srv.tcp_addr().unwrap(), 4);
        let r = old.call(1, named(b"db/a", 0, 10, Wait::Try));
        assert_eq!((r.op, r.status), (op::UNKNOWN, Status::UnknownOp), "{engine:?}");
        srv.shutdown();
    }
}

/// `STATS_NAMED` (version 5) lists each lock with its resource's name and counts the live
/// names and the locks held on them; `STATS` lists the same locks without names; a name
/// released by its last lock is gone from both counts; a version 4 session gets
/// `UNKNOWN_OP`, as from a server that predates it.
#[test]
fn stats_named_lists_names_and_counts_them() {
    let named = |name: &'static [u8], start, end, mode| Request::LockNamed {
        start,
        end,
        mode,
        wait: Wait::Forever,
        name,
    };
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let addr = srv.tcp_addr().unwrap();
        let (mut a, mut b) = (Raw::connect(addr), Raw::connect(addr));
        assert_eq!(a.call(1, named(b"db/a", 0, 10, Mode::Shared)).status, Status::Ok);
        assert_eq!(b.call(1, named(b"db/a", 5, 15, Mode::Shared)).status, Status::Ok);
        assert_eq!(b.call(2, named(b"\xff/b", 0, 10, Mode::Exclusive)).status, Status::Ok);
        assert_eq!(a.call(2, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        b.queue(3, named(b"db/a", 0, 1, Mode::Exclusive));
        let r = a.call(3, Request::StatsNamed { max_entries: 10 });
        assert_eq!((r.op, r.status), (op::STATS_NAMED, Status::Ok), "{engine:?}");
        let st = r.stats.unwrap();
        let listed: Vec<(u64, Option<&[u8]>, EntryState)> =
            st.entries.iter().map(|e| (e.id, e.name.as_deref(), e.state)).collect();
        let (db, ff) = (Some(&b"db/a"[..]), Some(&b"\xff/b"[..]));
        assert_eq!(
            listed,
            [
                (1, db, EntryState::Held),
                (1, db, EntryState::Held),
                (2, ff, EntryState::Held),
                (2, None, EntryState::Held),
                (3, db, EntryState::Waiting),
            ],
            "{engine:?}"
        );
        let c = st.counters;
        assert_eq!(
            (c.holders, c.waiters, c.names_live, c.named_holders),
            (4, 1, 2, 3),
            "{engine:?}"
        );
        // STATS: the same entries, without names or the names' counters.
        let st = a.call(4, Request::Stats { max_entries: 10 }).stats.unwrap();
        assert_eq!(st.entries.len(), 5, "{engine:?}");
        assert!(st.entries.iter().all(|e| e.name.is_none()), "{engine:?}");
        assert_eq!((st.counters.names_live, st.counters.named_holders), (0, 0), "{engine:?}");
        // Release everything named: both names go.
        assert_eq!(a.call(5, Request::Unlock { target: 1 }).status, Status::Ok);
        let r = b.recv().unwrap();
        assert_eq!((r.id, r.status), (3, Status::Ok), "{engine:?}: the waiter on db/a");
        assert_eq!(b.call(4, Request::Unlock { target: 1 }).status, Status::Ok);
        assert_eq!(b.call(5, Request::Unlock { target: 3 }).status, Status::Ok);
        assert_eq!(b.call(6, Request::Unlock { target: 2 }).status, Status::Ok);
        let st = a.call(6, Request::StatsNamed { max_entries: 10 }).stats.unwrap();
        let c = st.counters;
        assert_eq!((c.holders, c.names_live, c.named_holders), (1, 0, 0), "{engine:?}");
        assert_eq!(st.entries[0].name, None);
        srv.shutdown();
    }
    let srv = server(|c| c.engine = EngineKind::Combiner);
    let mut old = Raw::connect_version(srv.tcp_addr().unwrap(), 4);
    let r = old.call(1, Request::StatsNamed { max_entries: 10 });
    assert_eq!((r.op, r.status), (op::UNKNOWN, Status::UnknownOp));
    assert_eq!(old.call(2, Request::Keepalive).status, Status::Ok);
    srv.shutdown();
}
