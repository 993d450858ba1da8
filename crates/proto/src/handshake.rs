//! The version handshake that opens every connection.
//!
//! The client sends a [`ClientHello`] (an 8-byte head, then an authentication token when
//! its `AUTH` flag is set); the server answers with a [`ServerHello`] (24 bytes). Neither is
//! length-prefixed. A server accepts the versions from [`MIN_VERSION`] to [`VERSION`]; its
//! accepted hello carries the client's version, which the session then speaks. Another
//! version is answered with [`HelloStatus::UnsupportedVersion`] and the server's newest
//! version, then the server closes: a version 2 client (before authentication) is refused
//! this way, and a version 4 client by a version 3 server (it may then offer 3). A server
//! with an auth file refuses a hello without a token ([`HelloStatus::AuthRequired`]) or
//! with one it does not know ([`HelloStatus::AuthFailed`]); a TLS listener answers a
//! plain-text hello with [`HelloStatus::TlsRequired`]. Every refusal is followed by closing
//! the connection.
//!
//! The token is a secret: [`ClientHello`]'s `Debug` shows only its length.

use super::codec::{Cursor, Put};
use super::error::DecodeError;

/// The four bytes every hello starts with.
pub const MAGIC: [u8; 4] = *b"RLCK";
/// The newest protocol version this crate speaks: 6. Version 5 had no cached locks
/// (`CACHE_ON`, `LOCK_CACHED`, `GIVE_BACK`, the `CALLBACK` notice); version 4 had no named resources
/// (`LOCK_NAMED`, `docs/design/names.md`); version 3 had no `SESSION_ENDED`
/// notice (`docs/PROTOCOL.md` §2.1); version 2 had no authentication (the hello's `flags`
/// field was reserved, and there was no `FORBIDDEN` status); version 1 had no cluster
/// messages either (no `RECLAIM`, `MAP`, `NOTICE`, nor the statuses from `NOT_OWNER` up).
pub const VERSION: u16 = 6;
/// The oldest version a server still accepts, and a client falls back to: 3. A session
/// speaks the version of its client's hello; a version 3 session differs only in never
/// getting a `SESSION_ENDED` notice.
pub const MIN_VERSION: u16 = 3;
/// Size of a [`ClientHello`]'s fixed head on the wire (the whole hello without a token).
pub const CLIENT_HELLO_LEN: usize = 8;
/// The longest authentication token a hello may carry, in bytes.
pub const MAX_TOKEN_LEN: usize = 1024;

/// Bits of the client hello's `flags` field.
pub mod hello_flags {
    /// An authentication token follows the head: `token_len u16 | token`.
    pub const AUTH: u16 = 1;
    /// Every bit this version defines; a hello with any other bit set is refused by
    /// closing the connection.
    pub const KNOWN: u16 = AUTH;
}
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

/// Whether the server accepted the client's hello. Every refusal carries session `0`, and
/// the server closes the connection after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HelloStatus {
    /// Accepted; frames follow.
    Accepted,
    /// Refused: the server speaks only the version in the reply.
    UnsupportedVersion,
    /// Refused: the server has an auth file and the hello carried no token.
    AuthRequired,
    /// Refused: the server does not know the token (or its length was 0 or over
    /// [`MAX_TOKEN_LEN`]).
    AuthFailed,
    /// Refused: a plain-text hello reached a TLS listener (this one answer is plain text).
    TlsRequired,
}

impl HelloStatus {
    /// The wire byte.
    pub fn code(self) -> u8 {
        match self {
            HelloStatus::Accepted => 0,
            HelloStatus::UnsupportedVersion => 1,
            HelloStatus::AuthRequired => 2,
            HelloStatus::AuthFailed => 3,
            HelloStatus::TlsRequired => 4,
        }
    }

    fn from_code(b: u8) -> Result<Self, DecodeError> {
        Ok(match b {
            0 => HelloStatus::Accepted,
            1 => HelloStatus::UnsupportedVersion,
            2 => HelloStatus::AuthRequired,
            3 => HelloStatus::AuthFailed,
            4 => HelloStatus::TlsRequired,
            b => return Err(DecodeError::BadField(b.into(), "hello.status")),
        })
    }
}

/// The fixed 8 bytes every client hello starts with: `"RLCK" | version u16 | flags u16`.
///
/// A server reads this first: it answers a foreign version before looking at the flags
/// (whose meaning depends on the version), and reads a token only when
/// [`hello_flags::AUTH`] is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientHelloHead {
    /// The protocol version the client speaks.
    pub version: u16,
    /// [`hello_flags`] bits (unchecked: see [`ClientHelloHead::check_flags`]).
    pub flags: u16,
}

impl ClientHelloHead {
    /// Parses exactly [`CLIENT_HELLO_LEN`] bytes; only the magic is checked.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(buf);
        if c.take(4)? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let version = c.u16()?;
        let flags = c.u16()?;
        c.finish()?;
        Ok(ClientHelloHead { version, flags })
    }

    /// Refuses flag bits this version does not define.
    pub fn check_flags(&self) -> Result<(), DecodeError> {
        match self.flags & !hello_flags::KNOWN {
            0 => Ok(()),
            _ => Err(DecodeError::BadField(self.flags.into(), "hello.flags")),
        }
    }

    /// Whether a token (`token_len u16 | token`) follows.
    pub fn has_token(&self) -> bool {
        self.flags & hello_flags::AUTH != 0
    }
}

/// What a client sends first: `"RLCK" | version u16 | flags u16`, then, with the
/// [`hello_flags::AUTH`] flag, `token_len u16 | token` (1 to [`MAX_TOKEN_LEN`] bytes).
#[derive(Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The protocol version the client speaks.
    pub version: u16,
    /// The authentication token, if any (sets the `AUTH` flag).
    pub token: Option<Vec<u8>>,
}

impl core::fmt::Debug for ClientHello {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The token is a secret: never print it.
        let token = self.token.as_ref().map(|t| format!("<{} bytes>", t.len()));
        f.debug_struct("ClientHello")
            .field("version", &self.version)
            .field("token", &token)
            .finish()
    }
}

impl ClientHello {
    /// A hello of `version` without a token.
    pub fn new(version: u16) -> Self {
        ClientHello { version, token: None }
    }

    /// A hello of this crate's [`VERSION`] carrying `token` (`None`: no token).
    pub fn with_token(token: Option<&[u8]>) -> Self {
        ClientHello { version: VERSION, token: token.map(<[u8]>::to_vec) }
    }

    /// Appends the wire bytes to `out` (a token longer than `u16::MAX` bytes is cut
    /// there; a server refuses any over [`MAX_TOKEN_LEN`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.put_u16(self.version);
        match &self.token {
            None => out.put_u16(0),
            Some(t) => {
                let t = &t[..t.len().min(u16::MAX as usize)];
                out.put_u16(hello_flags::AUTH);
                out.put_u16(t.len() as u16);
                out.extend_from_slice(t);
            }
        }
    }

    /// Parses a whole hello (head and token); the token length must be 1 to
    /// [`MAX_TOKEN_LEN`].
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let head =
            ClientHelloHead::decode(buf.get(..CLIENT_HELLO_LEN).ok_or(DecodeError::Truncated)?)?;
        head.check_flags()?;
        let mut c = Cursor::new(&buf[CLIENT_HELLO_LEN..]);
        let token = if head.has_token() {
            let n = c.u16()?;
            if n == 0 || usize::from(n) > MAX_TOKEN_LEN {
                return Err(DecodeError::BadField(n.into(), "hello.token_len"));
            }
            Some(c.take(n.into())?.to_vec())
        } else {
            None
        };
        c.finish()?;
        Ok(ClientHello { version: head.version, token })
    }
}

/// The server's answer:
/// `"RLCK" | version u16 | status u8 | grant u8 | session u64 | lease_ms u32 | max_frame u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerHello {
    /// Accepted: the version the session speaks (the client's). Refused: the server's
    /// newest.
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
        out.put_u8(self.status.code());
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
        let status = HelloStatus::from_code(c.u8()?)?;
        let grant = GrantMode::from_code(c.u8()?)?;
        let session = c.u64()?;
        let lease_ms = c.u32()?;
        let max_frame = c.u32()?;
        c.finish()?;
        Ok(ServerHello { version, status, grant, session, lease_ms, max_frame })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(flags: u16) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.put_u16(VERSION);
        out.put_u16(flags);
        out
    }

    #[test]
    fn a_token_round_trips_and_is_never_printed() {
        let h = ClientHello::with_token(Some(b"hunter2"));
        let mut out = Vec::new();
        h.encode(&mut out);
        assert_eq!(out.len(), CLIENT_HELLO_LEN + 2 + 7);
        assert_eq!(ClientHello::decode(&out).unwrap(), h);
        let head = ClientHelloHead::decode(&out[..CLIENT_HELLO_LEN]).unwrap();
        assert!(head.has_token() && head.check_flags().is_ok());
        let shown = format!("{h:?}");
        assert!(!shown.contains("hunter2") && shown.contains("<7 bytes>"), "{shown}");
    }

    #[test]
    fn bad_token_lengths_and_unknown_flags_are_refused() {
        let mut empty = head(hello_flags::AUTH);
        empty.put_u16(0);
        assert_eq!(ClientHello::decode(&empty), Err(DecodeError::BadField(0, "hello.token_len")));
        let mut long = head(hello_flags::AUTH);
        long.put_u16(MAX_TOKEN_LEN as u16 + 1);
        long.resize(long.len() + MAX_TOKEN_LEN + 1, b'x');
        assert!(ClientHello::decode(&long).is_err());
        let mut short = head(hello_flags::AUTH);
        short.put_u16(4);
        short.extend_from_slice(b"abc");
        assert_eq!(ClientHello::decode(&short), Err(DecodeError::Truncated));
        let odd = head(2);
        assert!(ClientHelloHead::decode(&odd).unwrap().check_flags().is_err());
        assert_eq!(ClientHello::decode(&odd), Err(DecodeError::BadField(2, "hello.flags")));
    }
}
