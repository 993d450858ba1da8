//! The version handshake that opens every connection.
//!
//! The client sends a [`ClientHello`] (8 bytes); the server answers with a [`ServerHello`]
//! (24 bytes). Neither is length-prefixed. If the versions do not match, the server answers
//! with [`HelloStatus::UnsupportedVersion`] and its own version, then closes: a version 1
//! client (before the cluster messages) is refused by a version 2 server this way.

use super::codec::{Cursor, Put};
use super::error::DecodeError;

/// The four bytes every hello starts with.
pub const MAGIC: [u8; 4] = *b"RLCK";
/// The protocol version this crate speaks: 2 (version 1 had no cluster messages: no
/// `RECLAIM`, `MAP`, `NOTICE`, nor the statuses from `NOT_OWNER` up).
pub const VERSION: u16 = 2;
/// Size of a [`ClientHello`] on the wire.
pub const CLIENT_HELLO_LEN: usize = 8;
/// Size of a [`ServerHello`] on the wire.
pub const SERVER_HELLO_LEN: usize = 24;

/// How a client learns that a queued lock was granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum GrantMode {
    /// The server sends the `LOCK` response when the lock is granted (default).
    #[default]
    Push,
    /// The server answers a `LOCK` that must wait with `PENDING` at once; the client asks
    /// with `POLL` until it gets the grant (the seed thesis's RPC-poll design).
    Poll,
}

impl GrantMode {
    /// `push` or `poll`, as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            GrantMode::Push => "push",
            GrantMode::Poll => "poll",
        }
    }

    fn code(self) -> u8 {
        match self {
            GrantMode::Push => 0,
            GrantMode::Poll => 1,
        }
    }

    fn from_code(b: u8) -> Result<Self, DecodeError> {
        match b {
            0 => Ok(GrantMode::Push),
            1 => Ok(GrantMode::Poll),
            _ => Err(DecodeError::BadGrantMode(b)),
        }
    }
}

/// Whether the server accepted the client's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HelloStatus {
    /// Accepted; frames follow.
    Accepted,
    /// Refused: the server speaks only the version in the reply; it closes the connection.
    UnsupportedVersion,
}

/// First bytes a client sends: `"RLCK" | version u16 | reserved u16 (0)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientHello {
    /// The protocol version the client speaks.
    pub version: u16,
}

impl ClientHello {
    /// Appends the 8 wire bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.put_u16(self.version);
        out.put_u16(0);
    }

    /// Parses exactly [`CLIENT_HELLO_LEN`] bytes.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(buf);
        if c.take(4)? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let version = c.u16()?;
        let reserved = c.u16()?;
        if reserved != 0 {
            return Err(DecodeError::BadField(reserved.into(), "hello.reserved"));
        }
        c.finish()?;
        Ok(ClientHello { version })
    }
}

/// The server's answer:
/// `"RLCK" | version u16 | status u8 | grant u8 | session u64 | lease_ms u32 | max_frame u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerHello {
    /// The version the server speaks.
    pub version: u16,
    /// Accepted or not.
    pub status: HelloStatus,
    /// How grants of queued locks reach the client.
    pub grant: GrantMode,
    /// This connection's session id (unique per server run; 0 when refused).
    pub session: u64,
    /// Lease: the server ends the session after this long without a frame from the client.
    pub lease_ms: u32,
    /// The largest frame (length prefix value) the server accepts.
    pub max_frame: u32,
}

impl ServerHello {
    /// Appends the 24 wire bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.put_u16(self.version);
        out.put_u8(match self.status {
            HelloStatus::Accepted => 0,
            HelloStatus::UnsupportedVersion => 1,
        });
        out.put_u8(self.grant.code());
        out.put_u64(self.session);
        out.put_u32(self.lease_ms);
        out.put_u32(self.max_frame);
    }

    /// Parses exactly [`SERVER_HELLO_LEN`] bytes.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(buf);
        if c.take(4)? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let version = c.u16()?;
        let status = match c.u8()? {
            0 => HelloStatus::Accepted,
            1 => HelloStatus::UnsupportedVersion,
            b => return Err(DecodeError::BadField(b.into(), "hello.status")),
        };
        let grant = GrantMode::from_code(c.u8()?)?;
        let session = c.u64()?;
        let lease_ms = c.u32()?;
        let max_frame = c.u32()?;
        c.finish()?;
        Ok(ServerHello { version, status, grant, session, lease_ms, max_frame })
    }
}
