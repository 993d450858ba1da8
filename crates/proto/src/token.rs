//! Fencing tokens of a cluster: `epoch << 32 | seq`.
//!
//! A token is the `u64` value of a granted `LOCK` (and of an accepted `RECLAIM`, which
//! hands back the token the lock already had). In a cluster its high 32 bits are the
//! **epoch** of the lock's partition — the etcd revision of the partition's ownership key,
//! which must be at most [`MAX_EPOCH`] — and its low 32 bits the **seq**: the grants of
//! that partition within the epoch, counted from 1.
//!
//! Tokens strictly increase per partition across grants, failovers and moves: within an
//! epoch `seq` increases; each new owner of a partition (a failover, a move, a restart)
//! writes the ownership key, so its epoch is a later etcd revision than any before it,
//! and its first token is larger than every token of an earlier epoch. Storage that
//! rejects a request whose token is lower than one it has seen for the partition's data
//! therefore fences out a holder whose owner has been replaced. (Tokens of different
//! partitions are not comparable.)
//!
//! A single server (not a cluster node) keeps epoch 0: its tokens are plain counters,
//! as in version 1 of the protocol, increasing across all its grants; [`epoch`] and
//! [`seq`] do not apply to them.

/// The largest epoch a token can carry (`u32::MAX`): an etcd revision above it cannot
/// be packed, so a node whose ownership revision passes it must not grant.
pub const MAX_EPOCH: u64 = u32::MAX as u64;

/// The token of grant number `seq` (from 1) in `epoch` (`<= MAX_EPOCH`).
///
/// Debug builds panic if `epoch > MAX_EPOCH`; release builds drop the epoch's high bits.
#[inline]
pub const fn pack(epoch: u64, seq: u32) -> u64 {
    debug_assert!(epoch <= MAX_EPOCH, "epoch above MAX_EPOCH");
    epoch << 32 | seq as u64
}

/// The epoch of a cluster token (its high 32 bits).
#[inline]
pub const fn epoch(token: u64) -> u64 {
    token >> 32
}

/// The sequence number of a cluster token within its epoch (its low 32 bits).
#[inline]
pub const fn seq(token: u64) -> u32 {
    token as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(pack(7, 3), 0x0000_0007_0000_0003);
        assert_eq!((epoch(pack(7, 3)), seq(pack(7, 3))), (7, 3));
        assert_eq!(pack(MAX_EPOCH, u32::MAX), u64::MAX);
        assert_eq!((epoch(u64::MAX), seq(u64::MAX)), (MAX_EPOCH, u32::MAX));
        // A single server's tokens are epoch 0.
        assert_eq!(pack(0, 42), 42);
    }

    #[test]
    fn a_later_epoch_beats_every_earlier_seq() {
        assert!(pack(8, 1) > pack(7, u32::MAX));
        assert!(pack(7, 2) > pack(7, 1));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "epoch above MAX_EPOCH")]
    fn epoch_too_large() {
        let _ = pack(MAX_EPOCH + 1, 1);
    }
}
