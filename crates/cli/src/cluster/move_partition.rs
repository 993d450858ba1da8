//! `rangelock cluster move P --to NODE`: a planned move of one partition.

use rangelock_cluster::admin;

use super::{connect, runtime, EtcdArgs};

/// Arguments of `rangelock cluster move`.
#[derive(Debug, clap::Args)]
pub struct MoveArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// The partition index.
    partition: u32,
    /// The target node's id.
    #[arg(long)]
    to: String,
}

/// Requests the move (the owner carries it out at its next round).
pub fn run(a: MoveArgs) -> anyhow::Result<()> {
    let MoveArgs { etcd: e, partition, to } = a;
    runtime()?.block_on(async {
        let etcd = connect(&e).await?;
        admin::request_move(&etcd, &e.cluster_name, partition, &to).await?;
        println!("partition {partition}: move to {to} requested");
        Ok(())
    })
}
