//! The project's own suites: what each asks, and the bars we set (ours, not a seed's).

use super::{band, ratio, v};
use crate::seeds::claims::{At, Claim, Figure, Metric, Pick, Row, Rule, Seed, Side, Test};

const fn project(suite: &'static str, caption: &'static str) -> Figure {
    Figure {
        suite,
        figure: "-",
        seed: Seed::Project,
        section: "-",
        caption,
        show: &[],
        caveats: &[],
        context: &[],
    }
}

pub(super) const FIGURES: &[Figure] = &[
    project(
        "contended",
        "Random overlapping ranges, 0/20/100 % exclusive: how each lock behaves when ranges \
         really conflict (the seeds measure disjoint ranges only).",
    ),
    project(
        "held",
        "W1 while K ranges per thread stay held: the cost of a lock as a function of how many \
         ranges it holds.",
    ),
    project(
        "mixed",
        "Ranges of 1 unit to 1 Mi at random places of a 2^40-unit domain, 0/20/100 % \
         exclusive: the lock outside W1's best case.",
    ),
    project("memory", "Heap bytes of an idle lock and per held range (1, 1000, 100 000 held)."),
    project(
        "epvs-ops",
        "The cost of one protection (enter + leave, refresh, a read lock) alone and around a \
         relaxed load.",
    ),
    Figure {
        caveats: &["Server threads are rangelockd's handler threads; with 4 of them the server \
             oversubscribes the 2 cores, and every client is a thread on the same cores."],
        context: &[
            (
                "combiner / echo, 1 handler thread",
                v!("combiner")
                    .with(&[("handler_threads", "1"), ("exclusive_pct", "20")])
                    .most()
                    .over(
                        v!("echo")
                            .with(&[("handler_threads", "1"), ("exclusive_pct", "20")])
                            .most(),
                    ),
            ),
            (
                "combiner / echo, 2 handler threads",
                v!("combiner")
                    .with(&[("handler_threads", "2"), ("exclusive_pct", "20")])
                    .most()
                    .over(
                        v!("echo")
                            .with(&[("handler_threads", "2"), ("exclusive_pct", "20")])
                            .most(),
                    ),
            ),
        ],
        ..project(
            "server-threads",
            "Does the server saturate, and which of its threads? The combiner, the shared tree \
             and echo (which decides nothing) at the most clients with 1, 2 and 4 handler \
             threads, with how busy each server thread was.",
        )
    },
    project(
        "cluster",
        "server-micro's cycle through the etcd-backed cluster (1-3 nodes) against one server, \
         and 3 nodes on 1 000 names: each node's share of their grants.",
    ),
    project(
        "cluster-failover",
        "A node holding 32 locks crashes: when its partitions grant again, and whether every \
         lock was reclaimed.",
    ),
    project(
        "server-names",
        "What a resource name costs: 16 clients on the unnamed resource or on 1, 1000 or \
         1000000 names, and the server's heap per held lock and after the release.",
    ),
    project(
        "server-cached",
        "Cached locks with callbacks: 1, 16 and 48 clients working in their own regions, in \
         interleaved blocks, in pairs on one range, or the seed's micro mixes; uncached, \
         cached under our policy, and Lustre's two policies.",
    ),
];

const LOCAL: &[(&str, &str)] = &[("workload", "local")];
const STRIDED: &[(&str, &str)] = &[("workload", "strided")];
const PINGPONG: &[(&str, &str)] = &[("workload", "pingpong")];
const MIX0: &[(&str, &str)] = &[("workload", "mix-0")];
const MIX1: &[(&str, &str)] = &[("workload", "mix-1")];
const MIX20: &[(&str, &str)] = &[("workload", "mix-20")];
const MIX100: &[(&str, &str)] = &[("workload", "mix-100")];

/// The ops/s of `variants` (`v!` for a list).
const fn side(variants: &'static [&'static str]) -> Side {
    Side { variants, pick: Pick::Min, params: &[], at: At::Cores, metric: Metric::OpsPerSec }
}

/// A `server-cached` claim: `variant` over `over` at 16 clients in `workload`.
const fn cached_claim(
    quote: &'static str,
    gist: &'static str,
    workload: &'static [(&'static str, &'static str)],
    variant: &'static [&'static str],
    over: &'static [&'static str],
    test: Test,
) -> Claim {
    cached_claim_because(
        quote,
        gist,
        workload,
        variant,
        over,
        test,
        "the cached-locks issue's bar, at 16 clients",
    )
}

/// A mix claim against the floor: `cached` over `cached-off` (the cached client with
/// caching refused), the bar we propose where the floor is below the issue's.
const fn floor_claim(
    quote: &'static str,
    gist: &'static str,
    workload: &'static [(&'static str, &'static str)],
) -> Claim {
    cached_claim_because(
        quote,
        gist,
        workload,
        &["cached"],
        &["cached-off"],
        Test::AtLeast(0.9),
        "ours: the floor `cached-off` (the same client, caching refused) is below the \
         issue's 0.9x `combiner`, so caching may cost at most a tenth of the floor",
    )
}

/// [`cached_claim`] with its band's reason.
const fn cached_claim_because(
    quote: &'static str,
    gist: &'static str,
    workload: &'static [(&'static str, &'static str)],
    variant: &'static [&'static str],
    over: &'static [&'static str],
    test: Test,
    reason: &'static str,
) -> Claim {
    Claim {
        suite: "server-cached",
        figure: "-",
        quote,
        gist,
        row: Row::Seed,
        seed: None,
        band: band(test, reason),
        rule: ratio(
            side(variant).with(workload).threads(16).over(side(over).with(workload).threads(16)),
        ),
    }
}

pub(super) const CLAIMS: &[Claim] = &[
    cached_claim(
        "Clients working in their own regions lock at least 20x faster cached than uncached.",
        "local: cached >= 20x combiner",
        LOCAL,
        &["cached"],
        &["combiner"],
        Test::AtLeast(20.0),
    ),
    cached_claim(
        "Strided writers run cached at least as fast as uncached.",
        "strided: cached >= 1.0x combiner",
        STRIDED,
        &["cached"],
        &["combiner"],
        Test::AtLeast(1.0),
    ),
    cached_claim(
        "Strided writers run at least 2x faster under our policy than under always-expand.",
        "strided: cached >= 2x cached-expand-all",
        STRIDED,
        &["cached"],
        &["cached-expand-all"],
        Test::AtLeast(2.0),
    ),
    cached_claim(
        "Two clients taking turns on one range keep at least half the uncached rate.",
        "pingpong: cached >= 0.5x combiner",
        PINGPONG,
        &["cached"],
        &["combiner"],
        Test::AtLeast(0.5),
    ),
    cached_claim(
        "The seed's 0 % mix runs cached at least 0.9x uncached.",
        "mix-0: cached >= 0.9x combiner",
        MIX0,
        &["cached"],
        &["combiner"],
        Test::AtLeast(0.9),
    ),
    cached_claim(
        "The seed's 1 % mix runs cached at least 0.9x uncached.",
        "mix-1: cached >= 0.9x combiner",
        MIX1,
        &["cached"],
        &["combiner"],
        Test::AtLeast(0.9),
    ),
    cached_claim(
        "The seed's 20 % mix runs cached at least 0.9x uncached.",
        "mix-20: cached >= 0.9x combiner",
        MIX20,
        &["cached"],
        &["combiner"],
        Test::AtLeast(0.9),
    ),
    cached_claim(
        "The seed's 100 % mix runs cached at least 0.9x uncached.",
        "mix-100: cached >= 0.9x combiner",
        MIX100,
        &["cached"],
        &["combiner"],
        Test::AtLeast(0.9),
    ),
    floor_claim(
        "The seed's 1 % mix runs cached at least 0.9x its floor.",
        "mix-1: cached >= 0.9x cached-off",
        MIX1,
    ),
    floor_claim(
        "The seed's 20 % mix runs cached at least 0.9x its floor.",
        "mix-20: cached >= 0.9x cached-off",
        MIX20,
    ),
    floor_claim(
        "The seed's 100 % mix runs cached at least 0.9x its floor.",
        "mix-100: cached >= 0.9x cached-off",
        MIX100,
    ),
    Claim {
        suite: "cluster",
        figure: "-",
        quote: "A cluster of one node runs at least 0.8x one server.",
        gist: "cluster-1 >= 0.8x single",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(0.8),
            "ours: routing through the cluster client may cost at most a fifth of one server's \
             rate",
        ),
        rule: ratio(v!("cluster-1").most().over(v!("single").most())),
    },
    Claim {
        suite: "cluster",
        figure: "-",
        quote: "In a 3-node cluster, no node carries more than half of the traffic of 1 000 \
                names.",
        gist: "cluster-3-names: largest node share <= 0.5",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(0.5), "the named-resources issue's bar"),
        rule: Rule::Value(v!("cluster-3-names").metric(Metric::Extra("max_node_share"))),
    },
    Claim {
        suite: "cluster-failover",
        figure: "-",
        quote: "The first new grant on a crashed node's partitions comes within TTL + grace + 1 s.",
        gist: "first grant within the bar",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(1.0), "ours: first_grant_ms at most bar_ms (TTL + grace + 1 s)"),
        rule: ratio(
            v!("failover")
                .metric(Metric::Extra("first_grant_ms"))
                .over(v!("failover").metric(Metric::Extra("bar_ms"))),
        ),
    },
    Claim {
        suite: "cluster-failover",
        figure: "-",
        quote: "Every lock the crashed node held is reclaimed: none is lost.",
        gist: "no lock lost",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(0.0), "ours: lost = 0"),
        rule: Rule::Value(v!("failover").metric(Metric::Extra("lost"))),
    },
    Claim {
        suite: "server-names",
        figure: "-",
        quote: "A million distinct names run at least 0.8x the unnamed resource.",
        gist: "names-1000000 >= 0.8x unnamed",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(0.8), "the named-resources issue's bar"),
        rule: ratio(v!("names-1000000").most().over(v!("unnamed").most())),
    },
    Claim {
        suite: "server-names",
        figure: "-",
        quote: "A thousand names run at least 0.9x the unnamed resource.",
        gist: "names-1000 >= 0.9x unnamed",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtLeast(0.9), "the named-resources issue's bar"),
        rule: ratio(v!("names-1000").most().over(v!("unnamed").most())),
    },
    Claim {
        suite: "server-names",
        figure: "-",
        quote: "A held lock on a fresh name costs at most 2x a held lock on the unnamed \
                resource.",
        gist: "heap per held lock, fresh name / unnamed <= 2",
        row: Row::Seed,
        seed: None,
        band: band(Test::AtMost(2.0), "the named-resources issue's bar"),
        rule: ratio(
            v!("names-1000000")
                .metric(Metric::Extra("heap_bytes_per_held_lock"))
                .over(v!("unnamed").metric(Metric::Extra("heap_bytes_per_held_lock"))),
        ),
    },
    Claim {
        suite: "server-names",
        figure: "-",
        quote: "After every name is released, the server's heap is back within 10 % of where \
                it started.",
        gist: "heap retained after release <= 10 %",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(0.1),
            "the named-resources issue's bar (share of the hold's growth)",
        ),
        rule: Rule::Value(v!("names-1000000").metric(Metric::Extra("heap_retained_share"))),
    },
];
