//! `rangelock cluster ...`: operate a cluster through etcd (`status`, `move`, `balance`,
//! `reset`), and the hidden tools that check one (`fencing-store`, `worker`; see
//! `docs/CLUSTER.md` §2 and §6).
//!
//! One file per subcommand. Exit codes: the rows of [`crate::exit::TABLE`] for `cluster`.

mod balance;
mod fencing_store;
mod move_partition;
mod node_cache;
mod reset;
mod status;
mod worker;

use std::time::Duration;

use rangelock_cluster::admin::{self, AdminError};
use rangelock_cluster::etcd::{Etcd, EtcdError};

use crate::exit::{self, Failure};

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
    /// Show each node (alive or dead, lease left, last seen) and each partition (unit
    /// range, owner, epoch, phase: serving, grace, moving, unowned).
    Status(status::StatusArgs),
    /// Move a partition to another node (a planned move: the owner stops serving it, the
    /// target claims it, clients reclaim their locks there in its grace period). A move
    /// that unbalances the cluster is followed by rebalancing moves unless the balancer
    /// is paused (--no-rebalance, `cluster balance pause`).
    Move(move_partition::MoveArgs),
    /// Pause or resume the balancer's rebalancing moves.
    #[command(subcommand)]
    Balance(balance::BalanceCommand),
    /// Delete every key of the cluster in etcd (with --yes; refused while nodes are
    /// registered, unless --force).
    Reset(reset::ResetArgs),
    /// Test tool: run a fencing store, a resource that accepts a write only with a
    /// fencing token not lower than every overlapping write it accepted (the fencing
    /// contract of docs/CLUSTER.md §2). Runs until SIGTERM or SIGINT.
    #[command(hide = true)]
    FencingStore(fencing_store::FencingStoreArgs),
    /// Test tool: lock random ranges across partition boundaries and write under each
    /// exclusive guard through a fencing store, counting what happens (grants, stale
    /// writes, lost guards, and violations: a fenced-out guard never told it is lost, an
    /// operation never answered). Writes the counts as JSON to --report; exits 0.
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
}

/// Runs a cluster command; errors carry their exit code ([`exit::TABLE`]).
pub fn run(cmd: ClusterCommand) -> Result<(), Failure> {
    match cmd {
        ClusterCommand::Status(a) => status::run(a),
        ClusterCommand::Move(a) => move_partition::run(a),
        ClusterCommand::Balance(a) => balance::run(a),
        ClusterCommand::Reset(a) => reset::run(a),
        ClusterCommand::FencingStore(a) => fencing_store::run(a).map_err(tool_failure),
        ClusterCommand::Worker(a) => worker::run(a).map_err(tool_failure),
    }
}

/// The exit code of an admin error: [`exit::UNAVAILABLE`] when etcd cannot be reached or
/// does not answer, else [`exit::SOFTWARE`].
fn admin_failure(e: AdminError) -> Failure {
    let code = if e.is_unreachable() { exit::UNAVAILABLE } else { exit::SOFTWARE };
    Failure::new(code, e)
}

/// The exit code of a test tool's error: [`exit::NOINPUT`] when the fencing store's file
/// cannot be read, else [`exit::SOFTWARE`].
fn tool_failure(e: anyhow::Error) -> Failure {
    use rangelock_cluster::fencing::FencingError;
    let file = e
        .chain()
        .any(|c| matches!(c.downcast_ref::<FencingError>(), Some(FencingError::File { .. })));
    Failure::new(if file { exit::NOINPUT } else { exit::SOFTWARE }, e)
}

/// Runs `f` with an etcd client of `a`, on a runtime of its own.
fn with_etcd<T>(
    a: &EtcdArgs,
    f: impl AsyncFnOnce(&Etcd) -> Result<T, AdminError>,
) -> Result<T, Failure> {
    let rt = runtime().map_err(|e| Failure::new(exit::SOFTWARE, e))?;
    rt.block_on(async {
        // The error names the endpoints.
        let etcd = Etcd::connect(&a.etcd, Duration::from_secs(2))
            .await
            .map_err(|e| admin_failure(AdminError::Etcd(e)))?;
        f(&etcd).await.map_err(admin_failure)
    })
}

/// A single-threaded runtime for one command.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
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
