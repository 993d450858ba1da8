//! The body of a `STATS` response: counters, then a list of holders and waiters.
//!
//! Layout: eleven `u64` counters in the order of the fields of [`Counters`], then
//! `count u32`, then `count` entries of 42 bytes:
//! `session u64 | id u64 | start u64 | end u64 | mode u8 | state u8 | token u64`.
//!
//! `STATS_NAMED` (protocol version 5) answers with the same layout plus names: two more
//! counters (`names_live u64 | named_holders u64`) after the eleven, and each entry followed
//! by `name_len u16 | name` (`name_len` 0: the unnamed resource), 44 + n bytes.
//!
//! The list may be cut short: at the client's `max_entries`, at the server's limit, or to
//! keep the answer within the server's output bound and the frame limit (see the
//! `answer_size` module). The answer's `value` (not the body) says how many entries were
//! left out; [`StatsBody::omitted`] carries it.

use super::codec::{Cursor, Put};
use super::error::DecodeError;
use super::request::{Mode, MAX_RESOURCE_NAME_LEN};
use std::sync::Arc;

/// Server-wide counters since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Sessions open now.
    pub sessions_open: u64,
    /// Sessions opened since start.
    pub sessions_total: u64,
    /// Locks held now.
    pub holders: u64,
    /// Locks queued now.
    pub waiters: u64,
    /// Grants since start (on a single server also the last fencing token handed out; not
    /// on a cluster node, whose tokens carry an epoch).
    pub grants: u64,
    /// Releases by `UNLOCK` since start.
    pub releases: u64,
    /// Locks released because their session closed or its lease expired.
    pub released_by_close: u64,
    /// `try` locks answered `WOULD_BLOCK`.
    pub would_block: u64,
    /// Waits that timed out.
    pub timeouts: u64,
    /// Waits cancelled.
    pub cancels: u64,
    /// Requests answered with an error status.
    pub errors: u64,
    /// Named resources live now (something held or queued on them). Only in a
    /// `STATS_NAMED` answer; 0 from a `STATS`.
    pub names_live: u64,
    /// Locks held now on named resources (part of `holders`). Only in a `STATS_NAMED`
    /// answer; 0 from a `STATS`.
    pub named_holders: u64,
}

/// Whether a listed lock is held or queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryState {
    /// Granted; `token` is its fencing token. Wire byte 0.
    Held,
    /// Queued; `token` is 0. Wire byte 1.
    Waiting,
}

/// One holder or waiter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsEntry {
    /// Owning session.
    pub session: u64,
    /// Request id of the `LOCK`.
    pub id: u64,
    /// First unit.
    pub start: u64,
    /// One past the last unit.
    pub end: u64,
    /// Shared or exclusive.
    pub mode: Mode,
    /// Held or waiting.
    pub state: EntryState,
    /// Fencing token (0 while waiting).
    pub token: u64,
    /// The resource's name; `None` for the unnamed resource, and for every entry of a
    /// `STATS` answer (only `STATS_NAMED` carries names).
    pub name: Option<Arc<[u8]>>,
}

impl StatsEntry {
    /// Bytes of this entry in a `STATS_NAMED` answer: [`STATS_NAMED_ENTRY_LEN`] plus its
    /// name.
    pub fn named_len(&self) -> usize {
        STATS_NAMED_ENTRY_LEN + self.name.as_ref().map_or(0, |n| n.len())
    }
}

/// Size of one [`StatsEntry`] in a `STATS` answer.
pub const STATS_ENTRY_LEN: usize = 42;

/// Size of one [`StatsEntry`] in a `STATS_NAMED` answer without its name's bytes (the
/// 42 of [`STATS_ENTRY_LEN`] and `name_len u16`).
pub const STATS_NAMED_ENTRY_LEN: usize = STATS_ENTRY_LEN + 2;

/// Counters plus a (possibly cut short) list of holders and waiters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsBody {
    /// Counters.
    pub counters: Counters,
    /// Holders and waiters, in arrival order (at most what was asked for).
    pub entries: Vec<StatsEntry>,
    /// Holders and waiters the server had but left out of `entries` (0: the list is
    /// complete). On the wire it is the answer's `value`, not part of the body:
    /// [`ResponseFrame::stats`](crate::ResponseFrame::stats) sets it there, and
    /// [`ResponseFrame::decode`](crate::ResponseFrame::decode) copies it here.
    pub omitted: u64,
}

impl StatsBody {
    /// Encodes the body of a `STATS` answer, or with `named` of a `STATS_NAMED` answer.
    pub(crate) fn encode(&self, out: &mut Vec<u8>, named: bool) {
        let c = &self.counters;
        for v in [
            c.sessions_open,
            c.sessions_total,
            c.holders,
            c.waiters,
            c.grants,
            c.releases,
            c.released_by_close,
            c.would_block,
            c.timeouts,
            c.cancels,
            c.errors,
        ] {
            out.put_u64(v);
        }
        if named {
            out.put_u64(c.names_live);
            out.put_u64(c.named_holders);
        }
        out.put_u32(self.entries.len() as u32);
        for e in &self.entries {
            out.put_u64(e.session);
            out.put_u64(e.id);
            out.put_u64(e.start);
            out.put_u64(e.end);
            out.put_u8(super::request::mode_code(e.mode));
            out.put_u8(match e.state {
                EntryState::Held => 0,
                EntryState::Waiting => 1,
            });
            out.put_u64(e.token);
            if named {
                let name = e.name.as_deref().unwrap_or_default();
                out.put_u16(u16::try_from(name.len()).expect("a name of at most 65 535 bytes"));
                out.extend_from_slice(name);
            }
        }
    }

    /// Decodes the body of a `STATS` answer, or with `named` of a `STATS_NAMED` answer.
    pub(crate) fn decode(c: &mut Cursor<'_>, named: bool) -> Result<Self, DecodeError> {
        let mut counters = Counters {
            sessions_open: c.u64()?,
            sessions_total: c.u64()?,
            holders: c.u64()?,
            waiters: c.u64()?,
            grants: c.u64()?,
            releases: c.u64()?,
            released_by_close: c.u64()?,
            would_block: c.u64()?,
            timeouts: c.u64()?,
            cancels: c.u64()?,
            errors: c.u64()?,
            names_live: 0,
            named_holders: 0,
        };
        if named {
            counters.names_live = c.u64()?;
            counters.named_holders = c.u64()?;
        }
        let count = c.u32()? as usize;
        let entry_len = if named { STATS_NAMED_ENTRY_LEN } else { STATS_ENTRY_LEN };
        // Bound the allocation by what the buffer can actually hold.
        if count > c.remaining() / entry_len {
            return Err(DecodeError::Truncated);
        }
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let session = c.u64()?;
            let id = c.u64()?;
            let start = c.u64()?;
            let end = c.u64()?;
            let mode = super::request::mode_from_code(c.u8()?)?;
            let state = match c.u8()? {
                0 => EntryState::Held,
                1 => EntryState::Waiting,
                b => return Err(DecodeError::BadField(b.into(), "stats.state")),
            };
            let token = c.u64()?;
            let name = match named {
                true => match c.u16()? {
                    0 => None,
                    n if usize::from(n) > MAX_RESOURCE_NAME_LEN => {
                        return Err(DecodeError::BadName(n))
                    }
                    n => Some(Arc::from(c.take(n.into())?)),
                },
                false => None,
            };
            entries.push(StatsEntry { session, id, start, end, mode, state, token, name });
        }
        Ok(StatsBody { counters, entries, omitted: 0 })
    }
}
