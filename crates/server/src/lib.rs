//! `rangelockd`: range locks across processes and machines (DESIGN §3, seed 3).
//!
//! Clients connect over TCP (optionally TLS: [`ServerConfig::tls`]) or a Unix socket and
//! speak the binary [`protocol`]. Each
//! connection is a *session*; handlers (tokio tasks) decode its frames and submit
//! commands to an engine. The default engine is the seed's **combiner**: one thread owns
//! the [`table::LockTable`] — an interval tree whose entries count the conflicting
//! earlier entries blocking them — and executes commands in arrival order, granting
//! FIFO-fair per overlap. Grants are pushed to clients, or held until the client polls
//! (the seed's RPC-poll mode).
//!
//! With `shm_slots` set, a client on this host may also ask for a shared-memory slot
//! (`SHM_ATTACH`, `docs/PROTOCOL.md` §9) in which the server publishes the answers to the
//! session's `LOCK`s before it sends them: the one-host analog of the seed's combiner
//! polling with RDMA (bench variant `combiner-shm-poll`).
//!
//! With `auth` set ([`AuthTable`], `rangelock serve --auth-file`), a session must present
//! a token the table knows in its hello, and may lock only the ranges and names of that
//! token (`docs/PROTOCOL.md` §1.1). [`Server::reload`] reads the auth file and the TLS files
//! again without ending sessions whose token stays (`rangelock serve` does it on SIGHUP).
//!
//! With `metrics` set, the server also answers `GET /metrics` over HTTP on that address
//! with Prometheus metrics (grants, releases, waits, errors per status, sessions, wait and
//! hold histograms; see [`metrics`]); without it nothing on the request path is timed.
//!
//! Session guarantees: locks and waits of a session are released when it closes or its
//! lease expires; fencing tokens strictly increase across all grants; `UNLOCK` is
//! idempotent per lock id; bad input gets an error response and never affects another
//! session.
//!
//! ```no_run
//! use rangelock_server::{Server, ServerConfig};
//! let server = Server::start(ServerConfig::ephemeral()).unwrap();
//! println!("listening on {:?}", server.tcp_addr());
//! server.shutdown();
//! ```

pub mod auth;
mod config;
mod end_log;
mod engine;
mod lapse;
mod listen;
pub mod metrics;
pub mod ownership;
mod rangelock_engine;
mod reload;
mod reply;
mod server;
mod session;
mod shm;
pub mod table;
mod tls;

pub use auth::{AuthFileError, AuthTable, Principal};
pub use config::{
    CacheConfig, CachePolicy, ConfigError, EngineKind, ServerConfig, DEFAULT_BACKLOG,
    DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_PORT, MAX_LEASE, MAX_SHM_SLOTS, MIN_LEASE,
};
pub use reload::{ReloadError, Reloaded};
pub use server::Server;
pub use tls::{TlsError, TlsSettings};

/// The wire protocol: the `rangelock-proto` crate, re-exported under its old path.
pub use rangelock_proto as protocol;
