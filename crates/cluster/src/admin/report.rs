//! What `rangelock cluster status` reports ([`Status`]; `--json` prints it as it is).
//!
//! A node is **alive** while its `nodes/<id>` key exists and etcd still knows its
//! lease; it is **dead** when it has a `seen/<id>` record (it ran and did not leave in
//! order) but no live registration: its lease expired (it was killed, paused or cut off
//! from etcd for longer than its TTL) or was revoked. A node that left in order deletes
//! its record and is no longer listed. A killed node is reported dead once etcd expires
//! its lease: within its TTL plus etcd's expiry check (500 ms) of its last keepalive.
//!
//! A partition is **moving** while `move/<p>` exists, in **grace** while its owner's
//! `grace/<p>` names the owner's current epoch (the owner deletes it when the grace
//! period ends, on time or early once every handed-over lock is back), **serving** when
//! it has an owner otherwise, and **unowned** without one.

use std::collections::HashMap;
use std::fmt::Write as _;

use rangelock_proto::Partitioning;
use serde::Serialize;

use crate::etcd::LeaseTtl;
use crate::keys::{self, Snapshot};

/// What `rangelock cluster status` reports; `--json` prints it as it is (field names
/// and meanings are documented in docs/CLUSTER.md §5).
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The cluster's name.
    pub cluster: String,
    /// The etcd revision the keys were read at.
    pub etcd_revision: i64,
    /// P.
    pub partition_count: u32,
    /// Whether the balancer's rebalancing moves are paused.
    pub balancer_paused: bool,
    /// Alive nodes, then dead ones, each by id.
    pub nodes: Vec<NodeStatus>,
    /// Every partition, in order.
    pub partitions: Vec<PartitionStatus>,
}

/// One node in [`Status`].
#[derive(Clone, Debug, Serialize)]
pub struct NodeStatus {
    /// Node id.
    pub id: String,
    /// Where clients reach it.
    pub addr: String,
    /// See the module docs.
    pub alive: bool,
    /// Its etcd lease (the live registration's, or the last one recorded for a dead node).
    pub lease: Option<i64>,
    /// The lease's TTL in seconds; `None` for a dead node.
    pub lease_ttl_s: Option<u64>,
    /// Seconds left on the lease as etcd reports them (rounded down; each keepalive,
    /// every TTL/5, restarts it); `None` for a dead node.
    pub lease_remaining_s: Option<u64>,
    /// When the node was last seen keeping its lease alive: its `seen/<id>` record (the
    /// node's clock, written once per TTL) or, for a live lease, the latest time its
    /// remaining TTL proves (this machine's clock), whichever is later.
    pub last_seen_unix_ms: Option<u64>,
    /// How long ago that was, by this machine's clock.
    pub last_seen_ms_ago: Option<u64>,
    /// Partitions etcd names it the owner of.
    pub partitions: usize,
    /// The share of named resources' traffic its partitions take (`partitions / P`, 0 to
    /// 1): names spread over the partitions by their hash, and each name's stripes over
    /// the partitions in turn (`docs/CLUSTER.md` §1), so a node serves this share of the
    /// names' stripes.
    pub names_share: f64,
    /// The names live on the node (`STATS_NAMED`'s `names_live`), read from the node
    /// itself when `cluster status` could (`None`: dead, unreachable, or not asked).
    pub names_live: Option<u64>,
    /// The locks held on names there (`STATS_NAMED`'s `named_holders`), as `names_live`.
    pub named_locks: Option<u64>,
}

/// A partition's phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionPhase {
    /// An owner serves it.
    Serving,
    /// Its owner serves only reclaims, for `grace_left_ms` more at most.
    Grace,
    /// A planned move is under way (`moving_to`).
    Moving,
    /// No owner.
    Unowned,
}

/// One partition in [`Status`].
#[derive(Clone, Debug, Serialize)]
pub struct PartitionStatus {
    /// Its index.
    pub partition: u32,
    /// Its first unit.
    pub start: u64,
    /// One past its last unit (the last partition ends at `u64::MAX`).
    pub end: u64,
    /// Its owner's id.
    pub owner: Option<String>,
    /// Whether that owner is alive.
    pub owner_alive: Option<bool>,
    /// Its epoch.
    pub epoch: Option<u64>,
    /// See [`PartitionPhase`].
    pub phase: PartitionPhase,
    /// While the grace period is in effect (also while moving): time left at most.
    pub grace_left_ms: Option<u64>,
    /// The target of a planned move.
    pub moving_to: Option<String>,
}

impl Status {
    /// The status of `snap` at `now_unix_ms`. `leases`: what etcd says of the
    /// registered nodes' leases (`None` when not asked: every registered node then
    /// counts as alive, with no lease times).
    pub fn new(
        cluster: &str,
        snap: &Snapshot,
        leases: Option<&HashMap<i64, Option<LeaseTtl>>>,
        now_unix_ms: u64,
    ) -> Status {
        let seen: HashMap<&str, &keys::SeenValue> =
            snap.seen.iter().map(|(id, v)| (id.as_str(), v)).collect();
        let owned = |id: &str| snap.owners.iter().flatten().filter(|o| o.node == id).count();
        let share = |n: usize| {
            if snap.owners.is_empty() {
                0.0
            } else {
                n as f64 / snap.owners.len() as f64
            }
        };
        let last_seen = |id: &str| seen.get(id).map(|s| s.unix_ms);
        let ago = |t: Option<u64>| t.map(|t| now_unix_ms.saturating_sub(t));
        let mut nodes = Vec::new();
        for n in &snap.nodes {
            let ttl = leases.map(|l| l.get(&n.lease).copied().flatten());
            let alive = !matches!(ttl, Some(None));
            // etcd restarts the TTL at each keepalive, so a live lease with `remaining`
            // of `granted` left was kept alive at most `granted - remaining` ago: newer
            // than the record (written once per TTL) as a rule.
            let by_lease = ttl.flatten().map(|t| {
                now_unix_ms.saturating_sub(t.granted.saturating_sub(t.remaining).as_millis() as u64)
            });
            let t = last_seen(&n.id).max(by_lease);
            nodes.push(NodeStatus {
                id: n.id.clone(),
                addr: n.addr.clone(),
                alive,
                lease: Some(n.lease),
                lease_ttl_s: ttl.flatten().map(|t| t.granted.as_secs()),
                lease_remaining_s: ttl.flatten().map(|t| t.remaining.as_secs()),
                last_seen_unix_ms: t,
                last_seen_ms_ago: ago(t),
                partitions: owned(&n.id),
                names_share: share(owned(&n.id)),
                names_live: None,
                named_locks: None,
            });
        }
        for (id, s) in &snap.seen {
            if snap.is_live(id) {
                continue;
            }
            nodes.push(NodeStatus {
                id: id.clone(),
                addr: s.addr.clone(),
                alive: false,
                lease: Some(s.lease),
                lease_ttl_s: None,
                lease_remaining_s: None,
                last_seen_unix_ms: Some(s.unix_ms),
                last_seen_ms_ago: ago(Some(s.unix_ms)),
                partitions: owned(id),
                names_share: share(owned(id)),
                names_live: None,
                named_locks: None,
            });
        }
        nodes.sort_by(|a, b| (!a.alive, &a.id).cmp(&(!b.alive, &b.id)));
        let alive: HashMap<&str, bool> = nodes.iter().map(|n| (n.id.as_str(), n.alive)).collect();
        let count = snap.owners.len() as u32;
        let parts = Partitioning::new(count).ok();
        let partitions = (0..count)
            .map(|p| {
                let i = p as usize;
                let owner = snap.owners[i].as_ref();
                let grace = snap.in_grace(i);
                let moving_to = snap.moves[i].clone();
                let phase = match (owner, grace, &moving_to) {
                    (_, _, Some(_)) => PartitionPhase::Moving,
                    (Some(_), Some(_), None) => PartitionPhase::Grace,
                    (Some(_), None, None) => PartitionPhase::Serving,
                    (None, _, None) => PartitionPhase::Unowned,
                };
                PartitionStatus {
                    partition: p,
                    start: parts.map_or(0, |x| x.start(p)),
                    end: parts.map_or(0, |x| x.end(p)),
                    owner: owner.map(|o| o.node.clone()),
                    owner_alive: owner
                        .map(|o| alive.get(o.node.as_str()).copied().unwrap_or(false)),
                    epoch: owner.map(|o| o.epoch),
                    phase,
                    grace_left_ms: grace.map(|g| g.until_unix_ms.saturating_sub(now_unix_ms)),
                    moving_to,
                }
            })
            .collect();
        Status {
            cluster: cluster.to_owned(),
            etcd_revision: snap.revision,
            partition_count: count,
            balancer_paused: snap.balancer_paused,
            nodes,
            partitions,
        }
    }

    /// The human-readable form: nodes, then partitions.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let count = self.partition_count;
        let balancer = if self.balancer_paused { "paused" } else { "running" };
        let _ = writeln!(
            out,
            "cluster {}: {count} partitions, etcd revision {}, balancer {balancer}",
            self.cluster, self.etcd_revision
        );
        let alive = self.nodes.iter().filter(|n| n.alive).count();
        let dead = self.nodes.len() - alive;
        let _ = writeln!(out, "nodes ({alive} alive, {dead} dead):");
        for n in &self.nodes {
            let state = if n.alive { "alive" } else { "dead" };
            let lease = match (n.alive, n.lease_remaining_s, n.lease_ttl_s) {
                (true, Some(r), Some(t)) => format!("lease {r}/{t} s left"),
                (true, _, _) => "lease ?".to_owned(),
                (false, _, _) => "lease gone".to_owned(),
            };
            let seen = n
                .last_seen_ms_ago
                .map(|ms| format!("seen {:.1} s ago", ms as f64 / 1000.0))
                .unwrap_or_else(|| "never seen".to_owned());
            let names = match (n.alive, n.names_live, n.named_locks) {
                (true, Some(live), Some(held)) => {
                    format!(", names live {live}, named locks {held}")
                }
                (true, ..) => ", names ?".to_owned(),
                (false, ..) => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<16} {:<22} {state:<5}  {lease:<16}  {seen:<16}  {} partitions ({:.0}% of names){names}",
                n.id,
                n.addr,
                n.partitions,
                n.names_share * 100.0
            );
        }
        let unowned = self.partitions.iter().filter(|p| p.owner.is_none()).count();
        let _ = writeln!(out, "partitions ({unowned} unowned):");
        for p in &self.partitions {
            let range = format!("{}..{}", p.start, p.end);
            let owner = match (&p.owner, p.owner_alive) {
                (Some(o), Some(false)) => format!("{o} (dead)"),
                (Some(o), _) => o.clone(),
                (None, _) => "-".to_owned(),
            };
            let epoch = p.epoch.map(|e| format!("epoch {e}")).unwrap_or_default();
            let grace = |ms: u64| format!("grace ({ms} ms left)");
            let phase = match p.phase {
                PartitionPhase::Serving => "serving".to_owned(),
                PartitionPhase::Grace => grace(p.grace_left_ms.unwrap_or(0)),
                PartitionPhase::Unowned => "unowned".to_owned(),
                PartitionPhase::Moving => {
                    let to = p.moving_to.as_deref().unwrap_or("?");
                    match p.grace_left_ms {
                        Some(ms) => format!("moving to {to}, after its {}", grace(ms)),
                        None => format!("moving to {to}"),
                    }
                }
            };
            let _ =
                writeln!(out, "  {:>5}  {range:<42} {owner:<16} {epoch:<14} {phase}", p.partition);
        }
        out
    }
}

/// The human-readable status of `snap` alone (no lease times; every registered node
/// counts as alive), for logs and test failures.
pub fn render_status(cluster: &str, snap: &Snapshot) -> String {
    Status::new(cluster, snap, None, keys::unix_ms()).render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::KeyValue;
    use std::time::Duration;

    fn kv(key: &str, value: &str, mod_revision: i64, lease: i64) -> KeyValue {
        KeyValue {
            key: format!("/rangelock/t/{key}").into_bytes(),
            value: value.as_bytes().to_vec(),
            create_revision: mod_revision,
            mod_revision,
            version: 1,
            lease,
        }
    }

    #[test]
    fn status_tells_dead_nodes_grace_in_effect_and_moves() {
        let kvs = [
            kv("config", r#"{"partitions":4}"#, 1, 0),
            kv("nodes/a", r#"{"addr":"a:1"}"#, 2, 10),
            kv("nodes/b", r#"{"addr":"b:1"}"#, 3, 11),
            kv("seen/a", r#"{"addr":"a:1","lease":10,"unix_ms":7000}"#, 20, 0),
            kv("seen/c", r#"{"addr":"c:1","lease":12,"unix_ms":4000}"#, 4, 0),
            kv("owner/00000", r#"{"node":"a","addr":"a:1"}"#, 5, 10),
            kv("owner/00001", r#"{"node":"a","addr":"a:1"}"#, 6, 10),
            kv("owner/00002", r#"{"node":"b","addr":"b:1"}"#, 7, 11),
            // In effect: names the owner's epoch.
            kv("grace/00000", r#"{"epoch":5,"until_unix_ms":10500}"#, 5, 10),
            // Stale: an older epoch of partition 1.
            kv("grace/00001", r#"{"epoch":3,"until_unix_ms":10500}"#, 3, 10),
            kv("move/00002", r#"{"to":"a"}"#, 8, 0),
        ];
        let snap = Snapshot::parse("t", 21, &kvs);
        let ttl = |s| {
            Some(LeaseTtl { remaining: Duration::from_secs(s), granted: Duration::from_secs(2) })
        };
        // b's lease is gone although its key was read: dead.
        let leases = HashMap::from([(10, ttl(1)), (11, None)]);
        let st = Status::new("t", &snap, Some(&leases), 10_000);
        let nodes: Vec<(&str, bool)> = st.nodes.iter().map(|n| (n.id.as_str(), n.alive)).collect();
        assert_eq!(nodes, [("a", true), ("b", false), ("c", false)]);
        assert_eq!(st.nodes[0].lease_remaining_s, Some(1));
        assert_eq!(st.nodes[0].last_seen_ms_ago, Some(1000));
        assert_eq!(st.nodes[2].last_seen_ms_ago, Some(6000));
        let phases: Vec<_> = st.partitions.iter().map(|p| p.phase).collect();
        use PartitionPhase::*;
        assert_eq!(phases, [Grace, Serving, Moving, Unowned]);
        assert_eq!(st.partitions[0].grace_left_ms, Some(500));
        assert_eq!(st.partitions[1].grace_left_ms, None);
        assert_eq!(st.partitions[2].owner_alive, Some(false));
        assert_eq!((st.partitions[1].start, st.partitions[1].end), (1 << 62, 2 << 62));
        assert_eq!(st.partitions[3].end, u64::MAX);
        let text = st.render();
        assert!(text.contains("nodes (1 alive, 2 dead):"), "{text}");
        assert!(text.contains("grace (500 ms left)"), "{text}");
        assert!(text.contains("b (dead)") && text.contains("moving to a"), "{text}");
        // a owns 2 of 4 partitions: half the names' stripes; c none.
        let shares: Vec<f64> = st.nodes.iter().map(|n| n.names_share).collect();
        assert_eq!(shares, [0.5, 0.25, 0.0]);
        assert!(text.contains("2 partitions (50% of names), names ?"), "{text}");
        // What a node said of its names, once read.
        let mut st = st;
        (st.nodes[0].names_live, st.nodes[0].named_locks) = (Some(3), Some(5));
        let text = st.render();
        assert!(text.contains("(50% of names), names live 3, named locks 5\n"), "{text}");
        let json = serde_json::to_value(&st).unwrap();
        assert_eq!(json["partitions"][0]["phase"], "grace");
        assert_eq!(json["nodes"][1]["alive"], false);
    }
}
