//! Partition math: splitting a range covers it exactly with one piece per partition.

use proptest::prelude::*;
use rangelock_proto::{token, Partitioning, Piece, MAX_PARTITIONS};

fn partitioning() -> impl Strategy<Value = Partitioning> {
    (0u32..=12).prop_map(|bits| Partitioning::new(1 << bits).unwrap())
}

/// A non-empty range, often near partition boundaries and the ends of the domain.
fn range() -> impl Strategy<Value = (u64, u64)> {
    let unit = prop_oneof![
        any::<u64>(),
        (0u32..=12, any::<u32>(), -3i64..=3).prop_map(|(bits, p, d)| {
            let start = if bits == 0 { 0 } else { u64::from(p % (1 << bits)) << (64 - bits) };
            start.wrapping_add_signed(d)
        }),
        Just(0),
        Just(u64::MAX),
    ];
    (unit.clone(), unit).prop_filter_map("non-empty", |(a, b)| {
        let (s, e) = (a.min(b), a.max(b));
        (s < e).then_some((s, e))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn split_covers_the_range_exactly(p in partitioning(), (start, end) in range()) {
        let pieces: Vec<Piece> = p.split(start, end).collect();
        prop_assert_eq!(pieces.len(), p.split(start, end).len());
        prop_assert!(!pieces.is_empty());
        prop_assert_eq!(pieces[0].start, start);
        prop_assert_eq!(pieces[pieces.len() - 1].end, end);
        prop_assert_eq!(pieces[0].partition, p.of(start));
        prop_assert_eq!(pieces[pieces.len() - 1].partition, p.of(end - 1));
        for w in pieces.windows(2) {
            // Contiguous, and one piece per partition in ascending order.
            prop_assert_eq!(w[0].end, w[1].start);
            prop_assert_eq!(w[0].partition + 1, w[1].partition);
        }
        for piece in &pieces {
            prop_assert!(piece.start < piece.end);
            prop_assert!(piece.partition < p.count());
            prop_assert!(p.start(piece.partition) <= piece.start);
            prop_assert!(piece.end <= p.end(piece.partition));
            prop_assert_eq!(p.of(piece.start), piece.partition);
            prop_assert_eq!(p.of(piece.end - 1), piece.partition);
        }
        if p.count() == 1 {
            prop_assert_eq!(pieces, vec![Piece { partition: 0, start, end }]);
        }
    }

    #[test]
    fn partition_of_range_agrees_with_split(p in partitioning(), (start, end) in range()) {
        let mut pieces = p.split(start, end);
        let first = pieces.next().unwrap();
        match p.partition_of_range(start, end) {
            Ok(part) => {
                prop_assert_eq!(part, first.partition);
                prop_assert!(pieces.next().is_none());
            }
            Err(next) => {
                prop_assert_eq!(next, first.end);
                prop_assert_eq!(pieces.next().unwrap().start, next);
            }
        }
    }

    #[test]
    fn partitions_tile_the_domain(p in partitioning(), unit in any::<u64>()) {
        let part = p.of(unit);
        prop_assert!(part < p.count());
        prop_assert!(p.start(part) <= unit);
        // The last partition's end is u64::MAX, which is in it but never lockable.
        prop_assert!(unit < p.end(part) || (unit == u64::MAX && part == p.count() - 1));
        if part + 1 < p.count() {
            prop_assert_eq!(p.end(part), p.start(part + 1));
        }
    }

    #[test]
    fn tokens_pack_and_unpack(epoch in 0..=token::MAX_EPOCH, seq in any::<u32>()) {
        let t = token::pack(epoch, seq);
        prop_assert_eq!((token::epoch(t), token::seq(t)), (epoch, seq));
        if epoch < token::MAX_EPOCH {
            prop_assert!(token::pack(epoch + 1, 1) > t);
        }
    }
}

#[test]
fn every_count_splits_the_whole_domain_into_every_partition() {
    let mut count = 1;
    while count <= MAX_PARTITIONS {
        let p = Partitioning::new(count).unwrap();
        let pieces: Vec<Piece> = p.split(0, u64::MAX).collect();
        assert_eq!(pieces.len() as u32, count);
        for (i, piece) in pieces.iter().enumerate() {
            assert_eq!(
                (piece.partition, piece.start, piece.end),
                (i as u32, p.start(i as u32), p.end(i as u32))
            );
        }
        count *= 2;
    }
}
