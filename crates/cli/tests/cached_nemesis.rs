//! Cached clients under faults, checked through a fencing store (`docs/CACHING.md`,
//! "Failure behaviour"; the checker of `docs/CLUSTER.md` §6, on one server).
//!
//! * `a_cached_client_cut_off_takes_nothing_from_its_extents_once_its_lease_may_be_over`:
//!   a cached client whose link to the server goes silent (a proxy stops forwarding,
//!   without closing anything) keeps serving its threads from its kept extents only while
//!   the server still holds them for it: no local lock that *starts* after another client
//!   was granted the range may succeed. Without the client's lease check it would, for
//!   the tenth of a lease between the server ending the session and the client finding
//!   its keepalives unanswered.
//! * `cached_workers_under_kill_and_pause`: 4 worker processes (this test binary, run as a
//!   worker), each a cached client with 2 threads that lock mostly in the worker's own
//!   region and sometimes in one region all of them share, and write every exclusive
//!   grant through a fencing store. A nemesis kills workers (SIGKILL, then starts them
//!   again) and stops them past their lease (SIGSTOP, then SIGCONT). At the end: no
//!   violation at the store, no refused write whose guard was not told it was lost
//!   (`lost_untold`), no step left unanswered, kept extents and callbacks were exercised,
//!   and the whole line is lockable again.

mod common;

use std::io::{Read, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{poll, start_store};
use common::{tempdir, ServerProc};
use rangelock_client::{
    BlockingCachedClient, CacheOptions, Client, ClientError, ConnectOptions, Endpoint, Mode, Wait,
};
use rangelock_cluster::fencing::{FencingClient, Write};

/// The server's session lease in these tests.
const LEASE_MS: u64 = 600;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A TCP proxy to `to` that can be frozen: while frozen it forwards nothing in either
/// direction and closes nothing, as a network that went silent.
struct Proxy {
    addr: String,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

impl Proxy {
    fn start(to: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let frozen = Arc::new((Mutex::new(false), Condvar::new()));
        let f = frozen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(&to).unwrap();
                for (from, into) in
                    [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)]
                {
                    let f = f.clone();
                    std::thread::spawn(move || forward(from, into, &f));
                }
            }
        });
        Proxy { addr, frozen }
    }

    fn freeze(&self) {
        *self.frozen.0.lock().unwrap() = true;
    }
}

/// Copies `from` to `into` until either side closes; holds what it read while frozen.
fn forward(mut from: TcpStream, mut into: TcpStream, frozen: &(Mutex<bool>, Condvar)) {
    let mut buf = [0; 16 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut f = frozen.0.lock().unwrap();
        while *f {
            f = frozen.1.wait(f).unwrap();
        }
        drop(f);
        if into.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

#[test]
fn a_cached_client_cut_off_takes_nothing_from_its_extents_once_its_lease_may_be_over() {
    let dir = tempdir("cached-cut-off");
    let lease = LEASE_MS.to_string();
    let server = ServerProc::start(&["--lease-ms", &lease]);
    let (_store, store_addr) = start_store(&dir);
    let proxy = Proxy::start(server.addr.clone());
    let cached = BlockingCachedClient::connect_with(
        &proxy.addr.parse().unwrap(),
        &ConnectOptions::default(),
        CacheOptions::default(),
    )
    .unwrap();
    assert!(cached.is_cached());
    let rt = runtime();
    let range = 0..16;

    // The cached client's thread: lock, write through the store, unlock, as fast as it
    // can; it records when each successful lock call started.
    let start = Instant::now();
    let last_start = Arc::new(AtomicU64::new(0));
    let granted = Arc::new(AtomicU64::new(0));
    let worker = {
        let (cached, last_start, granted) = (cached.clone(), last_start.clone(), granted.clone());
        let (store_addr, range) = (store_addr.clone(), range.clone());
        std::thread::spawn(move || {
            let rt = runtime();
            let mut store = rt.block_on(FencingClient::connect(store_addr.as_str())).unwrap();
            let mut stale = 0u64;
            loop {
                let t0 = start.elapsed().as_nanos() as u64;
                let g = match cached.lock(range.clone(), Mode::Exclusive, Wait::Try) {
                    Ok(g) => g,
                    Err(ClientError::WouldBlock) => continue,
                    Err(_) => return stale, // the session is gone
                };
                last_start.fetch_max(t0, Ordering::Relaxed);
                granted.fetch_add(1, Ordering::Relaxed);
                let w = rt.block_on(store.write(range.clone(), g.token(), "cached")).unwrap();
                if w != Write::Accepted {
                    stale += 1;
                }
            }
        })
    };
    poll("the cached client to lock locally", Duration::from_secs(10), || {
        granted.load(Ordering::Relaxed) > 100
    });
    assert!(cached.kept_extents() > 0);

    proxy.freeze();
    // Another client asks for the range: the server calls the cached client back, gets
    // no answer, ends its session after the lease and grants.
    let other = Client::connect(&server.addr.parse::<Endpoint>().unwrap()).unwrap();
    let g = other.lock(range.clone(), Mode::Exclusive, Wait::Timeout(Duration::from_secs(10)));
    let other_granted = start.elapsed().as_nanos() as u64;
    let g = g.expect("granted once the cached client's session ended");
    let mut store = rt.block_on(FencingClient::connect(store_addr.as_str())).unwrap();
    assert_eq!(
        rt.block_on(store.write(range.clone(), g.token(), "other")).unwrap(),
        Write::Accepted
    );

    let stale = worker.join().unwrap();
    let last = last_start.load(Ordering::Relaxed);
    println!(
        "cached client: {} grants, the last one asked {:.1} ms before the other client's \
         grant, {stale} refused write(s)",
        granted.load(Ordering::Relaxed),
        (other_granted as f64 - last as f64) / 1e6,
    );
    assert!(
        last < other_granted,
        "the cut-off client took the range {:.1} ms after another client was granted it",
        (last - other_granted) as f64 / 1e6
    );
    assert!(!cached.is_connected());
    let st = rt.block_on(store.stats()).unwrap();
    assert_eq!(st.violations, 0, "{st:?}");
    drop(g);
}
