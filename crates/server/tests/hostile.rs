//! A live server under random bytes and random valid-but-hostile requests from many
//! connections, while a well-behaved client keeps locking: the good client always makes
//! progress, the server never crashes, and once the hostile sessions are gone nothing is
//! left held or queued.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::Rng;
use rangelock_client::{Client, Endpoint, Mode, Wait};
use rangelock_server::protocol::*;
use rangelock_server::{EngineKind, Server, ServerConfig};

fn hostile_connection(addr: std::net::SocketAddr, rng: &mut Rng) {
    let Ok(mut s) = TcpStream::connect(addr) else { return };
    let mut out = Vec::new();
    match rng.below(8) {
        // Garbage instead of a hello.
        0 => {
            out.extend((0..rng.below(64)).map(|_| rng.next() as u8));
            let _ = s.write_all(&out);
            return;
        }
        // A hello with a wrong version.
        1 => ClientHello::new(VERSION + 1 + rng.below(100) as u16).encode(&mut out),
        _ => ClientHello::new(VERSION).encode(&mut out),
    }
    if s.write_all(&out).is_err() {
        return;
    }
    let mut hello = [0u8; SERVER_HELLO_LEN];
    if s.read_exact(&mut hello).is_err() {
        return;
    }
    out.clear();
    for _ in 0..rng.below(40) {
        let id = rng.below(8);
        let target = rng.below(10);
        let start = match rng.below(4) {
            0 => 0,
            1 => u64::MAX - 1 - rng.below(4),
            _ => rng.below(64),
        };
        let end = match rng.below(5) {
            0 => u64::MAX,
            1 => start, // empty: invalid
            _ => start.saturating_add(1 + rng.below(16)),
        };
        let mode = if rng.below(2) == 0 { Mode::Shared } else { Mode::Exclusive };
        let wait = match rng.below(3) {
            0 => Wait::Try,
            1 => Wait::Timeout(Duration::from_millis(rng.below(20))),
            _ => Wait::Forever,
        };
        match rng.below(12) {
            0..=4 => {
                // Encode by hand so invalid ranges reach the server too.
                let at = out.len();
                RequestFrame { id, request: Request::Lock { start, end: start + 1, mode, wait } }
                    .encode(&mut out);
                out[at + 21..at + 29].copy_from_slice(&end.to_le_bytes());
            }
            5 => RequestFrame { id, request: Request::Unlock { target } }.encode(&mut out),
            6 => RequestFrame { id, request: Request::Cancel { target } }.encode(&mut out),
            7 => RequestFrame { id, request: Request::Poll { target } }.encode(&mut out),
            8 => RequestFrame { id, request: Request::Stats { max_entries: u32::MAX } }
                .encode(&mut out),
            9 => RequestFrame { id, request: Request::Keepalive }.encode(&mut out),
            10 => {
                // A plausible frame with a random body.
                let len = 9 + rng.below(30) as u32;
                out.extend_from_slice(&len.to_le_bytes());
                out.extend((0..len).map(|_| rng.next() as u8));
            }
            _ => {
                // Raw garbage: usually breaks the framing and ends the connection.
                out.extend((0..rng.below(20)).map(|_| rng.next() as u8));
            }
        }
    }
    let _ = s.write_all(&out);
    if rng.below(2) == 0 {
        // Read a little, then vanish without unlocking anything.
        let mut buf = [0u8; 256];
        let _ = s.set_read_timeout(Some(Duration::from_millis(5)));
        let _ = s.read(&mut buf);
    }
}

fn run(engine: EngineKind) {
    let server = Server::start(ServerConfig {
        engine,
        max_locks_per_session: 6,
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let addr = server.tcp_addr().unwrap();
    let ep = Endpoint::from(addr);
    std::thread::scope(|s| {
        let hostile: Vec<_> = (0..3)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = Rng(0xdead_beef + t);
                    for _ in 0..150 {
                        hostile_connection(addr, &mut rng);
                    }
                })
            })
            .collect();
        let good = s.spawn(|| {
            let c = Client::connect(&ep).unwrap();
            let mut last = 0;
            for i in 0..200u64 {
                let g = c.lock_exclusive(i % 32..i % 32 + 4).unwrap();
                assert!(g.token() > last);
                last = g.token();
                g.unlock().unwrap();
            }
        });
        for h in hostile {
            h.join().unwrap();
        }
        good.join().unwrap();
    });
    // The hostile connections are all closed on our side; wait (on replies) until the
    // server has ended their sessions, then nothing may be left.
    let c = Client::connect(&ep).unwrap();
    let mut st = c.stats(0).unwrap();
    for _ in 0..100_000 {
        if st.counters.sessions_open == 1 {
            break;
        }
        std::thread::yield_now();
        st = c.stats(0).unwrap();
    }
    assert_eq!(st.counters.sessions_open, 1, "{:?}", st.counters);
    assert_eq!(st.counters.holders, 0);
    assert_eq!(st.counters.waiters, 0);
    assert!(st.counters.errors > 0, "hostile input was answered with errors");
    let g = c.lock(0..u64::MAX, Mode::Exclusive, Wait::Try).expect("the whole domain is free");
    drop(g);
    drop(c);
    server.shutdown();
}

#[test]
fn hostile_clients_do_not_hurt_a_good_one_combiner() {
    run(EngineKind::Combiner);
}

#[test]
fn hostile_clients_do_not_hurt_a_good_one_tree_mutex() {
    run(EngineKind::TreeMutex);
}

#[test]
fn hostile_clients_do_not_hurt_a_good_one_rangelock() {
    run(EngineKind::RangeLock);
}
