//! 1000 sessions connect in one burst (every connect starts at once, behind a barrier)
//! and each connect + handshake is quick: none waits for a SYN retransmission (~1 s),
//! which a listen backlog too small for the burst would cause. Then the 1000 concurrent
//! sessions hold locks, queue on one range and are all granted in turn; closing them all
//! leaves nothing behind.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rangelock_client::{AsyncClient, Endpoint, Mode, Wait};
use rangelock_server::{Server, ServerConfig};
use tokio::sync::Barrier;

const N: usize = 1000;

/// Bound on one connect + handshake of the burst. On loopback one takes well under a
/// millisecond and the whole burst some tens of milliseconds; a connection dropped by a
/// full accept queue is retried by the kernel only after ~1 s.
const CONNECT_BOUND: Duration = Duration::from_millis(200);

/// Raises the soft open-file limit to the hard one (each connection costs two fds here:
/// the client's and the server's).
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
    unsafe {
        let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

#[test]
fn a_thousand_connections() {
    raise_fd_limit();
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let probe = AsyncClient::connect(&ep).await.unwrap();
        let start = Arc::new(Barrier::new(N + 1));
        let barrier = Arc::new(Barrier::new(N + 1));
        let release = Arc::new(Barrier::new(N + 1));
        let (times_tx, mut times_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for i in 0..N as u64 {
            let (ep, start, barrier, release) =
                (ep.clone(), start.clone(), barrier.clone(), release.clone());
            let times_tx = times_tx.clone();
            tasks.push(tokio::spawn(async move {
                start.wait().await; // all 1000 connects start together
                let t = Instant::now();
                let c = AsyncClient::connect(&ep).await.unwrap();
                times_tx.send(t.elapsed()).unwrap();
                let own = c.lock(i * 2..i * 2 + 1, Mode::Exclusive, Wait::Try).await.unwrap();
                let shared = c.lock_shared(1_000_000..2_000_000).await.unwrap();
                barrier.wait().await; // all 1000 hold two locks each
                release.wait().await;
                drop(shared);
                // Everyone queues on one unit; each is granted in turn.
                let g = c.lock_exclusive(5_000_000..5_000_001).await.unwrap();
                let token = g.token();
                g.unlock().await.unwrap();
                own.unlock().await.unwrap();
                (c, token)
            }));
        }
        let burst = Instant::now();
        start.wait().await;
        barrier.wait().await;
        let burst = burst.elapsed();
        // Every task sent its connect time before waiting on `barrier`.
        let mut times = Vec::with_capacity(N);
        while let Ok(t) = times_rx.try_recv() {
            times.push(t);
        }
        assert_eq!(times.len(), N);
        times.sort_unstable();
        let (p50, p99, max) = (times[N / 2], times[N * 99 / 100 - 1], times[N - 1]);
        let slow = times.iter().filter(|t| **t > CONNECT_BOUND).count();
        eprintln!(
            "{N} connects + handshakes in one burst: p50 {p50:?} p99 {p99:?} max {max:?}; \
             {slow} over {CONNECT_BOUND:?}; all connected and locked after {burst:?}"
        );
        assert!(
            max <= CONNECT_BOUND,
            "{slow} of {N} connects took over {CONNECT_BOUND:?} (max {max:?}, p99 {p99:?})"
        );
        let st = probe.stats(0).await.unwrap();
        assert_eq!(st.counters.sessions_open, N as u64 + 1);
        assert_eq!(st.counters.holders, 2 * N as u64);
        release.wait().await;
        let mut clients = Vec::new();
        let mut tokens = Vec::new();
        for t in tasks {
            let (c, token) = t.await.unwrap();
            clients.push(c);
            tokens.push(token);
        }
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), N, "every queued session got its own grant");
        let st = probe.stats(0).await.unwrap();
        assert_eq!((st.counters.holders, st.counters.waiters), (0, 0));
        drop(clients);
        // Wait (on replies) for the server to end the 1000 sessions.
        let mut st = probe.stats(0).await.unwrap();
        for _ in 0..1_000_000 {
            if st.counters.sessions_open == 1 {
                break;
            }
            tokio::task::yield_now().await;
            st = probe.stats(0).await.unwrap();
        }
        assert_eq!(st.counters.sessions_open, 1);
        assert_eq!(st.counters.sessions_total, N as u64 + 1);
        let all = probe.lock(0..u64::MAX, Mode::Exclusive, Wait::Try).await.unwrap();
        all.unlock().await.unwrap();
    });
    drop(rt);
    server.shutdown();
}
