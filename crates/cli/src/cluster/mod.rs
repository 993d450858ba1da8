//! `rangelock cluster ...`: operate a cluster through etcd (`status`, `move`), and the
//! tools that check one (`fencing-store`, `worker`; see `docs/CLUSTER.md` §2 and §6).
//!
//! One file per subcommand.

mod fencing_store;
mod move_partition;
mod node_cache;
mod status;
mod worker;

use std::time::Duration;

use rangelock_cluster::admin::{self, AdminError};
use rangelock_cluster::etcd::{Etcd, EtcdError};

/// Arguments every cluster command that talks to etcd shares.
#[derive(Debug, clap::Args)]
pub struct EtcdArgs {
    /// etcd endpoints, comma-separated (e.g. `http://127.0.0.1:2379`).
    #[arg(long, value_name = "ENDPOINTS", value_delimiter = ',', required = true)]
    etcd: Vec<String>,
    /// Cluster name.
    #[arg(long, default_value = "default")]
    cluster_name: String,
}

/// `rangelock cluster ...`.
#[derive(Debug, clap::Subcommand)]
pub enum ClusterCommand {
    /// Show the nodes, and each partition's owner and epoch.
    Status(EtcdArgs),
    /// Move a partition to another node (a planned move: the owner stops serving it, the
    /// target claims it, clients reclaim their locks there in its grace period).
    Move(move_partition::MoveArgs),
    /// Run a fencing store: a resource that accepts a write only with a fencing token not
    /// lower than every overlapping write it accepted (the fencing contract of
    /// docs/CLUSTER.md §2). Runs until SIGTERM or SIGINT.
    FencingStore(fencing_store::FencingStoreArgs),
    /// Lock random ranges across partition boundaries and write under each exclusive
    /// guard through a fencing store, counting what happens (grants, stale writes, lost
    /// guards, and violations: a fenced-out guard never told it is lost, an operation
    /// never answered). Writes the counts as JSON to --report; exits 0.
    Worker(worker::WorkerArgs),
}

/// Runs a cluster command.
pub fn run(cmd: ClusterCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Status(a) => status::run(a),
        ClusterCommand::Move(a) => move_partition::run(a),
        ClusterCommand::FencingStore(a) => fencing_store::run(a),
        ClusterCommand::Worker(a) => worker::run(a),
    }
}

/// A single-threaded runtime for one command.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

async fn connect(a: &EtcdArgs) -> anyhow::Result<Etcd> {
    // The error names the endpoints.
    Ok(Etcd::connect(&a.etcd, Duration::from_secs(2)).await?)
}

/// The node addresses to reach a cluster through, from what `--cluster` was given:
/// etcd endpoints (`http://…`: the live nodes are read from etcd, cluster `name`) or the
/// addresses of one or more nodes (`host:port`, used as they are).
///
/// The nodes read from etcd are kept on disk ([`node_cache`]); when etcd cannot be
/// reached, the nodes kept last time are used instead, with a warning.
pub(crate) async fn seeds(given: &[String], name: &str) -> anyhow::Result<Vec<String>> {
    if !is_etcd(given).map_err(anyhow::Error::msg)? {
        return Ok(given.to_vec());
    }
    let cache = node_cache::NodeCache::new(given, name);
    let read = async {
        let etcd = Etcd::connect(given, Duration::from_secs(2)).await?;
        admin::snapshot(&etcd, name).await
    };
    let snap = match read.await {
        Ok(snap) => snap,
        Err(AdminError::Etcd(
            e @ (EtcdError::Unreachable { .. }
            | EtcdError::Timeout { .. }
            | EtcdError::Transport { .. }),
        )) => {
            let Some((nodes, age)) = cache.load() else { return Err(e.into()) };
            let path = cache.path().map(|p| p.display().to_string()).unwrap_or_default();
            eprintln!(
                "rangelock: warning: {e}; using the nodes of cluster {name:?} read from etcd \
                 {:.0?} ago ({path})",
                age
            );
            return Ok(nodes);
        }
        Err(e) => return Err(e.into()),
    };
    anyhow::ensure!(!snap.nodes.is_empty(), "cluster {name:?} has no live node");
    let nodes: Vec<String> = snap.nodes.into_iter().map(|n| n.addr).collect();
    cache.store(&nodes);
    Ok(nodes)
}

/// Whether `--cluster` names etcd endpoints (`http://…`) rather than node addresses; an
/// error (a usage error) when it mixes the two.
pub(crate) fn is_etcd(given: &[String]) -> Result<bool, String> {
    let etcd = |s: &&String| s.starts_with("http://") || s.starts_with("https://");
    match given.iter().filter(etcd).count() {
        0 => Ok(false),
        n if n == given.len() => Ok(true),
        _ => Err("--cluster takes etcd endpoints (http://…) or node addresses (host:port), \
                  not both"
            .into()),
    }
}
