//! `rangelock lock` signalled while its command runs (SIGTERM, SIGINT, SIGHUP, SIGQUIT, as
//! a supervisor or `kill` sends them): it passes the signal on to the command and holds the
//! range until the command has exited: no other client gets the range meanwhile. Then it
//! releases and exits 128+N. The same signal again (a second later) kills the command; at
//! once (as timeout(1) sends it) it is one signal. A terminal's Ctrl-C
//! reaches the command once (the terminal's own), not twice. For one server and a cluster.
//! SIGKILL of the CLI, which it cannot catch, kills the command too.

mod common;

use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{run_cli, settled, wait_for, NodeOpts, NodeProc};
use common::{rangelock, signal, tempdir, wait_bounded, ServerProc};
use rangelock_cluster::etcd::local_etcd_or_skip;

/// The four signals, with their names for sh's `trap` and the CLI's messages.
const SIGNALS: [(i32, &str); 4] = [
    (libc::SIGTERM, "TERM"),
    (libc::SIGINT, "INT"),
    (libc::SIGHUP, "HUP"),
    (libc::SIGQUIT, "QUIT"),
];

/// The command, run as `sh -c SCRIPT sh DIR`: it notes each of the four signals it gets
/// (`got TERM`) in `DIR/marker`, says `ready`, runs until the test writes to and closes
/// `DIR/fifo` (a `cat` it waits for, again after each trapped signal, until the `cat` is
/// gone however it ended), then says `end`.
const SCRIPT: &str = r#"m="$1/marker"
for s in TERM INT HUP QUIT; do trap "echo got $s >> \"$m\"" $s; done
cat "$1/fifo" > /dev/null &
echo ready >> "$m"
while kill -0 $! 2>/dev/null; do wait $!; done
echo end >> "$m""#;

/// How the test reaches the lock service: one server or a cluster node.
enum Target<'a> {
    Server(&'a str),
    Cluster(&'a str),
}

impl Target<'_> {
    /// `--server A` or `--cluster A`.
    fn flag(&self) -> [&str; 2] {
        match self {
            Target::Server(a) => ["--server", a],
            Target::Cluster(a) => ["--cluster", a],
        }
    }

    /// `rangelock lock [--server A | --cluster A] 0..100 -- CMD…`.
    fn lock(&self, cmd: &[&str]) -> Command {
        let mut c = rangelock();
        c.arg("lock").args(self.flag()).args(["0..100", "--"]).args(cmd).env("RUST_LOG", "error");
        c
    }

    /// The exit code of `rangelock lock --nonblock 0..100 -- true`.
    fn try_lock(&self) -> Option<i32> {
        let [flag, addr] = self.flag();
        run_cli(
            &["lock", flag, addr, "--nonblock", "0..100", "--", "true"],
            Duration::from_secs(60),
        )
        .0
    }
}

/// A holder: the CLI running [`SCRIPT`] in its own directory.
struct Holder {
    cli: Child,
    dir: PathBuf,
}

impl Holder {
    /// Starts it and waits until the command runs (so the range is held).
    fn start(target: &Target, name: &str) -> Holder {
        let dir = tempdir(name);
        let fifo = std::ffi::CString::new(dir.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) reads the NUL-terminated path, which lives across the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let err = std::fs::File::create(dir.join("cli.err")).unwrap();
        let cli = target
            .lock(&["sh", "-c", SCRIPT, "sh", dir.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap();
        let mut h = Holder { cli, dir };
        h.wait_marker("the command to start", |m| m.contains("ready\n"));
        h
    }

    fn marker(&self) -> String {
        std::fs::read_to_string(self.dir.join("marker")).unwrap_or_default()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("cli.err")).unwrap_or_default()
    }

    /// Waits until the marker satisfies `cond` or the CLI has exited (bounded); whether it
    /// satisfies it.
    fn wait_marker(&mut self, what: &str, cond: impl Fn(&str) -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if cond(&self.marker()) {
                return true;
            }
            if self.cli.try_wait().unwrap().is_some() {
                return cond(&self.marker());
            }
            assert!(Instant::now() < end, "no {what} within 60 s: {}", self.marker());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Lets the command end: writes to the fifo and closes it, so its `cat` ends. The
    /// open blocks until the `cat` has the fifo open: an event, not a sleep.
    fn let_it_end(&self) {
        let f = std::fs::OpenOptions::new().write(true).open(self.dir.join("fifo")).unwrap();
        drop(f);
    }

    /// Waits for the CLI's exit code.
    fn exit_code(&mut self) -> Option<i32> {
        let st = wait_bounded(&mut self.cli, Duration::from_secs(60));
        assert!(st.is_some(), "the CLI did not exit; stderr: {}", self.stderr());
        st.unwrap().code()
    }
}

impl Drop for Holder {
    /// Also ends the command, which a failed test may leave running without its CLI: a
    /// non-blocking open of the fifo (it fails if no `cat` reads it) and a close end its
    /// `cat`.
    fn drop(&mut self) {
        let _ = self.cli.kill();
        let _ = self.cli.wait();
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.join("fifo"));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Signals the holder's CLI with `sig` while the command runs; checks that the range stays
/// held until the command has exited and that the CLI then exits 128+`sig`.
fn holds_through(target: &Target, name: &str, sig: i32, sig_name: &str) {
    let mut h = Holder::start(target, &format!("{name}-{sig_name}"));
    assert!(signal(h.cli.id(), sig));
    let got = format!("got {sig_name}\n");
    // Either the command got the signal, or (the bug) the CLI ended without it.
    let passed_on = h.wait_marker("forwarded signal", |m| m.contains(&got));
    // The command still runs (its `cat` waits for us): nobody else may have the range.
    assert_eq!(
        target.try_lock(),
        Some(1),
        "SIG{sig_name}: another client got the range while the command ran; CLI exit: {:?}, \
         marker: {:?}, CLI stderr: {}",
        h.cli.try_wait().unwrap(),
        h.marker(),
        h.stderr()
    );
    assert!(passed_on, "SIG{sig_name} was not passed on to the command: {:?}", h.marker());
    assert!(h.cli.try_wait().unwrap().is_none(), "the CLI exited while its command ran");
    h.let_it_end();
    assert_eq!(h.exit_code(), Some(128 + sig), "SIG{sig_name}; stderr: {}", h.stderr());
    assert_eq!(h.marker(), format!("ready\n{got}end\n"), "SIG{sig_name}: got it once, then ended");
    let err = h.stderr();
    assert!(err.contains(&format!("got SIG{sig_name}; sent it to sh")), "{err}");
    assert_eq!(target.try_lock(), Some(0), "SIG{sig_name}: the range is free once it ended");
}

#[test]
fn each_signal_is_passed_on_and_the_range_held_until_the_command_exits() {
    let server = ServerProc::start(&[]);
    for (sig, name) in SIGNALS {
        holds_through(&Target::Server(&server.addr), "sig", sig, name);
    }
}

#[test]
fn the_same_signal_twice_kills_the_command_and_only_then_releases() {
    let server = ServerProc::start(&[]);
    let target = Target::Server(&server.addr);
    let mut h = Holder::start(&target, "sig-twice");
    assert!(signal(h.cli.id(), libc::SIGTERM));
    assert!(h.wait_marker("forwarded SIGTERM", |m| m.contains("got TERM\n")));
    assert_eq!(target.try_lock(), Some(1), "the range is held while the command runs");
    // Again until it takes: repeats within a second of the first are dropped; the first
    // one a second later sends SIGKILL, which ends the command (not its `cat`); the CLI
    // then releases and exits 143.
    let end = Instant::now() + Duration::from_secs(60);
    while h.cli.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "no escalation within 60 s: {}", h.stderr());
        assert!(signal(h.cli.id(), libc::SIGTERM));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(h.exit_code(), Some(128 + libc::SIGTERM), "stderr: {}", h.stderr());
    assert_eq!(h.marker(), "ready\ngot TERM\n", "one TERM passed on, then killed: no end");
    assert!(h.stderr().contains("got SIGTERM again; sent SIGKILL to sh"), "{}", h.stderr());
    assert_eq!(target.try_lock(), Some(0));
    h.let_it_end(); // the orphaned `cat`
}

#[test]
fn a_signal_while_waiting_for_the_lock_still_ends_the_wait() {
    // Signals are caught only once the lock is held: a waiting CLI still ends at once.
    let server = ServerProc::start(&[]);
    let target = Target::Server(&server.addr);
    let h = Holder::start(&target, "sig-waiting-holder");
    let mut waiter = target.lock(&["true"]).stderr(Stdio::null()).spawn().unwrap();
    // It waits (the holder has the range) until signalled.
    assert!(signal(waiter.id(), libc::SIGTERM));
    let st = wait_bounded(&mut waiter, Duration::from_secs(60)).expect("the waiter ended");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&st), Some(libc::SIGTERM));
    h.let_it_end();
    drop(h);
}

/// timeout(1) signals its child, then its whole group: the CLI gets SIGTERM twice at
/// once. That is one signal, not an escalation.
#[test]
fn the_same_signal_twice_at_once_is_one_signal() {
    let server = ServerProc::start(&[]);
    let target = Target::Server(&server.addr);
    let mut h = Holder::start(&target, "sig-dup");
    assert!(signal(h.cli.id(), libc::SIGTERM));
    assert!(signal(h.cli.id(), libc::SIGTERM));
    assert!(h.wait_marker("forwarded SIGTERM", |m| m.contains("got TERM\n")));
    assert_eq!(target.try_lock(), Some(1), "the range is held while the command runs");
    h.let_it_end();
    assert_eq!(h.exit_code(), Some(128 + libc::SIGTERM), "stderr: {}", h.stderr());
    assert_eq!(h.marker(), "ready\ngot TERM\nend\n", "not killed: it ended");
    assert!(!h.stderr().contains("SIGKILL"), "{}", h.stderr());
}

/// A terminal's Ctrl-C: the CLI runs in a session of its own with a pseudo-terminal as its
/// controlling terminal; `^C` written to the master makes the kernel send SIGINT to the
/// foreground process group, the CLI and its command. The command must get it once.
#[test]
fn a_terminal_ctrl_c_reaches_the_command_once() {
    let server = ServerProc::start(&[]);
    let target = Target::Server(&server.addr);
    let dir = tempdir("sig-tty");
    let fifo = std::ffi::CString::new(dir.join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) reads the NUL-terminated path, which lives across the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (master, slave) = open_pty();
    let mut cmd = target.lock(&["sh", "-c", SCRIPT, "sh", dir.to_str().unwrap()]);
    cmd.stdin(slave.try_clone().unwrap())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("cli.err")).unwrap());
    // SAFETY: setsid(2) and ioctl(2) are async-signal-safe; they touch no memory of ours.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let cli = cmd.spawn().unwrap();
    drop(slave);
    let mut h = Holder { cli, dir };
    h.wait_marker("the command to start", |m| m.contains("ready\n"));
    use std::io::Write;
    (&master).write_all(b"\x03").unwrap();
    assert!(h.wait_marker("Ctrl-C", |m| m.contains("got INT\n")), "{}", h.marker());
    // Then a SIGTERM from a process, passed on: once the command has it, the Ctrl-C was
    // taken by the CLI's signal thread too (not passed on, not counted).
    assert!(signal(h.cli.id(), libc::SIGTERM));
    assert!(h.wait_marker("forwarded SIGTERM", |m| m.contains("got TERM\n")), "{}", h.marker());
    assert_eq!(target.try_lock(), Some(1), "the range is held while the command runs");
    h.let_it_end();
    assert_eq!(h.exit_code(), Some(128 + libc::SIGTERM), "stderr: {}", h.stderr());
    assert_eq!(h.marker(), "ready\ngot INT\ngot TERM\nend\n", "Ctrl-C reached it once");
    assert!(!h.stderr().contains("SIGINT"), "a terminal's signal is not passed on: {}", h.stderr());
    drop(master);
}

/// A pseudo-terminal: (master, slave).
fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (-1, -1);
    // SAFETY: openpty(3) writes the two descriptors; the name, termios and winsize
    // pointers may be null.
    let r = unsafe {
        libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are fresh and owned by nobody else.
    unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) }
}

#[test]
fn through_a_cluster_each_signal_is_passed_on_and_the_range_held() {
    let Some(etcd) = local_etcd_or_skip("lock_signals_cluster") else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("sig-cluster");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Longer lease and TTL than `fast`: the holder must not lose its lock on a busy machine.
    let opts = NodeOpts { etcd_ttl_s: 5, lease_ms: 5000, grace_ms: 2000, ..NodeOpts::fast(4) };
    let a = NodeProc::start(&ep, "a", &opts, &dir);
    wait_for(&rt, &ep, "a owns the partitions", Duration::from_secs(30), |s| settled(s, &["a"]));
    for (sig, name) in SIGNALS {
        holds_through(&Target::Cluster(&a.addr), "sig-cluster", sig, name);
    }
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether process `pid` (not our child) still runs: a zombie no longer does.
fn runs(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name's closing parenthesis.
    stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
}

/// Whether process `pid` has a SIGKILL pending (its own or its thread group's).
fn kill_pending(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let bit = 1u64 << (libc::SIGKILL - 1);
    status
        .lines()
        .filter_map(|l| l.strip_prefix("SigPnd:").or(l.strip_prefix("ShdPnd:")))
        .any(|v| u64::from_str_radix(v.trim(), 16).is_ok_and(|mask| mask & bit != 0))
}

/// A command started under `rangelock lock`, told by the pid it prints: it is killed when
/// the test ends, whatever became of its CLI.
struct Orphan(u32);

impl Orphan {
    /// Starts `rangelock lock … -- sh -c 'echo $$; exec sleep 600'` and reads the
    /// command's pid (the range is held once it prints).
    fn start(target: &Target, extra: &[&str]) -> (Child, Orphan) {
        let [flag, addr] = target.flag();
        let mut cli = rangelock()
            .args(["lock", flag, addr])
            .args(extra)
            .args(["0..100", "--", "sh", "-c", "echo $$; exec sleep 600"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(cli.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let pid = line.trim().parse().unwrap_or_else(|_| panic!("a pid: {line:?}"));
        (cli, Orphan(pid))
    }
}

impl Drop for Orphan {
    fn drop(&mut self) {
        signal(self.0, libc::SIGKILL);
    }
}

/// SIGKILL of `rangelock lock` cannot be caught and releases the range: its command is
/// killed with it (within a second; it is sent in the CLI's own exit), so that it never
/// runs without the lock. With `--on-lost none` it is left running, as asked.
#[test]
fn sigkill_of_the_cli_kills_its_command_unless_on_lost_none() {
    let server = ServerProc::start(&[]);
    let target = Target::Server(&server.addr);
    let (mut cli, command) = Orphan::start(&target, &[]);
    assert!(runs(command.0));
    assert!(signal(cli.id(), libc::SIGKILL));
    cli.wait().unwrap();
    let end = Instant::now() + Duration::from_secs(1);
    while runs(command.0) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!runs(command.0), "the command still runs 1 s after its CLI was killed");
    released(&server.addr);

    let (mut cli, command) = Orphan::start(&target, &["--on-lost", "none"]);
    assert!(signal(cli.id(), libc::SIGKILL));
    cli.wait().unwrap();
    released(&server.addr);
    // The CLI's exit is over (reaped, and the server saw it), and would have sent the
    // signal in it.
    assert!(runs(command.0) && !kill_pending(command.0), "--on-lost none: left running");
}

/// Waits (a lock with a timeout: until the server's release, an event) for the range the
/// killed CLI held.
fn released(addr: &str) {
    use rangelock_client::{Client, Mode, Wait};
    let c = Client::connect(&addr.parse().unwrap()).unwrap();
    let g = c.lock(0..100, Mode::Exclusive, Wait::Timeout(Duration::from_secs(30)));
    g.expect("the range is released when the CLI is killed").unlock().unwrap();
}
