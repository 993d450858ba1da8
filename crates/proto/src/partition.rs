//! How a cluster cuts the unit space `u64` into partitions.
//!
//! A cluster has `P = 2^b` aligned partitions (`1 <= P <=` [`MAX_PARTITIONS`]): partition
//! `p` holds the units whose top `b` bits are `p`, that is `[p << (64 - b), (p + 1) << (64 -
//! b))`. The last partition ends at `u64::MAX`, which no lock covers: ranges are
//! `[start, end)` with `end <= u64::MAX`, so the unit `u64::MAX` is never lockable.
//!
//! A lock lies in one partition; a client splits a range that spans several
//! ([`Partitioning::split`]) and locks each piece at the partition's owner. A server
//! answers a range that spans several with `CROSSES_PARTITION`, whose value is
//! [`Partitioning::end`] of the range's first partition
//! ([`Partitioning::partition_of_range`] computes both).
//!
//! # Named resources
//!
//! A named resource's units are placed differently (`docs/design/names.md`, "Cluster
//! placement"): its unit space is cut into *stripes* of `2^`[`NAME_STRIPE_SHIFT`] units,
//! and stripe `k` of the name `n` lies in partition `(h(n) + k) mod P`, where
//! `h(n)` = [`name_hash`] (the first 8 bytes of SHA-256(n), big-endian). Many names
//! spread over the partitions by their hash; one hot name's ranges walk the partitions
//! stripe by stripe. A named lock lies in one stripe: a client splits a named range at
//! stripe boundaries ([`Partitioning::split_named`]), and a server answers a named range
//! that crosses one `CROSSES_PARTITION` with the next stripe's start
//! ([`Partitioning::named_partition_of_range`]). With one partition nothing is split.

use core::iter::FusedIterator;

use sha2::{Digest, Sha256};

/// The largest partition count a cluster may have (`2^12`).
pub const MAX_PARTITIONS: u32 = 4096;

/// `log2` of the units in a stripe of a named resource (see the module docs): stripes of
/// `2^24` units. A constant of the protocol for now (every node and client must agree).
pub const NAME_STRIPE_SHIFT: u32 = 24;

/// The placement hash of a resource name: the first 8 bytes of its SHA-256, big-endian.
/// Stable across versions and languages (the Python client computes the same).
pub fn name_hash(name: &[u8]) -> u64 {
    let digest = Sha256::digest(name);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The stripe of a named resource that holds `unit`.
#[inline]
fn stripe(unit: u64) -> u64 {
    unit >> NAME_STRIPE_SHIFT
}

/// One past the last unit of the stripe that holds `unit` (`u64::MAX` for the last).
#[inline]
fn stripe_end(unit: u64) -> u64 {
    (stripe(unit) + 1).checked_shl(NAME_STRIPE_SHIFT).filter(|&e| e != 0).unwrap_or(u64::MAX)
}

/// Why a partition count is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// The count is 0 or not a power of two.
    #[error("partition count {0} is not a power of two")]
    NotPowerOfTwo(u32),
    /// The count is above [`MAX_PARTITIONS`].
    #[error("partition count {0} exceeds the maximum of {MAX_PARTITIONS}")]
    TooMany(u32),
}

/// A partition count `P = 2^bits` (`1 ..=` [`MAX_PARTITIONS`]) and the math that maps
/// units to partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Partitioning {
    bits: u8,
}

impl Partitioning {
    /// `count` partitions; `count` must be a power of two in `1..=MAX_PARTITIONS`.
    pub fn new(count: u32) -> Result<Partitioning, PartitionError> {
        if !count.is_power_of_two() {
            return Err(PartitionError::NotPowerOfTwo(count));
        }
        if count > MAX_PARTITIONS {
            return Err(PartitionError::TooMany(count));
        }
        Ok(Partitioning { bits: count.trailing_zeros() as u8 })
    }

    /// The number of partitions.
    #[inline]
    pub fn count(self) -> u32 {
        1 << self.bits
    }

    /// The partition that holds `unit` (its top `bits` bits; always 0 with one
    /// partition).
    #[inline]
    pub fn of(self, unit: u64) -> u32 {
        if self.bits == 0 {
            0
        } else {
            (unit >> (64 - u32::from(self.bits))) as u32
        }
    }

    /// The first unit of partition `p`.
    ///
    /// # Panics
    ///
    /// If `p >= self.count()`.
    #[inline]
    pub fn start(self, p: u32) -> u64 {
        assert!(p < self.count(), "partition {p} out of 0..{}", self.count());
        if self.bits == 0 {
            0
        } else {
            u64::from(p) << (64 - u32::from(self.bits))
        }
    }

    /// One past the last unit of partition `p`: the next partition's start, or `u64::MAX`
    /// for the last partition (the unit `u64::MAX` is never lockable).
    ///
    /// # Panics
    ///
    /// If `p >= self.count()`.
    #[inline]
    pub fn end(self, p: u32) -> u64 {
        assert!(p < self.count(), "partition {p} out of 0..{}", self.count());
        if p + 1 == self.count() {
            u64::MAX
        } else {
            self.start(p + 1)
        }
    }

    /// The partition of the range `[start, end)` if it lies in one, else `Err` with the
    /// first unit of the next partition: where the range must be split, the value of a
    /// `CROSSES_PARTITION` answer. Meant for `start < end`; for an empty or inverted range
    /// it answers `Ok(self.of(start))`.
    #[inline]
    pub fn partition_of_range(self, start: u64, end: u64) -> Result<u32, u64> {
        let p = self.of(start);
        let p_end = self.end(p);
        if end > p_end {
            Err(p_end)
        } else {
            Ok(p)
        }
    }

    /// The pieces of `[start, end)` cut at partition boundaries, in ascending partition
    /// order: they are non-empty, contiguous, each inside one partition, and together cover
    /// the range exactly. Meant for `start < end`; an empty or inverted range yields no
    /// pieces.
    pub fn split(self, start: u64, end: u64) -> Split {
        Split { partitioning: self, next: start, end }
    }

    /// The partition that holds `unit` of the name whose [`name_hash`] is `name_hash`:
    /// `(name_hash + (unit >> NAME_STRIPE_SHIFT)) mod P`.
    #[inline]
    pub fn partition_of_named(self, name_hash: u64, unit: u64) -> u32 {
        // P divides 2^64, so the wrapping sum mod P is the sum mod P.
        (name_hash.wrapping_add(stripe(unit)) & u64::from(self.count() - 1)) as u32
    }

    /// [`Partitioning::partition_of_range`] for a named resource: the partition of
    /// `[start, end)` of the name hashed `name_hash` if the range lies in one stripe (or
    /// the cluster has one partition), else `Err` with the next stripe's first unit.
    #[inline]
    pub fn named_partition_of_range(
        self,
        name_hash: u64,
        start: u64,
        end: u64,
    ) -> Result<u32, u64> {
        let p = self.partition_of_named(name_hash, start);
        let next = stripe_end(start);
        if self.bits != 0 && end > next {
            Err(next)
        } else {
            Ok(p)
        }
    }

    /// The pieces of `[start, end)` of the name hashed `name_hash`, cut at stripe
    /// boundaries (none with one partition), in ascending unit order: non-empty,
    /// contiguous, each inside one stripe and so one partition, together covering the
    /// range exactly. A range over `k` stripes has `k` pieces (the caller bounds `k`).
    /// An empty or inverted range yields no pieces.
    pub fn split_named(self, name_hash: u64, start: u64, end: u64) -> SplitNamed {
        SplitNamed { partitioning: self, name_hash, next: start, end }
    }
}

/// Iterator over the [`Piece`]s of a named range, from [`Partitioning::split_named`].
#[derive(Clone, Debug)]
pub struct SplitNamed {
    partitioning: Partitioning,
    name_hash: u64,
    next: u64,
    end: u64,
}

impl Iterator for SplitNamed {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.next >= self.end {
            return None;
        }
        let (parts, start) = (self.partitioning, self.next);
        let partition = parts.partition_of_named(self.name_hash, start);
        let end = if parts.bits == 0 { self.end } else { stripe_end(start).min(self.end) };
        self.next = end;
        Some(Piece { partition, start, end })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = if self.next >= self.end {
            0
        } else if self.partitioning.bits == 0 {
            1
        } else {
            // At most 2^40 stripes: fits a usize on 64-bit targets, saturates elsewhere.
            usize::try_from(stripe(self.end - 1) - stripe(self.next) + 1).unwrap_or(usize::MAX)
        };
        (n, Some(n))
    }
}

impl FusedIterator for SplitNamed {}

/// The part of a range that lies in one partition (see [`Partitioning::split`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The partition.
    pub partition: u32,
    /// First unit.
    pub start: u64,
    /// One past the last unit (`start < end`).
    pub end: u64,
}

/// Iterator over the [`Piece`]s of a range, from [`Partitioning::split`].
#[derive(Clone, Debug)]
pub struct Split {
    partitioning: Partitioning,
    next: u64,
    end: u64,
}

impl Iterator for Split {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.next >= self.end {
            return None;
        }
        let partition = self.partitioning.of(self.next);
        // `end(partition) > self.next`: a non-last partition ends at the next one's start,
        // the last at `u64::MAX > self.next` (as `self.next < self.end <= u64::MAX`).
        let end = self.partitioning.end(partition).min(self.end);
        let piece = Piece { partition, start: self.next, end };
        self.next = end;
        Some(piece)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = if self.next >= self.end {
            0
        } else {
            (self.partitioning.of(self.end - 1) - self.partitioning.of(self.next)) as usize + 1
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Split {}

impl FusedIterator for Split {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        for bits in 0..=12 {
            let p = Partitioning::new(1 << bits).unwrap();
            assert_eq!(p.count(), 1 << bits);
        }
        assert_eq!(Partitioning::new(0), Err(PartitionError::NotPowerOfTwo(0)));
        assert_eq!(Partitioning::new(3), Err(PartitionError::NotPowerOfTwo(3)));
        assert_eq!(Partitioning::new(4095), Err(PartitionError::NotPowerOfTwo(4095)));
        assert_eq!(Partitioning::new(8192), Err(PartitionError::TooMany(8192)));
        assert_eq!(Partitioning::new(1 << 31), Err(PartitionError::TooMany(1 << 31)));
    }

    #[test]
    fn single_partition_is_everything() {
        let p = Partitioning::new(1).unwrap();
        assert_eq!((p.of(0), p.of(u64::MAX)), (0, 0));
        assert_eq!((p.start(0), p.end(0)), (0, u64::MAX));
        assert_eq!(
            p.split(0, u64::MAX).collect::<Vec<_>>(),
            [Piece { partition: 0, start: 0, end: u64::MAX }]
        );
        assert_eq!(p.partition_of_range(0, u64::MAX), Ok(0));
    }

    #[test]
    fn four_partitions() {
        let p = Partitioning::new(4).unwrap();
        let q = 1u64 << 62;
        assert_eq!([p.start(0), p.start(1), p.start(2), p.start(3)], [0, q, 2 * q, 3 * q]);
        assert_eq!([p.end(0), p.end(1), p.end(2), p.end(3)], [q, 2 * q, 3 * q, u64::MAX]);
        assert_eq!([p.of(0), p.of(q - 1), p.of(q), p.of(u64::MAX)], [0, 0, 1, 3]);
        // A range ending exactly at a boundary stays in its partition.
        assert_eq!(p.partition_of_range(0, q), Ok(0));
        assert_eq!(p.partition_of_range(q - 1, q + 1), Err(q));
        assert_eq!(p.partition_of_range(3 * q, u64::MAX), Ok(3));
        let pieces: Vec<_> = p.split(q - 1, 3 * q + 5).collect();
        assert_eq!(
            pieces,
            [
                Piece { partition: 0, start: q - 1, end: q },
                Piece { partition: 1, start: q, end: 2 * q },
                Piece { partition: 2, start: 2 * q, end: 3 * q },
                Piece { partition: 3, start: 3 * q, end: 3 * q + 5 },
            ]
        );
        assert_eq!(p.split(q - 1, 3 * q + 5).len(), 4);
        assert_eq!(p.split(0, u64::MAX).len(), 4);
    }

    #[test]
    fn max_partitions() {
        let p = Partitioning::new(MAX_PARTITIONS).unwrap();
        let w = 1u64 << 52;
        assert_eq!(p.start(4095), 4095 * w);
        assert_eq!(p.end(4094), 4095 * w);
        assert_eq!(p.end(4095), u64::MAX);
        assert_eq!(p.of(u64::MAX), 4095);
        assert_eq!(p.of(w), 1);
        assert_eq!(p.split(0, u64::MAX).count(), 4096);
    }

    #[test]
    fn empty_ranges_have_no_pieces() {
        let p = Partitioning::new(8).unwrap();
        assert_eq!(p.split(5, 5).count(), 0);
        assert_eq!(p.split(9, 5).len(), 0);
    }

    #[test]
    fn named_stripes() {
        let p = Partitioning::new(4).unwrap();
        let s = 1u64 << NAME_STRIPE_SHIFT;
        assert_eq!(p.partition_of_named(6, 0), 2);
        assert_eq!(p.partition_of_named(6, s - 1), 2);
        assert_eq!(p.partition_of_named(6, s), 3);
        assert_eq!(p.partition_of_named(6, 2 * s), 0);
        assert_eq!(p.partition_of_named(u64::MAX, s), 0);
        assert_eq!(p.named_partition_of_range(6, 5, s), Ok(2));
        assert_eq!(p.named_partition_of_range(6, 5, s + 1), Err(s));
        let pieces: Vec<_> = p.split_named(6, s - 1, 2 * s + 5).collect();
        assert_eq!(
            pieces,
            [
                Piece { partition: 2, start: s - 1, end: s },
                Piece { partition: 3, start: s, end: 2 * s },
                Piece { partition: 0, start: 2 * s, end: 2 * s + 5 },
            ]
        );
        assert_eq!(p.split_named(6, s - 1, 2 * s + 5).count(), 3);
        // The last stripe ends at u64::MAX.
        let last = u64::MAX - 3;
        assert_eq!(
            p.named_partition_of_range(0, last, u64::MAX),
            Ok(p.partition_of_named(0, last))
        );
        // One partition: never split.
        let one = Partitioning::new(1).unwrap();
        assert_eq!(one.split_named(9, 0, u64::MAX).count(), 1);
        assert_eq!(one.named_partition_of_range(9, 0, u64::MAX), Ok(0));
    }

    #[test]
    fn name_hash_is_the_first_bytes_of_sha256() {
        // SHA-256("") = e3b0c442 98fc1c14 ...; SHA-256("abc") = ba7816bf 8f01cfea ...
        assert_eq!(name_hash(b""), 0xe3b0_c442_98fc_1c14);
        assert_eq!(name_hash(b"abc"), 0xba78_16bf_8f01_cfea);
    }

    #[test]
    #[should_panic(expected = "out of 0..4")]
    fn start_of_a_missing_partition_panics() {
        Partitioning::new(4).unwrap().start(4);
    }
}
