//! `rangelock cluster status|move`: read and operate a cluster through etcd.

use std::time::Duration;

use rangelock_cluster::admin;
use rangelock_cluster::etcd::Etcd;

/// Arguments every cluster command shares.
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
    Move {
        #[command(flatten)]
        etcd: EtcdArgs,
        /// The partition index.
        partition: u32,
        /// The target node's id.
        #[arg(long)]
        to: String,
    },
}

/// Runs a cluster command.
pub fn run(cmd: ClusterCommand) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        match cmd {
            ClusterCommand::Status(a) => {
                let etcd = connect(&a).await?;
                let snap = admin::snapshot(&etcd, &a.cluster_name).await?;
                print!("{}", admin::render_status(&a.cluster_name, &snap));
            }
            ClusterCommand::Move { etcd: a, partition, to } => {
                let etcd = connect(&a).await?;
                admin::request_move(&etcd, &a.cluster_name, partition, &to).await?;
                println!("partition {partition}: move to {to} requested");
            }
        }
        Ok(())
    })
}

async fn connect(a: &EtcdArgs) -> anyhow::Result<Etcd> {
    // The error names the endpoints.
    Ok(Etcd::connect(&a.etcd, Duration::from_secs(2)).await?)
}
