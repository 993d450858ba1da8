//! `server-micro`: the micro-benchmark of *Server-sided range locking is better than
//! client-sided locking* (§5.2.2) — clients lock a random range of a 2^16-unit space,
//! shared or exclusive, and unlock it. The paper's question is server-sided against
//! client-sided locking **over the same network**, so the variants are:
//!
//! - **server-sided**: `rangelockd` with every engine (`combiner`, `tree-single`, …),
//!   grants pushed to the waiting client (our product, beyond the seed);
//!   `combiner-poll` and `tree-single-poll`, the seed's own designs: the combiner and the
//!   one-thread interval tree with poll grants, a client whose `LOCK` must wait polling
//!   with `POLL` requests until the grant (the paper's "combiner polling with eRPC" and its
//!   interval tree, whose clients poll too; one difference: the seed's combiner handler
//!   answers every `LOCK` before the combiner decides, so its client "must poll at least
//!   once", while ours answers a lock granted at once with the grant, and only a lock that
//!   waits is polled for; `round_trips_per_lock` shows it: near 1 here where the seed's
//!   combiner pays at least 2); `combiner-shm-poll`, the combiner with
//!   clients that read their answers from shared-memory slots (the paper's "combiner
//!   polling with RDMA"); `combiner-auth` and `combiner-tls-auth`, the combiner with
//!   authentication, over plain TCP and over TLS;
//! - **client-sided over the network**: `dslr-redis` and `citron-redis`, DSLR and the
//!   Citron-like tree with their words in a `redis-server` over the same loopback TCP, each
//!   remote operation (or batch, where the paper batches) one round trip, as each RDMA
//!   operation is in the paper;
//! - **ceiling**: `echo`, pings over the same transport;
//! - **local-memory references**: `dslr-shm` and `citron-like`, the same client-sided locks
//!   on a shared mapping of this host, with no round trip at all. They show what the
//!   algorithms cost without a network; they are not the paper's comparator.
//!
//! **Round trips** (`round_trips_per_lock`, `round_trips_per_unlock`): network round trips
//! a client waited for per acquisition (polling included) and per release, averaged over
//! the measurement. A `rangelockd` request is one (a waiting `LOCK` too when the grant is
//! pushed); with poll grants every `POLL` the client sent is one more
//! ([`Client::polls`]); the Redis peers count their connection's (see
//! [`crate::peers::redis`]); the local-memory references have none and record none.
//!
//! `combiner-auth` runs the combiner with an auth table of one token (whose ranges cover
//! the benchmark's unit space, so every `LOCK` passes the range check); its clients send
//! the token. `combiner-tls-auth` adds TLS on the TCP listener (TLS 1.3, rustls with
//! `ring`), with a throwaway CA and server certificate generated per measurement
//! ([`TempPki`]); its clients connect with TLS and the token (handshakes are untimed, like
//! every connect). Beside `combiner` they show what authentication and TLS cost a
//! session: `RANGELOCK_BENCH_ONLY=combiner,combiner-auth,combiner-tls-auth rangelock bench
//! server-micro --threads 16` runs only those three; our bar is `combiner-tls-auth` >= 0.8x
//! `combiner` there.
//!
//! Each client is a thread of the bench process with its own connection (a blocking
//! [`Client`] for `rangelockd` and `echo`, its own Redis connection for `dslr-redis`, its
//! own view of the mapping for `dslr-shm` and `citron-like`). A measurement starts a fresh server on
//! `127.0.0.1:0` (or `redis-server` on a free port, or a fresh mapping), connects every
//! client untimed, runs, and stops the server.
//!
//! Workload: range length uniform in `1..=1024` units at a uniform start, exclusive with
//! probability `exclusive_pct`; DSLR segments are 2^8 units (seed 3), so a range touches
//! 1 to 5 segments. A lock + unlock **cycle** is two requests: `ops_per_sec` counts
//! requests (`echo` does two pings per cycle); `cycles_per_sec` is half of it. Latencies
//! are of whole cycles, one cycle in 16 sampled.
//!
//! **Server CPU** (`server_cpu_ns_per_request`): CPU time of the server over the
//! measurement, including connecting the clients, divided by requests. For `rangelockd`
//! it is the sum over the process's threads named `rangelock-server`, `rangelock-handler`
//! and `rangelock-combiner` (`/proc/self/task/<tid>/schedstat`, nanoseconds; the clients'
//! threads are `rangelock-client` and not counted); for `dslr-redis` the `redis-server`
//! process (`/proc/<pid>/stat`, clock ticks); `dslr-shm` and `citron-like` have no server
//! and report none.
//!
//! **`combiner-shm-poll`**, the seed's "combiner polling with RDMA" on one host: clients
//! send `LOCK`/`UNLOCK` to the combiner as `combiner`'s do, but learn that a lock is granted
//! by polling a ready flag in the server's memory (seed 3 §4.1, §4.3.1). The server runs
//! the combiner with shared-memory slots (`--shm-slots 128`); each client sends
//! `SHM_ATTACH` once after connecting (untimed) and maps its own 64-byte line of a file
//! read-only (`docs/PROTOCOL.md` §9; a line per client, unlike the seed's adjacent bytes,
//! whose false sharing the seed suspects). The combiner publishes each `LOCK` answer in
//! the slot (a seqlock write) before it queues the answer frame; the client
//! (`Client::attach_shm`) polls the slot, spinning for 5 us, then yielding between reads up
//! to 50 us, then waits for the frame. Requests, transport, pipelined unlocks and engine
//! are `combiner`'s. Unlike the seed: the answer frame is still sent (the protocol keeps
//! every guarantee on the connection, and the frame wakes a client that stopped polling),
//! so the server's CPU per request is not lower than `combiner`'s; and a poll is a local
//! load (~100 ns when the line moved), not a 2.7 us RDMA read, while on 2 cores a polling
//! client takes CPU from the combiner and the other clients, which is why the poll is
//! bounded (the seed's clients had a core each). `shm_slot_answer_share` is the share of
//! `LOCK`s answered from the slot.
//!
//! **What to expect on one host.** Every system here is CPU-bound on the same cores, so a
//! round trip costs CPU the server also needs, unlike the seed's NICs; at 1 client every
//! system waits ~80 us per request for a wake-up across the vCPUs and the order says
//! little. One run of `rangelock bench server-micro --threads 1,16,48 --rounds 3` on a
//! 2-vCPU VM (commit `753f6e0`; `echo` reached 112-121k requests/s): `combiner` led the
//! best client-sided lock at every write ratio, 1.42-1.70x at
//! 0-1 % exclusive and 1.64-2.96x at 20-100 %, by more as contention added polling round
//! trips to the client-sided locks (`dslr-redis` 2.99 round trips per lock at 0 %, 5.82 at
//! 100 % and 48 clients; `citron-redis` 1.00 and 3.06; the engines 1.00). DSLR pays a round
//! trip per 256-unit segment (a range of up to 1024 units touches 3 on average) plus
//! re-reads; Citron's batch makes an uncontended lock one round trip, but each is a Lua
//! script (redis-server CPU per request at 48 clients, 0 %: 16.0 us for `citron-redis`,
//! 13.6 us for `dslr-redis`, against 9.7 us for the combiner's server).

use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rangelock::Mode;
use rangelock_client::{Client, ConnectOptions, Endpoint, TlsOptions, Wait};
use rangelock_server::protocol::GrantMode;
use rangelock_server::{AuthTable, EngineKind, Server, ServerConfig, TlsSettings};
use serde_json::Value;

use super::common;
use super::server_cpu::ThreadsCpu;
use crate::harness::{
    run_threads_with, Case, Ceiling, LatencySampler, Options, Sample, Span, SplitMix64, Suite,
    ThreadCtl, ThreadResult, DEFAULT_THREADS,
};
use crate::peers::citron_redis::{self, CitronRedis};
use crate::peers::citron_shm::{self, CitronClient, CitronLayout};
use crate::peers::dslr_redis::RedisWords;
use crate::peers::dslr_shm::{DslrClient, DslrLayout, ShmWords, SEGMENT_UNITS};
use crate::peers::echo;
use crate::peers::redis::{self, RedisServer};
use crate::tls_pki::TempPki;

/// Units of the lock space (seed 3).
pub const UNITS: u64 = 1 << 16;
/// Longest range of the micro-benchmark.
pub const MAX_RANGE_UNITS: u64 = 1 << 10;
/// One cycle in this many is timed.
pub const SAMPLE_EVERY: u32 = 16;
/// Shared-memory slots of the `combiner-shm-poll` server: one per client of the largest
/// run (64 clients of `server-micro`, 49 of `server-oltp`), with room to spare.
const SHM_SLOTS: u32 = 128;

/// The extra field of a record with the round trips per acquisition: network round trips
/// a client waited for per lock, polling included (none for a local-memory peer).
pub const ROUND_TRIPS_PER_LOCK: &str = "round_trips_per_lock";
/// The extra field with the round trips per release (0 when unlocks are pipelined: their
/// answers arrive with the next request's).
pub const ROUND_TRIPS_PER_UNLOCK: &str = "round_trips_per_unlock";

/// The local-memory references as bounds: the client-sided algorithms without the network
/// (left out of "vs best", which then names the best lock over the network).
pub(crate) const LOCAL_REFERENCES: [Ceiling; 2] = [
    Ceiling { name: ShmWords::NAME, leaves_out: "the network: DSLR on local shared memory" },
    Ceiling {
        name: citron_shm::NAME,
        leaves_out: "the network: the Citron-like tree on local shared memory",
    },
];

/// [`LOCAL_REFERENCES`] and `echo`, the transport with no lock.
const MICRO_CEILINGS: [Ceiling; 3] = [
    Ceiling { name: echo::NAME, leaves_out: "the lock: pings over the same transport" },
    LOCAL_REFERENCES[0],
    LOCAL_REFERENCES[1],
];

/// The tables' extra columns: round trips per lock and unlock, and the server's CPU per
/// request.
const MICRO_COLUMNS: &[(&str, &str)] = &[
    (ROUND_TRIPS_PER_LOCK, "RT/lock"),
    (ROUND_TRIPS_PER_UNLOCK, "RT/unlock"),
    ("server_cpu_ns_per_request", "srv cpu ns"),
];

/// The token of `combiner-auth` and `combiner-tls-auth`.
const BENCH_TOKEN: &str = "rangelock-bench-token";

/// The auth table of `combiner-auth` and `combiner-tls-auth`: [`BENCH_TOKEN`], allowed
/// the benchmark's unit space.
fn auth_file() -> String {
    format!("[[token]]\nname = \"bench\"\nsecret = \"{BENCH_TOKEN}\"\nranges = [\"0..{UNITS}\"]\n")
}

/// Client counts of a full run: 1 and 2 for the seed's "one or two clients", 16 and 24
/// for its "peaks at around 16 to 24 clients", up to 64.
const FULL_CLIENTS: [usize; 8] = [1, 2, 4, 8, 16, 24, 32, 64];
/// Client counts of a quick run.
const QUICK_CLIENTS: [usize; 3] = [1, 4, 16];

/// A system under test of the server suites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// `rangelockd` with this engine (push grants).
    Engine(EngineKind),
    /// `rangelockd` with this engine and poll grants: a `LOCK` that must wait is answered
    /// `PENDING` and the client polls until the grant (the seed's RPC-poll clients).
    Poll(EngineKind),
    /// `rangelockd` with the combiner engine and shared-memory answer slots; each client
    /// attaches one and learns of its grants by polling it (`docs/PROTOCOL.md` §9).
    CombinerShmPoll,
    /// `rangelockd` with the combiner engine and an auth token (see the module docs).
    CombinerAuth,
    /// `rangelockd` with the combiner engine over TLS, with an auth token.
    CombinerTlsAuth,
    /// The ceiling: pings over the same transport.
    Echo,
    /// DSLR over shared memory.
    DslrShm,
    /// DSLR over Redis.
    DslrRedis,
    /// The Citron-like tree over shared memory.
    CitronShm,
    /// The Citron-like tree over Redis.
    CitronRedis,
}

impl Variant {
    /// Report name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::Engine(e) => e.name(),
            Variant::Poll(e) => match e {
                EngineKind::Combiner => "combiner-poll",
                EngineKind::TreeMutex => "tree-mutex-poll",
                EngineKind::TreeSingle => "tree-single-poll",
                EngineKind::RangeLock => "rangelock-poll",
            },
            Variant::CombinerShmPoll => "combiner-shm-poll",
            Variant::CombinerAuth => "combiner-auth",
            Variant::CombinerTlsAuth => "combiner-tls-auth",
            Variant::Echo => echo::NAME,
            Variant::DslrShm => ShmWords::NAME,
            Variant::DslrRedis => RedisWords::NAME,
            Variant::CitronShm => citron_shm::NAME,
            Variant::CitronRedis => citron_redis::NAME,
        }
    }

    /// Whether this is a client-sided lock in local shared memory: no round trips at all,
    /// a reference, not Server-sided Range Locking's comparator (whose
    /// client-sided locks pay a network round trip per remote operation).
    pub(crate) fn is_local_memory(self) -> bool {
        matches!(self, Variant::DslrShm | Variant::CitronShm)
    }

    /// The variants to run: every engine, the seed's poll designs (`combiner-poll`,
    /// `tree-single-poll`) and `combiner-shm-poll`, then `extra` peers, then
    /// `dslr-redis` and `citron-redis` when `redis_server` runs (else a note on stderr with
    /// the install hint);
    /// only those `RANGELOCK_BENCH_ONLY` names when it is set (`common::selected`).
    pub(crate) fn list(suite: &str, extra: &[Variant], redis_server: &str) -> Vec<Variant> {
        let mut v: Vec<Variant> = EngineKind::ALL.into_iter().map(Variant::Engine).collect();
        v.extend([Variant::Poll(EngineKind::Combiner), Variant::Poll(EngineKind::TreeSingle)]);
        v.push(Variant::CombinerShmPoll);
        v.extend_from_slice(extra);
        if RedisServer::available(redis_server) {
            v.extend([Variant::DslrRedis, Variant::CitronRedis]);
        } else {
            eprintln!("{suite}: skipping dslr-redis and citron-redis: {}", redis::INSTALL_HINT);
        }
        v.retain(|variant| common::selected(variant.name()));
        v
    }
}

/// The names of the local-memory references of the server suites (the variants whose
/// words live in this host's memory, not behind a network).
pub fn local_memory_variants() -> impl Iterator<Item = &'static str> {
    [Variant::DslrShm, Variant::CitronShm].into_iter().map(|v| {
        debug_assert!(v.is_local_memory());
        v.name()
    })
}

/// The running server (or mapping) of one measurement.
pub(crate) enum Backend {
    Rangelockd(Server),
    /// A server with auth (and TLS), and the options its clients connect with.
    RangelockdWith(Server, ConnectOptions),
    Shm(ShmWords),
    Redis(RedisServer),
    Citron(ShmWords),
}

/// One client's connection, and the round trips it made.
pub(crate) struct Conn {
    link: Link,
    /// Lock + unlock cycles done.
    cycles: u64,
    /// Round trips of those locks and of those unlocks (`None` for a local-memory peer).
    round_trips: Option<(u64, u64)>,
}

/// One client's link to its lock.
pub(crate) enum Link {
    /// A `rangelockd` client.
    Lock {
        /// The connection.
        client: Client,
        /// Whether unlocks are pipelined (see [`Backend::connect`]).
        pipelined: bool,
    },
    Echo(Client),
    Shm(DslrClient<ShmWords>),
    Redis(DslrClient<RedisWords>),
    Citron(CitronClient<ShmWords>),
    CitronRedis(CitronRedis),
}

fn layout() -> DslrLayout {
    DslrLayout::new(UNITS, SEGMENT_UNITS)
}

impl Backend {
    /// Starts the backend of `variant`.
    pub(crate) fn start(variant: Variant, redis_server: &str) -> io::Result<Backend> {
        Ok(match variant {
            Variant::Engine(engine) => Backend::Rangelockd(Server::start(ServerConfig {
                engine,
                ..ServerConfig::ephemeral()
            })?),
            Variant::Poll(engine) => Backend::Rangelockd(Server::start(ServerConfig {
                engine,
                grant: GrantMode::Poll,
                ..ServerConfig::ephemeral()
            })?),
            Variant::CombinerShmPoll => Backend::Rangelockd(Server::start(ServerConfig {
                engine: EngineKind::Combiner,
                shm_slots: SHM_SLOTS,
                ..ServerConfig::ephemeral()
            })?),
            Variant::CombinerAuth | Variant::CombinerTlsAuth => {
                let auth = AuthTable::from_toml(Path::new("(server-micro)"), &auth_file())
                    .map_err(io::Error::other)?;
                let config = ServerConfig {
                    engine: EngineKind::Combiner,
                    auth: Some(Arc::new(auth)),
                    ..ServerConfig::ephemeral()
                };
                let options = ConnectOptions::new().token(BENCH_TOKEN);
                if variant == Variant::CombinerAuth {
                    Backend::RangelockdWith(Server::start(config)?, options)
                } else {
                    // The server reads its files at start and the client options hold
                    // the CA: the files may go when `pki` is dropped.
                    let pki = TempPki::generate()?;
                    let tls = Some(TlsSettings::new(pki.server_cert(), pki.server_key()));
                    let server = Server::start(ServerConfig { tls, ..config })?;
                    let ca = TlsOptions::from_ca_file(pki.ca()).map_err(io::Error::other)?;
                    Backend::RangelockdWith(server, options.tls(ca))
                }
            }
            Variant::Echo => Backend::Rangelockd(echo::start_server()?),
            Variant::DslrShm => Backend::Shm(ShmWords::new(layout().segments())?),
            Variant::DslrRedis | Variant::CitronRedis => {
                Backend::Redis(RedisServer::start(redis_server)?)
            }
            Variant::CitronShm => Backend::Citron(ShmWords::new(CitronLayout::new(UNITS).words())?),
        })
    }

    /// Connects one client. With `pipelined`, an unlock is written at once but its answer
    /// is not waited for (the `rangelockd` client's [`LockGuard::unlock_pipelined`],
    /// `dslr-redis`'s pipelined releases); the client's next call reads it and reports a
    /// failure.
    ///
    /// [`LockGuard::unlock_pipelined`]: rangelock_client::LockGuard::unlock_pipelined
    pub(crate) fn connect(&self, variant: Variant, pipelined: bool) -> io::Result<Conn> {
        let link = self.link(variant, pipelined)?;
        let round_trips = (!variant.is_local_memory()).then_some((0, 0));
        Ok(Conn { link, cycles: 0, round_trips })
    }

    fn link(&self, variant: Variant, pipelined: bool) -> io::Result<Link> {
        Ok(match (self, variant) {
            (Backend::Rangelockd(s), Variant::Echo) => {
                Link::Echo(echo::connect(s).map_err(io::Error::other)?)
            }
            (Backend::Rangelockd(s), _) => {
                let addr = s.tcp_addr().ok_or_else(|| io::Error::other("no TCP listener"))?;
                let client = Client::connect(&Endpoint::from(addr)).map_err(io::Error::other)?;
                if variant == Variant::CombinerShmPoll {
                    client.attach_shm().map_err(io::Error::other)?;
                }
                Link::Lock { client, pipelined }
            }
            (Backend::RangelockdWith(s, options), _) => {
                let addr = s.tcp_addr().ok_or_else(|| io::Error::other("no TCP listener"))?;
                let client = Client::connect_with(&Endpoint::from(addr), options)
                    .map_err(io::Error::other)?;
                Link::Lock { client, pipelined }
            }
            (Backend::Shm(w), _) => Link::Shm(DslrClient::new(w.clone(), layout())),
            (Backend::Citron(w), _) => {
                Link::Citron(CitronClient::new(w.clone(), CitronLayout::new(UNITS)))
            }
            (Backend::Redis(r), Variant::CitronRedis) => {
                let mut client = CitronRedis::connect(r.addr(), CitronLayout::new(UNITS))?;
                client.set_pipelined_releases(pipelined);
                Link::CitronRedis(client)
            }
            (Backend::Redis(r), _) => {
                let mut words = RedisWords::connect(r.addr(), layout().segments())?;
                words.set_pipelined_releases(pipelined);
                Link::Redis(DslrClient::new(words, layout()))
            }
        })
    }

    /// Server CPU time so far, in nanoseconds (see the module docs).
    pub(crate) fn cpu_ns(&self) -> Option<u64> {
        match self {
            Backend::Rangelockd(_) | Backend::RangelockdWith(..) => server_threads_cpu_ns(),
            Backend::Shm(_) | Backend::Citron(_) => None,
            Backend::Redis(r) => r.cpu_ns(),
        }
    }

    /// Stops the server.
    pub(crate) fn stop(self) {
        match self {
            Backend::Rangelockd(s) | Backend::RangelockdWith(s, _) => s.shutdown(),
            Backend::Shm(_) | Backend::Redis(_) | Backend::Citron(_) => {}
        }
    }
}

impl Conn {
    /// One lock + unlock cycle of `range` in `mode` (`echo`: two pings), counting its
    /// round trips: a `rangelockd` request and its answer are one (a waiting `LOCK` too
    /// when the grant is pushed; in poll mode each `POLL` is one more), a pipelined unlock
    /// none (its answer comes with the next request's); the Redis peers count their
    /// connection's.
    #[inline]
    pub(crate) fn cycle(&mut self, range: Range<u64>, mode: Mode) -> Result<(), String> {
        self.cycles += 1;
        let (lock, unlock) = match &mut self.link {
            Link::Lock { client, pipelined } => {
                let mode = match mode {
                    Mode::Shared => rangelock_client::Mode::Shared,
                    Mode::Exclusive => rangelock_client::Mode::Exclusive,
                };
                let polls = client.polls();
                let g = client.lock(range, mode, Wait::Forever).map_err(|e| e.to_string())?;
                let polls = client.polls() - polls;
                if *pipelined { g.unlock_pipelined() } else { g.unlock() }
                    .map_err(|e| e.to_string())?;
                (1 + polls, u64::from(!*pipelined))
            }
            Link::Echo(c) => {
                echo::cycle(c).map_err(|e| e.to_string())?;
                (1, 1)
            }
            Link::Shm(c) => {
                let Ok(held) = c.lock(range, mode);
                let Ok(()) = c.unlock(held);
                (0, 0)
            }
            Link::Redis(c) => {
                let before = c.words().round_trips();
                let held = c.lock(range, mode).map_err(|e| e.to_string())?;
                let locked = c.words().round_trips();
                c.unlock(held).map_err(|e| e.to_string())?;
                (locked - before, c.words().round_trips() - locked)
            }
            Link::Citron(c) => {
                let held = c.lock(range, mode);
                c.unlock(held);
                (0, 0)
            }
            Link::CitronRedis(c) => {
                let before = c.round_trips();
                let held = c.lock(range, mode).map_err(|e| e.to_string())?;
                let locked = c.round_trips();
                c.unlock(held).map_err(|e| e.to_string())?;
                (locked - before, c.round_trips() - locked)
            }
        };
        if let Some((l, u)) = &mut self.round_trips {
            *l += lock;
            *u += unlock;
        }
        Ok(())
    }
}

/// CPU time of this process's server threads (named `rangelock-server`,
/// `rangelock-handler`, `rangelock-combiner`), in nanoseconds.
pub(crate) fn server_threads_cpu_ns() -> Option<u64> {
    Some(ThreadsCpu::now()?.total_ns())
}

/// Runs one measurement of `variant` with `clients` clients doing `body` (unlocks
/// pipelined or not, see [`Backend::connect`]); fills in the
/// server CPU per op (`cpu_key`), or skips the sample when the backend fails. For
/// `combiner-shm-poll` it also records `shm_slot_answer_share`: the share of `LOCK`s
/// whose answer the client read from its shared-memory slot rather than from the frame
/// (each op is `ops_per_lock` of the sample's ops).
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure<F>(
    variant: Variant,
    redis_server: &str,
    clients: usize,
    span: Span,
    cpu_key: &str,
    pipelined: bool,
    ops_per_lock: u64,
    body: F,
) -> Sample
where
    F: Fn(usize, &mut Conn, &ThreadCtl) -> Result<ThreadResult, String> + Sync,
{
    if matches!(variant, Variant::CitronShm | Variant::CitronRedis)
        && clients > citron_shm::MAX_CLIENTS
    {
        // Its 8-bit ticket counters would alias (see `citron_shm`).
        return Sample::skipped(format!(
            "{} serves at most {} clients",
            variant.name(),
            citron_shm::MAX_CLIENTS
        ));
    }
    let backend = match Backend::start(variant, redis_server) {
        Ok(b) => b,
        Err(e) => return Sample::skipped(format!("cannot start {}: {e}", variant.name())),
    };
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let fail = |e: String| {
        failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
        ThreadResult::default()
    };
    let cpu0 = backend.cpu_ns();
    let slot_answers = AtomicU64::new(0);
    // (cycles, lock round trips, unlock round trips) of every client.
    let round_trips = Mutex::new((0u64, 0u64, 0u64));
    let mut sample = run_threads_with(
        clients,
        span,
        |_| backend.connect(variant, pipelined),
        |i, conn, ctl| match conn {
            Ok(mut conn) => {
                let r = body(i, &mut conn, ctl);
                if let Link::Lock { client, .. } = &conn.link {
                    // Relaxed: a sum read after the threads are joined.
                    slot_answers.fetch_add(client.shm_hits(), Ordering::Relaxed);
                }
                if let Some((lock, unlock)) = conn.round_trips {
                    let mut sum = round_trips.lock().unwrap_or_else(PoisonError::into_inner);
                    *sum = (sum.0 + conn.cycles, sum.1 + lock, sum.2 + unlock);
                }
                r.unwrap_or_else(fail)
            }
            Err(e) => fail(format!("connect: {e}")),
        },
    );
    if variant == Variant::CombinerShmPoll && sample.ops > 0 {
        let locks = (sample.ops / ops_per_lock.max(1)).max(1);
        let share = slot_answers.into_inner() as f64 / locks as f64;
        sample.extra.insert("shm_slot_answer_share".into(), Value::from(share));
    }
    let (cycles, lock_rts, unlock_rts) =
        round_trips.into_inner().unwrap_or_else(PoisonError::into_inner);
    // Only counted links add to the sum: a local-memory peer leaves it at zero cycles.
    if cycles > 0 {
        let per = |n: u64| Value::from(n as f64 / cycles as f64);
        sample.extra.insert(ROUND_TRIPS_PER_LOCK.into(), per(lock_rts));
        sample.extra.insert(ROUND_TRIPS_PER_UNLOCK.into(), per(unlock_rts));
    }
    let cpu1 = backend.cpu_ns();
    backend.stop();
    if let Some(e) = failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Sample::skipped(format!("{} failed: {e}", variant.name()));
    }
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        if sample.ops > 0 {
            sample.extra.insert(
                cpu_key.to_owned(),
                Value::from(b.saturating_sub(a) as f64 / sample.ops as f64),
            );
        }
    }
    sample
}

/// Client counts: the suite's sweep (1..=64, quick 1, 4 and 16) unless the user gave
/// `--threads`; more clients than cores are marked oversubscribed.
pub(crate) fn client_counts(opts: &Options, full: &[usize], quick: &[usize]) -> Vec<(usize, bool)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The CLI clears `oversubscribe` when `--threads` is given: take that list as is.
    let explicit = !opts.oversubscribe || opts.threads != DEFAULT_THREADS;
    let list: Vec<usize> = if explicit {
        opts.threads.clone()
    } else if opts.quick {
        quick.to_vec()
    } else {
        full.to_vec()
    };
    list.into_iter().filter(|&c| c > 0).map(|c| (c, c > cores)).collect()
}

/// The `server-micro` suite.
#[derive(Debug)]
pub struct ServerMicro {
    redis_server: String,
}

impl Default for ServerMicro {
    fn default() -> Self {
        ServerMicro { redis_server: "redis-server".to_owned() }
    }
}

impl ServerMicro {
    /// Uses `binary` instead of `redis-server` for `dslr-redis` (a missing binary skips it).
    pub fn with_redis_server(binary: impl Into<String>) -> Self {
        ServerMicro { redis_server: binary.into() }
    }
}

impl Suite for ServerMicro {
    fn name(&self) -> &'static str {
        "server-micro"
    }

    fn quantity(&self) -> String {
        "lock+unlock requests per second".to_owned()
    }

    fn x_axis(&self) -> crate::harness::XAxis {
        crate::harness::XAxis::Clients
    }

    fn about(&self) -> &'static str {
        "Server-sided Range Locking micro-benchmark: each client locks a random range \
         (1..=1024 of 2^16 units) and unlocks it over its own connection; ops = requests (2 \
         per cycle). Server-sided: the rangelockd engines (grants pushed), the seed's \
         poll designs combiner-poll and tree-single-poll, combiner-shm-poll, combiner-auth, \
         combiner-tls-auth; client-sided over the same loopback network: dslr-redis, \
         citron-redis; ceiling: echo; local-memory references (no network): dslr-shm, \
         citron-like"
    }

    fn baseline(&self) -> &'static str {
        "combiner"
    }

    fn table_extras(&self) -> &'static [(&'static str, &'static str)] {
        MICRO_COLUMNS
    }

    fn ceilings(&self) -> &'static [Ceiling] {
        &MICRO_CEILINGS
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let pcts: &[u64] = if opts.quick { &[0, 20] } else { &[0, 1, 20, 100] };
        let variants = Variant::list(
            self.name(),
            &[
                Variant::CombinerAuth,
                Variant::CombinerTlsAuth,
                Variant::Echo,
                Variant::DslrShm,
                Variant::CitronShm,
            ],
            &self.redis_server,
        );
        let mut cases = Vec::new();
        for &pct in pcts {
            for (clients, oversubscribed) in client_counts(opts, &FULL_CLIENTS, &QUICK_CLIENTS) {
                for &variant in &variants {
                    let redis = self.redis_server.clone();
                    cases.push(Case {
                        variant: variant.name().to_owned(),
                        threads: clients,
                        params: common::params([
                            ("units", UNITS.into()),
                            ("exclusive_pct", pct.into()),
                            ("max_range_units", MAX_RANGE_UNITS.into()),
                            ("dslr_segment_units", SEGMENT_UNITS.into()),
                        ]),
                        oversubscribed,
                        run: Box::new(move |d| run_micro(variant, &redis, clients, pct, d)),
                    });
                }
            }
        }
        cases
    }
}

fn run_micro(variant: Variant, redis: &str, clients: usize, pct: u64, span: Span) -> Sample {
    let key = "server_cpu_ns_per_request";
    let mut s = measure(variant, redis, clients, span, key, false, 2, |i, conn, ctl| {
        micro_client(i, conn, ctl, pct)
    });
    add_rates(&mut s);
    s
}

/// Client `i` of the micro-benchmark: random ranges, exclusive with probability `pct` %,
/// lock + unlock cycles until the measurement ends; ops are requests (two per cycle).
pub(crate) fn micro_client(
    i: usize,
    conn: &mut Conn,
    ctl: &ThreadCtl,
    pct: u64,
) -> Result<ThreadResult, String> {
    let mut rng = SplitMix64::new(0x5EED_0000 + i as u64);
    let mut sampler = LatencySampler::new(SAMPLE_EVERY);
    let mut cycles = 0u64;
    while ctl.running() {
        let len = 1 + rng.below(MAX_RANGE_UNITS);
        let start = rng.below(UNITS - len + 1);
        let mode = if rng.below(100) < pct { Mode::Exclusive } else { Mode::Shared };
        let t = sampler.start();
        conn.cycle(start..start + len, mode)?;
        sampler.finish(t);
        cycles += 1;
    }
    Ok(ThreadResult { ops: 2 * cycles, latencies_ns: sampler.into_latencies() })
}

/// `requests_per_sec` and `cycles_per_sec` of a micro-benchmark sample not skipped.
pub(crate) fn add_rates(s: &mut Sample) {
    if s.skip_reason().is_none() {
        let secs = s.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        s.extra.insert("requests_per_sec".into(), Value::from(s.ops as f64 / secs));
        s.extra.insert("cycles_per_sec".into(), Value::from(s.ops as f64 / 2.0 / secs));
    }
}
