//! Resizable arrays on EPVS (seed paper Figs. 3–6): several threads push, read and write
//! while the array grows; the simple array pauses everyone for each copy, the two-phase
//! array keeps reads and pushes going during the copy.
//!
//! Run with `cargo run -p epvs --example resizable_array`; `cargo test -p epvs` runs the
//! tests below.

use epvs::array::{ResizableArray, TwoPhaseArray, COPYING};
use std::thread;

/// The operations both arrays offer, so one driver exercises both.
trait Array: Sync {
    fn push(&self, v: u64) -> usize;
    fn read(&self, i: usize) -> Option<u64>;
    fn write(&self, i: usize, v: u64) -> bool;
    fn len(&self) -> usize;
    fn resizes(&self) -> u64;
}

impl Array for ResizableArray {
    fn push(&self, v: u64) -> usize {
        ResizableArray::push(self, v)
    }
    fn read(&self, i: usize) -> Option<u64> {
        ResizableArray::read(self, i)
    }
    fn write(&self, i: usize, v: u64) -> bool {
        ResizableArray::write(self, i, v).is_ok()
    }
    fn len(&self) -> usize {
        ResizableArray::len(self)
    }
    fn resizes(&self) -> u64 {
        self.epvs().state().version()
    }
}

impl Array for TwoPhaseArray {
    fn push(&self, v: u64) -> usize {
        TwoPhaseArray::push(self, v)
    }
    fn read(&self, i: usize) -> Option<u64> {
        TwoPhaseArray::read(self, i)
    }
    fn write(&self, i: usize, v: u64) -> bool {
        TwoPhaseArray::write(self, i, v).is_ok()
    }
    fn len(&self) -> usize {
        TwoPhaseArray::len(self)
    }
    fn resizes(&self) -> u64 {
        self.epvs().state().version()
    }
}

/// `threads` threads each push `per_thread` tagged values, re-read one of their earlier
/// values after every push, and finally overwrite their own slots with `value + 1`.
/// Returns every value in the array, sorted.
fn drive<A: Array>(array: &A, threads: u64, per_thread: u64) -> Vec<u64> {
    thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut mine = Vec::with_capacity(per_thread as usize);
                for i in 0..per_thread {
                    let v = (t << 32) | i;
                    mine.push((array.push(v), v));
                    let (idx, val) = mine[(i as usize).wrapping_mul(31) % mine.len()];
                    assert_eq!(array.read(idx), Some(val), "a pushed value moved or vanished");
                }
                for (idx, v) in mine {
                    assert!(array.write(idx, v + 1));
                }
            });
        }
    });
    let mut all: Vec<u64> = (0..array.len()).map(|i| array.read(i).unwrap()).collect();
    all.sort_unstable();
    all
}

fn expected(threads: u64, per_thread: u64) -> Vec<u64> {
    let mut v: Vec<u64> =
        (0..threads).flat_map(|t| (0..per_thread).map(move |i| ((t << 32) | i) + 1)).collect();
    v.sort_unstable();
    v
}

#[cfg_attr(test, allow(dead_code))]
fn main() {
    let simple = ResizableArray::new();
    let values = drive(&simple, 4, 50_000);
    assert_eq!(values, expected(4, 50_000));
    println!("simple array: {} elements, {} resizes", simple.len(), simple.resizes());

    let two_phase = TwoPhaseArray::new();
    let values = drive(&two_phase, 4, 50_000);
    assert_eq!(values, expected(4, 50_000));
    println!(
        "two-phase array: {} elements, {} resizes (copy phase = {COPYING})",
        two_phase.len(),
        two_phase.resizes()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_array_keeps_every_push() {
        let a = ResizableArray::with_capacity(1);
        assert_eq!(drive(&a, 3, 3000), expected(3, 3000));
        assert!(a.resizes() >= 10);
    }

    #[test]
    fn two_phase_array_keeps_every_push() {
        let a = TwoPhaseArray::with_capacity(1);
        assert_eq!(drive(&a, 3, 3000), expected(3, 3000));
        assert!(a.resizes() >= 10);
        assert!(a.epvs().state().is_rest());
    }
}
