//! What an outside client found (issue "rangelockd hardening"), one test per finding:
//! a live Unix socket is never taken over, one session's waits do not starve others on
//! the rangelock engine, a session that does not read its answers is closed before it
//! grows the server, too-short leases are refused, and every place where the server and
//! `docs/PROTOCOL.md` disagreed is pinned here, for every engine and grant mode.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{lock, Raw};
use rangelock_client::{AsyncClient, Client, Endpoint, Mode, Wait};
use rangelock_server::protocol::*;
use rangelock_server::{EngineKind, Server, ServerConfig, MIN_LEASE};

fn server(f: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut c = ServerConfig::ephemeral();
    f(&mut c);
    Server::start(c).unwrap()
}

fn every_engine_and_mode() -> impl Iterator<Item = (EngineKind, GrantMode)> {
    EngineKind::ALL.into_iter().flat_map(|e| [(e, GrantMode::Push), (e, GrantMode::Poll)])
}

fn temp_socket(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rangelock-hardening-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

// --- 1. Unix socket takeover -------------------------------------------------------

#[test]
fn a_live_unix_socket_is_never_taken_over() {
    let path = temp_socket("live.sock");
    let first = server(|c| {
        c.tcp = None;
        c.unix = Some(path.clone());
    });
    let holder = Client::connect(&Endpoint::Unix(path.clone())).unwrap();
    let _g = holder.lock_exclusive(0..10).unwrap();
    let err = Server::start(ServerConfig {
        tcp: None,
        unix: Some(path.clone()),
        ..ServerConfig::ephemeral()
    })
    .expect_err("a second server on a live path must be refused");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    assert!(err.to_string().contains(&path.display().to_string()), "names the path: {err}");
    // The first server still owns the path: a new client meets its holder.
    let other = Client::connect(&Endpoint::Unix(path.clone())).unwrap();
    assert!(other.lock(0..10, Mode::Exclusive, Wait::Try).is_err(), "one holder per range");
    drop((other, _g, holder));
    first.shutdown();
    assert!(!path.exists(), "the socket file is removed on shutdown");
}

#[test]
fn a_socket_answered_by_another_program_is_refused_and_a_stale_one_replaced() {
    // A listener that is not a rangelock server (holds no lock file) answers on the path.
    let path = temp_socket("foreign.sock");
    let foreign = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let err = Server::start(ServerConfig {
        tcp: None,
        unix: Some(path.clone()),
        ..ServerConfig::ephemeral()
    })
    .expect_err("a live foreign listener must be refused");
    assert!(err.to_string().contains("already listening"), "{err}");
    // Once it is gone the file is stale (connect is refused) and is replaced.
    drop(foreign);
    assert!(path.exists(), "std leaves the socket file behind");
    let srv = Server::start(ServerConfig {
        tcp: None,
        unix: Some(path.clone()),
        ..ServerConfig::ephemeral()
    })
    .expect("a stale socket file is replaced");
    Client::connect(&Endpoint::Unix(path.clone())).unwrap().ping().unwrap();
    srv.shutdown();
    // A regular file is never removed.
    std::fs::write(&path, b"data").unwrap();
    let err = Server::start(ServerConfig {
        tcp: None,
        unix: Some(path.clone()),
        ..ServerConfig::ephemeral()
    })
    .expect_err("not a socket");
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"data");
}

#[test]
fn bind_errors_name_the_address_or_path() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err =
        Server::start(ServerConfig { tcp: Some(addr), ..ServerConfig::ephemeral() }).unwrap_err();
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    let missing = std::path::Path::new("/nonexistent-rangelock-dir/x.sock");
    let err =
        Server::start(ServerConfig { unix: Some(missing.into()), ..ServerConfig::ephemeral() })
            .unwrap_err();
    assert!(err.to_string().contains("/nonexistent-rangelock-dir/x.sock"), "{err}");
}

// --- 2. One session's waits do not starve others -----------------------------------

fn threads_of_this_process() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn a_session_queuing_hundreds_of_waits_delays_no_unrelated_grant() {
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let ep = Endpoint::from(srv.tcp_addr().unwrap());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let hog = AsyncClient::connect(&ep).await.unwrap();
            let _held = hog.lock_exclusive(0..100).await.unwrap();
            let threads_before = threads_of_this_process();
            // 600 waits of one session on its own held range.
            let mut hog_raw = Raw::connect(srv.tcp_addr().unwrap());
            let mut burst = Vec::new();
            for id in 1..=600u64 {
                RequestFrame { id, request: lock(0, 100, Mode::Exclusive, Wait::Forever) }
                    .encode(&mut burst);
            }
            hog_raw.send_bytes(&burst);
            let probe = AsyncClient::connect(&ep).await.unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            // Wait (on the server's own count) until all 600 are queued.
            while probe.stats(0).await.unwrap().counters.waiters < 600 {
                assert!(Instant::now() < deadline, "{engine:?}: waits not queued");
                tokio::task::yield_now().await;
            }
            // Other tests of this binary start servers and clients meanwhile, so allow a
            // margin; a thread per waiting request (the old engine: up to 512) is far above.
            let threads = threads_of_this_process();
            assert!(
                threads < threads_before + 100,
                "{engine:?}: waiting must not take a thread per request ({threads_before} -> \
                 {threads} threads)"
            );
            // An unrelated waiter on another range is granted as soon as its range frees.
            let a = AsyncClient::connect(&ep).await.unwrap();
            let b = AsyncClient::connect(&ep).await.unwrap();
            for round in 0..20u64 {
                let range = 1_000 + round * 10..1_000 + round * 10 + 10;
                let g = a.lock_exclusive(range.clone()).await.unwrap();
                let b2 = b.clone();
                let waiter = tokio::spawn(async move {
                    b2.lock(range, Mode::Exclusive, Wait::Timeout(Duration::from_secs(5))).await
                });
                // Let the waiter's LOCK reach the server and queue (the server's count).
                while probe.stats(0).await.unwrap().counters.waiters < 601 {
                    assert!(Instant::now() < deadline + Duration::from_secs(60));
                    tokio::task::yield_now().await;
                }
                let released = Instant::now();
                g.unlock().await.unwrap();
                let got = waiter.await.unwrap();
                assert!(got.is_ok(), "{engine:?}: unrelated waiter not granted: {got:?}");
                assert!(
                    released.elapsed() < Duration::from_secs(2),
                    "{engine:?}: unrelated grant took {:?}",
                    released.elapsed()
                );
                got.unwrap().unlock().await.unwrap();
            }
            drop(hog_raw);
        });
        srv.shutdown();
    }
}

#[test]
fn waiters_are_granted_when_their_range_frees_under_churn() {
    // Many sessions wait on few units while others churn on them with try-locks (whose
    // failed attempts may disturb a retry): every waiter is granted, none is lost.
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let ep = Endpoint::from(srv.tcp_addr().unwrap());
        let checker = common::Checker::new(8);
        std::thread::scope(|s| {
            for t in 0..6u64 {
                let (ep, checker) = (ep.clone(), &checker);
                s.spawn(move || {
                    let c = Client::connect(&ep).unwrap();
                    let mut rng = common::Rng(t * 7919 + 1);
                    for _ in 0..150 {
                        let a = rng.below(8);
                        let b = (a + 1 + rng.below(3)).min(8);
                        let shared = rng.below(3) == 0;
                        let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                        let wait = if t % 2 == 0 {
                            Wait::Timeout(Duration::from_secs(20))
                        } else {
                            Wait::Try
                        };
                        match c.lock(a..b, mode, wait) {
                            Ok(g) => {
                                if shared {
                                    checker.shared(a, b);
                                } else {
                                    checker.exclusive(a, b, g.token());
                                }
                                g.unlock().unwrap();
                            }
                            Err(rangelock_client::ClientError::WouldBlock) => {
                                assert_eq!(wait, Wait::Try);
                            }
                            Err(e) => panic!("{engine:?}: {e}"),
                        }
                    }
                });
            }
        });
        srv.shutdown();
    }
}

// --- 3. Output bounded in bytes ----------------------------------------------------

#[test]
fn a_session_that_does_not_read_its_answers_is_closed_and_its_locks_released() {
    for engine in EngineKind::ALL {
        let srv = server(|c| {
            c.engine = engine;
            c.max_output_bytes = 256 * 1024;
        });
        let addr = srv.tcp_addr().unwrap();
        // A small, fixed receive buffer: what the hog's kernel may hold for it does not
        // depend on autotuning (tcp_rmem allows 32 MB here).
        let mut hog = Raw::connect_with_rcvbuf(addr, 64 * 1024);
        // 500 held locks make each STATS answer ~21 KB.
        let mut burst = Vec::new();
        for id in 1..=500u64 {
            RequestFrame { id, request: lock(id * 2, id * 2 + 1, Mode::Exclusive, Wait::Try) }
                .encode(&mut burst);
        }
        for id in 1000..2200u64 {
            RequestFrame { id, request: Request::Stats { max_entries: 1000 } }.encode(&mut burst);
        }
        // ~25 MB of answers asked for, none read: far more than the socket buffers hold
        // (the hog's 64 KB, the server's send buffer of at most tcp_wmem's 4 MB). With
        // autotuning on, a fresh CI run once saw 10.2 MB arrive before the EOF.
        let _ = hog.s.write_all(&burst);
        // Read nothing until the server has ended the session (its own count says so:
        // both sessions opened, one still open). Its hello arrives before the server has
        // opened it, so `sessions_open == 1` alone can be seen before the hog's session
        // is open; CI once saw that, and the hog then read every answer.
        let mut probe = Raw::connect(addr);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut id = 0;
        loop {
            id += 1;
            let c = probe.call(id, Request::Stats { max_entries: 0 }).stats.unwrap().counters;
            if c.sessions_total == 2 && c.sessions_open == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "{engine:?}: the hog's session is still open");
            std::thread::sleep(Duration::from_millis(5));
        }
        // The server closes the session: reading what it sent ends in EOF (or a reset)
        // well before all 1200 answers.
        hog.s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut total = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match hog.s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
        let all_answers = 500 * 22 + 1200 * (22 + 92 + 500 * 42);
        assert!(total < all_answers / 2, "{engine:?}: session not closed ({total} bytes read)");
        // Its locks were released as on disconnect.
        let c = Client::connect(&Endpoint::from(addr)).unwrap();
        let g = c.lock(0..1002, Mode::Exclusive, Wait::Timeout(Duration::from_secs(10)));
        assert!(g.is_ok(), "{engine:?}: the closed session's locks were not released");
        drop(g);
        assert!(c.stats(0).unwrap().counters.released_by_close >= 500);
        drop(c);
        srv.shutdown();
    }
}

// --- 5. Lease bounds ---------------------------------------------------------------

#[test]
fn too_short_leases_are_refused() {
    for ms in [0, 1, 5, 99] {
        let err = Server::start(ServerConfig {
            lease: Duration::from_millis(ms),
            ..ServerConfig::ephemeral()
        })
        .expect_err("lease below the minimum");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains(&format!("{}", MIN_LEASE.as_millis())), "{err}");
    }
    Server::start(ServerConfig { lease: MIN_LEASE, ..ServerConfig::ephemeral() })
        .unwrap()
        .shutdown();
}

// --- 7. Protocol and server agree --------------------------------------------------

/// `POLL`s `target` until the answer is not `PENDING`.
fn poll_until_done(c: &mut Raw, id: &mut u64, target: u64) -> Status {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        *id += 1;
        let st = c.call(*id, Request::Poll { target }).status;
        if st != Status::Pending {
            return st;
        }
        assert!(Instant::now() < deadline, "still pending");
        std::thread::yield_now();
    }
}

/// Ends the wait of lock `id` on a held range: answered at once in push mode, found by
/// `POLL` in poll mode.
fn lock_answer(c: &mut Raw, grant: GrantMode, id: u64, req: Request, next: &mut u64) -> Status {
    let r = c.call(id, req);
    if grant == GrantMode::Poll && r.status == Status::Pending {
        return poll_until_done(c, next, id);
    }
    r.status
}

#[test]
fn try_fails_on_a_queued_conflict_as_documented_per_engine() {
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let addr = srv.tcp_addr().unwrap();
        let mut a = Raw::connect(addr);
        let mut b = Raw::connect(addr);
        let mut c = Raw::connect(addr);
        assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        b.send(1, lock(5, 20, Mode::Exclusive, Wait::Forever)); // queued behind a
        let mut p = Raw::connect(addr);
        while p.call(1, Request::Stats { max_entries: 0 }).stats.unwrap().counters.waiters < 1 {
            std::thread::yield_now();
        }
        // 15..20 conflicts with b's queued request only.
        let st = c.call(1, lock(15, 20, Mode::Exclusive, Wait::Try)).status;
        let expected = match engine {
            EngineKind::RangeLock => Status::Ok,
            _ => Status::WouldBlock,
        };
        assert_eq!(st, expected, "{engine:?}: PROTOCOL.md §3 (try and queued conflicts)");
        srv.shutdown();
    }
}

#[test]
fn a_timed_out_unpolled_lock_is_gone_poll_mode() {
    for engine in EngineKind::ALL {
        let srv = server(|c| {
            c.engine = engine;
            c.grant = GrantMode::Poll;
            c.max_locks_per_session = 2;
        });
        let addr = srv.tcp_addr().unwrap();
        let mut a = Raw::connect(addr);
        assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        let r = a.call(2, lock(0, 10, Mode::Exclusive, Wait::Timeout(Duration::from_millis(20))));
        assert_eq!(r.status, Status::Pending);
        let deadline = Instant::now() + Duration::from_secs(10);
        while a.call(3, Request::Stats { max_entries: 0 }).stats.unwrap().counters.timeouts < 1 {
            assert!(Instant::now() < deadline);
            std::thread::yield_now();
        }
        // Never polled: it counts toward no limit (held 1 + 1 new = 2) ...
        assert_eq!(
            a.call(4, lock(100, 110, Mode::Exclusive, Wait::Try)).status,
            Status::Ok,
            "{engine:?}: an unpolled outcome counted toward TOO_MANY_LOCKS"
        );
        assert_eq!(a.call(5, Request::Unlock { target: 4 }).status, Status::Ok);
        // ... and its id is free for a new lock, which forgets the old outcome.
        assert_eq!(
            a.call(2, lock(200, 210, Mode::Exclusive, Wait::Try)).status,
            Status::Ok,
            "{engine:?}: the timed-out id was not reusable"
        );
        assert_eq!(a.call(6, Request::Poll { target: 2 }).status, Status::Ok);
        srv.shutdown();
    }
}

#[test]
fn a_timed_out_outcome_is_polled_once_then_already_released() {
    for engine in EngineKind::ALL {
        let srv = server(|c| {
            c.engine = engine;
            c.grant = GrantMode::Poll;
        });
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        let r = a.call(2, lock(0, 10, Mode::Exclusive, Wait::Timeout(Duration::from_millis(20))));
        assert_eq!(r.status, Status::Pending);
        let mut id = 10;
        assert_eq!(poll_until_done(&mut a, &mut id, 2), Status::TimedOut, "{engine:?}");
        assert_eq!(a.call(99, Request::Poll { target: 2 }).status, Status::AlreadyReleased);
        assert_eq!(a.call(98, Request::Poll { target: 77 }).status, Status::NotHeld);
        srv.shutdown();
    }
}

#[test]
fn unlock_after_a_withdrawal_answers_already_released_in_both_modes() {
    for (engine, grant) in every_engine_and_mode() {
        let srv = server(|c| {
            c.engine = engine;
            c.grant = grant;
        });
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        let mut next = 100;
        assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        // Withdrawn by CANCEL.
        a.send(2, lock(0, 10, Mode::Exclusive, Wait::Forever));
        a.send(3, Request::Cancel { target: 2 });
        let mut got: Vec<_> = (0..2).map(|_| a.recv().unwrap()).collect();
        got.sort_by_key(|r| r.id);
        let cancelled = if grant == GrantMode::Push { Status::Cancelled } else { Status::Pending };
        assert_eq!((got[0].status, got[1].status), (cancelled, Status::Ok), "{engine:?}");
        // Withdrawn by UNLOCK of the waiting lock.
        a.send(4, lock(0, 10, Mode::Exclusive, Wait::Forever));
        a.send(5, Request::Unlock { target: 4 });
        let mut got: Vec<_> = (0..2).map(|_| a.recv().unwrap()).collect();
        got.sort_by_key(|r| r.id);
        assert_eq!((got[0].status, got[1].status), (cancelled, Status::Ok), "{engine:?}");
        for target in [2, 4] {
            next += 1;
            assert_eq!(
                a.call(next, Request::Unlock { target }).status,
                Status::AlreadyReleased,
                "{engine:?} {grant:?}: second UNLOCK of withdrawn lock {target}"
            );
        }
        // Released normally, then unlocked again; and an id never used.
        assert_eq!(a.call(6, Request::Unlock { target: 1 }).status, Status::Ok);
        assert_eq!(a.call(7, Request::Unlock { target: 1 }).status, Status::AlreadyReleased);
        assert_eq!(a.call(8, Request::Unlock { target: 55 }).status, Status::NotHeld);
        srv.shutdown();
    }
}

#[test]
fn a_zero_timeout_wait_on_a_held_range_times_out() {
    for (engine, grant) in every_engine_and_mode() {
        let srv = server(|c| {
            c.engine = engine;
            c.grant = grant;
        });
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        let req = lock(0, 10, Mode::Exclusive, Wait::Timeout(Duration::ZERO));
        let mut next = 10;
        assert_eq!(
            lock_answer(&mut a, grant, 2, req, &mut next),
            Status::TimedOut,
            "{engine:?} {grant:?}: PROTOCOL.md §3 (wait=1, timeout_ms=0)"
        );
        srv.shutdown();
    }
}

#[test]
fn a_refused_hello_carries_the_servers_real_settings() {
    for grant in [GrantMode::Push, GrantMode::Poll] {
        let srv = server(|c| {
            c.grant = grant;
            c.lease = Duration::from_millis(1234);
        });
        let mut s = std::net::TcpStream::connect(srv.tcp_addr().unwrap()).unwrap();
        let mut out = Vec::new();
        ClientHello::new(VERSION + 1).encode(&mut out);
        s.write_all(&out).unwrap();
        let mut buf = [0u8; SERVER_HELLO_LEN];
        s.read_exact(&mut buf).unwrap();
        let h = ServerHello::decode(&buf).unwrap();
        assert_eq!(h.status, HelloStatus::UnsupportedVersion);
        assert_eq!((h.version, h.grant, h.session), (VERSION, grant, 0));
        assert_eq!((h.lease_ms, h.max_frame), (1234, DEFAULT_MAX_FRAME));
        assert_eq!(s.read(&mut buf).unwrap(), 0, "then the server closes");
        srv.shutdown();
    }
}

#[test]
fn errors_take_the_documented_precedence() {
    for engine in EngineKind::ALL {
        let srv = server(|c| {
            c.engine = engine;
            c.max_locks_per_session = 1;
        });
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        // Malformed (wrong payload size) before everything else.
        let mut f = Vec::new();
        RequestFrame { id: 1, request: lock(5, 6, Mode::Shared, Wait::Try) }.encode(&mut f);
        f[0] += 1;
        f.push(0);
        a.send_bytes(&f);
        assert_eq!(a.recv().unwrap().status, Status::Malformed);
        // Invalid range before a duplicate id (and the limit).
        let mut f = Vec::new();
        RequestFrame { id: 1, request: lock(5, 6, Mode::Shared, Wait::Try) }.encode(&mut f);
        f[13..21].copy_from_slice(&9u64.to_le_bytes());
        a.send_bytes(&f);
        assert_eq!(a.recv().unwrap().status, Status::InvalidRange, "{engine:?}");
        // Duplicate id before the limit.
        assert_eq!(a.call(1, lock(20, 30, Mode::Exclusive, Wait::Try)).status, Status::DuplicateId);
        assert_eq!(
            a.call(2, lock(20, 30, Mode::Exclusive, Wait::Try)).status,
            Status::TooManyLocks
        );
        srv.shutdown();
    }
}

#[test]
fn requests_may_follow_the_hello_before_the_server_hello_is_read() {
    for engine in EngineKind::ALL {
        let srv = server(|c| c.engine = engine);
        let mut s = std::net::TcpStream::connect(srv.tcp_addr().unwrap()).unwrap();
        let mut out = Vec::new();
        ClientHello::new(VERSION).encode(&mut out);
        RequestFrame { id: 7, request: lock(0, 10, Mode::Exclusive, Wait::Try) }.encode(&mut out);
        s.write_all(&out).unwrap(); // one write: hello and a LOCK
        let mut hello = [0u8; SERVER_HELLO_LEN];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(ServerHello::decode(&hello).unwrap().status, HelloStatus::Accepted);
        let mut raw = Raw { s, hello: ServerHello::decode(&hello).unwrap() };
        let r = raw.recv().unwrap();
        assert_eq!((r.id, r.status), (7, Status::Ok), "{engine:?}");
        srv.shutdown();
    }
}

#[test]
fn stats_sends_at_most_the_server_limit() {
    for engine in EngineKind::ALL {
        let srv = server(|c| {
            c.engine = engine;
            c.max_stats_entries = 3;
        });
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        for id in 1..=5 {
            assert_eq!(
                a.call(id, lock(id * 10, id * 10 + 1, Mode::Shared, Wait::Try)).status,
                Status::Ok
            );
        }
        let st = a.call(9, Request::Stats { max_entries: 100 }).stats.unwrap();
        assert_eq!(st.entries.len(), 3, "{engine:?}");
        assert_eq!(st.counters.holders, 5);
        let ids: Vec<u64> = st.entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [1, 2, 3], "{engine:?}: entries in arrival order");
        srv.shutdown();
    }
}
