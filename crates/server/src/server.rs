//! Starting and stopping a server.
//!
//! [`Server::start`] runs the whole server on its own OS thread with its own tokio
//! runtime — multi-threaded with `handler_threads` workers, or single-threaded for the
//! `tree-single` engine — so it works the same from a binary, a blocking test or an async
//! test. [`Server::shutdown`] (or dropping the [`Server`]) stops accepting, ends every
//! session (releasing its locks), waits for them, stops the combiner and joins the thread.
//! The metrics endpoint ([`crate::metrics`]), when configured, is served by the same
//! runtime and stops accepting at the same moment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::{EngineKind, ServerConfig};
use crate::end_log::EndLog;
use crate::engine::Engine;
use crate::listen;
use crate::metrics::{self, CacheCounts, Clock, ErrorCounts, ServerMetrics};
use crate::reload::{Live, ReloadError, Reloaded};
use crate::session::{self, Shared};
use crate::shm::ShmArea;
use crate::tls;

/// A running server; see the module docs.
#[derive(Debug)]
pub struct Server {
    tcp: Option<SocketAddr>,
    unix: Option<PathBuf>,
    metrics: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// The shared-memory slot file, if `shm_slots > 0`.
    shm: Option<Arc<ShmArea>>,
    /// The auth table and TLS acceptor in force ([`Server::reload`]).
    live: Arc<Live>,
    /// The engine, for [`Server::cache_counts`]; dropped before the server stops (the
    /// combiner ends with its last handle).
    engine: Option<Engine>,
}

impl Server {
    /// Binds the configured listeners and starts serving. Returns once the listeners are
    /// bound (so [`Server::tcp_addr`] is known), or the bind error.
    ///
    /// Errors: an invalid configuration ([`ServerConfig::validate`], as
    /// [`std::io::ErrorKind::InvalidInput`]); a listener that cannot be bound (the message
    /// names the address or path); a Unix socket path on which a server is already
    /// listening (`AddrInUse`: the path is never taken over; a stale socket file nobody
    /// listens on is replaced).
    pub fn start(config: ServerConfig) -> std::io::Result<Server> {
        config.validate().map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        // The certificate files are read here (and again by `reload`): a bad one is a
        // startup error.
        let tls = match &config.tls {
            Some(s) => Some((s.clone(), tls::acceptor(s)?)),
            None => None,
        };
        let live = Arc::new(Live::new(config.auth.clone(), tls));
        let shm = match config.shm_slots {
            0 => None,
            n => Some(Arc::new(ShmArea::create(config.shm_dir.as_deref(), n)?)),
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let (area, in_force) = (shm.clone(), live.clone());
        let thread = std::thread::Builder::new()
            .name("rangelock-server".into())
            .spawn(move || run(config, area, in_force, ready_tx, stop_rx))?;
        match ready_rx.recv() {
            Ok(Ok(Bound { tcp, unix, metrics, engine })) => Ok(Server {
                tcp,
                unix,
                metrics,
                engine: Some(engine),
                stop: Some(stop_tx),
                thread: Some(thread),
                shm,
                live,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(std::io::Error::other("server thread ended during startup"))
            }
        }
    }

    /// The bound TCP address (with the real port when the config asked for port 0).
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }

    /// The bound address of the metrics endpoint (`GET /metrics`), with the real port
    /// when the config asked for port 0; `None` without [`ServerConfig::metrics`].
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// The Unix socket path, if any.
    pub fn unix_path(&self) -> Option<&std::path::Path> {
        self.unix.as_deref()
    }

    /// The shared-memory slot file clients map (`None` without `shm_slots`); it is
    /// removed when the server stops.
    pub fn shm_path(&self) -> Option<&std::path::Path> {
        self.shm.as_deref().map(ShmArea::path)
    }

    /// Shared-memory slots not leased to a session now (`0` without `shm_slots`). A
    /// slot returns once its session has ended and the engine has dropped the session.
    pub fn shm_free_slots(&self) -> usize {
        self.shm.as_deref().map_or(0, ShmArea::free_slots)
    }

    /// Reads the auth file and the TLS certificate, key and client CA again and puts them
    /// in force, all or nothing (see the `reload` module): sessions and locks stay, new
    /// TLS handshakes use the new certificate, and the sessions of a token the new auth
    /// file no longer holds as it was ([`Reloaded::revoked`]) end with the
    /// `SESSION_ENDED` reason `TOKEN_REVOKED`. A server with neither an auth file nor TLS
    /// reloads nothing. Errors: the first file that cannot be used; then nothing changed.
    pub fn reload(&self) -> Result<Reloaded, ReloadError> {
        self.live.reload()
    }

    /// Stops the server and waits until it has stopped.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    /// What cached locks did so far (kept extents now, callbacks, give-backs, grown
    /// grants; all zero for the `rangelock` engine, which caches nothing): the engine's
    /// counters, taken between two of its commands. Blocks until the engine answers, so
    /// it must not be called on an async runtime's thread. `None` once the server stops.
    pub fn cache_counts(&self) -> Option<CacheCounts> {
        let (report, rx) = oneshot::channel();
        self.engine.as_ref()?.submit(crate::table::Command::Metrics { report });
        rx.blocking_recv().ok().map(|s| s.cache)
    }

    fn stop_and_join(&mut self) {
        self.engine = None;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// What [`serve`] bound.
struct Bound {
    tcp: Option<SocketAddr>,
    unix: Option<PathBuf>,
    metrics: Option<SocketAddr>,
    engine: Engine,
}

type Ready = std::io::Result<Bound>;

fn run(
    config: ServerConfig,
    shm: Option<Arc<ShmArea>>,
    live: Arc<Live>,
    ready: std::sync::mpsc::Sender<Ready>,
    stop: oneshot::Receiver<()>,
) {
    let rt = match config.engine {
        EngineKind::TreeSingle => {
            tokio::runtime::Builder::new_current_thread().enable_all().build()
        }
        _ => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.effective_handler_threads())
            .thread_name("rangelock-handler")
            .enable_all()
            .build(),
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let handler_errors = Arc::new(ErrorCounts::default());
    let clock = config.metrics.map(|_| Clock::new());
    let (engine, combiner) = match Engine::start(&config, handler_errors.clone(), clock) {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if let Some(own) = &config.cluster {
        own.attach(engine.clone());
    }
    let cluster = config.cluster.clone();
    let shared = Arc::new(Shared {
        engine,
        config,
        next_session: AtomicU64::new(0),
        handler_errors,
        end_log: EndLog::default(),
        shm,
        metrics: clock.map(ServerMetrics::new),
        live,
    });
    let served = rt.block_on(serve(shared, ready, stop));
    // The ownership (kept by the cluster manager) must not keep the combiner alive.
    if let Some(own) = cluster {
        own.detach();
    }
    if !served {
        return;
    }
    // Every session task has ended; shutting the runtime down drops any stragglers
    // (timers), and with them the last engine handles, which stops the combiner.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    if let Some(c) = combiner {
        let _ = c.join();
    }
    tracing::info!("server stopped");
}

/// Binds, reports readiness, serves until `stop`, then ends every session. Returns
/// whether it served (`false`: binding failed, already reported through `ready`).
async fn serve(
    shared: Arc<Shared>,
    ready: std::sync::mpsc::Sender<Ready>,
    stop: oneshot::Receiver<()>,
) -> bool {
    let backlog = shared.config.listen_backlog;
    let bound = (|| {
        let tcp = shared.config.tcp.map(|a| listen::tcp(a, backlog)).transpose()?;
        let tcp_addr = tcp.as_ref().map(TcpListener::local_addr).transpose()?;
        let metrics = shared.config.metrics.map(|a| listen::tcp(a, METRICS_BACKLOG)).transpose()?;
        let metrics_addr = metrics.as_ref().map(TcpListener::local_addr).transpose()?;
        // The Unix socket last: a later failure would leave its file behind.
        let unix = shared.config.unix.as_deref().map(|p| listen::unix(p, backlog)).transpose()?;
        std::io::Result::Ok((tcp, unix, tcp_addr, metrics, metrics_addr))
    })();
    let (tcp, unix, socket_path, metrics) = match bound {
        Ok((tcp, unix, addr, metrics, metrics_addr)) => {
            let (unix, socket_path) = unix.unzip();
            let show = |a: Option<String>| a.unwrap_or_else(|| "-".into());
            tracing::info!(
                tcp = %show(addr.map(|a| a.to_string())),
                unix = %show(shared.config.unix.as_ref().map(|p| p.display().to_string())),
                tls = shared.config.tls.is_some(),
                engine = shared.config.engine.name(),
                grant = shared.config.grant.name(),
                lease_ms = shared.config.lease.as_millis() as u64,
                metrics = %show(metrics_addr.map(|a| format!("http://{a}/metrics"))),
                "rangelock server listening"
            );
            warn_if_open(addr, &shared.config);
            let path = shared.config.unix.clone();
            let engine = shared.engine.clone();
            let bound = Bound { tcp: addr, unix: path, metrics: metrics_addr, engine };
            let _ = ready.send(Ok(bound));
            (tcp, unix, socket_path, metrics)
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return false;
        }
    };
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let accept_tcp = {
        let (shared, shutdown, alive) = (shared.clone(), shutdown_rx.clone(), alive_tx.clone());
        async move {
            let Some(l) = tcp else { return std::future::pending().await };
            loop {
                match l.accept().await {
                    Ok((s, peer)) => {
                        let _ = s.set_nodelay(true);
                        tracing::trace!(%peer, "accepted");
                        let (name, local) = (peer.to_string(), peer.ip().is_loopback());
                        let (shared, shutdown, alive) =
                            (shared.clone(), shutdown.clone(), alive.clone());
                        // The acceptor in force now: a reload changes it for the
                        // handshakes that start after it.
                        match shared.live.acceptor() {
                            None => {
                                tokio::spawn(session::run(s, name, local, shared, shutdown, alive))
                            }
                            Some(tls) => {
                                tokio::spawn(tls::run(s, tls, name, local, shared, shutdown, alive))
                            }
                        };
                    }
                    Err(e) => accept_error(e).await,
                }
            }
        }
    };
    let accept_unix = {
        let (shared, shutdown, alive) = (shared.clone(), shutdown_rx.clone(), alive_tx.clone());
        async move {
            let Some(l) = unix else { return std::future::pending().await };
            loop {
                match l.accept().await {
                    Ok((s, _)) => {
                        let peer = match s.peer_cred().ok().and_then(|c| c.pid()) {
                            Some(pid) => format!("unix pid {pid}"),
                            None => "unix".to_owned(),
                        };
                        tokio::spawn(session::run(
                            s,
                            peer,
                            true,
                            shared.clone(),
                            shutdown.clone(),
                            alive.clone(),
                        ));
                    }
                    Err(e) => accept_error(e).await,
                }
            }
        }
    };
    let serve_metrics = {
        let shared = shared.clone();
        async move {
            match metrics {
                Some(l) => metrics::http::serve(l, shared).await,
                None => std::future::pending().await,
            }
        }
    };
    tokio::select! {
        _ = accept_tcp => {}
        _ = accept_unix => {}
        _ = serve_metrics => {}
        _ = stop => {}
    }
    tracing::info!("shutting down");
    // Stop granting first, so that no client is handed a lock released by another
    // session's teardown; then end every session.
    shared.engine.submit(crate::table::Command::Shutdown);
    let _ = shutdown_tx.send(true);
    drop(alive_tx);
    // Every session holds a sender; `recv` returns `None` once all have ended.
    let _ = alive_rx.recv().await;
    if let Some(p) = socket_path {
        p.remove();
    }
    true
}

/// Listen backlog of the metrics endpoint (a scraper or two connect to it).
const METRICS_BACKLOG: u32 = 64;

/// Accept errors (e.g. out of file descriptors) are transient: log, back off briefly, retry.
async fn accept_error(e: std::io::Error) {
    tracing::warn!(error = %e, "accept failed");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
}

/// Says how sessions authenticate, and warns when a TCP listener beyond loopback lets
/// anyone in.
fn warn_if_open(tcp: Option<SocketAddr>, config: &ServerConfig) {
    if let Some(auth) = &config.auth {
        tracing::info!(
            tokens = auth.len(),
            auth_file = %auth.path().display(),
            "sessions must authenticate"
        );
        return;
    }
    if let Some(a) = tcp.filter(|a| !a.ip().to_canonical().is_loopback()) {
        tracing::warn!(
            tcp = %a,
            "listening beyond loopback without authentication: anyone who can reach the \
             port can take any range (start with --auth-file; docs/OPERATIONS.md)"
        );
    }
}
