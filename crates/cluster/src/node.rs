//! A cluster node: a `rangelockd` server plus the manager that keeps its partition
//! ownership in etcd.
//!
//! # The manager's round
//!
//! Every `tick` (a fifth of the etcd lease TTL), and at once when its etcd watch sees an
//! owner key deleted, a node key change or a move asked, the manager runs a round (below).
//! Two events get less than a round, at once: another node's claim (an owner key written)
//! makes it read the cluster and publish the map again, so its map names the new owner
//! within milliseconds; a report of the lock table (a grace period whose handed-over locks
//! are all back, a token counter that ran out) makes it act on the report (step 3) and
//! publish. Neither runs the balance plan, so moves keep their pace of one per round.
//!
//! A round:
//!
//! 1. **keeps the lease alive** and extends the [`Fence`]: if a keepalive sent at `t0`
//!    succeeds with TTL `T`, etcd keeps the lease at least until `t0 + T` on its clock,
//!    so the node may act as owner until `t0 + T - margin` (`margin` = T/10 + 200 ms by
//!    default, [`NodeConfig::fence_margin`]: for clock-rate differences and the time
//!    between reading the clock and granting).
//!    If etcd says the lease is gone, the node gives every partition up (`FENCED`),
//!    takes a new lease and registers again. If etcd cannot be reached, the fence closes
//!    by itself when the deadline passes; the manager then gives everything up so clients
//!    are told;
//! 2. **records itself seen** (`seen/<id>`, for `cluster status`; once per TTL),
//!    **reads the cluster** (one prefix read) and publishes the map clients ask for;
//! 3. **checks its partitions**: one whose owner key is gone or changed is given up;
//!    a grace period that is over ends (a timer also ends it on time between rounds), and
//!    so does one whose handed-over locks are all back (a planned move; the waiters'
//!    shorter requeue window has its own timer); a
//!    partition whose token counter ran out gets a
//!    new epoch (a compare-and-swap rewrite of its owner key);
//! 4. **applies the plan** of [`crate::balance`]: planned moves first (stop serving, then
//!    delete the owner key so another node can claim it), then claims: a transaction
//!    that creates `owner/<p>` under this node's lease if it does not exist and marks
//!    `held/<p>`. The transaction's revision is the new epoch. A partition that had an
//!    owner before starts in a grace period of `grace`, recorded in `grace/<p>` (under
//!    the lease) until it ends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rangelock_proto::{PartitionOwner, PartitionState, Partitioning};
use rangelock_server::ownership::{Fence, GiveUp, HandoverLock, Ownership, Phase};
use rangelock_server::{ReloadError, Reloaded, Server, ServerConfig};
use tokio::sync::oneshot;

use crate::balance;
use crate::etcd::{CmpOp, Compare, Etcd, EtcdError, LeaseId, Txn, TxnOp};
use crate::keys::{
    self, ConfigValue, HandoverEntry, HandoverValue, HeldValue, NodeValue, OwnerValue, Snapshot,
};

/// Partitions of a new cluster when `--partitions` is not given.
pub const DEFAULT_PARTITIONS: u32 = 64;

/// Default etcd lease TTL of a node.
pub const DEFAULT_ETCD_TTL: Duration = Duration::from_secs(5);

/// How long handed-over waiters keep their places after a planned move, by default: a
/// client told `NOT_OWNER` re-reads the map and asks the new owner within a few hundred
/// milliseconds (its backoff tops out at 200 ms); two seconds leave room for a slow one
/// without stalling the partition long for a client that went away.
pub const DEFAULT_REQUEUE: Duration = Duration::from_secs(2);

/// How a node joins its cluster.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// etcd endpoints (`http://host:port`).
    pub etcd: Vec<String>,
    /// Cluster name: the etcd key prefix `/rangelock/<cluster>/`.
    pub cluster: String,
    /// This node's id, unique in the cluster.
    pub node_id: String,
    /// The address clients use to reach this node; default: the server's TCP address
    /// (which must then not be a wildcard address).
    pub advertise: Option<String>,
    /// Partition count for a new cluster (a power of two); an existing cluster keeps its
    /// own, and a different value here is an error.
    pub partitions: Option<u32>,
    /// The node's etcd lease TTL (whole seconds, at least 1).
    pub etcd_ttl: Duration,
    /// Grace period of a partition taken over from another owner; default: the server's
    /// session lease (clients notice a dead node within one lease and reclaim).
    pub grace: Option<Duration>,
    /// After a planned move: how long waiters the old owner handed over keep their places
    /// at this node (they were answered `NOT_OWNER` and ask again here); default
    /// [`DEFAULT_REQUEUE`], never longer than the grace period. Unclaimed places then go,
    /// and whoever queued behind them moves up.
    pub requeue: Option<Duration>,
    /// The self-fencing margin: the node stops granting this long before its etcd lease
    /// can expire; default [`default_fence_margin`] (`ttl/10 + 200 ms`). It must leave at
    /// least two manager rounds (`2 × ttl/5`) of the lease.
    pub fence_margin: Option<Duration>,
    /// The server (its `cluster` field is set by the node).
    pub server: ServerConfig,
}

impl NodeConfig {
    /// A node of cluster `default` with id `node_id`, on a free loopback port.
    pub fn new(etcd: Vec<String>, node_id: &str) -> NodeConfig {
        NodeConfig {
            etcd,
            cluster: "default".into(),
            node_id: node_id.into(),
            advertise: None,
            partitions: None,
            etcd_ttl: DEFAULT_ETCD_TTL,
            grace: None,
            requeue: None,
            fence_margin: None,
            server: ServerConfig::ephemeral(),
        }
    }

    /// The grace period this node applies.
    pub fn effective_grace(&self) -> Duration {
        self.grace.unwrap_or(self.server.lease)
    }

    /// How long handed-over waiters keep their places after a planned move.
    pub fn effective_requeue(&self) -> Duration {
        self.requeue.unwrap_or(DEFAULT_REQUEUE).min(self.effective_grace())
    }

    /// The self-fencing margin this node applies.
    pub fn effective_fence_margin(&self) -> Duration {
        self.fence_margin.unwrap_or_else(|| default_fence_margin(self.etcd_ttl))
    }
}

/// Why a node could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// etcd could not be reached or refused a request.
    #[error("etcd: {0}")]
    Etcd(EtcdError),
    /// Another live node has this id.
    #[error(
        "a node with id {0:?} is already registered in this cluster (another node runs with \
         this id, or one stopped less than its etcd lease ago)"
    )]
    DuplicateId(String),
    /// The cluster exists with another partition count.
    #[error(
        "the cluster has {have} partitions{}; --partitions {asked} cannot change it (start \
         every node of a cluster with the same --partitions, or without it: a node without \
         it takes the cluster's)",
        match (defaulted, created_by) {
            (true, Some(by)) => format!(
                ", the default: its first node, {by:?}, started without --partitions"
            ),
            (true, None) => ", the default: its first node started without --partitions".into(),
            (false, _) => String::new(),
        }
    )]
    PartitionsMismatch {
        /// Stored in etcd.
        have: u32,
        /// Asked for.
        asked: u32,
        /// The node that created the cluster, if known.
        created_by: Option<String>,
        /// `have` is the default: the first node was started without `--partitions`.
        defaulted: bool,
    },
    /// A bad partition count.
    #[error("partitions: {0}")]
    Partitions(#[from] rangelock_proto::PartitionError),
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// The server could not start.
    #[error("server: {0}")]
    Server(#[from] std::io::Error),
}

impl From<EtcdError> for NodeError {
    fn from(e: EtcdError) -> Self {
        NodeError::Etcd(e)
    }
}

/// A running node; see the module docs. [`Node::shutdown`] (or dropping it) leaves the
/// cluster in order: partitions are given up and their keys deleted so other nodes take
/// them over at once (their grace period lets this node's clients reclaim).
#[derive(Debug)]
pub struct Node {
    server: Option<Server>,
    ownership: Arc<Ownership>,
    addr: String,
    stop: Option<oneshot::Sender<Stop>>,
    manager: Option<JoinHandle<()>>,
}

impl Node {
    /// Connects to etcd, creates or joins the cluster, starts the server and the
    /// manager. Returns once the node is registered (it may not own partitions yet).
    pub fn start(config: NodeConfig) -> Result<Node, NodeError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let tick = tick(config.etcd_ttl);
        if config.etcd_ttl < Duration::from_secs(1) || config.etcd_ttl.subsec_nanos() != 0 {
            return Err(NodeError::Config(
                "the etcd lease TTL must be whole seconds, at least 1".into(),
            ));
        }
        let window = fence_window(config.etcd_ttl, config.effective_fence_margin());
        if window < 2 * tick {
            return Err(NodeError::Config(format!(
                "a fence margin of {:?} leaves {window:?} of a {:?} etcd lease: less than two \
                 manager rounds ({:?})",
                config.effective_fence_margin(),
                config.etcd_ttl,
                2 * tick
            )));
        }
        let (etcd, parts) = rt.block_on(async {
            let etcd = Etcd::connect(&config.etcd, tick).await?;
            let parts = ensure_config(&etcd, &config).await?;
            Ok::<_, NodeError>((etcd, parts))
        })?;
        // The server starts first (its fence is closed: it refuses everything) so that
        // the node registers with the address it really listens on.
        let ownership_addr = config.advertise.clone();
        let mut server_config = config.server.clone();
        let ownership = Ownership::new(parts, &config.node_id);
        let stats = ownership.stats().clone();
        etcd.observe(move |took, failed| stats.etcd_request(took, failed));
        server_config.cluster = Some(ownership.clone());
        let server = Server::start(server_config)?;
        let addr = match (ownership_addr, server.tcp_addr()) {
            (Some(a), _) => a,
            (None, Some(a)) if !a.ip().is_unspecified() => a.to_string(),
            (None, Some(a)) => {
                return Err(NodeError::Config(format!(
                    "the server listens on {a}: give --advertise with an address clients can reach"
                )))
            }
            (None, None) => {
                return Err(NodeError::Config("a cluster node needs a TCP listener".into()))
            }
        };
        let lease = rt.block_on(register(&etcd, &config, &addr))?;
        let mut manager = Manager {
            etcd,
            config,
            ownership: ownership.clone(),
            addr: addr.clone(),
            lease,
            tick,
            last_revision: 0,
            seen_written: None,
        };
        let (stop_tx, stop_rx) = oneshot::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread =
            std::thread::Builder::new().name("rangelock-cluster".into()).spawn(move || {
                rt.block_on(async move {
                    manager.keepalive().await;
                    manager.note_seen().await;
                    let _ = ready_tx.send(());
                    manager.run(stop_rx).await;
                })
            })?;
        let _ = ready_rx.recv();
        Ok(Node {
            server: Some(server),
            ownership,
            addr,
            stop: Some(stop_tx),
            manager: Some(thread),
        })
    }

    /// The address clients reach this node at.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The server's TCP address.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().and_then(Server::tcp_addr)
    }

    /// The server's metrics address, if it serves metrics.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().and_then(Server::metrics_addr)
    }

    /// Reads the server's auth file and TLS files again ([`Server::reload`]): sessions,
    /// locks and the node's partitions stay.
    pub fn reload(&self) -> Result<Reloaded, ReloadError> {
        self.server.as_ref().expect("the server runs until the node stops").reload()
    }

    /// This node's partition ownership.
    pub fn ownership(&self) -> &Arc<Ownership> {
        &self.ownership
    }

    /// Leaves the cluster (see the type's docs) and stops the server.
    pub fn shutdown(mut self) {
        self.stop_all(Stop::Leave);
    }

    /// Stops like a killed process, for failover tests and benchmarks: the manager stops
    /// without giving anything up or revoking its etcd lease (other nodes take the
    /// partitions over once it expires), and the server closes every connection.
    pub fn crash(mut self) {
        self.stop_all(Stop::Crash);
    }

    fn stop_all(&mut self, how: Stop) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(how);
        }
        if let Some(t) = self.manager.take() {
            let _ = t.join();
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop_all(Stop::Leave);
    }
}

/// How the manager stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Give every partition up and revoke the lease.
    Leave,
    /// Just stop (see [`Node::crash`]).
    Crash,
}

/// The manager's round period for an etcd lease TTL.
fn tick(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_millis(50))
}

/// The default safety margin for an etcd lease TTL: `ttl/10 + 200 ms`, for clock-rate
/// differences between this machine and etcd's and the time between reading the clock
/// and granting.
pub fn default_fence_margin(ttl: Duration) -> Duration {
    ttl / 10 + Duration::from_millis(200)
}

/// How long after sending a successful keepalive with TTL `ttl` the node may act as
/// owner: `ttl - margin`.
pub fn fence_window(ttl: Duration, margin: Duration) -> Duration {
    ttl.saturating_sub(margin)
}

/// How long a watch may stay silent before it is started again: a connection that died
/// without a word (a vanished etcd host) would otherwise never say so.
const WATCH_IDLE: Duration = Duration::from_secs(60);

/// Wakes the manager (`wake`) when the cluster changes in a way a round acts on: an owner
/// key deleted (the partition can be claimed: its owner's lease expired, it moved, its
/// owner left), a node registered or gone, a move asked; and asks it to publish the map
/// again (`republish`) when an owner key is written (another node claimed a partition:
/// the map must name the new owner now, not at the next tick). It only hastens what
/// every round does anyway: a watch that fails is started again a tick later (and the
/// manager woken, as events may have been missed).
async fn watch_cluster(
    etcd: Etcd,
    cluster: String,
    wake: Arc<tokio::sync::Notify>,
    republish: Arc<tokio::sync::Notify>,
    tick: Duration,
) {
    let prefix = keys::prefix(&cluster);
    let rest =
        |e: &crate::etcd::WatchEvent| e.key.strip_prefix(prefix.as_bytes()).map(<[u8]>::to_vec);
    let acts_on = |e: &crate::etcd::WatchEvent| {
        let Some(rest) = rest(e) else { return false };
        rest.starts_with(b"nodes/")
            || rest.starts_with(b"owner/") && e.kind == crate::etcd::EventKind::Delete
            || rest.starts_with(b"move/") && e.kind == crate::etcd::EventKind::Put
    };
    let claimed = |e: &crate::etcd::WatchEvent| {
        rest(e).is_some_and(|r| r.starts_with(b"owner/") && e.kind == crate::etcd::EventKind::Put)
    };
    loop {
        match etcd.watch_prefix(prefix.as_bytes()).await {
            Ok(mut watch) => {
                wake.notify_one();
                loop {
                    match tokio::time::timeout(WATCH_IDLE, watch.next()).await {
                        Ok(Ok(events)) => {
                            if events.iter().any(acts_on) {
                                wake.notify_one();
                            } else if events.iter().any(claimed) {
                                republish.notify_one();
                            }
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "etcd watch ended");
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "cannot watch the cluster in etcd"),
        }
        tokio::time::sleep(tick).await;
    }
}

/// Reads the cluster's config, creating it if this is the first node.
async fn ensure_config(etcd: &Etcd, config: &NodeConfig) -> Result<Partitioning, NodeError> {
    let key = keys::config(&config.cluster);
    let want = config.partitions.unwrap_or(DEFAULT_PARTITIONS);
    Partitioning::new(want)?;
    let created = ConfigValue {
        partitions: want,
        created_by: Some(config.node_id.clone()),
        defaulted: config.partitions.is_none(),
    };
    let value = serde_json::to_vec(&created).expect("serializable");
    let txn = Txn {
        compare: vec![Compare::CreateRevision(key.clone(), CmpOp::Equal, 0)],
        success: vec![TxnOp::Put { key: key.clone(), value, lease: None }],
        failure: vec![TxnOp::Get { key: key.clone() }],
    };
    let r = etcd.txn(txn).await?;
    if r.succeeded {
        tracing::info!(cluster = %config.cluster, partitions = want, "created the cluster");
        return Ok(Partitioning::new(want)?);
    }
    let (_, kv) = etcd.get(&key).await?;
    let have: ConfigValue =
        kv.and_then(|kv| serde_json::from_slice(&kv.value).ok()).ok_or_else(|| {
            NodeError::Config("the cluster's config key in etcd is unreadable".into())
        })?;
    if let Some(asked) = config.partitions {
        if asked != have.partitions {
            return Err(NodeError::PartitionsMismatch {
                have: have.partitions,
                asked,
                created_by: have.created_by,
                defaulted: have.defaulted,
            });
        }
    } else {
        let partitions = have.partitions;
        tracing::info!(
            cluster = %config.cluster,
            partitions,
            "joining the cluster with its partition count"
        );
    }
    Ok(Partitioning::new(have.partitions)?)
}

/// Takes an etcd lease and registers the node under it; refuses a duplicate id.
async fn register(etcd: &Etcd, config: &NodeConfig, addr: &str) -> Result<LeaseId, NodeError> {
    let (lease, _) = etcd.grant_lease(config.etcd_ttl, None).await?;
    let key = keys::node(&config.cluster, &config.node_id);
    let value = serde_json::to_vec(&NodeValue { addr: addr.to_owned() }).expect("serializable");
    let txn = Txn {
        compare: vec![Compare::CreateRevision(key.clone(), CmpOp::Equal, 0)],
        success: vec![TxnOp::Put { key, value, lease: Some(lease) }],
        failure: vec![],
    };
    if !etcd.txn(txn).await?.succeeded {
        let _ = etcd.revoke(lease).await;
        return Err(NodeError::DuplicateId(config.node_id.clone()));
    }
    tracing::info!(node = %config.node_id, %addr, lease, "registered in the cluster");
    Ok(lease)
}

struct Manager {
    etcd: Etcd,
    config: NodeConfig,
    ownership: Arc<Ownership>,
    addr: String,
    lease: LeaseId,
    tick: Duration,
    /// The revision of this node's latest write to etcd (claims, moves, renewals).
    last_revision: u64,
    /// When `seen/<id>` was last written, and with which lease.
    seen_written: Option<(std::time::Instant, LeaseId)>,
}

impl Manager {
    fn margin(&self) -> Duration {
        self.config.effective_fence_margin()
    }

    async fn run(&mut self, mut stop: oneshot::Receiver<Stop>) {
        let mut interval = tokio::time::interval(self.tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let wake = Arc::new(tokio::sync::Notify::new());
        let republish = Arc::new(tokio::sync::Notify::new());
        let watch = tokio::spawn(watch_cluster(
            self.etcd.clone(),
            self.config.cluster.clone(),
            wake.clone(),
            republish.clone(),
            self.tick,
        ));
        let how = loop {
            // A grace period ends on time, not at the next round.
            let grace_left = self
                .next_grace_end()
                .map(|until| Duration::from_nanos(until.saturating_sub(Fence::now())));
            tokio::select! {
                how = &mut stop => break how.unwrap_or(Stop::Leave),
                _ = interval.tick() => {}
                // The cluster changed (a partition became claimable, a node came or went,
                // a move was asked): a round now rather than at the next tick.
                () = wake.notified() => {}
                // Another node claimed a partition: the map must say so now.
                () = republish.notified() => {
                    self.republish().await;
                    continue;
                }
                // The lock table reported a grace period that can end early (every
                // handed-over lock is back) or a token counter that ran out.
                () = self.ownership.reported() => {
                    self.act_on_reports().await;
                    self.republish().await;
                    continue;
                }
                _ = tokio::time::sleep(grace_left.unwrap_or(Duration::MAX)), if grace_left.is_some() => {
                    self.end_graces().await;
                    continue;
                }
            }
            // A keepalive that hangs (etcd unreachable) must not keep the node from
            // telling its clients when the fence closes: it is cut off at the deadline.
            // (Once closed, the etcd client's own request timeout bounds it.)
            let fence = self.ownership.fence();
            let cutoff = if fence.is_open() { fence.remaining() } else { Duration::MAX };
            let _ = tokio::time::timeout(cutoff, self.keepalive()).await;
            if !self.ownership.fence().is_open() {
                self.give_up_all(GiveUp::Fenced).await;
                continue;
            }
            self.note_seen().await;
            match self.etcd.get_prefix(keys::prefix(&self.config.cluster).as_bytes()).await {
                Ok((rev, kvs)) => {
                    let snap = Snapshot::parse(&self.config.cluster, rev, &kvs);
                    self.round(&snap).await;
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the cluster from etcd"),
            }
        };
        watch.abort();
        match how {
            Stop::Leave => self.leave().await,
            Stop::Crash => tracing::warn!(node = %self.config.node_id, "crashed (on purpose)"),
        }
    }

    /// Refreshes the etcd lease and the fence; re-registers after losing the lease.
    async fn keepalive(&mut self) {
        let sent = Fence::now();
        match self.etcd.keep_alive(self.lease).await {
            Ok(Some(ttl)) => {
                self.ownership.fence().extend_until(sent, fence_window(ttl, self.margin()));
            }
            Ok(None) => {
                tracing::warn!(lease = self.lease, "etcd lease lost: giving every partition up");
                self.ownership.fence().close();
                self.give_up_all(GiveUp::Fenced).await;
                match register(&self.etcd, &self.config, &self.addr).await {
                    Ok(lease) => {
                        self.lease = lease;
                        let sent = Fence::now();
                        if let Ok(Some(ttl)) = self.etcd.keep_alive(lease).await {
                            self.ownership
                                .fence()
                                .extend_until(sent, fence_window(ttl, self.margin()));
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot register again yet"),
                }
            }
            Err(e) => tracing::warn!(error = %e, "etcd keepalive failed"),
        }
    }

    /// The earliest end of a grace period (or of a requeue window in one) of this node's
    /// partitions.
    fn next_grace_end(&self) -> Option<u64> {
        self.ownership
            .owned()
            .into_iter()
            .filter_map(|(_, ph)| match ph {
                Phase::Grace { until, requeue_until, .. } => {
                    Some(requeue_until.map_or(until, |r| r.min(until)))
                }
                _ => None,
            })
            .min()
    }

    /// Ends the grace periods and requeue windows that are over.
    async fn end_graces(&mut self) {
        let now = Fence::now();
        for (p, phase) in self.ownership.owned() {
            let Phase::Grace { until, requeue_until, .. } = phase else { continue };
            if until <= now {
                tracing::info!(partition = p, "grace period over");
                self.end_grace(p).await;
            } else if requeue_until.is_some_and(|r| r <= now) {
                tracing::info!(
                    partition = p,
                    "requeue window over: waiters not back lose their places"
                );
                self.transition(move |own| own.end_requeue(p)).await;
            }
        }
    }

    /// Ends `p`'s grace period, then deletes `grace/<p>`, which `cluster status` reads.
    async fn end_grace(&mut self, p: u32) {
        self.transition(move |own| own.end_grace(p)).await;
        if let Err(e) = self.etcd.delete(&keys::grace(&self.config.cluster, p)).await {
            tracing::warn!(partition = p, error = %e, "cannot clear the grace key");
        }
    }

    /// Records in `seen/<id>` (no lease: it outlives the node) that the node's lease was
    /// just kept alive, so that `cluster status` can say when a dead node was last seen.
    /// Written at registration and then once per etcd TTL, not every round: each write is
    /// an etcd revision (history to compact, and epochs are revisions).
    async fn note_seen(&mut self) {
        let due = self.seen_written.is_none_or(|(at, lease)| {
            lease != self.lease || at.elapsed() + self.tick / 2 >= self.config.etcd_ttl
        });
        if !due {
            return;
        }
        let value = keys::SeenValue {
            addr: self.addr.clone(),
            lease: self.lease,
            unix_ms: keys::unix_ms(),
        };
        let value = serde_json::to_vec(&value).expect("serializable");
        let key = keys::seen(&self.config.cluster, &self.config.node_id);
        match self.etcd.put(&key, &value, None).await {
            Ok(_) => self.seen_written = Some((std::time::Instant::now(), self.lease)),
            Err(e) => tracing::debug!(error = %e, "cannot record the node as seen"),
        }
    }

    async fn round(&mut self, snap: &Snapshot) {
        let me = self.config.node_id.clone();
        // Partitions whose ownership changed under us.
        for (p, phase) in self.ownership.owned() {
            let epoch = match phase {
                Phase::Grace { epoch, .. } | Phase::Serving { epoch } => epoch,
                Phase::Unowned => continue,
            };
            let ok = snap
                .owners
                .get(p as usize)
                .and_then(Option::as_ref)
                .is_some_and(|o| o.node == me && o.epoch == epoch && o.lease == self.lease);
            if !ok {
                tracing::warn!(partition = p, "ownership lost in etcd: giving the partition up");
                self.transition(move |own| own.give_up(p, GiveUp::Moved)).await;
            }
        }
        // A grace key left behind by an end of grace whose delete failed: delete it now.
        for (p, phase) in self.ownership.owned() {
            let Phase::Serving { epoch } = phase else { continue };
            if snap.grace.get(p as usize).copied().flatten().is_some_and(|g| g.epoch == epoch) {
                let _ = self.etcd.delete(&keys::grace(&self.config.cluster, p)).await;
            }
        }
        self.end_graces().await;
        self.act_on_reports().await;
        // Keys etcd still has for this node but that it no longer serves (it fenced itself
        // while etcd was unreachable, and etcd came back before the lease expired): free
        // them, so the partitions are claimed again, with a new epoch and a grace period.
        let mine_in_etcd =
            snap.owners.iter().enumerate().filter_map(|(p, o)| {
                o.as_ref().filter(|o| o.node == me).map(|o| (p as u32, o.epoch))
            });
        for (p, epoch) in mine_in_etcd.collect::<Vec<_>>() {
            if self.ownership.phase(p) == Phase::Unowned {
                self.release_key(p, epoch).await;
            }
        }
        let plan = balance::plan(snap, &me);
        for p in plan.shed {
            self.shed(p).await;
        }
        for p in plan.claim {
            self.claim(p, snap.held[p as usize]).await;
        }
        self.publish(snap);
    }

    /// Acts on what the lock table reported: a planned move's grace period whose
    /// handed-over locks are all back ends (no need to wait longer); a partition whose
    /// token counter ran out gets a new epoch.
    async fn act_on_reports(&mut self) {
        for p in self.ownership.take_grace_done() {
            if matches!(self.ownership.phase(p), Phase::Grace { .. }) {
                tracing::info!(partition = p, "every handed-over lock back: grace over");
                self.end_grace(p).await;
            }
        }
        for p in self.ownership.take_epoch_requests() {
            self.renew_epoch(p).await;
        }
    }

    /// Reads the cluster and publishes the map again, without the rest of a round.
    async fn republish(&mut self) {
        match self.etcd.get_prefix(keys::prefix(&self.config.cluster).as_bytes()).await {
            Ok((rev, kvs)) => self.publish(&Snapshot::parse(&self.config.cluster, rev, &kvs)),
            Err(e) => tracing::warn!(error = %e, "cannot read the cluster from etcd"),
        }
    }

    /// Publishes the map: the snapshot of this round, with this node's own partitions as
    /// they are after the round (claims and moves of this round included, grace periods
    /// marked), so that clients are not sent away from a partition claimed a moment ago.
    fn publish(&self, snap: &Snapshot) {
        let mut map = snap.to_map();
        let me = map.nodes.iter().position(|n| n.id == self.config.node_id).map(|i| i as u16);
        let mut mine = vec![None; map.owners.len()];
        for (p, phase) in self.ownership.owned() {
            mine[p as usize] = Some(phase);
        }
        for (p, o) in map.owners.iter_mut().enumerate() {
            match mine[p] {
                Some(Phase::Grace { epoch, .. }) => {
                    *o = PartitionOwner { node: me, state: PartitionState::Grace, epoch };
                }
                Some(Phase::Serving { epoch }) => {
                    *o = PartitionOwner { node: me, state: PartitionState::Serving, epoch };
                }
                // Given up this round (the snapshot still names this node).
                _ if o.node.is_some() && o.node == me => {
                    *o = PartitionOwner { node: None, state: PartitionState::Unowned, epoch: 0 };
                }
                _ => {}
            }
        }
        // The overlay reflects this node's own writes of this round, which are newer
        // than the snapshot.
        map.revision = map.revision.max(self.last_revision);
        self.ownership.set_map(map);
    }

    async fn claim(&mut self, p: u32, had_owner: bool) {
        let c = &self.config.cluster;
        let owner = keys::owner(c, p);
        let grace_ms = self.config.effective_grace().as_millis() as u64;
        let value = OwnerValue {
            node: self.config.node_id.clone(),
            addr: self.addr.clone(),
            grace_until_unix_ms: had_owner.then(|| keys::unix_ms() + grace_ms),
        };
        let value = serde_json::to_vec(&value).expect("serializable");
        let txn = Txn {
            compare: vec![Compare::CreateRevision(owner.clone(), CmpOp::Equal, 0)],
            success: vec![
                TxnOp::Get { key: keys::held(c, p) },
                TxnOp::Get { key: keys::handover(c, p) },
                TxnOp::Put { key: owner, value, lease: Some(self.lease) },
            ],
            failure: vec![],
        };
        let r = match self.etcd.txn(txn).await {
            Ok(r) if r.succeeded => r,
            Ok(_) => return, // another node was faster
            Err(e) => return tracing::warn!(partition = p, error = %e, "claim failed"),
        };
        let epoch = r.revision as u64;
        self.last_revision = self.last_revision.max(epoch);
        if epoch > rangelock_proto::token::MAX_EPOCH {
            tracing::error!(epoch, "etcd revision beyond 2^32: fencing tokens cannot encode it");
            let _ = self.etcd.delete(&keys::owner(c, p)).await;
            return;
        }
        let range = |i: usize| match r.responses.get(i) {
            Some(crate::etcd::TxnOpResponse::Range(kvs)) => kvs.first().cloned(),
            _ => None,
        };
        let (held_kv, handover_kv) = (range(0), range(1));
        let held_before = had_owner || held_kv.is_some();
        // A handover counts only if it came from the partition's last owner (the epoch
        // `held/<p>` names): after a failover in between, it is stale.
        let last_epoch = held_kv
            .and_then(|kv| serde_json::from_slice::<HeldValue>(&kv.value).ok())
            .map(|h| h.epoch);
        let handover = handover_kv
            .and_then(|kv| serde_json::from_slice::<HandoverValue>(&kv.value).ok())
            .filter(|h| Some(h.epoch) == last_epoch);
        let held = serde_json::to_vec(&HeldValue { epoch }).expect("serializable");
        if let Err(e) = self.etcd.put(&keys::held(c, p), &held, None).await {
            tracing::warn!(partition = p, error = %e, "cannot mark the partition held");
        }
        if let Ok((_, Some(kv))) = self.etcd.get(&keys::moving(c, p)).await {
            if serde_json::from_slice::<keys::MoveValue>(&kv.value)
                .is_ok_and(|m| m.to == self.config.node_id)
            {
                let _ = self.etcd.delete(&keys::moving(c, p)).await;
            }
        }
        let grace = held_before.then(|| self.config.effective_grace());
        if let Some(grace) = grace {
            let value = keys::GraceValue {
                epoch,
                until_unix_ms: keys::unix_ms() + grace.as_millis() as u64,
            };
            let value = serde_json::to_vec(&value).expect("serializable");
            if let Err(e) = self.etcd.put(&keys::grace(c, p), &value, Some(self.lease)).await {
                tracing::warn!(partition = p, error = %e, "cannot record the grace period");
            }
        }
        let expected = handover.as_ref().map(|h| h.locks.len());
        tracing::info!(
            partition = p,
            epoch,
            grace_ms = grace.map(|g| g.as_millis() as u64),
            handed_over = expected,
            "claimed"
        );
        match (grace, handover) {
            (Some(grace), Some(h)) => {
                let locks = h
                    .locks
                    .iter()
                    .map(|l| HandoverLock {
                        name: l.name.as_deref().map(std::sync::Arc::from),
                        start: l.start,
                        end: l.end,
                        mode: if l.shared {
                            rangelock_proto::Mode::Shared
                        } else {
                            rangelock_proto::Mode::Exclusive
                        },
                        token: l.token,
                    })
                    .collect();
                let requeue = self.config.effective_requeue();
                self.transition(move |own| {
                    own.acquire_handed_over(p, epoch, grace, requeue, locks)
                })
                .await;
            }
            (grace, _) => self.transition(move |own| own.acquire(p, epoch, grace)).await,
        }
        let _ = self.etcd.delete(&keys::handover(c, p)).await;
    }

    /// A planned move: stop serving `p` (waiters are answered, holders notified), then
    /// delete the owner key so the next owner can claim it.
    async fn shed(&mut self, p: u32) {
        // Not during a grace period: holders of the previous epoch may still be on their
        // way, and a handover lists only the locks already reclaimed. The move waits.
        let Phase::Serving { epoch } = self.ownership.phase(p) else {
            return;
        };
        tracing::info!(partition = p, "moving the partition away");
        let own = self.ownership.clone();
        let held = tokio::task::spawn_blocking(move || own.hand_over(p)).await.unwrap_or_default();
        // The next owner expects exactly these reclaims, and can end its grace period
        // as soon as all are in. Written with the owner key's release, so it is there
        // before anyone can claim.
        let value = HandoverValue {
            epoch,
            locks: held
                .iter()
                .map(|l| HandoverEntry {
                    name: l.name.as_deref().map(<[u8]>::to_vec),
                    start: l.start,
                    end: l.end,
                    shared: l.mode == rangelock_proto::Mode::Shared,
                    token: l.token,
                })
                .collect(),
        };
        let owner = keys::owner(&self.config.cluster, p);
        let txn = Txn {
            compare: vec![Compare::ModRevision(owner.clone(), CmpOp::Equal, epoch as i64)],
            success: vec![
                TxnOp::Put {
                    key: keys::handover(&self.config.cluster, p),
                    value: serde_json::to_vec(&value).expect("serializable"),
                    lease: None,
                },
                TxnOp::Delete { key: owner },
            ],
            failure: vec![],
        };
        match self.etcd.txn(txn).await {
            Ok(r) => self.last_revision = self.last_revision.max(r.revision as u64),
            Err(e) => tracing::warn!(partition = p, error = %e, "cannot release the owner key"),
        }
    }

    /// Deletes this node's owner key of `p` if it is still the one of `epoch`.
    async fn release_key(&mut self, p: u32, epoch: u64) {
        let owner = keys::owner(&self.config.cluster, p);
        let txn = Txn {
            compare: vec![Compare::ModRevision(owner.clone(), CmpOp::Equal, epoch as i64)],
            success: vec![TxnOp::Delete { key: owner }],
            failure: vec![],
        };
        match self.etcd.txn(txn).await {
            Ok(r) => self.last_revision = self.last_revision.max(r.revision as u64),
            Err(e) => tracing::warn!(partition = p, error = %e, "cannot release the owner key"),
        }
    }

    async fn renew_epoch(&mut self, p: u32) {
        let (Phase::Serving { epoch } | Phase::Grace { epoch, .. }) = self.ownership.phase(p)
        else {
            return;
        };
        let owner = keys::owner(&self.config.cluster, p);
        let value = OwnerValue {
            node: self.config.node_id.clone(),
            addr: self.addr.clone(),
            grace_until_unix_ms: None,
        };
        let txn = Txn {
            compare: vec![Compare::ModRevision(owner.clone(), CmpOp::Equal, epoch as i64)],
            success: vec![TxnOp::Put {
                key: owner,
                value: serde_json::to_vec(&value).expect("serializable"),
                lease: Some(self.lease),
            }],
            failure: vec![],
        };
        match self.etcd.txn(txn).await {
            Ok(r) if r.succeeded => {
                let epoch = r.revision as u64;
                self.last_revision = self.last_revision.max(epoch);
                tracing::info!(partition = p, epoch, "new epoch (token counter ran out)");
                self.transition(move |own| own.renew_epoch(p, epoch)).await;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(partition = p, error = %e, "cannot renew the epoch"),
        }
    }

    async fn give_up_all(&mut self, why: GiveUp) {
        for (p, _) in self.ownership.owned() {
            self.transition(move |own| own.give_up(p, why)).await;
        }
    }

    /// Leaves the cluster: planned moves of every partition, then the lease is revoked
    /// (which deletes the node key).
    async fn leave(&mut self) {
        for (p, _) in self.ownership.owned() {
            self.shed(p).await;
        }
        // Partitions still in a grace period were not handed over: stop serving them
        // before the lease goes (their next owner applies a full grace period).
        self.give_up_all(GiveUp::Moved).await;
        if let Err(e) = self.etcd.revoke(self.lease).await {
            tracing::warn!(error = %e, "cannot revoke the etcd lease (it will expire)");
        }
        let _ = self.etcd.delete(&keys::seen(&self.config.cluster, &self.config.node_id)).await;
        tracing::info!(node = %self.config.node_id, "left the cluster");
    }

    /// Runs an ownership transition (which blocks until EPVS has run it) off the
    /// runtime's thread.
    async fn transition(&self, f: impl FnOnce(&Ownership) + Send + 'static) {
        let own = self.ownership.clone();
        let _ = tokio::task::spawn_blocking(move || f(&own)).await;
    }
}
