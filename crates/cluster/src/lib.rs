//! A partitioned, failover-safe `rangelock` cluster on etcd (DESIGN §6, `docs/CLUSTER.md`).

pub mod etcd;
