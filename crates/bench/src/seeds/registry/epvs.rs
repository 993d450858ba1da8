//! The EPVS paper (Li, Chandramouli, Madden), §6: Figs. 11–21.

use super::{band, contrast, ratio, scaling, v};
use crate::seeds::claims::{Band, Claim, Figure, Metric, Needs, Row, Rule, Seed, Test};

const EPVS_SETUP: &str = "The seed runs up to 48 threads on 48 vCPUs (C#); the records' machine \
    has 2 cores, so ratios are read at 2 threads and \"scalability\" is the gain from 1 to 2 \
    threads.";

/// Fig. 11's group of `epvs-array`: no pushes, no resize delay, the default epoch table.
const NO_RESIZE: &[(&str, &str)] =
    &[("push_pct", "0"), ("resize_delay_ms", "0"), ("table_slots", "default")];
const P_RARE: &[(&str, &str)] = &[("p_change", "1e-6")];
const P_ONE: &[(&str, &str)] = &[("p_change", "1")];

pub(super) const FIGURES: &[Figure] = &[
    Figure {
        suite: "epvs-array",
        figure: "Fig. 11",
        seed: Seed::Epvs,
        section: "§6.1",
        caption: "Scalability of EPVS resizable array—read/write",
        show: &[("push_pct", "0"), ("resize_delay_ms", "0")],
        caveats: &[
            EPVS_SETUP,
            "An array operation here takes a few ns, so each scheme's fixed cost per \
             operation sets the ratios.",
        ],
        context: &[],
    },
    Figure {
        suite: "epvs-array",
        figure: "Fig. 12",
        seed: Seed::Epvs,
        section: "§6.1",
        caption: "Scalability of EPVS resizable array",
        show: &[("resize_delay_ms", "0"), ("table_slots", "default")],
        caveats: &[EPVS_SETUP],
        context: &[],
    },
    Figure {
        suite: "epvs-array",
        figure: "Fig. 13",
        seed: Seed::Epvs,
        section: "§6.1",
        caption: "Scalability of EPVS resizable array—with resize delay",
        show: &[("resize_delay_ms", "10")],
        caveats: &[
            EPVS_SETUP,
            "At 2 threads only the other worker can go on while one sleeps in a resize; the \
             seed's gap needs dozens of workers going on during a resize.",
        ],
        context: &[(
            "epvs without / with the 10 ms resize",
            v!("epvs")
                .with(&[("resize_delay_ms", "0")])
                .over(v!("epvs").with(&[("resize_delay_ms", "10")])),
        )],
    },
    Figure {
        suite: "epvs-array",
        figure: "Fig. 14",
        seed: Seed::Epvs,
        section: "§6.1",
        caption: "Scalability of EPVS resizable array—with constrained hash table size",
        show: &[("table_slots", "128")],
        caveats: &[EPVS_SETUP],
        context: &[
            (
                "epvs at 128 slots / its default table",
                v!("epvs").with(&[("table_slots", "128")]).over(v!("epvs").with(NO_RESIZE)),
            ),
            (
                "bravo at 128 slots / its default table",
                v!("bravo").with(&[("table_slots", "128")]).over(v!("bravo").with(NO_RESIZE)),
            ),
        ],
    },
    Figure {
        suite: "epvs-ownership",
        figure: "Fig. 15",
        seed: Seed::Epvs,
        section: "§6.1",
        caption: "Scalability of FASTER-remote key validation",
        show: &[("transfers_per_sec", "0")],
        caveats: &[
            EPVS_SETUP,
            "The seed's prototype is sharded FASTER; ours is an in-process sharded map with \
             the same validation step (`faster::ownership`).",
        ],
        context: &[(
            "check-only / no-validation (a check that decides nothing)",
            v!("check-only")
                .with(&[("transfers_per_sec", "0")])
                .over(v!("no-validation").with(&[("transfers_per_sec", "0")])),
        )],
    },
    Figure {
        suite: "epvs-checkpoint",
        figure: "Fig. 16",
        seed: Seed::Epvs,
        section: "§6.1",
        caption: "Scalability of FASTER-KV checkpointing",
        show: &[],
        caveats: &[
            EPVS_SETUP,
            "Checkpoints of an in-process KV every 10 ms, consistent-cut markers as in CPR \
             (`faster::checkpoint`), written nowhere.",
        ],
        context: &[],
    },
    Figure {
        suite: "epvs-freq",
        figure: "Fig. 17",
        seed: Seed::Epvs,
        section: "§6.2",
        caption: "Sensitivity analysis of version change frequency",
        show: &[],
        caveats: &[
            EPVS_SETUP,
            "The simulated operation (64 bytes hashed) takes a few ns here, as much as a \
             protected region's enter and leave.",
        ],
        context: &[],
    },
    Figure {
        suite: "epvs-table",
        figure: "Fig. 18",
        seed: Seed::Epvs,
        section: "§6.2",
        caption: "Sensitivity analysis of epoch table size",
        show: &[],
        caveats: &[EPVS_SETUP],
        context: &[
            (
                "epvs at 1024 / at 16 slots",
                v!("epvs")
                    .with(&[("table_slots", "1024")])
                    .over(v!("epvs").with(&[("table_slots", "16")])),
            ),
            (
                "bravo at 1024 / at 16 slots",
                v!("bravo")
                    .with(&[("table_slots", "1024")])
                    .over(v!("bravo").with(&[("table_slots", "16")])),
            ),
        ],
    },
    Figure {
        suite: "epvs-phases",
        figure: "Fig. 19",
        seed: Seed::Epvs,
        section: "§6.2",
        caption: "Impact of number of phases on scalability",
        show: &[],
        caveats: &[EPVS_SETUP],
        context: &[],
    },
    Figure {
        suite: "epvs-nesting",
        figure: "Fig. 20",
        seed: Seed::Epvs,
        section: "§6.2",
        caption: "Nesting",
        show: &[],
        caveats: &[
            EPVS_SETUP,
            "Our BRAVO hashes (thread, lock instance) into its table, the fix the seed \
             itself proposes; nesting one instance four times is measured beside four \
             instances (`instances`).",
        ],
        context: &[(
            "bravo, 4 nested of one instance / nesting 1",
            v!("bravo")
                .with(&[("nesting", "4"), ("instances", "1")])
                .over(v!("bravo").with(&[("nesting", "1")])),
        )],
    },
    Figure {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        seed: Seed::Epvs,
        section: "§6.2",
        caption: "Epoch sharing",
        show: &[],
        caveats: &[
            EPVS_SETUP,
            "With 2 threads and 8 instances each thread has an instance of its own; in the \
             seed up to 6 threads share one of the 8.",
        ],
        context: &[],
    },
];

const fn shared_over_own(variant: super::super::claims::Side) -> super::super::claims::Ratio {
    variant.with(&[("sharing", "shared")]).over(variant.with(&[("sharing", "8-instances")]))
}

/// "roughly equal", "similar": within 20 % either way.
const ROUGHLY_EQUAL: Option<Band> =
    band(Test::Within(0.8, 1.25), "ours: \"roughly equal\" is within 20 % either way");

const Q_FIG11: &str = "We can see that EPVS-based solutions are linearly scalable, similar to \
    the latch-free baseline, and perform significantly better than the latched alternatives.";
const Q_BRAVO_PINNED: &str = "EPVS and BRAVO are roughly equal in performance normally, but EPVS \
    when pinned clearly outperforms alternatives, because threads no longer go through the \
    shared hash table in this code path.";
const Q_FIG15: &str = "We can see that EPVS has similar scalability as the no-validation \
    baseline, and is much more scalable than the naive latch-based baseline.";
const Q_FIG17: &str = "that EPVS retains competitive performance when version change is \
    infrequent as before; however, performance begins to degrade for more frequent version \
    changes, both because more synchronization is required and because version change is \
    expensive.";
const Q_FIG20: &str = "EPVS sees very little change in performance, whereas BRAVO sees \
    significant performance degradation during nesting.";
const Q_FIG21: &str = "and observe that EPVS is able to retain most of its scalability, whereas \
    BRAVO and the C# reader–write latch sees noticeable drop in scalability.";
const Q_FIG18_CROWD: &str = "with a small epoch table size, EPVS experiences reduced scalability \
    as threads crowd the table and EPVS operation repeatedly scans the table for a spare slot.";

const NESTED4: &[(&str, &str)] = &[("nesting", "4"), ("instances", "4")];
const NESTED1: &[(&str, &str)] = &[("nesting", "1")];

pub(super) const CLAIMS: &[Claim] = &[
    // ---- Fig. 11 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        quote: Q_FIG11,
        gist: "EPVS scales linearly",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(1.8),
            "ours: \"linearly\" from 1 to 2 threads is at least 90 % of 2x",
        ),
        rule: ratio(scaling(v!("epvs").with(NO_RESIZE))),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        quote: Q_FIG11,
        gist: "EPVS scales like latch-free",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Within(0.9, 1.12),
            "ours: \"similar to the latch-free baseline\" is a gain from 1 to 2 threads within \
             10 % of latch-free-mock's",
        ),
        rule: contrast(
            scaling(v!("epvs").with(NO_RESIZE)),
            scaling(v!("latch-free-mock").with(NO_RESIZE)),
        ),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        quote: Q_FIG11,
        gist: "EPVS well ahead of the latched arrays",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(1.5), "ours: \"significantly better\" is at least 1.5x"),
        rule: ratio(
            v!("epvs")
                .with(NO_RESIZE)
                .over(v!(max "rwlock-std", "rwlock-parking-lot").with(NO_RESIZE)),
        ),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        quote: Q_BRAVO_PINNED,
        gist: "EPVS and BRAVO about equal",
        row: Row::Seed,
        seed: None,
        band: ROUGHLY_EQUAL,
        rule: ratio(v!("epvs").with(NO_RESIZE).over(v!("bravo").with(NO_RESIZE))),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        quote: Q_BRAVO_PINNED,
        gist: "pinned EPVS clearly ahead of the rest",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(1.2),
            "ours: \"clearly outperforms\" is at least 1.2x the best other",
        ),
        rule: ratio(
            v!("epvs-pinned")
                .with(NO_RESIZE)
                .over(v!(max "epvs", "bravo", "rwlock-std", "rwlock-parking-lot").with(NO_RESIZE)),
        ),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        quote: "That said, overall throughput using EPVS is quite a bit lower than the \
                latch-free-mock due to the intrinsic overhead of epochs (a few random memory \
                accesses), which is expensive compared to the extremely fast array operations \
                (one random memory access).",
        gist: "EPVS well below latch-free-mock",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(0.8), "ours: \"quite a bit lower\" is at most 0.8x"),
        rule: ratio(v!("epvs").with(NO_RESIZE).over(v!("latch-free-mock").with(NO_RESIZE))),
    },
    // ---- Fig. 12 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-array",
        figure: "Fig. 12",
        quote: "push itself cannot be a linearly scalable operation as push percentage \
                increases, as there is workload-induced contention at the tail of the array.",
        gist: "pushes do not scale linearly",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Below(1.8),
            "ours: not \"linearly scalable\" is a gain from 1 to 2 threads under 90 % of 2x, at \
             the most pushes measured (50 %)",
        ),
        rule: ratio(scaling(v!("epvs").with(&[
            ("push_pct", "50"),
            ("resize_delay_ms", "0"),
            ("table_slots", "default"),
        ]))),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 12",
        quote: "Although the two-phase-EPVS array implementation is in theory superior to the \
                simple-EPVS one, displays no significant advantage over simple-EPVS when push \
                percentage is low.",
        gist: "2-phase no better than simple at few pushes",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(1.1),
            "ours: \"no significant advantage\" is at most 10 % ahead, at 10 % pushes",
        ),
        rule: ratio(
            v!("epvs-2phase")
                .with(&[("push_pct", "10"), ("resize_delay_ms", "0"), ("table_slots", "default")])
                .over(v!("epvs").with(&[
                    ("push_pct", "10"),
                    ("resize_delay_ms", "0"),
                    ("table_slots", "default"),
                ])),
        ),
    },
    // ---- Fig. 13 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-array",
        figure: "Fig. 13",
        quote: "the 2-phase solution clearly outperforms the simple baseline.",
        gist: "2-phase clearly ahead with 10 ms resizes",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(1.2), "ours: \"clearly outperforms\" is at least 1.2x"),
        rule: ratio(
            v!("epvs-2phase")
                .with(&[("resize_delay_ms", "10")])
                .over(v!("epvs").with(&[("resize_delay_ms", "10")])),
        ),
    },
    // ---- Fig. 14 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-array",
        figure: "Fig. 14",
        quote: "As the results show, EPVS is clearly more robust than BRAVO at handling this",
        gist: "EPVS more robust than BRAVO in a 128-entry table",
        row: Row::Seed,
        seed: None,
        band: None,
        // 48 threads crowd 128 slots; 2 threads rarely collide in them.
        rule: Rule::NotTestable(Needs::Cores(48)),
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 14",
        quote: "EPVS is also able to avoid slowdown from small epoch tables by pinning threads to \
                epochs thanks to its epoch-based design.",
        gist: "pinned EPVS avoids the small-table slowdown",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(48)),
    },
    // ---- Fig. 15 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-ownership",
        figure: "Fig. 15",
        quote: Q_FIG15,
        gist: "EPVS validation scales like none",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Within(0.9, 1.12),
            "ours: \"similar scalability\" is a gain from 1 to 2 threads within 10 % of \
             no-validation's",
        ),
        rule: contrast(
            scaling(v!("epvs-validation").with(&[("transfers_per_sec", "0")])),
            scaling(v!("no-validation").with(&[("transfers_per_sec", "0")])),
        ),
    },
    Claim {
        suite: "epvs-ownership",
        figure: "Fig. 15",
        quote: Q_FIG15,
        gist: "EPVS validation scales far better than a latch",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(1.3),
            "ours: \"much more scalable\" is a gain from 1 to 2 threads at least 1.3x the \
             latch's",
        ),
        rule: contrast(
            scaling(v!("epvs-validation").with(&[("transfers_per_sec", "0")])),
            scaling(v!("rwlock-validation").with(&[("transfers_per_sec", "0")])),
        ),
    },
    // ---- Fig. 16 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-checkpoint",
        figure: "Fig. 16",
        quote: "EPVS retains most of the performance and scalability of the original FASTER CPR \
                implementation when operations are fine-grained and checkpoints are frequent.",
        gist: "fine-grained: EPVS keeps most of CPR's throughput",
        row: Row::Seed,
        seed: None,
        band: band(Test::Above(0.5), "ours: \"most\" is more than half"),
        rule: ratio(
            v!("epvs")
                .with(&[("ops_per_region", "1")])
                .over(v!("cpr-epoch").with(&[("ops_per_region", "1")])),
        ),
    },
    Claim {
        suite: "epvs-checkpoint",
        figure: "Fig. 16",
        quote: "where the original solution outperforms EPVS.",
        gist: "coarse-grained: CPR ahead of EPVS",
        row: Row::Seed,
        seed: None,
        band: band(Test::Below(1.0), "ours: \"outperforms\" is any lead of CPR, at every round"),
        rule: ratio(
            v!("epvs")
                .with(&[("ops_per_region", "16384")])
                .over(v!("cpr-epoch").with(&[("ops_per_region", "16384")])),
        ),
    },
    Claim {
        suite: "epvs-checkpoint",
        figure: "Fig. 16",
        quote: "While EPVS is not optimal in performance, it achieves most of the speed-up of \
                FASTER CPR with a fraction of its complexity.",
        gist: "most of CPR's speed-up for a fraction of its complexity",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered(
            "complexity is lines of code and engineering time, not measured; the speed-up part \
             is the fine-grained claim above",
        ),
    },
    // ---- Fig. 17 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-freq",
        figure: "Fig. 17",
        quote: Q_FIG17,
        gist: "rare changes: EPVS competitive with latch-free",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(0.8), "ours: \"competitive\" is within 20 % of latch-free"),
        rule: ratio(v!("epvs").with(P_RARE).over(v!("latch-free").with(P_RARE))),
    },
    Claim {
        suite: "epvs-freq",
        figure: "Fig. 17",
        quote: Q_FIG17,
        gist: "frequent changes: EPVS degrades",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(0.9),
            "ours: \"degrades\" is at p = 1 at most 90 % of its rate at p = 1e-6",
        ),
        rule: ratio(v!("epvs").with(P_ONE).over(v!("epvs").with(P_RARE))),
    },
    Claim {
        suite: "epvs-freq",
        figure: "Fig. 17",
        quote: "When version change is frequent, EPVS is less performant than simply executing \
                protected regions under a latch.",
        gist: "p = 1: EPVS below a latch",
        row: Row::Seed,
        seed: None,
        band: band(Test::Below(1.0), "ours: \"less performant\" is below the latch at every round"),
        rule: ratio(v!("epvs").with(P_ONE).over(v!("latched").with(P_ONE))),
    },
    Claim {
        suite: "epvs-freq",
        figure: "Fig. 17",
        quote: "We conduct the same experiment for BRAVO and observe that BRAVO is much more \
                sensitive to frequent exclusive access",
        gist: "BRAVO falls more than EPVS as changes grow frequent",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(0.8),
            "ours: \"much more sensitive\" is BRAVO keeping, from p = 1e-6 to p = 1, at most \
             80 % of what EPVS keeps",
        ),
        rule: contrast(
            v!("bravo").with(P_ONE).over(v!("bravo").with(P_RARE)),
            v!("epvs").with(P_ONE).over(v!("epvs").with(P_RARE)),
        ),
    },
    Claim {
        suite: "epvs-freq",
        figure: "Fig. 17",
        quote: "Notably, however, BRAVO performs no worse than a latch in the worst case of $p = \
                1$, unlike EPVS, thanks to this design philosophy.",
        gist: "p = 1: BRAVO no worse than a latch",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(0.95), "ours: \"no worse\" is at least 0.95x the latch"),
        rule: ratio(v!("bravo").with(P_ONE).over(v!("latched").with(P_ONE))),
    },
    // ---- Fig. 18 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-table",
        figure: "Fig. 18",
        quote: Q_FIG18_CROWD,
        gist: "small tables cut EPVS's scalability",
        row: Row::Seed,
        seed: None,
        band: None,
        // The smallest table (16 slots) is crowded from 9 threads on (the seed's rule of
        // thumb: at least twice as many slots as threads).
        rule: Rule::NotTestable(Needs::Cores(9)),
    },
    Claim {
        suite: "epvs-table",
        figure: "Fig. 18",
        quote: "This problem is alleviated as table size increases; we have found that in \
                general, provisioning a table with at least double the thread count is \
                desirable for performance.",
        gist: "twice as many slots as threads suffice",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(9)),
    },
    Claim {
        suite: "epvs-table",
        figure: "Fig. 18",
        quote: "This effect does not appear to be profound, as the epoch table is still a \
                relatively small chunk of contiguous memory even for large table sizes, which \
                makes it cheap to scan.",
        gist: "large tables cost little",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(0.9),
            "ours: \"not profound\" is 1024 slots keeping at least 90 % of 64 slots' rate",
        ),
        rule: ratio(
            v!("epvs")
                .with(&[("table_slots", "1024")])
                .over(v!("epvs").with(&[("table_slots", "64")])),
        ),
    },
    Claim {
        suite: "epvs-table",
        figure: "Fig. 18",
        quote: "and see that indeed this improves scalability for smaller table sizes.",
        gist: "Refresh (pinned) helps small tables",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(9)),
    },
    Claim {
        suite: "epvs-table",
        figure: "Fig. 18",
        quote: "Lastly, we perform the same experiment for BRAVO and observe that BRAVO is more \
                sensitive to smaller hash tables",
        gist: "BRAVO more sensitive to small tables",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(9)),
    },
    // ---- Fig. 19 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-phases",
        figure: "Fig. 19",
        quote: "there is little overhead introduced by additional stages.",
        gist: "8 phases cost little over 1",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(0.9),
            "ours: \"little overhead\" is 8 phases at least 0.9x 1 phase",
        ),
        rule: ratio(v!("epvs-8-phases").over(v!("epvs-1-phase"))),
    },
    // ---- Fig. 20 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-nesting",
        figure: "Fig. 20",
        quote: Q_FIG20,
        gist: "EPVS barely changes with 4 nested protections",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(0.9),
            "ours: \"very little change\" is 4 nested instances at least 0.9x no nesting",
        ),
        rule: ratio(v!("epvs").with(NESTED4).over(v!("epvs").with(NESTED1))),
    },
    Claim {
        suite: "epvs-nesting",
        figure: "Fig. 20",
        quote: Q_FIG20,
        gist: "BRAVO degrades with 4 nested protections",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(0.67),
            "ours: \"significant degradation\" is 4 nested instances at most 0.67x no nesting",
        ),
        rule: ratio(v!("bravo").with(NESTED4).over(v!("bravo").with(NESTED1))),
    },
    Claim {
        suite: "epvs-nesting",
        figure: "Fig. 20",
        quote: "Because BRAVO uses thread identity as a key to its hash table, nested protection \
                *guarantees* such degenerate case.",
        gist: "why BRAVO degrades",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered(
            "our BRAVO keys its table by thread and lock instance, the fix the seed proposes; \
             nesting one instance four times is shown as context",
        ),
    },
    // ---- Fig. 21 -----------------------------------------------------------------------
    Claim {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        quote: Q_FIG21,
        gist: "EPVS keeps most of its speed when shared",
        row: Row::Seed,
        seed: None,
        band: band(Test::Above(0.5), "ours: \"most\" is more than half"),
        rule: ratio(shared_over_own(v!("epvs"))),
    },
    Claim {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        quote: Q_FIG21,
        gist: "BRAVO drops when shared",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(0.9), "ours: a \"noticeable drop\" is at least 10 %"),
        rule: ratio(shared_over_own(v!("bravo"))),
    },
    Claim {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        quote: Q_FIG21,
        gist: "the latch drops when shared",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(0.9), "ours: a \"noticeable drop\" is at least 10 %"),
        rule: ratio(shared_over_own(v!("rwlock"))),
    },
    Claim {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        quote: Q_FIG21,
        gist: "EPVS keeps more than BRAVO when shared",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: the seed's comparison: EPVS keeps a larger share than BRAVO, at every round",
        ),
        rule: contrast(shared_over_own(v!("epvs")), shared_over_own(v!("bravo"))),
    },
    Claim {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        quote: Q_FIG21,
        gist: "EPVS keeps more than the latch when shared",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: the seed's comparison: EPVS keeps a larger share than the latch, at every round",
        ),
        rule: contrast(shared_over_own(v!("epvs")), shared_over_own(v!("rwlock"))),
    },
];

/// Silences an unused import when no claim reads a latency.
const _: Metric = Metric::OpsPerSec;
