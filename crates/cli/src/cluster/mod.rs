//! `rangelock cluster ...`: operate a cluster through etcd (`status`, `move`), and the
//! tools that check one (`fencing-store`, `worker`; see `docs/CLUSTER.md` §2 and §6).
//!
//! One file per subcommand.

mod fencing_store;
mod move_partition;
mod status;
mod worker;

use std::time::Duration;

use rangelock_cluster::etcd::Etcd;

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
