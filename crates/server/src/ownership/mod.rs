//! Partition ownership of a cluster node (DESIGN §6, `docs/CLUSTER.md`).
//!
//! In a cluster the unit space is cut into P aligned partitions, and each partition is
//! served by the node that owns it in etcd (the `rangelock-cluster` crate keeps that
//! ownership and drives this module). A node must never grant on a partition it does not
//! own, so three things check ownership, each for a different failure:
//!
//! 1. **Request handlers, inside EPVS protection** (seed 2, §5.1, Fig. 8). A `LOCK` or
//!    `RECLAIM` is admitted (`Ownership::admit`) by reading the partition's [`Phase`]
//!    inside a protected region of an [`epvs::Epvs`], and handed to the engine inside the
//!    same region. Acquiring or giving up a partition is a version transition: its
//!    critical section edits the phases in mutual exclusion with every region. So when
//!    [`Ownership::give_up`] returns, every request admitted under the old phase has been
//!    queued, and the table command that follows ([`crate::table::PartitionChange`]) is
//!    ordered after all of them.
//! 2. **The lock table**, which executes commands one at a time, keeps its own copy of
//!    each partition's state (owned, grace, epoch, token counter). It is the authority:
//!    a grant, a reclaim and the end of a grace period are totally ordered there. A
//!    request that slipped past a handler during a transition is refused by the table.
//! 3. **The [`Fence`]**, a deadline in `CLOCK_BOOTTIME` that the manager extends after each
//!    successful etcd keepalive, to before the etcd lease can expire. Both the handlers
//!    and the table read the clock at every grant. A node that is paused past its lease
//!    grants nothing when it resumes, before any task of it has run.
//!
//! # Tokens
//!
//! A grant on partition `p` gets `epoch << 32 | seq`: `epoch` is the etcd revision of the
//! ownership key of `p` (strictly larger at every new owner, move and renewal) and `seq`
//! counts grants in that epoch. Tokens therefore strictly increase per partition across
//! grants, failovers and moves. A reclaimed lock keeps its old token: the grace period
//! guarantees nobody was granted an overlapping conflicting lock in between.
//!
//! # Grace
//!
//! A partition that had an owner before (failover or move) starts in [`Phase::Grace`]:
//! only `RECLAIM`s of locks granted in earlier epochs are accepted, each reinstalled with
//! its token unless it conflicts with a lock already reclaimed (then `RECLAIM_REFUSED`:
//! the client's guard is lost and it is told). `LOCK`s get `IN_GRACE` until the period
//! ends ([`Ownership::end_grace`]).

mod fence;
mod owner;
mod reports;
mod stats;

pub use crate::table::HandoverLock;
pub use fence::Fence;
pub(crate) use owner::Admission;
pub use owner::{GiveUp, Ownership, Phase};
pub(crate) use reports::Reports;
pub use stats::{ClusterStats, ClusterStatsSnapshot};
