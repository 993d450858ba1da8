//! `RangeLock` against a sequential model: random single-threaded sequences of try-locks
//! and unlocks in both modes must succeed exactly when the model (a list of held ranges)
//! says the range is free for that mode. Single-threaded, so `try_lock` has no excuse for a
//! spurious failure.
#![cfg(not(loom))]

use std::ops::Range;

use rangelock::internals::overlaps;
use rangelock::{LockError, Mode, RangeLock};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A range over a domain of `units` with edges at 0 and `u64::MAX` mixed in.
fn random_range(rng: &mut XorShift, units: u64) -> Range<u64> {
    let r = rng.next();
    match r % 16 {
        0 => 0..1 + (r >> 8) % 4,
        1 => u64::MAX - 1 - (r >> 8) % 4..u64::MAX,
        2 => 0..u64::MAX,
        _ => {
            let start = (r >> 8) % units;
            start..start + 1 + (r >> 24) % 6
        }
    }
}

fn run(seed: u64, height: usize, steps: usize) {
    let lock = RangeLock::builder().max_height(height).build();
    let mut rng = XorShift(seed);
    let mut held = Vec::new();
    for step in 0..steps {
        if !held.is_empty() && rng.next() % 3 == 0 {
            let i = (rng.next() % held.len() as u64) as usize;
            drop(held.swap_remove(i));
            continue;
        }
        let range = random_range(&mut rng, 64);
        let mode = if rng.next() % 3 == 0 { Mode::Shared } else { Mode::Exclusive };
        let free = held.iter().all(|g: &rangelock::RangeGuard<'_>| {
            !overlaps(&g.range(), &range) || g.mode().compatible(mode)
        });
        match lock.try_lock_mode(range.clone(), mode) {
            Ok(guard) => {
                assert!(free, "seed {seed} step {step}: {range:?} {mode:?} granted over {held:?}");
                held.push(guard);
            }
            Err(LockError::WouldBlock) => {
                assert!(
                    !free,
                    "seed {seed} step {step}: {range:?} {mode:?} refused, held {held:?}"
                );
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    drop(held);
    let _all = lock.try_lock(0..u64::MAX).expect("everything released");
}

#[test]
fn skiplist_matches_sequential_model() {
    for seed in 1..=40u64 {
        run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1 + (seed as usize % 12), 3000);
    }
}
