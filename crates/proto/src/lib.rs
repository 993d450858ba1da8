//! The `rangelockd` wire protocol: a handshake, then length-prefixed little-endian frames.
//!
//! This crate is the wire format alone, shared by the server (`rangelock-server`, which
//! re-exports it as `rangelock_server::protocol`) and the client (`rangelock-client`), so
//! a client does not depend on the server. See `docs/PROTOCOL.md` for the byte layout and
//! test vectors. In short:
//!
//! * the client sends [`ClientHello`] (8 bytes, then an authentication token if it has
//!   one), the server answers [`ServerHello`] (24 bytes) carrying the session id, the
//!   lease and the grant mode, or a refusal (wrong version, missing or unknown token, a
//!   plain-text client on a TLS listener);
//! * then both sides exchange frames `len u32 | op u8 | id u64 | payload`, where `len`
//!   counts the bytes after itself. Requests are pipelined: a client may send many before
//!   reading a response, and responses carry the request id — they can arrive in any order
//!   (a `LOCK` that waits is answered when granted).
//!
//! Version 6 adds **cached locks** (`docs/PROTOCOL.md` §2.3): after `CACHE_ON`, a
//! session's `LOCK_CACHED` may be granted wider than asked, within a desired range
//! ([`CachedGrant`]); the server asks a part back with a `CALLBACK` notice ([`Callback`])
//! when another session needs it, and the client answers with `GIVE_BACK`. `STATS_CACHED`
//! answers with the cache's counters and marks kept extents in its list.
//!
//! Version 4 adds the **session end notice**: before the server ends a session on its own
//! it pushes a `NOTICE` with [`Status::SessionEnded`] whose value is the [`EndReason`]. A
//! server accepts version 3 hellos too ([`MIN_VERSION`]); those sessions get no such
//! notice.
//!
//! Version 3 adds **authentication**: the hello's token ([`hello_flags::AUTH`]), the hello
//! statuses from [`HelloStatus::AuthRequired`] up, and [`Status::Forbidden`] for a range
//! outside the token's ranges.
//!
//! Version 2 added the **cluster** messages (`docs/PROTOCOL.md` §7): the unit space is cut
//! into aligned partitions ([`Partitioning`]), each owned by one node; fencing tokens
//! carry the partition's epoch ([`token`]); `RECLAIM` and `MAP` requests, server-pushed
//! notices ([`op::NOTICE`]), the statuses from [`Status::NotOwner`] up, and the
//! [`ClusterMap`] and [`OwnerHint`] bodies.
//!
//! The optional **shared-memory answer slots** (`docs/PROTOCOL.md` §9, module [`shm`]):
//! a client on the server's host asks for a slot with `SHM_ATTACH`; the server then
//! publishes each answer to the session's `LOCK`s in that slot (a 64-byte cache line of a
//! file the client maps) before it sends the answer frame.
//!
//! Decoding is total: [`RequestFrame::decode`], [`ResponseFrame::decode`] and the hello
//! decoders return an error for any malformed input and never panic (property-tested).
//!
//! # Features
//!
//! * `tokio` (on by default): `read_frame`, which reads one frame from a tokio
//!   `AsyncRead`. It stays here rather than moving to its users because both the server's
//!   sessions and the async client read frames with it, and the length checks it makes
//!   ([`FrameError`], [`DEFAULT_MAX_FRAME`]) are part of the wire format. It needs only
//!   tokio's `io-util`. Without the feature the crate depends on `rangelock` (for
//!   [`Mode`]) and `thiserror` alone, for users with blocking I/O only (like the blocking
//!   client's reader); [`FrameError`] and [`DEFAULT_MAX_FRAME`] stay available.

mod answer_size;
mod cached;
mod codec;
mod end_reason;
mod error;
mod frame;
mod handshake;
mod map;
mod partition;
mod port;
mod request;
mod response;
pub mod shm;
mod stats;
mod status;
pub mod token;

pub use answer_size::{
    max_map_answer, stats_cached_entries_within, stats_entries_within, stats_named_entries_within,
    ANSWER_LEN, MAX_NOT_OWNER_ANSWER, MAX_SHM_ATTACH_ANSWER, MAX_STATS_ENTRIES, STATS_ANSWER_BASE,
    STATS_CACHED_ANSWER_BASE, STATS_NAMED_ANSWER_BASE,
};
pub use cached::{CachedGrant, Callback, CACHED_GRANT_LEN, CACHE_REPORTS_USE};
pub use end_reason::EndReason;
pub use error::DecodeError;
#[cfg(feature = "tokio")]
pub use frame::read_frame;
pub use frame::{FrameError, DEFAULT_MAX_FRAME, MAX_RESPONSE_FRAME};
pub use handshake::{
    hello_flags, ClientHello, ClientHelloHead, GrantMode, HelloStatus, ServerHello,
    CLIENT_HELLO_LEN, MAGIC, MAX_TOKEN_LEN, MIN_VERSION, SERVER_HELLO_LEN, VERSION,
};
pub use map::{
    ClusterMap, MapError, NodeInfo, OwnerHint, PartitionOwner, PartitionState, MAX_NAME_LEN,
    MAX_NODES, OWNER_ENTRY_LEN,
};
pub use partition::{
    name_hash, PartitionError, Partitioning, Piece, Split, SplitNamed, MAX_PARTITIONS,
    NAME_STRIPE_SHIFT,
};
pub use port::DEFAULT_PORT;
pub use request::{
    op, Mode, Request, RequestFrame, Wait, FRAME_HEADER_LEN, MAX_REQUEST_FRAME,
    MAX_RESOURCE_NAME_LEN,
};
pub use response::{ResponseFrame, ALL_PARTITIONS};
pub use shm::{ShmAttached, SlotState, SLOT_BYTES};
pub use stats::{
    Counters, EntryState, StatsBody, StatsEntry, STATS_ENTRY_LEN, STATS_NAMED_ENTRY_LEN,
};
pub use status::Status;
