//! `rangelock cluster status`: the nodes, and each partition's owner and epoch.

use rangelock_cluster::admin;

use super::{connect, runtime, EtcdArgs};

/// Prints the cluster's status.
pub fn run(a: EtcdArgs) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        let etcd = connect(&a).await?;
        let snap = admin::snapshot(&etcd, &a.cluster_name).await?;
        print!("{}", admin::render_status(&a.cluster_name, &snap));
        Ok(())
    })
}
