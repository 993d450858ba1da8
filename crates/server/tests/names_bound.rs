//! The memory bound of named resources (the named-resources issue, item 9): a name lives
//! only while something is held or queued on it, one session keeps at most `--max-locks`
//! names alive, the server at most `--max-names` (`TOO_MANY_NAMES` beyond, the session
//! goes on), and a flood of distinct names leaves nothing behind.

mod common;

use common::Raw;
use rangelock_server::protocol::*;
use rangelock_server::{EngineKind, Server, ServerConfig};

/// Every engine serves names.
const NAMED_ENGINES: [EngineKind; 4] = EngineKind::ALL;

fn server(engine: EngineKind, f: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut c = ServerConfig { engine, ..ServerConfig::ephemeral() };
    f(&mut c);
    Server::start(c).unwrap()
}

fn try_named(name: &[u8]) -> Request<'_> {
    Request::LockNamed { start: 0, end: 10, mode: Mode::Exclusive, wait: Wait::Try, name }
}

/// The counters of a `STATS_NAMED`.
fn counters(c: &mut Raw, id: u64) -> Counters {
    c.call(id, Request::StatsNamed { max_entries: 0 }).stats.expect("a stats body").counters
}

/// Sends `requests` in one write and returns their answers by id (in any order).
fn pipeline(c: &mut Raw, requests: &[(u64, Request<'_>)]) -> Vec<ResponseFrame> {
    let mut out = Vec::new();
    for &(id, request) in requests {
        RequestFrame { id, request }.encode(&mut out);
    }
    c.send_bytes(&out);
    let mut answers: Vec<ResponseFrame> =
        requests.iter().map(|_| c.recv().expect("an answer")).collect();
    answers.sort_by_key(|r| r.id);
    answers
}

#[test]
fn a_lock_on_one_name_too_many_is_refused_and_the_session_goes_on() {
    for engine in NAMED_ENGINES {
        let srv = server(engine, |c| c.max_names = 2);
        let mut c = Raw::connect(srv.tcp_addr().unwrap());
        assert_eq!(c.call(1, try_named(b"a")).status, Status::Ok);
        assert_eq!(c.call(2, try_named(b"b")).status, Status::Ok);
        let r = c.call(3, try_named(b"c"));
        assert_eq!((r.op, r.status, r.value), (op::LOCK, Status::TooManyNames, 2), "{engine:?}");
        // A live name and the unnamed resource are not new names.
        let shared = Request::LockNamed {
            start: 20,
            end: 30,
            mode: Mode::Shared,
            wait: Wait::Try,
            name: b"a",
        };
        assert_eq!(c.call(4, shared).status, Status::Ok, "{engine:?}");
        assert_eq!(c.call(5, common::lock(0, 1, Mode::Exclusive, Wait::Try)).status, Status::Ok);
        // Name `a` goes with its last lock; then `c` fits.
        assert_eq!(c.call(6, Request::Unlock { target: 1 }).status, Status::Ok);
        assert_eq!(c.call(7, try_named(b"c")).status, Status::TooManyNames, "{engine:?}");
        assert_eq!(c.call(8, Request::Unlock { target: 4 }).status, Status::Ok);
        assert_eq!(c.call(9, try_named(b"c")).status, Status::Ok, "{engine:?}");
        let n = counters(&mut c, 10);
        assert_eq!((n.names_live, n.named_holders, n.holders), (2, 2, 3), "{engine:?}");
        srv.shutdown();
    }
}

/// A hostile session pipelines 3 000 locks on distinct names: its `--max-locks` (1 000)
/// keeps the live names at 1 000 (the rest `TOO_MANY_LOCKS`); when it goes, so do they.
#[test]
fn a_flood_of_names_from_one_session_stops_at_its_lock_limit_and_ends_with_it() {
    for engine in NAMED_ENGINES {
        let srv = server(engine, |c| c.max_locks_per_session = 1000);
        let addr = srv.tcp_addr().unwrap();
        let mut hostile = Raw::connect(addr);
        let names: Vec<Vec<u8>> =
            (0..3000u32).map(|i| format!("flood/{i:0>1000}").into_bytes()).collect();
        let requests: Vec<(u64, Request<'_>)> =
            names.iter().enumerate().map(|(i, n)| (i as u64 + 1, try_named(n))).collect();
        let answers = pipeline(&mut hostile, &requests);
        let ok = answers.iter().filter(|r| r.status == Status::Ok).count();
        let refused = answers.iter().filter(|r| r.status == Status::TooManyLocks).count();
        assert_eq!((ok, refused), (1000, 2000), "{engine:?}");
        let mut probe = Raw::connect(addr);
        let n = counters(&mut probe, 1);
        assert_eq!((n.names_live, n.named_holders), (1000, 1000), "{engine:?}");
        drop(hostile);
        // The close is the server's to notice: ask until it has.
        let mut id = 1;
        let gone = (0..10_000).any(|_| {
            id += 1;
            counters(&mut probe, id).names_live == 0
        });
        assert!(gone, "{engine:?}: the session's names outlived it");
        srv.shutdown();
    }
}

/// 100 000 distinct names locked and released one after another (pipelined in batches)
/// leave no name behind; the counters saw every one.
#[test]
fn a_hundred_thousand_distinct_names_leave_nothing_behind() {
    for engine in NAMED_ENGINES {
        let srv = server(engine, |_| {});
        let mut c = Raw::connect(srv.tcp_addr().unwrap());
        let mut id = 0;
        for batch in 0..100u64 {
            let names: Vec<Vec<u8>> =
                (0..1000u64).map(|i| format!("t/{}", batch * 1000 + i).into_bytes()).collect();
            let mut requests = Vec::new();
            for n in &names {
                id += 2;
                requests.push((id - 1, try_named(n)));
                requests.push((id, Request::Unlock { target: id - 1 }));
            }
            for r in pipeline(&mut c, &requests) {
                assert_eq!(r.status, Status::Ok, "{engine:?}: {r:?}");
            }
        }
        let n = counters(&mut c, id + 1);
        assert_eq!((n.names_live, n.named_holders, n.holders), (0, 0, 0), "{engine:?}");
        assert_eq!((n.grants, n.releases), (100_000, 100_000), "{engine:?}");
        srv.shutdown();
    }
}
