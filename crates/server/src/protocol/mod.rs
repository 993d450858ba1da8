//! The wire protocol: a handshake, then length-prefixed little-endian frames.
//!
//! See `docs/PROTOCOL.md` for the byte layout and test vectors. In short:
//!
//! * the client sends [`ClientHello`] (8 bytes), the server answers [`ServerHello`]
//!   (24 bytes) carrying the session id, the lease and the grant mode;
//! * then both sides exchange frames `len u32 | op u8 | id u64 | payload`, where `len`
//!   counts the bytes after itself. Requests are pipelined: a client may send many before
//!   reading a response, and responses carry the request id — they can arrive in any order
//!   (a `LOCK` that waits is answered when granted).
//!
//! Decoding is total: [`RequestFrame::decode`], [`ResponseFrame::decode`] and the hello
//! decoders return an error for any malformed input and never panic (property-tested).

mod codec;
mod error;
mod frame;
mod handshake;
mod request;
mod response;
mod stats;
mod status;

pub use error::DecodeError;
pub use frame::{read_frame, FrameError, DEFAULT_MAX_FRAME};
pub use handshake::{
    ClientHello, GrantMode, HelloStatus, ServerHello, CLIENT_HELLO_LEN, MAGIC, SERVER_HELLO_LEN,
    VERSION,
};
pub use request::{op, Mode, Request, RequestFrame, Wait, FRAME_HEADER_LEN, MAX_REQUEST_FRAME};
pub use response::ResponseFrame;
pub use stats::{Counters, EntryState, StatsBody, StatsEntry, STATS_ENTRY_LEN};
pub use status::Status;
