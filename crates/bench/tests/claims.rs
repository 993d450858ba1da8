//! The claim registry keeps its promises: every quote is the seed's own sentence, every
//! number called the seed's is in its quote, every band reads the seed's direction, and
//! the seed's design is judged in the seed's row.

use rangelock_bench::seeds::claims::{self, Band, Claim, Row, Rule, Seed, Test};
use rangelock_bench::seeds::{listing, missing, quote};

fn judged(c: &Claim) -> bool {
    !matches!(c.rule, Rule::NotTestable(_) | Rule::NotCovered(_))
}

/// Every quote of a seed's claim occurs in the seed's evaluation text, whitespace
/// normalised.
#[test]
fn every_quote_is_in_its_seeds_text() {
    let mut bad = Vec::new();
    for c in claims::claims() {
        let seed = c.figure().seed;
        let Some(text) = quote::evaluation_text(seed) else { continue };
        if !quote::contains(text, c.quote) {
            bad.push(format!("{} {} ({}): {:?}", seed.short(), c.figure, c.gist, c.quote));
        }
    }
    assert!(bad.is_empty(), "quotes not in their seed's text:\n{}", bad.join("\n"));
    // The check can fail: a changed word is caught.
    let text = quote::evaluation_text(Seed::RangeThesis).unwrap();
    assert!(quote::contains(text, "We archive four times more operations than Scalable RL"));
    assert!(!quote::contains(text, "We archive five times more operations than Scalable RL"));
}

/// A number called the seed's is a whole token of its quote and reads as the value the
/// claim tests against.
#[test]
fn the_seeds_numbers_are_in_their_quotes() {
    let mut n = 0;
    for c in claims::claims() {
        let Some(number) = c.seed else { continue };
        n += 1;
        assert_ne!(c.figure().seed, Seed::Project, "{}: a project bar has no seed number", c.gist);
        for written in number.written() {
            assert!(
                quote::has_token(c.quote, written),
                "{} {}: {written:?} is not in the quote {:?}",
                c.figure,
                c.gist,
                c.quote
            );
            assert!(quote::number(written).is_some(), "{written:?} does not read as a number");
        }
        let test = number.test().expect("the written numbers read");
        if let claims::SeedNumber::Stated { written, .. } = number {
            let value = quote::number(written).unwrap();
            let tested = match test {
                Test::AtLeast(x) | Test::AtMost(x) | Test::Above(x) | Test::Below(x) => x,
                Test::Within(..) => panic!("{}: a stated number tests one bound", c.gist),
            };
            assert_eq!(tested, value, "{}: the test's number is the quote's", c.gist);
        }
    }
    assert!(n >= 15, "the seeds state numbers in at least 15 claims, found {n}");
    // The check can fail: a number the quote does not hold is caught.
    assert!(!quote::has_token("We archive four times more", "4"));
}

/// Where the seed states a number, our band passes at that number and fails at parity
/// (the outcome the seed argues against); every band is ours, with a reason that says so.
#[test]
fn bands_read_the_seeds_direction() {
    let passes = |b: &Band, x: f64| match b.test {
        Test::AtLeast(t) => x >= t,
        Test::Above(t) => x > t,
        Test::AtMost(t) => x <= t,
        Test::Below(t) => x < t,
        Test::Within(lo, hi) => x > lo && x < hi,
    };
    for c in claims::claims() {
        match (judged(c), c.band) {
            (true, None) => panic!("{} {}: a judged claim without a band", c.figure, c.gist),
            (false, Some(_)) => panic!("{} {}: a band on a claim not tested", c.figure, c.gist),
            _ => {}
        }
        let Some(band) = c.band else { continue };
        if c.figure().seed != Seed::Project {
            assert!(band.reason.starts_with("ours"), "{}: {:?}", c.gist, band.reason);
        }
        let Some(test) = c.seed.and_then(|n| n.test()) else { continue };
        let points = match test {
            Test::Within(lo, hi) => vec![lo, hi],
            Test::AtLeast(x) | Test::AtMost(x) | Test::Above(x) | Test::Below(x) => vec![x],
        };
        for x in points {
            assert!(passes(&band, x), "{}: our band fails the seed's own {x}", c.gist);
        }
        assert!(!passes(&band, 1.0), "{}: our band admits parity", c.gist);
    }
}

/// The range-lock thesis's "Our" is its list algorithm: its claims in the seed's row never
/// read the product, and each figure that has the product judges it in a beyond row. The
/// server thesis's claims never judge a local-memory peer.
#[test]
fn the_seeds_design_is_in_the_seeds_row() {
    for c in claims::claims() {
        let vs = missing::variants(&c.rule);
        match (c.figure().seed, c.row) {
            (Seed::RangeThesis, Row::Seed) => {
                assert!(!vs.contains(&"rangelock"), "{}: the seed's row reads the product", c.gist)
            }
            (Seed::RangeThesis, Row::Beyond) => {
                assert!(vs.contains(&"rangelock"), "{}: a beyond row without the product", c.gist)
            }
            (Seed::ServerThesis, row) => {
                for v in &vs {
                    assert!(!claims::LOCAL_MEMORY.contains(v), "{}: judges {v}", c.gist);
                }
                if row == Row::Seed {
                    for push in ["combiner", "tree-single"] {
                        assert!(!vs.contains(&push), "{}: the seed's clients poll", c.gist);
                    }
                }
            }
            _ => {}
        }
    }
    for fig in ["Fig. 5.2", "Fig. 5.3", "Fig. 5.4"] {
        let beyond = claims::claims().iter().filter(|c| c.figure == fig && c.row == Row::Beyond);
        assert!(beyond.count() > 0, "{fig} judges the product beside the seed's design");
    }
}

/// Every figure of a seed has claims, every claim a registered figure, and the listing
/// (`rangelock bench claims --json`) has every claim with its quote.
#[test]
fn figures_and_claims_match() {
    for f in claims::figures().iter().filter(|f| f.seed != Seed::Project) {
        assert!(claims::of_figure(f).count() > 0, "{} {} has no claim", f.suite, f.figure);
    }
    for c in claims::claims() {
        let _ = c.figure();
    }
    let entries = listing::entries();
    assert_eq!(entries.len(), claims::claims().len());
    let json = serde_json::to_value(&entries).unwrap();
    for e in json.as_array().unwrap() {
        for field in ["seed", "figure", "quote", "seed_ratio", "our_band", "rule"] {
            assert!(e.get(field).is_some(), "{field} missing from {e}");
        }
    }
    // Each seed's evaluation is covered by many claims, and says which are not tested.
    for seed in [Seed::RangeThesis, Seed::Epvs, Seed::ServerThesis] {
        let of_seed: Vec<&Claim> =
            claims::claims().iter().filter(|c| c.figure().seed == seed).collect();
        assert!(of_seed.iter().filter(|c| judged(c)).count() >= 10, "{seed:?}");
    }
}
