//! `rangelock lock --cluster NODES`: the lock is a cluster guard (docs/CLUSTER.md).
//!
//! A runtime thread keeps the cluster client alive while the command runs: it answers
//! the nodes' keepalives and reclaims the lock at a new owner after a failover or move.
//! The watcher learns of a lost guard through [`ClusterGuard::on_lost`].
//!
//! A NAME locks the range of that named resource: the cluster places it by the name's
//! hash, stripe by stripe (docs/CLUSTER.md, "Named resources"), and the command gets one
//! token per piece as for an unnamed range.

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

/// Locks `range` of resource `name` (`None`: the unnamed resource) through the cluster
/// reached at `given` (etcd endpoints or node addresses; see `crate::cluster::seeds`);
/// `what` names both in messages.
pub(crate) fn lock(
    (name, range, what): (Option<&NameArg>, &RangeArg, &str),
    given: &[String],
    cluster_name: &str,
    (mode, wait): (Mode, Wait),
    conflict: Conflict,
    connect: ConnectOptions,
) -> Result<Box<dyn Held>, Failure> {
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
    let locked = match name {
        None => rt.block_on(client.lock(range.range.clone(), mode, wait)),
        Some(n) => client
            .resource(&n.bytes)
            .and_then(|r| rt.block_on(r.lock(range.range.clone(), mode, wait))),
    };
    let guard = match locked {
        Ok(g) => g,
        Err(
            e @ (ClusterError::WouldBlock
            | ClusterError::TimedOut
            | ClusterError::Unavailable { .. }),
        ) => return Err(conflict.failure(what, e)),
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
