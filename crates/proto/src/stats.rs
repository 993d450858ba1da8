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
//! `STATS_CACHED` (protocol version 6) answers with the `STATS_NAMED` layout plus cached
//! locks: four more counters (`cached_extents u64 | callbacks u64 | give_backs u64 |
//! cache_expanded u64`) after the thirteen, and an entry's `state` may also be `2`, a held
//! lock that is a kept extent (`docs/PROTOCOL.md` §2.3, §5.2). `STATS` and `STATS_NAMED`
//! stay as they were in every version.
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
    /// `STATS_NAMED` or `STATS_CACHED` answer; 0 from a `STATS`.
    pub names_live: u64,
    /// Locks held now on named resources (part of `holders`). Only in a `STATS_NAMED` or
    /// `STATS_CACHED` answer; 0 from a `STATS`.
    pub named_holders: u64,
    /// Kept extents now: held locks that caching sessions may keep past their own unlock
    /// (part of `holders`). Only in a `STATS_CACHED` answer (version 6); 0 from the others.
    pub cached_extents: u64,
    /// `CALLBACK` notices sent since start. Only in a `STATS_CACHED` answer; 0 from the
    /// others.
    pub callbacks: u64,
    /// `GIVE_BACK`s done since start. Only in a `STATS_CACHED` answer; 0 from the others.
    pub give_backs: u64,
    /// `LOCK_CACHED` grants wider than asked since start. Only in a `STATS_CACHED` answer;
    /// 0 from the others.
    pub cache_expanded: u64,
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
    /// `STATS` answer (only `STATS_NAMED` and `STATS_CACHED` carry names).
    pub name: Option<Arc<[u8]>>,
    /// A held lock that is a kept extent: its caching session may keep it past its own
    /// unlock, until the server calls it back (`docs/PROTOCOL.md` §2.3). Only a
    /// `STATS_CACHED` answer says so (`state` byte `2`); `false` in every entry of a `STATS`
    /// or `STATS_NAMED` answer, and of a waiting lock.
    pub kept: bool,
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

/// Size of one [`StatsEntry`] in a `STATS_NAMED` (or `STATS_CACHED`) answer without its
/// name's bytes (the 42 of [`STATS_ENTRY_LEN`] and `name_len u16`).
pub const STATS_NAMED_ENTRY_LEN: usize = STATS_ENTRY_LEN + 2;

/// Which answer a body belongs to, so what it carries: the answer's op byte says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `STATS`: eleven counters, entries without names.
    Plain,
    /// `STATS_NAMED` (version 5): the names' two counters, and names.
    Named,
    /// `STATS_CACHED` (version 6): as `Named`, then the cache's four counters, and kept
    /// extents marked.
    Cached,
}

impl Layout {
    /// The layout of the answer to `op`, if it is a stats op.
    pub(crate) fn of(op: u8) -> Option<Layout> {
        match op {
            super::request::op::STATS => Some(Layout::Plain),
            super::request::op::STATS_NAMED => Some(Layout::Named),
            super::request::op::STATS_CACHED => Some(Layout::Cached),
            _ => None,
        }
    }

    fn named(self) -> bool {
        self != Layout::Plain
    }
}

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
    /// Encodes the body of a `STATS`, `STATS_NAMED` or `STATS_CACHED` answer.
    pub(crate) fn encode(&self, out: &mut Vec<u8>, layout: Layout) {
        let named = layout.named();
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
        if layout == Layout::Cached {
            out.put_u64(c.cached_extents);
            out.put_u64(c.callbacks);
            out.put_u64(c.give_backs);
            out.put_u64(c.cache_expanded);
        }
        out.put_u32(self.entries.len() as u32);
        for e in &self.entries {
            out.put_u64(e.session);
            out.put_u64(e.id);
            out.put_u64(e.start);
            out.put_u64(e.end);
            out.put_u8(super::request::mode_code(e.mode));
            out.put_u8(match e.state {
                EntryState::Held if e.kept && layout == Layout::Cached => 2,
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

    /// Decodes the body of a `STATS`, `STATS_NAMED` or `STATS_CACHED` answer.
    pub(crate) fn decode(c: &mut Cursor<'_>, layout: Layout) -> Result<Self, DecodeError> {
        let named = layout.named();
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
            ..Counters::default()
        };
        if named {
            counters.names_live = c.u64()?;
            counters.named_holders = c.u64()?;
        }
        if layout == Layout::Cached {
            counters.cached_extents = c.u64()?;
            counters.callbacks = c.u64()?;
            counters.give_backs = c.u64()?;
            counters.cache_expanded = c.u64()?;
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
            let (state, kept) = match c.u8()? {
                0 => (EntryState::Held, false),
                1 => (EntryState::Waiting, false),
                2 if layout == Layout::Cached => (EntryState::Held, true),
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
            entries.push(StatsEntry { session, id, start, end, mode, state, token, name, kept });
        }
        Ok(StatsBody { counters, entries, omitted: 0 })
    }
}
