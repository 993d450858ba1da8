//! One hostile session against the real `rangelock serve` process, for every engine.
//!
//! The hostile session (raw protocol, never reads a response) holds a range `H`, queues
//! [`HOSTILE_WAITS`] exclusive waits behind it, then pipelines [`STATS_FLOOD`] `STATS`
//! requests of up to 1000 entries (~42 KB per answer) without reading. Meanwhile a
//! well-behaved pair of sessions on unrelated ranges hands a lock over (W1 holds `X`, W2
//! queues on `X`, W1 unlocks: time until W2's grant) and try-locks/unlocks, first with the
//! waits queued, then during the flood. The test reports p50/p99/max and asserts:
//!
//! * the well-behaved latencies stay under [`P99_BOUND`] at p99 (each round gives up after
//!   [`ROUND_TIMEOUT`]);
//! * the server's peak RSS (`VmHWM`) stays under [`RSS_BOUND_KIB`];
//! * the server closes the hostile session within [`CLOSE_DEADLINE`] of the flood's start
//!   (its pending output passes the per-session byte bound, `--max-output-bytes`, default
//!   1 MiB) — the lease is set far longer, so lease expiry cannot be the reason — its
//!   socket then reads EOF or an error, and `H` is free for another session (its lock was
//!   released and its waits withdrawn, as on disconnect).

use std::cell::Cell;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rangelock_client::{Client, Endpoint};
use rangelock_server::protocol::{
    ClientHello, HelloStatus, Mode, Request, RequestFrame, ResponseFrame, ServerHello, Status,
    Wait, SERVER_HELLO_LEN, VERSION,
};

mod common;

use common::ServerProc;

/// The range the hostile session holds and queues its waits on.
const H: Range<u64> = 0..1000;
/// Waits the hostile session queues on `H` (the server allows 4096 live locks per session).
const HOSTILE_WAITS: u64 = 3000;
/// `STATS` requests the hostile session pipelines without reading.
const STATS_FLOOD: u64 = 6000;
/// Entries asked for per `STATS` (the server's limit is 1000): ~42 KB per answer here.
const STATS_MAX_ENTRIES: u32 = 1000;
/// Hand-over rounds per phase (two phases: waits queued, then the flood); the flood phase
/// goes on until the hostile session is closed, up to [`MAX_FLOOD_ROUNDS`].
const ROUNDS: u64 = 100;
/// Bound on the flood phase's rounds (it also ends at [`CLOSE_DEADLINE`]).
const MAX_FLOOD_ROUNDS: u64 = 20_000;
/// The well-behaved sessions' ranges start here, far from `H`.
const GOOD_BASE: u64 = 1_000_000;
/// A well-behaved request not answered this long is a failed round (and ends its phase).
const ROUND_TIMEOUT: Duration = Duration::from_secs(1);
/// p99 bound on the well-behaved latencies. An unloaded hand-over takes well under 1 ms
/// even with the debug-profile server; 200 ms leaves room for a noisy shared 2-core VM.
const P99_BOUND: Duration = Duration::from_millis(200);
/// Bound on the server's peak RSS, in KiB. The debug-profile server idles at a few MiB;
/// with the per-session output bound (1 MiB by default) the hostile session adds about
/// that much queued output plus its ~3000 lock entries and the well-behaved sessions
/// nearly nothing, so 64 MiB leaves ample room. Without a byte bound the server queues
/// thousands of 42 KB `STATS` answers: ~100 MB and more.
const RSS_BOUND_KIB: u64 = 64 * 1024;
/// The server must have closed the hostile session this long after its flood began.
const CLOSE_DEADLINE: Duration = Duration::from_secs(5);
/// The session lease given to the server: far beyond the test's duration, so that a
/// session closed within [`CLOSE_DEADLINE`] was closed for its output, not for silence.
const LEASE_MS: &str = "60000";

/// A raw protocol connection.
struct Raw {
    s: TcpStream,
    session: u64,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let mut out = Vec::new();
        ClientHello::new(VERSION).encode(&mut out);
        s.write_all(&out).unwrap();
        let mut buf = [0u8; SERVER_HELLO_LEN];
        s.read_exact(&mut buf).unwrap();
        let hello = ServerHello::decode(&buf).unwrap();
        assert_eq!(hello.status, HelloStatus::Accepted);
        Raw { s, session: hello.session }
    }

    fn send(&mut self, frames: &[(u64, Request)]) -> Result<(), String> {
        let mut out = Vec::new();
        for &(id, request) in frames {
            RequestFrame { id, request }.encode(&mut out);
        }
        self.s.write_all(&out).map_err(|e| format!("write: {e}"))
    }

    /// The next response, if one arrives before `deadline`. After an error the stream may
    /// be out of sync: the caller drops the connection.
    fn recv(&mut self, deadline: Instant) -> Result<ResponseFrame, String> {
        let mut read = |buf: &mut [u8]| {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("no response before the deadline".to_owned());
            }
            self.s.set_read_timeout(Some(left)).unwrap();
            self.s.read_exact(buf).map_err(|e| match e.kind() {
                ErrorKind::WouldBlock | ErrorKind::TimedOut => {
                    "no response before the deadline".to_owned()
                }
                _ => format!("read: {e}"),
            })
        };
        let mut len = [0u8; 4];
        read(&mut len)?;
        let mut body = vec![0; u32::from_le_bytes(len) as usize];
        read(&mut body)?;
        ResponseFrame::decode(&body).map_err(|e| format!("bad response: {e}"))
    }

    /// The response to `id`, which must be `OK`.
    fn expect_ok(&mut self, id: u64, what: &str) -> Result<(), String> {
        let r = self.recv(Instant::now() + ROUND_TIMEOUT).map_err(|e| format!("{what}: {e}"))?;
        if r.id != id || r.status != Status::Ok {
            return Err(format!("{what}: expected OK for id {id}, got {r:?}"));
        }
        Ok(())
    }
}

fn lock(range: Range<u64>, wait: Wait) -> Request<'static> {
    Request::Lock { start: range.start, end: range.end, mode: Mode::Exclusive, wait }
}

/// Latencies of the well-behaved sessions.
#[derive(Default)]
struct Samples {
    /// W1's try-lock of a free range: request to answer.
    try_lock: Vec<Duration>,
    /// W1's unlock sent to W2's grant of the lock it queued for.
    handoff: Vec<Duration>,
    /// W2's unlock: request to answer.
    unlock: Vec<Duration>,
}

/// Two well-behaved sessions: W1 holds, W2 queues behind it.
struct Good {
    w1: Raw,
    w2: Raw,
    next: u64,
}

impl Good {
    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// One round on range `x`: W1 try-locks it, W2 queues on it, W1 unlocks, W2 is granted
    /// and unlocks.
    fn round(&mut self, x: Range<u64>, s: &mut Samples) -> Result<(), String> {
        let a = self.id();
        let t = Instant::now();
        self.w1.send(&[(a, lock(x.clone(), Wait::Try))])?;
        self.w1.expect_ok(a, "W1's try-lock of a free range")?;
        s.try_lock.push(t.elapsed());

        // W2 queues; its STATS is answered only after the engine has seen the LOCK (every
        // engine handles a session's requests in order), so W2 is queued before W1 unlocks.
        let (b, fence) = (self.id(), self.id());
        self.w2.send(&[(b, lock(x, Wait::Forever)), (fence, Request::Stats { max_entries: 0 })])?;
        let r = self
            .w2
            .recv(Instant::now() + ROUND_TIMEOUT)
            .map_err(|e| format!("W2's queued lock: {e}"))?;
        if r.id != fence {
            return Err(format!("W2 was answered {r:?} while W1 holds the range"));
        }

        let u = self.id();
        let t0 = Instant::now();
        self.w1.send(&[(u, Request::Unlock { target: a })])?;
        let granted = self.w2.recv(t0 + ROUND_TIMEOUT);
        s.handoff.push(t0.elapsed());
        let r = granted.map_err(|e| format!("W2 not granted after W1's unlock: {e}"))?;
        if r.id != b || r.status != Status::Ok {
            return Err(format!("W2's grant: expected OK for id {b}, got {r:?}"));
        }
        self.w1.expect_ok(u, "W1's unlock")?;

        let v = self.id();
        let t = Instant::now();
        self.w2.send(&[(v, Request::Unlock { target: b })])?;
        self.w2.expect_ok(v, "W2's unlock")?;
        s.unlock.push(t.elapsed());
        Ok(())
    }
}

/// The `q` quantile (nearest rank) of `v`.
fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort_unstable();
    let rank = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Runs rounds on fresh well-behaved sessions while `more(rounds done)` says so (it is
/// also where the caller samples the server), reports the latencies and records failures.
/// A failed round ends the phase.
fn phase(
    engine: &str,
    name: &str,
    addr: SocketAddr,
    base: u64,
    more: &mut dyn FnMut(u64) -> bool,
    failures: &mut Vec<String>,
) {
    let mut good = Good { w1: Raw::connect(addr), w2: Raw::connect(addr), next: 0 };
    let mut s = Samples::default();
    let t = Instant::now();
    let mut i = 0;
    while more(i) {
        let r = good.round(base + i * 10..base + i * 10 + 10, &mut s);
        i += 1;
        if let Err(e) = r {
            failures.push(format!("{name}: round {i}: {e}"));
            break;
        }
    }
    eprintln!("[{engine}] {name}: {} rounds in {:?}", s.handoff.len(), t.elapsed());
    for (what, v) in [("hand-over", &s.handoff), ("try-lock", &s.try_lock), ("unlock", &s.unlock)] {
        if v.is_empty() {
            continue;
        }
        let (p50, p99) = (quantile(v, 0.5), quantile(v, 0.99));
        let max = quantile(v, 1.0);
        eprintln!("[{engine}] {name}: {what} p50 {p50:?} p99 {p99:?} max {max:?} (n={})", v.len());
        if p99 >= P99_BOUND {
            failures.push(format!("{name}: {what} p99 {p99:?} >= {P99_BOUND:?} (max {max:?})"));
        }
    }
}

/// Writes `buf` to the hostile socket until done or an error (the server closed us).
/// Returns the bytes written and the error, if any.
fn write_until_error(mut s: &TcpStream, buf: &[u8]) -> (usize, Option<std::io::Error>) {
    let mut off = 0;
    while off < buf.len() {
        match s.write(&buf[off..]) {
            Ok(0) => return (off, Some(ErrorKind::WriteZero.into())),
            Ok(n) => off += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (off, Some(e)),
        }
    }
    (off, None)
}

/// Whether the server's `STATS` still lists an entry of `session` (its lock on `H` is
/// the oldest entry while it lives).
fn has_entries(monitor: &Client, session: u64) -> bool {
    monitor.stats(16).unwrap().entries.iter().any(|e| e.session == session)
}

/// The tests of this file run one at a time: each measures latencies and memory of a
/// server process, which other servers flooding the same two cores would distort.
static SERIAL: Mutex<()> = Mutex::new(());

fn run(engine: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let mut server = ServerProc::start(&["--engine", engine, "--lease-ms", LEASE_MS]);
    let addr = server.socket_addr();
    let mut failures = Vec::new();
    let rss_start = server.status_kib("VmRSS");
    let monitor = Client::connect(&Endpoint::from(addr)).unwrap();

    // The hostile session holds H and queues its waits behind it; it never reads.
    let mut hostile = Raw::connect(addr);
    let mut out = Vec::new();
    RequestFrame { id: 1, request: lock(H, Wait::Try) }.encode(&mut out);
    for id in 2..2 + HOSTILE_WAITS {
        RequestFrame { id, request: lock(H, Wait::Forever) }.encode(&mut out);
    }
    hostile.s.write_all(&out).unwrap();
    // Wait (on server replies) until every wait is queued.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let c = monitor.stats(0).unwrap().counters;
        if c.holders == 1 && c.waiters == HOSTILE_WAITS {
            break;
        }
        assert!(Instant::now() < deadline, "hostile waits not queued: {c:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    let rss_queued = server.status_kib("VmRSS");
    eprintln!(
        "[{engine}] RSS {rss_start} KiB at start, {rss_queued} KiB with {HOSTILE_WAITS} waits \
         queued on H"
    );

    let rss_max = Cell::new(rss_queued);
    let sample = || rss_max.set(rss_max.get().max(server.status_kib("VmRSS")));
    let mut more = |i| {
        sample();
        i < ROUNDS
    };
    phase(engine, "waits queued", addr, GOOD_BASE, &mut more, &mut failures);

    // The flood: STATS requests the hostile session never reads the answers of.
    let mut flood = Vec::new();
    for id in 0..STATS_FLOOD {
        let request = Request::Stats { max_entries: STATS_MAX_ENTRIES };
        RequestFrame { id: 100_000 + id, request }.encode(&mut flood);
    }
    let writer_stream = hostile.s.try_clone().unwrap();
    // A backstop only: the writer is unblocked by the shutdown below.
    writer_stream.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let flood_start = Instant::now();
    std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            let r = write_until_error(&writer_stream, &flood);
            (r, flood_start.elapsed())
        });
        // The server must close the hostile session: watch (on server replies) for its
        // entries to disappear. The well-behaved rounds go on until then (at least
        // ROUNDS of them), so they measure the server during the flood.
        let deadline = flood_start + CLOSE_DEADLINE;
        let mut closed_after = None;
        let mut more = |i| {
            sample();
            if closed_after.is_none() && !has_entries(&monitor, hostile.session) {
                closed_after = Some(flood_start.elapsed());
            }
            i < MAX_FLOOD_ROUNDS
                && (i < ROUNDS || (closed_after.is_none() && Instant::now() < deadline))
        };
        phase(engine, "STATS flood", addr, 2 * GOOD_BASE, &mut more, &mut failures);
        // If a failed round ended the phase early, keep watching.
        while closed_after.is_none() && Instant::now() < deadline {
            sample();
            if !has_entries(&monitor, hostile.session) {
                closed_after = Some(flood_start.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        sample();
        let c = monitor.stats(0).unwrap().counters;
        eprintln!("[{engine}] after the flood: {c:?}");
        match closed_after {
            None => failures.push(format!(
                "the hostile session is still open {CLOSE_DEADLINE:?} after its flood began \
                 (server lease {LEASE_MS} ms)"
            )),
            Some(after) => {
                eprintln!(
                    "[{engine}] hostile session closed by the server {after:?} into the flood"
                );
                // Its socket ends (EOF or reset) after what the server had sent.
                hostile.s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let (mut bytes, mut end) = (0usize, None);
                let mut buf = vec![0u8; 1 << 16];
                let drain_deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < drain_deadline && bytes < 512 << 20 {
                    match hostile.s.read(&mut buf) {
                        Ok(0) => end = Some("EOF".to_owned()),
                        Ok(n) => bytes += n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                        {
                            break
                        }
                        Err(e) => end = Some(e.to_string()),
                    }
                    if end.is_some() {
                        break;
                    }
                }
                eprintln!("[{engine}] hostile socket: {bytes} bytes, then {end:?}");
                if end.is_none() {
                    failures.push(format!(
                        "the hostile socket did not end after {bytes} bytes though the server \
                         closed the session"
                    ));
                }
                // Its lock was released and its waits withdrawn: H is free.
                match monitor.lock(H, Mode::Exclusive, Wait::Try) {
                    Ok(g) => g.unlock().unwrap(),
                    Err(e) => failures.push(format!("H not free after the hostile close: {e}")),
                }
            }
        }
        let hwm = server.status_kib("VmHWM");
        eprintln!(
            "[{engine}] RSS max sampled {} KiB, peak (VmHWM) {hwm} KiB; bound \
             {RSS_BOUND_KIB} KiB",
            rss_max.get()
        );
        if hwm >= RSS_BOUND_KIB {
            failures.push(format!("server peak RSS {hwm} KiB >= {RSS_BOUND_KIB} KiB"));
        }
        // Unblock the writer if the server never closed us.
        let _ = hostile.s.shutdown(Shutdown::Both);
        let ((written, err), took) = writer.join().unwrap();
        eprintln!(
            "[{engine}] hostile writer: {written} of {} flood bytes in {took:?}, then {err:?}",
            flood.len()
        );
    });
    drop(monitor);
    server.stop();
    eprintln!("[{engine}] test took {:?}", started.elapsed());
    assert!(failures.is_empty(), "{engine}: {}", failures.join("; "));
}

#[test]
fn hostile_session_does_not_hurt_others_combiner() {
    run("combiner");
}

#[test]
fn hostile_session_does_not_hurt_others_tree_mutex() {
    run("tree-mutex");
}

#[test]
fn hostile_session_does_not_hurt_others_tree_single() {
    run("tree-single");
}

#[test]
fn hostile_session_does_not_hurt_others_rangelock() {
    run("rangelock");
}
