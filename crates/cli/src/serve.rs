//! `rangelock serve`: run the range-lock server until SIGINT (ctrl-c) or SIGTERM. Its
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
use rangelock_server::{AuthTable, Server};

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
        if let Some(a) = server.metrics_addr() {
            writeln!(out, "metrics on http://{a}/metrics")?;
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
