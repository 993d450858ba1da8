//! 1000 concurrent sessions hold locks, queue on one range and are all granted in turn;
//! closing them all leaves nothing behind.

use std::sync::Arc;

use rangelock_client::{AsyncClient, Endpoint, Mode, Wait};
use rangelock_server::{Server, ServerConfig};
use tokio::sync::Barrier;

const N: usize = 1000;

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
        let barrier = Arc::new(Barrier::new(N + 1));
        let release = Arc::new(Barrier::new(N + 1));
        let mut tasks = Vec::new();
        for i in 0..N as u64 {
            let (ep, barrier, release) = (ep.clone(), barrier.clone(), release.clone());
            tasks.push(tokio::spawn(async move {
                let c = AsyncClient::connect(&ep).await.unwrap();
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
        barrier.wait().await;
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
