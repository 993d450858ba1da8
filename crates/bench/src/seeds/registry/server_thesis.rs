//! *Server-sided range locking is better than client-sided locking* (Dezalos), ch. 5:
//! §5.1's server threads, Table 5, Figs. 5–8, Table 6.
//!
//! The seed's server-sided designs let clients **poll** for a waiting grant: its
//! "Combiner eRPC" is our `combiner-poll`, its "Combiner RDMA" our `combiner-shm-poll`
//! (answers read from shared-memory slots), its "Interval tree" our `tree-single-poll`.
//! The `rangelockd` product pushes grants instead (`combiner`, `tree-single`): those are
//! the [`Row::Beyond`] rows. Its client-sided locks run over the same network, with Redis
//! standing in for the remote memory: "Static segmentation" is `dslr-redis`, "Citron"
//! `citron-redis`. The local-memory versions (`dslr-shm`, `citron-like`) are references,
//! never comparators.

use super::{band, contrast, ratio, v};
use crate::seeds::claims::{
    At, Band, Claim, Figure, Metric, Needs, Over, Ratio, Row, Rule, Seed, SeedNumber, Side, Test,
};

const REDIS_FOR_RDMA: &str = "Redis stands in for the RDMA NIC: a one-sided operation here is a \
    command redis-server executes, one loopback round trip through the kernel like an RPC's, \
    where the seed's NIC answers without the remote CPU; `echo` over rangelockd's transport \
    stands in for eRPC.";
const SHARED_CORES: &str = "Every client is a thread of the bench process: up to 64 clients, \
    the server and redis-server share the records' 2 cores (the seed: 18 server threads and \
    up to 96 client processes on two 96-core machines), so rows above 2 clients are \
    oversubscribed; figures about many clients are read at the most clients measured.";
const POLLING: &str = "The seed's server-sided locks let clients poll for their grants: its \
    rows are `combiner-poll`, `combiner-shm-poll` and `tree-single-poll`. One difference \
    stays: the seed's combiner clients poll at least once even for a free range (two round \
    trips per lock), ours poll only while a lock waits (round_trips_per_lock shows it). The \
    product's push designs (`combiner`, `tree-single`) are judged in separate rows, as \
    beyond the seed.";

const X0: &[(&str, &str)] = &[("exclusive_pct", "0")];
const X1: &[(&str, &str)] = &[("exclusive_pct", "1")];
const X20: &[(&str, &str)] = &[("exclusive_pct", "20")];
const X100: &[(&str, &str)] = &[("exclusive_pct", "100")];

/// What Figs. 5-8 show of the round trips each lock waits for.
const fn round_trips(x: &'static [(&'static str, &'static str)]) -> [(&'static str, Ratio); 2] {
    let rt = Metric::Extra("round_trips_per_lock");
    [
        (
            "dslr-redis / combiner-poll, round trips per lock",
            v!("dslr-redis")
                .with(x)
                .most()
                .metric(rt)
                .over(v!("combiner-poll").with(x).most().metric(rt)),
        ),
        (
            "citron-redis / combiner-poll, round trips per lock",
            v!("citron-redis")
                .with(x)
                .most()
                .metric(rt)
                .over(v!("combiner-poll").with(x).most().metric(rt)),
        ),
    ]
}

const RT0: [(&str, Ratio); 2] = round_trips(X0);
const RT1: [(&str, Ratio); 2] = round_trips(X1);
const RT20: [(&str, Ratio); 2] = round_trips(X20);
const RT100: [(&str, Ratio); 2] = round_trips(X100);

pub(super) const FIGURES: &[Figure] = &[
    Figure {
        suite: "server-threads",
        figure: "§5.1",
        seed: Seed::ServerThesis,
        section: "§5.1",
        caption: "Server threads (the setup's text; no figure)",
        show: &[],
        caveats: &[
            SHARED_CORES,
            "Server threads are rangelockd's handler threads; the interval tree shared by all \
             of them under a lock is `tree-mutex`; `echo` with as many handler threads \
             decides nothing and bounds the rest.",
        ],
        context: &[],
    },
    Figure {
        suite: "server-latency",
        figure: "Table 5",
        seed: Seed::ServerThesis,
        section: "§5.2.1",
        caption: "50th and 99th latency percentile of network operations",
        show: &[],
        caveats: &[REDIS_FOR_RDMA, "One client; every operation timed."],
        context: &[
            (
                "shm-read p50 / echo p50 (local memory, no network)",
                v!("shm-read").metric(Metric::P50).over(v!("echo").metric(Metric::P50)),
            ),
            (
                "shm-cas p50 / echo p50 (local memory, no network)",
                v!("shm-cas").metric(Metric::P50).over(v!("echo").metric(Metric::P50)),
            ),
        ],
    },
    Figure {
        suite: "server-micro",
        figure: "Fig. 5",
        seed: Seed::ServerThesis,
        section: "§5.2.2",
        caption: "Throughput with 0% writes in function of the number of clients running.",
        show: X0,
        caveats: &[REDIS_FOR_RDMA, SHARED_CORES, POLLING],
        context: &RT0,
    },
    Figure {
        suite: "server-micro",
        figure: "Fig. 6",
        seed: Seed::ServerThesis,
        section: "§5.2.2",
        caption: "Throughput with 1% writes in function of the number of clients running.",
        show: X1,
        caveats: &[REDIS_FOR_RDMA, SHARED_CORES, POLLING],
        context: &RT1,
    },
    Figure {
        suite: "server-micro",
        figure: "Fig. 7",
        seed: Seed::ServerThesis,
        section: "§5.2.2",
        caption: "Throughput with 20% writes in function of the number of clients running.",
        show: X20,
        caveats: &[REDIS_FOR_RDMA, SHARED_CORES, POLLING],
        context: &RT20,
    },
    Figure {
        suite: "server-micro",
        figure: "Fig. 8",
        seed: Seed::ServerThesis,
        section: "§5.2.2",
        caption: "Throughput with 100% writes in function of the number of clients running.",
        show: X100,
        caveats: &[REDIS_FOR_RDMA, SHARED_CORES, POLLING],
        context: &RT100,
    },
    Figure {
        suite: "server-oltp",
        figure: "Table 6",
        seed: Seed::ServerThesis,
        section: "§5.2.3",
        caption: "Throughput, 50th and 99th latency percentile of the different \
                  implementations with the OLTP benchmark.",
        show: &[],
        caveats: &[
            REDIS_FOR_RDMA,
            "49 client threads (39 readers, 9 writers, 1 log writer, as the seed lists them) \
             share the records' 2 cores with the server and redis-server; the seed ran 48 \
             client processes on a machine of their own.",
            POLLING,
        ],
        context: &[],
    },
];

/// The seed's server-sided designs (clients poll).
const fn seed_servers(pick_min: bool) -> Side {
    if pick_min {
        v!(min "combiner-poll", "combiner-shm-poll", "tree-single-poll")
    } else {
        v!(max "combiner-poll", "combiner-shm-poll", "tree-single-poll")
    }
}

/// The product's push designs.
const PUSH_WORST: Side = v!(min "combiner", "tree-single");
/// The client-sided locks over the network: the best of them.
const CLIENTS_BEST: Side = v!(max "dslr-redis", "citron-redis");

/// Worst server-sided over best client-sided, at the most clients.
const fn servers_ahead(servers: Side, x: &'static [(&'static str, &'static str)]) -> Ratio {
    servers.with(x).most().over(CLIENTS_BEST.with(x).most())
}

/// `variant` at `a` over at `b` (exclusive shares), at the most clients.
const fn pct(
    variant: Side,
    a: &'static [(&'static str, &'static str)],
    b: &'static [(&'static str, &'static str)],
) -> Ratio {
    variant.with(a).most().over(variant.with(b).most())
}

const AHEAD: Option<Band> =
    band(Test::Above(1.0), "ours: \"perform better\" is any lead, at every round");
const BEHIND: Option<Band> =
    band(Test::Below(1.0), "ours: \"performs worse\" is any loss, at every round");

const Q_TABLE5: &str =
    "| eRPC | 3.52 | 4.18 | | RDMA read | 2.74 | 2.86 | | RDMA atomic | 2.79 | 3.29 |";
const Q_TABLE6: &str = "| Combiner eRPC | 286491 | 156.8 | 182.4 | | Combiner RDMA | 147576 | \
    264.0 | 592.0 | | Interval tree | 124603 | 366.4 | 403.2 | | Static segmentation | 161530 | \
    150.1 | 232.8 | | Citron | 162720 | 26.1 | 223.4 |";
const Q_FIG5_AHEAD: &str = "When there are no write operations in the system, the server-sided \
    range locks perform better than the client-sided ones.";
const Q_FIG5_TREE: &str = "Interval tree performs better than combination when there is only one \
    or two clients.";
const Q_FIG7: &str = "When there is 20% of write operations in the system, the server-sided \
    range locks perform still better than the client-sided ones but their advance shrinks.";
const Q_FIG7_COMBINERS: &str = "Also both combiners' throughput drop with a high client count and \
    the one polling with RDMA handles contention worse than the combiner polling with eRPC.";
const Q_FIG7_CLIENTS: &str = "Static segmentation is less affected by the contention's rise and \
    Citron is unaffected.";
const Q_FIG8_SAME: &str = "Finally when there is only write operations, no type of \
    implementation performs clearly better than the other.";

/// A Table 5 ratio: `variant`'s p50 or p99 over `echo`'s, read as at most the seed's
/// (the seed's point is that the one-sided operation is cheaper).
const fn table5(
    variant: Side,
    metric: Metric,
    num: &'static str,
    den: &'static str,
    gist: &'static str,
) -> Claim {
    Claim {
        suite: "server-latency",
        figure: "Table 5",
        quote: Q_TABLE5,
        gist,
        row: Row::Seed,
        seed: Some(SeedNumber::Derived { num, den, at_least: false }),
        band: band(
            Test::Below(1.0),
            "ours: the seed's direction is a one-sided operation cheaper than an RPC (parity is \
             what it argues against), at every round",
        ),
        rule: ratio(variant.metric(metric).over(v!("echo").metric(metric))),
    }
}

/// A Table 6 throughput ratio of the eRPC combiner (or the product) over a peer.
const fn table6(
    num: Side,
    row: Row,
    den: Side,
    den_written: &'static str,
    gist: &'static str,
) -> Claim {
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: Q_TABLE6,
        gist,
        row,
        seed: Some(SeedNumber::Derived { num: "286491", den: den_written, at_least: true }),
        band: AHEAD,
        rule: ratio(num.most().over(den.most())),
    }
}

const OLTP_PEERS: Side =
    v!(max "combiner-shm-poll", "tree-single-poll", "dslr-redis", "citron-redis");

pub(super) const CLAIMS: &[Claim] = &[
    // ---- §5.1: server threads ------------------------------------------------------------
    Claim {
        suite: "server-threads",
        figure: "§5.1",
        quote: "Out of 1,2,4,8 and 18 server processes, the best throughput was achieved \
                consistently when the server had only one server thread.",
        gist: "the shared interval tree is fastest with one server thread",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: \"the best throughput\" is one handler thread ahead of 2 and 4, at every round",
        ),
        rule: Rule::Peak {
            side: v!("tree-mutex").with(X20).most(),
            over: Over::Param("handler_threads"),
            points: &["1", "2", "4"],
            inside: &["1"],
        },
    },
    // ---- Table 5 -------------------------------------------------------------------------
    table5(v!("redis-get"), Metric::P50, "2.74", "3.52", "a read's p50 below an RPC's"),
    table5(v!("redis-get"), Metric::P99, "2.86", "4.18", "a read's p99 below an RPC's"),
    table5(v!("redis-cas"), Metric::P50, "2.79", "3.52", "a CAS's p50 below an RPC's"),
    table5(v!("redis-cas"), Metric::P99, "3.29", "4.18", "a CAS's p99 below an RPC's"),
    table5(v!("redis-faa"), Metric::P50, "2.79", "3.52", "a FAA's p50 below an RPC's"),
    table5(v!("redis-faa"), Metric::P99, "3.29", "4.18", "a FAA's p99 below an RPC's"),
    // ---- Fig. 5: 0 % writes --------------------------------------------------------------
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: Q_FIG5_AHEAD,
        gist: "server-sided ahead of client-sided",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(servers_ahead(seed_servers(true), X0)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: Q_FIG5_AHEAD,
        gist: "the product's push designs ahead of client-sided",
        row: Row::Beyond,
        seed: None,
        band: AHEAD,
        rule: ratio(servers_ahead(PUSH_WORST, X0)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: Q_FIG5_TREE,
        gist: "1 client: interval tree ahead of both combiners",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(
            v!("tree-single-poll")
                .with(X0)
                .threads(1)
                .over(v!(max "combiner-poll", "combiner-shm-poll").with(X0).threads(1)),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: Q_FIG5_TREE,
        gist: "2 clients: interval tree ahead of both combiners",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(
            v!("tree-single-poll")
                .with(X0)
                .threads(2)
                .over(v!(max "combiner-poll", "combiner-shm-poll").with(X0).threads(2)),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: Q_FIG5_TREE,
        gist: "1 client: the product's tree ahead of its combiner",
        row: Row::Beyond,
        seed: None,
        band: AHEAD,
        rule: ratio(v!("tree-single").with(X0).threads(1).over(v!("combiner").with(X0).threads(1))),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: "Combination polling with RDMA has a slightly better throughput than the design \
                polling with eRPC.",
        gist: "RDMA-polling combiner slightly ahead",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Within(1.0, 1.25),
            "ours: \"slightly better\" is ahead (never level) by less than 25 %",
        ),
        rule: ratio(
            v!("combiner-shm-poll").with(X0).most().over(v!("combiner-poll").with(X0).most()),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: "Every implementation peaks at around 16 to 24 clients processes.",
        gist: "every design peaks at 16-24 clients",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotTestable(Needs::Cores(24)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: "Static segmentation must lock a high number of segments to lock one range, thus \
                it must do a lot of RDMA FAA, which increases the latency.",
        gist: "static segmentation waits for many round trips",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtLeast(2.0),
            "ours: \"a lot of\" is at least twice the combiner's round trips per lock",
        ),
        rule: ratio(RT0[0].1),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: "Finally Citron must execute a lot of RDMA operations and, as was previously \
                mentioned, even if they are batched they are not completely executed in \
                parallel, which increases the latency.",
        gist: "Citron's lock takes longer than the combiner's",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: \"increases the latency\": a longer p50 cycle at 1 client",
        ),
        rule: ratio(
            v!("citron-redis")
                .with(X0)
                .threads(1)
                .metric(Metric::P50)
                .over(v!("combiner-poll").with(X0).threads(1).metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: "We managed to reduce to two round trips for a lock operation however the median \
                latency for locking when there is only one client is around 25 microseconds, \
                which is higher than the expected two round trips of around 6 microseconds we \
                found in 5.2.1.",
        gist: "Citron's lock latency at 1 client",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered(
            "our latencies time whole lock + unlock cycles, not the lock alone; Citron's round \
             trips per lock are shown with the figure",
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 5",
        quote: "Also our implementation for Citron tends to starve some processes when there is \
                a lot of clients, which affects the throughput negatively.",
        gist: "Citron starves some clients",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered("the suites record no per-client throughput"),
    },
    // ---- Fig. 6: 1 % writes --------------------------------------------------------------
    Claim {
        suite: "server-micro",
        figure: "Fig. 6",
        quote: "When there is only 1% of write operations in the system, the results are similar \
                compared to the 0% write scenario.",
        gist: "server-sided ahead of client-sided",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(servers_ahead(seed_servers(true), X1)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 6",
        quote: "When there is only 1% of write operations in the system, the results are similar \
                compared to the 0% write scenario.",
        gist: "the product's push designs ahead of client-sided",
        row: Row::Beyond,
        seed: None,
        band: AHEAD,
        rule: ratio(servers_ahead(PUSH_WORST, X1)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 6",
        quote: "The difference is that the interval tree performs worse when there is a lot of \
                clients processes running because now clients start to poll which reduces the \
                server resources allocated for handling new locking requests.",
        gist: "many clients: the interval tree slower at 1 % than at 0 %",
        row: Row::Seed,
        seed: None,
        band: BEHIND,
        rule: ratio(pct(v!("tree-single-poll"), X1, X0)),
    },
    // ---- Fig. 7: 20 % writes -------------------------------------------------------------
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7,
        gist: "server-sided still ahead",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(servers_ahead(seed_servers(true), X20)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7,
        gist: "the lead shrinks from 0 % to 20 %",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Below(1.0),
            "ours: \"their advance shrinks\" is the lead at 20 % below the lead at 0 %, at every \
             round",
        ),
        rule: contrast(
            servers_ahead(seed_servers(true), X20),
            servers_ahead(seed_servers(true), X0),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7,
        gist: "the product's push designs still ahead",
        row: Row::Beyond,
        seed: None,
        band: AHEAD,
        rule: ratio(servers_ahead(PUSH_WORST, X20)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: "The trend of the interval tree we noticed at 1% writes continues.",
        gist: "many clients: the interval tree slower at 20 % than at 0 %",
        row: Row::Seed,
        seed: None,
        band: BEHIND,
        rule: ratio(pct(v!("tree-single-poll"), X20, X0)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7_COMBINERS,
        gist: "the eRPC combiner drops at the most clients",
        row: Row::Seed,
        seed: None,
        band: band(Test::Below(1.0), "ours: \"drop\" is the most clients below 16 clients"),
        rule: ratio(
            v!("combiner-poll").with(X20).most().over(v!("combiner-poll").with(X20).threads(16)),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7_COMBINERS,
        gist: "the RDMA combiner drops at the most clients",
        row: Row::Seed,
        seed: None,
        band: band(Test::Below(1.0), "ours: \"drop\" is the most clients below 16 clients"),
        rule: ratio(
            v!("combiner-shm-poll")
                .with(X20)
                .most()
                .over(v!("combiner-shm-poll").with(X20).threads(16)),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7_COMBINERS,
        gist: "the RDMA combiner behind the eRPC one",
        row: Row::Seed,
        seed: None,
        band: BEHIND,
        rule: ratio(
            v!("combiner-shm-poll").with(X20).most().over(v!("combiner-poll").with(X20).most()),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7_CLIENTS,
        gist: "static segmentation loses less than the combiner from 0 % to 20 %",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Above(1.0),
            "ours: \"less affected\" is keeping a larger share of its 0 % rate than the eRPC \
             combiner, at every round",
        ),
        rule: contrast(pct(v!("dslr-redis"), X20, X0), pct(v!("combiner-poll"), X20, X0)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 7",
        quote: Q_FIG7_CLIENTS,
        gist: "Citron unaffected from 0 % to 20 %",
        row: Row::Seed,
        seed: None,
        band: band(Test::Within(0.87, 1.15), "ours: \"unaffected\" is within 15 % either way"),
        rule: ratio(pct(v!("citron-redis"), X20, X0)),
    },
    // ---- Fig. 8: 100 % writes ------------------------------------------------------------
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        quote: Q_FIG8_SAME,
        gist: "no type clearly ahead",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Within(0.67, 1.5),
            "ours: \"clearly better\" is 1.5x or more; the best server-sided design and the best \
             client-sided one stay within it",
        ),
        rule: ratio(seed_servers(false).with(X100).most().over(CLIENTS_BEST.with(X100).most())),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        quote: "Interval tree is now almost always answering poll requests from the clients, \
                which reduces its throughput, and its sole server process cannot keep up with \
                all the requests coming in.",
        gist: "many clients: the interval tree slower at 100 % than at 20 %",
        row: Row::Seed,
        seed: None,
        band: BEHIND,
        rule: ratio(pct(v!("tree-single-poll"), X100, X20)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        quote: "For static segmentation, we notice that for a high number of clients, 100% \
                writes yields better throughput than 20% writes.",
        gist: "many clients: static segmentation faster at 100 % than at 20 %",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(pct(v!("dslr-redis"), X100, X20)),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        quote: "Combination with RDMA performs worse than combination with eRPC.",
        gist: "the RDMA combiner behind the eRPC one",
        row: Row::Seed,
        seed: None,
        band: BEHIND,
        rule: ratio(
            v!("combiner-shm-poll").with(X100).most().over(v!("combiner-poll").with(X100).most()),
        ),
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        quote: "Citron does not differentiate between read and write operations, this is why the \
                its results are the same in the four diagrams.",
        gist: "Citron flat in the write share",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(1.15),
            "ours: \"the same\" is the fastest share within 15 % of the slowest, at every round",
        ),
        rule: Rule::Spread {
            side: v!("citron-redis").most(),
            over: Over::Param("exclusive_pct"),
            points: &["0", "1", "20", "100"],
        },
    },
    Claim {
        suite: "server-micro",
        figure: "Fig. 8",
        quote: "When removing this advantage for the readers, the throughput for 100% writes with \
                a high number of clients reverts to very low performance, which we would expect \
                from such contention.",
        gist: "static segmentation without its reader advantage",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered(
            "our DSLR keeps the seed's back-off; the variant without it is not built",
        ),
    },
    // ---- Table 6 -------------------------------------------------------------------------
    table6(v!("combiner-poll"), Row::Seed, v!("citron-redis"), "162720", "eRPC combiner vs Citron"),
    table6(
        v!("combiner-poll"),
        Row::Seed,
        v!("dslr-redis"),
        "161530",
        "eRPC combiner vs static segmentation",
    ),
    table6(
        v!("combiner-poll"),
        Row::Seed,
        v!("combiner-shm-poll"),
        "147576",
        "eRPC combiner vs RDMA combiner",
    ),
    table6(
        v!("combiner-poll"),
        Row::Seed,
        v!("tree-single-poll"),
        "124603",
        "eRPC combiner vs interval tree",
    ),
    table6(
        v!("combiner"),
        Row::Beyond,
        v!("citron-redis"),
        "162720",
        "the product's combiner vs Citron",
    ),
    table6(
        v!("combiner"),
        Row::Beyond,
        v!("dslr-redis"),
        "161530",
        "the product's combiner vs static segmentation",
    ),
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "The combiner polling with eRPC achieved the best throughput of all the \
                implementations tested which is due to its low tail latency.",
        gist: "the eRPC combiner has the best throughput",
        row: Row::Seed,
        seed: None,
        band: AHEAD,
        rule: ratio(v!("combiner-poll").most().over(OLTP_PEERS.most())),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Combination with RDMA performs worse than combiner with eRPC in every aspect.",
        gist: "the RDMA combiner's throughput lower",
        row: Row::Seed,
        seed: None,
        band: BEHIND,
        rule: ratio(v!("combiner-shm-poll").most().over(v!("combiner-poll").most())),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Combination with RDMA performs worse than combiner with eRPC in every aspect.",
        gist: "the RDMA combiner's p50 higher",
        row: Row::Seed,
        seed: None,
        band: band(Test::Above(1.0), "ours: \"worse\" latency is longer, at every round"),
        rule: ratio(
            v!("combiner-shm-poll")
                .most()
                .metric(Metric::P50)
                .over(v!("combiner-poll").most().metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Combination with RDMA performs worse than combiner with eRPC in every aspect.",
        gist: "the RDMA combiner's p99 higher",
        row: Row::Seed,
        seed: None,
        band: band(Test::Above(1.0), "ours: \"worse\" latency is longer, at every round"),
        rule: ratio(
            v!("combiner-shm-poll")
                .most()
                .metric(Metric::P99)
                .over(v!("combiner-poll").most().metric(Metric::P99)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Interval tree's latency is also relatively constant but having only one server \
                thread and having to acquire a lock on the tree severely increases the latency.",
        gist: "the interval tree's p99 close to its p50",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::AtMost(1.5),
            "ours: \"relatively constant\" is a p99 at most 1.5x the p50",
        ),
        rule: ratio(
            v!("tree-single-poll")
                .most()
                .metric(Metric::P99)
                .over(v!("tree-single-poll").most().metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: Q_TABLE6,
        gist: "the interval tree's p50 above the eRPC combiner's",
        row: Row::Seed,
        seed: Some(SeedNumber::Derived { num: "366.4", den: "156.8", at_least: true }),
        band: band(
            Test::Above(1.0),
            "ours: \"severely increases the latency\": a longer p50, at every round",
        ),
        rule: ratio(
            v!("tree-single-poll")
                .most()
                .metric(Metric::P50)
                .over(v!("combiner-poll").most().metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Citron has the lowest median latency compared to the others but suffers from high \
                tail latency.",
        gist: "Citron has the lowest p50",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Below(1.0),
            "ours: \"lowest\" is below every other design's p50, at every round",
        ),
        rule: ratio(
            v!("citron-redis").most().metric(Metric::P50).over(
                v!(min "combiner-poll", "combiner-shm-poll", "tree-single-poll", "dslr-redis")
                    .most()
                    .metric(Metric::P50),
            ),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: Q_TABLE6,
        gist: "Citron's p99 far above its p50",
        row: Row::Seed,
        seed: Some(SeedNumber::Derived { num: "223.4", den: "26.1", at_least: true }),
        band: band(
            Test::AtLeast(2.0),
            "ours: \"high tail latency\" is a p99 at least twice the p50",
        ),
        rule: ratio(
            v!("citron-redis")
                .most()
                .metric(Metric::P99)
                .over(v!("citron-redis").most().metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Its median latency is higher than Citron's and its 99% latency is the same than \
                Citron.",
        gist: "static segmentation's p50 above Citron's",
        row: Row::Seed,
        seed: None,
        band: band(Test::Above(1.0), "ours: \"higher\" at every round"),
        rule: ratio(
            v!("dslr-redis")
                .most()
                .metric(Metric::P50)
                .over(v!("citron-redis").most().metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Its median latency is higher than Citron's and its 99% latency is the same than \
                Citron.",
        gist: "static segmentation's p99 the same as Citron's",
        row: Row::Seed,
        seed: None,
        band: band(Test::Within(0.8, 1.25), "ours: \"the same\" is within 20 % either way"),
        rule: ratio(
            v!("dslr-redis")
                .most()
                .metric(Metric::P99)
                .over(v!("citron-redis").most().metric(Metric::P99)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "That means that its tail latency is lower than Citron's.",
        gist: "static segmentation's tail shorter than Citron's",
        row: Row::Seed,
        seed: None,
        band: band(
            Test::Below(1.0),
            "ours: \"tail latency\" is p99 over p50; lower than Citron's at every round",
        ),
        rule: contrast(
            v!("dslr-redis")
                .most()
                .metric(Metric::P99)
                .over(v!("dslr-redis").most().metric(Metric::P50)),
            v!("citron-redis")
                .most()
                .metric(Metric::P99)
                .over(v!("citron-redis").most().metric(Metric::P50)),
        ),
    },
    Claim {
        suite: "server-oltp",
        figure: "Table 6",
        quote: "Static segmentation performs better compared to the micro-benchmark because it \
                has to lock only two segments to acquire a range compared to eight before.",
        gist: "static segmentation better here than in the micro-benchmark",
        row: Row::Seed,
        seed: None,
        band: None,
        rule: Rule::NotCovered(
            "compares two suites' records; each suite's table shows its round trips per lock",
        ),
    },
];

/// Silences an unused import when every side is read at the default.
const _: At = At::Cores;
