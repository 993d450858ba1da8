//! Starting and stopping a server.
//!
//! [`Server::start`] runs the whole server on its own OS thread with its own tokio
//! runtime — multi-threaded with `handler_threads` workers, or single-threaded for the
//! `tree-single` engine — so it works the same from a binary, a blocking test or an async
//! test. [`Server::shutdown`] (or dropping the [`Server`]) stops accepting, ends every
//! session (releasing its locks), waits for them, stops the combiner and joins the thread.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::{EngineKind, ServerConfig};
use crate::engine::Engine;
use crate::session::{self, Shared};

/// A running server; see the module docs.
#[derive(Debug)]
pub struct Server {
    tcp: Option<SocketAddr>,
    unix: Option<PathBuf>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds the configured listeners and starts serving. Returns once the listeners are
    /// bound (so [`Server::tcp_addr`] is known), or the bind error.
    pub fn start(config: ServerConfig) -> std::io::Result<Server> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("rangelock-server".into())
            .spawn(move || run(config, ready_tx, stop_rx))?;
        match ready_rx.recv() {
            Ok(Ok((tcp, unix))) => {
                Ok(Server { tcp, unix, stop: Some(stop_tx), thread: Some(thread) })
            }
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

    /// The Unix socket path, if any.
    pub fn unix_path(&self) -> Option<&std::path::Path> {
        self.unix.as_deref()
    }

    /// Stops the server and waits until it has stopped.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
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

type Ready = std::io::Result<(Option<SocketAddr>, Option<PathBuf>)>;

fn run(config: ServerConfig, ready: std::sync::mpsc::Sender<Ready>, stop: oneshot::Receiver<()>) {
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
    let handler_errors = Arc::new(AtomicU64::new(0));
    let (engine, combiner) = match Engine::start(&config, handler_errors.clone()) {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let unix_path = config.unix.clone();
    let shared =
        Arc::new(Shared { engine, config, next_session: AtomicU64::new(0), handler_errors });
    rt.block_on(serve(shared, ready, stop));
    // Every session task has ended; shutting the runtime down drops any stragglers
    // (timers), and with them the last engine handles, which stops the combiner. Waiting
    // threads of the rangelock engine see their sessions closed within a wait slice.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    if let Some(c) = combiner {
        let _ = c.join();
    }
    if let Some(p) = unix_path {
        let _ = std::fs::remove_file(p);
    }
    tracing::info!("server stopped");
}

async fn serve(
    shared: Arc<Shared>,
    ready: std::sync::mpsc::Sender<Ready>,
    stop: oneshot::Receiver<()>,
) {
    let bound = async {
        let tcp = match shared.config.tcp {
            Some(a) => Some(TcpListener::bind(a).await?),
            None => None,
        };
        let unix = match &shared.config.unix {
            Some(p) => {
                remove_stale_socket(p);
                Some(UnixListener::bind(p)?)
            }
            None => None,
        };
        let tcp_addr = match &tcp {
            Some(l) => Some(l.local_addr()?),
            None => None,
        };
        std::io::Result::Ok((tcp, unix, tcp_addr))
    }
    .await;
    let (tcp, unix) = match bound {
        Ok((tcp, unix, addr)) => {
            tracing::info!(
                tcp = ?addr,
                unix = ?shared.config.unix,
                engine = shared.config.engine.name(),
                grant = ?shared.config.grant,
                "rangelock server listening"
            );
            let _ = ready.send(Ok((addr, shared.config.unix.clone())));
            (tcp, unix)
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
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
                        tokio::spawn(session::run(
                            s,
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
    let accept_unix = {
        let (shared, shutdown, alive) = (shared.clone(), shutdown_rx.clone(), alive_tx.clone());
        async move {
            let Some(l) = unix else { return std::future::pending().await };
            loop {
                match l.accept().await {
                    Ok((s, _)) => {
                        tokio::spawn(session::run(
                            s,
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
    tokio::select! {
        _ = accept_tcp => {}
        _ = accept_unix => {}
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
}

/// Accept errors (e.g. out of file descriptors) are transient: log, back off briefly, retry.
async fn accept_error(e: std::io::Error) {
    tracing::warn!(error = %e, "accept failed");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
}

fn remove_stale_socket(p: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if m.file_type().is_socket() {
            let _ = std::fs::remove_file(p);
        }
    }
}
