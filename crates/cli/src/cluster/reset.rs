//! `rangelock cluster reset --yes [--force]`: delete every key of a cluster in etcd
//! (`/rangelock/<name>/`). Without `--yes` it deletes nothing and exits 2; while nodes
//! are registered it refuses (exit 70) unless `--force`.

use rangelock_cluster::admin;

use super::{with_etcd, EtcdArgs};
use crate::exit::{self, Failure};

/// Arguments of `rangelock cluster reset`.
#[derive(Debug, clap::Args)]
pub struct ResetArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// Confirm: delete every key of the cluster.
    #[arg(long)]
    yes: bool,
    /// Delete them even while nodes are registered (those nodes then stop serving and
    /// must be restarted).
    #[arg(long)]
    force: bool,
}

/// Deletes the cluster's keys.
pub fn run(a: ResetArgs) -> Result<(), Failure> {
    let name = &a.etcd.cluster_name;
    if !a.yes {
        return Err(Failure::new(
            exit::USAGE,
            anyhow::anyhow!(
                "cluster reset deletes every key of cluster {name:?} in etcd: give --yes to \
                 confirm (nothing was deleted)"
            ),
        ));
    }
    let deleted = with_etcd(&a.etcd, async |etcd| admin::reset(etcd, name, a.force).await)?;
    println!("cluster {name:?}: {deleted} keys deleted");
    Ok(())
}
