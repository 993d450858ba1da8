//! Cached locks over the wire (protocol version 6, `docs/PROTOCOL.md` §2.3): CACHE_ON and
//! its refusals, expansion, callbacks, GIVE_BACK (release, shrink, split, downgrade), and
//! the history policy's exact grants.

mod common;

use common::{lock, Raw};
use rangelock_server::protocol::*;
use rangelock_server::{CachePolicy, EngineKind, Server, ServerConfig};

/// The three engines with one lock table.
const TABLE_ENGINES: [EngineKind; 3] =
    [EngineKind::Combiner, EngineKind::TreeMutex, EngineKind::TreeSingle];

fn server(f: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut c = ServerConfig::ephemeral();
    f(&mut c);
    Server::start(c).unwrap()
}

fn cached(start: u64, end: u64, mode: Mode, wait: Wait, desired: (u64, u64)) -> Request<'static> {
    let (desired_start, desired_end) = desired;
    Request::LockCached { start, end, mode, wait, desired_start, desired_end, name: b"" }
}

/// A caching session.
fn caching(srv: &Server) -> Raw {
    let mut r = Raw::connect(srv.tcp_addr().unwrap());
    let on = r.call(1, Request::CacheOn);
    assert_eq!((on.op, on.status), (op::CACHE_ON, Status::Ok));
    r
}

/// The next frame that is a CALLBACK notice.
fn callback(r: &mut Raw) -> (u64, Callback) {
    let f = r.recv().expect("a callback notice");
    assert_eq!((f.op, f.status), (op::NOTICE, Status::Callback), "{f:?}");
    (f.value, f.callback.expect("a callback body"))
}

fn grant(f: &ResponseFrame) -> CachedGrant {
    assert_eq!((f.op, f.status), (op::LOCK_CACHED, Status::Ok), "{f:?}");
    f.grant.expect("a grant body")
}

#[test]
fn a_lone_session_gets_its_whole_desired_range_to_keep() {
    for engine in TABLE_ENGINES {
        let srv = server(|c| c.engine = engine);
        let mut a = caching(&srv);
        let g = grant(&a.call(2, cached(100, 200, Mode::Exclusive, Wait::Forever, (0, 1000))));
        assert_eq!(g, CachedGrant { start: 0, end: 1000, cached: true }, "{engine:?}");
        // The session's own locks never wait for its extent.
        let inner = a.call(3, lock(150, 160, Mode::Exclusive, Wait::Try));
        assert_eq!(inner.status, Status::Ok);
    }
}

#[test]
fn expansion_stops_at_other_sessions_locks() {
    for engine in TABLE_ENGINES {
        let srv = server(|c| c.engine = engine);
        let mut b = Raw::connect(srv.tcp_addr().unwrap());
        assert_eq!(b.call(1, lock(0, 50, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
        assert_eq!(b.call(2, lock(900, 950, Mode::Shared, Wait::Forever)).status, Status::Ok);
        let mut a = caching(&srv);
        // Exclusive stops at both; shared passes b's shared lock.
        let g = grant(&a.call(2, cached(100, 200, Mode::Exclusive, Wait::Forever, (0, 1000))));
        assert_eq!((g.start, g.end, g.cached), (50, 900, true), "{engine:?}");
        let g = grant(&a.call(3, cached(940, 945, Mode::Shared, Wait::Forever, (0, 1000))));
        // Own extent 50..900 does not count; b's exclusive 0..50 does.
        assert_eq!((g.start, g.end), (50, 1000), "{engine:?}");
    }
}

#[test]
fn a_conflicting_request_calls_the_extent_back_and_waits_for_the_give_back() {
    for engine in TABLE_ENGINES {
        let srv = server(|c| c.engine = engine);
        let mut a = caching(&srv);
        let g = grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
        assert_eq!((g.start, g.end), (0, 1000));
        let mut b = Raw::connect(srv.tcp_addr().unwrap());
        b.send(7, lock(400, 500, Mode::Shared, Wait::Forever));
        let (id, part) = callback(&mut a);
        assert_eq!((id, part), (2, Callback { start: 400, end: 500, mode: Mode::Shared }));
        // A try of b meanwhile fails: the extent is still held.
        assert_eq!(
            b.call(8, lock(600, 601, Mode::Exclusive, Wait::Try)).status,
            Status::WouldBlock
        );
        let _ = callback(&mut a); // the try asked too
                                  // Give the middle back: b is granted, a keeps two parts.
        let r = a.call(
            3,
            Request::GiveBack { target: 2, start: 300, end: 700, downgrade: false, used: None },
        );
        assert_eq!((r.op, r.status), (op::GIVE_BACK, Status::Ok), "{engine:?}");
        let got = b.recv().unwrap();
        assert_eq!((got.id, got.status), (7, Status::Ok));
        let st = b.call(9, Request::Stats { max_entries: 10 }).stats.unwrap();
        let mut held: Vec<(u64, u64, u64, u64)> = st
            .entries
            .iter()
            .filter(|e| e.session == a_session(&st, 7))
            .map(|e| (e.id, e.start, e.end, e.token))
            .collect();
        held.sort();
        assert_eq!(held, vec![(2, 0, 300, 1), (3, 700, 1000, 1)], "{engine:?}");
        // The right part is lock 3: it can be given back by that id.
        let r = a.call(
            4,
            Request::GiveBack { target: 3, start: 700, end: 1000, downgrade: false, used: None },
        );
        assert_eq!(r.status, Status::Ok);
        let r = a.call(
            5,
            Request::GiveBack { target: 3, start: 700, end: 1000, downgrade: false, used: None },
        );
        assert_eq!(r.status, Status::AlreadyReleased);
    }
}

/// The session of the entries that are not `b`'s lock `b_id` (the test's other session).
fn a_session(st: &StatsBody, b_id: u64) -> u64 {
    let b = st.entries.iter().find(|e| e.id == b_id).unwrap().session;
    st.entries.iter().find(|e| e.session != b).unwrap().session
}

#[test]
fn a_split_keeps_a_waiter_that_spans_both_parts_waiting() {
    let srv = server(|_| {});
    let mut a = caching(&srv);
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
    let mut b = Raw::connect(srv.tcp_addr().unwrap());
    b.send(7, lock(200, 800, Mode::Exclusive, Wait::Forever));
    let _ = callback(&mut a);
    // Only the middle: b still overlaps both parts.
    let r = a.call(
        3,
        Request::GiveBack { target: 2, start: 400, end: 500, downgrade: false, used: None },
    );
    assert_eq!(r.status, Status::Ok);
    assert_eq!(b.call(8, lock(450, 460, Mode::Exclusive, Wait::Try)).status, Status::WouldBlock);
    let r = a
        .call(4, Request::GiveBack { target: 2, start: 0, end: 400, downgrade: false, used: None });
    assert_eq!(r.status, Status::Ok);
    // Still waiting for the right part (lock 3).
    assert_eq!(b.call(9, lock(460, 470, Mode::Exclusive, Wait::Try)).status, Status::WouldBlock);
    let r = a.call(
        5,
        Request::GiveBack { target: 3, start: 500, end: 900, downgrade: false, used: None },
    );
    assert_eq!(r.status, Status::Ok, "a shrink from the left");
    let got = b.recv().unwrap();
    assert_eq!((got.id, got.status), (7, Status::Ok));
}

#[test]
fn a_downgrade_lets_shared_waiters_in_and_keeps_exclusive_ones_out() {
    let srv = server(|_| {});
    let mut a = caching(&srv);
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 100))));
    let mut b = Raw::connect(srv.tcp_addr().unwrap());
    b.send(7, lock(20, 30, Mode::Shared, Wait::Forever));
    let (_, part) = callback(&mut a);
    assert_eq!(part.mode, Mode::Shared);
    let bad =
        a.call(3, Request::GiveBack { target: 2, start: 20, end: 30, downgrade: true, used: None });
    assert_eq!(bad.status, Status::InvalidRange, "a downgrade is of the whole lock");
    let r =
        a.call(4, Request::GiveBack { target: 2, start: 0, end: 100, downgrade: true, used: None });
    assert_eq!(r.status, Status::Ok);
    assert_eq!(b.recv().unwrap().status, Status::Ok);
    assert_eq!(b.call(8, lock(40, 41, Mode::Exclusive, Wait::Try)).status, Status::WouldBlock);
}

#[test]
fn give_back_errors() {
    let srv = server(|_| {});
    let mut a = caching(&srv);
    grant(&a.call(2, cached(10, 20, Mode::Exclusive, Wait::Forever, (10, 20))));
    let gb =
        |target, start, end| Request::GiveBack { target, start, end, downgrade: false, used: None };
    assert_eq!(a.call(3, gb(2, 5, 15)).status, Status::InvalidRange, "outside the lock");
    assert_eq!(a.call(4, gb(99, 10, 20)).status, Status::NotHeld);
    // A split whose request id names a live lock.
    grant(&a.call(5, cached(30, 40, Mode::Exclusive, Wait::Forever, (30, 40))));
    assert_eq!(a.call(5, gb(2, 12, 14)).status, Status::DuplicateId);
    // A malformed downgrade byte is MALFORMED; the session goes on.
    let mut bytes = Vec::new();
    RequestFrame { id: 6, request: gb(2, 10, 20) }.encode(&mut bytes);
    *bytes.last_mut().unwrap() = 2;
    a.send_bytes(&bytes);
    let r = a.recv().unwrap();
    assert_eq!((r.id, r.status), (6, Status::Malformed));
    assert_eq!(a.call(7, gb(2, 10, 20)).status, Status::Ok);
}

#[test]
fn sessions_without_cache_on_or_before_version_6_are_refused() {
    let srv = server(|_| {});
    let mut a = Raw::connect(srv.tcp_addr().unwrap());
    let r = a.call(2, cached(0, 1, Mode::Exclusive, Wait::Try, (0, 1)));
    assert_eq!((r.op, r.status), (op::LOCK_CACHED, Status::CacheUnavailable));
    let r =
        a.call(3, Request::GiveBack { target: 2, start: 0, end: 1, downgrade: false, used: None });
    assert_eq!((r.op, r.status), (op::GIVE_BACK, Status::CacheUnavailable));
    let mut old = Raw::connect_version(srv.tcp_addr().unwrap(), 5);
    for (id, req) in [(1, Request::CacheOn), (2, cached(0, 1, Mode::Exclusive, Wait::Try, (0, 1)))]
    {
        let r = old.call(id, req);
        assert_eq!((r.op, r.status), (op::UNKNOWN, Status::UnknownOp));
    }
    // Whatever the payload: a malformed GIVE_BACK (flags say `used` follows; it does not)
    // is still an op this session does not know, not MALFORMED, as from a version 5 server.
    let mut bytes = Vec::new();
    let gb = Request::GiveBack { target: 2, start: 0, end: 1, downgrade: false, used: None };
    RequestFrame { id: 3, request: gb }.encode(&mut bytes);
    *bytes.last_mut().unwrap() = 2;
    old.send_bytes(&bytes);
    let r = old.recv().unwrap();
    assert_eq!((r.op, r.id, r.status), (op::UNKNOWN, 3, Status::UnknownOp));
    // Nothing to cache with: the rangelock engine, or the policy off.
    for f in
        [(|c: &mut ServerConfig| c.engine = EngineKind::RangeLock) as fn(&mut ServerConfig), |c| {
            c.cache.policy = CachePolicy::Off
        }]
    {
        let srv = server(f);
        let mut a = Raw::connect(srv.tcp_addr().unwrap());
        let r = a.call(1, Request::CacheOn);
        assert_eq!((r.op, r.status), (op::CACHE_ON, Status::CacheUnavailable));
        assert_eq!(a.call(2, lock(0, 1, Mode::Exclusive, Wait::Try)).status, Status::Ok);
    }
}

#[test]
fn a_called_back_session_gets_exact_grants_kept_only_where_nobody_else_asked() {
    let srv = server(|_| {});
    let mut a = caching(&srv);
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
    let mut b = caching(&srv);
    b.send(7, cached(500, 510, Mode::Exclusive, Wait::Forever, (0, 1000)));
    let _ = callback(&mut a);
    assert_eq!(
        a.call(
            3,
            Request::GiveBack { target: 2, start: 0, end: 1000, downgrade: false, used: None }
        )
        .status,
        Status::Ok
    );
    // b waited, so its grant is exact and not kept.
    let g = grant(&b.recv().unwrap());
    assert_eq!(g, CachedGrant { start: 500, end: 510, cached: false });
    // a was called back within the window: exact, kept where no other session asked
    // lately, not kept where one did.
    let g = grant(&a.call(4, cached(100, 110, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(g, CachedGrant { start: 100, end: 110, cached: true });
    let r = b.call(8, Request::Unlock { target: 7 });
    assert_eq!(r.status, Status::Ok);
    let g = grant(&a.call(5, cached(505, 506, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(g, CachedGrant { start: 505, end: 506, cached: false });
}

#[test]
fn keeping_goes_on_while_recalled_extents_served_two_local_locks_each_on_average() {
    let srv = server(|_| {});
    let mut a = Raw::connect(srv.tcp_addr().unwrap());
    let on = a.call(1, Request::CacheOn);
    assert_eq!((on.status, on.value), (Status::Ok, CACHE_REPORTS_USE), "GIVE_BACK may say `used`");
    let give_back = |target, end, used| Request::GiveBack {
        target,
        start: 0,
        end,
        downgrade: false,
        used: Some(used),
    };
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
    let mut b = caching(&srv);
    b.send(7, cached(500, 510, Mode::Exclusive, Wait::Forever, (0, 1000)));
    assert_eq!(callback(&mut a).0, 2);
    // It served 2 local locks: keeping paid.
    assert_eq!(a.call(3, give_back(2, 1000, 2)).status, Status::Ok);
    assert_eq!(grant(&b.recv().unwrap()), CachedGrant { start: 500, end: 510, cached: false });
    assert_eq!(b.call(8, Request::Unlock { target: 7 }).status, Status::Ok);
    // Expanded again (up to where b asked lately).
    let g = grant(&a.call(4, cached(100, 110, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(g, CachedGrant { start: 0, end: 500, cached: true });
    // This one served nothing: 2 local locks over 2 recalls did not pay.
    b.send(9, cached(200, 210, Mode::Exclusive, Wait::Forever, (0, 1000)));
    assert_eq!(callback(&mut a).0, 4);
    assert_eq!(a.call(5, give_back(4, 500, 0)).status, Status::Ok);
    assert_eq!(grant(&b.recv().unwrap()), CachedGrant { start: 200, end: 210, cached: false });
    assert_eq!(b.call(10, Request::Unlock { target: 9 }).status, Status::Ok);
    let g = grant(&a.call(6, cached(100, 110, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(g, CachedGrant { start: 100, end: 110, cached: true }, "exact, kept");
    // Shared grants are judged by shared extents' recalls: none yet.
    let g = grant(&a.call(11, cached(700, 710, Mode::Shared, Wait::Forever, (600, 1000))));
    assert_eq!(g, CachedGrant { start: 600, end: 1000, cached: true });
}

#[test]
fn a_strided_writers_recalled_wide_grants_stop_its_growing_not_its_keeping() {
    let srv = server(|_| {});
    let mut a = caching(&srv);
    let mut b = caching(&srv);
    assert_eq!(
        grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000)))),
        CachedGrant { start: 0, end: 1000, cached: true }
    );
    // b writes its blocks inside a's wide grant: each is called back and given back as
    // a part that served nothing.
    for (k, block) in [500, 600, 700, 800].into_iter().enumerate() {
        let (bid, gid) = (10 + 2 * k as u64, 20 + k as u64);
        b.send(bid, cached(block, block + 10, Mode::Exclusive, Wait::Forever, (0, 1000)));
        let (target, part) = callback(&mut a);
        assert_eq!((part.start, part.end), (block, block + 10));
        let back = Request::GiveBack {
            target,
            start: part.start,
            end: part.end,
            downgrade: false,
            used: Some(0),
        };
        assert_eq!(a.call(gid, back).status, Status::Ok);
        let g = grant(&b.recv().unwrap());
        assert_eq!(g, CachedGrant { start: block, end: block + 10, cached: false });
        assert_eq!(b.call(bid + 1, Request::Unlock { target: bid }).status, Status::Ok);
    }
    // Four recalls that did not pay, all of grown grants: a stops growing but keeps its
    // own blocks (kept: nobody else asked for them).
    let g = grant(&a.call(3, cached(900, 905, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(g, CachedGrant { start: 900, end: 905, cached: true });
}

#[test]
fn the_history_keeps_expansion_off_ranges_others_asked_for() {
    let srv = server(|_| {});
    // (The server keeps its history while some session caches.)
    let mut a = caching(&srv);
    let mut b = Raw::connect(srv.tcp_addr().unwrap());
    // b locks and unlocks 600..700: nothing held there, but b was there lately.
    assert_eq!(b.call(1, lock(600, 700, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
    assert_eq!(b.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
    let g = grant(&a.call(2, cached(100, 110, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!((g.start, g.end, g.cached), (0, 600, true));
    // Taking turns on b's very range: exact, not kept.
    let g = grant(&a.call(3, cached(650, 660, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(g, CachedGrant { start: 650, end: 660, cached: false });
}

#[test]
fn the_comparison_policies() {
    for (policy, want) in [
        (CachePolicy::ExpandAll, CachedGrant { start: 0, end: 1000, cached: true }),
        (CachePolicy::Exact, CachedGrant { start: 100, end: 110, cached: true }),
    ] {
        let srv = server(|c| c.cache.policy = policy);
        let mut b = Raw::connect(srv.tcp_addr().unwrap());
        assert_eq!(b.call(1, lock(600, 700, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
        assert_eq!(b.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
        let mut a = caching(&srv);
        let g = grant(&a.call(2, cached(100, 110, Mode::Exclusive, Wait::Forever, (0, 1000))));
        assert_eq!(g, want, "{policy:?}");
    }
}

#[test]
fn over_its_bound_a_session_is_asked_for_its_oldest_extent() {
    let srv = server(|c| c.cache.max_kept_per_session = 2);
    let mut a = caching(&srv);
    for (id, at) in [(2, 0), (3, 100), (4, 200)] {
        let g =
            grant(&a.call(id, cached(at, at + 10, Mode::Exclusive, Wait::Forever, (at, at + 10))));
        assert!(g.cached);
    }
    let (id, part) = callback(&mut a);
    assert_eq!((id, part.start, part.end), (2, 0, 10));
}

#[test]
fn closing_a_caching_session_releases_its_extents() {
    let srv = server(|_| {});
    let mut a = caching(&srv);
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
    let mut b = Raw::connect(srv.tcp_addr().unwrap());
    b.send(7, lock(0, 1000, Mode::Exclusive, Wait::Forever));
    let _ = callback(&mut a);
    drop(a);
    assert_eq!(b.recv().unwrap().status, Status::Ok);
    let st = b.call(8, Request::Stats { max_entries: 10 }).stats.unwrap();
    assert_eq!(st.counters.holders, 1);
}

/// A caching session the server ends on its own (here: a malformed frame) is closed at
/// once, but keeps its locks until a lease after its last frame: its client may serve
/// local locks from its extents until then (docs/CACHING.md, "Failure behaviour").
#[test]
fn a_caching_session_the_server_ends_keeps_its_extents_for_a_lease_after_its_last_frame() {
    let lease = std::time::Duration::from_millis(1000);
    let srv = server(|c| c.lease = lease);
    let mut a = caching(&srv);
    let last_frame = std::time::Instant::now();
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
    let mut b = Raw::connect(srv.tcp_addr().unwrap());
    b.send(7, lock(0, 1000, Mode::Exclusive, Wait::Forever));
    let _ = callback(&mut a);
    a.send_bytes(&[2, 0, 0, 0, 0, 0]); // a frame too short to be one
    let mut ended = None;
    while let Some(f) = a.recv() {
        if f.is_notice() && f.status == Status::SessionEnded {
            ended = Some(EndReason::from_code(f.value));
        }
    }
    assert_eq!(ended, Some(EndReason::BadFraming));
    let closed = last_frame.elapsed();
    assert!(closed < lease, "the connection closed {closed:?} after the last frame");
    // b waits a lease too: it keeps its own session alive meanwhile.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let keepalive = {
        let (mut s, stop) = (b.s.try_clone().unwrap(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut out = Vec::new();
                RequestFrame { id: 100, request: Request::Keepalive }.encode(&mut out);
                std::io::Write::write_all(&mut s, &out).unwrap();
                std::thread::sleep(lease / 10);
            }
        })
    };
    let answer = |b: &mut Raw, id| loop {
        let f = b.recv().expect("an answer");
        if f.op != op::KEEPALIVE {
            assert_eq!(f.id, id, "{f:?}");
            return f;
        }
    };
    assert_eq!(answer(&mut b, 7).status, Status::Ok);
    let waited = last_frame.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    keepalive.join().unwrap();
    assert!(waited >= lease, "granted {waited:?} after the ended session's last frame");
    // The table kept nothing of it.
    b.send(8, Request::Stats { max_entries: 10 });
    let st = answer(&mut b, 8).stats.unwrap();
    assert_eq!((st.counters.holders, st.counters.sessions_open), (1, 1));
}

/// The value of the unlabelled series `name` in a scrape of `addr` (`engine` label aside).
fn scraped(addr: std::net::SocketAddr, name: &str) -> f64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.lines()
        .find(|l| l.starts_with(&format!("rangelock_{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the scrape"))
}

#[test]
fn metrics_count_kept_extents_callbacks_and_give_backs() {
    let srv = server(|c| c.metrics = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))));
    let m = srv.metrics_addr().unwrap();
    let mut a = caching(&srv);
    grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
    assert_eq!(scraped(m, "cached_extents"), 1.0);
    assert_eq!(scraped(m, "cache_expanded_total"), 1.0);
    let mut b = Raw::connect(srv.tcp_addr().unwrap());
    b.send(7, lock(500, 510, Mode::Exclusive, Wait::Forever));
    let _ = callback(&mut a);
    let r = a.call(
        3,
        Request::GiveBack { target: 2, start: 0, end: 1000, downgrade: false, used: None },
    );
    assert_eq!(r.status, Status::Ok);
    assert_eq!(b.recv().unwrap().status, Status::Ok);
    assert_eq!(scraped(m, "callbacks_total"), 1.0);
    assert_eq!(scraped(m, "give_backs_total"), 1.0);
    assert_eq!(scraped(m, "callback_seconds_count"), 1.0);
    assert_eq!(scraped(m, "cached_extents"), 0.0);
    let c = srv.cache_counts().unwrap();
    assert_eq!((c.callbacks, c.give_backs, c.kept, c.expanded), (1, 1, 0, 1));
}

/// `STATS_CACHED` (version 6, PROTOCOL.md §5.2) lists a kept extent as kept (state `2`)
/// and counts the cache as `Server::cache_counts` does; `STATS` and `STATS_NAMED` list it
/// as an ordinary holder, without the cache's counters. A version 5 session gets
/// `UNKNOWN_OP`, as from a server that predates it. The `rangelock` engine keeps nothing.
#[test]
fn stats_cached_marks_kept_extents_and_counts_the_cache() {
    for engine in TABLE_ENGINES {
        let srv = server(|c| c.engine = engine);
        let mut a = caching(&srv);
        grant(&a.call(2, cached(0, 10, Mode::Exclusive, Wait::Forever, (0, 1000))));
        // An ordinary lock of the caching session, not kept.
        assert_eq!(a.call(3, lock(2000, 2001, Mode::Shared, Wait::Try)).status, Status::Ok);
        let mut b = Raw::connect(srv.tcp_addr().unwrap());
        b.send(7, lock(500, 510, Mode::Exclusive, Wait::Forever));
        let _ = callback(&mut a);
        let r = b.call(8, Request::StatsCached { max_entries: 10 });
        assert_eq!((r.op, r.status), (op::STATS_CACHED, Status::Ok), "{engine:?}");
        let st = r.stats.unwrap();
        let listed: Vec<(u64, EntryState, bool)> =
            st.entries.iter().map(|e| (e.id, e.state, e.kept)).collect();
        assert_eq!(
            listed,
            [
                (2, EntryState::Held, true),
                (3, EntryState::Held, false),
                (7, EntryState::Waiting, false)
            ],
            "{engine:?}"
        );
        let c = st.counters;
        let counts = (c.cached_extents, c.callbacks, c.give_backs, c.cache_expanded);
        assert_eq!(counts, (1, 1, 0, 1), "{engine:?}");
        let s = srv.cache_counts().unwrap();
        assert_eq!(counts, (s.kept, s.callbacks, s.give_backs, s.expanded), "{engine:?}");
        // STATS and STATS_NAMED: the layouts of before.
        for (id, request) in
            [(9, Request::Stats { max_entries: 10 }), (10, Request::StatsNamed { max_entries: 10 })]
        {
            let st = b.call(id, request).stats.unwrap();
            assert_eq!(st.entries.len(), 3, "{engine:?}");
            assert!(st.entries.iter().all(|e| !e.kept), "{engine:?}");
            assert_eq!(st.entries[0].state, EntryState::Held, "{engine:?}");
            let c = st.counters;
            let counts = (c.cached_extents, c.callbacks, c.give_backs, c.cache_expanded);
            assert_eq!(counts, (0, 0, 0, 0), "{engine:?}");
        }
        // Given back: nothing kept, one give-back.
        let r = a.call(
            4,
            Request::GiveBack { target: 2, start: 0, end: 1000, downgrade: false, used: None },
        );
        assert_eq!(r.status, Status::Ok);
        assert_eq!(b.recv().unwrap().status, Status::Ok);
        let st = b.call(11, Request::StatsCached { max_entries: 10 }).stats.unwrap();
        let c = st.counters;
        let counts = (c.cached_extents, c.callbacks, c.give_backs, c.cache_expanded);
        assert_eq!(counts, (0, 1, 1, 1), "{engine:?}");
        assert!(st.entries.iter().all(|e| !e.kept), "{engine:?}");
        // A version 5 session: an unknown op, and the layouts it knows.
        let mut old = Raw::connect_version(srv.tcp_addr().unwrap(), 5);
        let r = old.call(1, Request::StatsCached { max_entries: 10 });
        assert_eq!((r.op, r.status), (op::UNKNOWN, Status::UnknownOp), "{engine:?}");
        let r = old.call(2, Request::StatsNamed { max_entries: 10 });
        assert_eq!((r.op, r.status), (op::STATS_NAMED, Status::Ok), "{engine:?}");
        assert_eq!(r.stats.unwrap().entries.len(), 2, "{engine:?}");
    }
    let srv = server(|c| c.engine = EngineKind::RangeLock);
    let mut a = Raw::connect(srv.tcp_addr().unwrap());
    assert_eq!(a.call(1, lock(0, 10, Mode::Exclusive, Wait::Try)).status, Status::Ok);
    let r = a.call(2, Request::StatsCached { max_entries: 10 });
    assert_eq!((r.op, r.status), (op::STATS_CACHED, Status::Ok));
    let st = r.stats.unwrap();
    assert_eq!((st.entries.len(), st.entries[0].kept, st.counters.cached_extents), (1, false, 0));
}
