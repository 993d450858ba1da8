//! Cached locks (protocol version 6, `docs/PROTOCOL.md` §2.3): a client that keeps the
//! extents the server grants and serves its own later locks inside them without a round
//! trip.
//!
//! [`CachedClient`] (async) and [`BlockingCachedClient`] (its own runtime; the fast path
//! runs on the calling thread) have the calls of [`AsyncClient`](crate::AsyncClient): `lock`,
//! `lock_exclusive`, `lock_shared` and `resource(name)`.
//!
//! ```no_run
//! # async fn run() -> Result<(), rangelock_client::ClientError> {
//! use rangelock_client::{CacheOptions, CachedClient, ConnectOptions, Endpoint};
//! let cache = CacheOptions { granule: 1 << 20, ..CacheOptions::default() };
//! let client =
//!     CachedClient::connect_with(&Endpoint::default(), &ConnectOptions::default(), cache).await?;
//! let a = client.lock_exclusive(0..4096).await?; // LOCK_CACHED: granted as 0..1 MiB, kept
//! drop(a); // nothing sent: the extent stays with the client
//! let b = client.lock_exclusive(4096..8192).await?; // no round trip
//! assert!(b.is_kept());
//! # Ok(()) }
//! ```
//!
//! # How it works
//!
//! * `CACHE_ON` at connect; a server that refuses it (or polls for grants) makes an
//!   uncached client: every lock is an ordinary `LOCK` ([`CachedClient::is_cached`]).
//! * A lock asks `LOCK_CACHED` for the required range, desiring it rounded out to
//!   [`CacheOptions::granule`]. A grant the server marks `cached` is *kept*: the client
//!   holds it at the server after the guard drops. A lock inside a kept extent takes only
//!   the client's in-process [`rangelock::RangeLock`] of the resource (the server never
//!   orders a caching session's locks among themselves; this lock does). Other grants are
//!   ordinary locks that the guard unlocks on drop.
//! * When another session needs part of a kept extent, the server sends `CALLBACK`; the
//!   client waits for its local holders of the part, gives it back (`GIVE_BACK`), with
//!   each side of the extent that has no local holder. A local lock over a part given back
//!   is refused by a second look at the map taken under the in-process lock, and goes to
//!   the server, behind the other session (`src/cached/handover.rs`; a loom model checks
//!   the hand-over).
//! * Callbacks run concurrently, one at a time per extent: one queue for all of them could
//!   deadlock where uncached locks do not (`src/cached/callbacks.rs`).
//! * A kept extent unused for [`CacheOptions::idle`] is given back by the client.
//! * When the session is lost, the client forgets every extent; guards say so
//!   ([`CachedGuard::is_lost`]) and their tokens are fenced by the server.

mod blocking;
mod callbacks;
pub(crate) mod client;
mod guard;
pub(crate) mod handover;
#[cfg(all(test, loom))]
mod loom_tests;
mod options;

pub use blocking::{BlockingCachedClient, BlockingCachedGuard, BlockingCachedResource};
pub use client::{CachedClient, CachedResource};
pub use guard::CachedGuard;
pub use options::CacheOptions;
