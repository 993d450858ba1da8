//! `rangelock cluster status`, `balance`, `move --no-rebalance` and `reset` against real
//! node processes on a private etcd (issue 34):
//!
//! * a node killed with SIGKILL is reported dead (not dropped) within its etcd TTL plus
//!   1 s, with when it was last seen; its partitions' new owner shows them in grace
//!   while the grace period is in effect, and serving once the node has ended it, also
//!   when a planned move ends it early;
//! * with the balancer paused, an operator's move is the only move; resumed, the
//!   balancer moves again;
//! * `cluster reset` deletes nothing without `--yes`, nothing while a node is
//!   registered, and every key of the cluster otherwise.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::cluster::{run_cli, settled, wait_for, NodeOpts, NodeProc};
use common::tempdir;
use rangelock_cluster::etcd::{local_etcd_or_skip, Etcd, EventKind};
use rangelock_cluster::keys::Snapshot;
use rangelock_server::protocol::Partitioning;
use serde_json::Value;

/// `cluster status --json` of the cluster at `ep`.
fn status(ep: &str) -> Value {
    let (code, out, err) =
        run_cli(&["cluster", "status", "--json", "--etcd", ep], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn node<'a>(st: &'a Value, id: &str) -> Option<&'a Value> {
    st["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id)
}

fn part(st: &Value, p: u32) -> &Value {
    &st["partitions"][p as usize]
}

/// Polls `cluster status --json` until `cond` holds, at most `limit`.
fn status_until(ep: &str, what: &str, limit: Duration, cond: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let st = status(ep);
        if cond(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for {what}:\n{st:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the node log at `log` has logged `what` for partition `p`.
fn logged(log: &Path, what: &str, p: u32) -> bool {
    let s = std::fs::read_to_string(log).unwrap_or_default();
    let tag = format!("partition={p}");
    s.lines().any(|l| l.contains(what) && l.split_whitespace().any(|w| w == tag))
}

/// The `--json` table of CLUSTER.md §5 names exactly the fields `status` prints.
fn check_documented_fields(st: &Value) {
    const DOC: &str = include_str!("../../../docs/CLUSTER.md");
    let table: Vec<&str> = DOC
        .split("`--json` prints one object")
        .nth(1)
        .expect("the --json section")
        .lines()
        .skip_while(|l| !l.starts_with("| field"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    let row = |name: &str| {
        *table
            .iter()
            .find(|l| l.starts_with(&format!("| `{name}`")))
            .unwrap_or_else(|| panic!("no row for {name} in {table:#?}"))
    };
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    for k in keys(st) {
        let name = if st[&k].is_array() { format!("{k}[]") } else { k.clone() };
        row(&name);
    }
    assert_eq!(table.len() - 2, keys(st).len(), "one row per field: {table:#?}");
    for (list, v) in [("nodes[]", &st["nodes"][0]), ("partitions[]", &st["partitions"][0])] {
        // Field names are the backticked words of the row (after its name), less values.
        let mut documented: Vec<String> = row(list)
            .split('`')
            .skip(3)
            .step_by(2)
            .filter(|w| *w != "null" && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .map(str::to_owned)
            .collect();
        documented.sort();
        let mut printed = keys(v);
        printed.sort();
        assert_eq!(documented, printed, "{list}");
    }
}

#[test]
fn a_killed_node_is_reported_dead_and_grace_is_shown_only_while_in_effect() {
    let Some(etcd) = local_etcd_or_skip("a_killed_node_is_reported_dead") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-status");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // a takes b's partitions over with a grace of 3 s; c gets its share from a by planned
    // moves, whose grace (20 s here) ends early: nothing was held to hand over.
    let ttl = Duration::from_secs(1);
    let a = NodeProc::start(&ep, "a", &NodeOpts::timed(4, 1, 1000, 3000), &dir);
    let mut b = NodeProc::start(&ep, "b", &NodeOpts::timed(4, 1, 1000, 3000), &dir);
    wait_for(&rt, &ep, "a and b share the partitions", Duration::from_secs(20), |s| {
        settled(s, &["a", "b"])
    });
    // Both alive, with their lease and when they were last seen; ranges as the map has them.
    let st = status_until(&ep, "no grace", Duration::from_secs(10), |st| {
        st["partitions"].as_array().unwrap().iter().all(|p| p["phase"] == "serving")
    });
    for id in ["a", "b"] {
        let n = node(&st, id).unwrap();
        assert_eq!(n["alive"], true, "{st:#}");
        assert_eq!(n["lease_ttl_s"], 1, "{st:#}");
        assert!(n["lease_remaining_s"].as_u64().unwrap() <= 1, "{st:#}");
        assert!(n["last_seen_ms_ago"].as_u64().unwrap() < 5000, "{st:#}");
        assert_eq!(n["partitions"], 2, "{st:#}");
    }
    let parts = Partitioning::new(4).unwrap();
    for p in 0..4 {
        let j = part(&st, p);
        assert_eq!(
            (j["start"].as_u64(), j["end"].as_u64()),
            (Some(parts.start(p)), Some(parts.end(p)))
        );
        assert!(j["epoch"].as_u64().unwrap() > 0 && j["grace_left_ms"].is_null(), "{st:#}");
    }
    let b_parts: Vec<u32> = (0..4).filter(|&p| part(&st, p)["owner"] == "b").collect();

    // SIGKILL: dead within the TTL + 1 s, and still listed.
    b.proc.kill();
    let killed = Instant::now();
    let st = status_until(&ep, "b dead", ttl + Duration::from_secs(5), |st| {
        node(st, "b").is_some_and(|n| n["alive"] == false)
    });
    let took = killed.elapsed();
    println!("b reported dead {took:?} after SIGKILL");
    assert!(took <= ttl + Duration::from_secs(1), "dead only after {took:?}:\n{st:#}");
    let nb = node(&st, "b").unwrap();
    assert!(nb["lease_remaining_s"].is_null() && nb["last_seen_unix_ms"].as_u64().is_some());
    assert!(nb["last_seen_ms_ago"].as_u64().unwrap() >= 1000 * ttl.as_secs() - 300, "{st:#}");

    // a claims b's partitions in a grace period: shown while in effect, then serving.
    let st = status_until(&ep, "a's grace on b's partitions", Duration::from_secs(10), |st| {
        b_parts.iter().all(|&p| part(st, p)["owner"] == "a" && part(st, p)["phase"] == "grace")
    });
    for &p in &b_parts {
        let left = part(&st, p)["grace_left_ms"].as_u64().unwrap();
        assert!(left <= 3000, "{st:#}");
    }
    // The table says the same.
    let (code, text, err) = run_cli(&["cluster", "status", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    println!("{text}");
    assert!(text.contains("nodes (1 alive, 1 dead):"), "{text}");
    let line_b = text.lines().find(|l| l.trim_start().starts_with("b ")).unwrap();
    assert!(line_b.contains(" dead ") && line_b.contains("lease gone"), "{text}");
    let row = |p: u32| {
        let range = format!("{}..{}", parts.start(p), parts.end(p));
        text.lines().find(|l| l.contains(&range)).unwrap_or_else(|| panic!("{range}: {text}"))
    };
    assert!(b_parts.iter().any(|&p| row(p).contains(" grace (")), "{text}");
    // Every field of the JSON is documented in CLUSTER.md §5, and every documented one is there.
    check_documented_fields(&st);
    let log_a = dir.join("node-a.log");
    let st = status_until(&ep, "a's grace over", Duration::from_secs(10), |st| {
        b_parts.iter().all(|&p| part(st, p)["phase"] == "serving")
    });
    for &p in &b_parts {
        assert!(logged(&log_a, "grace period over", p), "serving before a ended grace on {p}");
        assert!(part(&st, p)["grace_left_ms"].is_null());
    }
    assert_eq!(node(&st, "b").unwrap()["alive"], false, "still listed, dead");
    // A grace key left behind (as if its delete had failed) is deleted at a's next round.
    let p = b_parts[0];
    let epoch = part(&st, p)["epoch"].as_u64().unwrap();
    let stale = format!(r#"{{"epoch":{epoch},"until_unix_ms":{}}}"#, u64::MAX / 2);
    let client =
        rt.block_on(Etcd::connect(std::slice::from_ref(&ep), Duration::from_secs(5))).unwrap();
    let key = format!("/rangelock/default/grace/{p:05}").into_bytes();
    rt.block_on(client.put(&key, stale.as_bytes(), None)).unwrap();
    assert_eq!(part(&status(&ep), p)["phase"], "grace");
    // A round every TTL/5 = 200 ms: 10 rounds.
    status_until(&ep, "the stale grace key deleted", Duration::from_secs(2), |st| {
        part(st, p)["phase"] == "serving"
    });

    // c joins: planned moves from a, whose grace c ends as soon as every handed-over
    // lock is back (none was held). Status says serving then, not 20 s of grace.
    let c = NodeProc::start(&ep, "c", &NodeOpts::timed(4, 1, 1000, 20_000), &dir);
    let log_c = dir.join("node-c.log");
    let snap = wait_for(&rt, &ep, "c owns 2", Duration::from_secs(20), |s| {
        common::cluster::owned_by(s, "c").len() == 2
    });
    for p in common::cluster::owned_by(&snap, "c") {
        common::cluster::poll(
            "c ends the moved partition's grace",
            Duration::from_secs(10),
            || logged(&log_c, "every handed-over lock back: grace over", p),
        );
        let ended = Instant::now();
        // The node deletes grace/<p> right after ending grace: one etcd request.
        let st = status_until(&ep, "serving after an early end", Duration::from_secs(1), |st| {
            part(st, p)["phase"] == "serving"
        });
        println!(
            "partition {p}: serving in status {:?} after c logged grace over",
            ended.elapsed()
        );
        assert_eq!(part(&st, p)["owner"], "c");
    }
    drop((a, c));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_the_balancer_paused_an_operators_move_is_the_only_move() {
    let Some(etcd) = local_etcd_or_skip("an_operators_move_is_the_only_move") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-no-rebalance");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let opts = NodeOpts::timed(8, 1, 1000, 1500);
    let nodes: Vec<NodeProc> =
        ["a", "b", "c"].iter().map(|id| NodeProc::start(&ep, id, &opts, &dir)).collect();
    let snap = wait_for(&rt, &ep, "3 nodes share 8 partitions", Duration::from_secs(30), |s| {
        settled(s, &["a", "b", "c"])
    });
    // 3, 3, 2: a move from the node with 2 (lo) to one with 3 (hi) leaves 1 and 4, which
    // the balancer would correct with two more moves (balance.rs).
    let ids = ["a", "b", "c"];
    let count = |s: &Snapshot, id: &str| common::cluster::owned_by(s, id).len();
    let from = *ids.iter().find(|id| count(&snap, id) == 2).expect("one node owns 2");
    let to = *ids.iter().find(|id| count(&snap, id) == 3).expect("a node owns 3");
    let p = common::cluster::owned_by(&snap, from)[0];
    let etcd_client =
        rt.block_on(Etcd::connect(std::slice::from_ref(&ep), Duration::from_secs(5))).unwrap();
    let owners = b"/rangelock/default/owner/".to_vec();
    let mut watch = rt.block_on(etcd_client.watch_prefix(&owners)).unwrap();

    let (code, out, err) = run_cli(
        &["cluster", "move", &p.to_string(), "--to", to, "--no-rebalance", "--etcd", &ep],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("balancer paused")
            && out.contains(&format!("partition {p}: move to {to} requested")),
        "{out}"
    );
    // The move: owner/<p> deleted by `from`, created by `to`.
    let key = format!("/rangelock/default/owner/{p:05}").into_bytes();
    let mut seen = Vec::new();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !seen
            .iter()
            .any(|(k, kind): &(Vec<u8>, EventKind)| *k == key && *kind == EventKind::Put)
        {
            let events =
                tokio::time::timeout_at(deadline, watch.next()).await.expect("the move").unwrap();
            seen.extend(events.into_iter().map(|e| (e.key, e.kind)));
        }
    });
    assert!(seen.iter().all(|(k, _)| *k == key), "only partition {p} changed: {seen:?}");
    // No further owner change. Nothing signals "the balancer decided not to move", so
    // this is a watch over a window: the grace period (1.5 s; a partition is not moved
    // during it) plus 10 manager rounds (TTL/5 = 200 ms each): 3.5 s. The same window
    // sees the cascade once the balancer runs again (below).
    let window = Duration::from_millis(1500) + 10 * Duration::from_millis(200);
    let quiet = rt.block_on(async { tokio::time::timeout(window, watch.next()).await });
    assert!(quiet.is_err(), "a move after the operator's: {:?}", quiet.unwrap());
    let st = status(&ep);
    assert_eq!(st["balancer_paused"], true);
    assert_eq!(node(&st, from).unwrap()["partitions"], 1, "{st:#}");
    assert_eq!(node(&st, to).unwrap()["partitions"], 4, "{st:#}");
    assert!(st["partitions"].as_array().unwrap().iter().all(|p| p["moving_to"].is_null()));

    // Resumed: the balancer evens the counts out again, within the same window.
    let (code, out, err) =
        run_cli(&["cluster", "balance", "resume", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!((code, out.trim()), (Some(0), "balancer running"), "{err}");
    let moved = rt.block_on(async { tokio::time::timeout(window, watch.next()).await });
    assert!(moved.is_ok(), "the resumed balancer moved nothing within {window:?}");
    wait_for(&rt, &ep, "balanced again", Duration::from_secs(20), |s| {
        settled(s, &ids) && ids.iter().all(|id| count(s, id) >= 2)
    });
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reset_needs_yes_and_no_live_node_then_deletes_every_key() {
    let Some(etcd) = local_etcd_or_skip("reset_needs_yes_and_no_live_node") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-reset");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client =
        rt.block_on(Etcd::connect(std::slice::from_ref(&ep), Duration::from_secs(5))).unwrap();
    // A key of another cluster, and one outside rangelock's: both survive.
    rt.block_on(client.put(b"/rangelock/other/config", b"{\"partitions\":4}", None)).unwrap();
    rt.block_on(client.put(b"/rangelock/defaults", b"x", None)).unwrap();
    let mut a = NodeProc::start(&ep, "a", &NodeOpts::fast(4), &dir);
    wait_for(&rt, &ep, "a owns every partition", Duration::from_secs(10), |s| settled(s, &["a"]));
    let keys = |prefix: &[u8]| rt.block_on(client.get_prefix(prefix)).unwrap().1.len();
    let before = keys(b"/rangelock/default/");
    assert!(before > 0);

    let (code, out, err) = run_cli(&["cluster", "reset", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("give --yes to confirm (nothing was deleted)"), "{err}");
    assert!(keys(b"/rangelock/default/") > 0);

    let (code, _, err) =
        run_cli(&["cluster", "reset", "--yes", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(70), "{err}");
    assert!(err.contains("live nodes are registered: a; stop them first"), "{err}");
    assert!(keys(b"/rangelock/default/") > 0);
    assert_eq!(status(&ep)["nodes"][0]["alive"], true, "the node is untouched");

    // Stopped in order, a revokes its lease; its cluster's keys remain until the reset.
    assert!(a.proc.terminate(Duration::from_secs(20)).is_some_and(|s| s.success()));
    assert!(keys(b"/rangelock/default/") > 0);
    let (code, out, err) =
        run_cli(&["cluster", "reset", "--yes", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    let n = keys(b"/rangelock/default/");
    assert_eq!(n, 0, "{out}");
    assert!(
        out.starts_with("cluster \"default\": ") && out.trim().ends_with(" keys deleted"),
        "{out}"
    );
    assert_eq!(keys(b"/rangelock/other/"), 1, "another cluster's keys are kept");
    assert_eq!(keys(b"/rangelock/defaults"), 1, "a key that only starts alike is kept");
    let (code, _, err) = run_cli(&["cluster", "status", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(70), "{err}");
    assert!(err.contains("no cluster named \"default\""), "{err}");

    // --force: deleted under a live node, which then serves nothing.
    let b = NodeProc::start(&ep, "b", &NodeOpts::fast(4), &dir);
    wait_for(&rt, &ep, "b owns every partition", Duration::from_secs(10), |s| settled(s, &["b"]));
    let (code, out, err) =
        run_cli(&["cluster", "reset", "--yes", "--force", "--etcd", &ep], Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.trim().ends_with(" keys deleted"), "{out}");
    assert!(rt.block_on(client.get(b"/rangelock/default/config")).unwrap().1.is_none());
    let b_log = dir.join("node-b.log");
    common::cluster::poll("b gives its partitions up", Duration::from_secs(10), || {
        let log = std::fs::read_to_string(&b_log).unwrap_or_default();
        (0..4).all(|p| {
            log.lines().any(|l| {
                l.contains("ownership lost in etcd") && l.contains(&format!("partition={p}"))
            })
        })
    });
    drop(b);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `seen/<id>` is written once per etcd TTL, not every round (TTL/5): each write is an
/// etcd revision, and epochs are revisions. A settled cluster writes nothing else.
#[test]
fn a_settled_node_writes_only_its_seen_record_once_per_ttl() {
    let Some(etcd) = local_etcd_or_skip("a_settled_node_writes_only_its_seen_record") else {
        return;
    };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-seen-rate");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let a = NodeProc::start(&ep, "a", &NodeOpts::fast(4), &dir);
    wait_for(&rt, &ep, "a owns every partition", Duration::from_secs(10), |s| settled(s, &["a"]));
    status_until(&ep, "no grace", Duration::from_secs(10), |st| {
        st["partitions"].as_array().unwrap().iter().all(|p| p["phase"] == "serving")
    });
    let client =
        rt.block_on(Etcd::connect(std::slice::from_ref(&ep), Duration::from_secs(5))).unwrap();
    let mut watch = rt.block_on(client.watch_prefix(b"/rangelock/default/")).unwrap();
    // A rate: counted over a window of 5 TTLs (25 manager rounds).
    let window = Duration::from_secs(5);
    let mut events = Vec::new();
    rt.block_on(async {
        let end = tokio::time::Instant::now() + window;
        while let Ok(e) = tokio::time::timeout_at(end, watch.next()).await {
            events.extend(e.unwrap().into_iter().map(|e| String::from_utf8(e.key).unwrap()));
        }
    });
    let seen = events.iter().filter(|k| *k == "/rangelock/default/seen/a").count();
    println!("{} writes in {window:?}: {seen} of seen/a", events.len());
    assert!((4..=6).contains(&seen), "{seen} writes of seen/a in 5 TTLs: {events:?}");
    assert_eq!(seen, events.len(), "only seen/a changes: {events:?}");
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}
