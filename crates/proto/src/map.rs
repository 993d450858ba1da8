//! Cluster bodies: the [`ClusterMap`] of a `MAP` response and the [`OwnerHint`] of a
//! `NOT_OWNER` response.
//!
//! Map layout: `revision u64 | partitions u32 | node_count u16 | node_count × (id_len u8 |
//! id | addr_len u8 | addr) | partitions × (node u16 | state u8 | epoch u64)`, where `node`
//! is an index into the node list or `0xffff` for none.
//!
//! Hint layout: `node_len u8 | node | addr_len u8 | addr`.
//!
//! Names (node ids and `host:port` addresses) are UTF-8 of at most [`MAX_NAME_LEN`]
//! bytes. The checked constructors ([`NodeInfo::new`], [`OwnerHint::new`],
//! [`ClusterMap::new`]) refuse longer ones; the fields are public, so as a last resort the
//! encoders clip a longer name to its longest prefix of at most 255 bytes that ends on a
//! character boundary (it stays valid UTF-8 and the body stays well-formed).

use super::codec::{Cursor, Put};
use super::error::DecodeError;
use super::partition::{PartitionError, Partitioning};

/// The longest node id or address, in bytes (its length travels in one byte).
pub const MAX_NAME_LEN: usize = 255;

/// The most nodes a [`ClusterMap`] may list. It bounds a map: with [`MAX_PARTITIONS`]
/// partitions and every name at [`MAX_NAME_LEN`] bytes a map body is at most
/// `14 + 1024 × 512 + 4096 × 11` = 569 358 bytes.
///
/// [`MAX_PARTITIONS`]: crate::MAX_PARTITIONS
pub const MAX_NODES: u16 = 1024;

/// Size of one owner entry (`node u16 | state u8 | epoch u64`) on the wire.
pub const OWNER_ENTRY_LEN: usize = 11;

/// Why a map, a node or a hint breaks the invariants the wire format needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// The partition count is not a power of two in `1..=MAX_PARTITIONS`.
    #[error(transparent)]
    Partitions(#[from] PartitionError),
    /// `owners` does not have one entry per partition.
    #[error("{owners} owner entries for {partitions} partitions")]
    OwnerCount {
        /// The map's partition count.
        partitions: u32,
        /// The length of its owner list.
        owners: usize,
    },
    /// More than [`MAX_NODES`] nodes.
    #[error("{0} nodes, more than {MAX_NODES}")]
    TooManyNodes(usize),
    /// An owner entry names a node index the node list does not have.
    #[error("partition {partition} names node {node}, but the map lists {nodes} nodes")]
    UnknownNode {
        /// The partition.
        partition: u32,
        /// The node index it names.
        node: u16,
        /// The length of the node list.
        nodes: usize,
    },
    /// A node id or address longer than [`MAX_NAME_LEN`] bytes.
    #[error("{field} of {len} bytes is longer than {MAX_NAME_LEN}")]
    NameTooLong {
        /// Which name: `node id`, `node addr`, `hint node` or `hint addr`.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
    },
}

fn check_name(field: &'static str, s: &str) -> Result<(), MapError> {
    if s.len() > MAX_NAME_LEN {
        Err(MapError::NameTooLong { field, len: s.len() })
    } else {
        Ok(())
    }
}

/// Writes `len u8 | bytes`, clipping at a character boundary to at most 255 bytes.
fn put_name(out: &mut Vec<u8>, s: &str) {
    let mut n = s.len().min(MAX_NAME_LEN);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    out.put_u8(n as u8);
    out.extend_from_slice(&s.as_bytes()[..n]);
}

fn name(c: &mut Cursor<'_>, field: &'static str) -> Result<String, DecodeError> {
    let len = c.u8()?;
    let bytes = c.take(len.into())?;
    match core::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => Err(DecodeError::BadUtf8(field)),
    }
}

/// A cluster node as the map lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeInfo {
    /// The node's id (UTF-8, at most [`MAX_NAME_LEN`] bytes).
    pub id: String,
    /// Where clients reach it: `host:port` (UTF-8, at most [`MAX_NAME_LEN`] bytes).
    pub addr: String,
}

impl NodeInfo {
    /// A node; refuses an id or address longer than [`MAX_NAME_LEN`] bytes.
    pub fn new(id: impl Into<String>, addr: impl Into<String>) -> Result<NodeInfo, MapError> {
        let node = NodeInfo { id: id.into(), addr: addr.into() };
        node.check()?;
        Ok(node)
    }

    fn check(&self) -> Result<(), MapError> {
        check_name("node id", &self.id)?;
        check_name("node addr", &self.addr)
    }
}

/// Where a partition stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PartitionState {
    /// No node serves the partition now (its owner failed or it was never assigned).
    /// Wire byte 0.
    Unowned = 0,
    /// Its new owner accepts only `RECLAIM`s until the grace period ends. Wire byte 1.
    Grace = 1,
    /// Its owner grants locks. Wire byte 2.
    Serving = 2,
}

impl PartitionState {
    /// The wire byte.
    pub fn code(self) -> u8 {
        self as u8
    }

    fn from_code(b: u8) -> Result<Self, DecodeError> {
        match b {
            0 => Ok(PartitionState::Unowned),
            1 => Ok(PartitionState::Grace),
            2 => Ok(PartitionState::Serving),
            _ => Err(DecodeError::BadField(b.into(), "map.owner.state")),
        }
    }
}

/// Who owns one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartitionOwner {
    /// Index into [`ClusterMap::nodes`] of the owner; `None` (on the wire `0xffff`) if no
    /// owner is known.
    pub node: Option<u16>,
    /// Unowned, in its grace period, or serving.
    pub state: PartitionState,
    /// The partition's epoch (the etcd revision of its ownership key; 0 if never owned):
    /// the high half of the owner's fencing tokens.
    pub epoch: u64,
}

/// The body of a successful `MAP` response: who owns which partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMap {
    /// The etcd revision the map was read at; a larger revision is a newer map.
    pub revision: u64,
    /// The partition count (a power of two, at most [`MAX_PARTITIONS`](crate::MAX_PARTITIONS)).
    pub partitions: u32,
    /// The nodes (at most [`MAX_NODES`]); owner entries refer to them by index.
    pub nodes: Vec<NodeInfo>,
    /// One entry per partition, partition 0 first: exactly `partitions` entries.
    pub owners: Vec<PartitionOwner>,
}

impl ClusterMap {
    /// A map, checked ([`ClusterMap::check`]).
    pub fn new(
        revision: u64,
        partitioning: Partitioning,
        nodes: Vec<NodeInfo>,
        owners: Vec<PartitionOwner>,
    ) -> Result<ClusterMap, MapError> {
        let map = ClusterMap { revision, partitions: partitioning.count(), nodes, owners };
        map.check()?;
        Ok(map)
    }

    /// Checks what decoding requires: a valid partition count, one owner entry per
    /// partition, at most [`MAX_NODES`] nodes, node indexes that exist, names of at most
    /// [`MAX_NAME_LEN`] bytes. A decoded map always passes. A map that fails (built from
    /// the public fields) still encodes, but its peer cannot decode it — except for
    /// over-long names, which the encoder clips.
    pub fn check(&self) -> Result<(), MapError> {
        Partitioning::new(self.partitions)?;
        if self.owners.len() != self.partitions as usize {
            return Err(MapError::OwnerCount {
                partitions: self.partitions,
                owners: self.owners.len(),
            });
        }
        if self.nodes.len() > usize::from(MAX_NODES) {
            return Err(MapError::TooManyNodes(self.nodes.len()));
        }
        for n in &self.nodes {
            n.check()?;
        }
        for (p, o) in self.owners.iter().enumerate() {
            if let Some(node) = o.node {
                if usize::from(node) >= self.nodes.len() {
                    return Err(MapError::UnknownNode {
                        partition: p as u32,
                        node,
                        nodes: self.nodes.len(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The map's [`Partitioning`] (an error only for a map that fails [`check`](Self::check)).
    pub fn partitioning(&self) -> Result<Partitioning, PartitionError> {
        Partitioning::new(self.partitions)
    }

    /// The owner of partition `p` and its entry; `None` if `p` is out of range or no
    /// owner is known (or the entry names a node the list does not have).
    pub fn owner_of(&self, p: u32) -> Option<(&NodeInfo, &PartitionOwner)> {
        let owner = self.owners.get(usize::try_from(p).ok()?)?;
        let node = self.nodes.get(usize::from(owner.node?))?;
        Some((node, owner))
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.revision);
        out.put_u32(self.partitions);
        // More than u16::MAX nodes fails `check` and cannot decode anyway.
        out.put_u16(self.nodes.len() as u16);
        for n in &self.nodes {
            put_name(out, &n.id);
            put_name(out, &n.addr);
        }
        for o in &self.owners {
            out.put_u16(o.node.unwrap_or(u16::MAX));
            out.put_u8(o.state.code());
            out.put_u64(o.epoch);
        }
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self, DecodeError> {
        let revision = c.u64()?;
        let partitions = c.u32()?;
        if Partitioning::new(partitions).is_err() {
            return Err(DecodeError::BadField(partitions.into(), "map.partitions"));
        }
        let node_count = c.u16()?;
        if node_count > MAX_NODES {
            return Err(DecodeError::BadField(node_count.into(), "map.node_count"));
        }
        // Each node takes at least its two length bytes; bound the allocation by that.
        if usize::from(node_count) > c.remaining() / 2 {
            return Err(DecodeError::Truncated);
        }
        let mut nodes = Vec::with_capacity(node_count.into());
        for _ in 0..node_count {
            let id = name(c, "map.node.id")?;
            let addr = name(c, "map.node.addr")?;
            nodes.push(NodeInfo { id, addr });
        }
        if partitions as usize > c.remaining() / OWNER_ENTRY_LEN {
            return Err(DecodeError::Truncated);
        }
        let mut owners = Vec::with_capacity(partitions as usize);
        for _ in 0..partitions {
            let node = match c.u16()? {
                u16::MAX => None,
                i if i < node_count => Some(i),
                i => return Err(DecodeError::BadField(i.into(), "map.owner.node")),
            };
            let state = PartitionState::from_code(c.u8()?)?;
            let epoch = c.u64()?;
            owners.push(PartitionOwner { node, state, epoch });
        }
        Ok(ClusterMap { revision, partitions, nodes, owners })
    }
}

/// The body of a `NOT_OWNER` response: the partition's owner as the answering node
/// knows it. Empty strings mean unknown ([`OwnerHint::default`] is the unknown owner).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct OwnerHint {
    /// The owner's node id (UTF-8, at most [`MAX_NAME_LEN`] bytes; empty if unknown).
    pub node: String,
    /// Its `host:port` (UTF-8, at most [`MAX_NAME_LEN`] bytes; empty if unknown).
    pub addr: String,
}

impl OwnerHint {
    /// A hint; refuses a node id or address longer than [`MAX_NAME_LEN`] bytes.
    pub fn new(node: impl Into<String>, addr: impl Into<String>) -> Result<OwnerHint, MapError> {
        let hint = OwnerHint { node: node.into(), addr: addr.into() };
        check_name("hint node", &hint.node)?;
        check_name("hint addr", &hint.addr)?;
        Ok(hint)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_name(out, &self.node);
        put_name(out, &self.addr);
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self, DecodeError> {
        let node = name(c, "owner.node")?;
        let addr = name(c, "owner.addr")?;
        Ok(OwnerHint { node, addr })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip_hint(h: &OwnerHint) -> OwnerHint {
        let mut out = Vec::new();
        h.encode(&mut out);
        let mut c = Cursor::new(&out);
        let back = OwnerHint::decode(&mut c).unwrap();
        c.finish().unwrap();
        back
    }

    fn sample() -> ClusterMap {
        ClusterMap::new(
            9,
            Partitioning::new(2).unwrap(),
            vec![NodeInfo::new("a", "h:1").unwrap()],
            vec![
                PartitionOwner { node: Some(0), state: PartitionState::Serving, epoch: 5 },
                PartitionOwner { node: None, state: PartitionState::Unowned, epoch: 0 },
            ],
        )
        .unwrap()
    }

    #[test]
    fn constructors_refuse_long_names() {
        let long = "x".repeat(256);
        assert_eq!(
            NodeInfo::new(&long[..], "a"),
            Err(MapError::NameTooLong { field: "node id", len: 256 })
        );
        assert_eq!(
            OwnerHint::new("n", &long[..]),
            Err(MapError::NameTooLong { field: "hint addr", len: 256 })
        );
        assert!(NodeInfo::new(&long[..255], &long[..255]).is_ok());
    }

    #[test]
    fn encoders_clip_long_names_at_a_char_boundary() {
        // 127 two-byte characters = 254 bytes, then one more would pass 255.
        let wide = "é".repeat(200);
        let h = OwnerHint { node: wide.clone(), addr: "x".repeat(300) };
        let back = round_trip_hint(&h);
        assert_eq!(back.node, "é".repeat(127));
        assert_eq!(back.addr, "x".repeat(255));
        let mut m = sample();
        m.nodes[0].id = wide;
        let mut out = Vec::new();
        m.encode(&mut out);
        let back = ClusterMap::decode(&mut Cursor::new(&out)).unwrap();
        assert_eq!(back.nodes[0].id.len(), 254);
    }

    #[test]
    fn empty_hint_is_two_zero_bytes() {
        let mut out = Vec::new();
        OwnerHint::default().encode(&mut out);
        assert_eq!(out, [0, 0]);
        assert_eq!(round_trip_hint(&OwnerHint::default()), OwnerHint::default());
    }

    #[test]
    fn check_finds_each_broken_invariant() {
        assert!(sample().check().is_ok());
        let mut m = sample();
        m.partitions = 3;
        assert_eq!(m.check(), Err(MapError::Partitions(PartitionError::NotPowerOfTwo(3))));
        let mut m = sample();
        m.owners.pop();
        assert_eq!(m.check(), Err(MapError::OwnerCount { partitions: 2, owners: 1 }));
        let mut m = sample();
        m.owners[1].node = Some(1);
        assert_eq!(m.check(), Err(MapError::UnknownNode { partition: 1, node: 1, nodes: 1 }));
        let mut m = sample();
        m.nodes = vec![NodeInfo::default(); usize::from(MAX_NODES) + 1];
        assert_eq!(m.check(), Err(MapError::TooManyNodes(1025)));
        let mut m = sample();
        m.nodes[0].addr = "y".repeat(256);
        assert_eq!(m.check(), Err(MapError::NameTooLong { field: "node addr", len: 256 }));
    }

    #[test]
    fn broken_maps_do_not_decode() {
        let broken = |f: fn(&mut ClusterMap)| {
            let mut m = sample();
            f(&mut m);
            let mut out = Vec::new();
            m.encode(&mut out);
            let mut c = Cursor::new(&out);
            ClusterMap::decode(&mut c).and_then(|_| c.finish()).unwrap_err()
        };
        assert_eq!(broken(|m| m.partitions = 3), DecodeError::BadField(3, "map.partitions"));
        assert_eq!(broken(|m| m.partitions = 8192), DecodeError::BadField(8192, "map.partitions"));
        assert_eq!(
            broken(|m| m.owners[1].node = Some(1)),
            DecodeError::BadField(1, "map.owner.node")
        );
        assert_eq!(broken(|m| m.owners.pop().map(drop).unwrap()), DecodeError::Truncated);
        assert_eq!(
            broken(|m| m.owners.push(m.owners[0])),
            DecodeError::TrailingBytes(OWNER_ENTRY_LEN)
        );
        assert_eq!(
            broken(|m| m.nodes = vec![NodeInfo::default(); 1025]),
            DecodeError::BadField(1025, "map.node_count")
        );
    }

    #[test]
    fn bad_bytes_in_a_map() {
        let mut out = Vec::new();
        sample().encode(&mut out);
        // revision 8 | partitions 4 | node_count 2 | id_len 1 'a' | addr_len 3 "h:1" | owners
        let id_at = 8 + 4 + 2 + 1;
        let mut bad = out.clone();
        bad[id_at] = 0xff;
        assert_eq!(
            ClusterMap::decode(&mut Cursor::new(&bad)),
            Err(DecodeError::BadUtf8("map.node.id"))
        );
        let state_at = id_at + 1 + 1 + 3 + 2;
        let mut bad = out.clone();
        bad[state_at] = 3;
        assert_eq!(
            ClusterMap::decode(&mut Cursor::new(&bad)),
            Err(DecodeError::BadField(3, "map.owner.state"))
        );
        let mut bad = out;
        bad[state_at - 2..state_at].copy_from_slice(&0xfffeu16.to_le_bytes());
        assert_eq!(
            ClusterMap::decode(&mut Cursor::new(&bad)),
            Err(DecodeError::BadField(0xfffe, "map.owner.node"))
        );
    }

    #[test]
    fn owner_of() {
        let m = sample();
        let (node, owner) = m.owner_of(0).unwrap();
        assert_eq!((node.id.as_str(), owner.epoch), ("a", 5));
        assert!(m.owner_of(1).is_none());
        assert!(m.owner_of(2).is_none());
        assert!(m.owner_of(u32::MAX).is_none());
    }

    #[test]
    fn the_largest_map_fits_a_response() {
        let node = NodeInfo { id: "i".repeat(255), addr: "a".repeat(255) };
        let owner = PartitionOwner { node: Some(0), state: PartitionState::Serving, epoch: 1 };
        let m = ClusterMap::new(
            1,
            Partitioning::new(crate::MAX_PARTITIONS).unwrap(),
            vec![node; usize::from(MAX_NODES)],
            vec![owner; crate::MAX_PARTITIONS as usize],
        )
        .unwrap();
        let mut out = Vec::new();
        m.encode(&mut out);
        assert_eq!(out.len(), 569_358);
        assert!(out.len() + 18 <= crate::MAX_RESPONSE_FRAME as usize);
    }
}
