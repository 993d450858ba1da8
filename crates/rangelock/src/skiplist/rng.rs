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

/// A geometric(3/4) height in `1..=max`: a node reaches level `h + 1` with probability
/// `4^-h` (Pugh's recommended p = 1/4).
///
/// Compared with p = 1/2, a node has 4/3 levels on average instead of 2, so an insertion,
/// a release and an unlink each do a third fewer atomic RMWs (one link CAS, mark and snip
/// per level), while a search visits about as many nodes (`(1/p) log_{1/p} n` is `2 log2 n`
/// for both); and `max` levels index `4^max` nodes instead of `2^max`.
#[inline]
pub(crate) fn random_height(max: usize) -> usize {
    let bits = next_u64();
    (bits.trailing_ones() as usize / 2 + 1).min(max)
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
        // Three quarters of the nodes have height 1, 3/16 height 2, 3/64 height 3: loose
        // bounds, no flakiness.
        assert!(counts[0] > 70_000 && counts[0] < 80_000, "{counts:?}");
        assert!(counts[1] > 15_000 && counts[1] < 22_500, "{counts:?}");
        assert!(counts[2] > 3_000 && counts[2] < 6_500, "{counts:?}");
    }
}
