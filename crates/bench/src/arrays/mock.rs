//! `latch-free-mock`: the paper's unrealistic upper bound (seed 2 §6.1).
//!
//! A fixed buffer of [`ArrayConfig::mock_capacity`] atomics, allocated up front, and an
//! atomic element count. `read`/`write` are one relaxed atomic access, `push` is one
//! `fetch_add` plus one store. There is **no resize protection at all**: this is only a
//! correct array as long as it never needs to grow, which is why it is given a large
//! preallocated capacity (zeroed pages, so untouched capacity costs no memory). Pushes past
//! the capacity wrap around and overwrite old elements — no real array may do that; the
//! mock does it only so a long push-heavy run keeps measuring the same per-operation cost
//! instead of failing. Use it as the "cost of the array operations alone" line, never as a
//! competitor.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::latched::SharedSession;
use super::{zeroed_atomics, ArrayConfig, ArraySession, BenchArray};

/// See the [module docs](self).
#[derive(Debug)]
pub struct LatchFreeMock {
    buf: Box<[AtomicU64]>,
    /// `buf.len() - 1`; the capacity is a power of two so wrapping is a mask.
    mask: usize,
    /// Elements pushed so far (may exceed the capacity: then pushes wrap).
    count: AtomicUsize,
}

impl BenchArray for LatchFreeMock {
    const NAME: &'static str = "latch-free-mock";
    type Session<'a> = SharedSession<'a, Self>;

    fn new(cfg: &ArrayConfig) -> Self {
        let cap = cfg.mock_capacity.max(cfg.initial_len).max(1).next_power_of_two();
        LatchFreeMock {
            buf: zeroed_atomics(cap),
            mask: cap - 1,
            count: AtomicUsize::new(cfg.initial_len),
        }
    }

    fn session(&self) -> Self::Session<'_> {
        SharedSession(self)
    }
}

impl ArraySession for SharedSession<'_, LatchFreeMock> {
    #[inline]
    fn len(&mut self) -> usize {
        // Relaxed: an index hint; elements are independent atomics.
        self.0.count.load(Relaxed).min(self.0.buf.len())
    }

    #[inline]
    fn read(&mut self, index: usize) -> Option<u64> {
        if index < self.len() {
            // Relaxed: no ordering between elements is promised.
            Some(self.0.buf[index].load(Relaxed))
        } else {
            None
        }
    }

    #[inline]
    fn write(&mut self, index: usize, value: u64) -> bool {
        if index < self.len() {
            // Relaxed: as in `read`.
            self.0.buf[index].store(value, Relaxed);
            true
        } else {
            false
        }
    }

    #[inline]
    fn push(&mut self, value: u64) -> usize {
        // Relaxed: the count only hands out distinct positions.
        let pos = self.0.count.fetch_add(1, Relaxed);
        // Relaxed: as in `read`. Wraps past the capacity (see the module docs).
        self.0.buf[pos & self.0.mask].store(value, Relaxed);
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrays::tests::{concurrent_no_lost_updates, sequential_model};

    #[test]
    fn mock_sequential_model() {
        sequential_model::<LatchFreeMock>();
    }

    #[test]
    fn mock_concurrent_within_capacity() {
        concurrent_no_lost_updates::<LatchFreeMock>(ArrayConfig {
            mock_capacity: 1 << 16,
            ..ArrayConfig::default()
        });
    }

    #[test]
    fn mock_wraps_past_capacity() {
        let arr = LatchFreeMock::new(&ArrayConfig { mock_capacity: 4, ..ArrayConfig::default() });
        let mut s = arr.session();
        for v in 0..6 {
            assert_eq!(s.push(v), v as usize);
        }
        assert_eq!(s.len(), 4, "length is capped at the capacity");
        assert_eq!(s.read(0), Some(4), "push 4 wrapped onto index 0");
    }
}
