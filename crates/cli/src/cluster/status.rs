//! `rangelock cluster status [--json]`: the nodes (alive or dead, lease left, last seen)
//! and each partition (unit range, owner, epoch, phase); what each means is
//! `rangelock_cluster::admin`'s module docs, and docs/CLUSTER.md §5.

use rangelock_cluster::admin;

use super::{with_etcd, EtcdArgs};
use crate::exit::Failure;

/// Arguments of `rangelock cluster status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// Print one JSON object (its fields: docs/CLUSTER.md §5) instead of the table.
    #[arg(long)]
    json: bool,
}

/// Reads and prints the status.
pub fn run(a: StatusArgs) -> Result<(), Failure> {
    let status = with_etcd(&a.etcd, async |etcd| admin::status(etcd, &a.etcd.cluster_name).await)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&status).expect("serializable"));
    } else {
        print!("{}", status.render());
    }
    Ok(())
}
