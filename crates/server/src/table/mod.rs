//! The lock table the engines drive, and the commands it executes.

mod command;
mod interval_tree;
mod lock_table;

pub use command::{Command, ReplySink, ReplyTo};
pub use lock_table::{LockTable, TableLimits, RELEASED_MEMORY};
