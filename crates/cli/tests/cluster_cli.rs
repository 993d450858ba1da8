//! `rangelock lock --cluster` and `rangelock stat --cluster` against real node processes:
//! a range across partitions is held piece by piece, the command sees every token, a
//! conflicting `--nonblock` gets the conflict exit code, and `stat --cluster` shows the map
//! and the holders (the kill of a node is `cluster_failover`'s).

mod common;

use std::time::Duration;

use common::cluster::{poll, run_cli, run_cli_cached, settled, wait_for, NodeOpts, NodeProc, Proc};
use common::tempdir;
use rangelock_cluster::etcd::local_etcd_or_skip;
use rangelock_server::protocol::{token, Partitioning};

/// Nodes a and b (4 partitions) on etcd `ep`, logging into `dir`, once they share the
/// partitions.
fn two_nodes(ep: &str, dir: &std::path::Path) -> (NodeProc, NodeProc) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let opts = NodeOpts::fast(4);
    let a = NodeProc::start(ep, "a", &opts, dir);
    let b = NodeProc::start(ep, "b", &opts, dir);
    wait_for(&rt, ep, "a and b share the partitions", Duration::from_secs(20), |s| {
        settled(s, &["a", "b"])
    });
    (a, b)
}

#[test]
fn lock_and_stat_through_a_cluster() {
    let Some(etcd) = local_etcd_or_skip("lock_and_stat_through_a_cluster") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-cli");
    let (a, b) = two_nodes(&ep, &dir);
    let parts = Partitioning::new(4).unwrap();
    let boundary = parts.start(1);
    let range = format!("{}..{}", boundary - 5, boundary + 5);
    let (code, out, err) = run_cli(
        &[
            "lock",
            "--cluster",
            &a.addr,
            &range,
            "--",
            "sh",
            "-c",
            "echo \"$RANGELOCK_TOKENS|$RANGELOCK_TOKEN\"",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "{err}");
    let (tokens, single) = out.trim().split_once('|').unwrap();
    assert_eq!(single, "", "two pieces: no single token");
    let pieces: Vec<&str> = tokens.split(' ').collect();
    assert_eq!(pieces.len(), 2, "{tokens}");
    assert!(pieces[0].starts_with(&format!("{}..{}=", boundary - 5, boundary)), "{tokens}");
    for p in &pieces {
        let t: u64 = p.split_once('=').unwrap().1.parse().unwrap();
        assert!(token::epoch(t) > 0, "a cluster token carries its epoch: {p}");
    }
    // A one-piece range gets RANGELOCK_TOKEN too.
    let (code, out, err) = run_cli(
        &["lock", "--cluster", &b.addr, "0..10", "--", "sh", "-c", "echo $RANGELOCK_TOKEN"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.trim().parse::<u64>().is_ok(), "{out}");
    // Without a command, the cluster given by $RANGELOCK_CLUSTER: the pieces' tokens on
    // one line, held until SIGTERM, then released.
    let mut hold = common::rangelock()
        .args(["lock", &range])
        .env("RANGELOCK_CLUSTER", &a.addr)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(hold.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let pieces: Vec<&str> = line.trim().split(' ').collect();
    assert_eq!(pieces.len(), 2, "{line}");
    assert!(pieces[1].starts_with(&format!("{boundary}..{}=", boundary + 5)), "{line}");
    let try_piece = || {
        let piece = format!("{boundary}..+1");
        run_cli(
            &["lock", "--cluster", &b.addr, "-n", &piece, "--", "true"],
            Duration::from_secs(20),
        )
    };
    assert_eq!(try_piece().0, Some(1), "held");
    assert!(common::signal(hold.id(), libc::SIGTERM));
    let st = common::wait_bounded(&mut hold, Duration::from_secs(20)).expect("it exits");
    assert_eq!(st.code(), Some(0));
    let (code, _, err) = try_piece();
    assert_eq!(code, Some(0), "released: {err}");
    // A holder in the background; a conflicting --nonblock gets exit 1, and stat --cluster
    // shows the map and the holder.
    let mut cmd = common::rangelock();
    cmd.args(["lock", "--cluster", &a.addr, "0..10", "--", "sleep", "30"]);
    let mut holder =
        Proc::spawn("holder", &mut cmd, dir.join("holder.log"), std::process::Stdio::null());
    let mut tries = 0;
    loop {
        let (code, _, err) = run_cli(
            &["lock", "--cluster", &b.addr, "--nonblock", "5..6", "--", "true"],
            Duration::from_secs(20),
        );
        if code == Some(1) {
            assert!(err.contains("not available"), "{err}");
            break;
        }
        // The holder may not hold yet.
        assert_eq!(code, Some(0), "{err}");
        tries += 1;
        assert!(tries < 200, "the holder never held 0..10");
        std::thread::sleep(Duration::from_millis(20));
    }
    // `stat --cluster <node>` shows the map that node published at its last round (every
    // tick, a fifth of the etcd TTL), which on a loaded machine may still predate b's claims
    // although etcd has them (the wait above read etcd): wait for a's map to name b.
    let mut out = String::new();
    poll("node a's published map names node b", Duration::from_secs(20), || {
        let (code, stat, err) =
            run_cli(&["stat", "--cluster", &a.addr, "--max", "10"], Duration::from_secs(20));
        assert_eq!(code, Some(0), "{err}");
        out = stat;
        out.contains("node              b")
    });
    assert!(out.contains("4 partitions"), "{out}");
    assert!(out.contains("node              a") && out.contains("node              b"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("held") && l.ends_with(" 10  -")), "{out}");
    // The same through etcd: --cluster with etcd endpoints finds the nodes there.
    let (code, out, err) =
        run_cli(&["stat", "--cluster", &ep, "--max", "10"], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().any(|l| l.starts_with("held") && l.ends_with(" 10  -")), "{out}");
    let (code, _, err) = run_cli(
        &["lock", "--cluster", &ep, "--nonblock", "5..6", "--", "true"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(1), "{err}");
    let (code, _, err) = run_cli(
        &["lock", "--cluster", &format!("{ep},{}", a.addr), "0..1", "--", "true"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "mixing etcd endpoints and node addresses: {err}");
    assert!(err.contains("not both"), "{err}");
    holder.kill();
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The flock-like commands through a cluster: names never conflict with each
/// other, the same name does; a named range across a stripe boundary is two pieces, each
/// with its partition's token; `stat --cluster` lists the holder under its name.
#[test]
fn names_through_a_cluster() {
    let Some(etcd) = local_etcd_or_skip("names_through_a_cluster") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-cli-names");
    let (a, b) = two_nodes(&ep, &dir);
    let mut cmd = common::rangelock();
    cmd.args(["lock", "--cluster", &ep, "a", "0..10", "--", "sleep", "30"]);
    let mut holder =
        Proc::spawn("holder", &mut cmd, dir.join("holder.log"), std::process::Stdio::null());
    poll("the holder holds 0..10 of a", Duration::from_secs(20), || {
        let (code, _, err) = run_cli(
            &["lock", "--cluster", &ep, "--nonblock", "a", "5..6", "--", "true"],
            Duration::from_secs(20),
        );
        assert!(code == Some(0) || code == Some(1), "{err}");
        code == Some(1)
    });
    let (code, _, err) = run_cli(
        &["lock", "--cluster", &ep, "--nonblock", "b", "0..10", "--", "true"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "another name: {err}");
    let (code, _, err) = run_cli(
        &["lock", "--cluster", &b.addr, "--nonblock", "0..10", "--", "true"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "the unnamed resource: {err}");
    // Across the first stripe boundary (2^24): two pieces, two tokens.
    let stripe = 1u64 << 24;
    let range = format!("{}..{}", stripe - 1, stripe + 1);
    let (code, out, err) = run_cli(
        &["lock", "--cluster", &a.addr, "b", &range, "--", "sh", "-c", "echo $RANGELOCK_TOKENS"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "{err}");
    let pieces: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(pieces.len(), 2, "{out}");
    assert!(pieces[0].starts_with(&format!("{}..{stripe}=", stripe - 1)), "{out}");
    assert!(pieces[1].starts_with(&format!("{stripe}..{}=", stripe + 1)), "{out}");
    let (code, out, err) =
        run_cli(&["stat", "--cluster", &ep, "--max", "10"], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().any(|l| l.starts_with("held") && l.ends_with(" 10  \"a\"")), "{out}");
    // cluster status: each node's own counts; one name live, one lock on it, in all.
    let (code, out, err) =
        run_cli(&["cluster", "status", "--json", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    let st: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nodes = st["nodes"].as_array().unwrap();
    let sum = |k: &str| nodes.iter().map(|n| n[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("names_live"), sum("named_locks")), (1, 1), "{st:#}");
    let (code, out, err) = run_cli(&["cluster", "status", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(", names live 1, named locks 1\n"), "{out}");
    holder.kill();
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 30, item 8: with etcd down, `lock --cluster ETCD` uses the nodes it read from
/// etcd last time (kept per cluster name and endpoints in `$XDG_CACHE_HOME/rangelock`):
/// the nodes grant until their fences close. Without such a record it still exits 69.
#[test]
fn with_etcd_down_lock_uses_the_nodes_read_last_time() {
    let Some(etcd) = local_etcd_or_skip("with_etcd_down_lock_uses_the_nodes_read_last_time") else {
        return;
    };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-etcd-down");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // An etcd TTL of 10 s: the node's fence stays open at least 6.8 s after etcd dies.
    let a = NodeProc::start(&ep, "a", &NodeOpts::timed(2, 10, 10_000, 10_000), &dir);
    wait_for(&rt, &ep, "a owns every partition", Duration::from_secs(20), |s| settled(s, &["a"]));
    let (cache, empty) = (dir.join("cache"), dir.join("empty-cache"));
    let lock = |cache: &std::path::Path, range: &str| {
        run_cli_cached(
            &["lock", "--cluster", &ep, range, "--", "sh", "-c", "echo $RANGELOCK_TOKEN"],
            cache,
            Duration::from_secs(20),
        )
    };
    let (code, _, err) = lock(&cache, "0..10");
    assert_eq!(code, Some(0), "{err}");
    let kept = std::fs::read_dir(cache.join("rangelock")).unwrap().count();
    assert_eq!(kept, 1, "one record for the cluster");

    etcd.kill().unwrap();
    let (code, out, err) = lock(&cache, "10..20");
    println!("etcd down: exit {code:?}, stderr: {err}");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.trim().parse::<u64>().is_ok(), "{out}");
    assert!(
        err.contains("warning") && err.contains("using the nodes of cluster \"default\""),
        "{err}"
    );
    // Without a record of the nodes, an unreachable etcd is still an unreachable cluster.
    let (code, _, err) = lock(&empty, "20..30");
    assert_eq!(code, Some(69), "{err}");
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}
