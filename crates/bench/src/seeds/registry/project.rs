//! The project's own suites: what each asks, and the bars we set (ours, not a seed's).

use super::{band, ratio, v};
use crate::seeds::claims::{Claim, Figure, Metric, Row, Rule, Seed, Test};

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
        "server-micro's cycle through the etcd-backed cluster (1-3 nodes) against one server.",
    ),
    project(
        "cluster-failover",
        "A node holding 32 locks crashes: when its partitions grant again, and whether every \
         lock was reclaimed.",
    ),
];

pub(super) const CLAIMS: &[Claim] = &[
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
];
