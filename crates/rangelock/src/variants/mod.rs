//! Baseline range locks for the evaluation, all behind [`RawRangeLock`](crate::RawRangeLock).
//!
//! | variant | `NAME` | structure | waiting |
//! |---|---|---|---|
//! | [`KoganList`] | `kogan-list` | lock-free sorted list, atomic mark, epoch-recycled nodes | spin, then yield |
//! | [`SongSkipList`] | `song-skiplist` | sequential skip list under one spinlock | retry: spin, then yield |
//! | [`KernelTree`] | `kernel-tree` | augmented interval tree (treap) + spinlock, blocking counts, FIFO | spin, then park |
//! | [`Segments`] | `segments` | fixed segments, one reader-writer word each | spin, then yield |
//! | [`GlobalMutex`] | `global-mutex` | `Mutex<Vec<range>>` + condvar | condvar |
//!
//! Each module documents its algorithm, its source in the seeds, its invariants and what
//! it costs. Wrap any of them in [`Lock`](crate::Lock) for the safe API:
//!
//! ```
//! use rangelock::variants::KernelTree;
//! use rangelock::Lock;
//!
//! let lock = Lock::from_raw(KernelTree::new());
//! let a = lock.lock(0..10).unwrap();
//! assert!(lock.try_lock(5..15).is_err());
//! drop(a);
//! assert!(lock.try_lock(5..15).is_ok());
//! ```

pub mod global_mutex;
pub mod kernel_tree;
pub mod kogan_list;
mod reclaim;
pub mod segments;
pub mod song_skiplist;
pub(crate) mod spin;
mod sync;

pub use global_mutex::{GlobalMutex, GlobalMutexToken};
pub use kernel_tree::{KernelTree, KernelTreeToken};
pub use kogan_list::{KoganList, KoganToken};
pub use segments::{Segments, SegmentsToken};
pub use song_skiplist::{SongSkipList, SongToken, MAX_LEVEL};
