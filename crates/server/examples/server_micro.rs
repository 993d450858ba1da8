//! A quick micro-benchmark of the server engines (seed 3, §5.2.2 shape) until the bench
//! harness grows the `server-micro` suite: clients lock a random range of 1..=64 units at a
//! random point of 2^16 units, exclusive with probability `writes`, then unlock; each
//! lock+unlock pair is one operation. `echo` is the ceiling: one KEEPALIVE round trip per
//! operation over the same transport and framing.
//!
//! `cargo run --release -p rangelock-server --example server_micro [-- SECONDS CLIENTS]`

use std::time::{Duration, Instant};

use rangelock_client::{Client, Endpoint, Mode, Wait};
use rangelock_server::protocol::GrantMode;
use rangelock_server::{EngineKind, Server, ServerConfig};

const UNITS: u64 = 1 << 16;

fn run(config: Option<ServerConfig>, writes: u32, secs: f64, clients: usize) -> (f64, u64, u64) {
    let server = Server::start(config.clone().unwrap_or_else(ServerConfig::ephemeral)).unwrap();
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let echo = config.is_none();
    let dur = Duration::from_secs_f64(secs);
    let mut lat: Vec<u64> = Vec::new();
    let mut ops = 0u64;
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..clients)
            .map(|t| {
                let ep = ep.clone();
                s.spawn(move || {
                    let c = Client::connect(&ep).unwrap();
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                    let mut rnd = move || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    let mut lat = Vec::new();
                    let start = Instant::now();
                    while start.elapsed() < dur {
                        let t0 = Instant::now();
                        if echo {
                            c.ping().unwrap();
                        } else {
                            let len = 1 + rnd() % 64;
                            let at = rnd() % (UNITS - len);
                            let mode = if (rnd() % 100) < writes as u64 {
                                Mode::Exclusive
                            } else {
                                Mode::Shared
                            };
                            c.lock(at..at + len, mode, Wait::Forever).unwrap().unlock().unwrap();
                        }
                        lat.push(t0.elapsed().as_nanos() as u64);
                    }
                    lat
                })
            })
            .collect();
        for h in hs {
            let l = h.join().unwrap();
            ops += l.len() as u64;
            lat.extend(l);
        }
    });
    server.shutdown();
    lat.sort_unstable();
    let p = |q: f64| lat.get(((lat.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(0);
    (ops as f64 / secs, p(0.5), p(0.99))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0.5);
    let clients: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    println!("server-micro: {clients} blocking clients over TCP loopback, {secs}s per cell, 2^16 units, ranges of 1..=64");
    println!(
        "{:<12} {:<5} {:>7} {:>12} {:>10} {:>10}",
        "engine", "grant", "writes", "ops/s", "p50 us", "p99 us"
    );
    let (ops, p50, p99) = run(None, 0, secs, clients);
    println!(
        "{:<12} {:<5} {:>7} {:>12.0} {:>10.1} {:>10.1}",
        "echo",
        "-",
        "-",
        ops,
        p50 as f64 / 1e3,
        p99 as f64 / 1e3
    );
    for writes in [0, 20, 100] {
        for engine in EngineKind::ALL {
            for grant in [GrantMode::Push, GrantMode::Poll] {
                let config = ServerConfig { engine, grant, ..ServerConfig::ephemeral() };
                let (ops, p50, p99) = run(Some(config), writes, secs, clients);
                println!(
                    "{:<12} {:<5} {:>6}% {:>12.0} {:>10.1} {:>10.1}",
                    engine.name(),
                    if grant == GrantMode::Push { "push" } else { "poll" },
                    writes,
                    ops,
                    p50 as f64 / 1e3,
                    p99 as f64 / 1e3
                );
            }
        }
    }
}
