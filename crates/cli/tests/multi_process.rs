//! The real `rangelock` binary: a server process and several client processes.
//!
//! * `rangelock lock` processes increment a counter file under the lock: no update is lost;
//! * the command's exit code passes through; a conflict exits 1 without running it;
//! * `kill -9` of a client holding a lock releases it and grants its waiter;
//! * `rangelock stat` reports holders and waiters; SIGTERM stops the server cleanly;
//! * `rangelock stat` lists what fits in the server's output limit and says how many more
//!   there are.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

mod common;

use common::{lock_cmd, rangelock, signal, tempdir, ServerProc, BIN};

fn stat(addr: &str) -> String {
    let out = rangelock().args(["stat", "--server", addr]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

fn stat_field(s: &str, name: &str) -> u64 {
    s.lines()
        .find_map(|l| l.strip_prefix(name).map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no {name} in {s}"))
}

#[test]
fn client_processes_serialize_on_a_counter_file() {
    let server = ServerProc::start(&[]);
    let dir = tempdir("counter");
    let file = dir.join("n");
    std::fs::write(&file, "0\n").unwrap();
    let incr = "n=$(cat \"$1\"); n=$((n+1)); echo $n > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"";
    let file_s = file.to_str().unwrap().to_owned();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (addr, file_s) = (&server.addr, &file_s);
            s.spawn(move || {
                for _ in 0..6 {
                    let st = lock_cmd(addr, "0..64", &[], &["sh", "-c", incr, "sh", file_s])
                        .status()
                        .unwrap();
                    assert!(st.success());
                }
            });
        }
    });
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), "24");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(server.terminate().success(), "SIGTERM is a clean shutdown");
}

#[test]
fn exit_codes_pass_through_and_conflicts_exit_1() {
    let server = ServerProc::start(&["--engine", "tree-mutex"]);
    let st = lock_cmd(&server.addr, "0..1", &[], &["sh", "-c", "exit 7"]).status().unwrap();
    assert_eq!(st.code(), Some(7));
    let st = lock_cmd(&server.addr, "0..1", &["--shared"], &["sh", "-c", "kill -9 $$"])
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(128 + 9));
    // Hold 0..10 while an inner --nonblock and --timeout attempt fail with 1 and 3.
    let inner = format!(
        "{BIN} lock 5..6 --server {a} --nonblock -- true; a=$?; \
         {BIN} lock 5..6 --server {a} --timeout 10ms -E 3 -- true; b=$?; \
         {BIN} lock 10..11 --server {a} --nonblock -- true; c=$?; exit $((a*100+b*10+c))",
        a = server.addr
    );
    let st = lock_cmd(&server.addr, "0..10", &[], &["sh", "-c", &inner]).status().unwrap();
    assert_eq!(st.code(), Some(130), "conflict 1, timeout 3, disjoint range 0");
    let st =
        lock_cmd(&server.addr, "0..10", &[], &["printenv", "RANGELOCK_TOKEN"]).output().unwrap();
    let token: u64 = String::from_utf8(st.stdout).unwrap().trim().parse().unwrap();
    assert!(token >= 4);
}

#[test]
fn kill_9_of_a_holder_releases_its_lock_and_grants_the_waiter() {
    let server = ServerProc::start(&["--grant", "poll"]);
    // The holder prints its shell's pid, then becomes `sleep` (so we can kill the orphan).
    let mut holder =
        lock_cmd(&server.addr, "100..200", &[], &["sh", "-c", "echo $$; exec sleep 1000"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let sleeper: u32 = line.trim().parse().unwrap();
    let mut waiter = lock_cmd(&server.addr, "150..151", &[], &["true"]).spawn().unwrap();
    // Wait (on server replies) until the waiter is queued.
    let mut s = stat(&server.addr);
    for _ in 0..2000 {
        if stat_field(&s, "waiters") == 1 {
            break;
        }
        s = stat(&server.addr);
    }
    assert_eq!(stat_field(&s, "waiters"), 1, "{s}");
    assert_eq!(stat_field(&s, "holders"), 1);
    assert!(s.contains("held") && s.contains("waiting"), "{s}");
    assert!(waiter.try_wait().unwrap().is_none());

    holder.kill().unwrap(); // SIGKILL: no unlock is ever sent
    holder.wait().unwrap();
    let st = waiter.wait().unwrap();
    assert!(st.success(), "the waiter got the lock after the holder died");
    let s = stat(&server.addr);
    assert_eq!(stat_field(&s, "released by close"), 1, "{s}");
    assert_eq!(stat_field(&s, "holders"), 0);
    // The command died with its CLI (lock_signals.rs checks it); in case it did not. It may
    // be reaped already, so the signal may find no one.
    signal(sleeper, libc::SIGKILL);
}

#[test]
fn unix_socket_end_to_end() {
    let dir = tempdir("unix");
    let path = dir.join("sock");
    let mut child = rangelock()
        .args(["serve", "--unix", path.to_str().unwrap(), "--engine", "tree-single"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), format!("listening on unix:{}", path.display()));
    let server = ServerProc { child, addr: format!("unix:{}", path.display()) };
    let st = lock_cmd(&server.addr, "0..", &[], &["true"]).status().unwrap();
    assert!(st.success());
    assert!(server.terminate().success());
    assert!(!Path::new(&path).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 30: with `--max-stats-entries 100000` and 30 000 holders, `rangelock stat --max
/// 100000` lost its connection (exit 69): the answer (1.26 MB) passed the 1 MiB output
/// limit. Now the server lists the entries that fit and says how many were left out: with
/// names and the cache's counters (STATS_CACHED, 44 bytes an entry after 162) 23 827, and
/// 6173 left out.
#[test]
fn stat_lists_what_fits_in_the_output_limit_and_says_how_many_more() {
    use rangelock_client::{Client, Endpoint, Mode, Wait};
    let server = ServerProc::start(&["--max-stats-entries", "100000", "--max-locks", "30000"]);
    let c = Client::connect(&Endpoint::from(server.socket_addr())).unwrap();
    let held: Vec<_> = (0..30_000u64)
        .map(|i| c.lock(2 * i..2 * i + 1, Mode::Exclusive, Wait::Try).unwrap())
        .collect();
    let out =
        rangelock().args(["stat", "--server", &server.addr, "--max", "100000"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stat_field(&s, "holders"), 30_000);
    assert_eq!(s.lines().filter(|l| l.starts_with("held ")).count(), 23_827);
    let last = s.lines().last().unwrap();
    assert!(last.starts_with("… 6173 more (the server lists at most this many"), "{last}");
    // Fewer asked for than the server would send: no word about its limits.
    let s = stat_max(&server.addr, 10);
    assert_eq!(s.lines().last().unwrap(), "… 29990 more");
    drop(held);
    drop(c);
}

fn stat_max(addr: &str, max: u32) -> String {
    let out =
        rangelock().args(["stat", "--server", addr, "--max", &max.to_string()]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}
