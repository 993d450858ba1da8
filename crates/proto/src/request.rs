//! Requests: `len u32 | op u8 | id u64 | payload`, all little-endian.

use core::time::Duration;

use super::codec::{begin_frame, finish_frame, Cursor, Put};
use super::error::DecodeError;

/// Bytes of a frame after the length prefix that every request and response carries
/// (`op u8 | id u64`).
pub const FRAME_HEADER_LEN: usize = 9;

/// The longest name of a resource, in bytes (`docs/design/names.md`): an id (a Lustre
/// FID, an NFSv4 file handle, a table id) or a short path; a client hashes a longer one.
pub const MAX_RESOURCE_NAME_LEN: usize = 1024;

/// The largest request frame's length prefix value (a `LOCK_CACHED` with the longest
/// name: header + 38 + 2 + [`MAX_RESOURCE_NAME_LEN`] payload bytes). A server's `max_frame` is at
/// least this.
pub const MAX_REQUEST_FRAME: u32 = FRAME_HEADER_LEN as u32 + 40 + MAX_RESOURCE_NAME_LEN as u32;

/// `GIVE_BACK`'s flags byte: bit 0 turns the lock shared instead of releasing a part.
const GIVE_BACK_DOWNGRADE: u8 = 1;
/// `GIVE_BACK`'s flags byte: bit 1 says `used u32` follows.
const GIVE_BACK_USED: u8 = 2;

/// Operation codes (the `op` byte of a request; a response carries `op | 0x80`).
pub mod op {
    /// Lock a range.
    pub const LOCK: u8 = 0x01;
    /// Release a held lock (or withdraw a waiting one).
    pub const UNLOCK: u8 = 0x02;
    /// Withdraw a waiting lock.
    pub const CANCEL: u8 = 0x03;
    /// Ask whether a queued lock was granted (poll grant mode).
    pub const POLL: u8 = 0x04;
    /// Refresh the session lease; no other effect.
    pub const KEEPALIVE: u8 = 0x05;
    /// Counters and the holder/waiter list.
    pub const STATS: u8 = 0x06;
    /// Cluster: re-assert a lock held at the partition's previous owner.
    pub const RECLAIM: u8 = 0x07;
    /// Cluster: read the partition map.
    pub const MAP: u8 = 0x08;
    /// Cluster: a server-pushed notice (a response frame with id 0 that answers no
    /// request). Never a request: a request with this op is answered `UNKNOWN_OP`.
    pub const NOTICE: u8 = 0x09;
    /// Ask for a shared-memory answer slot (same host only; `docs/PROTOCOL.md` §9).
    pub const SHM_ATTACH: u8 = 0x0a;
    /// Cluster: ask for a `MAP_CHANGED` notice whenever the node's map changes.
    pub const WATCH_MAP: u8 = 0x0b;
    /// Lock a range of a named resource.
    pub const LOCK_NAMED: u8 = 0x0c;
    /// Cluster: re-assert a lock of a named resource.
    pub const RECLAIM_NAMED: u8 = 0x0d;
    /// Counters and the holder/waiter list with the resources' names (version 5).
    pub const STATS_NAMED: u8 = 0x0e;
    /// Ask for cached grants and callbacks in this session (version 6).
    pub const CACHE_ON: u8 = 0x0f;
    /// Lock a range that the server may grant wider, within a desired range (version 6).
    pub const LOCK_CACHED: u8 = 0x10;
    /// Release part of a held lock, or turn it shared (version 6).
    pub const GIVE_BACK: u8 = 0x11;
    /// Counters and the holder/waiter list with names and cached locks: the cache's
    /// counters, kept extents marked (version 6).
    pub const STATS_CACHED: u8 = 0x12;
    /// The bit that marks a response.
    pub const RESPONSE: u8 = 0x80;
    /// The op of every `UNKNOWN_OP` response (on the wire `0xff`), whatever the request's
    /// op byte was: echoing it would let a request with the response bit set (`0x81`) be
    /// answered with what looks like a `LOCK` reply.
    pub const UNKNOWN: u8 = 0x7f;

    /// The protocol version that introduced request op `op` (the "version N" of
    /// `docs/PROTOCOL.md` §2's table): a session of an older version is answered
    /// `UNKNOWN_OP`, as by a server that predates the op, whatever the payload. The
    /// oldest version a server accepts ([`MIN_VERSION`](crate::MIN_VERSION)) for the ops
    /// every session has, and for bytes that are no op (decoding refuses those).
    pub const fn introduced_in(op: u8) -> u16 {
        match op {
            LOCK_NAMED | RECLAIM_NAMED | STATS_NAMED => 5,
            CACHE_ON | LOCK_CACHED | GIVE_BACK | STATS_CACHED => 6,
            _ => crate::MIN_VERSION,
        }
    }
}

/// How a lock is held: the in-process lock's [`rangelock::Mode`], on the wire one byte
/// (`0` exclusive, `1` shared).
pub use rangelock::Mode;

/// The wire byte of a [`Mode`].
pub(crate) fn mode_code(mode: Mode) -> u8 {
    match mode {
        Mode::Exclusive => 0,
        Mode::Shared => 1,
    }
}

/// The [`Mode`] of a wire byte.
pub(crate) fn mode_from_code(b: u8) -> Result<Mode, DecodeError> {
    match b {
        0 => Ok(Mode::Exclusive),
        1 => Ok(Mode::Shared),
        _ => Err(DecodeError::BadMode(b)),
    }
}

/// How long a lock request may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wait {
    /// Never queue: grant now or answer `WOULD_BLOCK`. Wire byte 0.
    Try,
    /// Queue for at most this long (millisecond resolution on the wire). Wire byte 1.
    Timeout(Duration),
    /// Queue until granted, cancelled or the session ends. Wire byte 2.
    Forever,
}

/// An operation and its arguments; a name is borrowed from the frame it was decoded from
/// (or from the caller, to encode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// Lock `[start, end)`. Payload: `start u64 | end u64 | mode u8 | wait u8 | timeout_ms u32`.
    Lock {
        /// First unit.
        start: u64,
        /// One past the last unit (`start < end`).
        end: u64,
        /// Shared or exclusive.
        mode: Mode,
        /// Try, timeout or forever.
        wait: Wait,
    },
    /// Release the lock that request `target` of this session acquired. Payload: `target u64`.
    Unlock {
        /// Request id of the `LOCK`.
        target: u64,
    },
    /// Withdraw the waiting lock of request `target`. Payload: `target u64`.
    Cancel {
        /// Request id of the `LOCK`.
        target: u64,
    },
    /// Ask for the state of the lock of request `target`. Payload: `target u64`.
    Poll {
        /// Request id of the `LOCK`.
        target: u64,
    },
    /// Refresh the lease. No payload.
    Keepalive,
    /// Counters and up to `max_entries` holders/waiters. Payload: `max_entries u32`.
    Stats {
        /// How many list entries the client wants (the server may send fewer).
        max_entries: u32,
    },
    /// As `Stats`, answered with names and the names' counters (version 5). Payload:
    /// `max_entries u32`.
    StatsNamed {
        /// How many list entries the client wants (the server may send fewer).
        max_entries: u32,
    },
    /// As `StatsNamed`, answered also with the cache's counters and kept extents marked
    /// (version 6). Payload: `max_entries u32`.
    StatsCached {
        /// How many list entries the client wants (the server may send fewer).
        max_entries: u32,
    },
    /// Cluster: re-assert the lock `[start, end)` with fencing token `token`, held at the
    /// partition's previous owner, during the new owner's grace period. The request id
    /// names the lock as for `LOCK`. Answered `OK` with the (unchanged) token as value.
    /// Payload: `start u64 | end u64 | mode u8 | token u64`.
    Reclaim {
        /// First unit.
        start: u64,
        /// One past the last unit (`start < end`).
        end: u64,
        /// Shared or exclusive.
        mode: Mode,
        /// The token the previous owner granted.
        token: u64,
    },
    /// Cluster: read the partition map (answered `OK` with a
    /// [`ClusterMap`](crate::ClusterMap) body). No payload.
    Map,
    /// Ask for a shared-memory slot in which the server publishes this session's `LOCK`
    /// answers (`docs/PROTOCOL.md` §9). Answered `OK` with the slot index as value and a
    /// [`ShmAttached`](crate::ShmAttached) body. No payload.
    ShmAttach,
    /// Cluster: from now on, push this session a `MAP_CHANGED` notice whenever the map
    /// this node serves to `MAP` changes (`docs/PROTOCOL.md` §7.7). Answered `OK` with the
    /// revision of the node's current map as value. No payload.
    WatchMap,
    /// [`Lock`](Request::Lock) of `[start, end)` of the resource `name` (1 to
    /// [`MAX_RESOURCE_NAME_LEN`] bytes; locks of different names never conflict). Payload: `start
    /// u64 | end u64 | mode u8 | wait u8 | timeout_ms u32 | name_len u16 | name`.
    LockNamed {
        /// First unit.
        start: u64,
        /// One past the last unit (`start < end`).
        end: u64,
        /// Shared or exclusive.
        mode: Mode,
        /// Try, timeout or forever.
        wait: Wait,
        /// The resource's name.
        name: &'a [u8],
    },
    /// Cluster: [`Reclaim`](Request::Reclaim) of a lock of the resource `name`. Payload:
    /// `start u64 | end u64 | mode u8 | token u64 | name_len u16 | name`.
    ReclaimNamed {
        /// First unit.
        start: u64,
        /// One past the last unit (`start < end`).
        end: u64,
        /// Shared or exclusive.
        mode: Mode,
        /// The token the previous owner granted.
        token: u64,
        /// The resource's name.
        name: &'a [u8],
    },
    /// Version 6: from now on this session may send `LOCK_CACHED` and `GIVE_BACK`, and
    /// gets `CALLBACK` notices (`docs/PROTOCOL.md` §2.3). Answered `OK`, or
    /// `CACHE_UNAVAILABLE` by a server that grants no cached locks. No payload.
    CacheOn,
    /// Version 6: [`Lock`](Request::Lock) of `[start, end)` that the server may grant as a
    /// wider extent within `[desired_start, desired_end)` (which contains `[start, end)`),
    /// of the resource `name` (empty: the unnamed resource). The `OK` answer carries the
    /// granted extent ([`CachedGrant`](crate::CachedGrant)). Payload: `start u64 | end
    /// u64 | mode u8 | wait u8 | timeout_ms u32 | desired_start u64 | desired_end u64 |
    /// name_len u16 | name`.
    LockCached {
        /// First unit needed.
        start: u64,
        /// One past the last unit needed (`start < end`).
        end: u64,
        /// Shared or exclusive.
        mode: Mode,
        /// Try, timeout or forever.
        wait: Wait,
        /// First unit the grant may cover (`desired_start <= start`).
        desired_start: u64,
        /// One past the last unit the grant may cover (`end <= desired_end`).
        desired_end: u64,
        /// The resource's name; empty for the unnamed resource.
        name: &'a [u8],
    },
    /// Version 6: release `[start, end)` of the held lock of request `target`, or with
    /// `downgrade` (then `[start, end)` is the whole lock) turn it shared. A part in the
    /// middle leaves two locks: the left keeps `target`, the right is named by this
    /// request's id. Payload: `target u64 | start u64 | end u64 | flags u8`, then with
    /// `used` a `u32` (flags: bit 0 `downgrade`, bit 1 `used` follows; `used` only where
    /// the server's `CACHE_ON` answer allowed it: [`crate::CACHE_REPORTS_USE`]).
    GiveBack {
        /// Request id of the lock.
        target: u64,
        /// First unit given back.
        start: u64,
        /// One past the last unit given back (`start < end`).
        end: u64,
        /// Turn the lock shared instead of releasing it.
        downgrade: bool,
        /// How many local locks the client served inside the lock since it was granted
        /// (saturating); `None`: not sent.
        used: Option<u32>,
    },
}

impl Request<'_> {
    /// The operation byte.
    pub fn op(&self) -> u8 {
        match self {
            Request::Lock { .. } => op::LOCK,
            Request::Unlock { .. } => op::UNLOCK,
            Request::Cancel { .. } => op::CANCEL,
            Request::Poll { .. } => op::POLL,
            Request::Keepalive => op::KEEPALIVE,
            Request::Stats { .. } => op::STATS,
            Request::StatsNamed { .. } => op::STATS_NAMED,
            Request::StatsCached { .. } => op::STATS_CACHED,
            Request::Reclaim { .. } => op::RECLAIM,
            Request::Map => op::MAP,
            Request::ShmAttach => op::SHM_ATTACH,
            Request::WatchMap => op::WATCH_MAP,
            Request::LockNamed { .. } => op::LOCK_NAMED,
            Request::ReclaimNamed { .. } => op::RECLAIM_NAMED,
            Request::CacheOn => op::CACHE_ON,
            Request::LockCached { .. } => op::LOCK_CACHED,
            Request::GiveBack { .. } => op::GIVE_BACK,
        }
    }
}

/// A request with its id: what travels in one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestFrame<'a> {
    /// Chosen by the client; echoed in the response. A `LOCK`'s (or `RECLAIM`'s) id names
    /// the lock.
    pub id: u64,
    /// The operation.
    pub request: Request<'a>,
}

/// The wire bytes of a wait: `(wait u8, timeout_ms u32)`.
fn wait_code(wait: Wait) -> (u8, u32) {
    match wait {
        Wait::Try => (0, 0),
        Wait::Timeout(d) => (1, u32::try_from(d.as_millis()).unwrap_or(u32::MAX)),
        Wait::Forever => (2, 0),
    }
}

/// Reads `wait u8 | timeout_ms u32`.
fn read_wait(c: &mut Cursor<'_>) -> Result<Wait, DecodeError> {
    let w = c.u8()?;
    let ms = c.u32()?;
    if w != 1 && ms != 0 && w <= 2 {
        return Err(DecodeError::BadField(ms.into(), "lock.timeout_ms"));
    }
    match w {
        0 => Ok(Wait::Try),
        1 => Ok(Wait::Timeout(Duration::from_millis(ms.into()))),
        2 => Ok(Wait::Forever),
        _ => Err(DecodeError::BadWait(w)),
    }
}

/// Writes `name_len u16 | name`. Panics if the name is longer than `u16::MAX` (the
/// encoder writes what it is given, a server refuses a name over [`MAX_RESOURCE_NAME_LEN`]).
fn put_name(out: &mut Vec<u8>, name: &[u8]) {
    out.put_u16(u16::try_from(name.len()).expect("a name of at most 65 535 bytes"));
    out.extend_from_slice(name);
}

/// Reads `name_len u16 | name`: 1 to [`MAX_RESOURCE_NAME_LEN`] bytes.
fn read_name<'a>(c: &mut Cursor<'a>) -> Result<&'a [u8], DecodeError> {
    let len = c.u16()?;
    if len == 0 || usize::from(len) > MAX_RESOURCE_NAME_LEN {
        return Err(DecodeError::BadName(len));
    }
    c.take(len.into())
}

impl<'a> RequestFrame<'a> {
    /// Appends the whole frame, length prefix included, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = begin_frame(out);
        out.put_u8(self.request.op());
        out.put_u64(self.id);
        match self.request {
            Request::Lock { start, end, mode, wait } => {
                out.put_u64(start);
                out.put_u64(end);
                out.put_u8(mode_code(mode));
                let (w, ms) = wait_code(wait);
                out.put_u8(w);
                out.put_u32(ms);
            }
            Request::LockNamed { start, end, mode, wait, name } => {
                out.put_u64(start);
                out.put_u64(end);
                out.put_u8(mode_code(mode));
                let (w, ms) = wait_code(wait);
                out.put_u8(w);
                out.put_u32(ms);
                put_name(out, name);
            }
            Request::ReclaimNamed { start, end, mode, token, name } => {
                out.put_u64(start);
                out.put_u64(end);
                out.put_u8(mode_code(mode));
                out.put_u64(token);
                put_name(out, name);
            }
            Request::LockCached { start, end, mode, wait, desired_start, desired_end, name } => {
                out.put_u64(start);
                out.put_u64(end);
                out.put_u8(mode_code(mode));
                let (w, ms) = wait_code(wait);
                out.put_u8(w);
                out.put_u32(ms);
                out.put_u64(desired_start);
                out.put_u64(desired_end);
                out.put_u16(u16::try_from(name.len()).expect("a name of at most 65 535 bytes"));
                out.extend_from_slice(name);
            }
            Request::GiveBack { target, start, end, downgrade, used } => {
                out.put_u64(target);
                out.put_u64(start);
                out.put_u64(end);
                let mut flags = if downgrade { GIVE_BACK_DOWNGRADE } else { 0 };
                if used.is_some() {
                    flags |= GIVE_BACK_USED;
                }
                out.put_u8(flags);
                if let Some(used) = used {
                    out.put_u32(used);
                }
            }
            Request::Unlock { target } | Request::Cancel { target } | Request::Poll { target } => {
                out.put_u64(target)
            }
            Request::Keepalive
            | Request::Map
            | Request::ShmAttach
            | Request::WatchMap
            | Request::CacheOn => {}
            Request::Stats { max_entries }
            | Request::StatsNamed { max_entries }
            | Request::StatsCached { max_entries } => out.put_u32(max_entries),
            Request::Reclaim { start, end, mode, token } => {
                out.put_u64(start);
                out.put_u64(end);
                out.put_u8(mode_code(mode));
                out.put_u64(token);
            }
        }
        finish_frame(out, at);
    }

    /// Reads the `op` and `id` of a frame body (the bytes after the length prefix), if it is
    /// long enough to carry them. Used to address an error reply to a body that does not
    /// decode.
    pub fn peek_header(body: &[u8]) -> Option<(u8, u64)> {
        let mut c = Cursor::new(body);
        Some((c.u8().ok()?, c.u64().ok()?))
    }

    /// Decodes a frame body (the bytes after the length prefix). Total: any input yields a
    /// value or an error, never a panic.
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body);
        let op_byte = c.u8()?;
        let id = c.u64()?;
        let request = match op_byte {
            op::LOCK => {
                let start = c.u64()?;
                let end = c.u64()?;
                let mode = mode_from_code(c.u8()?)?;
                let wait = read_wait(&mut c)?;
                c.finish()?;
                if start >= end {
                    return Err(DecodeError::InvalidRange { start, end });
                }
                Request::Lock { start, end, mode, wait }
            }
            op::LOCK_NAMED => {
                let start = c.u64()?;
                let end = c.u64()?;
                let mode = mode_from_code(c.u8()?)?;
                let wait = read_wait(&mut c)?;
                let name = read_name(&mut c)?;
                c.finish()?;
                if start >= end {
                    return Err(DecodeError::InvalidRange { start, end });
                }
                Request::LockNamed { start, end, mode, wait, name }
            }
            op::RECLAIM_NAMED => {
                let start = c.u64()?;
                let end = c.u64()?;
                let mode = mode_from_code(c.u8()?)?;
                let token = c.u64()?;
                let name = read_name(&mut c)?;
                c.finish()?;
                if start >= end {
                    return Err(DecodeError::InvalidRange { start, end });
                }
                Request::ReclaimNamed { start, end, mode, token, name }
            }
            op::LOCK_CACHED => {
                let start = c.u64()?;
                let end = c.u64()?;
                let mode = mode_from_code(c.u8()?)?;
                let wait = read_wait(&mut c)?;
                let desired_start = c.u64()?;
                let desired_end = c.u64()?;
                let len = c.u16()?;
                if usize::from(len) > MAX_RESOURCE_NAME_LEN {
                    return Err(DecodeError::BadName(len));
                }
                let name = c.take(len.into())?;
                c.finish()?;
                if start >= end {
                    return Err(DecodeError::InvalidRange { start, end });
                }
                if desired_start > start || desired_end < end {
                    return Err(DecodeError::InvalidRange {
                        start: desired_start,
                        end: desired_end,
                    });
                }
                Request::LockCached { start, end, mode, wait, desired_start, desired_end, name }
            }
            op::GIVE_BACK => {
                let target = c.u64()?;
                let start = c.u64()?;
                let end = c.u64()?;
                let flags = c.u8()?;
                if flags & !(GIVE_BACK_DOWNGRADE | GIVE_BACK_USED) != 0 {
                    return Err(DecodeError::BadField(flags.into(), "give_back.flags"));
                }
                let downgrade = flags & GIVE_BACK_DOWNGRADE != 0;
                let used = if flags & GIVE_BACK_USED != 0 { Some(c.u32()?) } else { None };
                c.finish()?;
                if start >= end {
                    return Err(DecodeError::InvalidRange { start, end });
                }
                Request::GiveBack { target, start, end, downgrade, used }
            }
            op::CACHE_ON => Request::CacheOn,
            op::UNLOCK => Request::Unlock { target: c.u64()? },
            op::CANCEL => Request::Cancel { target: c.u64()? },
            op::POLL => Request::Poll { target: c.u64()? },
            op::KEEPALIVE => Request::Keepalive,
            op::STATS => Request::Stats { max_entries: c.u32()? },
            op::STATS_NAMED => Request::StatsNamed { max_entries: c.u32()? },
            op::STATS_CACHED => Request::StatsCached { max_entries: c.u32()? },
            op::RECLAIM => {
                let start = c.u64()?;
                let end = c.u64()?;
                let mode = mode_from_code(c.u8()?)?;
                let token = c.u64()?;
                c.finish()?;
                if start >= end {
                    return Err(DecodeError::InvalidRange { start, end });
                }
                Request::Reclaim { start, end, mode, token }
            }
            op::MAP => Request::Map,
            op::SHM_ATTACH => Request::ShmAttach,
            op::WATCH_MAP => Request::WatchMap,
            // NOTICE (0x09) is server-to-client only.
            other => return Err(DecodeError::UnknownOp(other)),
        };
        c.finish()?;
        Ok(RequestFrame { id, request })
    }
}
