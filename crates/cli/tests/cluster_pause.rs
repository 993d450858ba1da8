//! A node paused across its session lease (`SIGSTOP`/`SIGCONT` of a real `rangelock serve
//! --cluster` process) costs its holders nothing (issue 30, item 3).
//!
//! Two nodes (`--partitions 2 --etcd-ttl 2 --lease-ms 2000 --grace-ms 2000`: the node's
//! fence closes 1.6 s after its last etcd keepalive, a session ends after 2 s without a
//! frame). For each pause length (just under and over the fence, and the lease plus
//! 100, 300 and 500 ms, which straddle the moment the clients give the paused node up),
//! the owner of partition 0 is paused while:
//!
//! * an in-test cluster client holds a range there and has written through a fencing
//!   store with its token, and a second client waits for the same range;
//! * `rangelock lock --cluster` holds another range there, running a command that ends
//!   only after the pause, with exit code 7;
//! * a third `rangelock lock --cluster` runs a command that ends *during* the pause,
//!   with exit code 5.
//!
//! After the pause the holder's piece must be held, with its token, by the partition's
//! owner (the same node, or the new one after a reclaim); its guard is not lost; its
//! second write is accepted; the waiter is granted only after the holder unlocks, with a
//! higher token; the store counts no violation; the two CLIs exit 7 and 5.
//!
//! The pause length is the controlled input; every other wait polls a condition (a
//! process's exit, a node's `STATS`, etcd) with a generous deadline.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cluster::{holds, owned_by, poll, settled, stats, wait_for, NodeOpts, NodeProc, Proc};
use common::{rangelock, tempdir, wait_bounded};
use rangelock_client::cluster::{ClusterClient, ClusterOptions};
use rangelock_client::{Client, EntryState, Mode, Wait};
use rangelock_cluster::etcd::local_etcd_or_skip;
use rangelock_cluster::fencing::{FencingClient, FencingStore, Write};
use rangelock_server::protocol::Partitioning;

fn opts() -> NodeOpts {
    NodeOpts::timed(2, 2, 2000, 2000)
}

/// `rangelock lock --cluster NODES RANGE -- sh -c '...'`: the command waits for `file`,
/// creates `file.done` and exits `code`. Its log is `dir/name.log`.
fn cli_holder(nodes: &str, range: &str, file: &Path, code: i32, dir: &Path, name: &str) -> Proc {
    let f = file.display();
    let script = format!("while [ ! -e '{f}' ]; do sleep 0.02; done; : > '{f}.done'; exit {code}");
    let mut cmd = rangelock();
    cmd.args(["lock", "--cluster", nodes, range, "--", "sh", "-c", &script])
        .env("RUST_LOG", "info");
    Proc::spawn(name, &mut cmd, dir.join(format!("{name}.log")), Stdio::null())
}

#[test]
fn a_node_paused_across_the_session_lease_costs_its_holders_nothing() {
    let Some(etcd) = local_etcd_or_skip("cluster_pause::paused_node") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("cluster-pause");
    let poll_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let crt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut nodes =
        [NodeProc::start(&ep, "a", &opts(), &dir), NodeProc::start(&ep, "b", &opts(), &dir)];
    wait_for(&poll_rt, &ep, "a and b own a partition each", Duration::from_secs(20), |s| {
        settled(s, &["a", "b"])
    });
    let store = crt.block_on(FencingStore::bind("127.0.0.1:0", dir.join("store.data"))).unwrap();
    let store_addr = store.local_addr();
    crt.spawn(store.serve(std::future::pending()));
    let mut fence = crt.block_on(FencingClient::connect(store_addr)).unwrap();
    let parts = Partitioning::new(2).unwrap();
    let base = parts.start(0);
    let options = ClusterOptions { reclaim_window: Duration::from_secs(20), ..Default::default() };

    // Under the fence (1.6 s), over it, and the lease plus 100, 300, 500 ms.
    let pauses = [1500, 1700, 2100, 2300, 2500].map(Duration::from_millis);
    let mut report = Vec::new();
    for (i, pause) in pauses.into_iter().enumerate() {
        let snap = wait_for(&poll_rt, &ep, "the cluster settles", Duration::from_secs(30), |s| {
            settled(s, &["a", "b"])
        });
        let owner = if owned_by(&snap, "a").contains(&0) { 0 } else { 1 };
        let addrs = format!("{},{}", nodes[0].addr, nodes[1].addr);
        let seeds: Vec<String> = addrs.split(',').map(str::to_owned).collect();
        let connect = || crt.block_on(ClusterClient::connect(&seeds, options.clone())).unwrap();
        let (holder, waiter) = (connect(), connect());
        let range = base + 1000 * i as u64..base + 1000 * i as u64 + 100;
        let guard = crt
            .block_on(holder.lock(
                range.clone(),
                Mode::Exclusive,
                Wait::Timeout(Duration::from_secs(10)),
            ))
            .unwrap();
        let piece = guard.pieces()[0].clone();
        let me = format!("holder-{i}");
        let w = crt.block_on(fence.write(range.clone(), piece.token, &me)).unwrap();
        assert_eq!(w, Write::Accepted);
        let waiting = {
            let (c, r) = (waiter.clone(), range.clone());
            crt.spawn(async move {
                let got = c.lock(r, Mode::Exclusive, Wait::Timeout(Duration::from_secs(60))).await;
                (got, Instant::now())
            })
        };
        let owner_addr = nodes[owner].addr.clone();
        poll("the waiter queued at the owner", Duration::from_secs(10), || {
            stats(&owner_addr).is_some_and(|s| {
                s.entries.iter().any(|e| e.state == EntryState::Waiting && e.start == range.start)
            })
        });
        // Two CLI holders on other ranges of the partition: one command ends after the
        // pause, one during it.
        let (after, during) = (dir.join(format!("after-{i}")), dir.join(format!("during-{i}")));
        let r_after = format!("{}..{}", range.start + 200, range.start + 300);
        let r_during = format!("{}..{}", range.start + 400, range.start + 500);
        let mut cli_after =
            cli_holder(&addrs, &r_after, &after, 7, &dir, &format!("cli-after-{i}"));
        let mut cli_during =
            cli_holder(&addrs, &r_during, &during, 5, &dir, &format!("cli-during-{i}"));
        poll("both CLIs hold their ranges", Duration::from_secs(10), || {
            stats(&owner_addr).is_some_and(|s| {
                let held = |r: &str| {
                    let start: u64 = r.split("..").next().unwrap().parse().unwrap();
                    s.entries.iter().any(|e| e.state == EntryState::Held && e.start == start)
                };
                held(&r_after) && held(&r_during)
            })
        });

        // The pause: its length is the test's input.
        nodes[owner].proc.pause();
        let paused = Instant::now();
        std::fs::write(&during, b"").unwrap();
        let done = dir.join(format!("during-{i}.done"));
        poll("the command ends during the pause", pause, || done.exists());
        std::thread::sleep(pause.saturating_sub(paused.elapsed()));
        nodes[owner].proc.resume();
        let resumed = Instant::now();

        // The holder keeps holding for an etcd TTL and a second after the resume (the
        // paused node confirms or loses its etcd lease within that), and until the
        // cluster has settled with its piece, and its token, at the partition's owner.
        let hold_until = resumed + Duration::from_secs(opts().etcd_ttl_s + 1);
        let mut held_at = String::new();
        poll("the holder's piece held by the partition's owner", Duration::from_secs(40), || {
            assert!(
                !guard.is_lost(),
                "pause {pause:?}: the holder's guard was lost: {:?}",
                guard.check()
            );
            if Instant::now() < hold_until {
                return false;
            }
            let Some(snap) = common::cluster::snapshot(&poll_rt, &ep) else { return false };
            let Some(o) = snap.owners[0].as_ref().filter(|_| settled(&snap, &["a", "b"])) else {
                return false;
            };
            let Some(n) = nodes.iter().find(|n| n.id == o.node) else { return false };
            held_at = format!("{} (epoch {})", n.id, o.epoch);
            stats(&n.addr).is_some_and(|s| holds(&s, &piece))
        });
        let recovered = resumed.elapsed();
        assert_eq!(guard.pieces(), vec![piece.clone()], "the token is unchanged");
        let w = crt.block_on(fence.write(range.clone(), piece.token, &me)).unwrap();
        assert_eq!(w, Write::Accepted, "pause {pause:?}: the holder's write after the pause");
        assert!(
            !waiting.is_finished(),
            "pause {pause:?}: the waiter was granted while the holder held"
        );

        let during_code = wait_bounded(&mut cli_during.child, Duration::from_secs(30));
        std::fs::write(&after, b"").unwrap();
        let after_code = wait_bounded(&mut cli_after.child, Duration::from_secs(30));
        let unlocked = Instant::now();
        crt.block_on(guard.unlock()).unwrap_or_else(|e| panic!("pause {pause:?}: unlock: {e}"));
        let (got, granted_at) = crt.block_on(waiting).unwrap();
        let wg = got.unwrap_or_else(|e| panic!("pause {pause:?}: the waiter: {e}"));
        assert!(granted_at >= unlocked);
        let wt = wg.pieces()[0].token;
        assert!(wt > piece.token, "pause {pause:?}: waiter token {wt:#x} <= {:#x}", piece.token);
        let w = crt.block_on(fence.write(range.clone(), wt, &format!("waiter-{i}"))).unwrap();
        assert_eq!(w, Write::Accepted);
        crt.block_on(wg.unlock()).unwrap();

        let log = |p: &Proc| p.log_tail(10);
        assert_eq!(
            during_code.and_then(|s| s.code()),
            Some(5),
            "pause {pause:?}: the CLI whose command ended during the pause:\n{}",
            log(&cli_during)
        );
        assert_eq!(
            after_code.and_then(|s| s.code()),
            Some(7),
            "pause {pause:?}: the CLI whose command ran across the pause:\n{}",
            log(&cli_after)
        );
        report.push(format!(
            "pause {pause:?} of {} (partition 0 at epoch {}): the piece held at {held_at}, \
             checked {recovered:?} after the resume",
            nodes[owner].id,
            snap.owners[0].as_ref().unwrap().epoch
        ));
    }
    let st = crt.block_on(fence.stats()).unwrap();
    for line in &report {
        println!("{line}");
    }
    println!("fencing store: {st}");
    assert_eq!(st.violations, 0);
    assert_eq!(st.stale, 0);
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same for a single server: `rangelock serve` paused for its lease plus 300 ms,
/// while `rangelock lock` holds a range, keeps the session. Its client's keepalives
/// wait in the socket; the server reads them before it judges the lease.
#[test]
fn a_single_server_paused_past_the_lease_keeps_its_sessions() {
    let dir = tempdir("server-pause");
    let mut server = common::ServerProc::start(&["--lease-ms", "1000"]);
    let file = dir.join("go");
    let mut cli = {
        let f = file.display();
        let script = format!("while [ ! -e '{f}' ]; do sleep 0.02; done; exit 7");
        let mut c = common::lock_cmd(&server.addr, "0..10", &[], &["sh", "-c", &script]);
        Proc::spawn("cli", c.env("RUST_LOG", "info"), dir.join("cli.log"), Stdio::null())
    };
    let ep: rangelock_client::Endpoint = server.addr.parse().unwrap();
    let other = Client::connect(&ep).unwrap();
    poll("the CLI holds 0..10", Duration::from_secs(10), || {
        other.lock(0..10, Mode::Exclusive, Wait::Try).is_err()
    });
    let pid = server.child.id();
    assert!(common::signal(pid, libc::SIGSTOP));
    poll("the server stopped", Duration::from_secs(5), || {
        common::cluster::all_threads_stopped(pid)
    });
    let stopped = Instant::now();
    std::thread::sleep(Duration::from_millis(1300).saturating_sub(stopped.elapsed()));
    assert!(common::signal(pid, libc::SIGCONT));
    // A session the server ended at its resume would free the range at once: wait for it
    // for a lease and a half.
    let contender = other.lock(0..10, Mode::Exclusive, Wait::Timeout(Duration::from_millis(1500)));
    assert!(
        matches!(contender, Err(rangelock_client::ClientError::TimedOut)),
        "expected the range still held (TimedOut) after the pause: {contender:?}"
    );
    std::fs::write(&file, b"").unwrap();
    let code = wait_bounded(&mut cli.child, Duration::from_secs(30)).and_then(|s| s.code());
    assert_eq!(code, Some(7), "{}", cli.log_tail(10));
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
