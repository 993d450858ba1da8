//! `rangelock cluster status [--json]`: the nodes (alive or dead, lease left, last seen,
//! names live) and each partition (unit range, owner, epoch, phase); what each means is
//! `rangelock_cluster::admin`'s module docs, and docs/CLUSTER.md §5.

use std::time::Duration;

use rangelock_client::{AsyncClient, ConnectOptions, Endpoint};
use rangelock_cluster::admin;

use super::{with_etcd, EtcdArgs};
use crate::exit::Failure;

/// How long `status` waits for one node's counters; a node slower than that is shown
/// without them (`names ?`).
const NODE_STATS_LIMIT: Duration = Duration::from_secs(1);

/// Arguments of `rangelock cluster status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// How to reach the nodes for their names' counters (a node with an auth file needs
    /// the token).
    #[command(flatten)]
    connect: crate::connect::ConnectArgs,
    /// Print one JSON object (its fields: docs/CLUSTER.md §5) instead of the table.
    #[arg(long)]
    json: bool,
}

/// Reads and prints the status.
pub fn run(a: StatusArgs) -> Result<(), Failure> {
    let options = a.connect.options()?;
    let status = with_etcd(&a.etcd, async |etcd| {
        let mut status = admin::status(etcd, &a.etcd.cluster_name).await?;
        let mut asks = tokio::task::JoinSet::new();
        for (i, n) in status.nodes.iter().enumerate().filter(|(_, n)| n.alive) {
            let (addr, options) = (n.addr.clone(), options.clone());
            asks.spawn(async move { (i, names_of(&addr, &options).await) });
        }
        // A task that failed leaves its node's counts unread (`names ?`), not the rest.
        while let Some(joined) = asks.join_next().await {
            if let Ok((i, counts)) = joined {
                let n = &mut status.nodes[i];
                (n.names_live, n.named_locks) = counts.unzip();
            }
        }
        Ok(status)
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&status).expect("serializable"));
    } else {
        print!("{}", status.render());
    }
    Ok(())
}

/// A live node's names live and named locks, from its `STATS_NAMED` counters; `None`
/// if it did not answer within [`NODE_STATS_LIMIT`].
async fn names_of(addr: &str, options: &ConnectOptions) -> Option<(u64, u64)> {
    let ask = async {
        let endpoint: Endpoint = addr.parse().ok()?;
        let client = AsyncClient::connect_with(&endpoint, options).await.ok()?;
        let stats = client.stats(0).await.ok()?;
        Some((stats.counters.names_live, stats.counters.named_holders))
    };
    tokio::time::timeout(NODE_STATS_LIMIT, ask).await.ok().flatten()
}
