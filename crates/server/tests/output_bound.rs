//! The per-session output bound (`max_output_bytes`) and the size of `STATS` answers, at
//! their edges, on every engine (issue 30, item 5): an answer a client reads is never what
//! closes its session; a `STATS` list is cut to fit the output bound and the frame limit
//! and the answer says how many entries it left out; a limit that would make an answer
//! impossible is refused at start.

mod common;

use common::{lock, Raw};
use rangelock_client::{Client, Endpoint};
use rangelock_server::protocol::*;
use rangelock_server::{EngineKind, Server, ServerConfig};

fn server(engine: EngineKind, f: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut c = ServerConfig { engine, ..ServerConfig::ephemeral() };
    f(&mut c);
    Server::start(c).unwrap()
}

/// A session holding `n` exclusive locks on `[2i, 2i + 1)`, ids 1..=n, taken in pipelined
/// batches.
fn holder(addr: std::net::SocketAddr, n: u64) -> Raw {
    let mut c = Raw::connect(addr);
    let batch = 10_000;
    for first in (1..=n).step_by(batch as usize) {
        let last = (first + batch - 1).min(n);
        let mut out = Vec::new();
        for id in first..=last {
            let request = lock(2 * id, 2 * id + 1, Mode::Exclusive, Wait::Try);
            RequestFrame { id, request }.encode(&mut out);
        }
        c.send_bytes(&out);
        for _ in first..=last {
            assert_eq!(c.recv().expect("answer").status, Status::Ok);
        }
    }
    c
}

/// With the output limit at the largest answer the server must send whole (162 bytes: a
/// `STATS_CACHED` answer without entries), every answer still arrives, pipelined or not:
/// the `STATS` list is cut to one entry, the `STATS_NAMED` and `STATS_CACHED` lists to
/// nothing, and they say so. One byte less is refused at start.
#[test]
fn every_answer_fits_at_an_output_limit_of_the_largest_fixed_answer() {
    assert_eq!(STATS_CACHED_ANSWER_BASE, 162);
    for engine in EngineKind::ALL {
        let e = Server::start(ServerConfig {
            engine,
            max_output_bytes: STATS_CACHED_ANSWER_BASE - 1,
            ..ServerConfig::ephemeral()
        })
        .unwrap_err();
        assert!(e.to_string().contains("max_output_bytes 161 is below 162"), "{engine:?}: {e}");

        let srv = server(engine, |c| c.max_output_bytes = STATS_CACHED_ANSWER_BASE);
        let mut c = Raw::connect(srv.tcp_addr().unwrap());
        // Eight requests in one write: one batch of the combiner, 516 bytes of answers.
        let mut out = Vec::new();
        for id in 1..=3u64 {
            let request = lock(10 * id, 10 * id + 1, Mode::Exclusive, Wait::Try);
            RequestFrame { id, request }.encode(&mut out);
        }
        RequestFrame { id: 4, request: Request::Stats { max_entries: 1000 } }.encode(&mut out);
        RequestFrame { id: 5, request: Request::Keepalive }.encode(&mut out);
        RequestFrame { id: 6, request: Request::Unlock { target: 1 } }.encode(&mut out);
        RequestFrame { id: 7, request: Request::StatsNamed { max_entries: 1000 } }.encode(&mut out);
        RequestFrame { id: 8, request: Request::StatsCached { max_entries: 1000 } }
            .encode(&mut out);
        c.send_bytes(&out);
        // In any order: the keepalive is answered by the handler, the rest by the engine.
        let mut answers = std::collections::BTreeMap::new();
        for n in 0..8 {
            let r = c.recv().unwrap_or_else(|| panic!("{engine:?}: closed after {n} answers"));
            assert_eq!(r.status, Status::Ok, "{engine:?}: {r:?}");
            answers.insert(r.id, r);
        }
        assert_eq!(answers.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7, 8]);
        let stats = &answers[&4];
        let st = stats.stats.as_ref().unwrap();
        // 114 + 42 bytes: one entry fits.
        assert_eq!((st.entries.len(), st.omitted, stats.value), (1, 2, 2), "{engine:?}");
        assert_eq!(st.counters.holders, 3, "{engine:?}");
        let named = &answers[&7];
        assert_eq!(named.op, op::STATS_NAMED, "{engine:?}");
        let st = named.stats.as_ref().unwrap();
        assert_eq!((st.entries.len(), st.omitted), (0, 2), "{engine:?}: one lock was released");
        let cached = &answers[&8];
        assert_eq!(cached.op, op::STATS_CACHED, "{engine:?}");
        let st = cached.stats.as_ref().unwrap();
        assert_eq!((st.entries.len(), st.omitted), (0, 2), "{engine:?}");
        assert_eq!(c.call(9, Request::Keepalive).status, Status::Ok, "{engine:?}");
        srv.shutdown();
    }
}

/// 2000 holders make a `STATS` answer of 84 114 bytes; with a 64 KiB output limit it is
/// cut to 1557 entries (65 508 bytes) and says 443 were left out. A client that pipelines
/// five of them with keepalives between, in one write (one batch of the combiner), and
/// reads its answers keeps its session on every engine: the answers the socket takes do
/// not count.
#[test]
fn stats_answers_are_cut_to_the_output_limit_and_a_reading_client_keeps_its_session() {
    let limit = 64 * 1024;
    let fit = stats_entries_within(limit);
    assert_eq!(fit, 1557);
    for engine in EngineKind::ALL {
        let srv = server(engine, |c| {
            c.max_output_bytes = limit;
            c.max_stats_entries = 100_000;
        });
        let addr = srv.tcp_addr().unwrap();
        let _holder = holder(addr, 2000);
        let mut c = Raw::connect(addr);
        let mut out = Vec::new();
        let mut id = 0;
        for _ in 0..5 {
            id += 1;
            RequestFrame { id, request: Request::Stats { max_entries: u32::MAX } }.encode(&mut out);
            for _ in 0..10 {
                id += 1;
                RequestFrame { id, request: Request::Keepalive }.encode(&mut out);
            }
        }
        c.send_bytes(&out);
        // Answers may come in any order (a keepalive is answered by the handler, a STATS
        // by the engine).
        let mut seen = std::collections::BTreeSet::new();
        for n in 0..id {
            let r = c.recv().unwrap_or_else(|| panic!("{engine:?}: closed after {n} answers"));
            assert_eq!(r.status, Status::Ok, "{engine:?}");
            assert!(seen.insert(r.id), "{engine:?}: answer {} twice", r.id);
            if let Some(st) = r.stats {
                assert_eq!(st.entries.len(), fit as usize, "{engine:?}");
                assert_eq!(st.omitted, 2000 - u64::from(fit), "{engine:?}");
                let ids: Vec<u64> = st.entries.iter().map(|e| e.id).collect();
                assert_eq!(ids, (1..=u64::from(fit)).collect::<Vec<_>>(), "{engine:?}: oldest");
                let mut frame = Vec::new();
                ResponseFrame::stats(r.id, st).encode(&mut frame);
                assert!(frame.len() <= limit, "{engine:?}: {} bytes", frame.len());
            }
        }
        assert_eq!(seen.len() as u64, id, "{engine:?}");
        assert_eq!(c.call(id + 1, Request::Keepalive).status, Status::Ok, "{engine:?}");
        srv.shutdown();
    }
}

/// The case: `--max-stats-entries 100000`, the default 1 MiB limit and 30 000
/// holders. `STATS` asking for 100 000 gets the 24 963 oldest and "5037 left out"
/// instead of a closed connection; `STATS_CACHED` (the version 6 client's `stats`), whose
/// entries are 44 bytes without a name after 162 bytes, the 23 827 oldest and "6173 left
/// out".
#[test]
fn a_stats_answer_over_the_default_output_limit_is_cut_not_fatal() {
    let srv = server(EngineKind::Combiner, |c| {
        c.max_stats_entries = 100_000;
        c.max_locks_per_session = 30_000;
    });
    let addr = srv.tcp_addr().unwrap();
    let _holder = holder(addr, 30_000);
    let mut raw = Raw::connect(addr);
    let st = raw.call(1, Request::Stats { max_entries: 100_000 }).stats.unwrap();
    assert_eq!((st.entries.len(), st.omitted), (24_963, 5037));
    assert_eq!(st.counters.holders, 30_000);
    let c = Client::connect(&Endpoint::from(addr)).unwrap();
    let st = c.stats(100_000).expect("the answer, not a lost connection");
    assert_eq!((st.entries.len(), st.omitted), (23_827, 6173));
    assert_eq!(st.counters.holders, 30_000);
    c.ping().unwrap();
    drop(c);
    assert_eq!(raw.call(2, Request::Keepalive).status, Status::Ok);
    srv.shutdown();
}

/// A `STATS` answer never passes the 16 MiB frame limit: with the most entries a server
/// may be configured for (399 454) and one holder more, the list stops there, the frame
/// is at most `MAX_RESPONSE_FRAME` and one entry is left out. One entry more than a frame
/// holds is refused at start. Both implementations of `STATS` (the table's and the
/// rangelock engine's).
#[test]
fn a_stats_answer_stops_at_the_largest_frame() {
    let most = MAX_STATS_ENTRIES;
    for engine in [EngineKind::Combiner, EngineKind::RangeLock] {
        let e = Server::start(ServerConfig {
            engine,
            max_stats_entries: most + 1,
            ..ServerConfig::ephemeral()
        })
        .unwrap_err();
        assert!(e.to_string().contains("max_stats_entries 399455 is above 399454"), "{e}");

        let srv = server(engine, |c| {
            c.max_stats_entries = most;
            c.max_output_bytes = 32 << 20;
            c.max_locks_per_session = most as usize + 1;
        });
        let addr = srv.tcp_addr().unwrap();
        let _holder = holder(addr, u64::from(most) + 1);
        let mut c = Raw::connect(addr);
        c.send(1, Request::Stats { max_entries: u32::MAX });
        let mut len = [0u8; 4];
        std::io::Read::read_exact(&mut c.s, &mut len).unwrap();
        let len = u32::from_le_bytes(len);
        assert!(len <= MAX_RESPONSE_FRAME, "{engine:?}: a frame of {len} bytes");
        let mut body = vec![0; len as usize];
        std::io::Read::read_exact(&mut c.s, &mut body).unwrap();
        let st = ResponseFrame::decode(&body).unwrap().stats.unwrap();
        assert_eq!((st.entries.len(), st.omitted), (most as usize, 1), "{engine:?}");
        assert_eq!(c.call(2, Request::Keepalive).status, Status::Ok);
        srv.shutdown();
    }
}
