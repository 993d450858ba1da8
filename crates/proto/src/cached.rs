//! The bodies of cached locks (version 6, `docs/PROTOCOL.md` §2.3): the extent a
//! `LOCK_CACHED` was granted, and the part a `CALLBACK` notice asks back.

use super::codec::{Cursor, Put};
use super::error::DecodeError;
use super::request::{mode_code, mode_from_code, Mode};

/// A bit of the `value` of the `OK` answer to `CACHE_ON`: the client may append
/// `used u32` to its `GIVE_BACK`s, how many local locks it served inside the lock since
/// its grant (`docs/PROTOCOL.md` §2.3). A server that predates it answers `value` 0, and
/// refuses the longer `GIVE_BACK` as `MALFORMED`.
pub const CACHE_REPORTS_USE: u64 = 1;

/// The body of an `OK` answer to `LOCK_CACHED`: `start u64 | end u64 | cached u8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CachedGrant {
    /// First unit of the granted extent (at most the request's `start`).
    pub start: u64,
    /// One past the last unit of the extent (at least the request's `end`).
    pub end: u64,
    /// Whether the client may keep the extent after its own unlock and serve later
    /// locks inside it locally (`true`), or must unlock it as an ordinary lock (`false`:
    /// the server saw other sessions near this range and granted exactly what was asked).
    pub cached: bool,
}

/// Bytes of a [`CachedGrant`] on the wire.
pub const CACHED_GRANT_LEN: usize = 17;

impl CachedGrant {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.start);
        out.put_u64(self.end);
        out.put_u8(self.cached.into());
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self, DecodeError> {
        let start = c.u64()?;
        let end = c.u64()?;
        let cached = match c.u8()? {
            0 => false,
            1 => true,
            b => return Err(DecodeError::BadField(b.into(), "grant.cached")),
        };
        if start >= end {
            return Err(DecodeError::InvalidRange { start, end });
        }
        Ok(CachedGrant { start, end, cached })
    }
}

/// The body of a `CALLBACK` notice: `start u64 | end u64 | mode u8`, the part of the lock
/// (named by the notice's `value`) that another session waits for, and how it wants it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Callback {
    /// First unit wanted.
    pub start: u64,
    /// One past the last unit wanted.
    pub end: u64,
    /// The waiting request's mode: `Shared` lets the holder downgrade instead of releasing.
    pub mode: Mode,
}

impl Callback {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.start);
        out.put_u64(self.end);
        out.put_u8(mode_code(self.mode));
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self, DecodeError> {
        let start = c.u64()?;
        let end = c.u64()?;
        let mode = mode_from_code(c.u8()?)?;
        if start >= end {
            return Err(DecodeError::InvalidRange { start, end });
        }
        Ok(Callback { start, end, mode })
    }
}
