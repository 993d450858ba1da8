//! `server-cached`: cached locks with callbacks (protocol version 6, `docs/CACHING.md`)
//! against today's uncached service, and against the two policies the file systems use.
//!
//! Each client is a thread of the bench process with its own connection to a fresh
//! in-process `rangelockd` (the combiner engine) on loopback, at 1, 16 and 48 clients
//! (quick: 16). One op is one lock + unlock cycle. Variants:
//!
//! - `combiner`: today's service, uncached: a blocking `Client`, the unlock pipelined;
//! - `cached`: a `BlockingCachedClient` against the server's policy `history` (ours);
//! - `cached-expand-all`: the same client, the server's policy `expand-all` (always the
//!   whole free space: Lustre's default);
//! - `cached-exact`: the same client, the server's policy `exact` (never grow, always keep:
//!   Lustre's lockahead);
//! - `cached-off`: the same client against a server that caches nothing (`off`): it falls
//!   back to plain locks through its own runtime, the floor of every grant the server
//!   does not let it keep (the blocking cached client waits for its answers through a
//!   runtime thread, where the blocking `Client` reads them on the calling thread);
//! - `echo`: one `KEEPALIVE` round trip a cycle, the ceiling of `combiner` (not of the
//!   cached variants, whose kept locks skip the round trip: a reference row here).
//!
//! Every cached client asks for the 2^16-unit granule around its range as its desired
//! range. Workloads (the `workload` param):
//!
//! - `local`: client `i` locks exclusive random 64-unit ranges inside its own granule
//!   `[i * 2^16, (i + 1) * 2^16)`;
//! - `strided`: clients interleave 64-unit blocks of one 2^16-unit file (1024 blocks):
//!   client `i` of `n` locks its blocks `i, i + n, i + 2n, ...` in turn, exclusive, and
//!   starts over at block `i` after the last of them that fits in the file (Lustre's
//!   strided writers: no two clients write one block while `n` ≤ 1024);
//! - `pingpong`: clients in pairs, each pair on one 64-unit range of its own granule, both
//!   locking it exclusive in a loop (a single client has no partner: it runs alone);
//! - `mix-0`, `mix-1`, `mix-20`, `mix-100`: the seed's micro mixes (`server-micro`): a
//!   uniform range of 1 to 1024 units at a uniform start in 2^16 units, exclusive with
//!   that percentage.
//!
//! Extras: `callbacks_per_cycle` and `give_backs_per_cycle` (from the server's metrics
//! counters, over the measurement; 0 for `combiner`).

use std::sync::Mutex;

use rangelock_client::{
    BlockingCachedClient, CacheOptions, Client, ConnectOptions, Endpoint, Mode, Wait,
};
use rangelock_server::{CachePolicy, EngineKind, Server, ServerConfig};
use serde_json::Value;

use super::common;
use super::server_micro::client_counts;
use crate::harness::{
    run_threads_with, Case, LatencySampler, Options, Sample, Span, SplitMix64, Suite, ThreadResult,
};
use crate::peers::echo;

/// Units of a granule: the desired range of a cached client, a client's own region in
/// `local`, the file of `strided` and the space of the mixes.
pub const GRANULE: u64 = 1 << 16;
/// Units of one lock in `local`, `strided` and `pingpong`.
pub const BLOCK: u64 = 64;
/// The longest range of the mixes (`server-micro`'s).
pub const MAX_RANGE_UNITS: u64 = 1024;

const FULL_CLIENTS: [usize; 3] = [1, 16, 48];
const QUICK_CLIENTS: [usize; 1] = [16];

/// A workload of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    Local,
    Strided,
    PingPong,
    Mix(u64),
}

impl Workload {
    const ALL: [Workload; 7] = [
        Workload::Local,
        Workload::Strided,
        Workload::PingPong,
        Workload::Mix(0),
        Workload::Mix(1),
        Workload::Mix(20),
        Workload::Mix(100),
    ];

    fn name(self) -> String {
        match self {
            Workload::Local => "local".into(),
            Workload::Strided => "strided".into(),
            Workload::PingPong => "pingpong".into(),
            Workload::Mix(p) => format!("mix-{p}"),
        }
    }
}

/// A variant: uncached, cached under a policy, or the echo ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Combiner,
    Cached(CachePolicy),
    Echo,
}

impl Variant {
    const ALL: [(&'static str, Variant); 6] = [
        ("combiner", Variant::Combiner),
        ("cached", Variant::Cached(CachePolicy::History)),
        ("cached-expand-all", Variant::Cached(CachePolicy::ExpandAll)),
        ("cached-exact", Variant::Cached(CachePolicy::Exact)),
        ("cached-off", Variant::Cached(CachePolicy::Off)),
        (echo::NAME, Variant::Echo),
    ];
}

/// The `server-cached` suite.
#[derive(Debug, Default)]
pub struct ServerCached;

impl Suite for ServerCached {
    fn name(&self) -> &'static str {
        "server-cached"
    }

    fn about(&self) -> &'static str {
        "Cached locks with callbacks: clients lock+unlock in their own region (local), in \
         interleaved blocks of one file (strided), in pairs on one range (pingpong) or the \
         seed's micro mixes, uncached (combiner) or cached under our history policy, \
         Lustre's expand-all or its exact lockahead; ceiling echo"
    }

    fn quantity(&self) -> String {
        "lock+unlock cycles per second".to_owned()
    }

    fn baseline(&self) -> &'static str {
        "combiner"
    }

    fn x_axis(&self) -> crate::harness::XAxis {
        crate::harness::XAxis::Clients
    }

    /// None: `echo` bounds the uncached variants only (a cached lock skips the round
    /// trip), so it is a reference row here, not a ceiling of every row.
    fn ceilings(&self) -> &'static [crate::harness::Ceiling] {
        &[]
    }

    fn table_extras(&self) -> &'static [(&'static str, &'static str)] {
        &[("callbacks_per_cycle", "callbacks/cycle"), ("give_backs_per_cycle", "give-backs/cycle")]
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let mut cases = Vec::new();
        for workload in Workload::ALL {
            for (clients, oversubscribed) in client_counts(opts, &FULL_CLIENTS, &QUICK_CLIENTS) {
                for (name, variant) in Variant::ALL {
                    if !common::selected(name) {
                        continue;
                    }
                    cases.push(Case {
                        variant: name.to_owned(),
                        threads: clients,
                        params: common::params([
                            ("workload", workload.name().into()),
                            ("granule", GRANULE.into()),
                            ("block", BLOCK.into()),
                        ]),
                        oversubscribed,
                        run: Box::new(move |span| run(variant, workload, clients, span)),
                    });
                }
            }
        }
        cases
    }
}

/// A client of either kind.
enum Conn {
    Plain(Client),
    Cached(BlockingCachedClient),
}

fn start_server(policy: CachePolicy) -> std::io::Result<Server> {
    let mut config = ServerConfig { engine: EngineKind::Combiner, ..ServerConfig::ephemeral() };
    config.cache.policy = policy;
    Server::start(config)
}

/// The range and mode of client `i`'s `k`-th cycle.
fn next(w: Workload, i: usize, clients: usize, k: u64, rng: &mut SplitMix64) -> (u64, u64, Mode) {
    let i = i as u64;
    let n = clients as u64;
    match w {
        Workload::Local => {
            let at = i * GRANULE + rng.below(GRANULE / BLOCK) * BLOCK;
            (at, at + BLOCK, Mode::Exclusive)
        }
        Workload::Strided => {
            // Each client cycles over its own blocks only: wrapping around the file
            // (`(i + k * n) % blocks`) would walk client `i` into other clients' blocks
            // whenever `n` does not divide 1024 (at 48 clients, every block had 3 writers).
            let blocks = GRANULE / BLOCK;
            let own = (blocks / n).max(1);
            let b = (i + (k % own) * n) % blocks;
            (b * BLOCK, b * BLOCK + BLOCK, Mode::Exclusive)
        }
        Workload::PingPong => {
            let at = (i / 2) * GRANULE;
            (at, at + BLOCK, Mode::Exclusive)
        }
        Workload::Mix(pct) => {
            let len = 1 + rng.below(MAX_RANGE_UNITS);
            let start = rng.below(GRANULE - len + 1);
            let mode = if rng.below(100) < pct { Mode::Exclusive } else { Mode::Shared };
            (start, start + len, mode)
        }
    }
}

fn run(variant: Variant, workload: Workload, clients: usize, span: Span) -> Sample {
    let policy = match variant {
        Variant::Cached(p) => p,
        _ => CachePolicy::Off,
    };
    let server = match start_server(policy) {
        Ok(s) => s,
        Err(e) => return Sample::skipped(format!("cannot start the server: {e}")),
    };
    let Some(addr) = server.tcp_addr() else {
        return Sample::skipped("the server has no TCP listener");
    };
    let ep = Endpoint::from(addr);
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let fail = |e: String| {
        failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        ThreadResult::default()
    };
    let counts_before = server.cache_counts();
    let mut sample = run_threads_with(
        clients,
        span,
        |_| match variant {
            Variant::Cached(_) => {
                let opts = CacheOptions { granule: GRANULE, ..CacheOptions::default() };
                BlockingCachedClient::connect_with(&ep, &ConnectOptions::default(), opts)
                    .map(Conn::Cached)
            }
            _ => Client::connect(&ep).map(Conn::Plain),
        },
        |i, conn, ctl| {
            let conn = match conn {
                Ok(c) => c,
                Err(e) => return fail(format!("connect: {e}")),
            };
            let mut rng = SplitMix64::new(0xCAC4_E000 + i as u64);
            let mut sampler = LatencySampler::new(16);
            let mut ops = 0u64;
            while ctl.running() {
                let (start, end, mode) = next(workload, i, clients, ops, &mut rng);
                let t = sampler.start();
                let r = match (&conn, variant) {
                    (Conn::Plain(c), Variant::Echo) => c.ping(),
                    (Conn::Plain(c), _) => {
                        c.lock(start..end, mode, Wait::Forever).and_then(|g| g.unlock_pipelined())
                    }
                    (Conn::Cached(c), _) => c.lock(start..end, mode, Wait::Forever).map(drop),
                };
                if let Err(e) = r {
                    return fail(e.to_string());
                }
                sampler.finish(t);
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: sampler.into_latencies() }
        },
    );
    let counts = server.cache_counts();
    server.shutdown();
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Sample::skipped(format!("a client failed: {e}"));
    }
    let cycles = sample.ops.max(1) as f64;
    if let (Some(a), Some(b)) = (counts_before, counts) {
        let per = |x: u64, y: u64| Value::from(y.saturating_sub(x) as f64 / cycles);
        sample.extra.insert("callbacks_per_cycle".into(), per(a.callbacks, b.callbacks));
        sample.extra.insert("give_backs_per_cycle".into(), per(a.give_backs, b.give_backs));
    }
    sample
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn strided_clients_never_share_a_block() {
        let mut rng = SplitMix64::new(1);
        for clients in [1, 2, 15, 16, 17, 48, 100] {
            let mut writer: HashMap<u64, usize> = HashMap::new();
            for i in 0..clients {
                for k in 0..3000 {
                    let (start, end, _) = next(Workload::Strided, i, clients, k, &mut rng);
                    assert_eq!(end - start, BLOCK);
                    assert!(end <= GRANULE, "{clients} clients: {start}..{end} outside the file");
                    let first = *writer.entry(start).or_insert(i);
                    assert_eq!(first, i, "{clients} clients: block at {start} has two writers");
                }
            }
        }
    }
}
