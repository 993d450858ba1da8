//! Bad input to cluster nodes and `rangelock cluster`: each is refused at once, with a
//! message that says what is wrong (real binary, real etcd).
//!
//! * a node whose etcd cannot be reached (nothing listening, or a peer that never
//!   answers) exits non-zero within a few seconds, naming the endpoint;
//! * a second node with a live node's id is refused;
//! * `--partitions 8` against a cluster of 4 is refused;
//! * `rangelock cluster move` of a partition that does not exist, or to a node that is
//!   not live, is refused (70);
//! * every `rangelock cluster` command exits 69 when etcd cannot be reached.

mod common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::cluster::{run_cli, settled, wait_for, NodeOpts, NodeProc};
use common::{dead_addr, tempdir};
use rangelock_cluster::etcd::local_etcd_or_skip;

/// The failure line `rangelock: …` of a refused command's stderr.
fn failure_line(err: &str) -> &str {
    err.lines().rev().find(|l| l.starts_with("rangelock: ")).unwrap_or_else(|| {
        panic!("no 'rangelock: ' line on stderr:\n{err}");
    })
}

#[test]
fn a_node_whose_etcd_cannot_be_reached_exits_naming_the_endpoint() {
    // Nothing listening: refused at once. A listener that never answers: the request
    // times out (a fifth of the etcd TTL).
    let refused = dead_addr();
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    for (what, addr) in [("refused", refused), ("silent", silent_addr)] {
        let endpoint = format!("http://{addr}");
        let t0 = Instant::now();
        let (code, _, err) = run_cli(
            &["serve", "--addr", "127.0.0.1:0", "--cluster", &endpoint, "--node-id", "a"],
            Duration::from_secs(30),
        );
        let took = t0.elapsed();
        println!("{what}: exit {code:?} after {took:?}: {}", failure_line(&err));
        assert!(code.is_some_and(|c| c != 0), "{what}: exit {code:?}\n{err}");
        assert!(took < Duration::from_secs(5), "{what}: took {took:?}");
        let line = failure_line(&err);
        assert!(line.contains("cannot start cluster node \"a\""), "{line}");
        assert!(line.contains(&addr), "{what}: the message names the endpoint {addr}: {line}");
    }
}

#[test]
fn duplicate_ids_other_partition_counts_and_bad_moves_are_refused() {
    let Some(etcd) = local_etcd_or_skip("duplicate_ids_other_partition_counts_and_bad_moves")
    else {
        return;
    };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-errors");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let opts = NodeOpts::fast(4);
    let a = NodeProc::start(&ep, "a", &opts, &dir);
    wait_for(&rt, &ep, "node a owns every partition", Duration::from_secs(10), |s| {
        settled(s, &["a"])
    });
    let serve = |id: &str, partitions: &str| {
        run_cli(
            &[
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--cluster",
                &ep,
                "--node-id",
                id,
                "--partitions",
                partitions,
                "--etcd-ttl",
                "1",
            ],
            Duration::from_secs(20),
        )
    };

    // A second node "a" while the first lives.
    let (code, _, err) = serve("a", "4");
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}\n{err}");
    let line = failure_line(&err);
    println!("duplicate id: {line}");
    assert!(line.contains("a node with id \"a\" is already registered"), "{line}");

    // Another partition count.
    let (code, _, err) = serve("b", "8");
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}\n{err}");
    let line = failure_line(&err);
    println!("partitions: {line}");
    assert!(
        line.contains("the cluster has 4 partitions; --partitions 8 cannot change it"),
        "{line}"
    );

    // Moves: no such partition, no such node; then a good one is accepted.
    let (code, _, err) =
        run_cli(&["cluster", "move", "99", "--to", "a", "--etcd", &ep], Duration::from_secs(10));
    assert_eq!(code, Some(70), "{err}");
    let line = failure_line(&err);
    println!("move 99: {line}");
    assert!(line.contains("partition 99 does not exist: the cluster has 4 (0..4)"), "{line}");
    let (code, _, err) =
        run_cli(&["cluster", "move", "1", "--to", "ghost", "--etcd", &ep], Duration::from_secs(10));
    assert_eq!(code, Some(70), "{err}");
    let line = failure_line(&err);
    println!("move to ghost: {line}");
    assert!(line.contains("node \"ghost\" is not a live member of the cluster"), "{line}");
    let (code, out, err) =
        run_cli(&["cluster", "move", "1", "--to", "a", "--etcd", &ep], Duration::from_secs(10));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "partition 1: already on a", "a owns every partition");

    // A cluster name that does not exist.
    let (code, _, err) = run_cli(
        &["cluster", "status", "--etcd", &ep, "--cluster-name", "nope"],
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(70), "{err}");
    assert!(failure_line(&err).contains("no cluster named \"nope\""), "{err}");
    // The refusals left the node alone.
    let (code, out, _) = run_cli(&["cluster", "status", "--etcd", &ep], Duration::from_secs(10));
    assert_eq!(code, Some(0));
    assert!(out.contains("nodes (1 alive, 0 dead):") && out.contains("  a "), "{out}");
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 34: an unreachable etcd is 69 for every `cluster` command, as for `lock` and
/// `stat`; a refused one (a silent listener: no answer in time) too.
#[test]
fn every_cluster_command_exits_69_when_etcd_cannot_be_reached() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("http://{}", silent.local_addr().unwrap());
    let refused = format!("http://{}", dead_addr());
    let mut commands: Vec<(&str, Vec<&str>)> = Vec::new();
    for ep in [refused.as_str(), silent.as_str()] {
        for args in [
            vec!["cluster", "status", "--etcd", ep],
            vec!["cluster", "status", "--json", "--etcd", ep],
            vec!["cluster", "move", "0", "--to", "a", "--etcd", ep],
            vec!["cluster", "balance", "pause", "--etcd", ep],
            vec!["cluster", "balance", "resume", "--etcd", ep],
            vec!["cluster", "reset", "--yes", "--etcd", ep],
        ] {
            commands.push((ep, args));
        }
    }
    // Side by side: each command against the silent listener waits out its own timeout.
    let runs: Vec<_> = std::thread::scope(|s| {
        let runs: Vec<_> = commands
            .iter()
            .map(|(_, args)| s.spawn(move || run_cli(args, Duration::from_secs(20))))
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    for ((ep, args), (code, out, err)) in commands.iter().zip(runs) {
        assert_eq!(code, Some(69), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(failure_line(&err).contains(ep.trim_start_matches("http://")), "{err}");
    }
    // Usage errors are clap's 2.
    let (code, _, _) = run_cli(&["cluster", "status"], Duration::from_secs(10));
    assert_eq!(code, Some(2));
    let (code, _, _) =
        run_cli(&["cluster", "move", "x", "--etcd", &refused], Duration::from_secs(10));
    assert_eq!(code, Some(2));
}

/// Issue 34: the test tools are not listed beside the operator commands (they still run).
#[test]
fn cluster_help_lists_the_operator_commands_and_the_exit_codes_only() {
    let (code, out, _) = run_cli(&["cluster", "--help"], Duration::from_secs(10));
    assert_eq!(code, Some(0));
    for cmd in ["status", "move", "balance", "reset"] {
        assert!(out.contains(&format!("\n  {cmd} ")), "{cmd} missing:\n{out}");
    }
    for tool in ["worker", "fencing-store"] {
        assert!(!out.contains(tool), "{tool} listed:\n{out}");
    }
    // The rows of the one exit-code table (crates/cli/src/exit.rs) that apply to `cluster`.
    for row in [
        "  0  success",
        "  2  usage error",
        " 66  an input file",
        " 69  the server, the cluster's nodes or etcd",
        " 70  any other error",
    ] {
        assert!(out.contains(row), "{row:?} missing:\n{out}");
    }
    let (code, out, _) = run_cli(&["cluster", "worker", "--help"], Duration::from_secs(10));
    assert_eq!(code, Some(0), "the hidden tools still run");
    assert!(out.contains("--store"), "{out}");
    // 66: the fencing store's file cannot be read.
    let dir = tempdir("cluster-errors-66");
    let missing = dir.join("no-such-dir").join("store.data");
    let (code, _, err) = run_cli(
        &["cluster", "fencing-store", "--file", missing.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(66), "{err}");
    assert!(failure_line(&err).contains("no-such-dir"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 30, item 8: CLUSTER.md §5 starts every node with the same `--partitions`
/// (whichever node registers first creates the cluster with its own count).
#[test]
fn the_walk_through_starts_every_node_with_the_same_partition_count() {
    const DOC: &str = include_str!("../../../docs/CLUSTER.md");
    let counts: Vec<Option<&str>> = DOC
        .lines()
        .filter(|l| l.starts_with("rangelock serve --cluster "))
        .map(|l| l.split(" --partitions ").nth(1).and_then(|r| r.split_whitespace().next()))
        .collect();
    assert!(counts.len() >= 3, "the walk-through starts three nodes: {counts:?}");
    assert!(counts.iter().all(|c| c.is_some() && *c == counts[0]), "{counts:?}");
}
