//! A small etcd v3 client over etcd's JSON gateway, and a private etcd for tests.
//!
//! # Why the gateway
//!
//! etcd speaks gRPC; every etcd server (3.4 and later) also serves the same API as
//! JSON over HTTP: `POST /v3/kv/put` with the request message as JSON, the response
//! message back. Using it keeps the build Cargo-only (gRPC clients need `protoc`)
//! at the cost of a few wire quirks, all confined to the private module `wire`:
//!
//! - `int64` fields travel as decimal strings, `bytes` as base64;
//! - fields equal to their zero value are omitted, in both directions: a missing
//!   `succeeded` is `false`, a missing `kvs` is no keys, a missing `lease` is 0 and a
//!   keep-alive answer without `TTL` means the lease is gone;
//! - errors come back as a non-2xx status with `{"error":..,"code":..,"message":..}`
//!   (`code` is the gRPC status), except inside streams; a path the gateway does
//!   not know gets a plain-text `404 Not Found`;
//! - `LeaseKeepAlive` is a bidirectional stream: the body is one request, the answer
//!   a newline-delimited stream of `{"result":..}` (or `{"error":{..}}`) that ends
//!   when the request body does. `Watch` is one too, but its answer stays open: a
//!   [`Watch`] reads its messages as they come.
//!
//! # The client
//!
//! [`Etcd`] sends one POST per call through a pooled [`reqwest`] client. Every call
//! has a deadline, the `request_timeout` given to [`Etcd::connect`]: a dead, paused
//! or partitioned etcd makes calls fail with [`EtcdError::Timeout`] rather than hang,
//! so a lease holder can bound how long its lease surely lives: at least the TTL
//! from the moment its last successful [`Etcd::keep_alive`] was sent.
//!
//! With several endpoints, a call that cannot connect to one tries the next
//! (nothing was sent, so this is safe for any request), and later calls start at
//! the one that answered. A call that times out is not retried elsewhere (it may
//! have been applied), but the next call starts at the next endpoint.
//!
//! Keys and values are bytes. Ranges follow etcd's convention: a prefix covers
//! `[prefix, prefix with its last byte + 1)`. Conditional writes are [`Txn`]s:
//!
//! ```no_run
//! # async fn demo() -> Result<(), rangelock_cluster::etcd::EtcdError> {
//! use rangelock_cluster::etcd::{CmpOp, Compare, Etcd, Txn, TxnOp};
//! use std::time::Duration;
//!
//! let etcd = Etcd::connect(&["127.0.0.1:2379".to_owned()], Duration::from_secs(2)).await?;
//! let (lease, ttl) = etcd.grant_lease(Duration::from_secs(5), None).await?;
//! // Claim `owner` unless someone holds it.
//! let claimed = etcd
//!     .txn(Txn::new()
//!         .when([Compare::CreateRevision(b"owner".to_vec(), CmpOp::Equal, 0)])
//!         .and_then([TxnOp::put(b"owner", b"me", Some(lease))]))
//!     .await?
//!     .succeeded;
//! // Keep it: refresh well within `ttl`; `None` means the lease (and the key) is gone.
//! assert!(etcd.keep_alive(lease).await?.is_some());
//! # let _ = (ttl, claimed);
//! # Ok(()) }
//! ```
//!
//! # A private etcd
//!
//! [`LocalEtcd`] runs an etcd of its own on free local ports with a temporary data
//! directory, tuned for tests (10 ms heartbeats, so a 1-second lease TTL is honoured),
//! and can kill, pause and resume it. Tests get one with [`local_etcd_or_skip`],
//! which skips loudly when etcd is not installed (`bash ci/install-etcd.sh`) and
//! fails in CI.

mod client;
mod error;
mod kv;
mod local;
mod txn;
mod watch;
mod wire;

pub use client::Etcd;
pub use error::EtcdError;
pub use kv::KeyValue;
pub use local::{etcd_binary, local_etcd_or_skip, LocalEtcd, LocalEtcdError};
pub use txn::{CmpOp, Compare, Txn, TxnOp, TxnOpResponse, TxnResponse};
pub use watch::{EventKind, Watch, WatchEvent};

/// An etcd lease ID (etcd's `int64`; 0 means "no lease").
pub type LeaseId = i64;

/// What [`Etcd::lease_time_to_live`] reports of a live lease, in whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTtl {
    /// Time left, rounded down by etcd.
    pub remaining: std::time::Duration,
    /// The TTL the lease was granted with (each keepalive restarts it).
    pub granted: std::time::Duration,
}

/// An etcd store revision (etcd's `int64`), increasing with every write.
pub type Revision = i64;
