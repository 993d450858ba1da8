//! In-process cluster nodes for the cluster client's tests: real servers with partition
//! ownership, driven by hand instead of by etcd (the test plays the cluster manager).

#![allow(dead_code)] // each test binary uses its own part

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rangelock_client::cluster::{ClusterClient, ClusterOptions};
use rangelock_client::{AsyncClient, Endpoint, StatsBody};
use rangelock_server::ownership::{Fence, Ownership};
use rangelock_server::protocol::{
    ClusterMap, NodeInfo, PartitionOwner, PartitionState, Partitioning,
};
use rangelock_server::{Server, ServerConfig};

/// The partition count of the test clusters.
pub const PARTITIONS: u32 = 4;
/// The width of a partition: partition `p` is `[p·Q, (p+1)·Q)`.
pub const Q: u64 = 1 << 62;

/// One node: a server and its ownership.
pub struct Node {
    pub id: String,
    pub addr: String,
    pub own: Arc<Ownership>,
    pub server: Option<Server>,
}

impl Node {
    /// A plain session with this node.
    pub async fn session(&self) -> AsyncClient {
        AsyncClient::connect(&self.addr.parse::<Endpoint>().unwrap()).await.unwrap()
    }

    /// Stops the server (its sessions end: the clients see the connection close).
    pub fn kill(&mut self) {
        self.server.take().expect("running").shutdown();
    }
}

/// Nodes `ids` of a cluster of [`PARTITIONS`] partitions, owning nothing yet; their fences
/// stay open for the test.
pub struct Cluster {
    pub parts: Partitioning,
    pub nodes: Vec<Node>,
}

/// A partition's entry in a published map: owner node index, state, epoch.
pub type Owner = (Option<usize>, PartitionState, u64);

pub const UNOWNED: Owner = (None, PartitionState::Unowned, 0);

impl Cluster {
    pub fn start(ids: &[&str]) -> Cluster {
        Cluster::start_with_lease(ids, ServerConfig::default().lease)
    }

    /// With a session lease of `lease` on every node.
    pub fn start_with_lease(ids: &[&str], lease: Duration) -> Cluster {
        Cluster::start_with(ids, |_, c| c.lease = lease)
    }

    /// With node `i`'s configuration changed by `f(i, config)`.
    pub fn start_with(ids: &[&str], f: impl Fn(usize, &mut ServerConfig)) -> Cluster {
        let parts = Partitioning::new(PARTITIONS).unwrap();
        let nodes = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let own = Ownership::new(parts, id);
                let mut config =
                    ServerConfig { cluster: Some(own.clone()), ..ServerConfig::ephemeral() };
                f(i, &mut config);
                let server = Server::start(config).unwrap();
                own.fence().extend_until(Fence::now(), Duration::from_secs(600));
                let addr = server.tcp_addr().unwrap().to_string();
                Node { id: id.to_string(), addr, own, server: Some(server) }
            })
            .collect();
        Cluster { parts, nodes }
    }

    pub fn seeds(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    /// The map of `owners` (one per partition) at `revision`.
    pub fn map(&self, revision: u64, owners: [Owner; PARTITIONS as usize]) -> ClusterMap {
        let nodes = self.nodes.iter().map(|n| NodeInfo::new(&n.id, &n.addr).unwrap()).collect();
        let owners = owners
            .iter()
            .map(|&(node, state, epoch)| PartitionOwner {
                node: node.map(|i| i as u16),
                state,
                epoch,
            })
            .collect();
        ClusterMap::new(revision, self.parts, nodes, owners).unwrap()
    }

    /// Publishes the map on every node.
    pub fn publish(&self, revision: u64, owners: [Owner; PARTITIONS as usize]) {
        for n in &self.nodes {
            n.own.set_map(self.map(revision, owners));
        }
    }

    /// Publishes the map on node `i` only.
    pub fn publish_on(&self, i: usize, revision: u64, owners: [Owner; PARTITIONS as usize]) {
        self.nodes[i].own.set_map(self.map(revision, owners));
    }

    pub async fn client(&self, options: ClusterOptions) -> ClusterClient {
        ClusterClient::connect(&self.seeds(), options).await.unwrap()
    }

    /// Node `i`'s counters and entries.
    pub async fn stats(&self, i: usize) -> StatsBody {
        self.nodes[i].session().await.stats(100).await.unwrap()
    }
}

/// Serving owner `node` in `epoch`.
pub fn serving(node: usize, epoch: u64) -> Owner {
    (Some(node), PartitionState::Serving, epoch)
}

/// Owner `node` in its grace period in `epoch`.
pub fn grace(node: usize, epoch: u64) -> Owner {
    (Some(node), PartitionState::Grace, epoch)
}

/// The map after partition 0 of [`two_nodes`] moved from a to b: b in grace at epoch 20.
pub const MOVED: [Owner; 4] = [
    (Some(1), PartitionState::Grace, 20),
    (Some(1), PartitionState::Serving, 11),
    (Some(0), PartitionState::Serving, 12),
    (Some(1), PartitionState::Serving, 13),
];

/// Nodes a and b; a owns partitions 0 and 2 (epochs 10, 12), b owns 1 and 3 (11, 13).
pub fn two_nodes() -> Cluster {
    two_nodes_with(|_, _| {})
}

/// [`two_nodes`], with node `i`'s configuration changed by `f(i, config)`.
pub fn two_nodes_with(f: impl Fn(usize, &mut ServerConfig)) -> Cluster {
    let c = Cluster::start_with(&["a", "b"], f);
    c.nodes[0].own.acquire(0, 10, None);
    c.nodes[0].own.acquire(2, 12, None);
    c.nodes[1].own.acquire(1, 11, None);
    c.nodes[1].own.acquire(3, 13, None);
    c.publish(1, [serving(0, 10), serving(1, 11), serving(0, 12), serving(1, 13)]);
    c
}

/// A multi-threaded runtime: the client's tasks run on its workers while the test thread
/// plays the cluster manager (whose ownership changes block).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Polls `cond` until it holds; panics after `limit` with `what`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !cond().await {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The tokens of the locks held on a node, by range start.
pub fn held(stats: &StatsBody) -> Vec<(u64, u64, u64)> {
    stats.entries.iter().map(|e| (e.start, e.end, e.token)).collect()
}

/// A TCP proxy in front of `target` that can be frozen: from then on it forwards nothing
/// in either direction but keeps every connection open — what a client sees of a node
/// stopped with `SIGSTOP`. Returns its address and the switch. Runs on the caller's
/// runtime.
pub async fn freezable_proxy(target: String) -> (String, Arc<AtomicBool>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let frozen = Arc::new(AtomicBool::new(false));
    let pipe = |mut from: tokio::net::tcp::OwnedReadHalf,
                mut to: tokio::net::tcp::OwnedWriteHalf,
                frozen: Arc<AtomicBool>| async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = from.read(&mut buf).await;
            if frozen.load(Ordering::SeqCst) {
                // Stopped: pass on nothing — no data, no close.
                std::future::pending::<()>().await;
            }
            let n = match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let switch = frozen.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&target).await else { return };
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(pipe(cr, sw, frozen.clone()));
            tokio::spawn(pipe(sr, cw, frozen.clone()));
        }
    });
    (addr, switch)
}
