//! Server configuration.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::protocol::{GrantMode, DEFAULT_MAX_FRAME};

/// The TCP port the server listens on by default (`127.0.0.1:7878`).
pub const DEFAULT_PORT: u16 = 7878;

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
    /// Handlers drive the lock-free in-process skip-list `rangelock::RangeLock`; waits run
    /// on blocking-pool threads. No FIFO order per overlap (the skip list decides).
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
    /// path is replaced.
    pub unix: Option<PathBuf>,
    /// Who owns the lock table.
    pub engine: EngineKind,
    /// Push or poll grants.
    pub grant: GrantMode,
    /// A session with no frame for this long is closed and its locks released.
    pub lease: Duration,
    /// Largest accepted frame (length prefix value).
    pub max_frame: u32,
    /// Live locks (held + waiting) per session.
    pub max_locks_per_session: usize,
    /// Entries in a `STATS` reply.
    pub max_stats_entries: u32,
    /// Worker threads of the handler runtime (ignored by `tree-single`); 0 (the default)
    /// picks [`ServerConfig::auto_handler_threads`].
    pub handler_threads: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tcp: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT))),
            unix: None,
            engine: EngineKind::Combiner,
            grant: GrantMode::Push,
            lease: Duration::from_secs(10),
            max_frame: DEFAULT_MAX_FRAME,
            max_locks_per_session: 4096,
            max_stats_entries: 1000,
            handler_threads: 0,
        }
    }
}

impl ServerConfig {
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
