//! Per-thread randomness for node heights and a per-thread index for spreading threads
//! over pool shards and announcement slots. No global `rand()`, no shared RNG state.

use core::cell::Cell;

use crate::primitive::thread_local;

/// Counter handing out thread indices (a hint only; wrapping is harmless).
#[cfg(not(loom))]
static NEXT_INDEX: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[cfg(not(loom))]
thread_local! {
    /// xorshift64 state of this thread; 0 until first use.
    static STATE: Cell<u64> = const { Cell::new(0) };
}

#[cfg(loom)]
thread_local! {
    /// See the non-loom `STATE`.
    static STATE: Cell<u64> = Cell::new(0);
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's index; `usize::MAX` until first use.
    static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A small per-thread index (0, 1, 2, ... in order of first use), for spreading threads.
#[inline]
pub(crate) fn thread_index() -> usize {
    #[cfg(not(loom))]
    {
        INDEX.with(|i| {
            let mut v = i.get();
            if v == usize::MAX {
                v = NEXT_INDEX.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                i.set(v);
            }
            v
        })
    }
    // Loom executions must be deterministic: one shard, one start slot.
    #[cfg(loom)]
    0
}

/// The next value of this thread's xorshift64 generator.
#[inline]
fn next_u64() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            // Seed from the thread-local's address (distinct per live thread) and a constant;
            // under loom from the constant alone, so executions are deterministic.
            #[cfg(not(loom))]
            let salt = s as *const Cell<u64> as u64;
            #[cfg(loom)]
            let salt = 0;
            x = salt ^ 0x9E37_79B9_7F4A_7C15;
            if x == 0 {
                x = 1;
            }
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

/// A geometric(1/2) height in `1..=max`: height `h` with probability `2^-h`.
#[inline]
pub(crate) fn random_height(max: usize) -> usize {
    let bits = next_u64();
    (bits.trailing_ones() as usize + 1).min(max)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn heights_are_geometric_and_bounded() {
        let mut counts = [0usize; 8];
        for _ in 0..100_000 {
            let h = random_height(8);
            assert!((1..=8).contains(&h));
            counts[h - 1] += 1;
        }
        // Half the nodes have height 1, a quarter height 2: loose bounds, no flakiness.
        assert!(counts[0] > 40_000 && counts[0] < 60_000, "{counts:?}");
        assert!(counts[1] > 15_000 && counts[1] < 35_000, "{counts:?}");
    }
}
