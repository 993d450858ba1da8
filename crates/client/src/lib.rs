//! Client for `rangelockd` (the `rangelock-server` crate): blocking ([`Client`]) and async
//! ([`AsyncClient`]) APIs over TCP, TLS ([`TlsOptions`]) or Unix sockets.
//!
//! ```no_run
//! use rangelock_client::{Client, Endpoint};
//! let client = Client::connect(&Endpoint::default()).unwrap();
//! let guard = client.lock_exclusive(0..4096).unwrap();
//! println!("holding 0..4096 with fencing token {}", guard.token());
//! drop(guard); // releases
//! ```
//!
//! Guards release on drop. A session's locks live as long as its connection; there is no
//! automatic reconnect (see [`AsyncClient`] for the exact semantics).
//!
//! [`cluster`] is the async client of a rangelock cluster: it routes each partition of a
//! range to its owner and reclaims the locks at the new owner when a node fails.
//!
//! The blocking [`Client`] does its socket I/O on the calling thread (no runtime, no
//! hand-off per request); the [`AsyncClient`] runs on the caller's tokio runtime.
//!
//! # Named resources
//!
//! A resource is a name plus a range: a file's path and its bytes, a table id and its
//! rows. Locks on different names never conflict, and a name exists at the server only
//! while something of it is held or queued (`docs/PROTOCOL.md` §2.2; protocol version 5).
//! The lock calls of [`Client`] and [`AsyncClient`] lock the *unnamed* resource; a named
//! one is locked through a handle, [`Client::resource`] or [`AsyncClient::resource`],
//! which has the same lock calls. A handle per resource rather than a name on every
//! call: the calls keep one signature, and the name is checked (1 to
//! [`MAX_RESOURCE_NAME_LEN`] bytes) once, when the handle is made.
//!
//! ```no_run
//! use rangelock_client::{Client, Endpoint, Mode, Wait};
//! let client = Client::connect(&Endpoint::default())?;
//! let orders = client.resource("db/orders")?;
//! let users = client.resource(b"db/users")?;
//! let a = orders.lock(0..4096, Mode::Exclusive, Wait::Forever)?;
//! let b = users.lock(0..4096, Mode::Exclusive, Wait::Try)?; // another name: no conflict
//! let stats = client.stats(100)?; // each entry names its resource
//! assert_eq!(stats.counters.names_live, 2);
//! drop((a, b));
//! # Ok::<(), rangelock_client::ClientError>(())
//! ```
//!
//! # Cached locks
//!
//! [`cached`]: [`CachedClient`] and [`BlockingCachedClient`] keep the extents the server
//! grants as cached (protocol version 6) and serve later locks inside them locally, with
//! no round trip; the server calls an extent back when another session needs it.
//! Any client's [`Client::stats`] shows them: [`Counters::cached_extents`] and the
//! cache's other counters, and [`StatsEntry::kept`] on each kept extent.
//!
//! # Shared-memory answers
//!
//! On the server's host, [`Client::attach_shm`] asks a server started with shared-memory
//! slots (`rangelock serve --shm-slots N`) for a slot: a 64-byte cache line of a file the
//! client maps read-only, in which the server publishes the answer to each of the
//! session's `LOCK`s before it sends the frame. A `LOCK` then learns of its grant by
//! polling that ready flag (briefly; then it waits for the frame as usual) — the one-host
//! analog of the seed's combiner polling with RDMA. See `docs/PROTOCOL.md` §9.
//!
//! # Pipelining
//!
//! The protocol carries a request id in every frame, so requests need not wait for one
//! another. [`LockGuard::unlock_pipelined`] (and dropping a guard) writes the `UNLOCK` and
//! returns at once: the next request goes out without a round trip in between, and the
//! server, which handles a connection's frames in order, applies the unlock first. Errors
//! are not lost: the unlock's answer is read by the next call, and a failure comes back
//! from the next [`Client::lock`] or [`Client::flush`] as
//! [`ClientError::DeferredUnlock`].

// Under `--cfg loom` only the cached client's synchronous core is built, with its model
// (`cached/loom_tests.rs`): the rest needs tokio, whose futures loom does not run.
#[cfg(not(loom))]
mod blocking;
#[cfg(not(loom))]
pub mod cached;
#[cfg(loom)]
#[path = "cached"]
mod cached {
    #![allow(dead_code)]
    pub(crate) mod handover;
    #[cfg(test)]
    mod loom_tests;
}
#[cfg(not(loom))]
pub mod cluster;
#[cfg(not(loom))]
mod connection;
#[cfg(not(loom))]
mod endpoint;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod guard;
#[cfg(not(loom))]
mod options;
#[cfg(not(loom))]
mod poll;
#[cfg(not(loom))]
mod shm;
#[cfg(not(loom))]
mod sync_core;
#[cfg(not(loom))]
mod sync_tls;
#[cfg(not(loom))]
mod tls;

#[cfg(not(loom))]
pub use blocking::{Client, LockGuard, Resource};
#[cfg(not(loom))]
pub use cached::{
    BlockingCachedClient, BlockingCachedGuard, BlockingCachedResource, CacheOptions, CachedClient,
    CachedGuard, CachedResource,
};
#[cfg(not(loom))]
pub use connection::{AsyncClient, AsyncResource, Notice};
#[cfg(not(loom))]
pub use endpoint::Endpoint;
#[cfg(not(loom))]
pub use error::{ClientError, ConnectionLoss, LossCause, MAX_TIMEOUT};
#[cfg(not(loom))]
pub use guard::AsyncLockGuard;
#[cfg(not(loom))]
pub use options::ConnectOptions;
pub use rangelock_proto::{
    Counters, EndReason, EntryState, GrantMode, Mode, StatsBody, StatsEntry, Status, Wait,
    MAX_RESOURCE_NAME_LEN,
};
/// The TLS library of [`TlsOptions`] (its root store and certificate types).
#[cfg(not(loom))]
pub use rustls;
#[cfg(not(loom))]
pub use tls::TlsOptions;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
