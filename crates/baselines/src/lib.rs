//! Every system `rangelock` is measured against: the in-process range locks of the seeds,
//! all behind the raw interface of the product's own core ([`RawRangeLock`]), so every
//! benchmark and checker drives them and `RangeLock` through the same calls; and, in
//! [`peers`], the lock systems outside the process (DSLR and Citron over shared memory and
//! over Redis, fcntl OFD locks).
//!
//! Not a product: this crate is never published, and the raw interface it builds on is
//! `rangelock`'s unstable `internals` feature.
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
//! it costs. Wrap any of them in [`Lock`] for a safe API:
//!
//! ```
//! use rangelock::internals::Lock;
//! use rangelock_baselines::KernelTree;
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
/// The product's spinlock (`rangelock`'s pool-shard lock), shared by the kernel-style
/// baselines.
pub(crate) mod spin {
    pub(crate) use rangelock::internals::SpinLock;
}
mod sync;

pub mod peers;

pub use global_mutex::{GlobalMutex, GlobalMutexToken};
pub use kernel_tree::{KernelTree, KernelTreeToken};
pub use kogan_list::{KoganList, KoganToken};
pub use segments::{Segments, SegmentsToken};
pub use song_skiplist::{SongSkipList, SongToken, MAX_LEVEL};

pub use rangelock::internals::{Lock, RawRangeLock};
