//! Every engine (combiner, tree-mutex, tree-single, rangelock) in both grant modes, and
//! the combiner and rangelock engines with clients that read their answers from
//! shared-memory slots (`combiner-shm-poll`), under concurrent clients locking random
//! ranges: no two conflicting holders ever overlap (checked on a shared buffer), fencing
//! tokens increase per unit, and nothing is left held or queued at the end.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Checker, Rng};
use rangelock_client::{Client, ClientError, Endpoint, Mode, Wait};
use rangelock_server::protocol::GrantMode;
use rangelock_server::{EngineKind, Server, ServerConfig};

const UNITS: u64 = 96;
const THREADS: usize = 4;
const OPS: usize = 150;

fn run(engine: EngineKind, grant: GrantMode) {
    run_with(engine, grant, false);
}

fn run_with(engine: EngineKind, grant: GrantMode, shm: bool) {
    let shm_slots = if shm { THREADS as u32 } else { 0 };
    let server =
        Server::start(ServerConfig { engine, grant, shm_slots, ..ServerConfig::ephemeral() })
            .unwrap();
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let checker = Arc::new(Checker::new(UNITS as usize));
    let (granted, hits): (u64, u64) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (ep, checker) = (ep.clone(), checker.clone());
                s.spawn(move || {
                    let client = Client::connect(&ep).unwrap();
                    assert_eq!(client.grant_mode(), grant);
                    if shm {
                        client.attach_shm().unwrap();
                    }
                    let mut rng = Rng(0x1234_5678 + t as u64 * 7919);
                    let mut granted = 0;
                    for _ in 0..OPS {
                        let start = rng.below(UNITS - 1);
                        let end = (start + 1 + rng.below(16)).min(UNITS);
                        let mode = if rng.below(10) < 3 { Mode::Shared } else { Mode::Exclusive };
                        let wait = match rng.below(10) {
                            0 => Wait::Try,
                            1 => Wait::Timeout(Duration::from_millis(20)),
                            _ => Wait::Forever,
                        };
                        match client.lock(start..end, mode, wait) {
                            Ok(g) => {
                                granted += 1;
                                match mode {
                                    Mode::Exclusive => checker.exclusive(start, end, g.token()),
                                    Mode::Shared => checker.shared(start, end),
                                }
                                g.unlock().unwrap();
                            }
                            Err(ClientError::WouldBlock) if wait == Wait::Try => {}
                            Err(ClientError::TimedOut) if matches!(wait, Wait::Timeout(_)) => {}
                            Err(e) => panic!("unexpected error {e}"),
                        }
                    }
                    (granted, client.shm_hits())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    if shm {
        assert!(hits > 0, "some answers were read from the shared-memory slots");
    }
    let client = Client::connect(&ep).unwrap();
    let st = client.stats(100).unwrap();
    assert_eq!(st.counters.holders, 0);
    assert_eq!(st.counters.waiters, 0);
    assert!(st.entries.is_empty());
    assert_eq!(st.counters.grants, granted);
    assert_eq!(st.counters.releases, granted);
    assert!(granted as usize > THREADS * OPS / 2, "most requests were granted");
    drop(client);
    server.shutdown();
}

#[test]
fn combiner_push() {
    run(EngineKind::Combiner, GrantMode::Push);
}

#[test]
fn combiner_shm_poll() {
    run_with(EngineKind::Combiner, GrantMode::Push, true);
}

#[test]
fn rangelock_shm_poll() {
    run_with(EngineKind::RangeLock, GrantMode::Push, true);
}

#[test]
fn combiner_poll() {
    run(EngineKind::Combiner, GrantMode::Poll);
}

#[test]
fn tree_mutex_push() {
    run(EngineKind::TreeMutex, GrantMode::Push);
}

#[test]
fn tree_mutex_poll() {
    run(EngineKind::TreeMutex, GrantMode::Poll);
}

#[test]
fn tree_single_push() {
    run(EngineKind::TreeSingle, GrantMode::Push);
}

#[test]
fn tree_single_poll() {
    run(EngineKind::TreeSingle, GrantMode::Poll);
}

#[test]
fn rangelock_push() {
    run(EngineKind::RangeLock, GrantMode::Push);
}

#[test]
fn rangelock_poll() {
    run(EngineKind::RangeLock, GrantMode::Poll);
}
