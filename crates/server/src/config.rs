//! Server configuration.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::AuthTable;
use crate::ownership::Ownership;
use crate::protocol::{
    max_map_answer, stats_entries_within, GrantMode, DEFAULT_MAX_FRAME, MAX_NOT_OWNER_ANSWER,
    MAX_SHM_ATTACH_ANSWER, MAX_STATS_ENTRIES, STATS_CACHED_ANSWER_BASE,
};
pub use crate::table::{CacheConfig, CachePolicy};
use crate::tls::TlsSettings;

pub use crate::protocol::DEFAULT_PORT;

/// The shortest session lease a server accepts. Clients send a keepalive every third of
/// the lease (and at most every 10 ms); below this, a client that is merely descheduled
/// for a few tens of milliseconds would lose its locks.
pub const MIN_LEASE: Duration = Duration::from_millis(100);

/// The longest session lease a server accepts: the server hello carries it as `u32`
/// milliseconds.
pub const MAX_LEASE: Duration = Duration::from_millis(u32::MAX as u64);

/// Default listen backlog (pending, not yet accepted connections per listener). Linux caps
/// it at `net.core.somaxconn` (4096 since 5.4). With the old default of 128, a burst of
/// 1000 connects overflowed the queue and a few connects waited ~1 s for a SYN retry.
pub const DEFAULT_BACKLOG: u32 = 4096;

/// The default `max_names`: 1 048 576 live names.
pub const DEFAULT_MAX_NAMES: usize = 1 << 20;

/// Default bound on a session's response bytes not yet written to its socket.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;

/// Which engine owns the lock table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EngineKind {
    /// Handlers enqueue commands on a multi-producer queue; one dedicated combiner thread
    /// owns the table and executes them in arrival order (the seed's design; default).
    #[default]
    Combiner,
    /// Every handler locks one mutex around the table and executes its command itself.
    TreeMutex,
    /// One thread does everything: a single-threaded runtime runs every connection and the
    /// table.
    TreeSingle,
    /// Handlers drive the lock-free in-process skip-list `rangelock::RangeLock`; waiting
    /// requests sit in a registry and are retried when an overlapping range is released.
    /// No FIFO order per overlap: a new request may overtake a waiter.
    RangeLock,
}

impl EngineKind {
    /// Every engine, for tests and benchmarks.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::Combiner,
        EngineKind::TreeMutex,
        EngineKind::TreeSingle,
        EngineKind::RangeLock,
    ];

    /// The name used by `--engine`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Combiner => "combiner",
            EngineKind::TreeMutex => "tree-mutex",
            EngineKind::TreeSingle => "tree-single",
            EngineKind::RangeLock => "rangelock",
        }
    }
}

impl core::str::FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EngineKind::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
            format!(
                "unknown engine {s:?} (expected combiner, tree-mutex, tree-single or rangelock)"
            )
        })
    }
}

/// Everything a server needs to start. [`ServerConfig::default`] listens on
/// `127.0.0.1:7878` with the combiner engine and push grants.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// TCP address to listen on (`None`: no TCP). Port 0 picks a free port.
    pub tcp: Option<SocketAddr>,
    /// Unix socket path to listen on (`None`: no Unix socket). A stale socket file at the
    /// path (nobody listens on it) is replaced; a live one is refused (see [`crate::Server`]).
    pub unix: Option<PathBuf>,
    /// Listen backlog of each listener ([`DEFAULT_BACKLOG`]).
    pub listen_backlog: u32,
    /// Who owns the lock table.
    pub engine: EngineKind,
    /// Push or poll grants.
    pub grant: GrantMode,
    /// A session with no frame for this long is closed and its locks released; between
    /// [`MIN_LEASE`] and [`MAX_LEASE`].
    pub lease: Duration,
    /// Largest accepted frame (length prefix value).
    pub max_frame: u32,
    /// Live locks (held + waiting) per session.
    pub max_locks_per_session: usize,
    /// Live resource names on the server (a name lives while something is held or queued
    /// on it): a `LOCK_NAMED` that would make one more is answered `TOO_MANY_NAMES`.
    /// With names of at most 1024 bytes this bounds the names' memory at about
    /// 1.1 KiB per name (`docs/design/names.md`).
    pub max_names: usize,
    /// Entries in a `STATS` reply; at most [`MAX_STATS_ENTRIES`] (what one response frame
    /// can carry). A reply also stops at what fits in `max_output_bytes`
    /// ([`ServerConfig::stats_entries_cap`]); its `value` counts the entries left out.
    pub max_stats_entries: u32,
    /// Response bytes of one session the socket has not taken (the client does not read
    /// them); a session that would pass this is closed and its locks released, as on
    /// disconnect. Bytes the kernel has accepted do not count. At least
    /// [`ServerConfig::largest_fixed_answer`], so that every answer fits.
    pub max_output_bytes: usize,
    /// Worker threads of the handler runtime (ignored by `tree-single`); 0 (the default)
    /// picks [`ServerConfig::auto_handler_threads`].
    pub handler_threads: usize,
    /// Cluster nodes only: the partitions this node owns, kept by the cluster manager
    /// (`rangelock-cluster`). `None` (the default): a single server that owns the whole
    /// unit space.
    pub cluster: Option<Arc<Ownership>>,
    /// Shared-memory answer slots (`docs/PROTOCOL.md` §9): `0` (the default) creates no
    /// slot file and answers `SHM_ATTACH` with `SHM_UNAVAILABLE`; `n` creates a file of `n`
    /// 64-byte slots, so that up to `n` sessions on this host can read their `LOCK`
    /// answers from shared memory (at most [`MAX_SHM_SLOTS`]; push grants only).
    pub shm_slots: u32,
    /// Directory of the slot file (`None`: the temp directory).
    pub shm_dir: Option<PathBuf>,
    /// TLS on the TCP listener (`docs/PROTOCOL.md` §1.2; the Unix socket stays plain):
    /// the certificate files, read by [`crate::Server::start`] and again by
    /// [`crate::Server::reload`]. `None` (the
    /// default): plain TCP.
    pub tls: Option<TlsSettings>,
    /// Address of the Prometheus metrics endpoint (`GET /metrics` over HTTP; see
    /// [`crate::metrics`]); `None` (the default): no metrics, and no clock reads for them
    /// on the request path. Port 0 picks a free port ([`crate::Server::metrics_addr`]).
    pub metrics: Option<SocketAddr>,
    /// The tokens sessions must present ([`AuthTable`], read from an auth file; at start:
    /// [`crate::Server::reload`] reads its file again). `None` (the default): no
    /// authentication; a token in a hello is ignored.
    pub auth: Option<Arc<AuthTable>>,
    /// Cached locks (protocol version 6): the policy and its bounds. The `rangelock`
    /// engine grants none whatever the policy (`CACHE_ON` is answered
    /// `CACHE_UNAVAILABLE`).
    pub cache: CacheConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tcp: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT))),
            unix: None,
            listen_backlog: DEFAULT_BACKLOG,
            engine: EngineKind::Combiner,
            grant: GrantMode::Push,
            lease: Duration::from_secs(10),
            max_frame: DEFAULT_MAX_FRAME,
            max_locks_per_session: 4096,
            max_names: DEFAULT_MAX_NAMES,
            max_stats_entries: 1000,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            handler_threads: 0,
            cluster: None,
            shm_slots: 0,
            shm_dir: None,
            tls: None,
            metrics: None,
            auth: None,
            cache: CacheConfig::default(),
        }
    }
}

/// The most shared-memory slots a server creates (64 MiB of slots).
pub const MAX_SHM_SLOTS: u32 = 1 << 20;

/// Why a [`ServerConfig`] cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The lease is outside [`MIN_LEASE`]..=[`MAX_LEASE`].
    #[error(
        "lease of {got_ms} ms is out of range: it must be at least {} ms (clients keep \
         alive every third of it) and at most {} ms",
        MIN_LEASE.as_millis(),
        MAX_LEASE.as_millis()
    )]
    Lease {
        /// The lease asked for, in milliseconds.
        got_ms: u128,
    },
    /// No listener configured.
    #[error("nothing to listen on: give a TCP address, a Unix socket path, or both")]
    NoListener,
    /// A limit that must be at least one is zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A cluster node needs an engine with one serial lock table.
    #[error(
        "the {0} engine cannot run a cluster node: partition tokens and grace periods need \
         a lock table (use combiner, tree-mutex or tree-single)"
    )]
    ClusterEngine(&'static str),
    /// Shared-memory slots with poll grants: the slots carry pushed answers, and in poll
    /// mode the grant of a queued lock is never pushed.
    #[error(
        "shared-memory slots need push grants: in poll mode a queued lock's grant is only \
         learned by POLL, so the slot would never show it"
    )]
    ShmPoll,
    /// More shared-memory slots than [`MAX_SHM_SLOTS`].
    #[error("{0} shared-memory slots asked for; at most {MAX_SHM_SLOTS}")]
    ShmSlots(u32),
    /// `max_frame` is below the largest request frame.
    #[error("max_frame {got} is below {min}, the size of the largest request frame")]
    MaxFrame {
        /// Configured.
        got: u32,
        /// Smallest allowed.
        min: u32,
    },
    /// `max_output_bytes` is below an answer the server must send whole: a session would
    /// be closed at that answer, however promptly its client reads.
    #[error(
        "max_output_bytes {got} is below {min}, the size of the largest answer the server \
         must send whole ({what}): a session would be closed at such an answer, however \
         promptly it reads"
    )]
    MaxOutputBytes {
        /// Configured.
        got: usize,
        /// Smallest allowed: [`ServerConfig::largest_fixed_answer`].
        min: usize,
        /// Which answer that is.
        what: &'static str,
    },
    /// `max_stats_entries` is above what one response frame can carry.
    #[error(
        "max_stats_entries {got} is above {max}, the most entries a STATS answer can carry \
         in one response frame (16 MiB)"
    )]
    MaxStatsEntries {
        /// Configured.
        got: u32,
        /// Largest allowed: [`MAX_STATS_ENTRIES`].
        max: u32,
    },
}

impl ServerConfig {
    /// Checks the configuration; [`crate::Server::start`] refuses an invalid one with this
    /// error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease < MIN_LEASE || self.lease > MAX_LEASE {
            return Err(ConfigError::Lease { got_ms: self.lease.as_millis() });
        }
        if self.tcp.is_none() && self.unix.is_none() {
            return Err(ConfigError::NoListener);
        }
        for (v, name) in [
            (self.max_locks_per_session, "max_locks_per_session"),
            (self.listen_backlog as usize, "listen_backlog"),
            (self.cache.max_kept_per_session, "max_kept"),
            (self.cache.history, "cache history"),
        ] {
            if v == 0 {
                return Err(ConfigError::Zero(name));
            }
        }
        if self.cluster.is_some() && self.engine == EngineKind::RangeLock {
            return Err(ConfigError::ClusterEngine(self.engine.name()));
        }
        if self.shm_slots > 0 && self.grant == GrantMode::Poll {
            return Err(ConfigError::ShmPoll);
        }
        if self.shm_slots > MAX_SHM_SLOTS {
            return Err(ConfigError::ShmSlots(self.shm_slots));
        }
        let min = crate::protocol::MAX_REQUEST_FRAME;
        if self.max_frame < min {
            return Err(ConfigError::MaxFrame { got: self.max_frame, min });
        }
        let (min, what) = self.largest_fixed_answer();
        if self.max_output_bytes < min {
            return Err(ConfigError::MaxOutputBytes { got: self.max_output_bytes, min, what });
        }
        if self.max_stats_entries > MAX_STATS_ENTRIES {
            let (got, max) = (self.max_stats_entries, MAX_STATS_ENTRIES);
            return Err(ConfigError::MaxStatsEntries { got, max });
        }
        Ok(())
    }

    /// The size in bytes (length prefix included) of the largest answer this
    /// configuration may have to send whole, and which answer it is. A `STATS` list is
    /// cut to fit instead ([`ServerConfig::stats_entries_cap`]), so what counts is its
    /// counters: a `STATS_CACHED` answer without entries (162 bytes); with shared-memory slots an
    /// `SHM_ATTACH` answer with the longest path (4 126); on a cluster node the largest
    /// `MAP` answer of its partition count (1024 nodes whose names are 255 bytes each:
    /// 525 028 bytes for 64 partitions). `max_output_bytes` may not be below it.
    pub fn largest_fixed_answer(&self) -> (usize, &'static str) {
        if let Some(own) = &self.cluster {
            let map = max_map_answer(own.partitioning().count());
            debug_assert!(map > MAX_NOT_OWNER_ANSWER.max(MAX_SHM_ATTACH_ANSWER));
            return (map, "a MAP answer of 1024 nodes with 255-byte names");
        }
        if self.shm_slots > 0 {
            return (MAX_SHM_ATTACH_ANSWER, "an SHM_ATTACH answer with a 4096-byte path");
        }
        (STATS_CACHED_ANSWER_BASE, "a STATS_CACHED answer without entries")
    }

    /// The most entries a `STATS` answer carries: `max_stats_entries`, or fewer if the
    /// answer would not fit in `max_output_bytes` (42 bytes per entry after 114 bytes).
    pub fn stats_entries_cap(&self) -> u32 {
        self.max_stats_entries.min(stats_entries_within(self.max_output_bytes))
    }

    /// Handler threads for `handler_threads == 0`: one per core, but for the combiner
    /// engine one core is left to the combiner thread (at least one handler). Measured on
    /// a 2-core machine, `server-oltp`'s combiner served ~5-8% more with 1 handler thread
    /// than with 2 (fewer threads to wake and switch between).
    pub fn auto_handler_threads(engine: EngineKind) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        match engine {
            EngineKind::Combiner => cores.saturating_sub(1).max(1),
            _ => cores,
        }
    }

    /// The handler threads this configuration runs.
    pub fn effective_handler_threads(&self) -> usize {
        match self.handler_threads {
            0 => Self::auto_handler_threads(self.engine),
            n => n,
        }
    }

    /// The default configuration on `127.0.0.1` port 0 (a free port), for tests.
    pub fn ephemeral() -> Self {
        ServerConfig { tcp: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))), ..Self::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::Ownership;
    use crate::protocol::Partitioning;

    fn with(f: impl FnOnce(&mut ServerConfig)) -> Result<(), ConfigError> {
        let mut c = ServerConfig::ephemeral();
        f(&mut c);
        c.validate()
    }

    /// An output limit below an answer the server must send whole would close every
    /// session at that answer: refused, at each configuration's largest such answer.
    #[test]
    fn the_output_limit_holds_the_largest_fixed_answer() {
        let cluster = Ownership::new(Partitioning::new(64).unwrap(), "n1");
        type Setup = Box<dyn Fn(&mut ServerConfig)>;
        let cases: [(Setup, usize); 3] = [
            (Box::new(|_| {}), 162),
            (Box::new(|c| c.shm_slots = 4), 4126),
            (Box::new(move |c| c.cluster = Some(cluster.clone())), 525_028),
        ];
        for (setup, min) in cases {
            let at = |bytes| {
                with(|c| {
                    setup(c);
                    c.max_output_bytes = bytes;
                })
            };
            assert_eq!(at(min), Ok(()));
            let Err(e) = at(min - 1) else { panic!("{} bytes accepted, {min} needed", min - 1) };
            assert!(
                matches!(e, ConfigError::MaxOutputBytes { got, min: m, .. } if got == min - 1 && m == min)
            );
            assert!(
                e.to_string().starts_with(&format!("max_output_bytes {} is below {min}", min - 1)),
                "{e}"
            );
            assert!(at(0).is_err() && at(21).is_err());
        }
    }

    /// No STATS answer can carry more than one frame's worth of entries.
    #[test]
    fn stats_entries_fit_in_a_frame() {
        let at = |n| with(|c| c.max_stats_entries = n);
        assert_eq!(at(399_454), Ok(()));
        let e = at(399_455).unwrap_err();
        assert_eq!(e, ConfigError::MaxStatsEntries { got: 399_455, max: 399_454 });
        assert!(e.to_string().contains("16 MiB"), "{e}");
        assert!(at(u32::MAX).is_err());
    }

    /// An answer's list stops at what fits in the output limit.
    #[test]
    fn the_stats_cap_is_cut_to_the_output_limit() {
        let cap = |entries, bytes| {
            let c = ServerConfig {
                max_stats_entries: entries,
                max_output_bytes: bytes,
                ..ServerConfig::ephemeral()
            };
            c.stats_entries_cap()
        };
        assert_eq!(cap(1000, DEFAULT_MAX_OUTPUT_BYTES), 1000);
        assert_eq!(cap(100_000, DEFAULT_MAX_OUTPUT_BYTES), 24_963);
        assert_eq!(cap(100_000, 114), 0);
        assert_eq!(cap(100_000, 114 + 41), 0);
        assert_eq!(cap(100_000, 114 + 42), 1);
        assert_eq!(cap(399_454, usize::MAX), 399_454);
    }
}
