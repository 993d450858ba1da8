//! [`Slots`]: a fixed-size run of `AtomicU64` elements, the storage of both arrays.

use crate::primitive::AtomicU64;
use std::ops::Deref;
use std::sync::atomic::Ordering::Relaxed;

/// A fixed-size, zero-initialised run of `AtomicU64` slots.
#[derive(Debug)]
pub(super) struct Slots(Box<[AtomicU64]>);

impl Slots {
    pub(super) fn new(len: usize) -> Slots {
        Slots((0..len).map(|_| AtomicU64::new(0)).collect())
    }

    /// A new run of `len` slots whose prefix is a copy of `self`.
    pub(super) fn grown(&self, len: usize) -> Slots {
        let new = Slots::new(len.max(self.len()));
        new.copy_from(self, 0, self.len());
        new
    }

    /// Copies `src[start..end]` into the same positions of `self`. Relaxed: element
    /// values carry no other data; visibility to later readers comes from the EPVS
    /// transition that publishes the new run.
    pub(super) fn copy_from(&self, src: &Slots, start: usize, end: usize) {
        for (d, s) in self[start..end].iter().zip(&src[start..end]) {
            d.store(s.load(Relaxed), Relaxed);
        }
    }
}

impl Deref for Slots {
    type Target = [AtomicU64];
    fn deref(&self) -> &[AtomicU64] {
        &self.0
    }
}
