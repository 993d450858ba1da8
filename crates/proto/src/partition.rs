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

use core::iter::FusedIterator;

/// The largest partition count a cluster may have (`2^12`).
pub const MAX_PARTITIONS: u32 = 4096;

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
}

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
    #[should_panic(expected = "out of 0..4")]
    fn start_of_a_missing_partition_panics() {
        Partitioning::new(4).unwrap().start(4);
    }
}
