//! What the range-lock suites share: the lock abstraction they drive ([`RangeTarget`]),
//! the shared memory they write under the locks ([`SharedRegion`]) and the thread
//! partitioning of ranges ([`partition`]).

mod announce_floor;
mod claim_floor;
pub mod loops;
mod region;
mod shared_floor;
mod target;

pub use announce_floor::{AnnounceFloor, AnnounceHeld, SeatOf};
pub use claim_floor::{ClaimFloor, ClaimHeld};
pub use region::SharedRegion;
pub use shared_floor::SharedFloor;
pub use target::{holds_disjoint, RangeTarget, RmwFloor, Unlocked, Unshared};

use crate::harness::SplitMix64;

/// Bytes written per range by W1/W2/held (the thesis's 1 KB memset).
pub const RANGE_BYTES: u64 = 1024;

/// The indices `0..n` that thread `index` of `threads` works on: a contiguous share of
/// `0..n`, shuffled with a per-thread seed, so threads never touch each other's ranges and
/// each walks its own in random order.
pub fn partition(n: u64, threads: usize, index: usize) -> Vec<u64> {
    let t = threads.max(1) as u64;
    let i = index as u64;
    let (lo, hi) = (n * i / t, n * (i + 1) / t);
    let mut v: Vec<u64> = (lo..hi).collect();
    SplitMix64::new(0x5eed ^ (i << 32) ^ t).shuffle(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_disjoint_and_cover_everything() {
        let mut all: Vec<u64> = (0..3).flat_map(|i| partition(100, 3, i)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
        assert_ne!(partition(100, 1, 0), (0..100).collect::<Vec<_>>(), "shuffled");
    }
}
