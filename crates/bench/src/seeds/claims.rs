//! The one registry of what the seeds claim, keyed by suite name and figure.
//!
//! One [`Claim`] per figure or table of a seed's evaluation (and one per suite that
//! reproduces no seed figure, marked [`Seed::Project`]). A claim whose seed states a ratio
//! between systems carries [`Check`]s: the report computes the same ratio from our records
//! and judges it ([`super::check`]). A claim about a shape no ratio captures (a peak at 24
//! threads, a curve that stays flat) has no check; its verdict is the `why` text.
//!
//! Parameter names in [`Sel`] are those the suites write into their records. Entries for
//! suites that are not registered yet (`epvs-ownership`, `epvs-checkpoint`, `epvs-phases`,
//! `epvs-nesting`, `epvs-sharing`, `server-latency`) name the parameters and variants their
//! issue (12) specifies; a check that matches no record reads "no data" instead of failing.

/// A seed paper (or the project itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seed {
    /// *Concurrent Range Locking* (Nguyen): W1, W2, height, LeanStore aliasing.
    RangeThesis,
    /// The EPVS paper (*Performant almost-latch-free data structures using epoch protection
    /// in more depth*, Li et al.), §6.
    Epvs,
    /// *Server-sided range locking is better than client-sided locking* (Dezalos), chapter 5;
    /// "Server-sided Range Locking" for short.
    ServerThesis,
    /// No seed figure: suites of this project's own.
    Project,
}

impl Seed {
    /// Every seed, in report order.
    pub const ALL: [Seed; 4] = [Seed::RangeThesis, Seed::Epvs, Seed::ServerThesis, Seed::Project];

    /// The section title: the work's short name, its title and authors (the names the
    /// user-facing text uses: "Concurrent Range Locking", "the EPVS paper", "Server-sided
    /// Range Locking").
    pub fn title(self) -> &'static str {
        match self {
            Seed::RangeThesis => "Concurrent Range Locking (T.-D. Nguyen, TU Munich), §5",
            Seed::Epvs => {
                "The EPVS paper: Performant almost-latch-free data structures using epoch \
                 protection in more depth (Li, Chandramouli, Madden, VLDB Journal 2024), §6"
            }
            Seed::ServerThesis => {
                "Server-sided Range Locking: Server-sided range locking is better than \
                 client-sided locking (J. Dezalos, EPFL), ch. 5"
            }
            Seed::Project => "Project suites (no seed figure)",
        }
    }

    /// The seed's setup, against which our 2-core machine is read.
    pub fn setup(self) -> &'static str {
        match self {
            Seed::RangeThesis => {
                "AMD Ryzen 9 7950X, 16 cores / 32 threads, up to 32 worker threads"
            }
            Seed::Epvs => "Azure D48s_v3, 48 vCPUs on one socket, C#; tables of 4096 entries",
            Seed::ServerThesis => {
                "two Xeon Platinum 8468 machines (2 x 48 cores), ConnectX-6 RDMA, eRPC; \
                 18 server threads"
            }
            Seed::Project => "this project's own questions",
        }
    }
}

/// Which records a side of a ratio takes.
#[derive(Clone, Copy, Debug)]
pub struct Sel {
    /// The variant, or any (then both sides pair by variant).
    pub variant: Option<&'static str>,
    /// Params that must equal these values (numbers compare numerically).
    pub params: &'static [(&'static str, &'static str)],
}

/// What a ratio divides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Median ops/s.
    OpsPerSec,
    /// Sampled p50 latency.
    P50,
    /// Sampled p99 latency.
    P99,
    /// The named numeric extra field of the records (e.g. `instructions_per_txn` of a
    /// counting suite, `round_trips_per_lock` of a server suite).
    Extra(&'static str),
}

/// At which thread count a ratio is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The most threads that do not oversubscribe the cores (else the most there are).
    Cores,
    /// The most threads (clients) measured, oversubscribed or not: for claims about
    /// many clients that mostly wait on the network.
    Most,
}

/// What the seed's ratio says and how ours is judged against it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expect {
    /// The seed measured `seed`; ours at or above it reproduces, at or above `direction`
    /// keeps the direction.
    AtLeast {
        /// The seed's ratio.
        seed: f64,
        /// The smallest ratio still pointing the seed's way.
        direction: f64,
    },
    /// The seed measured `seed` (a ratio below 1); ours at or below it reproduces, at or
    /// below `direction` keeps the direction.
    AtMost {
        /// The seed's ratio.
        seed: f64,
        /// The largest ratio still pointing the seed's way.
        direction: f64,
    },
    /// The seed measured about `seed`; ours in `lo..=hi` reproduces ("about equal").
    Within {
        /// The seed's ratio.
        seed: f64,
        /// Lowest ratio that counts.
        lo: f64,
        /// Highest ratio that counts.
        hi: f64,
    },
    /// No seed value: a ratio shown as a measured reason ([`Claim::because`]), never
    /// judged.
    Reference,
}

/// One ratio the report computes.
#[derive(Clone, Copy, Debug)]
pub struct Check {
    /// `numerator / denominator`, as printed.
    pub label: &'static str,
    /// Numerator records.
    pub num: Sel,
    /// Denominator records (paired with the numerator's on threads and remaining params).
    pub den: Sel,
    /// What is divided.
    pub metric: Metric,
    /// Thread count.
    pub at: At,
    /// The seed's value and how to judge ours.
    pub expect: Expect,
}

/// One figure or table of a seed, and the suite that reproduces it.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// The suite (`<suite>.json`).
    pub suite: &'static str,
    /// `Fig. 5.2`, `Table 5`, or `-` for a project suite.
    pub figure: &'static str,
    /// Whose figure.
    pub seed: Seed,
    /// The seed's claim, one line.
    pub claim: &'static str,
    /// The records shown for this figure (params that must match; empty: all).
    pub show: &'static [(&'static str, &'static str)],
    /// The ratios judged (empty: the verdict is `why`).
    pub checks: &'static [Check],
    /// Measured reasons: ratios from the same run that the `why` rests on (a ceiling the
    /// seed's ratio would need, a peer that does not degrade here), printed after it with
    /// their values. Each one's `expect` is what the seed's ratio would need of it.
    pub because: &'static [Check],
    /// Why ours may differ (appended to a verdict other than reproduced), or the whole
    /// verdict of a claim without checks.
    pub why: &'static str,
}

/// Fig. 11's group of `epvs-array`: no pushes, no resize delay, the default epoch table.
const NO_RESIZE: &[(&str, &str)] =
    &[("push_pct", "0"), ("resize_delay_ms", "0"), ("table_slots", "default")];
/// Fig. 16's two region sizes.
const FINE: &[(&str, &str)] = &[("granularity", "fine"), ("ops_per_region", "1")];
const COARSE: &[(&str, &str)] = &[("granularity", "coarse"), ("ops_per_region", "16384")];
/// Fig. 13's 10 ms resizes, and the same without the delay (its ceiling).
const SLOW_RESIZE: &[(&str, &str)] = &[("resize_delay_ms", "10")];
const FREE_RESIZE: &[(&str, &str)] = &[("resize_delay_ms", "0")];

const fn v(variant: &'static str) -> Sel {
    Sel { variant: Some(variant), params: &[] }
}

const fn vp(variant: &'static str, params: &'static [(&'static str, &'static str)]) -> Sel {
    Sel { variant: Some(variant), params }
}

const fn p(params: &'static [(&'static str, &'static str)]) -> Sel {
    Sel { variant: None, params }
}

const fn ops(label: &'static str, num: Sel, den: Sel, expect: Expect) -> Check {
    Check { label, num, den, metric: Metric::OpsPerSec, at: At::Cores, expect }
}

const fn many(label: &'static str, num: Sel, den: Sel, expect: Expect) -> Check {
    Check { label, num, den, metric: Metric::OpsPerSec, at: At::Most, expect }
}

/// `server-latency`: `variant`'s p50 over `echo`'s.
const fn p50(label: &'static str, variant: &'static str, expect: Expect) -> Check {
    Check { label, num: v(variant), den: v("echo"), metric: Metric::P50, at: At::Cores, expect }
}

/// A ratio of an extra field of a counting suite (see [`Metric::Extra`]).
const fn extra(
    label: &'static str,
    field: &'static str,
    num: Sel,
    den: Sel,
    expect: Expect,
) -> Check {
    Check { label, num, den, metric: Metric::Extra(field), at: At::Cores, expect }
}

/// A measured reason shown with its value only (see [`Claim::because`]).
const fn reference(label: &'static str, num: Sel, den: Sel) -> Check {
    ops(label, num, den, Expect::Reference)
}

/// A measured reason taken at the most threads measured (oversubscribed included).
const fn reference_most(label: &'static str, num: Sel, den: Sel) -> Check {
    many(label, num, den, Expect::Reference)
}

const fn at_least(seed: f64) -> Expect {
    Expect::AtLeast { seed, direction: 1.0 }
}

const fn about(seed: f64, lo: f64, hi: f64) -> Expect {
    Expect::Within { seed, lo, hi }
}

/// The `exclusive_pct` groups of `server-micro`.
const X0: &[(&str, &str)] = &[("exclusive_pct", "0")];
const X1: &[(&str, &str)] = &[("exclusive_pct", "1")];
const X20: &[(&str, &str)] = &[("exclusive_pct", "20")];
const X100: &[(&str, &str)] = &[("exclusive_pct", "100")];

/// The client-sided locks in local shared memory (no network): shown only as labelled
/// references, never as the Server-sided Range Locking comparator (test
/// `server_claims_compare_over_the_network`).
pub const LOCAL_MEMORY: &[&str] = &["dslr-shm", "citron-like", "shm-read", "shm-cas", "shm-faa"];

/// The measured reasons of the server figures: how many more round trips a client-sided
/// lock waits for per acquisition than the combiner (the paper's argument), and the
/// local-memory references against the combiner.
const fn round_trips_and_local(x: &'static [(&'static str, &'static str)]) -> [Check; 4] {
    let rt = Metric::Extra("round_trips_per_lock");
    [
        Check {
            label: "dslr-redis / combiner, round trips per lock",
            num: vp("dslr-redis", x),
            den: vp("combiner", x),
            metric: rt,
            at: At::Most,
            expect: Expect::Reference,
        },
        Check {
            label: "citron-redis / combiner, round trips per lock",
            num: vp("citron-redis", x),
            den: vp("combiner", x),
            metric: rt,
            at: At::Most,
            expect: Expect::Reference,
        },
        reference_most(
            "combiner / dslr-shm (local memory, no network)",
            vp("combiner", x),
            vp("dslr-shm", x),
        ),
        reference_most(
            "combiner / citron-like (local memory, no network)",
            vp("combiner", x),
            vp("citron-like", x),
        ),
    ]
}

/// Why the server figures may differ here.
const SERVER_WHY: &str = "the client-sided locks pay one loopback round trip per remote \
    operation (or batch) as on RDMA, the server one per request: the round trips measured \
    next are the paper's argument; but client threads, server and redis-server share this \
    machine's cores, so a round trip costs CPU time on the same cores the server needs, \
    where the paper's NICs execute one-sided operations without the server's CPU";

/// The measured reasons of W1 and W2: how close each lock comes to the same workload
/// with no lock at all, at the threads compared.
const SHARE_OF_UNLOCKED: &[Check] = &[
    reference("rangelock / unlocked", v("rangelock"), v("unlocked")),
    reference("kogan-list / unlocked", v("kogan-list"), v("unlocked")),
    reference("song-skiplist / unlocked", v("song-skiplist"), v("unlocked")),
];

/// Why W1 and W2 may differ: read with [`SHARE_OF_UNLOCKED`].
const NOT_YET_CONTENDED: &str = "the ratios to unlocked above bound every gap: no lock can \
    beat another by more than their shares of the no-lock run differ, and at the threads this \
    machine has the peers still keep that share; the seed's gaps open at 16-32 threads";

/// Every claim, in report order within each seed.
pub const CLAIMS: &[Claim] = &[
    // ---- Concurrent Range Locking ----------------------------------------------------------
    Claim {
        suite: "height",
        figure: "Fig. 5.1",
        seed: Seed::RangeThesis,
        claim: "Skip-list height barely matters for W1; for W2 runtime falls with height, with \
                diminishing returns beyond 10 (chosen height: 10).",
        show: &[],
        checks: &[ops(
            "W2 ops/s at height 16 / height 10",
            p(&[("height", "16")]),
            p(&[("height", "10")]),
            about(1.0, 0.9, 1.15),
        )],
        because: &[],
        why: "our lock defaults to height 12; at 2 threads x 16 held ranges the list stays short",
    },
    Claim {
        suite: "w1",
        figure: "Fig. 5.2",
        seed: Seed::RangeThesis,
        claim: "W1: Our lock scales and does 4x the operations of Scalable RL (kogan-list) and \
                12x those of Song RL (song-skiplist).",
        show: &[],
        checks: &[
            ops("rangelock / kogan-list", v("rangelock"), v("kogan-list"), at_least(4.0)),
            ops("rangelock / song-skiplist", v("rangelock"), v("song-skiplist"), at_least(12.0)),
        ],
        because: SHARE_OF_UNLOCKED,
        why: NOT_YET_CONTENDED,
    },
    Claim {
        suite: "w2",
        figure: "Fig. 5.3",
        seed: Seed::RangeThesis,
        claim: "W2 (batches of 16): Our lock does 2-9x Scalable RL and 2-6x Song RL; Song RL beats \
                Scalable RL up to 16 threads.",
        show: &[],
        checks: &[
            ops("rangelock / kogan-list", v("rangelock"), v("kogan-list"), at_least(2.0)),
            ops("rangelock / song-skiplist", v("rangelock"), v("song-skiplist"), at_least(2.0)),
            ops("song-skiplist / kogan-list", v("song-skiplist"), v("kogan-list"), at_least(1.0)),
        ],
        because: SHARE_OF_UNLOCKED,
        why: NOT_YET_CONTENDED,
    },
    Claim {
        suite: "aliasing",
        figure: "Fig. 5.4",
        seed: Seed::RangeThesis,
        claim: "LeanStore aliasing area, 1 MB blobs: the Bitmap lock (our segments) is best, Our lock \
                closely trails it; Song RL collapses beyond 24 threads; Scalable RL is far lower.",
        show: &[],
        checks: &[
            ops("rangelock / segments", v("rangelock"), v("segments"), about(0.95, 0.8, 1.05)),
            ops("rangelock / kogan-list", v("rangelock"), v("kogan-list"), at_least(1.5)),
        ],
        because: &[],
        why: "at 1-2 threads the two 1 MiB copies dominate every transaction (the lock is under 0.05% of \
              its instructions, docs/BENCH.md), so differences between locks are small next to the \
              noise of short runs on a shared machine; the seed's gaps come from 16-32 workers \
              sharing the L3",
    },
    Claim {
        suite: "aliasing-counts",
        figure: "Fig. 5.5",
        seed: Seed::RangeThesis,
        claim: "Cycles, instructions and L1 misses per transaction stay flat with threads for \
                Bitmap and Our lock; Song RL's instructions rise with threads.",
        show: &[],
        // The seed's claim is about threads: at 1 thread the counts are shown, not judged.
        checks: &[],
        because: &[
            extra(
                "rangelock / segments, instructions per txn (cachegrind)",
                "instructions_per_txn",
                v("rangelock"),
                v("segments"),
                Expect::Reference,
            ),
            extra(
                "song-skiplist / rangelock, instructions per txn (cachegrind)",
                "instructions_per_txn",
                v("song-skiplist"),
                v("rangelock"),
                Expect::Reference,
            ),
            extra(
                "rangelock / segments, simulated L1d misses per txn",
                "l1d_misses_per_txn",
                v("rangelock"),
                v("segments"),
                Expect::Reference,
            ),
        ],
        why: "counted at 1 thread under valgrind's cachegrind: instructions, and L1d misses of \
              its simulated 32 KiB cache, not the hardware's; cycles and the growth with \
              threads need hardware counters, which this machine lacks (perf: not supported), \
              so the seed's rise of Song RL with threads cannot be checked; at 1 thread the \
              two 1 MiB copies are almost all of a transaction's instructions and misses",
    },
    // ---- The EPVS paper -------------------------------------------------------------------
    Claim {
        suite: "epvs-array",
        figure: "Fig. 11",
        seed: Seed::Epvs,
        claim: "Resizable array, no resize (50% read / 50% write): EPVS scales like the latch-free \
                mock and far above latched arrays; EPVS ~ BRAVO; pinned EPVS is best of the real ones.",
        show: &[("push_pct", "0"), ("resize_delay_ms", "0")],
        checks: &[
            ops("epvs / rwlock-std", vp("epvs", NO_RESIZE), vp("rwlock-std", NO_RESIZE), at_least(2.0)),
            ops("epvs / bravo", vp("epvs", NO_RESIZE), vp("bravo", NO_RESIZE), about(1.0, 0.8, 1.25)),
            ops(
                "epvs-pinned / bravo",
                vp("epvs-pinned", NO_RESIZE),
                vp("bravo", NO_RESIZE),
                at_least(1.2),
            ),
        ],
        because: &[
            reference("epvs / latch-free-mock", vp("epvs", NO_RESIZE), vp("latch-free-mock", NO_RESIZE)),
            reference("bravo / latch-free-mock", vp("bravo", NO_RESIZE), vp("latch-free-mock", NO_RESIZE)),
        ],
        why: "an array operation alone takes a few ns here, so each scheme's fixed cost per \
              operation sets the ratios: an EPVS region (a plain store in, a store out) costs \
              less than a BRAVO read lock (a CAS into its table, a re-check, a store out), so \
              EPVS runs above BRAVO rather than level with it",
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 12",
        seed: Seed::Epvs,
        claim: "With pushes (array starts empty): push does not scale (contention at the tail); \
                2-phase EPVS shows no real advantage over simple EPVS at low push rates.",
        show: &[("resize_delay_ms", "0")],
        checks: &[ops(
            "epvs-2phase / epvs at 10% push",
            vp("epvs-2phase", &[("push_pct", "10"), ("resize_delay_ms", "0")]),
            vp("epvs", &[("push_pct", "10"), ("resize_delay_ms", "0")]),
            about(1.0, 0.8, 1.25),
        )],
        because: &[reference(
            "epvs-2phase / epvs at 0% push",
            vp("epvs-2phase", &[("push_pct", "0"), ("resize_delay_ms", "0")]),
            vp("epvs", &[("push_pct", "0"), ("resize_delay_ms", "0")]),
        )],
        why: "without resizes the two arrays differ only in the 2-phase array's test for a \
              resize in progress on every operation",
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 13",
        seed: Seed::Epvs,
        claim: "With a 10 ms delay per resize the 2-phase EPVS array clearly outperforms simple EPVS.",
        show: &[("resize_delay_ms", "10")],
        checks: &[ops(
            "epvs-2phase / epvs, 10 ms resize",
            vp("epvs-2phase", SLOW_RESIZE),
            vp("epvs", SLOW_RESIZE),
            at_least(1.5),
        )],
        because: &[ops(
            "epvs without / with the 10 ms resize",
            vp("epvs", FREE_RESIZE),
            vp("epvs", SLOW_RESIZE),
            at_least(1.5),
        )],
        why: "the resizes are a small share of the run, and at 2 threads only the other worker \
              can go on while one sleeps in a resize: even resizes that cost nothing would make \
              `epvs` only as much faster as measured here, which bounds what any resize scheme \
              gains over it (the seed's gap needs dozens of workers going on during a resize); \
              quick runs leave the 10 ms delay out",
    },
    Claim {
        suite: "epvs-array",
        figure: "Fig. 14",
        seed: Seed::Epvs,
        claim: "With the hash table cut to 128 entries, EPVS stays robust while BRAVO degrades \
                (BRAVO falls back to its slow path on collisions; EPVS probes linearly).",
        show: &[],
        checks: &[ops(
            "epvs / bravo, 128-slot table",
            vp("epvs", &[("table_slots", "128")]),
            vp("bravo", &[("table_slots", "128")]),
            at_least(1.5),
        )],
        because: &[ops(
            "bravo at 128 slots / its default table",
            vp("bravo", &[("table_slots", "128")]),
            vp("bravo", NO_RESIZE),
            Expect::AtMost { seed: 0.67, direction: 1.0 },
        )],
        why: "BRAVO slows down only when readers collide in its table, and 2 threads rarely do \
              even in 128 slots, so it keeps its speed",
    },
    Claim {
        suite: "epvs-ownership",
        figure: "Fig. 15",
        seed: Seed::Epvs,
        claim: "Sharded KV with ownership validation (YCSB 50:50, uniform): EPVS validation scales \
                like no validation and far better than validation under a reader-writer latch.",
        show: &[],
        checks: &[
            ops(
                "epvs-validation / no-validation",
                v("epvs-validation"),
                v("no-validation"),
                Expect::AtLeast { seed: 0.9, direction: 0.7 },
            ),
            ops(
                "epvs-validation / rwlock-validation",
                v("epvs-validation"),
                v("rwlock-validation"),
                at_least(2.0),
            ),
        ],
        because: &[
            ops(
                "check-only / no-validation",
                v("check-only"),
                v("no-validation"),
                Expect::AtLeast { seed: 0.9, direction: 0.7 },
            ),
        ],
        why: "the ownership check itself is a large share of these short operations (a few ns): \
              even a check that decides nothing (`check-only`, the floor of any validation) \
              reaches only the ratio below of `no-validation`",
    },
    Claim {
        suite: "epvs-checkpoint",
        figure: "Fig. 16",
        seed: Seed::Epvs,
        claim: "Checkpointed KV: fine-grained (1 op per region) EPVS keeps most of CPR's throughput; \
                coarse-grained (16 384 ops per region) the hand-written CPR outperforms EPVS.",
        show: &[],
        checks: &[
            ops(
                "epvs / cpr-epoch, 1 op per region",
                vp("epvs", &[("ops_per_region", "1")]),
                vp("cpr-epoch", &[("ops_per_region", "1")]),
                Expect::AtLeast { seed: 0.8, direction: 0.6 },
            ),
            ops(
                "epvs / cpr-epoch, 16 384 ops per region",
                vp("epvs", &[("ops_per_region", "16384")]),
                vp("cpr-epoch", &[("ops_per_region", "16384")]),
                Expect::AtMost { seed: 0.8, direction: 1.0 },
            ),
        ],
        because: &[
            reference("epvs at 16 384 / at 1 op per region", vp("epvs", COARSE), vp("epvs", FINE)),
            reference(
                "cpr-epoch at 16 384 / at 1 op per region",
                vp("cpr-epoch", COARSE),
                vp("cpr-epoch", FINE),
            ),
        ],
        why: "EPVS falls behind CPR at coarse grain by the wait, in each checkpoint's \
              transition, for every other worker to reach its next refresh point; with one \
              other worker that wait is a small share of a checkpoint interval, so EPVS gains \
              from coarse regions at least as much as CPR does (measured)",
    },
    Claim {
        suite: "epvs-freq",
        figure: "Fig. 17",
        seed: Seed::Epvs,
        claim: "Version-change frequency p: EPVS stays competitive with latch-free while changes are \
                rare and degrades as they become frequent; latched is far below.",
        show: &[],
        checks: &[
            ops(
                "epvs / latch-free at p = 1e-4",
                vp("epvs", &[("p_change", "1e-4")]),
                vp("latch-free", &[("p_change", "1e-4")]),
                Expect::AtLeast { seed: 0.8, direction: 0.5 },
            ),
            ops(
                "epvs / latched at p = 1e-4",
                vp("epvs", &[("p_change", "1e-4")]),
                vp("latched", &[("p_change", "1e-4")]),
                at_least(2.0),
            ),
            ops(
                "epvs at p = 1 / at p = 1e-4",
                vp("epvs", &[("p_change", "1")]),
                vp("epvs", &[("p_change", "1e-4")]),
                Expect::AtMost { seed: 0.5, direction: 1.0 },
            ),
        ],
        because: &[
            ops(
                "epvs / latch-free at p = 1e-6",
                vp("epvs", &[("p_change", "1e-6")]),
                vp("latch-free", &[("p_change", "1e-6")]),
                Expect::AtLeast { seed: 0.8, direction: 0.5 },
            ),
        ],
        why: "the simulated operation (64 bytes hashed) takes about 4 ns here (`latch-free`'s \
              ns/op), and a region's enter and leave a few ns more: EPVS stays near half of \
              `latch-free` even when the version (almost) never changes",
    },
    Claim {
        suite: "epvs-table",
        figure: "Fig. 18",
        seed: Seed::Epvs,
        claim: "Epoch-table size (p = 1e-4): small tables cut EPVS's scalability (>= 2x threads \
                suffices); Refresh (pinned) helps small tables; BRAVO needs a much larger table.",
        show: &[],
        checks: &[
            ops(
                "epvs at 1024 slots / at 16 slots",
                vp("epvs", &[("table_slots", "1024")]),
                vp("epvs", &[("table_slots", "16")]),
                at_least(1.2),
            ),
            ops(
                "bravo at 1024 slots / at 16 slots",
                vp("bravo", &[("table_slots", "1024")]),
                vp("bravo", &[("table_slots", "16")]),
                at_least(1.5),
            ),
        ],
        because: &[
            reference_most(
                "epvs at 1024 / at 16 slots, most threads",
                vp("epvs", &[("table_slots", "1024")]),
                vp("epvs", &[("table_slots", "16")]),
            ),
            reference_most(
                "bravo at 1024 / at 16 slots, most threads",
                vp("bravo", &[("table_slots", "1024")]),
                vp("bravo", &[("table_slots", "16")]),
            ),
        ],
        why: "a table is crowded by the threads inside regions at once: 2 threads crowd neither \
              16 slots nor 1024; with 16 threads (oversubscribed, so preempted inside regions) \
              the seed's effect appears, as measured",
    },
    Claim {
        suite: "epvs-phases",
        figure: "Fig. 19",
        seed: Seed::Epvs,
        claim: "A fixed amount of version-change work split over 1..8 phases adds little overhead.",
        show: &[],
        checks: &[ops(
            "8 phases / 1 phase",
            v("epvs-8-phases"),
            v("epvs-1-phase"),
            Expect::AtLeast { seed: 0.9, direction: 0.7 },
        )],
        because: &[reference("4 phases / 1 phase", v("epvs-4-phases"), v("epvs-1-phase"))],
        why: "each phase is one more version change, whose epoch drain waits for the other \
              worker's region",
    },
    Claim {
        suite: "epvs-nesting",
        figure: "Fig. 20",
        seed: Seed::Epvs,
        claim: "4 nested protections: EPVS barely changes, BRAVO degrades sharply (nested instances \
                collide in its shared table by thread id).",
        show: &[],
        checks: &[
            ops(
                "epvs nesting 4 / nesting 1",
                vp("epvs", &[("nesting", "4")]),
                vp("epvs", &[("nesting", "1")]),
                Expect::AtLeast { seed: 0.8, direction: 0.5 },
            ),
            ops(
                "epvs / bravo at nesting 4",
                vp("epvs", &[("nesting", "4")]),
                vp("bravo", &[("nesting", "4")]),
                at_least(2.0),
            ),
        ],
        because: &[
            ops(
                "bravo nesting 4 / nesting 1",
                vp("bravo", &[("nesting", "4")]),
                vp("bravo", &[("nesting", "1")]),
                Expect::AtMost { seed: 0.5, direction: 1.0 },
            ),
        ],
        why: "each protection costs EPVS a few ns, as much as the 64-byte hash it protects (see \
              the ns/op at nesting 1), so four of them cost most of its throughput; BRAVO does \
              degrade sharply when nesting on one instance (measured), but hashes (thread, \
              lock), so four distinct instances do not collide in its table as the seed's did",
    },
    Claim {
        suite: "epvs-sharing",
        figure: "Fig. 21",
        seed: Seed::Epvs,
        claim: "8 instances vs one shared by all threads (p = 1e-4): EPVS keeps most of its \
                scalability when shared; BRAVO and the reader-writer latch drop noticeably.",
        show: &[],
        checks: &[
            ops(
                "epvs shared / epvs 8 instances",
                vp("epvs", &[("sharing", "shared")]),
                vp("epvs", &[("sharing", "8-instances")]),
                Expect::AtLeast { seed: 0.8, direction: 0.5 },
            ),
            ops(
                "epvs / bravo, shared",
                vp("epvs", &[("sharing", "shared")]),
                vp("bravo", &[("sharing", "shared")]),
                at_least(1.5),
            ),
        ],
        because: &[
            ops(
                "bravo shared / bravo 8 instances",
                vp("bravo", &[("sharing", "shared")]),
                vp("bravo", &[("sharing", "8-instances")]),
                Expect::AtMost { seed: 0.67, direction: 1.0 },
            ),
            reference(
                "rwlock shared / rwlock 8 instances",
                vp("rwlock", &[("sharing", "shared")]),
                vp("rwlock", &[("sharing", "8-instances")]),
            ),
        ],
        why: "sharing costs EPVS its changes (p = 1e-4): a change of the shared instance waits \
              for the other thread's region and interrupts it, while with 8 instances nobody \
              else is inside the changed one; BRAVO keeps most of its speed shared between 2 \
              cores (measured)",
    },
    // ---- Server-sided Range Locking ----------------------------------------------------------
    Claim {
        suite: "server-latency",
        figure: "Table 5",
        seed: Seed::ServerThesis,
        claim: "Network latency p50 / p99: eRPC 3.52 / 4.18 us, RDMA read 2.74 / 2.86 us, RDMA \
                atomic 2.79 / 3.29 us (a one-sided read costs 0.78x an RPC, an atomic 0.79x).",
        show: &[],
        checks: &[
            p50("redis-get p50 / echo p50", "redis-get", Expect::Within { seed: 0.78, lo: 0.5, hi: 1.0 }),
            p50("redis-cas p50 / echo p50", "redis-cas", Expect::Within { seed: 0.79, lo: 0.5, hi: 1.0 }),
            p50("redis-faa p50 / echo p50", "redis-faa", Expect::Within { seed: 0.79, lo: 0.5, hi: 1.0 }),
        ],
        because: &[
            p50("shm-read p50 / echo p50 (local memory, no network)", "shm-read", Expect::Reference),
            p50("shm-cas p50 / echo p50 (local memory, no network)", "shm-cas", Expect::Reference),
        ],
        why: "a one-sided operation here is a command a server process executes (Redis), so it \
              pays the same loopback round trip through the kernel as an RPC does (the ratios \
              above), where an RDMA NIC answers without the remote CPU",
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        seed: Seed::ServerThesis,
        claim: "0% writes: the server-sided locks (combiners, interval tree) beat the client-sided \
                ones (static segmentation, Citron); all peak around 16-24 clients.",
        show: &[("exclusive_pct", "0")],
        checks: &[
            many("combiner / dslr-redis", vp("combiner", X0), vp("dslr-redis", X0), at_least(1.2)),
            many("combiner / citron-redis", vp("combiner", X0), vp("citron-redis", X0), at_least(1.2)),
        ],
        because: &round_trips_and_local(X0),
        why: SERVER_WHY,
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 6",
        seed: Seed::ServerThesis,
        claim: "1% writes: as at 0%; the interval tree falls off at many clients as polling eats \
                its single server thread.",
        show: &[("exclusive_pct", "1")],
        checks: &[
            many("combiner / dslr-redis", vp("combiner", X1), vp("dslr-redis", X1), at_least(1.2)),
            many("combiner / citron-redis", vp("combiner", X1), vp("citron-redis", X1), at_least(1.2)),
        ],
        because: &round_trips_and_local(X1),
        why: SERVER_WHY,
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        seed: Seed::ServerThesis,
        claim: "20% writes: server-sided locks still ahead but by less; the combiner polling over \
                RDMA handles contention worse than the one polling over RPC.",
        show: &[("exclusive_pct", "20")],
        checks: &[
            many(
                "combiner / dslr-redis",
                vp("combiner", X20),
                vp("dslr-redis", X20),
                Expect::AtLeast { seed: 1.1, direction: 1.0 },
            ),
            many(
                "combiner / citron-redis",
                vp("combiner", X20),
                vp("citron-redis", X20),
                Expect::AtLeast { seed: 1.1, direction: 1.0 },
            ),
            many(
                "combiner / combiner-shm-poll",
                vp("combiner", X20),
                vp("combiner-shm-poll", X20),
                at_least(1.1),
            ),
        ],
        because: &round_trips_and_local(X20),
        why: SERVER_WHY,
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        seed: Seed::ServerThesis,
        claim: "100% writes: no design is clearly better than the others.",
        show: &[("exclusive_pct", "100")],
        checks: &[
            many(
                "combiner / dslr-redis",
                vp("combiner", X100),
                vp("dslr-redis", X100),
                about(1.0, 0.67, 1.5),
            ),
            many(
                "combiner / citron-redis",
                vp("combiner", X100),
                vp("citron-redis", X100),
                about(1.0, 0.67, 1.5),
            ),
        ],
        because: &round_trips_and_local(X100),
        why: "with every request exclusive the client-sided locks wait by polling, and here \
              each poll is a loopback round trip whose CPU the server and the other clients \
              need (the round trips per lock measured next); the paper's polls cost NIC time, not \
              the server's CPU, so its client-sided locks kept up",
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        seed: Seed::ServerThesis,
        claim: "Filebench-OLTP mix, 48 clients: combiner over eRPC 286 kops/s, 1.76x the best \
                client-sided lock (Citron 163k, static segmentation 162k); combiner over RDMA 148k, \
                interval tree 125k.",
        show: &[],
        checks: &[
            many("combiner / dslr-redis", v("combiner"), v("dslr-redis"), at_least(1.76)),
            many("combiner / citron-redis", v("combiner"), v("citron-redis"), at_least(1.75)),
            many("combiner / combiner-shm-poll", v("combiner"), v("combiner-shm-poll"), at_least(1.94)),
            many("combiner / tree-single", v("combiner"), v("tree-single"), at_least(2.3)),
        ],
        because: &round_trips_and_local(&[]),
        why: SERVER_WHY,
    },
    Claim {
        suite: "server-threads",
        figure: "§5.1 server threads",
        seed: Seed::ServerThesis,
        claim: "Out of 1,2,4,8 and 18 server processes, the best throughput was achieved \
                consistently when the server had only one server thread (the interval tree; \
                the combiners ran 18); whether the server saturates is left to future work.",
        show: &[],
        checks: &[],
        because: &[],
        why: "not judged yet: the records give ops/s at 1, 2 and 4 handler threads with how \
              busy each server thread was (combiner_busy, handlers_busy, process_busy)",
    },
    // ---- Project suites --------------------------------------------------------------------
    Claim {
        suite: "contended",
        figure: "-",
        seed: Seed::Project,
        claim: "Random overlapping ranges, 0/20/100% exclusive: how each lock behaves when ranges \
                really conflict (the seeds only measure disjoint ranges).",
        show: &[],
        checks: &[],
        because: &[],
        why: "no seed claim to compare with",
    },
    Claim {
        suite: "held",
        figure: "-",
        seed: Seed::Project,
        claim: "W1 while K ranges per thread stay held: the cost of a lock as a function of how \
                many ranges it holds.",
        show: &[],
        checks: &[],
        because: &[],
        why: "no seed claim to compare with",
    },
    Claim {
        suite: "mixed",
        figure: "-",
        seed: Seed::Project,
        claim: "Ranges of 1 unit to 1 Mi at random places of a 2^40-unit domain, 0/20/100% \
                exclusive (and, in full runs, with a reader and a wide writer held elsewhere): \
                the lock outside W1's best case.",
        show: &[],
        checks: &[],
        because: &[],
        why: "no seed claim to compare with",
    },
    Claim {
        suite: "memory",
        figure: "-",
        seed: Seed::Project,
        claim: "Heap bytes of an idle lock and per held range (1, 1000, 100 000 ranges held).",
        show: &[],
        checks: &[],
        because: &[],
        why: "no seed claim to compare with; needs the counting allocator (the rangelock \
              command installs it)",
    },
    Claim {
        suite: "epvs-ops",
        figure: "-",
        seed: Seed::Project,
        claim: "The cost of one protection (enter + leave, refresh, read lock) alone and around a \
                relaxed load.",
        show: &[],
        checks: &[],
        because: &[],
        why: "no seed claim to compare with",
    },
    Claim {
        suite: "cluster",
        figure: "-",
        seed: Seed::Project,
        claim: "server-micro's cycle through the etcd-backed cluster (1-3 nodes) against one \
                server; bar: cluster-1 >= 0.8x single.",
        show: &[],
        checks: &[ops("cluster-1 / single", v("cluster-1"), v("single"), Expect::AtLeast {
            seed: 0.8,
            direction: 0.8,
        })],
        because: &[],
        why: "needs etcd (bash ci/install-etcd.sh); without it the suite has no cases",
    },
    Claim {
        suite: "cluster-failover",
        figure: "-",
        seed: Seed::Project,
        claim: "A node crashes holding 32 locks: the first new grant on its partitions within \
                TTL + grace + 1 s, every lock reclaimed.",
        show: &[],
        checks: &[],
        because: &[],
        why: "the bar holds when first_grant_ms is at most bar_ms (TTL + grace + 1 s) and \
              lost is 0, as the table shows",
    },
];

/// The claims of `suite`, in registry order.
pub fn for_suite(suite: &str) -> impl Iterator<Item = &'static Claim> + '_ {
    CLAIMS.iter().filter(move |c| c.suite == suite)
}

/// The distinct suite names of the registry, in order of first appearance.
pub fn suites() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for c in CLAIMS {
        if !out.contains(&c.suite) {
            out.push(c.suite);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server-sided study's figures judge server-sided locks against client-sided
    /// ones over the same network; local-memory peers appear only as labelled references.
    #[test]
    fn server_claims_compare_over_the_network() {
        let local = |sel: &Sel| sel.variant.is_some_and(|v| LOCAL_MEMORY.contains(&v));
        for claim in CLAIMS.iter().filter(|c| c.seed == Seed::ServerThesis) {
            for check in claim.checks {
                assert!(
                    !local(&check.num) && !local(&check.den),
                    "{} {}: {} judges against a local-memory variant",
                    claim.suite,
                    claim.figure,
                    check.label
                );
            }
            for check in claim.because {
                assert!(
                    !(local(&check.num) || local(&check.den))
                        || check.label.contains("local memory"),
                    "{} {}: {} shows a local-memory variant without saying so",
                    claim.suite,
                    claim.figure,
                    check.label
                );
            }
        }
        // The list is the suites' own: every local-memory peer of the server suites is in it.
        for name in crate::suites::server_micro::local_memory_variants() {
            assert!(LOCAL_MEMORY.contains(&name), "{name} missing from LOCAL_MEMORY");
        }
    }

    /// Every EPVS and server figure's reason, and W1's and W2's, rests on ratios from the
    /// run ([`Claim::because`]), not on a guess about cores; a reference ratio is never
    /// judged as a seed's claim.
    #[test]
    fn reasons_are_measured() {
        for claim in CLAIMS {
            assert!(
                claim.checks.iter().all(|c| c.expect != Expect::Reference),
                "{} {}: a judged check without a seed value",
                claim.suite,
                claim.figure
            );
            // The EPVS and server figures, and the lock-against-lock figures W1 and W2.
            let measured = matches!(claim.seed, Seed::Epvs | Seed::ServerThesis)
                || ["w1", "w2"].contains(&claim.suite);
            if measured {
                assert!(
                    !claim.because.is_empty(),
                    "{} {}: the reason names no measured ratio",
                    claim.suite,
                    claim.figure
                );
            }
        }
    }
}
