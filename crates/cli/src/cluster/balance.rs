//! `rangelock cluster balance pause|resume`: stop or restart the balancer's rebalancing
//! moves (`rangelock_cluster::balance`). While paused, nodes still claim unowned
//! partitions (a dead node's) and carry out operator moves.

use rangelock_cluster::admin;

use super::{with_etcd, EtcdArgs};
use crate::exit::Failure;

/// `rangelock cluster balance ...`.
#[derive(Debug, clap::Subcommand)]
pub enum BalanceCommand {
    /// No more rebalancing moves (a joining node then gets no share either).
    Pause(EtcdArgs),
    /// Rebalance again.
    Resume(EtcdArgs),
}

/// Writes or deletes the cluster's `balancer` key.
pub fn run(cmd: BalanceCommand) -> Result<(), Failure> {
    let (e, paused) = match &cmd {
        BalanceCommand::Pause(e) => (e, true),
        BalanceCommand::Resume(e) => (e, false),
    };
    with_etcd(e, async |etcd| admin::set_balancer_paused(etcd, &e.cluster_name, paused).await)?;
    println!("balancer {}", if paused { "paused" } else { "running" });
    Ok(())
}
