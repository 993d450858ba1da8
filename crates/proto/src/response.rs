//! Responses: `len u32 | op|0x80 u8 | id u64 | status u8 | value u64 | body`.
//!
//! `value` is the fencing token for a granted `LOCK`/`LOCK_CACHED`/`POLL` or an accepted
//! `RECLAIM`, the status's documented value for some errors, the number of entries a
//! successful `STATS` left out, and 0 otherwise. Six responses have a
//! body (the two of version 6 are below): a `STATS` (`STATS_NAMED`, `STATS_CACHED`) response with status `OK` ([`StatsBody`]), a `MAP` response with status
//! `OK` ([`ClusterMap`]), any `NOT_OWNER` response except a notice ([`OwnerHint`]) and an
//! `SHM_ATTACH` response with status `OK` ([`ShmAttached`]).
//!
//! A **notice** is a response frame the server pushes unasked: op [`op::NOTICE`], id 0,
//! status [`Status::NotOwner`] (the node gave up partition `value`), [`Status::Fenced`]
//! (the node lost its etcd lease: all its partitions), to a version 4 session,
//! [`Status::SessionEnded`] (the server ends the session; `value` is the
//! [`EndReason`](crate::EndReason) code), to a session that sent `WATCH_MAP`,
//! [`Status::MapChanged`] (`value` is the new map's revision), without a body; or, to a
//! session that sent `CACHE_ON`, [`Status::Callback`] (`value` is a lock's request id) with
//! a [`Callback`] body.
//!
//! A successful `LOCK_CACHED` answer carries a [`CachedGrant`] body.

use super::cached::{CachedGrant, Callback};
use super::codec::{begin_frame, finish_frame, Cursor, Put};
use super::error::DecodeError;
use super::map::{ClusterMap, OwnerHint};
use super::request::op;
use super::shm::ShmAttached;
use super::stats::{Layout, StatsBody};
use super::status::Status;

/// The `value` of a notice that concerns every partition of the node (a `FENCED` notice
/// or a `NOT_OWNER` notice for all its partitions).
pub const ALL_PARTITIONS: u64 = u64::MAX;

/// One response frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseFrame {
    /// The request's op byte (without the response bit); [`op::UNKNOWN`] for a request
    /// whose op byte names no operation (answered with [`Status::UnknownOp`]);
    /// [`op::NOTICE`] for a notice.
    pub op: u8,
    /// The request's id (0 for errors not tied to a decodable request, and for notices).
    pub id: u64,
    /// Outcome.
    pub status: Status,
    /// Fencing token of a grant or reclaim, the documented value of some statuses (a
    /// notice's partition), the entries left out of a successful `STATS` (the same as
    /// `stats.omitted`), else 0.
    pub value: u64,
    /// Present only for a successful `STATS`, `STATS_NAMED` or `STATS_CACHED`.
    pub stats: Option<StatsBody>,
    /// Present only for a successful `MAP`.
    pub map: Option<ClusterMap>,
    /// Present only for a `NOT_OWNER` answer to a request (never for a notice).
    pub owner: Option<OwnerHint>,
    /// Present only for a successful `SHM_ATTACH` (the slot index is `value`).
    pub shm: Option<ShmAttached>,
    /// Present only for a successful `LOCK_CACHED` (version 6): the granted extent.
    pub grant: Option<CachedGrant>,
    /// Present only for a `CALLBACK` notice (version 6): the part wanted back.
    pub callback: Option<Callback>,
}

impl ResponseFrame {
    /// A response without body.
    pub fn new(op: u8, id: u64, status: Status, value: u64) -> Self {
        ResponseFrame {
            op,
            id,
            status,
            value,
            stats: None,
            map: None,
            owner: None,
            shm: None,
            grant: None,
            callback: None,
        }
    }

    /// The successful answer to `LOCK_CACHED` request `id`: granted with fencing token
    /// `token` over `grant`.
    pub fn lock_cached(id: u64, token: u64, grant: CachedGrant) -> Self {
        let r = ResponseFrame::new(op::LOCK_CACHED, id, Status::Ok, token);
        ResponseFrame { grant: Some(grant), ..r }
    }

    /// The `CALLBACK` notice (version 6): another session needs `part` of this session's
    /// lock `lock` (its request id).
    pub fn callback(lock: u64, part: Callback) -> Self {
        let r = ResponseFrame::new(op::NOTICE, 0, Status::Callback, lock);
        ResponseFrame { callback: Some(part), ..r }
    }

    /// A `NOT_OWNER` answer to request `id` (op `op`): `epoch` is the epoch of the owner
    /// the node knows (0 if none), `hint` who and where it is.
    pub fn not_owner(op: u8, id: u64, epoch: u64, hint: OwnerHint) -> Self {
        ResponseFrame { owner: Some(hint), ..ResponseFrame::new(op, id, Status::NotOwner, epoch) }
    }

    /// The successful answer to `STATS` request `id`; its `value` is `body.omitted`.
    pub fn stats(id: u64, body: StatsBody) -> Self {
        let r = ResponseFrame::new(op::STATS, id, Status::Ok, body.omitted);
        ResponseFrame { stats: Some(body), ..r }
    }

    /// The successful answer to `STATS_NAMED` request `id`: `body` with its entries'
    /// names; its `value` is `body.omitted`.
    pub fn stats_named(id: u64, body: StatsBody) -> Self {
        let r = ResponseFrame::new(op::STATS_NAMED, id, Status::Ok, body.omitted);
        ResponseFrame { stats: Some(body), ..r }
    }

    /// The successful answer to `STATS_CACHED` request `id` (version 6): `body` with its
    /// entries' names, the cache's counters and kept extents marked; its `value` is
    /// `body.omitted`.
    pub fn stats_cached(id: u64, body: StatsBody) -> Self {
        let r = ResponseFrame::new(op::STATS_CACHED, id, Status::Ok, body.omitted);
        ResponseFrame { stats: Some(body), ..r }
    }

    /// The successful answer to `MAP` request `id`.
    pub fn map(id: u64, map: ClusterMap) -> Self {
        ResponseFrame { map: Some(map), ..ResponseFrame::new(op::MAP, id, Status::Ok, 0) }
    }

    /// The successful answer to `SHM_ATTACH` request `id`: slot `slot` of `body.path`.
    pub fn shm_attached(id: u64, slot: u32, body: ShmAttached) -> Self {
        let r = ResponseFrame::new(op::SHM_ATTACH, id, Status::Ok, slot.into());
        ResponseFrame { shm: Some(body), ..r }
    }

    /// A notice: `status` is [`Status::NotOwner`] (the node gave up `partition`) or
    /// [`Status::Fenced`]; `partition` is [`ALL_PARTITIONS`] for all of the node's.
    pub fn notice(status: Status, partition: u64) -> Self {
        ResponseFrame::new(op::NOTICE, 0, status, partition)
    }

    /// The `SESSION_ENDED` notice (version 4): the server ends the session for `reason`.
    pub fn session_ended(reason: crate::EndReason) -> Self {
        ResponseFrame::new(op::NOTICE, 0, Status::SessionEnded, reason.code())
    }

    /// The `MAP_CHANGED` notice: the node's map changed; `revision` is the new map's.
    pub fn map_changed(revision: u64) -> Self {
        ResponseFrame::new(op::NOTICE, 0, Status::MapChanged, revision)
    }

    /// Whether this is a server-pushed notice rather than the answer to a request.
    pub fn is_notice(&self) -> bool {
        self.op == op::NOTICE
    }

    /// Appends the whole frame, length prefix included, to `out`.
    ///
    /// Writes `stats` and `map` when present, and for a `NOT_OWNER` answer (not a notice)
    /// its hint: `owner`, or the empty hint (owner unknown) when `None`. A body on a
    /// response that [`decode`](Self::decode) expects none for makes the frame
    /// undecodable (trailing bytes), as does a `STATS`/`MAP` `OK` without its body.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = begin_frame(out);
        out.put_u8(self.op | op::RESPONSE);
        out.put_u64(self.id);
        out.put_u8(self.status.code());
        out.put_u64(self.value);
        if let Some(body) = &self.stats {
            body.encode(out, Layout::of(self.op).unwrap_or(Layout::Plain));
        }
        if let Some(map) = &self.map {
            map.encode(out);
        }
        if let Some(shm) = &self.shm {
            shm.encode(out);
        }
        if let Some(grant) = &self.grant {
            grant.encode(out);
        }
        if let Some(callback) = &self.callback {
            callback.encode(out);
        }
        match &self.owner {
            Some(hint) => hint.encode(out),
            None if self.has_hint() => OwnerHint::default().encode(out),
            None => {}
        }
        finish_frame(out, at);
    }

    /// Whether the frame carries an owner hint: a `NOT_OWNER` that is not a notice.
    fn has_hint(&self) -> bool {
        self.status == Status::NotOwner && self.op != op::NOTICE
    }

    /// Decodes a frame body (the bytes after the length prefix). Total: never panics.
    ///
    /// A notice must have id 0 and status `NOT_OWNER`, `FENCED`, `SESSION_ENDED` or
    /// `MAP_CHANGED`.
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body);
        let kind = c.u8()?;
        if kind & op::RESPONSE == 0 {
            return Err(DecodeError::BadResponseKind(kind));
        }
        let op_byte = kind & !op::RESPONSE;
        let id = c.u64()?;
        let status = Status::from_code(c.u8()?)?;
        let value = c.u64()?;
        let mut r = ResponseFrame::new(op_byte, id, status, value);
        if op_byte == op::NOTICE {
            if id != 0 {
                return Err(DecodeError::BadField(id, "notice.id"));
            }
            let notice_status = [
                Status::NotOwner,
                Status::Fenced,
                Status::SessionEnded,
                Status::MapChanged,
                Status::Callback,
            ];
            if !notice_status.contains(&status) {
                return Err(DecodeError::BadField(status.code().into(), "notice.status"));
            }
            if status == Status::Callback {
                r.callback = Some(Callback::decode(&mut c)?);
            }
        } else if status == Status::NotOwner {
            r.owner = Some(OwnerHint::decode(&mut c)?);
        } else if let (Status::Ok, Some(layout)) = (status, Layout::of(op_byte)) {
            let body = StatsBody::decode(&mut c, layout)?;
            r.stats = Some(StatsBody { omitted: value, ..body });
        } else if status == Status::Ok && op_byte == op::MAP {
            r.map = Some(ClusterMap::decode(&mut c)?);
        } else if status == Status::Ok && op_byte == op::SHM_ATTACH {
            r.shm = Some(ShmAttached::decode(&mut c)?);
        } else if status == Status::Ok && op_byte == op::LOCK_CACHED {
            r.grant = Some(CachedGrant::decode(&mut c)?);
        }
        c.finish()?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(r: &ResponseFrame) -> Result<ResponseFrame, DecodeError> {
        let mut out = Vec::new();
        r.encode(&mut out);
        let len = u32::from_le_bytes(out[..4].try_into().unwrap()) as usize;
        assert_eq!(len, out.len() - 4);
        ResponseFrame::decode(&out[4..])
    }

    #[test]
    fn not_owner_without_hint_sends_the_empty_hint() {
        let r = ResponseFrame::new(op::LOCK, 3, Status::NotOwner, 0);
        assert_eq!(
            round_trip(&r).unwrap(),
            ResponseFrame::not_owner(op::LOCK, 3, 0, OwnerHint::default())
        );
        let hint = OwnerHint::new("n2", "10.0.0.2:7878").unwrap();
        let r = ResponseFrame::not_owner(op::RECLAIM, 4, 41, hint);
        assert_eq!(round_trip(&r).unwrap(), r);
    }

    #[test]
    fn notices() {
        for r in [
            ResponseFrame::notice(Status::NotOwner, 2),
            ResponseFrame::notice(Status::Fenced, ALL_PARTITIONS),
        ] {
            assert!(r.is_notice());
            assert_eq!(round_trip(&r).unwrap(), r);
        }
        // A notice carries no hint, even with NOT_OWNER.
        let mut out = Vec::new();
        ResponseFrame::notice(Status::NotOwner, 2).encode(&mut out);
        assert_eq!(out.len(), 4 + 18);
        assert_eq!(
            round_trip(&ResponseFrame { id: 5, ..ResponseFrame::notice(Status::Fenced, 1) }),
            Err(DecodeError::BadField(5, "notice.id"))
        );
        assert_eq!(
            round_trip(&ResponseFrame::notice(Status::Ok, 1)),
            Err(DecodeError::BadField(0, "notice.status"))
        );
    }

    /// State `2` (a kept extent) is `STATS_CACHED`'s alone: the other stats answers
    /// never send it, and refuse it.
    #[test]
    fn only_stats_cached_marks_kept_extents() {
        let entry = crate::StatsEntry {
            session: 1,
            id: 2,
            start: 0,
            end: 10,
            mode: crate::Mode::Exclusive,
            state: crate::EntryState::Held,
            token: 3,
            name: None,
            kept: true,
        };
        let body = StatsBody { entries: vec![entry.clone()], ..StatsBody::default() };
        let cached = ResponseFrame::stats_cached(7, body.clone());
        assert_eq!(round_trip(&cached).unwrap(), cached);
        let named = round_trip(&ResponseFrame::stats_named(7, body)).unwrap();
        assert!(!named.stats.unwrap().entries[0].kept, "sent as held");
        let mut out = Vec::new();
        cached.encode(&mut out);
        out[4] = op::STATS_NAMED | op::RESPONSE;
        assert!(ResponseFrame::decode(&out[4..]).is_err(), "more counters than STATS_NAMED has");
        let waiting = crate::StatsEntry { state: crate::EntryState::Waiting, token: 0, ..entry };
        let body = StatsBody { entries: vec![waiting], ..StatsBody::default() };
        let r = round_trip(&ResponseFrame::stats_cached(7, body)).unwrap();
        assert!(!r.stats.unwrap().entries[0].kept, "a waiting lock is never kept");
    }

    #[test]
    fn bodies_only_where_expected() {
        // A MAP OK without its map, and a map on a failed MAP, do not decode.
        let r = ResponseFrame::new(op::MAP, 1, Status::Ok, 0);
        assert_eq!(round_trip(&r), Err(DecodeError::Truncated));
        let map = ClusterMap {
            revision: 1,
            partitions: 1,
            nodes: vec![],
            owners: vec![crate::PartitionOwner {
                node: None,
                state: crate::PartitionState::Unowned,
                epoch: 0,
            }],
        };
        let ok = ResponseFrame::map(1, map.clone());
        assert_eq!(round_trip(&ok).unwrap(), ok);
        let r = ResponseFrame { status: Status::NotClustered, ..ok };
        assert!(matches!(round_trip(&r), Err(DecodeError::TrailingBytes(_))));
        // A MAP answer NOT_CLUSTERED has no body.
        let r = ResponseFrame::new(op::MAP, 1, Status::NotClustered, 0);
        assert_eq!(round_trip(&r).unwrap(), r);
    }
}
