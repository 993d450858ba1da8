//! Partition math: splitting a range covers it exactly with one piece per partition.

use proptest::prelude::*;
use rangelock_proto::{name_hash, token, Partitioning, Piece, MAX_PARTITIONS, NAME_STRIPE_SHIFT};

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

/// A named range: a hash, and a range of at most a few stripes, often near stripe
/// boundaries.
fn named_range() -> impl Strategy<Value = (u64, u64, u64)> {
    let s = 1u64 << NAME_STRIPE_SHIFT;
    let unit = prop_oneof![
        any::<u64>(),
        (any::<u64>(), -3i64..=3)
            .prop_map(move |(k, d)| (k << NAME_STRIPE_SHIFT).wrapping_add_signed(d)),
        Just(0),
        Just(u64::MAX - 1),
    ];
    (any::<u64>(), unit, 1u64..=5 * s).prop_map(|(h, start, len)| {
        let start = start.min(u64::MAX - 1);
        (h, start, start.saturating_add(len))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn split_named_covers_the_range_exactly(
        p in partitioning(),
        (h, start, end) in named_range(),
    ) {
        let pieces: Vec<Piece> = p.split_named(h, start, end).collect();
        prop_assert_eq!(pieces.len(), p.split_named(h, start, end).size_hint().0);
        prop_assert!(!pieces.is_empty());
        prop_assert_eq!(pieces[0].start, start);
        prop_assert_eq!(pieces[pieces.len() - 1].end, end);
        for w in pieces.windows(2) {
            prop_assert_eq!(w[0].end, w[1].start);
        }
        for piece in &pieces {
            prop_assert!(piece.start < piece.end);
            prop_assert!(piece.partition < p.count());
            // The partition formula, at both ends of the piece.
            let formula = |u: u64| {
                ((u128::from(h) + u128::from(u >> NAME_STRIPE_SHIFT)) % u128::from(p.count())) as u32
            };
            prop_assert_eq!(piece.partition, formula(piece.start));
            prop_assert_eq!(piece.partition, formula(piece.end - 1));
            // In one stripe (with more than one partition).
            if p.count() > 1 {
                prop_assert_eq!(piece.start >> NAME_STRIPE_SHIFT, (piece.end - 1) >> NAME_STRIPE_SHIFT);
            }
            prop_assert_eq!(p.named_partition_of_range(h, piece.start, piece.end), Ok(piece.partition));
        }
        // Consecutive pieces are in different partitions (with more than one).
        if p.count() > 1 {
            for w in pieces.windows(2) {
                prop_assert_ne!(w[0].partition, w[1].partition);
            }
        }
    }

    #[test]
    fn named_partition_of_range_agrees_with_split_named(
        p in partitioning(),
        (h, start, end) in named_range(),
    ) {
        let mut pieces = p.split_named(h, start, end);
        let first = pieces.next().unwrap();
        match p.named_partition_of_range(h, start, end) {
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
}

/// 1 000 names (of the shape a client would use) spread over the partitions by their
/// hash: with 3 nodes owning a third of 64 partitions each, no node gets half.
#[test]
fn many_names_spread_evenly_over_partitions() {
    for count in [4u32, 16, 64, 256] {
        let p = Partitioning::new(count).unwrap();
        let mut per = vec![0u32; count as usize];
        let names = 10_000u32;
        for i in 0..names {
            let h = name_hash(format!("db/table-{i}").as_bytes());
            per[p.partition_of_named(h, 0) as usize] += 1;
        }
        let mean = f64::from(names) / f64::from(count);
        let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
        // Binomial spread: well within +-5 sigma of the mean.
        let sigma = (mean * (1.0 - 1.0 / f64::from(count))).sqrt();
        assert!(f64::from(*hi) < mean + 5.0 * sigma, "{count}: max {hi}, mean {mean}");
        assert!(f64::from(*lo) > mean - 5.0 * sigma, "{count}: min {lo}, mean {mean}");
    }
    // Three nodes over 64 partitions (22, 21, 21): 1 000 names, none carries half.
    let p = Partitioning::new(64).unwrap();
    let mut nodes = [0u32; 3];
    for i in 0..1000 {
        let h = name_hash(format!("name-{i}").as_bytes());
        nodes[(p.partition_of_named(h, 0) % 3) as usize] += 1;
    }
    assert!(nodes.iter().all(|&n| n < 500), "{nodes:?}");
}

/// One hot name's ranges walk the partitions stripe by stripe.
#[test]
fn one_name_walks_every_partition() {
    let p = Partitioning::new(16).unwrap();
    let h = name_hash(b"hot");
    let s = 1u64 << NAME_STRIPE_SHIFT;
    let pieces: Vec<Piece> = p.split_named(h, 0, 16 * s).collect();
    let mut seen: Vec<u32> = pieces.iter().map(|x| x.partition).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..16).collect::<Vec<_>>());
}
