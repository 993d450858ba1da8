//! Response status codes.

use super::error::DecodeError;

/// The outcome of a request, one byte on the wire.
///
/// Codes below `0x10` are outcomes of a well-formed request; codes from `0x10` up are
/// errors: the request had no effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    /// Done. For `LOCK` and `POLL`: the lock is held and `value` is its fencing token.
    Ok = 0x00,
    /// Poll grant mode only: the lock is queued; ask again with `POLL`.
    Pending = 0x01,
    /// A `try` lock found a conflicting holder or an earlier conflicting waiter.
    WouldBlock = 0x02,
    /// The wait's timeout passed before the lock was granted; the request is gone.
    TimedOut = 0x03,
    /// The waiting lock was cancelled (by `CANCEL` or `UNLOCK` of a waiting lock).
    Cancelled = 0x04,
    /// `UNLOCK`, `CANCEL` or `POLL` of a lock of this session that already ended (released,
    /// withdrawn or timed out; the last 4096 are remembered): nothing to do (idempotent).
    AlreadyReleased = 0x05,
    /// The frame was well delimited but its contents were not a valid request.
    Malformed = 0x10,
    /// The operation byte names no operation.
    UnknownOp = 0x11,
    /// An empty or inverted range.
    InvalidRange = 0x12,
    /// The target request id names no lock of this session.
    NotHeld = 0x13,
    /// The request id is already used by a live lock of this session.
    DuplicateId = 0x14,
    /// The session holds or waits for as many locks as the server allows.
    TooManyLocks = 0x15,
    /// The frame was longer than the server's maximum; the connection is closed.
    FrameTooLarge = 0x16,
    /// `CANCEL` of a lock that is already granted (use `UNLOCK`).
    NotWaiting = 0x17,
    /// The server is shutting down: nothing more is granted; the connection closes next.
    ShuttingDown = 0x18,
    /// Cluster: this node does not own the request's partition. `value` is the epoch of
    /// the owner this node knows (0 if none) and the response carries an
    /// [`OwnerHint`](crate::OwnerHint) body. Also the status of a `NOTICE` that the node
    /// gave a partition up.
    NotOwner = 0x19,
    /// Cluster: a `LOCK` on a partition in its grace period, when only `RECLAIM`s are
    /// accepted; `value` is an upper bound of the milliseconds until the period ends.
    InGrace = 0x1a,
    /// Cluster: a `LOCK` or `RECLAIM` whose range spans more than one partition; `value` is
    /// the first unit of the next partition (where the client must split the range).
    CrossesPartition = 0x1b,
    /// Cluster: the `RECLAIM` was not accepted (no grace period, a token not from an earlier
    /// epoch of this partition, or a conflict with a lock already reclaimed); the client's
    /// lock is lost.
    ReclaimRefused = 0x1c,
    /// Cluster: the node cannot confirm its etcd lease and grants nothing until it rejoins.
    /// Also the status of a `NOTICE` that the node lost all its partitions.
    Fenced = 0x1d,
    /// `MAP` or `RECLAIM` sent to a server that is not a cluster node.
    NotClustered = 0x1e,
    /// `SHM_ATTACH`: this server publishes no answers in shared memory (started without
    /// slots, in poll grant mode, or the connection does not come from this host).
    ShmUnavailable = 0x1f,
    /// `SHM_ATTACH`: every slot is held by another session; `value` is the slot count.
    ShmFull = 0x20,
    /// `SHM_ATTACH`: this session already holds a slot; `value` is its index.
    ShmAlreadyAttached = 0x21,
    /// `LOCK` or `RECLAIM` of a range outside the ranges the session's authentication token
    /// may lock (`docs/PROTOCOL.md` §1.1); nothing changed, the session goes on.
    Forbidden = 0x22,
    /// Version 4, the status of a `NOTICE` only: the server ends the session; `value` is
    /// the [`EndReason`](crate::EndReason) code (`docs/PROTOCOL.md` §2.1). The connection
    /// closes next.
    SessionEnded = 0x23,
    /// Cluster, the status of a `NOTICE` only, to a session that sent `WATCH_MAP`: the
    /// map the node serves changed; `value` is the new map's revision
    /// (`docs/PROTOCOL.md` §7.7).
    MapChanged = 0x24,
    /// `LOCK_NAMED` or `RECLAIM_NAMED` with an empty name or one longer than
    /// [`MAX_RESOURCE_NAME_LEN`](crate::MAX_RESOURCE_NAME_LEN) bytes; `value` is the limit. Nothing changed,
    /// the session goes on.
    BadName = 0x25,
    /// `LOCK_NAMED` of a name that is not live while the server already has its most live
    /// names (`--max-names`); `value` is that limit. Nothing changed, the session goes on.
    TooManyNames = 0x26,
    /// Version 6, the status of a `NOTICE` only, to a session that sent `CACHE_ON`: another
    /// session needs part of one of this session's held locks; `value` is the lock's
    /// request id and the notice carries a [`Callback`](crate::Callback) body (the part and
    /// the mode wanted). Answered with `GIVE_BACK` (`docs/PROTOCOL.md` §2.3).
    Callback = 0x27,
    /// `CACHE_ON` to a server that grants no cached locks (its engine is `rangelock`, or
    /// caching is off), or `LOCK_CACHED` / `GIVE_BACK` in a session without `CACHE_ON`.
    /// Nothing changed, the session goes on uncached.
    CacheUnavailable = 0x28,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 31] = [
        Status::Ok,
        Status::Pending,
        Status::WouldBlock,
        Status::TimedOut,
        Status::Cancelled,
        Status::AlreadyReleased,
        Status::Malformed,
        Status::UnknownOp,
        Status::InvalidRange,
        Status::NotHeld,
        Status::DuplicateId,
        Status::TooManyLocks,
        Status::FrameTooLarge,
        Status::NotWaiting,
        Status::ShuttingDown,
        Status::NotOwner,
        Status::InGrace,
        Status::CrossesPartition,
        Status::ReclaimRefused,
        Status::Fenced,
        Status::NotClustered,
        Status::ShmUnavailable,
        Status::ShmFull,
        Status::ShmAlreadyAttached,
        Status::Forbidden,
        Status::SessionEnded,
        Status::MapChanged,
        Status::BadName,
        Status::TooManyNames,
        Status::Callback,
        Status::CacheUnavailable,
    ];

    /// The wire byte.
    #[inline]
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Whether this is an error code (the request had no effect).
    #[inline]
    pub fn is_error(self) -> bool {
        self.code() >= 0x10
    }

    /// Parses a wire byte.
    pub fn from_code(code: u8) -> Result<Status, DecodeError> {
        Status::ALL
            .iter()
            .copied()
            .find(|s| s.code() == code)
            .ok_or(DecodeError::UnknownStatus(code))
    }
}

impl core::fmt::Display for Status {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self {
            Status::Ok => "ok",
            Status::Pending => "pending",
            Status::WouldBlock => "would block",
            Status::TimedOut => "timed out",
            Status::Cancelled => "cancelled",
            Status::AlreadyReleased => "already released",
            Status::Malformed => "malformed request",
            Status::UnknownOp => "unknown operation",
            Status::InvalidRange => "invalid range",
            Status::NotHeld => "no such lock in this session",
            Status::DuplicateId => "duplicate request id",
            Status::TooManyLocks => "too many locks in this session",
            Status::FrameTooLarge => "frame too large",
            Status::NotWaiting => "lock is not waiting",
            Status::ShuttingDown => "server shutting down",
            Status::NotOwner => "node does not own the partition",
            Status::InGrace => "partition in its grace period (only reclaims accepted)",
            Status::CrossesPartition => "range crosses a partition boundary",
            Status::ReclaimRefused => "reclaim refused (the lock is lost)",
            Status::Fenced => "node fenced (its etcd lease is not confirmed)",
            Status::NotClustered => "server is not a cluster node",
            Status::ShmUnavailable => "no shared-memory slots on this server for this connection",
            Status::ShmFull => "every shared-memory slot is taken",
            Status::ShmAlreadyAttached => "this session already holds a shared-memory slot",
            Status::Forbidden => "range outside what this session's token may lock",
            Status::SessionEnded => "the server ended the session",
            Status::MapChanged => "the node's cluster map changed",
            Status::BadName => "a resource name must be 1 to 1024 bytes",
            Status::TooManyNames => "the server has its most live resource names",
            Status::Callback => "another session needs part of this lock",
            Status::CacheUnavailable => "this server or session grants no cached locks",
        };
        f.write_str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_code_order_and_round_trips() {
        for w in Status::ALL.windows(2) {
            assert!(w[0].code() < w[1].code());
        }
        for s in Status::ALL {
            assert_eq!(Status::from_code(s.code()), Ok(s));
            assert_eq!(s.is_error(), s.code() >= 0x10);
        }
        assert_eq!(Status::from_code(0x29), Err(DecodeError::UnknownStatus(0x29)));
    }

    #[test]
    fn cluster_codes() {
        let codes = [
            (Status::NotOwner, 0x19),
            (Status::InGrace, 0x1a),
            (Status::CrossesPartition, 0x1b),
            (Status::ReclaimRefused, 0x1c),
            (Status::Fenced, 0x1d),
            (Status::NotClustered, 0x1e),
        ];
        for (s, c) in codes {
            assert_eq!(s.code(), c);
            assert!(s.is_error());
        }
    }
}
