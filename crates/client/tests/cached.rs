//! The cached client against a real in-process server (protocol version 6): local locks
//! inside kept extents make no request, callbacks hand extents over, idle extents go
//! back, a split keeps both halves, and a server without cached locks still works.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rangelock_client::{
    AsyncClient, BlockingCachedClient, CacheOptions, CachedClient, ClientError, ConnectOptions,
    Counters, Endpoint, GrantMode, Mode, Wait,
};
use rangelock_server::{CachePolicy, EngineKind, Server, ServerConfig};

fn server_with(f: impl FnOnce(&mut ServerConfig)) -> (Server, Endpoint) {
    let mut config = ServerConfig::ephemeral();
    f(&mut config);
    let srv = Server::start(config).unwrap();
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    (srv, ep)
}

fn server() -> (Server, Endpoint) {
    server_with(|_| {})
}

async fn cached(ep: &Endpoint, cache: CacheOptions) -> CachedClient {
    CachedClient::connect_with(ep, &ConnectOptions::default(), cache).await.unwrap()
}

async fn counters(c: &AsyncClient) -> Counters {
    c.stats(0).await.unwrap().counters
}

/// Polls `$cond` (an expression that may `.await`) until it holds, failing after 10 s.
macro_rules! eventually {
    ($what:expr, $cond:expr) => {{
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if $cond {
                break;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {}", $what);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }};
}

/// (a) A lone client's later locks inside its first grant are served locally: the server
/// grants nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_clients_later_locks_make_no_request() {
    let (srv, ep) = server();
    let c = cached(&ep, CacheOptions::default()).await;
    assert!(c.is_cached());
    let g = c.lock_exclusive(0..10).await.unwrap();
    assert!(g.is_kept(), "alone on the resource: the whole line is kept");
    let token = g.token();
    drop(g);
    let grants = counters(c.as_async()).await.grants;
    let a = c.lock_exclusive(100..200).await.unwrap();
    let b = c.lock(5000..5001, Mode::Shared, Wait::Try).await.unwrap();
    // Locally exclusive all the same.
    assert!(matches!(
        c.lock(150..151, Mode::Shared, Wait::Try).await,
        Err(ClientError::WouldBlock)
    ));
    assert!((a.is_kept(), b.is_kept()) == (true, true));
    assert_eq!((a.token(), a.range(), b.mode()), (token, 100..200, Mode::Shared));
    drop((a, b));
    // A named resource is its own extent: one grant, then local again.
    let r = c.resource("file/1").unwrap();
    r.lock_exclusive(0..1).await.unwrap().unlock().await.unwrap();
    r.lock_exclusive(7..8).await.unwrap().unlock().await.unwrap();
    let after = counters(c.as_async()).await;
    assert_eq!(after.grants, grants + 1, "only the named resource's first lock was granted");
    assert_eq!(c.kept_extents(), 2);
    // Dropping the client ends the session: its extents go with it.
    let probe = AsyncClient::connect(&ep).await.unwrap();
    assert_eq!(counters(&probe).await.holders, 2);
    drop((c, r));
    eventually!("the session to end", counters(&probe).await.holders == 0);
    srv.shutdown();
}

/// (a) The blocking client's fast path, on the calling thread.
#[test]
fn the_blocking_client_locks_locally_inside_its_extent() {
    let (srv, ep) = server();
    let c = BlockingCachedClient::connect(&ep).unwrap();
    assert!(c.is_cached());
    c.lock_exclusive(0..10).unwrap().unlock().unwrap();
    let grants = c.stats(0).unwrap().counters.grants;
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            let c = c.clone();
            std::thread::spawn(move || {
                for j in 0..100u64 {
                    let g = c.lock_exclusive(i * 1000 + j..i * 1000 + j + 1).unwrap();
                    assert!(g.is_kept());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // A named resource: one grant, then local.
    let r = c.resource("n").unwrap();
    r.lock_shared(0..1).unwrap().unlock().unwrap();
    assert!(r.lock_shared(5..6).unwrap().is_kept());
    assert_eq!(c.kept_extents(), 2);
    assert_eq!(c.stats(0).unwrap().counters.grants, grants + 1);
    drop(c);
    srv.shutdown();
}

/// (b) Two cached clients: B waits until A's local guard drops (the callback waits for
/// it), then gets the range; A's next lock goes to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_waits_for_the_local_holder_then_hands_over() {
    let (srv, ep) = server();
    let (a, b) =
        (cached(&ep, CacheOptions::default()).await, cached(&ep, CacheOptions::default()).await);
    let held = a.lock_exclusive(0..10).await.unwrap();
    assert!(held.is_kept());
    let grants = counters(a.as_async()).await.grants;
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.lock_exclusive(5..6).await });
    eventually!("B to queue", counters(a.as_async()).await.waiters == 1);
    // Both connections answered after B queued: the callback reached A long ago, and A
    // still holds locally, so B still waits.
    a.as_async().ping().await.unwrap();
    b.as_async().ping().await.unwrap();
    assert!(!waiter.is_finished(), "B was granted while A held the range locally");
    assert_eq!(a.kept_extents(), 1);
    drop(held);
    let g = waiter.await.unwrap().unwrap();
    assert_eq!(g.range(), 5..6);
    assert_eq!(a.kept_extents(), 0, "no local holder: the whole extent went back");
    // A's next lock is a request (exact: A was just called back), and waits for B.
    let a2 = a.clone();
    let next = tokio::spawn(async move { a2.lock_exclusive(0..10).await });
    eventually!("A to queue", counters(a.as_async()).await.waiters == 1);
    drop(g);
    let g = next.await.unwrap().unwrap();
    assert!(!g.is_kept());
    assert_eq!(counters(a.as_async()).await.grants, grants + 2);
    g.unlock().await.unwrap();
    drop((a, b));
    srv.shutdown();
}

/// A called-back extent that served the client's threads says so in its `GIVE_BACK`
/// (`used`): the server goes on growing the client's grants. One that served nothing
/// makes its next grant exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extent_that_served_local_locks_keeps_the_clients_grants_growing() {
    for local_locks in [3, 0] {
        let (srv, ep) = server();
        let a = cached(&ep, CacheOptions::default()).await;
        let b = AsyncClient::connect(&ep).await.unwrap();
        assert!(a.lock_exclusive(0..10).await.unwrap().is_kept());
        for _ in 0..local_locks {
            drop(a.lock_exclusive(20..30).await.unwrap());
        }
        // B's lock calls the extent back; A gives it back whole (no local holder).
        let g = b.lock(1000..1010, Mode::Exclusive, Wait::Forever).await.unwrap();
        g.unlock().await.unwrap();
        assert_eq!(a.kept_extents(), 0);
        let g = a.lock_exclusive(100..110).await.unwrap();
        assert!(g.is_kept(), "{local_locks} local locks");
        drop(g);
        // Grown (up to where B asked lately), or exact.
        let grants = counters(a.as_async()).await.grants;
        drop(a.lock_exclusive(500..510).await.unwrap());
        let asked = counters(a.as_async()).await.grants - grants;
        assert_eq!(asked, u64::from(local_locks == 0), "{local_locks} local locks");
        drop((a, b));
        srv.shutdown();
    }
}

/// A tiny xorshift generator (the tests take no `rand`).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// (c) The checker: threads of three cached clients lock random ranges exclusively and
/// claim every unit of theirs in a shared array: no unit is ever claimed twice. At the
/// end every kept extent goes back (a short idle) and the server holds nothing.
#[test]
fn threads_of_three_cached_clients_never_overlap() {
    checker(CachePolicy::History, 16);
}

/// (c) The checker with a server that always expands and keeps: a callback at nearly
/// every conflict, with shrinks and splits.
#[test]
fn threads_never_overlap_when_every_grant_is_kept() {
    checker(CachePolicy::ExpandAll, 16);
}

/// (c) The checker with whole-line extents: every callback shrinks or splits one.
#[test]
fn threads_never_overlap_with_whole_line_extents() {
    checker(CachePolicy::ExpandAll, u64::MAX);
}

/// Nine threads of three cached clients lock random ranges, a quarter of them shared:
/// an exclusive holder claims each unit of its range (no other holder may have it, no
/// reader may be in it), a shared one counts itself in as a reader (no exclusive holder
/// may have it).
fn checker(policy: CachePolicy, granule: u64) {
    const UNITS: u64 = 64;
    const THREADS_PER_CLIENT: u64 = 3;
    const ROUNDS: u64 = 150;
    let (srv, ep) = server_with(|c| c.cache.policy = policy);
    let cache = CacheOptions { granule, idle: Duration::from_millis(100) };
    let clients: Vec<_> = (0..3)
        .map(|_| {
            BlockingCachedClient::connect_with(&ep, &ConnectOptions::default(), cache).unwrap()
        })
        .collect();
    let owner: Arc<Vec<AtomicU64>> = Arc::new((0..UNITS).map(|_| AtomicU64::new(0)).collect());
    let readers: Arc<Vec<AtomicU64>> = Arc::new((0..UNITS).map(|_| AtomicU64::new(0)).collect());
    let mut threads = Vec::new();
    for (ci, c) in clients.iter().enumerate() {
        for t in 0..THREADS_PER_CLIENT {
            let (c, owner, readers) = (c.clone(), owner.clone(), readers.clone());
            let me = ci as u64 * THREADS_PER_CLIENT + t + 1;
            threads.push(std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ me);
                let mut kept = 0;
                for _ in 0..ROUNDS {
                    let start = rng.below(UNITS);
                    let end = (start + 1 + rng.below(8)).min(UNITS);
                    let shared = rng.below(4) == 0;
                    let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                    let g = c.lock(start..end, mode, Wait::Forever).unwrap();
                    kept += u64::from(g.is_kept());
                    let units = || start as usize..end as usize;
                    if shared {
                        for u in units() {
                            readers[u].fetch_add(1, Ordering::SeqCst);
                            let w = owner[u].load(Ordering::SeqCst);
                            assert_eq!(w, 0, "unit {u} read by {me} while {w} holds it");
                        }
                        std::thread::yield_now();
                        for u in units() {
                            readers[u].fetch_sub(1, Ordering::SeqCst);
                        }
                    } else {
                        for u in units() {
                            let was = owner[u].swap(me, Ordering::SeqCst);
                            assert_eq!(was, 0, "unit {u} held by {was} and {me}");
                            let r = readers[u].load(Ordering::SeqCst);
                            assert_eq!(r, 0, "unit {u} held by {me} while {r} read it");
                        }
                        std::thread::yield_now();
                        for u in units() {
                            assert_eq!(owner[u].swap(0, Ordering::SeqCst), me);
                        }
                    }
                    drop(g);
                }
                kept
            }));
        }
    }
    let kept: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    eprintln!("{policy:?}, granule {granule}: kept {kept} of {}", 9 * ROUNDS);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let probe = AsyncClient::connect(&ep).await.unwrap();
        eventually!(
            "every extent to go back",
            clients.iter().all(|c| c.kept_extents() == 0) && counters(&probe).await.holders == 0
        );
    });
    drop(clients);
    srv.shutdown();
}

/// (c) The checker with async tasks of three cached clients on one named resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_three_cached_clients_never_overlap() {
    const UNITS: u64 = 64;
    let (srv, ep) = server_with(|c| c.cache.policy = CachePolicy::ExpandAll);
    let cache = CacheOptions { granule: 32, idle: Duration::from_millis(100) };
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(cached(&ep, cache).await);
    }
    let owner: Arc<Vec<AtomicU64>> = Arc::new((0..UNITS).map(|_| AtomicU64::new(0)).collect());
    let mut tasks = Vec::new();
    for (ci, c) in clients.iter().enumerate() {
        for t in 0..3u64 {
            let (r, owner) = (c.resource("checked").unwrap(), owner.clone());
            let me = ci as u64 * 3 + t + 1;
            tasks.push(tokio::spawn(async move {
                let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ me);
                let mut kept = 0;
                for _ in 0..150 {
                    let start = rng.below(UNITS);
                    let end = (start + 1 + rng.below(8)).min(UNITS);
                    let g = r.lock_exclusive(start..end).await.unwrap();
                    kept += u64::from(g.is_kept());
                    for u in start as usize..end as usize {
                        let was = owner[u].swap(me, Ordering::SeqCst);
                        assert_eq!(was, 0, "unit {u} held by {was} and {me}");
                    }
                    tokio::task::yield_now().await;
                    for u in start as usize..end as usize {
                        assert_eq!(owner[u].swap(0, Ordering::SeqCst), me);
                    }
                    drop(g);
                }
                kept
            }));
        }
    }
    let mut kept = 0;
    for t in tasks {
        kept += t.await.unwrap();
    }
    assert!(kept > 0, "some locks were served locally");
    let probe = AsyncClient::connect(&ep).await.unwrap();
    eventually!(
        "every extent to go back",
        clients.iter().all(|c| c.kept_extents() == 0) && counters(&probe).await.holders == 0
    );
    drop(clients);
    srv.shutdown();
}

/// (d) A server whose engine grants no cached locks: the client runs uncached, and its
/// locks are ordinary ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cached_locks_the_client_locks_as_usual() {
    // An engine without cached locks, a policy that grants none, and grants by polling
    // (which this client caches not).
    for setup in 0..3 {
        let (srv, ep) = server_with(|c| match setup {
            0 => c.engine = EngineKind::RangeLock,
            1 => c.cache.policy = CachePolicy::Off,
            _ => c.grant = GrantMode::Poll,
        });
        let (a, b) = (
            cached(&ep, CacheOptions::default()).await,
            cached(&ep, CacheOptions::default()).await,
        );
        assert!(!a.is_cached());
        let g = a.lock_exclusive(0..10).await.unwrap();
        assert!(!g.is_kept());
        let r = b.lock(5..6, Mode::Exclusive, Wait::Try).await;
        assert!(matches!(r, Err(ClientError::WouldBlock)), "{r:?}");
        let named = b.resource("x").unwrap().lock_exclusive(0..10).await.unwrap();
        drop(g);
        let g = b.lock(5..6, Mode::Exclusive, Wait::Timeout(Duration::from_secs(5))).await.unwrap();
        g.unlock().await.unwrap();
        drop(named);
        eventually!("the locks to go", counters(a.as_async()).await.holders == 0);
        assert_eq!(a.kept_extents(), 0);
        drop((a, b));
        srv.shutdown();
    }
}

/// (e) A kept extent unused for `idle` is given back by the client itself; one in use is
/// not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_extents_are_given_back() {
    let (srv, ep) = server();
    let cache = CacheOptions { granule: 1024, idle: Duration::from_millis(50) };
    let c = cached(&ep, cache).await;
    let r = c.resource("idle").unwrap();
    let busy = c.lock_exclusive(0..1).await.unwrap();
    r.lock_exclusive(0..1).await.unwrap().unlock().await.unwrap();
    assert_eq!(c.kept_extents(), 2);
    eventually!("the idle extent to go back", c.kept_extents() == 1);
    eventually!("the server to drop it", counters(c.as_async()).await.holders == 1);
    // The one held locally stays, however long.
    let stats = c.as_async().stats(10).await.unwrap();
    assert_eq!((stats.entries.len(), stats.entries[0].start, stats.entries[0].end), (1, 0, 1024));
    drop(busy);
    eventually!("the other to go back once unused", c.kept_extents() == 0);
    eventually!("the server to hold nothing", counters(c.as_async()).await.holders == 0);
    drop(c);
    srv.shutdown();
}

/// (f) A callback for a part in the middle, with local holders on both sides, splits the
/// extent: both halves stay kept (the right one under the `GIVE_BACK`'s id) and each can
/// be called back later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middle_give_back_splits_the_extent() {
    let (srv, ep) = server();
    let a = cached(&ep, CacheOptions::default()).await;
    let b = AsyncClient::connect(&ep).await.unwrap();
    let left = a.lock_exclusive(0..10).await.unwrap();
    let right = a.lock_exclusive(90..100).await.unwrap();
    assert!(left.is_kept() && right.is_kept());
    let mid = b.lock_exclusive(50..60).await.unwrap();
    assert_eq!(a.kept_extents(), 2, "split around 50..60");
    let mut held: Vec<_> = b
        .stats(10)
        .await
        .unwrap()
        .entries
        .into_iter()
        .filter(|e| e.session == a.as_async().session())
        .map(|e| (e.start, e.end))
        .collect();
    held.sort();
    assert_eq!(held, [(0, 50), (60, u64::MAX)]);
    // Both halves still serve local locks.
    let grants = counters(&b).await.grants;
    let l = a.lock(20..30, Mode::Exclusive, Wait::Try).await.unwrap();
    let r = a.lock(200..300, Mode::Exclusive, Wait::Try).await.unwrap();
    assert!(l.is_kept() && r.is_kept());
    assert_eq!(counters(&b).await.grants, grants);
    drop((l, r, left, right));
    // Each half can be called back: the left under the grant's id, the right under the
    // GIVE_BACK's.
    let g1 = b.lock(20..30, Mode::Exclusive, Wait::Timeout(Duration::from_secs(10))).await.unwrap();
    let g2 = b.lock(70..80, Mode::Exclusive, Wait::Timeout(Duration::from_secs(10))).await.unwrap();
    assert_eq!(a.kept_extents(), 0);
    // A's lock of the middle goes to the server and waits for B.
    let a2 = a.clone();
    let next = tokio::spawn(async move { a2.lock_exclusive(55..56).await });
    eventually!("A to queue", counters(&b).await.waiters == 1);
    drop(mid);
    next.await.unwrap().unwrap().unlock().await.unwrap();
    drop((g1, g2, a));
    eventually!("nothing held", counters(&b).await.holders == 0);
    srv.shutdown();
}

/// (g) When the session is lost, the client forgets its extents and its guards say so;
/// later locks fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_session_loses_every_extent() {
    let (srv, ep) = server();
    let c = cached(&ep, CacheOptions::default()).await;
    let g = c.lock_exclusive(0..10).await.unwrap();
    let r = c.resource("lost").unwrap();
    drop(r.lock_shared(0..10).await.unwrap());
    assert_eq!((c.kept_extents(), g.is_lost()), (2, false));
    srv.shutdown();
    eventually!("the loss", g.is_lost() && c.kept_extents() == 0);
    assert!(g.loss().is_some());
    // Nothing is served locally any more.
    let again = c.lock(20..30, Mode::Exclusive, Wait::Try).await;
    assert!(matches!(again, Err(ClientError::ConnectionLost)), "{again:?}");
    drop(g);
}

/// (h) A lock that waits for another client's kept extent can time out or be dropped:
/// its request is withdrawn, and the holder still hands the extent over when its local
/// lock ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_for_a_kept_extent_can_give_up() {
    let (srv, ep) = server();
    let (a, b) =
        (cached(&ep, CacheOptions::default()).await, cached(&ep, CacheOptions::default()).await);
    let held = a.lock_exclusive(0..10).await.unwrap();
    let timed = b.lock(5..6, Mode::Exclusive, Wait::Timeout(Duration::from_millis(50))).await;
    assert!(matches!(timed, Err(ClientError::TimedOut)), "{timed:?}");
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.lock_exclusive(5..6).await });
    eventually!("B to queue", counters(a.as_async()).await.waiters == 1);
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    eventually!("B's request to be withdrawn", counters(a.as_async()).await.waiters == 0);
    assert_eq!(a.kept_extents(), 1, "A still holds locally");
    drop(held);
    eventually!("A to forget the extent", a.kept_extents() == 0);
    // The map first, then the GIVE_BACK: wait for the server to see it.
    eventually!("A to hand the extent back", counters(b.as_async()).await.holders == 0);
    let g = b.lock(5..6, Mode::Exclusive, Wait::Try).await.unwrap();
    g.unlock().await.unwrap();
    drop((a, b));
    srv.shutdown();
}

/// (i) A split the server refuses (the session may hold one lock) is answered by
/// unlocking the whole extent once its local holders are done: the waiter is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_split_unlocks_the_whole_extent() {
    let (srv, ep) = server_with(|c| c.max_locks_per_session = 1);
    let a = cached(&ep, CacheOptions::default()).await;
    let b = AsyncClient::connect(&ep).await.unwrap();
    let left = a.lock_exclusive(0..10).await.unwrap();
    let right = a.lock_exclusive(90..100).await.unwrap();
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.lock_exclusive(50..60).await });
    eventually!("the split to be refused", a.kept_extents() == 0);
    assert!(!waiter.is_finished());
    drop(left);
    assert!(!waiter.is_finished(), "the right half is still held locally");
    drop(right);
    let g = waiter.await.unwrap().unwrap();
    assert_eq!(g.range(), 50..60);
    assert_eq!(counters(&b).await.holders, 1, "A holds nothing");
    drop((g, a));
    srv.shutdown();
}

/// (j) Over the server's bound of kept extents per session, the server calls back the
/// least recently granted one, and the client gives it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_servers_bound_the_oldest_extent_goes_back() {
    let (srv, ep) = server_with(|c| c.cache.max_kept_per_session = 1);
    let c = cached(&ep, CacheOptions::default()).await;
    let x = c.resource("x").unwrap();
    x.lock_exclusive(0..1).await.unwrap().unlock().await.unwrap();
    let y = c.resource("y").unwrap().lock_shared(0..1).await.unwrap();
    assert!(y.is_kept());
    eventually!("x's extent to go back", c.kept_extents() == 1);
    eventually!("the server to hold y's alone", counters(c.as_async()).await.holders == 1);
    let stats = c.as_async().stats(10).await.unwrap();
    assert_eq!(stats.entries[0].name.as_deref(), Some(&b"y"[..]));
    drop((y, c));
    srv.shutdown();
}

/// (k) A local holder whose callback waits for it can still take a second lock in the
/// same extent that another client wants: the second callback does not wait for the
/// first (uncached locks would not deadlock here either).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_can_nest_a_lock_another_client_wants() {
    let (srv, ep) = server();
    let a = cached(&ep, CacheOptions::default()).await;
    let (b, c) =
        (AsyncClient::connect(&ep).await.unwrap(), AsyncClient::connect(&ep).await.unwrap());
    let outer = a.lock_exclusive(0..10).await.unwrap();
    assert!(outer.is_kept());
    // B's callback waits for `outer`.
    let b2 = b.clone();
    let wants_outer = tokio::spawn(async move { b2.lock_exclusive(5..6).await });
    eventually!("B to queue", counters(&c).await.waiters == 1);
    // C wants a part no one holds locally: its callback must not wait for B's.
    let c2 = c.clone();
    let wants_free = tokio::spawn(async move { c2.lock_exclusive(50..60).await });
    let held_by_c = wants_free.await.unwrap().unwrap();
    // A nests a lock of C's part: at the server, behind C.
    let a2 = a.clone();
    let nested = tokio::spawn(async move { a2.lock_exclusive(50..60).await });
    eventually!("A to queue", counters(&c).await.waiters == 2);
    drop(held_by_c);
    let inner = tokio::time::timeout(Duration::from_secs(10), nested).await.unwrap().unwrap();
    let inner = inner.unwrap();
    assert!(!wants_outer.is_finished());
    drop((inner, outer));
    let g = wants_outer.await.unwrap().unwrap();
    assert_eq!(g.range(), 5..6);
    drop((g, a));
    eventually!("nothing held", counters(&c).await.holders == 0);
    srv.shutdown();
}

/// `stats` (`STATS_CACHED` in a version 6 session) shows a cached client's kept extent:
/// counted in `cached_extents` (with the grant that was expanded to it) and marked `kept`
/// in the list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_show_the_kept_extents() {
    let (srv, ep) = server();
    let c = cached(&ep, CacheOptions::default()).await;
    c.lock_exclusive(0..10).await.unwrap().unlock().await.unwrap();
    assert_eq!(c.kept_extents(), 1);
    let probe = AsyncClient::connect(&ep).await.unwrap();
    let st = probe.stats(10).await.unwrap();
    let n = st.counters;
    assert_eq!((n.cached_extents, n.callbacks, n.give_backs, n.cache_expanded), (1, 0, 0, 1));
    assert_eq!(st.entries.len(), 1);
    assert!(st.entries[0].kept, "{:?}", st.entries[0]);
    // The cached client's own connection sees the same.
    assert_eq!(c.as_async().stats(0).await.unwrap().counters.cached_extents, 1);
    srv.shutdown();
}
