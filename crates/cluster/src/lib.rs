//! A partitioned, failover-safe `rangelock` cluster on etcd (DESIGN §6, `docs/CLUSTER.md`).
//!
//! The unit space is cut into P aligned partitions ([`rangelock_proto::Partitioning`]).
//! Each [`Node`] is a `rangelockd` server plus a manager that keeps the node's etcd lease
//! and its partitions' ownership keys ([`keys`]); a partition's epoch is the etcd
//! revision of its ownership key, and fencing tokens carry it in their high bits. We
//! write no consensus of our own: etcd decides who owns what, by transactions.
//!
//! * [`etcd`]: a small client over etcd's JSON gateway, and [`etcd::LocalEtcd`], a
//!   private etcd for tests, benchmarks and trying things on one machine;
//! * [`keys`]: the key layout and a parsed snapshot of it;
//! * [`balance`]: which partitions a node claims or gives up;
//! * [`node`]: the node and its manager (lease, self-fencing, claims, grace, moves);
//! * [`admin`]: what `rangelock cluster status|move|balance|reset` do;
//! * [`fencing`]: a reference fencing store, a resource that checks fencing tokens
//!   (`rangelock cluster fencing-store`), and its client.
//!
//! The server side of ownership (EPVS-protected checks, grace, reclaims, tokens) is
//! `rangelock_server::ownership`; the client side (splitting, redirects, reclaim, lost
//! guards) is `rangelock_client::cluster`.

pub mod admin;
pub mod balance;
pub mod etcd;
pub mod fencing;
pub mod keys;
pub mod node;

pub use node::{
    Node, NodeConfig, NodeError, DEFAULT_ETCD_TTL, DEFAULT_PARTITIONS, DEFAULT_REQUEUE,
};
