//! `rangelock cluster move P --to NODE [--no-rebalance]`: a planned move of one partition.

use rangelock_cluster::admin;

use super::{with_etcd, EtcdArgs};
use crate::exit::Failure;

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
    /// Pause the balancer first, so that this move is the only one (it stays paused:
    /// `rangelock cluster balance resume` lets it rebalance again).
    #[arg(long)]
    no_rebalance: bool,
}

/// Requests the move (the owner carries it out at once, or at its next round).
pub fn run(a: MoveArgs) -> Result<(), Failure> {
    let MoveArgs { etcd: e, partition, to, no_rebalance } = a;
    let name = &e.cluster_name;
    let requested = with_etcd(&e, async |etcd| {
        if no_rebalance {
            admin::set_balancer_paused(etcd, name, true).await?;
        }
        admin::request_move(etcd, name, partition, &to).await
    })?;
    if no_rebalance {
        println!("balancer paused (`rangelock cluster balance resume` to resume)");
    }
    if requested {
        println!("partition {partition}: move to {to} requested");
    } else {
        println!("partition {partition}: already on {to}");
    }
    Ok(())
}
