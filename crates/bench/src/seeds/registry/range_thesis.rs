//! *Concurrent Range Locking* (Nguyen, TU Munich), §5: Figs. 5.1–5.5.
//!
//! The thesis's "Our" is its lock-free list algorithm: our `rangelock-list` (the product's
//! skip list with its stripe table turned off). The product `rangelock` takes W1's and
//! W2's 1 KiB exclusive ranges in its stripe table instead, so its claims are the
//! [`Row::Beyond`] rows.

use super::{band, contrast, ratio, scaling, spread, steps, v};
use crate::seeds::claims::{Claim, Figure, Needs, Row, Rule, SeedNumber, Test};

const RANGE_SETUP: &str = "The seed runs 1 to 32 worker threads on 16 cores; the records' machine \
    has 2 cores, so every ratio is read at 2 threads (rows marked * oversubscribe the cores and \
    are never judged).";
const OUR_IS_THE_LIST: &str = "The thesis's \"Our\" is its list algorithm, `rangelock-list` \
    here; the product `rangelock` puts 1 KiB exclusive ranges into its stripe table and is \
    judged in separate rows, as beyond the seed.";

const W1: &[(&str, &str)] = &[("workload", "w1")];
const W2: &[(&str, &str)] = &[("workload", "w2")];
const HEIGHTS: &[&str] = &["4", "6", "8", "10", "12", "14", "16"];

pub(super) const FIGURES: &[Figure] = &[
    Figure {
        suite: "height",
        figure: "Fig. 5.1",
        seed: crate::seeds::claims::Seed::RangeThesis,
        section: "§5.3.2",
        caption: "Runtime for different heights of range lock",
        show: &[],
        caveats: &[
            RANGE_SETUP,
            "Both panels run the thesis's list algorithm (`rangelock-list`): the product's \
             stripe table would take every 1 KiB range, and the height could not matter.",
            "With 2 threads, W2 holds at most 32 ranges at once (16 per thread), so the list \
             is short whatever its height; the seed holds up to 512.",
        ],
        context: &[],
    },
    Figure {
        suite: "w1",
        figure: "Fig. 5.2",
        seed: crate::seeds::claims::Seed::RangeThesis,
        section: "§5.3.3",
        caption: "Microbenchmark for workload W1",
        show: &[],
        caveats: &[RANGE_SETUP, OUR_IS_THE_LIST],
        context: &[
            ("rangelock-list / unlocked", v!("rangelock-list").over(v!("unlocked"))),
            ("kogan-list / unlocked", v!("kogan-list").over(v!("unlocked"))),
            ("song-skiplist / unlocked", v!("song-skiplist").over(v!("unlocked"))),
            ("rangelock / unlocked", v!("rangelock").over(v!("unlocked"))),
        ],
    },
    Figure {
        suite: "w2",
        figure: "Fig. 5.3",
        seed: crate::seeds::claims::Seed::RangeThesis,
        section: "§5.3.3",
        caption: "Microbenchmark for workload W2",
        show: &[],
        caveats: &[RANGE_SETUP, OUR_IS_THE_LIST],
        context: &[
            ("rangelock-list / unlocked", v!("rangelock-list").over(v!("unlocked"))),
            ("kogan-list / unlocked", v!("kogan-list").over(v!("unlocked"))),
            ("song-skiplist / unlocked", v!("song-skiplist").over(v!("unlocked"))),
            ("rangelock / unlocked", v!("rangelock").over(v!("unlocked"))),
        ],
    },
    Figure {
        suite: "aliasing",
        figure: "Fig. 5.4",
        seed: crate::seeds::claims::Seed::RangeThesis,
        section: "§5.4.4",
        caption: "Comparison of transactions by increasing the number of thread workers.",
        show: &[],
        caveats: &[
            RANGE_SETUP,
            OUR_IS_THE_LIST,
            "A transaction copies a 1 MiB blob in and back (LeanStore's aliasing area \
             without LeanStore): the lock is a small share of it, and the seed's effects \
             past 16 threads come from 16-32 workers sharing a 32 MB L3.",
        ],
        context: &[],
    },
    Figure {
        suite: "aliasing-counts",
        figure: "Fig. 5.5",
        seed: crate::seeds::claims::Seed::RangeThesis,
        section: "§5.4.4",
        caption: "Comparison of cycles, instructions, and L1-misses by increasing the number of \
                  thread workers.",
        show: &[],
        caveats: &[
            "Counted at 1 thread under valgrind's cachegrind: instructions, and L1d misses of \
             its simulated cache, not the hardware's.",
        ],
        context: &[
            (
                "rangelock-list / segments, instructions per txn",
                v!("rangelock-list")
                    .metric(crate::seeds::claims::Metric::Extra("instructions_per_txn"))
                    .over(
                        v!("segments")
                            .metric(crate::seeds::claims::Metric::Extra("instructions_per_txn")),
                    ),
            ),
            (
                "song-skiplist / rangelock-list, instructions per txn",
                v!("song-skiplist")
                    .metric(crate::seeds::claims::Metric::Extra("instructions_per_txn"))
                    .over(
                        v!("rangelock-list")
                            .metric(crate::seeds::claims::Metric::Extra("instructions_per_txn")),
                    ),
            ),
        ],
    },
];

/// "outperforms": any lead that holds at the extremes of the rounds.
const LEADS: Option<crate::seeds::claims::Band> =
    band(Test::Above(1.0), "ours: \"outperforms\" is any lead over the peer, at every round");

const ANY_LEAD: Option<crate::seeds::claims::Band> = band(
    Test::Above(1.0),
    "ours: the seed's direction is any lead, at every round; its number is the magnitude",
);

const fn times(written: &'static str, value: f64) -> Option<SeedNumber> {
    Some(SeedNumber::Stated { written, test: Test::AtLeast(value) })
}

const Q_W1_HEIGHT: &str = "For **W1**, where contention is minimal, and each thread locks and \
    releases ranges immediately, the height of the skip list has negligible impact on performance.";
const Q_W2_HEIGHT: &str = "For **W2**, the total runtime decreases as the skip list height \
    increases, aligning with the expected behavior.";
const Q_DIMINISHING: &str = "However, beyond a height of 10, further increases yield diminishing \
    returns.";
const Q_W1_SCALES: &str = "We can see that Our variant has good scalability and outperforms the \
    other two.";
const Q_W1_TIMES: &str = "We archive four times more operations than Scalable RL and twelve times \
    more than Song RL.";
const Q_W2_TIMES: &str = "Our variant continued to outperform the others, achieving two to nine \
    times more operations than Scalable RL and two to six times more than Song RL.";
const Q_BITMAP_BEST: &str = "As anticipated, the Bitmap implementation consistently outperformed \
    the other three variants.";
const Q_TRAILING: &str = "Our implementation (Our) demonstrated competitive performance, closely \
    trailing Bitmap in terms of transactions per second.";
const Q_BOTH_SCALE: &str = "Both Bitmap and Our showed effective scalability with an increasing \
    number of worker threads, though Bitmap maintained a consistent, albeit slight, performance \
    advantage.";
const Q_KOGAN_LOWER: &str = "However, its overall performance remained considerably lower than \
    the other variants, highlighting its limitations.";

/// "good"/"effective scalability" from 1 to 2 threads: at least 1.5x (perfect is 2x).
const SCALES: Option<crate::seeds::claims::Band> = band(
    Test::AtLeast(1.5),
    "ours: \"good scalability\" from 1 to 2 threads is at least 1.5x (perfect is 2x)",
);

pub(super) const CLAIMS: &[Claim] = &[
    // ---- Fig. 5.1 ----------------------------------------------------------------------
    Claim {
        suite: "height",
        figure: "Fig. 5.1",
        quote: Q_W1_HEIGHT,
        gist: "W1: height has negligible impact",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(1.1),
            "ours: \"negligible\" is the fastest height within 10 % of the slowest",
        ),
        rule: spread(v!("rangelock-list").with(W1), "height", HEIGHTS),
    },
    Claim {
        suite: "height",
        figure: "Fig. 5.1",
        quote: Q_W2_HEIGHT,
        gist: "W2: runtime falls at every step of height up to 10",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: \"decreases as the height increases\" is a gain at every step from 4 to 10, \
             at every round",
        ),
        rule: steps(v!("rangelock-list").with(W2), "height", &["4", "6", "8", "10"]),
    },
    Claim {
        suite: "height",
        figure: "Fig. 5.1",
        quote: Q_DIMINISHING,
        gist: "W2: the gain from 10 to 16 is smaller than from 4 to 10",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Below(1.0),
            "ours: \"diminishing returns\" is a smaller gain over the three steps past 10 than \
             over the three up to it",
        ),
        rule: contrast(
            v!("rangelock-list")
                .with(&[("workload", "w2"), ("height", "16")])
                .over(v!("rangelock-list").with(&[("workload", "w2"), ("height", "10")])),
            v!("rangelock-list")
                .with(&[("workload", "w2"), ("height", "10")])
                .over(v!("rangelock-list").with(&[("workload", "w2"), ("height", "4")])),
        ),
    },
    // ---- Fig. 5.2 ----------------------------------------------------------------------
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_SCALES,
        gist: "Our scales",
        row: Row::Seed,
        seed: None,
        band: SCALES,
        rule: ratio(scaling(v!("rangelock-list"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_SCALES,
        gist: "Our outperforms Scalable RL",
        row: Row::Seed,
        seed: None,
        band: LEADS,
        rule: ratio(v!("rangelock-list").over(v!("kogan-list"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_SCALES,
        gist: "Our outperforms Song RL",
        row: Row::Seed,
        seed: None,
        band: LEADS,
        rule: ratio(v!("rangelock-list").over(v!("song-skiplist"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_TIMES,
        gist: "Our does 4x Scalable RL",
        row: Row::Seed,
        seed: times("four", 4.0),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock-list").over(v!("kogan-list"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_TIMES,
        gist: "Our does 12x Song RL",
        row: Row::Seed,
        seed: times("twelve", 12.0),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock-list").over(v!("song-skiplist"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_SCALES,
        gist: "the product scales",
        row: Row::Beyond,
        seed: None,
        band: SCALES,
        rule: ratio(scaling(v!("rangelock"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_TIMES,
        gist: "the product does 4x Scalable RL",
        row: Row::Beyond,
        seed: times("four", 4.0),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock").over(v!("kogan-list"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: Q_W1_TIMES,
        gist: "the product does 12x Song RL",
        row: Row::Beyond,
        seed: times("twelve", 12.0),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock").over(v!("song-skiplist"))),
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        quote: "The spinlock in Song RL becomes a significant point of contention, leading to \
                its poor performance.",
        gist: "why Song RL does poorly",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered(
            "an explanation of the result above, not a result; Song RL's share of the no-lock \
             run is shown with the figure",
        ),
    },
    // ---- Fig. 5.3 ----------------------------------------------------------------------
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: Q_W2_TIMES,
        gist: "Our does 2-9x Scalable RL",
        row: Row::Seed,
        seed: Some(SeedNumber::Range { lo: "two", hi: "nine" }),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock-list").over(v!("kogan-list"))),
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: Q_W2_TIMES,
        gist: "Our does 2-6x Song RL",
        row: Row::Seed,
        seed: Some(SeedNumber::Range { lo: "two", hi: "six" }),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock-list").over(v!("song-skiplist"))),
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: Q_W2_TIMES,
        gist: "the product does 2-9x Scalable RL",
        row: Row::Beyond,
        seed: Some(SeedNumber::Range { lo: "two", hi: "nine" }),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock").over(v!("kogan-list"))),
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: Q_W2_TIMES,
        gist: "the product does 2-6x Song RL",
        row: Row::Beyond,
        seed: Some(SeedNumber::Range { lo: "two", hi: "six" }),
        band: ANY_LEAD,
        rule: ratio(v!("rangelock").over(v!("song-skiplist"))),
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: "This allowed Song RL to perform significantly better compared to Scalable RL.",
        gist: "Song RL well ahead of Scalable RL",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(1.2), "ours: \"significantly better\" is at least 1.2x"),
        rule: ratio(v!("song-skiplist").over(v!("kogan-list"))),
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: "However, Scalable RL demonstrated better scalability as the number of worker \
                threads increased.",
        gist: "Scalable RL scales better than Song RL",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: Scalable RL's gain from 1 to 2 threads above Song RL's, at every round",
        ),
        rule: contrast(scaling(v!("kogan-list")), scaling(v!("song-skiplist"))),
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        quote: "Beyond sixteen threads, Scalable RL began to surpass Song RL in performance.",
        gist: "Scalable RL passes Song RL beyond 16 threads",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(17)),
    },
    // ---- Fig. 5.4 ----------------------------------------------------------------------
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: Q_BITMAP_BEST,
        gist: "Bitmap ahead of every other lock",
        row: Row::Seed,
        seed: None,
        band: LEADS,
        rule: ratio(v!("segments").over(v!(max "rangelock-list", "song-skiplist", "kogan-list"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: Q_TRAILING,
        gist: "Our closely trails Bitmap",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Within(0.85, 1.0),
            "ours: \"closely trailing\" is below Bitmap (never level or ahead) by less than 15 %",
        ),
        rule: ratio(v!("rangelock-list").over(v!("segments"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: Q_TRAILING,
        gist: "the product closely trails Bitmap",
        row: Row::Beyond,
        seed: None,
        band: band(
            Test::Within(0.85, 1.0),
            "ours: \"closely trailing\" is below Bitmap (never level or ahead) by less than 15 %",
        ),
        rule: ratio(v!("rangelock").over(v!("segments"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: Q_BOTH_SCALE,
        gist: "Our scales",
        row: Row::Seed,
        seed: None,
        band: SCALES,
        rule: ratio(scaling(v!("rangelock-list"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: Q_BOTH_SCALE,
        gist: "Bitmap scales",
        row: Row::Seed,
        seed: None,
        band: SCALES,
        rule: ratio(scaling(v!("segments"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: "Conversely, Song RL initially exhibited substantial throughput but encountered a \
                sharp decline beyond 24 worker threads.",
        gist: "Song RL collapses beyond 24 threads",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(25)),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: "On the other hand, the Scalable RL variant showed steady, linear throughput \
                growth.",
        gist: "Scalable RL grows linearly",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(1.8),
            "ours: \"linear\" from 1 to 2 threads is at least 90 % of 2x",
        ),
        rule: ratio(scaling(v!("kogan-list"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: Q_KOGAN_LOWER,
        gist: "Scalable RL far below the others",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(0.8), "ours: \"considerably lower\" is at most 0.8x the next"),
        rule: ratio(v!("kogan-list").over(v!(min "rangelock-list", "song-skiplist", "segments"))),
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        quote: "An additional key observation is the difficulty faced by the Bitmap, Our, and \
                Song RL variants in scaling effectively beyond 16 worker threads.",
        gist: "scaling stalls beyond 16 threads",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(17)),
    },
    // ---- Fig. 5.5 ----------------------------------------------------------------------
    Claim {
        suite: "aliasing-counts",
        figure: "Fig. 5.5",
        quote: "both the Bitmap and Our implementations maintained stable levels of cycles, \
                instructions, and L1 cache misses as the number of threads increased.",
        gist: "Bitmap's and Our's counts flat in threads",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::HardwareCounters),
    },
    Claim {
        suite: "aliasing-counts",
        figure: "Fig. 5.5",
        quote: "In contrast, Song RL exhibited a significant rise in the number of instructions \
                with additional threads, indicating inefficiencies under higher loads.",
        gist: "Song RL's instructions rise with threads",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::HardwareCounters),
    },
    Claim {
        suite: "aliasing-counts",
        figure: "Fig. 5.5",
        quote: "Meanwhile, Scalable RL demonstrated better scalability, with a decreasing number \
                of L1 misses and instructions as the workload intensified.",
        gist: "Scalable RL's misses fall with threads",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::HardwareCounters),
    },
];
