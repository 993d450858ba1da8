//! The lock table the engines drive, and the commands it executes.

mod cache;
mod command;
mod ended;
mod handover;
mod interval_tree;
mod lock_table;
mod partitions;

pub use cache::{CacheConfig, CachePolicy};
pub use command::{Command, ReplySink, ReplyTo, StatsKind};
pub(crate) use ended::Ended;
pub use ended::RELEASED_MEMORY;
pub(crate) use interval_tree::{Handle, IntervalTree};
pub use lock_table::{LockTable, TableLimits};
pub(crate) use partitions::TablePartitions;
pub use partitions::{HandoverLock, PartitionChange};
