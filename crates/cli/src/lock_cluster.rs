//! `rangelock lock --cluster NODES`: the lock is a cluster guard (docs/CLUSTER.md).
//!
//! A runtime thread keeps the cluster client alive while the command runs: it answers
//! the nodes' keepalives and reclaims the lock at a new owner after a failover or move.
//! The watcher learns of a lost guard through [`ClusterGuard::on_lost`].
//!
//! Named resources are not served through a cluster yet (docs/design/names.md, "Still to
//! build", 6): a NAME is refused before anything connects.

use std::sync::mpsc;
use std::time::Instant;

use anyhow::anyhow;
use rangelock_client::cluster::{ClusterClient, ClusterError, ClusterGuard, ClusterOptions};
use rangelock_client::{ConnectOptions, Mode, Wait};

use crate::exit::{self, Failure};
use crate::lock::{Conflict, Held};
use crate::name_arg::NameArg;
use crate::range_arg::RangeArg;

/// A held cluster guard, with the runtime its client runs on.
struct ClusterLock {
    rt: tokio::runtime::Runtime,
    // Kept alive while the guard is held: its tasks reclaim the guard.
    _client: ClusterClient,
    guard: ClusterGuard,
    lost: std::sync::Mutex<Option<mpsc::Receiver<String>>>,
}

impl Held for ClusterLock {
    fn env(&self) -> Vec<(&'static str, String)> {
        let pieces = self.guard.pieces();
        let all: Vec<String> = pieces
            .iter()
            .map(|p| format!("{}..{}={}", p.range.start, p.range.end, p.token))
            .collect();
        let mut env = vec![("RANGELOCK_TOKENS", all.join(" "))];
        if let [one] = pieces.as_slice() {
            env.push(("RANGELOCK_TOKEN", one.token.to_string()));
        }
        env
    }

    fn watcher(&self) -> Box<dyn FnOnce() -> String + Send> {
        let rx = self.lost.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        Box::new(move || match rx.and_then(|rx| rx.recv().ok()) {
            Some(why) => why,
            // The guard is gone without a loss: block forever (the process exits).
            None => loop {
                std::thread::park();
            },
        })
    }

    fn release(self: Box<Self>, what: &str, prog: &str) -> Result<(), Failure> {
        let ended = Instant::now();
        let ClusterLock { rt, guard, .. } = *self;
        match rt.block_on(guard.unlock()) {
            Ok(()) => Ok(()),
            // Lost, but no node can have granted the range to anyone else before the
            // command ended: it ran under the lock, and its status stands.
            Err(ClusterError::Lost(r)) if ended <= r.safe_until => {
                eprintln!(
                    "rangelock: warning: lock {what} lost after {prog} ended ({r}); no one else \
                     can have held it while {prog} ran"
                );
                Ok(())
            }
            Err(ClusterError::Lost(r)) => {
                Err(Failure::new(exit::LOCK_LOST, anyhow!("lock {what} lost as {prog} ended: {r}")))
            }
            Err(e) => Err(Failure::new(exit::SOFTWARE, e).context(format!("releasing {what}"))),
        }
    }
}

/// Locks `range` through the cluster reached at `given` (etcd endpoints or node
/// addresses; see `crate::cluster::seeds`). A `name` is refused ([`exit::USAGE`]): the
/// cluster serves only the unnamed resource so far.
pub(crate) fn lock(
    (name, range): (Option<&NameArg>, &RangeArg),
    given: &[String],
    cluster_name: &str,
    (mode, wait): (Mode, Wait),
    conflict: Conflict,
    connect: ConnectOptions,
) -> Result<Box<dyn Held>, Failure> {
    if let Some(name) = name {
        return Err(Failure::new(
            exit::USAGE,
            anyhow!(
                "named resources are not served through a cluster yet: lock {range} of {name} \
                 on one server (--server), or leave the name out to lock {range} through the \
                 cluster"
            ),
        ));
    }
    let what = range.to_string();
    crate::cluster::is_etcd(given).map_err(|e| Failure::new(exit::USAGE, anyhow!(e)))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("rangelock-cluster-client")
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::SOFTWARE, e))?;
    let nodes = rt
        .block_on(crate::cluster::seeds(given, cluster_name))
        .map_err(|e| Failure::new(exit::UNAVAILABLE, e).context("finding the cluster's nodes"))?;
    let options = ClusterOptions { connect, ..ClusterOptions::default() };
    let client = rt.block_on(ClusterClient::connect(&nodes, options)).map_err(|e| {
        Failure::cluster(e, exit::UNAVAILABLE)
            .context(format!("connecting to the cluster at {}", nodes.join(",")))
    })?;
    let guard = match rt.block_on(client.lock(range.range.clone(), mode, wait)) {
        Ok(g) => g,
        Err(
            e @ (ClusterError::WouldBlock
            | ClusterError::TimedOut
            | ClusterError::Unavailable { .. }),
        ) => return Err(conflict.failure(&what, e)),
        Err(e) => {
            return Err(Failure::cluster(e, exit::SOFTWARE).context(format!("locking {what}")))
        }
    };
    let (tx, rx) = mpsc::channel();
    guard.on_lost(move |r| {
        let _ = tx.send(r.to_string());
    });
    Ok(Box::new(ClusterLock { rt, _client: client, guard, lost: std::sync::Mutex::new(Some(rx)) }))
}
