//! The cluster's keys in etcd, and a parsed snapshot of them.
//!
//! Everything lives under `/rangelock/<cluster>/`:
//!
//! | key | value (JSON) | lease | written by |
//! |---|---|---|---|
//! | `config` | `{"partitions": P}` | none | the first node (create-if-absent) |
//! | `nodes/<id>` | `{"addr": "host:port"}` | the node's | the node, at start (create-if-absent: ids are unique) |
//! | `owner/<p>` | `{"node": id, "addr": "host:port"}` | the owner's | the owner, claiming (create-if-absent) |
//! | `held/<p>` | `{"epoch": e}` | none | the owner, in the claim transaction |
//! | `move/<p>` | `{"to": id}` | none | `rangelock cluster move`; deleted by the target once it owns `p` |
//! | `handover/<p>` | `{"epoch": e, "locks": [...]}` | none | the owner of epoch `e`, giving `p` up in a planned move: its held and queued locks in arrival order (token 0: a waiter); deleted by the next owner |
//! | `grace/<p>` | `{"epoch": e, "until_unix_ms": t}` | the owner's | the owner of epoch `e`, when it claims `p` with a grace period; deleted when the grace period ends (on time or early) |
//! | `seen/<id>` | `{"addr": …, "lease": l, "unix_ms": t}` | none | the node, after a successful keepalive: at registration, then once per etcd TTL; deleted when it leaves in order |
//! | `balancer` | `{"paused": true}` | none | `rangelock cluster balance pause`; deleted by `… resume` |
//!
//! A node is **alive** while `nodes/<id>` exists and its lease does (etcd deletes the
//! key when the lease expires). `seen/<id>` outlives the lease, so a node that died is
//! still listed, as dead, with the time it was last seen.
//!
//! A partition's **epoch** is the `mod_revision` of its `owner/<p>` key: etcd revisions
//! only grow, so every new owner (and every renewal) has a larger epoch than any before.
//! `held/<p>` records that the partition has had an owner, so a later owner starts in a
//! grace period: holders of the old epoch may still be out there.

use serde::{Deserialize, Serialize};

use crate::etcd::{KeyValue, LeaseId, Revision};

/// The key prefix of cluster `name`.
pub fn prefix(cluster: &str) -> String {
    format!("/rangelock/{cluster}/")
}

/// `config`.
pub fn config(cluster: &str) -> Vec<u8> {
    format!("{}config", prefix(cluster)).into_bytes()
}

/// `nodes/<id>`.
pub fn node(cluster: &str, id: &str) -> Vec<u8> {
    format!("{}nodes/{id}", prefix(cluster)).into_bytes()
}

/// `owner/<p>`.
pub fn owner(cluster: &str, p: u32) -> Vec<u8> {
    format!("{}owner/{p:05}", prefix(cluster)).into_bytes()
}

/// `held/<p>`.
pub fn held(cluster: &str, p: u32) -> Vec<u8> {
    format!("{}held/{p:05}", prefix(cluster)).into_bytes()
}

/// `handover/<p>`.
pub fn handover(cluster: &str, p: u32) -> Vec<u8> {
    format!("{}handover/{p:05}", prefix(cluster)).into_bytes()
}

/// `grace/<p>`.
pub fn grace(cluster: &str, p: u32) -> Vec<u8> {
    format!("{}grace/{p:05}", prefix(cluster)).into_bytes()
}

/// `seen/<id>`.
pub fn seen(cluster: &str, id: &str) -> Vec<u8> {
    format!("{}seen/{id}", prefix(cluster)).into_bytes()
}

/// `balancer`.
pub fn balancer(cluster: &str) -> Vec<u8> {
    format!("{}balancer", prefix(cluster)).into_bytes()
}

/// `move/<p>`.
pub fn moving(cluster: &str, p: u32) -> Vec<u8> {
    format!("{}move/{p:05}", prefix(cluster)).into_bytes()
}

/// The value of `config`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigValue {
    /// P, a power of two.
    pub partitions: u32,
    /// The node that created the cluster (absent in clusters created before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// Whether that node had no `--partitions`, so P is the default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defaulted: bool,
}

/// The value of `nodes/<id>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeValue {
    /// Where clients reach the node.
    pub addr: String,
}

/// The value of `owner/<p>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerValue {
    /// The owner's id.
    pub node: String,
    /// Where clients reach it.
    pub addr: String,
    /// When the grace period of this claim ends (Unix time in ms, the owner's clock; for
    /// display by `rangelock cluster status`); absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_until_unix_ms: Option<u64>,
}

/// Unix time in milliseconds (the wall clock: only for display).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The value of `held/<p>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldValue {
    /// The epoch of the owner that wrote it.
    pub epoch: u64,
}

/// The value of `handover/<p>`: the locks held and waited for on `p` when its owner of
/// `epoch` gave it up in a planned move, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoverValue {
    /// The epoch of the owner that handed over.
    pub epoch: u64,
    /// The held and queued locks, in arrival order.
    pub locks: Vec<HandoverEntry>,
}

/// One handed-over lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoverEntry {
    /// The resource's name (its bytes in base64, as etcd's own JSON writes bytes: a
    /// 1 KiB name is 1.4 KB); absent: the unnamed resource, so an unnamed entry reads as
    /// before names.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "name_base64")]
    pub name: Option<Vec<u8>>,
    /// First unit.
    pub start: u64,
    /// One past the last unit.
    pub end: u64,
    /// Shared (`false`: exclusive).
    pub shared: bool,
    /// Its token; 0 for a waiter.
    pub token: u64,
}

/// [`HandoverEntry::name`] as a base64 string.
mod name_base64 {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        name: &Option<Vec<u8>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match name {
            Some(n) => s.serialize_str(&STANDARD.encode(n)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        let s = String::deserialize(d)?;
        let name = STANDARD.decode(s.as_bytes());
        name.map(Some).map_err(|e| de::Error::custom(format!("bad base64 name {s:?}: {e}")))
    }
}

/// The value of `grace/<p>`: the owner of `epoch` serves `p` in a grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraceValue {
    /// The owner's epoch (a key of an older epoch is stale and ignored).
    pub epoch: u64,
    /// When the grace period ends at the latest (Unix ms, the owner's clock).
    pub until_unix_ms: u64,
}

/// The value of `seen/<id>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenValue {
    /// Where clients reach the node.
    pub addr: String,
    /// The node's etcd lease.
    pub lease: LeaseId,
    /// When a successful keepalive was answered (Unix ms, the node's clock).
    pub unix_ms: u64,
}

/// The value of `balancer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalancerValue {
    /// No rebalancing moves while set (see [`crate::balance`]).
    pub paused: bool,
}

/// The value of `move/<p>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveValue {
    /// The node that should own the partition.
    pub to: String,
}

/// A live node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEntry {
    /// Node id.
    pub id: String,
    /// Client address.
    pub addr: String,
    /// Its etcd lease.
    pub lease: LeaseId,
}

/// A partition's owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerEntry {
    /// Owner id.
    pub node: String,
    /// Client address.
    pub addr: String,
    /// The epoch (the key's `mod_revision`).
    pub epoch: u64,
    /// The lease the key is attached to.
    pub lease: LeaseId,
    /// End of the claim's grace period (Unix ms), if it had one.
    pub grace_until_unix_ms: Option<u64>,
}

/// Everything under the cluster prefix at one revision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The etcd revision read at.
    pub revision: Revision,
    /// `config`, if the cluster exists.
    pub config: Option<ConfigValue>,
    /// Live nodes, by id.
    pub nodes: Vec<NodeEntry>,
    /// Owner per partition (`None`: unowned); empty if there is no config.
    pub owners: Vec<Option<OwnerEntry>>,
    /// Whether each partition has had an owner.
    pub held: Vec<bool>,
    /// Requested moves per partition.
    pub moves: Vec<Option<String>>,
    /// `grace/<p>` per partition (whichever epoch it names).
    pub grace: Vec<Option<GraceValue>>,
    /// `seen/<id>` records, by id: every node that has run and not left in order.
    pub seen: Vec<(String, SeenValue)>,
    /// Whether the balancer is paused (`balancer` says so).
    pub balancer_paused: bool,
}

impl Snapshot {
    /// Parses the keys of a prefix read. Keys that do not parse are ignored (logged).
    pub fn parse(cluster: &str, revision: Revision, kvs: &[KeyValue]) -> Snapshot {
        let pre = prefix(cluster);
        let mut snap = Snapshot { revision, ..Snapshot::default() };
        let rest = |kv: &KeyValue| {
            std::str::from_utf8(&kv.key).ok().and_then(|k| k.strip_prefix(&pre)).map(str::to_owned)
        };
        for kv in kvs {
            match rest(kv).as_deref() {
                Some("config") => snap.config = serde_json::from_slice(&kv.value).ok(),
                Some("balancer") => {
                    snap.balancer_paused =
                        serde_json::from_slice::<BalancerValue>(&kv.value).is_ok_and(|b| b.paused);
                }
                _ => {}
            }
        }
        let count = snap.config.as_ref().map_or(0, |c| c.partitions) as usize;
        snap.owners = vec![None; count];
        snap.held = vec![false; count];
        snap.moves = vec![None; count];
        snap.grace = vec![None; count];
        let part = |s: &str| s.parse::<usize>().ok().filter(|p| *p < count);
        for kv in kvs {
            let Some(key) = rest(kv) else { continue };
            if let Some(id) = key.strip_prefix("nodes/") {
                if let Ok(v) = serde_json::from_slice::<NodeValue>(&kv.value) {
                    snap.nodes.push(NodeEntry { id: id.to_owned(), addr: v.addr, lease: kv.lease });
                }
            } else if let Some(p) = key.strip_prefix("owner/").and_then(part) {
                if let Ok(v) = serde_json::from_slice::<OwnerValue>(&kv.value) {
                    snap.owners[p] = Some(OwnerEntry {
                        node: v.node,
                        addr: v.addr,
                        epoch: kv.mod_revision as u64,
                        lease: kv.lease,
                        grace_until_unix_ms: v.grace_until_unix_ms,
                    });
                }
            } else if let Some(p) = key.strip_prefix("held/").and_then(part) {
                snap.held[p] = true;
            } else if key.starts_with("handover/") {
                // Read by the claiming node in its claim transaction.
            } else if let Some(p) = key.strip_prefix("move/").and_then(part) {
                if let Ok(v) = serde_json::from_slice::<MoveValue>(&kv.value) {
                    snap.moves[p] = Some(v.to);
                }
            } else if let Some(p) = key.strip_prefix("grace/").and_then(part) {
                snap.grace[p] = serde_json::from_slice(&kv.value).ok();
            } else if let Some(id) = key.strip_prefix("seen/") {
                if let Ok(v) = serde_json::from_slice::<SeenValue>(&kv.value) {
                    snap.seen.push((id.to_owned(), v));
                }
            } else if key != "config" && key != "balancer" {
                tracing::debug!(key, "ignoring unknown cluster key");
            }
        }
        snap.nodes.sort_by(|a, b| a.id.cmp(&b.id));
        snap.seen.sort_by(|a, b| a.0.cmp(&b.0));
        snap
    }

    /// Whether partition `p` is in a grace period: its owner wrote `grace/<p>` for its
    /// current epoch and has not deleted it yet.
    pub fn in_grace(&self, p: usize) -> Option<GraceValue> {
        let owner = self.owners.get(p)?.as_ref()?;
        self.grace.get(p)?.filter(|g| g.epoch == owner.epoch)
    }

    /// Whether node `id` is live (registered under a live lease).
    pub fn is_live(&self, id: &str) -> bool {
        self.nodes.iter().any(|n| n.id == id)
    }

    /// How many partitions each live node owns, in `nodes` order.
    pub fn counts(&self) -> Vec<usize> {
        self.nodes
            .iter()
            .map(|n| self.owners.iter().flatten().filter(|o| o.node == n.id).count())
            .collect()
    }

    /// The cluster map clients read (`MAP`).
    pub fn to_map(&self) -> rangelock_proto::ClusterMap {
        use rangelock_proto::{ClusterMap, NodeInfo, PartitionOwner, PartitionState};
        let nodes: Vec<NodeInfo> = self
            .nodes
            .iter()
            .map(|n| NodeInfo { id: n.id.clone(), addr: n.addr.clone() })
            .collect();
        let owners = self
            .owners
            .iter()
            .map(|o| match o {
                Some(o) => PartitionOwner {
                    node: self.nodes.iter().position(|n| n.id == o.node).map(|i| i as u16),
                    state: PartitionState::Serving,
                    epoch: o.epoch,
                },
                None => PartitionOwner { node: None, state: PartitionState::Unowned, epoch: 0 },
            })
            .collect();
        ClusterMap {
            revision: self.revision as u64,
            partitions: self.owners.len() as u32,
            nodes,
            owners,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handover_entry_carries_its_name_in_base64_and_none_without_one() {
        let named = HandoverEntry {
            name: Some(b"db/\xffx".to_vec()),
            start: 1,
            end: 2,
            shared: false,
            token: 7,
        };
        let unnamed = HandoverEntry { name: None, ..named.clone() };
        let v = HandoverValue { epoch: 3, locks: vec![named, unnamed] };
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(
            json,
            r#"{"epoch":3,"locks":[{"name":"ZGIv/3g=","start":1,"end":2,"shared":false,"token":7},{"start":1,"end":2,"shared":false,"token":7}]}"#
        );
        assert_eq!(serde_json::from_str::<HandoverValue>(&json).unwrap(), v);
        let bad = json.replace("ZGIv/3g=", "not base64!");
        let e = serde_json::from_str::<HandoverValue>(&bad).unwrap_err();
        assert!(e.to_string().contains("bad base64 name"), "{e}");
    }
}
