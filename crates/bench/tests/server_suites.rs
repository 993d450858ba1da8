//! The server suites in quick mode with tiny durations (no redis needed), and the DSLR
//! peers under an exclusivity checker.

mod exclusivity;
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use exclusivity::Checker;
use rangelock::Mode;
use rangelock_bench::harness::{run_suite, Options, Record, SplitMix64, Suite};
use rangelock_bench::peers::dslr_redis::RedisWords;
use rangelock_bench::peers::dslr_shm::{DslrClient, DslrLayout, ShmWords, TicketWords};
use rangelock_bench::peers::redis::RedisServer;
use rangelock_bench::suites::server_latency::ServerLatency;
use rangelock_bench::suites::server_micro::ServerMicro;
use rangelock_bench::suites::server_oltp::ServerOltp;
use support::{TempDir, TEST_BUDGET};

const NO_REDIS: &str = "rangelock-test-no-such-redis-server";

fn run(suite: &dyn Suite, threads: Vec<usize>) -> Vec<Record> {
    let dir = TempDir::new(suite.name());
    let opts = Options {
        threads,
        oversubscribe: false,
        rounds: 1,
        duration: Duration::from_millis(5),
        // ... and until every thread completed an operation, however busy the machine.
        min_ops: 1,
        out: dir.0.clone(),
        budget: Some(TEST_BUDGET),
        ..Options::quick()
    };
    let report = run_suite(suite, &opts).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(report.cut.is_empty(), "{:?}", report.cut);
    assert!(report.json.exists() && report.svg.exists());
    for r in &report.records {
        assert!(r.ops_per_sec > 0.0, "{r:?}");
    }
    report.records
}

fn variants(records: &[Record]) -> BTreeSet<&str> {
    records.iter().map(|r| r.variant.as_str()).collect()
}

#[test]
fn server_micro_runs_engines_and_peers_without_redis() {
    let records = run(&ServerMicro::with_redis_server(NO_REDIS), vec![2]);
    assert_eq!(
        variants(&records),
        BTreeSet::from([
            "citron-like",
            "combiner",
            "combiner-auth",
            "combiner-poll",
            "combiner-shm-poll",
            "combiner-tls-auth",
            "dslr-shm",
            "echo",
            "rangelock",
            "tree-mutex",
            "tree-single",
            "tree-single-poll"
        ])
    );
    let pcts: BTreeSet<u64> =
        records.iter().map(|r| r.params["exclusive_pct"].as_u64().unwrap()).collect();
    assert_eq!(pcts, BTreeSet::from([0, 20]));
    for r in &records {
        assert_eq!(r.threads, 2);
        // ops are requests: two per cycle.
        let cycles = r.extra["cycles_per_sec"].as_f64().unwrap();
        assert!((r.ops_per_sec - 2.0 * cycles).abs() <= 1e-6 * r.ops_per_sec, "{r:?}");
        let has_cpu = r.extra.contains_key("server_cpu_ns_per_request");
        assert_eq!(has_cpu, !["dslr-shm", "citron-like"].contains(&r.variant.as_str()), "{r:?}");
        let share = r.extra.get("shm_slot_answer_share").and_then(|v| v.as_f64());
        assert_eq!(share.is_some(), r.variant == "combiner-shm-poll", "{r:?}");
        assert!(share.is_none_or(|s| (0.0..=1.0).contains(&s)), "{r:?}");
        assert_round_trips(r);
    }
}

/// A `rangelockd` lock is at least one round trip, and a pushed grant exactly one: only
/// the poll variants' clients send more (their `POLL`s).
fn assert_round_trips(r: &Record) {
    let Some(rt) = r.extra.get("round_trips_per_lock").and_then(|v| v.as_f64()) else {
        assert!(["dslr-shm", "citron-like"].contains(&r.variant.as_str()), "{r:?}");
        return;
    };
    if r.variant.starts_with("dslr-") || r.variant.starts_with("citron-") {
        return; // the client-sided peers count their own round trips
    }
    if r.variant.ends_with("-poll") && r.variant != "combiner-shm-poll" {
        assert!(rt >= 1.0, "{r:?}");
    } else {
        assert_eq!(rt, 1.0, "{r:?}");
    }
}

#[test]
fn server_oltp_runs_the_mix_without_redis() {
    let records = run(&ServerOltp::with_redis_server(NO_REDIS), vec![1]);
    assert_eq!(
        variants(&records),
        BTreeSet::from([
            "citron-like",
            "combiner",
            "combiner-poll",
            "combiner-shm-poll",
            "dslr-shm",
            "rangelock",
            "tree-mutex",
            "tree-single",
            "tree-single-poll"
        ])
    );
    for r in &records {
        assert_eq!(r.threads, 49);
        assert_eq!(r.params["readers"], 39);
        assert!(r.p50_ns.is_some());
        // One round: the round's own percentiles are the pooled ones.
        assert_eq!((r.p50_ns_min, r.p50_ns_max), (r.p50_ns, r.p50_ns), "{r:?}");
        assert_eq!((r.p99_ns_min, r.p99_ns_max), (r.p99_ns, r.p99_ns), "{r:?}");
        assert_round_trips(r);
    }
}

/// The full sweeps (cases only, nothing run): `server-micro` has the seed's client counts,
/// 1 and 2 and the 16-24 of its peak among them; `server-threads` runs 64 clients at 1, 2
/// and 4 handler threads, at 20 % and 0 % exclusive, with 4 threads marked oversubscribed.
#[test]
fn full_sweeps_hold_the_seeds_points() {
    use rangelock_bench::suites::server_threads::ServerThreads;
    let full = Options::full();
    let micro = ServerMicro::with_redis_server(NO_REDIS).cases(&full);
    let clients: BTreeSet<usize> = micro.iter().map(|c| c.threads).collect();
    assert_eq!(clients, BTreeSet::from([1, 2, 4, 8, 16, 24, 32, 64]));
    let names: BTreeSet<&str> = micro.iter().map(|c| c.variant.as_str()).collect();
    assert!(names.is_superset(&BTreeSet::from(["combiner-poll", "tree-single-poll"])));
    let threads = ServerThreads.cases(&full);
    assert_eq!(threads.len(), 2 * 3 * 3);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for c in &threads {
        assert_eq!(c.threads, 64);
        let handlers = c.params["handler_threads"].as_u64().unwrap() as usize;
        assert!([1, 2, 4].contains(&handlers));
        assert_eq!(c.oversubscribed, handlers > cores, "{:?}", c.params);
    }
    let pcts: BTreeSet<u64> =
        threads.iter().map(|c| c.params["exclusive_pct"].as_u64().unwrap()).collect();
    assert_eq!(pcts, BTreeSet::from([0, 20]));
}

/// `server-threads` in quick mode: the three systems at 1 and 2 handler threads, each
/// record saying how busy the server's threads were.
#[test]
fn server_threads_reports_how_busy_each_server_thread_was() {
    use rangelock_bench::suites::server_threads::ServerThreads;
    let records = run(&ServerThreads, vec![3]);
    assert_eq!(variants(&records), BTreeSet::from(["combiner", "echo", "tree-mutex"]));
    let handlers: BTreeSet<u64> =
        records.iter().map(|r| r.params["handler_threads"].as_u64().unwrap()).collect();
    assert_eq!(handlers, BTreeSet::from([1, 2]));
    assert_eq!(records.len(), 3 * 2);
    for r in &records {
        assert_eq!((r.threads, r.params["exclusive_pct"].as_u64()), (3, Some(20)), "{r:?}");
        let busy = |k: &str| r.extra.get(k).and_then(|v| v.as_f64());
        let handlers = r.params["handler_threads"].as_f64().unwrap();
        // Handlers answered every request: they ran, and no more than their number of cores.
        let h = busy("handlers_busy").unwrap();
        assert!(h > 0.0 && h <= handlers * 1.05, "{r:?}");
        assert!(busy("handler_busy_max").unwrap() <= h + 1e-9, "{r:?}");
        let p = busy("process_busy").unwrap();
        // The process clock counts the handlers too (its snapshots a moment apart).
        assert!(p + 0.05 >= h && busy("clients_busy").unwrap() >= 0.0, "{r:?}");
        // Only engines with a combiner thread report it; echo's idles (pings bypass it).
        let combiner = busy("combiner_busy");
        assert_eq!(combiner.is_some(), r.variant != "tree-mutex", "{r:?}");
        if r.variant == "combiner" {
            assert!(combiner.unwrap() > 0.0, "{r:?}");
        }
        assert!(busy("server_cpu_ns_per_request").unwrap() > 0.0, "{r:?}");
    }
}

#[test]
fn server_latency_times_every_operation() {
    // The Redis rows need redis-server (installed in CI): without it, say so and skip.
    let Some(redis) = RedisServer::start_or_skip("server_latency_times_every_operation") else {
        return;
    };
    drop(redis);
    let records = run(&ServerLatency, vec![1]);
    assert_eq!(
        variants(&records),
        BTreeSet::from([
            "echo",
            "redis-cas",
            "redis-faa",
            "redis-get",
            "shm-cas",
            "shm-faa",
            "shm-read",
            "timer"
        ])
    );
    let p50 = |v: &str| records.iter().find(|r| r.variant == v).unwrap().p50_ns.unwrap();
    for r in &records {
        assert_eq!(r.threads, 1);
        let (p50, p99) = (r.p50_ns.unwrap(), r.p99_ns.unwrap());
        assert!(p50 <= p99, "{r:?}");
        // Every operation but the timer is one of the seed's rows.
        assert_eq!(r.extra.contains_key("seed_p50_us"), r.variant != "timer", "{r:?}");
    }
    // A loopback round trip through the kernel and a server thread costs microseconds; a
    // shared-memory operation, even on a line another core keeps writing, well below one.
    for shm in ["shm-read", "shm-cas", "shm-faa"] {
        assert!(p50("echo") > 2 * p50(shm), "echo {} vs {shm} {}", p50("echo"), p50(shm));
        assert!(p50("redis-get") > 2 * p50(shm), "redis {} vs {shm}", p50("redis-get"));
    }
}

/// Threads lock random ranges through DSLR under the exclusivity [`Checker`].
fn exclusivity<W: TicketWords>(
    layout: DslrLayout,
    threads: usize,
    iterations: u64,
    words: impl Fn() -> W + Sync,
) where
    W::Error: std::fmt::Debug,
{
    let checker = Checker::new(layout.units);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (checker, words) = (&checker, &words);
            s.spawn(move || {
                let id = t as u64 + 1;
                let mut client = DslrClient::new(words(), layout);
                let mut rng = SplitMix64::new(id);
                for _ in 0..iterations {
                    let len = 1 + rng.below(layout.units / 4);
                    let start = rng.below(layout.units - len + 1);
                    let range = start..start + len;
                    let mode = if rng.below(2) == 0 { Mode::Exclusive } else { Mode::Shared };
                    let held = client.lock(range.clone(), mode).unwrap();
                    checker.hold(id, &range, mode);
                    client.unlock(held).unwrap();
                }
            });
        }
    });
    assert_eq!(checker.violations(), 0, "holders overlapped");
}

#[test]
fn dslr_shm_excludes_with_frequent_counter_resets() {
    // count_max 5: a word resets every few tickets, exercising bogus tickets and resets.
    let layout = DslrLayout { units: 256, segment_units: 16, count_max: 5 };
    let words = ShmWords::new(layout.segments()).unwrap();
    exclusivity(layout, 4, 3000, || words.clone());
}

#[test]
fn dslr_shm_excludes_with_default_layout() {
    let layout = DslrLayout::new(1024, 64);
    let words = ShmWords::new(layout.segments()).unwrap();
    exclusivity(layout, 4, 3000, || words.clone());
}

#[test]
fn dslr_redis_excludes() {
    let Some(server) = RedisServer::start_or_skip("dslr_redis_excludes") else { return };
    let layout = DslrLayout { units: 128, segment_units: 16, count_max: 5 };
    exclusivity(layout, 3, 200, || RedisWords::connect(server.addr(), layout.segments()).unwrap());
}

#[test]
fn dslr_redis_compare_exchange_is_exact_above_2_pow_53() {
    let Some(server) = RedisServer::start_or_skip("dslr_redis_cas") else { return };
    let mut words = RedisWords::connect(server.addr(), 1).unwrap();
    let big = (1u64 << 60) + 1;
    assert_eq!(words.fetch_add(0, big).unwrap(), 0);
    // A double cannot tell 2^60 from 2^60 + 1: a CAS comparing numbers would succeed.
    assert!(!words.compare_exchange(0, big - 1, 7).unwrap(), "CAS matched a different word");
    assert!(words.compare_exchange(0, big, 7).unwrap());
    assert_eq!(words.load(0).unwrap(), 7);
    // A missing key reads 0 and compares as 0.
    let mut fresh = RedisWords::connect(server.addr(), 2).unwrap();
    assert!(fresh.compare_exchange(1, 0, 3).unwrap());
    // One round trip per command, none for a queued release until it is read.
    let before = fresh.round_trips();
    fresh.release_add(1, 1).unwrap();
    fresh.flush().unwrap();
    assert_eq!(fresh.round_trips(), before);
    assert_eq!(fresh.load(1).unwrap(), 4);
    assert_eq!(fresh.round_trips(), before + 1);
}

/// The cluster suites in quick mode: every variant runs and reports, and the failover
/// run reclaims every lock and meets its bar. Needs etcd (skips loudly without it
/// outside CI).
#[test]
fn cluster_suites_run_and_the_failover_meets_its_bar() {
    use rangelock_bench::suites::cluster::{ClusterFailover, ClusterSuite};
    if rangelock_cluster::etcd::local_etcd_or_skip(
        "cluster_suites_run_and_the_failover_meets_its_bar",
    )
    .is_none()
    {
        return;
    }
    let records = run(&ClusterSuite, vec![2]);
    assert_eq!(
        variants(&records),
        BTreeSet::from(["cluster-1", "cluster-2", "cluster-3", "cluster-3-names", "single"])
    );
    // A share per node, adding up to the whole, the largest recorded (how evenly they
    // spread is the report's bar, over a real run, not this 5 ms one's).
    let names = records.iter().find(|r| r.variant == "cluster-3-names").unwrap();
    let shares: Vec<f64> = serde_json::from_value(names.extra["node_shares"].clone()).unwrap();
    assert_eq!(shares.len(), 3, "{names:?}");
    assert!((shares.iter().sum::<f64>() - 1.0).abs() < 0.01, "{shares:?}");
    let max = names.extra["max_node_share"].as_f64().unwrap();
    assert!((max - shares.iter().copied().fold(0.0, f64::max)).abs() < 0.01, "{names:?}");
    let records = run(&ClusterFailover, vec![1]);
    let r = &records[0];
    assert_eq!(r.extra["lost"].as_u64(), Some(0), "{r:?}");
    assert_eq!(r.extra["reclaimed"].as_u64(), Some(32), "{r:?}");
    let (grant, bar) =
        (r.extra["first_grant_ms"].as_f64().unwrap(), r.extra["bar_ms"].as_f64().unwrap());
    assert!(grant <= bar, "first new grant {grant} ms after the crash, bar {bar} ms");
}
