//! `rangelock serve`: run the range-lock server until SIGINT (ctrl-c) or SIGTERM.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rangelock_cluster::{Node, NodeConfig};
use rangelock_server::protocol::GrantMode;
use rangelock_server::{
    AuthTable, EngineKind, Server, ServerConfig, DEFAULT_BACKLOG, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_PORT,
};

/// Arguments of `rangelock serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// TCP address to listen on, `HOST:PORT` (a name such as `localhost:0` is resolved;
    /// port 0 picks a free port) [default: 127.0.0.1:7878, or none when only --unix is
    /// given].
    #[arg(long, value_parser = parse_addr)]
    addr: Option<SocketAddr>,
    /// Also (or only) listen on this Unix socket path. A live server's socket is never taken
    /// over: the server refuses to start if something answers on the path, and replaces
    /// only a stale socket file. `PATH.lock` beside it keeps two servers off one path.
    #[arg(long, value_name = "PATH")]
    unix: Option<PathBuf>,
    /// Listen backlog: connections the kernel queues before they are accepted.
    #[arg(long, default_value_t = DEFAULT_BACKLOG)]
    backlog: u32,
    /// Who owns the lock table: combiner, tree-mutex, tree-single, or rangelock (handlers
    /// drive the lock-free in-process skip-list range lock).
    #[arg(long, default_value = "combiner")]
    engine: EngineKind,
    /// How clients learn of grants of queued locks: push, or poll (the seed's RPC-poll).
    #[arg(long, default_value = "push", value_parser = parse_grant)]
    grant: GrantMode,
    /// Session lease in milliseconds: a client silent this long loses its locks. At least
    /// 100 (clients keep alive every third of the lease).
    #[arg(long, default_value_t = 10_000)]
    lease_ms: u64,
    /// Live locks (held + queued) allowed per session.
    #[arg(long, default_value_t = 4096)]
    max_locks: usize,
    /// Largest number of holder/waiter entries in one STATS answer.
    #[arg(long, default_value_t = 1000)]
    max_stats_entries: u32,
    /// Bytes of answers a session may leave unread; a session over it is closed and its
    /// locks released, as on disconnect.
    #[arg(long, default_value_t = DEFAULT_MAX_OUTPUT_BYTES)]
    max_output_bytes: usize,
    /// Handler threads (ignored by tree-single); 0 picks one per core, leaving one core to
    /// the combiner thread.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Shared-memory answer slots (docs/PROTOCOL.md §9): up to this many sessions on this
    /// host may ask (SHM_ATTACH) to read their LOCK answers from a mapped file, one
    /// 64-byte cache line each; 0 disables it. Push grants only.
    #[arg(long, default_value_t = 0)]
    shm_slots: u32,
    /// Directory of the shared-memory slot file [default: the temp directory].
    #[arg(long, value_name = "DIR", requires = "shm_slots")]
    shm_dir: Option<PathBuf>,
    /// Require every client to authenticate with a token of this file (TOML: one
    /// [[token]] per token, with its name, its secret or the secret's SHA-256, and
    /// optionally the ranges it may lock; see docs/OPERATIONS.md). Read at startup: a file
    /// that cannot be used stops the server from starting.
    #[arg(long, value_name = "FILE")]
    auth_file: Option<PathBuf>,
    /// Run as a node of a cluster whose state lives in etcd at these endpoints
    /// (comma-separated, e.g. `http://127.0.0.1:2379`). See docs/CLUSTER.md.
    #[arg(long, value_name = "ENDPOINTS", value_delimiter = ',')]
    cluster: Option<Vec<String>>,
    /// Cluster name (the etcd key prefix `/rangelock/NAME/`).
    #[arg(long, default_value = "default", requires = "cluster")]
    cluster_name: String,
    /// This node's id, unique in the cluster [default: the host name and port].
    #[arg(long, requires = "cluster")]
    node_id: Option<String>,
    /// The address clients reach this node at [default: the TCP address it listens on].
    #[arg(long, value_name = "HOST:PORT", requires = "cluster")]
    advertise: Option<String>,
    /// Partitions of a new cluster (a power of two, at most 4096); an existing cluster
    /// keeps its own [default: 64 for a new cluster].
    #[arg(long, requires = "cluster")]
    partitions: Option<u32>,
    /// The node's etcd lease in seconds: a node that cannot refresh it stops granting
    /// before it expires, and other nodes take its partitions over after it expires.
    #[arg(long, default_value_t = 5, requires = "cluster")]
    etcd_ttl: u64,
    /// Grace period in milliseconds of a partition taken over from another node: only
    /// reclaims of held locks are served in it [default: the session lease].
    #[arg(long, requires = "cluster")]
    grace_ms: Option<u64>,
    /// After a planned move, how long in milliseconds the waiters the old owner handed
    /// over keep their places in the queue here [default: 2000, at most the grace period].
    #[arg(long, requires = "cluster")]
    requeue_ms: Option<u64>,
    /// Self-fencing margin in milliseconds: the node stops granting this long before its
    /// etcd lease could expire [default: TTL/10 + 200].
    #[arg(long, requires = "cluster")]
    fence_margin_ms: Option<u64>,
}

/// `HOST:PORT`, resolved; the first address wins (IPv4 first for `localhost`).
fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| format!("{s:?} is not an address to listen on (HOST:PORT): {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}

fn parse_grant(s: &str) -> Result<GrantMode, String> {
    match s {
        "push" => Ok(GrantMode::Push),
        "poll" => Ok(GrantMode::Poll),
        _ => Err(format!("unknown grant mode {s:?} (expected push or poll)")),
    }
}

/// Runs the server; prints `listening on ...` lines on stdout once bound.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    crate::logging::init();
    let tcp = match (args.addr, &args.unix) {
        (Some(a), _) => Some(a),
        (None, Some(_)) => None,
        (None, None) => Some(SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))),
    };
    let config = ServerConfig {
        tcp,
        unix: args.unix,
        engine: args.engine,
        grant: args.grant,
        listen_backlog: args.backlog,
        lease: Duration::from_millis(args.lease_ms),
        max_locks_per_session: args.max_locks,
        max_stats_entries: args.max_stats_entries,
        max_output_bytes: args.max_output_bytes,
        handler_threads: args.threads,
        shm_slots: args.shm_slots,
        shm_dir: args.shm_dir,
        auth: args.auth_file.as_deref().map(AuthTable::load).transpose()?.map(Arc::new),
        ..ServerConfig::default()
    };
    // Handlers first: a supervisor that reads "listening on" and sends SIGTERM at once must
    // get a clean shutdown, not the default action (death without releasing anything).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut term, mut int) = {
        use tokio::signal::unix::{signal, SignalKind};
        let _in_runtime = rt.enter();
        (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?)
    };
    let mut signalled = || {
        rt.block_on(async {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        });
        tracing::info!("signal received");
    };
    if let Some(etcd) = args.cluster {
        let node_id = match args.node_id {
            Some(id) => id,
            None => default_node_id(config.tcp),
        };
        let node = Node::start(NodeConfig {
            etcd,
            cluster: args.cluster_name,
            node_id: node_id.clone(),
            advertise: args.advertise,
            partitions: args.partitions,
            etcd_ttl: Duration::from_secs(args.etcd_ttl),
            grace: args.grace_ms.map(Duration::from_millis),
            requeue: args.requeue_ms.map(Duration::from_millis),
            fence_margin: args.fence_margin_ms.map(Duration::from_millis),
            server: config,
        })
        .with_context(|| format!("cannot start cluster node {node_id:?}"))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {} (cluster node {node_id})", node.addr())?;
        out.flush()?;
        drop(out);
        signalled();
        node.shutdown();
        return Ok(());
    }
    let server = Server::start(config)?;
    {
        let mut out = std::io::stdout().lock();
        if let Some(a) = server.tcp_addr() {
            writeln!(out, "listening on {a}")?;
        }
        if let Some(p) = server.unix_path() {
            writeln!(out, "listening on unix:{}", p.display())?;
        }
        if let Some(p) = server.shm_path() {
            writeln!(out, "shm slots in {}", p.display())?;
        }
        out.flush()?;
    }
    signalled();
    server.shutdown();
    Ok(())
}

/// `HOST-PORT` of the listen address (the port 0 case gets the process id instead).
fn default_node_id(tcp: Option<SocketAddr>) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "node".into());
    match tcp {
        Some(a) if a.port() != 0 => format!("{host}-{}", a.port()),
        _ => format!("{host}-pid{}", std::process::id()),
    }
}
