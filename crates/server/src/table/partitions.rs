//! The lock table's view of partition ownership (cluster nodes only).
//!
//! The table executes commands one at a time, so this state is the authority on what is
//! granted: a `LOCK`, a `RECLAIM`, the end of a grace period and giving a partition up
//! are totally ordered here, whatever the request handlers saw (see
//! [`crate::ownership`]).

use std::sync::Arc;

use super::handover::Placeholders;
use super::interval_tree::Handle;
use crate::ownership::{ClusterStats, Fence, Reports};
use crate::protocol::{token, Mode, Partitioning, Status};

/// A lock held or waited for on a partition when its owner handed it over in a planned
/// move (see `super::handover`): a holder reclaims it at the new owner with exactly
/// this name, range, mode and token; a waiter (token 0) asks for the same name, range and
/// mode again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HandoverLock {
    /// The resource's name; `None`: the unnamed resource.
    pub name: Option<Arc<[u8]>>,
    /// First unit.
    pub start: u64,
    /// One past the last unit.
    pub end: u64,
    /// Shared or exclusive.
    pub mode: Mode,
    /// The token it was granted (or reclaimed) with; 0 for a waiter (no grant has
    /// token 0).
    pub token: u64,
}

impl HandoverLock {
    /// Whether this is a waiter's entry (not granted yet).
    pub fn is_waiter(&self) -> bool {
        self.token == 0
    }
}

/// A change of one partition's ownership, sent to the table by
/// [`crate::ownership::Ownership`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionChange {
    /// This node owns the partition from now on at `epoch`; in a grace period until
    /// `grace_until` ([`Fence::now`] clock) if given.
    Own {
        /// The ownership key's etcd revision.
        epoch: u64,
        /// End of the grace period, if any.
        grace_until: Option<u64>,
    },
    /// The grace period is over: grant new locks, refuse reclaims.
    Serve,
    /// A new epoch for the same owner (the token counter ran out).
    Epoch {
        /// The new epoch.
        epoch: u64,
    },
    /// A planned move's requeue window closed: the placeholders of waiters that have not
    /// come back are removed (see `super::handover`).
    RequeueOver,
    /// This node no longer owns the partition: every entry on it is dropped; waiters
    /// are answered `status`, holders get a `NOTICE` with `status`.
    Drop {
        /// `NOT_OWNER` or `FENCED`.
        status: Status,
    },
}

#[derive(Clone, Copy, Debug, Default)]
struct State {
    owned: bool,
    /// End of the grace period ([`Fence::now`] clock), while in one.
    grace_until: Option<u64>,
    epoch: u64,
    /// Grants so far in this epoch.
    seq: u32,
}

/// Per-partition state of a cluster node's table.
#[derive(Debug)]
pub(crate) struct TablePartitions {
    parts: Partitioning,
    fence: Arc<Fence>,
    state: Vec<State>,
    epoch_requests: Arc<Reports>,
    /// After a planned move, in the grace period: the placeholders of the handed-over
    /// locks not taken over yet. Only these are reclaimed; when none is left, the
    /// partition is reported in `grace_done` (its grace period can end early).
    handovers: Vec<Option<Placeholders>>,
    grace_done: Arc<Reports>,
    /// Where reclaims are counted.
    stats: Arc<ClusterStats>,
}

impl TablePartitions {
    pub(crate) fn new(
        parts: Partitioning,
        fence: Arc<Fence>,
        epoch_requests: Arc<Reports>,
        grace_done: Arc<Reports>,
        stats: Arc<ClusterStats>,
    ) -> Self {
        TablePartitions {
            parts,
            fence,
            state: vec![State::default(); parts.count() as usize],
            epoch_requests,
            handovers: (0..parts.count()).map(|_| None).collect(),
            grace_done,
            stats,
        }
    }

    /// Counts a lock reclaimed (for the metrics).
    pub(crate) fn count_reclaim(&self) {
        self.stats.reclaimed();
    }

    /// Starts `p`'s handover grace with `placeholders` (already in the table).
    pub(crate) fn set_placeholders(&mut self, p: u32, placeholders: Placeholders) {
        if placeholders.all_claimed() {
            self.report_grace_done(p);
        }
        self.handovers[p as usize] = Some(placeholders);
    }

    /// Whether `p` is in a handover grace (its reclaims and re-queued waiters must match
    /// placeholders).
    pub(crate) fn in_handover(&self, p: u32) -> bool {
        self.handovers[p as usize].is_some()
    }

    /// Takes the placeholder `lock` claims on `p`, if `p` is in a handover grace and one
    /// is left.
    pub(crate) fn claim(&mut self, p: u32, lock: HandoverLock) -> Option<Handle> {
        let placeholders = self.handovers[p as usize].as_mut()?;
        let h = placeholders.claim(lock)?;
        if placeholders.all_claimed() {
            self.report_grace_done(p);
        }
        Some(h)
    }

    /// Closes `p`'s requeue window: returns the waiters' unclaimed placeholders for the
    /// table to remove.
    pub(crate) fn close_requeue(&mut self, p: u32) -> Vec<Handle> {
        let Some(placeholders) = self.handovers[p as usize].as_mut() else { return Vec::new() };
        let gone = placeholders.close_waiters();
        if placeholders.all_claimed() {
            self.report_grace_done(p);
        }
        gone
    }

    fn report_grace_done(&self, p: u32) {
        self.grace_done.report(p);
    }

    pub(crate) fn partitioning(&self) -> Partitioning {
        self.parts
    }

    /// Applies a change to partition `p`'s state (the table then drops or retries the
    /// entries on it).
    pub(crate) fn change(&mut self, p: u32, change: PartitionChange) {
        let s = &mut self.state[p as usize];
        match change {
            PartitionChange::Own { epoch, grace_until } => {
                *s = State { owned: true, grace_until, epoch, seq: 0 };
                self.handovers[p as usize] = None;
            }
            PartitionChange::Serve => {
                s.grace_until = None;
                self.handovers[p as usize] = None;
            }
            PartitionChange::RequeueOver => {}
            PartitionChange::Epoch { epoch } => {
                s.epoch = epoch;
                s.seq = 0;
            }
            PartitionChange::Drop { .. } => {
                *s = State::default();
                self.handovers[p as usize] = None;
            }
        }
    }

    /// Where `[start, end)` lies: its partition, or `Err` with where it must be split
    /// (`CROSSES_PARTITION`'s value). `name_hash`: of a named resource
    /// ([`Partitioning::named_partition_of_range`]); `None`: the unnamed one.
    pub(crate) fn place(&self, name_hash: Option<u64>, start: u64, end: u64) -> Result<u32, u64> {
        match name_hash {
            None => self.parts.partition_of_range(start, end),
            Some(h) => self.parts.named_partition_of_range(h, start, end),
        }
    }

    /// Why a `LOCK` placed at `place` ([`TablePartitions::place`]) must be refused now,
    /// with the reply's value.
    pub(crate) fn refuse_lock(&self, place: Result<u32, u64>) -> Option<(Status, u64)> {
        if !self.fence.is_open() {
            return Some((Status::Fenced, 0));
        }
        let p = match place {
            Ok(p) => p,
            Err(next) => return Some((Status::CrossesPartition, next)),
        };
        let s = &self.state[p as usize];
        if !s.owned {
            Some((Status::NotOwner, 0))
        } else if let Some(until) = s.grace_until {
            let ms = until.saturating_sub(Fence::now()).div_ceil(1_000_000);
            Some((Status::InGrace, ms))
        } else {
            None
        }
    }

    /// Why a `RECLAIM` placed at `place` must be refused before the session's own limits
    /// are checked (`FENCED`, `CROSSES_PARTITION`, `NOT_OWNER`).
    pub(crate) fn refuse_reclaim_early(&self, place: Result<u32, u64>) -> Option<(Status, u64)> {
        if !self.fence.is_open() {
            return Some((Status::Fenced, 0));
        }
        match place {
            Err(next) => Some((Status::CrossesPartition, next)),
            Ok(p) if !self.state[p as usize].owned => Some((Status::NotOwner, 0)),
            Ok(_) => None,
        }
    }

    /// Whether a `RECLAIM` on partition `p` of a lock granted with `tok` is out of place:
    /// the partition is not in a grace period, or the token is not from an earlier epoch
    /// (conflicts with other entries are the table's to check).
    pub(crate) fn reclaim_refused(&self, p: u32, tok: u64) -> bool {
        let s = &self.state[p as usize];
        s.grace_until.is_none() || tok == 0 || token::epoch(tok) >= s.epoch
    }

    /// The token for a grant on partition `p`, or `None` if nothing may be granted there
    /// now (not owned, in grace, fenced, or the counter ran out: then a new epoch is
    /// requested). The entry stays queued; [`PartitionChange::Serve`] or
    /// [`PartitionChange::Epoch`] retries it, [`PartitionChange::Drop`] ends it.
    pub(crate) fn mint(&mut self, p: u32) -> Option<u64> {
        let s = &mut self.state[p as usize];
        if !s.owned || s.grace_until.is_some() || !self.fence.is_open() {
            return None;
        }
        if s.seq == u32::MAX {
            self.epoch_requests.report(p);
            return None;
        }
        s.seq += 1;
        Some(token::pack(s.epoch, s.seq))
    }

    /// Test hook: sets the partition's grant counter (to exercise exhaustion).
    #[cfg(test)]
    pub(crate) fn set_seq(&mut self, p: u32, seq: u32) {
        self.state[p as usize].seq = seq;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parts() -> (TablePartitions, Arc<Fence>, Arc<Reports>) {
        let fence = Arc::new(Fence::new());
        fence.extend_until(Fence::now(), Duration::from_secs(600));
        let requests = Arc::new(Reports::new(Arc::default()));
        let p = Partitioning::new(2).unwrap();
        let done = Arc::new(Reports::new(Arc::default()));
        (
            TablePartitions::new(p, fence.clone(), requests.clone(), done, Arc::default()),
            fence,
            requests,
        )
    }

    #[test]
    fn mint_needs_an_owned_serving_partition_and_an_open_fence() {
        let (mut t, fence, _) = parts();
        assert_eq!(t.mint(0), None, "not owned");
        t.change(0, PartitionChange::Own { epoch: 9, grace_until: Some(u64::MAX) });
        assert_eq!(t.mint(0), None, "in grace");
        t.change(0, PartitionChange::Serve);
        assert_eq!(t.mint(0), Some(token::pack(9, 1)));
        assert_eq!(t.mint(0), Some(token::pack(9, 2)));
        fence.close();
        assert_eq!(t.mint(0), None, "fenced");
        assert_eq!(t.refuse_lock(t.place(None, 0, 1)), Some((Status::Fenced, 0)));
    }

    /// The 2^32-1st grant of an epoch is the last: the partition then holds grants back
    /// and asks for a new epoch, after which tokens go on increasing.
    #[test]
    fn an_exhausted_token_counter_asks_for_a_new_epoch() {
        let (mut t, _, requests) = parts();
        t.change(1, PartitionChange::Own { epoch: 9, grace_until: None });
        let p = 1;
        t.set_seq(1, u32::MAX - 1);
        let last = t.mint(p).unwrap();
        assert_eq!(last, token::pack(9, u32::MAX));
        assert_eq!(t.mint(p), None);
        assert_eq!(requests.take(), vec![1]);
        t.change(1, PartitionChange::Epoch { epoch: 12 });
        let next = t.mint(p).unwrap();
        assert_eq!(next, token::pack(12, 1));
        assert!(next > last);
    }

    #[test]
    fn reclaims_only_in_grace_and_only_from_earlier_epochs() {
        let (mut t, _, _) = parts();
        assert_eq!(t.refuse_reclaim_early(t.place(None, 0, 1)), Some((Status::NotOwner, 0)));
        t.change(0, PartitionChange::Own { epoch: 9, grace_until: Some(u64::MAX) });
        assert_eq!(t.refuse_reclaim_early(t.place(None, 0, 1)), None);
        assert!(!t.reclaim_refused(0, token::pack(8, 100)));
        assert!(t.reclaim_refused(0, token::pack(9, 1)));
        assert!(t.reclaim_refused(0, 0));
        t.change(0, PartitionChange::Serve);
        assert!(t.reclaim_refused(0, token::pack(8, 100)));
        let b = Partitioning::new(2).unwrap().start(1);
        let crossing = t.place(None, b - 1, b + 1);
        assert_eq!(t.refuse_reclaim_early(crossing), Some((Status::CrossesPartition, b)));
        // A named range crossing a stripe: split at the stripe's end.
        let s = 1u64 << crate::protocol::NAME_STRIPE_SHIFT;
        assert_eq!(t.place(Some(3), s - 1, s + 1), Err(s));
        assert_eq!(t.place(Some(3), s, s + 1), Ok(0));
        assert_eq!(t.refuse_reclaim_early(t.place(Some(3), s, s + 1)), None);
        assert_eq!(t.refuse_reclaim_early(t.place(Some(2), s, s + 1)), Some((Status::NotOwner, 0)));
    }
}
