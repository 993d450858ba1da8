//! The shared-memory peers' `AtomicWords` over loom atomics, for their loom models
//! (`dslr_loom.rs`, `citron_loom.rs`): the models run the real clients, through the same
//! trait and so the same memory orderings, on these words.

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU64;
use loom::sync::Arc;
use rangelock_baselines::peers::dslr_shm::{AtomicWord, AtomicWords};
use std::sync::atomic::Ordering;

/// A loom word (a newtype: the trait and loom's type are both foreign here).
pub struct Word(pub AtomicU64);

impl AtomicWord for Word {
    fn fetch_add(&self, delta: u64, order: Ordering) -> u64 {
        self.0.fetch_add(delta, order)
    }

    fn fetch_sub(&self, delta: u64, order: Ordering) -> u64 {
        self.0.fetch_sub(delta, order)
    }

    fn load(&self, order: Ordering) -> u64 {
        self.0.load(order)
    }

    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.0.compare_exchange(current, new, success, failure)
    }
}

/// The lock's words and the data the model's holders touch (one cell per segment for
/// DSLR, per probe unit for citron-like).
pub struct Shared {
    /// The words, in the peer's layout order.
    pub words: Vec<Word>,
    /// Written by exclusive holders, read by shared ones: loom reports unordered pairs.
    pub data: Vec<UnsafeCell<u64>>,
}

/// One client's view: the shared words.
pub struct LoomWords(pub Arc<Shared>);

impl AtomicWords for LoomWords {
    type Word = Word;

    fn word(&self, i: usize) -> &Word {
        &self.0.words[i]
    }

    fn backoff(&mut self, _round: u32) {
        loom::thread::yield_now();
    }
}
