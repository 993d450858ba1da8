//! Operations on a cluster from outside: what `rangelock cluster status`, `move`,
//! `balance` and `reset` do. What status reports, and what it means: [`report`].

use std::collections::HashMap;

use crate::etcd::{Etcd, EtcdError};
use crate::keys::{self, BalancerValue, MoveValue, Snapshot};

pub mod report;

pub use report::{render_status, NodeStatus, PartitionPhase, PartitionStatus, Status};

/// Why an admin operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// etcd could not be reached or refused a request.
    #[error("etcd: {0}")]
    Etcd(EtcdError),
    /// No cluster of that name in etcd.
    #[error("no cluster named {0:?} in etcd (a node creates it when it starts)")]
    NoCluster(String),
    /// The partition index is out of range.
    #[error("partition {got} does not exist: the cluster has {count} (0..{count})")]
    NoPartition {
        /// Asked for.
        got: u32,
        /// Partitions of the cluster.
        count: u32,
    },
    /// The target node is not live.
    #[error("node {0:?} is not a live member of the cluster")]
    NoNode(String),
    /// `reset` while nodes are registered (without `--force`).
    #[error(
        "live nodes are registered: {}; stop them first (or give --force: they then stop \
         serving and must be restarted)",
        .0.join(", ")
    )]
    LiveNodes(Vec<String>),
}

impl From<EtcdError> for AdminError {
    fn from(e: EtcdError) -> Self {
        AdminError::Etcd(e)
    }
}

impl AdminError {
    /// Whether etcd could not be reached or did not answer (rather than refused).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            AdminError::Etcd(
                EtcdError::Unreachable { .. }
                    | EtcdError::Timeout { .. }
                    | EtcdError::Transport { .. }
            )
        )
    }
}

/// Reads the cluster.
pub async fn snapshot(etcd: &Etcd, cluster: &str) -> Result<Snapshot, AdminError> {
    let (rev, kvs) = etcd.get_prefix(keys::prefix(cluster).as_bytes()).await?;
    let snap = Snapshot::parse(cluster, rev, &kvs);
    if snap.config.is_none() {
        return Err(AdminError::NoCluster(cluster.to_owned()));
    }
    Ok(snap)
}

/// Asks the owner of partition `p` to hand it to node `to` (a planned move). Returns at
/// once; the owner stops serving `p` at its next round and `to` claims it, in a grace
/// period in which the old owner's clients reclaim their locks. Returns `false`, and
/// writes nothing, when `to` owns `p` already (no one would carry the move out, and
/// its key would stay).
pub async fn request_move(
    etcd: &Etcd,
    cluster: &str,
    p: u32,
    to: &str,
) -> Result<bool, AdminError> {
    let snap = snapshot(etcd, cluster).await?;
    let count = snap.owners.len() as u32;
    if p >= count {
        return Err(AdminError::NoPartition { got: p, count });
    }
    if !snap.is_live(to) {
        return Err(AdminError::NoNode(to.to_owned()));
    }
    if snap.owners[p as usize].as_ref().is_some_and(|o| o.node == to) {
        etcd.delete(&keys::moving(cluster, p)).await?;
        return Ok(false);
    }
    let value = serde_json::to_vec(&MoveValue { to: to.to_owned() }).expect("serializable");
    etcd.put(&keys::moving(cluster, p), &value, None).await?;
    Ok(true)
}

/// Pauses (`true`) or resumes the balancer's rebalancing moves ([`crate::balance`]).
/// Unowned partitions are still claimed and operator moves still carried out.
pub async fn set_balancer_paused(
    etcd: &Etcd,
    cluster: &str,
    paused: bool,
) -> Result<(), AdminError> {
    snapshot(etcd, cluster).await?;
    let key = keys::balancer(cluster);
    if paused {
        let value = serde_json::to_vec(&BalancerValue { paused }).expect("serializable");
        etcd.put(&key, &value, None).await?;
    } else {
        etcd.delete(&key).await?;
    }
    Ok(())
}

/// Deletes every key of cluster `cluster`; returns how many went. Refused while nodes
/// are registered unless `force` (see [`AdminError::LiveNodes`]). The check and the
/// delete are two requests: a node that registers between them loses its keys too (it
/// then stops serving, as with `force`).
pub async fn reset(etcd: &Etcd, cluster: &str, force: bool) -> Result<i64, AdminError> {
    let (rev, kvs) = etcd.get_prefix(keys::prefix(cluster).as_bytes()).await?;
    let snap = Snapshot::parse(cluster, rev, &kvs);
    if !force && !snap.nodes.is_empty() {
        return Err(AdminError::LiveNodes(snap.nodes.iter().map(|n| n.id.clone()).collect()));
    }
    let (_, deleted) = etcd.delete_prefix(keys::prefix(cluster).as_bytes()).await?;
    Ok(deleted)
}

/// Reads the cluster and the lease of every registered node.
pub async fn status(etcd: &Etcd, cluster: &str) -> Result<Status, AdminError> {
    let snap = snapshot(etcd, cluster).await?;
    let mut leases = HashMap::new();
    for n in &snap.nodes {
        leases.insert(n.lease, etcd.lease_time_to_live(n.lease).await?);
    }
    Ok(Status::new(cluster, &snap, Some(&leases), keys::unix_ms()))
}
