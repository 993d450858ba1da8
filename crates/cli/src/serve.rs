//! `rangelock serve`: run the range-lock server until SIGINT (ctrl-c) or SIGTERM; SIGHUP
//! reads the auth file and the TLS files again (`Server::reload`: sessions and locks
//! stay; a bad file changes nothing; a cluster node too). Every signal is logged. Its
//! settings come from flags, a `--config` file and built-in defaults (see [`settings`]);
//! `--print-config` shows the result without starting anything.

mod settings;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rangelock_cluster::{Node, NodeConfig, DEFAULT_ETCD_TTL};
use rangelock_server::{AuthTable, ReloadError, Reloaded, Server};

pub(crate) use settings::ServeSettings;

/// Arguments of `rangelock serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = LOGS_HELP)]
pub struct ServeArgs {
    /// Read settings from this TOML file: the keys are the flags below with underscores
    /// (`lease_ms = 10000`, `engine = "combiner"`); a flag given here overrides its key.
    /// An unknown key or a wrong type is an error. See docs/rangelock.example.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print the effective settings (flags over --config FILE over the defaults) as TOML
    /// on stdout and exit without starting the server; the output is a config file.
    #[arg(long)]
    print_config: bool,
    #[command(flatten, next_help_heading = "Settings (flags, or keys of --config FILE)")]
    settings: ServeSettings,
}

/// The end of `rangelock serve --help`: what the log is and how to filter it.
const LOGS_HELP: &str = "\
Logs go to stderr (the `listening on` lines to stdout), filtered by RUST_LOG (default info);
a target named alone turns the others off, so start from a level:
  RUST_LOG=warn                                 problems only
  RUST_LOG=info,rangelock_server=debug          also every session opened and ended
  RUST_LOG=info,rangelock_cluster::etcd=debug   also each etcd request retried
  RUST_LOG=rangelock=debug                      everything of rangelock's at debug
See docs/OPERATIONS.md.";

/// Runs the server; prints `listening on ...` lines on stdout once bound.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let file = match &args.config {
        Some(path) => ServeSettings::from_file(path)?,
        None => ServeSettings::default(),
    };
    let settings = args.settings.or(file).resolve()?;
    if args.print_config {
        let mut out = std::io::stdout().lock();
        out.write_all(settings.to_toml()?.as_bytes())?;
        out.flush()?;
        return Ok(());
    }
    crate::logging::init(settings.log_format.unwrap_or_default());
    let mut config = settings.server_config();
    // After the logger: a warning about the file's permissions must reach the log.
    config.auth = settings.auth_file.as_deref().map(AuthTable::load).transpose()?.map(Arc::new);
    // Handlers first: a supervisor that reads "listening on" and sends SIGTERM at once must
    // get a clean shutdown, not the default action (death without releasing anything);
    // and a SIGHUP during startup must not kill the server either.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut signals = {
        let _in_runtime = rt.enter();
        Signals::install()?
    };
    if let Some(etcd) = settings.cluster {
        let node_id = match settings.node_id {
            Some(id) => id,
            None => default_node_id(config.tcp),
        };
        let node = Node::start(NodeConfig {
            etcd,
            cluster: settings.cluster_name.expect("resolve gives a cluster node its name"),
            node_id: node_id.clone(),
            advertise: settings.advertise,
            partitions: settings.partitions,
            etcd_ttl: settings.etcd_ttl.map_or(DEFAULT_ETCD_TTL, Duration::from_secs),
            grace: settings.grace_ms.map(Duration::from_millis),
            requeue: settings.requeue_ms.map(Duration::from_millis),
            fence_margin: settings.fence_margin_ms.map(Duration::from_millis),
            server: config,
        })
        .with_context(|| format!("cannot start cluster node {node_id:?}"))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {} (cluster node {node_id})", node.addr())?;
        if let Some(a) = node.metrics_addr() {
            writeln!(out, "metrics on http://{a}/metrics")?;
        }
        out.flush()?;
        drop(out);
        loop {
            match rt.block_on(signals.next()) {
                Signal::Hup => reload(|| node.reload()),
                stop => {
                    tracing::info!(signal = stop.name(), "signal received; shutting down");
                    break;
                }
            }
        }
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
        if let Some(a) = server.metrics_addr() {
            writeln!(out, "metrics on http://{a}/metrics")?;
        }
        if let Some(p) = server.shm_path() {
            writeln!(out, "shm slots in {}", p.display())?;
        }
        out.flush()?;
    }
    loop {
        match rt.block_on(signals.next()) {
            Signal::Hup => reload(|| server.reload()),
            stop => {
                tracing::info!(signal = stop.name(), "signal received; shutting down");
                break;
            }
        }
    }
    server.shutdown();
    Ok(())
}

/// SIGHUP: reads the auth file and the TLS files again; a bad one changes nothing.
/// A cluster node does the same (its server's files); its partitions stay.
fn reload(reload: impl FnOnce() -> Result<Reloaded, ReloadError>) {
    tracing::info!(signal = "SIGHUP", "signal received; reloading the auth file and TLS files");
    match reload() {
        Ok(done) => {
            for name in &done.revoked {
                tracing::info!(token_name = %name, "token revoked: its sessions end");
            }
            let tokens = done.tokens.map_or_else(|| "-".to_owned(), |n| n.to_string());
            tracing::info!(
                tokens = %tokens,
                tls = done.tls,
                revoked = done.revoked.len(),
                "reloaded; sessions and locks stay"
            );
        }
        Err(e) => tracing::error!(
            error = %e,
            "reload refused; the old certificate and tokens stay in force"
        ),
    }
}

/// The signals `rangelock serve` handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signal {
    Term,
    Int,
    Hup,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::Term => "SIGTERM",
            Signal::Int => "SIGINT",
            Signal::Hup => "SIGHUP",
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP, caught from [`Signals::install`] on.
#[derive(Debug)]
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Catches the three signals from now on (inside a tokio runtime).
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal.
    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::Term,
            _ = self.int.recv() => Signal::Int,
            _ = self.hup.recv() => Signal::Hup,
        }
    }
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
