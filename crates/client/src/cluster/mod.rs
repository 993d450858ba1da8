//! A client of a rangelock **cluster** (`docs/CLUSTER.md`): the unit space is cut into
//! partitions, each served by one node. A [`ClusterClient`] locks each part of a range at
//! its partition's owner, and keeps the resulting [`ClusterGuard`] alive across node
//! failures and planned moves by reclaiming its pieces at the partition's new owner — or
//! tells you, through the guard, that it could not.
//!
//! ```no_run
//! use rangelock_client::cluster::{ClusterClient, ClusterError, ClusterOptions};
//! use rangelock_client::{Mode, Wait};
//!
//! # async fn demo() -> Result<(), ClusterError> {
//! let seeds = ["10.0.0.1:7878".to_owned(), "10.0.0.2:7878".to_owned()];
//! let cluster = ClusterClient::connect(&seeds, ClusterOptions::default()).await?;
//! let guard = cluster.lock(0..1 << 62, Mode::Exclusive, Wait::Forever).await?;
//! guard.on_lost(|reason| eprintln!("lock lost: {reason}"));
//! for piece in guard.pieces() {
//!     // Before each write: guard.check()?, and hand the piece's token to the storage.
//!     println!("partition {}: {:?} token {:#x}", piece.partition, piece.range, piece.token);
//! }
//! guard.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! # Routing
//!
//! The client reads the cluster map (`MAP`) from the first seed that answers and caches
//! it ([`ClusterClient::map`]). It opens one connection — one session — per node address
//! on first use, within [`ClusterOptions::connect_timeout`] and with
//! [`ClusterOptions::connect`] (the authentication token of a cluster whose nodes run with
//! an auth file), and keeps it while it is up.
//! A request goes to the node the map names as its partition's owner. Whenever the
//! client re-reads the map it asks the nodes it is connected to, then the map's nodes,
//! then the seeds, and keeps the newest map (the largest etcd revision).
//!
//! Nodes also **push** map changes. On every new node connection the client sends
//! `WATCH_MAP` (`docs/PROTOCOL.md` §7.7, without waiting for the answer); from then on
//! the node sends a `MAP_CHANGED` notice each time the map it serves changes (a partition
//! claimed, given up, out of its grace period; a node joined or gone). The client then
//! reads that node's map and ends every pause between retries at once, so a lock or a
//! reclaim waiting for a new owner asks it as soon as a node it is connected to knows
//! it. The backoff ([`ClusterOptions::backoff_first`] doubling to
//! [`ClusterOptions::backoff_max`], 10 to 200 ms) remains the fallback: a node that does
//! not know `WATCH_MAP` answers `UNKNOWN_OP` and pushes nothing. Nothing depends on the
//! push for safety: the node refuses what it does not own, and tokens fence the rest.
//!
//! A node's refusal says what to do next:
//!
//! | answer | the client |
//! |---|---|
//! | `NOT_OWNER` | follows the owner hint if it names an owner of a later epoch than any it knows; else re-reads the map, and backs off (10 ms doubling to 200 ms, until a node pushes a map change) if the map has nothing newer |
//! | `IN_GRACE` | retries when the grace period may be over (`value` ms), when a node pushes a map change (the owner ends a grace period early when every handed-over lock is back), and at least as often as the backoff; a try fails with [`ClusterError::Unavailable`] |
//! | `FENCED`, unreachable, shutting down | re-reads the map, backs off, retries; a try re-reads the map once, then fails with `Unavailable` |
//! | `CROSSES_PARTITION` | the map's partitioning is not the node's: re-reads the map and starts the lock over |
//! | the hello refused for authentication, `FORBIDDEN` | fails the lock: [`ClusterError::Client`] with [`ClientError::AuthRequired`](crate::ClientError::AuthRequired) or [`AuthFailed`](crate::ClientError::AuthFailed), or [`ClusterError::Server`] with `FORBIDDEN` (the range is outside the token's ranges) |
//!
//! More than [`ClusterOptions::max_redirects`] `NOT_OWNER` answers for one piece (or
//! `CROSSES_PARTITION` answers for one lock) fail the lock with
//! [`ClusterError::TooManyRedirects`], even one that may wait forever: nodes that point
//! at each other cannot keep a client busy forever.
//!
//! # Acquiring a range
//!
//! [`ClusterClient::lock`] splits the range at partition boundaries and acquires the
//! pieces one by one in ascending partition order, each at its owner. Every client takes
//! them in the same order, so no two clients deadlock. It is all or nothing: if a piece
//! fails (`WOULD_BLOCK`, a timeout, an error, too many redirects), the pieces already
//! held are released — and the release is confirmed by their nodes — before the error is
//! returned. [`Wait::Timeout`](crate::Wait::Timeout) is one deadline for the whole range:
//! each piece waits for what is left of it.
//!
//! The guard has one fencing token per piece ([`ClusterGuard::pieces`]), `epoch << 32 |
//! seq` of its partition. Tokens of different partitions are not comparable: storage
//! checks each piece's writes against the tokens of its own partition
//! (`docs/CLUSTER.md` §2, the fencing contract).
//!
//! # Reclaiming
//!
//! The client watches each node connection. Two things make it reclaim:
//!
//! * the connection is **lost**: closed or reset, or the node answered no keepalive for
//!   a whole session lease ([`LossCause::Unresponsive`](crate::LossCause::Unresponsive):
//!   a stopped node keeps its sockets open, so only silence gives it away). Every piece
//!   that lived in that session is affected;
//! * a **notice** `NOT_OWNER` or `FENCED` for a partition (or for all): the node gave it
//!   up — a planned move, a lost etcd lease. The pieces of that partition in that session
//!   are affected.
//!
//! The node no longer holds the affected pieces. For them, together, until
//! [`ClusterOptions::reclaim_window`] has passed since the event, in rounds:
//!
//! 1. re-read the map (a node that is gone is asked last);
//! 2. for each piece, find an owner of a **later epoch** than the piece's token — from
//!    the map, or from a `NOT_OWNER` hint. Only such an owner can accept the reclaim; if
//!    there is none yet (the old owner's etcd lease has not expired, no node has claimed
//!    the partition), wait for the next round;
//! 3. send it `RECLAIM {range, mode, token}` (under a fresh lock id of that node's
//!    session), all pieces at once, each answered within the connect timeout:
//!    * `OK`: the piece lives on that node now, **with its token unchanged**. The new
//!      owner granted nothing new in the partition during its grace period, and grants
//!      after it carry its later epoch, so the old token still fences correctly;
//!    * `RECLAIM_REFUSED`: the guard is **lost** ([`LostCause::ReclaimRefused`]): another
//!      holder reclaimed a conflicting lock first, or the owner is not in a grace period;
//!    * `NOT_OWNER` (its hint is remembered), `FENCED`, an unreachable node, no answer:
//!      back off (10 ms doubling to 200 ms, or until a node pushes a map change) and go
//!      to 1.
//!
//! A piece still not placed when the window passes makes the guard lost
//! ([`LostCause::WindowMissed`]). The window must cover the cluster's etcd TTL, a manager
//! round and some slack: the new owner can only claim the partition after the old
//! owner's lease expired.
//!
//! # A lost guard
//!
//! A guard is never lost silently. Once a piece cannot be reclaimed:
//!
//! * [`ClusterGuard::is_lost`] is `true` and [`ClusterGuard::check`] returns
//!   [`ClusterError::Lost`] with the [`LostReason`] (the partition and the cause);
//! * every [`ClusterGuard::on_lost`] callback runs, once (one registered later runs at
//!   once);
//! * [`ClusterGuard::lost`] completes with the reason (after those callbacks);
//! * [`ClusterGuard::unlock`] returns `Err(ClusterError::Lost(reason))`.
//!
//! The guard's other pieces are released, best effort (their `UNLOCK`s are sent without
//! waiting for the answers).
//!
//! What the client cannot promise: between a node's failure and the end of the reclaim,
//! the guard is neither lost nor confirmed (`check` says `Ok` while the reclaim runs),
//! and a process that is itself paused learns of its loss only when it runs again. That
//! gap is what fencing tokens close: a storage that checks them refuses the writes of a
//! holder whose lock was taken over.
//!
//! A guard released (unlocked or dropped) while a reclaim runs is not lost: the reclaim
//! stops, and a piece it reclaims after all is released at once.
//!
//! # Cached locks
//!
//! [`CachedClusterClient`] (and [`BlockingCachedClusterClient`]) route as this client
//! does, with one caching session per node: each piece is a
//! [`CachedGuard`](crate::CachedGuard), served without a round trip inside an extent the
//! node let the client keep. When a node gives a partition up or fails, the kept extents
//! and grants with local holders are reclaimed at the new owner as above and unlocked
//! after their last holder; one that cannot be is lost, and its guards say so
//! (`docs/CACHING.md`, "In a cluster"; `relocate.rs`).
//!
//! # Sessions and tasks
//!
//! A guard's pieces live in the client's node sessions, which the guard keeps open; the
//! watching and the reclaims run as tasks of the tokio runtime that connected the
//! client, for as long as a guard or a clone of the client lives.

mod acquire;
mod backoff;
mod blocking;
mod cached;
mod cached_blocking;
mod client;
mod error;
mod guard;
mod nodes;
mod options;
mod reclaim;
mod registry;
mod relocate;
mod state;
mod watch;

pub use blocking::{BlockingClusterClient, BlockingClusterGuard, BlockingClusterResource};
pub use cached::{CachedClusterClient, CachedClusterGuard, CachedClusterResource};
pub use cached_blocking::{
    BlockingCachedClusterClient, BlockingCachedClusterGuard, BlockingCachedClusterResource,
};
pub use client::{ClusterClient, ClusterResource, MAX_NAMED_PIECES};
pub use error::{ClusterError, LostCause, LostReason};
pub use guard::{ClusterGuard, GuardPiece};
pub use options::ClusterOptions;
pub use rangelock_proto::{token, ClusterMap, NodeInfo, PartitionState};
