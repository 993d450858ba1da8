//! `rangelock lock` whose lease lapses while its command runs: the server gives the range
//! to another client, and the CLI signals the command and exits 75 (EX_TEMPFAIL) instead
//! of finding out only when the command ends.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{lock_cmd, signal, tempdir, wait_bounded, ServerProc};
use rangelock_client::{Client, Endpoint, Mode, Wait};

/// Waits (bounded) until the file exists and has a line; returns it.
fn wait_for_file(path: &Path, limit: Duration) -> String {
    let end = Instant::now() + limit;
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.ends_with('\n') {
                return s;
            }
        }
        assert!(Instant::now() < end, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the command under `rangelock lock 0..10 EXTRA…`, stops the CLI until another
/// client got the range, resumes it; returns the CLI's output and the marker directory.
fn lose_the_lock(name: &str, extra: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let server = ServerProc::start(&["--lease-ms", "300"]);
    let dir = tempdir(name);
    // The command records its pid, then that it got SIGTERM (and exits 0 then, so only
    // the CLI's 75 says the lock was lost). It would otherwise run for 100 s.
    let script = "trap 'echo term > \"$1/term\"; exit 0' TERM; echo $$ > \"$1/ready\"; \
                  i=0; while [ $i -lt 2000 ]; do sleep 0.05; i=$((i+1)); done; \
                  echo timeout > \"$1/ended\"";
    let mut cli =
        lock_cmd(&server.addr, "0..10", extra, &["sh", "-c", script, "sh", dir.to_str().unwrap()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let ready = wait_for_file(&dir.join("ready"), Duration::from_secs(30));
    let sh_pid: u32 = ready.trim().parse().unwrap();

    // Stop the CLI (and so its keepalive thread): its lease lapses, the server ends the
    // session and grants our blocking lock. Its return is the synchronization.
    assert!(signal(cli.id(), libc::SIGSTOP));
    let ep: Endpoint = server.addr.parse().unwrap();
    let other = Client::connect(&ep).unwrap();
    let guard = other.lock(0..10, Mode::Exclusive, Wait::Forever).unwrap();
    assert!(signal(cli.id(), libc::SIGCONT));

    let status = wait_bounded(&mut cli, Duration::from_secs(30));
    if status.is_none() {
        let _ = cli.kill();
        signal(sh_pid, libc::SIGKILL);
    }
    let out = cli.wait_with_output().unwrap();
    assert!(status.is_some(), "the CLI did not notice the lost lock while its command ran");
    drop(guard);
    (out, dir)
}

#[test]
fn a_lapsed_lease_signals_the_command_and_exits_75() {
    let (out, dir) = lose_the_lock("lost-term", &[]);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "stderr: {stderr}");
    assert!(dir.join("term").exists(), "the command got no SIGTERM; stderr: {stderr}");
    assert!(!dir.join("ended").exists());
    assert!(stderr.contains("lock 0..10 lost"), "{stderr}");
    assert!(stderr.contains("lease lapsed"), "{stderr}");
    assert!(stderr.contains("sent SIGTERM to sh"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn on_lost_picks_the_signal() {
    let (out, dir) = lose_the_lock("lost-int", &["--on-lost", "SIGINT"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "stderr: {stderr}");
    assert!(stderr.contains("sent SIGINT to sh"), "{stderr}");
    // sh without an INT trap dies of it: no TERM marker, no normal end.
    assert!(!dir.join("term").exists() && !dir.join("ended").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
