//! `server-names`: what a resource name costs the service (the named-resources issue).
//!
//! 16 clients (quick: the same), each a thread with its own connection to an in-process
//! `rangelockd` (the combiner engine), lock and unlock in a loop: an exclusive random
//! 2^6-unit range of 2^16 units, the unlock pipelined (as in `server-oltp`). One op is one
//! lock + unlock cycle. The variants differ only in the resource:
//!
//! - `unnamed`: the unnamed resource (`LOCK`), today's line;
//! - `names-1`, `names-1000`, `names-1000000`: a name drawn at random per cycle from 1,
//!   1 000 or 1 000 000 names (`t/<k>`, 3 to 8 bytes; `LOCK_NAMED`). With a million
//!   names nearly every lock creates its name at the server and its release drops it;
//! - `echo`: the ceiling, one `KEEPALIVE` round trip a cycle: the transport without a
//!   lock table, at the round trips of a lock whose unlock is pipelined (one; it writes one
//!   frame fewer). `server-micro`'s `echo` makes two, its cycles' unlocks are not
//!   pipelined.
//!
//! The bars (the issue's): `names-1000000` at least 0.8x `unnamed`, `names-1000` at least
//! 0.9x. Different names never conflict, so fewer names means more conflict: `names-1`
//! shares one line as `unnamed` does.
//!
//! After the timed rounds each variant but `echo` also measures the server's **heap** on a
//! fresh server, held by one raw client (no client-side state): 10 000 exclusive locks on
//! disjoint ranges of the variant's resources (`names-1000000`: a fresh name per lock),
//! their release, then the same again on names not used before. Fields:
//! `heap_bytes_per_held_lock` (the first hold's growth per lock) and
//! `heap_retained_share` (what the second hold and release left beyond where the first
//! release ended, as a share of the first hold's growth; the first release keeps what the
//! server keeps for reuse: the interval tree's arena, the session's maps). The heap is
//! glibc's `mallinfo2` (arena and mmapped bytes in use) of this process, read while only
//! the server and that one client run; elsewhere the fields are absent.

use std::fmt::Write as _;
use std::io::{self, Read, Write as _};
use std::net::TcpStream;
use std::sync::Mutex;

use rangelock_client::{Client, Endpoint, Mode, Wait};
use rangelock_server::protocol::{
    ClientHello, Request, RequestFrame, ResponseFrame, ServerHello, Status, ANSWER_LEN,
    SERVER_HELLO_LEN, VERSION,
};
use rangelock_server::{EngineKind, Server, ServerConfig};
use serde_json::Value;

use super::common;
use crate::harness::{
    run_threads_with, Case, LatencySampler, Options, Sample, Span, SplitMix64, Suite, ThreadResult,
};
use crate::peers::echo;

/// Clients.
pub const CLIENTS: usize = 16;
/// Units every resource's ranges are drawn from.
pub const UNITS: u64 = 1 << 16;
/// Units of one lock.
pub const RANGE_UNITS: u64 = 1 << 6;
/// Locks held by the heap probe.
pub const HELD: u64 = 10_000;

/// The resources of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resources {
    Unnamed,
    Names(u64),
    Echo,
}

impl Resources {
    const ALL: [(&'static str, Resources); 5] = [
        ("unnamed", Resources::Unnamed),
        ("names-1", Resources::Names(1)),
        ("names-1000", Resources::Names(1000)),
        ("names-1000000", Resources::Names(1_000_000)),
        (echo::NAME, Resources::Echo),
    ];
}

/// The `server-names` suite.
#[derive(Debug, Default)]
pub struct ServerNames;

impl Suite for ServerNames {
    fn name(&self) -> &'static str {
        "server-names"
    }

    fn about(&self) -> &'static str {
        "Named resources: 16 clients lock+unlock an exclusive random 2^6-unit range of 2^16 \
         on the unnamed resource, or of a name drawn from 1, 1000 or 1000000 names; ceiling \
         echo; then the server's heap per held lock and after the release"
    }

    fn quantity(&self) -> String {
        "lock+unlock cycles per second".to_owned()
    }

    fn baseline(&self) -> &'static str {
        "unnamed"
    }

    fn x_axis(&self) -> crate::harness::XAxis {
        crate::harness::XAxis::Clients
    }

    fn ceilings(&self) -> &'static [crate::harness::Ceiling] {
        &[crate::harness::Ceiling {
            name: echo::NAME,
            leaves_out: "the lock table: one KEEPALIVE round trip a cycle",
        }]
    }

    fn table_extras(&self) -> &'static [(&'static str, &'static str)] {
        &[("heap_bytes_per_held_lock", "heap B/held"), ("heap_retained_share", "retained")]
    }

    fn cases(&self, _opts: &Options) -> Vec<Case> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Resources::ALL
            .into_iter()
            .filter(|(name, _)| common::selected(name))
            .map(|(name, resources)| Case {
                variant: name.to_owned(),
                threads: CLIENTS,
                // The same for every variant (the count of names is in its name), so that
                // they share one table and its ratios.
                params: common::params([
                    ("units", UNITS.into()),
                    ("range_units", RANGE_UNITS.into()),
                    ("held", HELD.into()),
                ]),
                oversubscribed: CLIENTS > cores,
                run: Box::new(move |span| run(resources, span)),
            })
            .collect()
    }
}

fn start_server() -> io::Result<Server> {
    Server::start(ServerConfig {
        engine: EngineKind::Combiner,
        max_locks_per_session: HELD as usize,
        ..ServerConfig::ephemeral()
    })
}

/// The name of resource `k` of a variant, written into `out`.
fn name_of(k: u64, out: &mut String) {
    out.clear();
    let _ = write!(out, "t/{k}");
}

fn run(resources: Resources, span: Span) -> Sample {
    let server = match start_server() {
        Ok(s) => s,
        Err(e) => return Sample::skipped(format!("cannot start the server: {e}")),
    };
    let Some(addr) = server.tcp_addr() else {
        return Sample::skipped("the server has no TCP listener");
    };
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let fail = |e: String| {
        failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        ThreadResult::default()
    };
    let mut sample = run_threads_with(
        CLIENTS,
        span,
        |_| Client::connect(&Endpoint::from(addr)),
        |i, client, ctl| {
            let client = match client {
                Ok(c) => c,
                Err(e) => return fail(format!("connect: {e}")),
            };
            let mut rng = SplitMix64::new(0x4E41_4D45 + i as u64);
            let mut sampler = LatencySampler::new(1);
            let mut name = String::with_capacity(16);
            let mut ops = 0u64;
            while ctl.running() {
                let start = rng.below(UNITS - RANGE_UNITS + 1);
                let range = start..start + RANGE_UNITS;
                let t = sampler.start();
                let r = match resources {
                    Resources::Echo => client.ping(),
                    Resources::Unnamed => client
                        .lock(range, Mode::Exclusive, Wait::Forever)
                        .and_then(|g| g.unlock_pipelined()),
                    Resources::Names(n) => {
                        name_of(rng.below(n), &mut name);
                        client
                            .resource(&name)
                            .and_then(|res| res.lock(range, Mode::Exclusive, Wait::Forever))
                            .and_then(|g| g.unlock_pipelined())
                    }
                };
                if let Err(e) = r {
                    return fail(e.to_string());
                }
                sampler.finish(t);
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: sampler.into_latencies() }
        },
    );
    server.shutdown();
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Sample::skipped(format!("a client failed: {e}"));
    }
    if resources != Resources::Echo {
        match heap_probe(resources) {
            Ok(Some((per_lock, retained))) => {
                sample.extra.insert("heap_bytes_per_held_lock".into(), Value::from(per_lock));
                sample.extra.insert("heap_retained_share".into(), Value::from(retained));
            }
            Ok(None) => {}
            Err(e) => return Sample::skipped(format!("heap probe: {e}")),
        }
    }
    sample
}

/// Bytes of heap in use in this process (glibc's `mallinfo2`: arena plus mmapped chunks);
/// `None` elsewhere.
fn heap_in_use() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallinfo2` takes no arguments and only reads the allocator's state.
        let m = unsafe { libc::mallinfo2() };
        Some((m.uordblks + m.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// A client without state of its own: frames written from one buffer, answers read into a
/// fixed one, so the heap that grows while it holds locks is the server's.
struct RawClient {
    s: TcpStream,
}

impl RawClient {
    fn connect(server: &Server) -> io::Result<RawClient> {
        let addr = server.tcp_addr().ok_or_else(|| io::Error::other("no TCP listener"))?;
        let mut s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        let mut hello = Vec::new();
        ClientHello::new(VERSION).encode(&mut hello);
        s.write_all(&hello)?;
        let mut buf = [0u8; SERVER_HELLO_LEN];
        s.read_exact(&mut buf)?;
        let h = ServerHello::decode(&buf).map_err(io::Error::other)?;
        if h.version != VERSION {
            return Err(io::Error::other(format!("the server speaks version {}", h.version)));
        }
        Ok(RawClient { s })
    }

    /// Writes `frames` and reads `count` answers, each of which must be `OK` and bodiless.
    fn exchange(&mut self, frames: &[u8], count: u64) -> io::Result<()> {
        self.s.write_all(frames)?;
        let mut answer = [0u8; ANSWER_LEN];
        for _ in 0..count {
            self.s.read_exact(&mut answer)?;
            let r = ResponseFrame::decode(&answer[4..]).map_err(io::Error::other)?;
            if r.status != Status::Ok {
                return Err(io::Error::other(format!("answer {}: {}", r.id, r.status)));
            }
        }
        Ok(())
    }
}

/// On a fresh server, holds `HELD` locks of `resources` and releases them, twice (the
/// second time on names not used before): the heap per held lock of the first hold, and
/// how much the second hold and release left in use beyond where the first release ended,
/// as a share of the first hold's growth (0: back where it started). The first release
/// keeps what the server keeps for reuse (the interval tree's arena, the session's maps);
/// a name that outlived its locks would show in the second.
fn heap_probe(resources: Resources) -> io::Result<Option<(f64, f64)>> {
    let server = start_server()?;
    let mut c = RawClient::connect(&server)?;
    // Every frame is encoded before the first reading, so the client allocates nothing
    // between the readings.
    let frames = |round: u64| {
        let (mut locks, mut unlocks, mut name) = (Vec::new(), Vec::new(), String::new());
        for k in 0..HELD {
            let id = round * 2 * HELD + k + 1;
            let start = k * RANGE_UNITS;
            let (end, mode, wait) = (start + RANGE_UNITS, Mode::Exclusive, Wait::Try);
            let request = match resources {
                // `names-1000000`: a fresh name per lock (and per round); fewer names:
                // shared by disjoint ranges.
                Resources::Names(n) if n >= HELD => {
                    name_of(round * HELD + k, &mut name);
                    Request::LockNamed { start, end, mode, wait, name: name.as_bytes() }
                }
                Resources::Names(n) => {
                    name_of(k % n, &mut name);
                    Request::LockNamed { start, end, mode, wait, name: name.as_bytes() }
                }
                _ => Request::Lock { start, end, mode, wait },
            };
            RequestFrame { id, request }.encode(&mut locks);
            let unlock = Request::Unlock { target: id };
            RequestFrame { id: id + HELD, request: unlock }.encode(&mut unlocks);
        }
        (locks, unlocks)
    };
    let (first, second) = (frames(0), frames(1));
    let Some(before) = heap_in_use() else { return Ok(None) };
    c.exchange(&first.0, HELD)?;
    let held = heap_in_use().unwrap_or(before);
    c.exchange(&first.1, HELD)?;
    let released = heap_in_use().unwrap_or(held);
    c.exchange(&second.0, HELD)?;
    c.exchange(&second.1, HELD)?;
    let again = heap_in_use().unwrap_or(released);
    drop(c);
    server.shutdown();
    let grown = held.saturating_sub(before).max(1) as f64;
    let retained = again as f64 - released as f64;
    Ok(Some((grown / HELD as f64, retained / grown)))
}
