//! [`Ownership`]: which partitions this node serves, checked inside EPVS protection.

use std::cell::UnsafeCell;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use epvs::Epvs;

use super::fence::{now_nanos, Fence};
use super::reports::Reports;
use super::stats::ClusterStats;
use crate::engine::Engine;
use crate::protocol::{op, token, ClusterMap, OwnerHint, Partitioning, ResponseFrame, Status};
use crate::table::{Command, HandoverLock, PartitionChange};

/// What this node does with one partition, as request handlers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not ours: requests get `NOT_OWNER`.
    Unowned,
    /// Ours since a failover or move, in its grace period: only `RECLAIM`s of locks from
    /// earlier epochs are accepted; `LOCK`s get `IN_GRACE`, except, after a planned move
    /// and until `requeue_until`, a waiting `LOCK` that takes a handed-over waiter's
    /// place (see [`crate::table`]'s `handover` module).
    Grace {
        /// The ownership key's etcd revision.
        epoch: u64,
        /// When the grace period ends ([`Fence::now`] clock).
        until: u64,
        /// After a planned move: when the handed-over waiters' places are given up
        /// ([`Fence::now`] clock); `None` after a failover or once passed.
        requeue_until: Option<u64>,
    },
    /// Ours: `LOCK`s are served, `RECLAIM`s refused.
    Serving {
        /// The ownership key's etcd revision.
        epoch: u64,
    },
}

/// Why a node stops serving a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp {
    /// A planned move, or etcd says another node owns it now: waiters are answered
    /// `NOT_OWNER`, holders get a `NOTICE` with `NOT_OWNER` and reclaim at the new owner.
    Moved,
    /// This node lost (or cannot confirm) its etcd lease: as above with `FENCED`.
    Fenced,
}

impl GiveUp {
    fn status(self) -> Status {
        match self {
            GiveUp::Moved => Status::NotOwner,
            GiveUp::Fenced => Status::Fenced,
        }
    }
}

/// The per-partition phases. Mutated only in critical sections of the owning
/// [`Ownership::epvs`], read only inside its protected regions; EPVS runs the two in
/// mutual exclusion.
struct Phases(UnsafeCell<Vec<Phase>>);

// SAFETY: see the type's docs: every access is inside a protected region (shared reads)
// or a critical section (the one writer), which EPVS never runs at the same time.
unsafe impl Sync for Phases {}
// SAFETY: `Vec<Phase>` is `Send`; the cell only adds the synchronisation argued above.
unsafe impl Send for Phases {}

/// A request that needs the partition's owner.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Admission {
    /// `LOCK`: served only in [`Phase::Serving`].
    Lock,
    /// `RECLAIM` with the lock's old token: only in [`Phase::Grace`], for a token of an
    /// earlier epoch.
    Reclaim {
        /// The token the lock was granted with.
        token: u64,
    },
}

/// Partition ownership of a cluster node; see the module docs. Created by the cluster
/// manager and handed to the server through [`crate::ServerConfig::cluster`].
pub struct Ownership {
    parts: Partitioning,
    node: String,
    epvs: Epvs,
    phases: Arc<Phases>,
    fence: Arc<Fence>,
    /// The latest cluster map the manager read from etcd: answers `MAP` and fills the
    /// hint of `NOT_OWNER` replies.
    map: Mutex<Option<Arc<ClusterMap>>>,
    /// The revision of the map, sent each time the map's nodes or owners change: the
    /// sessions that sent `WATCH_MAP` push it as a `MAP_CHANGED` notice.
    map_changed: tokio::sync::watch::Sender<u64>,
    /// The server's engine, while it runs (table commands of transitions go there).
    engine: Mutex<Option<Engine>>,
    /// Partitions whose token counter ran out; the manager takes a new epoch for them.
    epoch_requests: Arc<Reports>,
    /// Partitions whose handed-over locks have all been reclaimed: their grace period
    /// may end now.
    grace_done: Arc<Reports>,
    /// Woken by every report of the two above.
    reported: Arc<tokio::sync::Notify>,
    /// Reclaims and etcd requests, for the metrics.
    stats: Arc<ClusterStats>,
}

impl core::fmt::Debug for Ownership {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ownership")
            .field("partitions", &self.parts.count())
            .field("node", &self.node)
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

impl Ownership {
    /// Ownership of node `node` in a cluster of `parts`: owns nothing, fence closed.
    pub fn new(parts: Partitioning, node: &str) -> Arc<Ownership> {
        let reported = Arc::new(tokio::sync::Notify::new());
        Arc::new(Ownership {
            parts,
            node: node.to_owned(),
            epvs: Epvs::new(),
            phases: Arc::new(Phases(UnsafeCell::new(vec![Phase::Unowned; parts.count() as usize]))),
            fence: Arc::new(Fence::new()),
            map: Mutex::new(None),
            map_changed: tokio::sync::watch::Sender::new(0),
            engine: Mutex::new(None),
            epoch_requests: Arc::new(Reports::new(reported.clone())),
            grace_done: Arc::new(Reports::new(reported.clone())),
            reported,
            stats: Arc::default(),
        })
    }

    /// The node's reclaim and etcd counters ([`ClusterStats`]).
    pub fn stats(&self) -> &Arc<ClusterStats> {
        &self.stats
    }

    /// The partitioning of the unit space.
    pub fn partitioning(&self) -> Partitioning {
        self.parts
    }

    /// This node's id.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The self-fencing deadline the manager keeps extending.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The fence, for the lock table.
    pub(crate) fn fence_arc(&self) -> Arc<Fence> {
        self.fence.clone()
    }

    /// Where the table reports partitions whose token counter ran out.
    pub(crate) fn epoch_requests(&self) -> Arc<Reports> {
        self.epoch_requests.clone()
    }

    /// The phase of partition `p`.
    pub fn phase(&self, p: u32) -> Phase {
        let _region = self.epvs.enter();
        // SAFETY: inside a protected region: no critical section writes the phases.
        let phases = unsafe { &*self.phases.0.get() };
        phases[p as usize]
    }

    /// Every partition this node owns, with its phase.
    pub fn owned(&self) -> Vec<(u32, Phase)> {
        let _region = self.epvs.enter();
        // SAFETY: as in `phase`.
        let phases = unsafe { &*self.phases.0.get() };
        (0..self.parts.count())
            .zip(phases.iter().copied())
            .filter(|(_, ph)| *ph != Phase::Unowned)
            .collect()
    }

    /// Where the table reports partitions whose handed-over locks are all reclaimed.
    pub(crate) fn grace_done_arc(&self) -> Arc<Reports> {
        self.grace_done.clone()
    }

    /// Partitions in a grace period after a planned move whose handed-over locks have all
    /// been reclaimed: their grace period can end now. Takes them.
    pub fn take_grace_done(&self) -> Vec<u32> {
        self.grace_done.take()
    }

    /// Partitions whose fencing-token counter is exhausted (4 294 967 295 grants in one
    /// epoch): they grant nothing until [`Ownership::renew_epoch`]. Takes the requests.
    pub fn take_epoch_requests(&self) -> Vec<u32> {
        self.epoch_requests.take()
    }

    /// Completes when the lock table has reported something since the last call
    /// returned (or since the start): [`Ownership::take_grace_done`] or
    /// [`Ownership::take_epoch_requests`] may have partitions. The manager waits on it
    /// to act on a report at once rather than at its next round.
    pub async fn reported(&self) {
        self.reported.notified().await;
    }

    /// Replaces the cluster map served to `MAP` requests and used for `NOT_OWNER` hints.
    /// A map whose nodes or owners differ from the last one's is announced to the
    /// sessions that sent `WATCH_MAP` (a `MAP_CHANGED` notice with its revision); a new
    /// revision alone is not.
    pub fn set_map(&self, map: ClusterMap) {
        let revision = map.revision;
        let mut cur = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = cur.as_deref().is_none_or(|old| {
            old.partitions != map.partitions || old.nodes != map.nodes || old.owners != map.owners
        });
        *cur = Some(Arc::new(map));
        // Under the lock: the announced revisions follow the maps' order.
        if changed {
            self.map_changed.send_replace(revision);
        }
    }

    /// Watches the map's changes ([`Ownership::set_map`]): the receiver sees each change
    /// made after this call, with the new map's revision.
    pub(crate) fn watch_map(&self) -> tokio::sync::watch::Receiver<u64> {
        self.map_changed.subscribe()
    }

    /// The current cluster map, if the manager has published one.
    pub fn map(&self) -> Option<Arc<ClusterMap>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Starts serving partition `p` at `epoch`: in a grace period of `grace` (after a
    /// failover or move, when holders of the previous epoch may reclaim) or at once
    /// (`None`: nobody can hold a lock on it). Blocks until no request handler can see
    /// the old phase. The table learns first, so a request admitted under the new phase
    /// finds the table ready.
    pub fn acquire(&self, p: u32, epoch: u64, grace: Option<Duration>) {
        self.own(p, epoch, grace, None);
    }

    /// Starts serving `p`: the table first (with the handed-over locks to expect, if
    /// any), then the handlers' phase.
    fn own(
        &self,
        p: u32,
        epoch: u64,
        grace: Option<Duration>,
        expect: Option<(Duration, Vec<HandoverLock>)>,
    ) {
        let now = now_nanos();
        let grace_until = grace.map(|g| now.saturating_add(g.as_nanos() as u64));
        self.submit(Command::Partition {
            partition: p,
            change: PartitionChange::Own { epoch, grace_until },
        });
        let mut requeue_until = None;
        if let Some((requeue, locks)) = expect {
            requeue_until = Some(now.saturating_add(requeue.as_nanos() as u64));
            self.submit(Command::Expect { partition: p, locks });
        }
        let phase = match grace_until {
            Some(until) => Phase::Grace { epoch, until, requeue_until },
            None => Phase::Serving { epoch },
        };
        self.change(move |phases| phases[p as usize] = phase);
    }

    /// Ends the grace period of `p`: from now on `LOCK`s are served and `RECLAIM`s
    /// refused. Handlers switch first; a `LOCK` that reaches the table before the table
    /// switches gets `IN_GRACE` and is retried by the client.
    pub fn end_grace(&self, p: u32) {
        self.change(move |phases| {
            if let Phase::Grace { epoch, .. } = phases[p as usize] {
                phases[p as usize] = Phase::Serving { epoch };
            }
        });
        self.submit(Command::Partition { partition: p, change: PartitionChange::Serve });
    }

    /// Stops serving `p`. When this returns, no handler is admitting a request for `p`
    /// (the EPVS transition waited for them) and the table has been told, after every
    /// command those handlers submitted: waiters on `p` are answered, holders notified,
    /// and nothing on `p` is granted by this node any more.
    pub fn give_up(&self, p: u32, why: GiveUp) {
        self.change(move |phases| phases[p as usize] = Phase::Unowned);
        self.submit(Command::Partition {
            partition: p,
            change: PartitionChange::Drop { status: why.status() },
        });
    }

    /// [`Ownership::give_up`] for a planned move, returning the locks held and waited for
    /// on `p` at that moment, in arrival order (taken in the same table command that drops
    /// them, so nothing is granted in between): the new owner keeps their places.
    pub fn hand_over(&self, p: u32) -> Vec<HandoverLock> {
        self.change(move |phases| phases[p as usize] = Phase::Unowned);
        let (tx, rx) = std::sync::mpsc::channel();
        self.submit(Command::Handover { partition: p, report: tx });
        // The engine answers after the commands queued before it; a stopped engine drops
        // the sender (nothing is held then).
        rx.recv().unwrap_or_default()
    }

    /// [`Ownership::acquire`] after a planned move: every handed-over lock gets a
    /// placeholder in its place. In the grace period only the handed-over holders are
    /// reclaimed, and waiters that ask again within `requeue` take their places back;
    /// once every placeholder is taken (or the waiters' window closed,
    /// [`Ownership::end_requeue`]), [`Ownership::take_grace_done`] names `p`.
    pub fn acquire_handed_over(
        &self,
        p: u32,
        epoch: u64,
        grace: Duration,
        requeue: Duration,
        locks: Vec<HandoverLock>,
    ) {
        self.own(p, epoch, Some(grace), Some((requeue.min(grace), locks)));
    }

    /// Closes `p`'s requeue window: handlers answer `LOCK`s `IN_GRACE` again, then the
    /// table removes the placeholders of waiters that did not come back.
    pub fn end_requeue(&self, p: u32) {
        self.change(move |phases| {
            if let Phase::Grace { epoch, until, .. } = phases[p as usize] {
                phases[p as usize] = Phase::Grace { epoch, until, requeue_until: None };
            }
        });
        self.submit(Command::Partition { partition: p, change: PartitionChange::RequeueOver });
    }

    /// Continues serving `p` under a new epoch (after its token counter ran out).
    pub fn renew_epoch(&self, p: u32, epoch: u64) {
        self.submit(Command::Partition { partition: p, change: PartitionChange::Epoch { epoch } });
        self.change(move |phases| {
            phases[p as usize] = match phases[p as usize] {
                Phase::Grace { until, requeue_until, .. } => {
                    Phase::Grace { epoch, until, requeue_until }
                }
                Phase::Serving { .. } => Phase::Serving { epoch },
                Phase::Unowned => Phase::Unowned,
            }
        });
    }

    /// Admits a request on `[start, end)` and runs `submit` (which hands it to the engine)
    /// inside the same protected region, so a transition that gives the partition up
    /// happens after the command is queued. Refused requests get their reply back.
    /// `name_hash`: the [`crate::protocol::name_hash`] of a named request's resource, whose
    /// range must then lie in one stripe ([`Partitioning::named_partition_of_range`]);
    /// `None` for the unnamed resource.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn admit(
        &self,
        what: Admission,
        opcode: u8,
        id: u64,
        start: u64,
        end: u64,
        name_hash: Option<u64>,
        submit: impl FnOnce(),
    ) -> Result<(), Box<ResponseFrame>> {
        // Precedence (PROTOCOL.md §2): FENCED, CROSSES_PARTITION, NOT_OWNER, then the
        // phase's own answer.
        if !self.fence.is_open() {
            return Err(Box::new(ResponseFrame::new(opcode, id, Status::Fenced, 0)));
        }
        let p = match name_hash {
            None => {
                let p = self.parts.of(start);
                let p_end = self.parts.end(p);
                if end > p_end {
                    let r = ResponseFrame::new(opcode, id, Status::CrossesPartition, p_end);
                    return Err(Box::new(r));
                }
                p
            }
            Some(h) => match self.parts.named_partition_of_range(h, start, end) {
                Ok(p) => p,
                Err(next) => {
                    let r = ResponseFrame::new(opcode, id, Status::CrossesPartition, next);
                    return Err(Box::new(r));
                }
            },
        };
        let region = self.epvs.enter();
        // SAFETY: inside a protected region: no critical section writes the phases.
        let phase = (unsafe { &*self.phases.0.get() })[p as usize];
        let refusal = match (phase, what) {
            (Phase::Unowned, _) => {
                drop(region);
                return Err(Box::new(self.not_owner(opcode, id, p)));
            }
            (Phase::Serving { .. }, Admission::Lock) => None,
            (Phase::Serving { .. }, Admission::Reclaim { .. }) => Some((Status::ReclaimRefused, 0)),
            // A waiter coming back after a planned move: the table finds its place (or
            // answers `IN_GRACE`).
            (Phase::Grace { requeue_until: Some(_), .. }, Admission::Lock) => None,
            (Phase::Grace { until, .. }, Admission::Lock) => {
                let ms = until.saturating_sub(now_nanos()).div_ceil(1_000_000);
                Some((Status::InGrace, ms))
            }
            (Phase::Grace { epoch, .. }, Admission::Reclaim { token: t }) => {
                (t == 0 || token::epoch(t) >= epoch).then_some((Status::ReclaimRefused, 0))
            }
        };
        match refusal {
            Some((status, value)) => Err(Box::new(ResponseFrame::new(opcode, id, status, value))),
            None => {
                // Still inside the region: a transition that gives `p` up waits for it,
                // so the command is queued before the table hears of the change.
                submit();
                drop(region);
                Ok(())
            }
        }
    }

    /// A `NOT_OWNER` reply for partition `p`, with the owner the latest map names.
    pub(crate) fn not_owner(&self, opcode: u8, id: u64, p: u32) -> ResponseFrame {
        let map = self.map();
        let (hint, epoch) = match map.as_deref().and_then(|m| m.owner_of(p)) {
            Some((node, owner)) if node.id != self.node => {
                (OwnerHint { node: node.id.clone(), addr: node.addr.clone() }, owner.epoch)
            }
            _ => (OwnerHint { node: String::new(), addr: String::new() }, 0),
        };
        let mut r = ResponseFrame::new(opcode, id, Status::NotOwner, epoch);
        r.owner = Some(hint);
        r
    }

    /// The reply to `MAP`.
    pub(crate) fn map_reply(&self, id: u64) -> ResponseFrame {
        match self.map() {
            Some(m) => {
                let mut r = ResponseFrame::new(op::MAP, id, Status::Ok, 0);
                r.map = Some((*m).clone());
                r
            }
            // Not published yet (the node is starting): the client asks another node.
            None => ResponseFrame::new(op::MAP, id, Status::Fenced, 0),
        }
    }

    /// The server started: transitions' table commands go to `engine`.
    pub(crate) fn attach(&self, engine: Engine) {
        *self.engine.lock().unwrap_or_else(PoisonError::into_inner) = Some(engine);
    }

    /// The server is stopping: drop the engine handle (the combiner stops once every
    /// handle is gone).
    pub(crate) fn detach(&self) {
        self.engine.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    fn submit(&self, cmd: Command) {
        if let Some(e) = &*self.engine.lock().unwrap_or_else(PoisonError::into_inner) {
            e.submit(cmd);
        }
    }

    /// Runs `edit` on the phases as an EPVS version transition and waits until it has
    /// run: afterwards no protected region that saw the old phases is still running.
    /// Must not be called inside a protected region of this instance.
    fn change(&self, edit: impl FnOnce(&mut Vec<Phase>) + Send + 'static) {
        let phases = Arc::clone(&self.phases);
        self.epvs.transition(move || {
            // SAFETY: a critical section: no protected region and no other section of
            // this instance runs now.
            edit(unsafe { &mut *phases.0.get() })
        });
    }
}
