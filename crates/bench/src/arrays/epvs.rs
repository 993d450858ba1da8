//! The EPVS arrays of `epvs::array`, as benchmark variants: `epvs`, `epvs-pinned` and
//! `epvs-2phase` (seed 2 §3, Figs. 3–6; §6.1 calls them simple-EPVS, EPVS-pinned and
//! 2-phase-EPVS).
//!
//! - `epvs`: [`ResizableArray`], one protected region (enter + leave) per operation;
//! - `epvs-pinned`: the same array, but each thread keeps one region open for its whole
//!   run and refreshes it every [`ArrayConfig::pin_refresh_every`] operations (resizes wait
//!   for that refresh; the array's `*_with` operations refresh on their own while they
//!   wait for a resize);
//! - `epvs-2phase`: [`TwoPhaseArray`], one region per operation; reads, writes and
//!   pushes go on while the array copies (a write into a chunk not yet copied copies it).
//!
//! A non-zero [`ArrayConfig::resize_delay`] (the seed's slow resize, Fig. 13) is slept in
//! the arrays' copy hook: inside the resize critical section for `epvs` and `epvs-pinned`
//! (every operation waits), by the thread finishing the copy for `epvs-2phase` (the
//! other threads go on meanwhile, until their pushes fill the new run's upper half).

use epvs::array::{ResizableArray, TwoPhaseArray};
use epvs::epoch::{Announce, LightEpoch};
use epvs::version::{Epvs, EpvsGuard};

use super::latched::SharedSession;
use super::{ArrayConfig, ArraySession, BenchArray};

/// `epvs`: see the [module docs](self).
#[derive(Debug)]
pub struct EpvsSimpleArray(ResizableArray);

/// `epvs-pinned`: see the [module docs](self).
#[derive(Debug)]
pub struct EpvsPinnedArray {
    array: ResizableArray,
    refresh_every: u32,
}

/// `epvs-2phase`: see the [module docs](self).
#[derive(Debug)]
pub struct EpvsTwoPhaseArray(TwoPhaseArray);

/// Builds an array with `cfg.initial_len` zeroes, pushed inside one region.
macro_rules! filled {
    ($ty:ty, $cfg:expr) => {{
        let delay = $cfg.resize_delay;
        let array = if let Some(slots) = $cfg.table_slots {
            assert!(delay.is_zero(), "a resize delay on a chosen table size is not supported");
            let epoch = LightEpoch::with_options(slots, Announce::Asymmetric);
            <$ty>::with_epvs($cfg.initial_capacity(), Epvs::with_epoch(epoch))
        } else if delay.is_zero() {
            <$ty>::with_capacity($cfg.initial_capacity())
        } else {
            <$ty>::with_copy_hook($cfg.initial_capacity(), move || std::thread::sleep(delay))
        };
        {
            let mut g = array.enter();
            for _ in 0..$cfg.initial_len {
                array.push_with(&mut g, 0);
            }
        }
        array
    }};
}

/// The `BenchArray` and `ArraySession` impls of an array that enters and leaves a region
/// per operation (`epvs`, `epvs-2phase`): both library arrays have the same operations.
macro_rules! per_op_array {
    ($wrapper:ident, $array:ty, $name:literal) => {
        impl BenchArray for $wrapper {
            const NAME: &'static str = $name;
            type Session<'a> = SharedSession<'a, Self>;

            fn new(cfg: &ArrayConfig) -> Self {
                $wrapper(filled!($array, cfg))
            }

            fn session(&self) -> Self::Session<'_> {
                SharedSession(self)
            }
        }

        impl ArraySession for SharedSession<'_, $wrapper> {
            #[inline]
            fn len(&mut self) -> usize {
                self.0 .0.len()
            }
            #[inline]
            fn read(&mut self, index: usize) -> Option<u64> {
                self.0 .0.read(index)
            }
            #[inline]
            fn write(&mut self, index: usize, value: u64) -> bool {
                self.0 .0.write(index, value).is_ok()
            }
            #[inline]
            fn push(&mut self, value: u64) -> usize {
                self.0 .0.push(value)
            }
        }
    };
}

per_op_array!(EpvsSimpleArray, ResizableArray, "epvs");
per_op_array!(EpvsTwoPhaseArray, TwoPhaseArray, "epvs-2phase");

/// A thread's open region on an [`EpvsPinnedArray`].
#[derive(Debug)]
pub struct PinnedSession<'a> {
    array: &'a ResizableArray,
    guard: EpvsGuard<'a>,
    since_refresh: u32,
    refresh_every: u32,
}

impl PinnedSession<'_> {
    /// Counts one operation; refreshes the region every `refresh_every` operations.
    #[inline]
    fn tick(&mut self) {
        self.since_refresh += 1;
        if self.since_refresh >= self.refresh_every {
            self.since_refresh = 0;
            self.guard.refresh();
        }
    }
}

impl BenchArray for EpvsPinnedArray {
    const NAME: &'static str = "epvs-pinned";
    type Session<'a> = PinnedSession<'a>;

    fn new(cfg: &ArrayConfig) -> Self {
        EpvsPinnedArray {
            array: filled!(ResizableArray, cfg),
            refresh_every: cfg.pin_refresh_every.max(1),
        }
    }

    fn session(&self) -> PinnedSession<'_> {
        PinnedSession {
            array: &self.array,
            guard: self.array.enter(),
            since_refresh: 0,
            refresh_every: self.refresh_every,
        }
    }
}

impl ArraySession for PinnedSession<'_> {
    #[inline]
    fn len(&mut self) -> usize {
        self.array.len()
    }
    #[inline]
    fn read(&mut self, index: usize) -> Option<u64> {
        self.tick();
        self.array.read_with(&self.guard, index)
    }
    #[inline]
    fn write(&mut self, index: usize, value: u64) -> bool {
        self.tick();
        self.array.write_with(&mut self.guard, index, value).is_ok()
    }
    #[inline]
    fn push(&mut self, value: u64) -> usize {
        self.tick();
        self.array.push_with(&mut self.guard, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrays::tests::{concurrent_no_lost_updates, sequential_model};

    #[test]
    fn epvs_sequential_model() {
        sequential_model::<EpvsSimpleArray>();
        sequential_model::<EpvsPinnedArray>();
        sequential_model::<EpvsTwoPhaseArray>();
    }

    #[test]
    fn epvs_concurrent_resizes_lose_nothing() {
        concurrent_no_lost_updates::<EpvsSimpleArray>(ArrayConfig::default());
        concurrent_no_lost_updates::<EpvsPinnedArray>(ArrayConfig::default());
        concurrent_no_lost_updates::<EpvsTwoPhaseArray>(ArrayConfig::default());
    }

    #[test]
    fn pinned_with_refresh_every_op() {
        concurrent_no_lost_updates::<EpvsPinnedArray>(ArrayConfig {
            pin_refresh_every: 1,
            ..ArrayConfig::default()
        });
    }

    #[test]
    fn slow_resizes_lose_nothing() {
        let slow = ArrayConfig {
            resize_delay: std::time::Duration::from_millis(2),
            ..ArrayConfig::default()
        };
        assert!(EpvsSimpleArray::supports(&slow));
        concurrent_no_lost_updates::<EpvsSimpleArray>(slow.clone());
        concurrent_no_lost_updates::<EpvsPinnedArray>(slow.clone());
        concurrent_no_lost_updates::<EpvsTwoPhaseArray>(slow);
    }
}
