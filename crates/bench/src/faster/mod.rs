//! The FASTER case studies of seed 2 §5, as library code the `epvs-ownership` and
//! `epvs-checkpoint` suites drive:
//!
//! - [`ownership`]: a sharded key-value store whose shards validate bucket ownership
//!   (§5.1, Fig. 8), with `no-validation`, `rwlock-validation` and `epvs-validation`, and
//!   a counter of operations executed on a shard that did not own their bucket;
//! - [`checkpoint`]: an in-place key-value store with consistent-cut checkpoints (§5.2),
//!   checkpointed by the two-state EPVS machine of Fig. 10 (`epvs`) or by FASTER's
//!   CPR phases and per-thread markers (`cpr-epoch`, Fig. 9), with a verifier.
//!
//! `crates/epvs/examples/ownership_map.rs` and `checkpoint_kv.rs` remain the minimal,
//! dependency-free demonstrations of the same two patterns.

pub mod checkpoint;
pub mod ownership;
