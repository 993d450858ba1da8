//! Operations on a cluster from outside: what `rangelock cluster status` and
//! `rangelock cluster move` do.

use std::fmt::Write as _;

use crate::etcd::{Etcd, EtcdError};
use crate::keys::{self, MoveValue, Snapshot};

/// Why an admin operation failed.
#[derive(Debug, thiserror::Error)]
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
}

impl From<EtcdError> for AdminError {
    fn from(e: EtcdError) -> Self {
        AdminError::Etcd(e)
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
/// period in which the old owner's clients reclaim their locks.
pub async fn request_move(etcd: &Etcd, cluster: &str, p: u32, to: &str) -> Result<(), AdminError> {
    let snap = snapshot(etcd, cluster).await?;
    let count = snap.owners.len() as u32;
    if p >= count {
        return Err(AdminError::NoPartition { got: p, count });
    }
    if !snap.is_live(to) {
        return Err(AdminError::NoNode(to.to_owned()));
    }
    let value = serde_json::to_vec(&MoveValue { to: to.to_owned() }).expect("serializable");
    etcd.put(&keys::moving(cluster, p), &value, None).await?;
    Ok(())
}

/// A human-readable status: nodes with their partition counts, then each partition's
/// owner and epoch.
pub fn render_status(cluster: &str, snap: &Snapshot) -> String {
    let mut out = String::new();
    let count = snap.owners.len();
    let _ = writeln!(out, "cluster {cluster}: {count} partitions, etcd revision {}", snap.revision);
    let counts = snap.counts();
    let _ = writeln!(out, "nodes ({}):", snap.nodes.len());
    for (n, c) in snap.nodes.iter().zip(counts) {
        let _ = writeln!(out, "  {:<16} {:<22} {c} partitions", n.id, n.addr);
    }
    let unowned = snap.owners.iter().filter(|o| o.is_none()).count();
    let _ = writeln!(out, "partitions ({unowned} unowned):");
    for (p, o) in snap.owners.iter().enumerate() {
        let moving =
            snap.moves[p].as_deref().map(|t| format!("  (moving to {t})")).unwrap_or_default();
        match o {
            Some(o) => {
                let now = crate::keys::unix_ms();
                let grace = match o.grace_until_unix_ms {
                    Some(until) if until > now => format!("  grace ({} ms left)", until - now),
                    _ => String::new(),
                };
                let _ = writeln!(out, "  {p:>5}  {:<16} epoch {}{grace}{moving}", o.node, o.epoch);
            }
            None => {
                let _ = writeln!(out, "  {p:>5}  -{moving}");
            }
        }
    }
    out
}
