//! What a cluster node counts for its metrics beyond a single server's: locks reclaimed
//! at this node, and the manager's etcd requests (how many failed, how long each took).
//! The table counts reclaims (one relaxed add per reclaim, never on a `LOCK`'s path); the
//! manager records each etcd request (a few per second: a short lock is plenty). A
//! scrape reads them with the partitions' phases ([`crate::metrics`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::metrics::Histogram;

/// A cluster node's counters; see the module docs.
#[derive(Debug, Default)]
pub struct ClusterStats {
    reclaims: AtomicU64,
    etcd_errors: AtomicU64,
    etcd_latency: Mutex<Histogram>,
}

/// One reading of [`ClusterStats`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterStatsSnapshot {
    /// Locks reclaimed here (`RECLAIM` granted) since the start.
    pub reclaims: u64,
    /// etcd requests that failed (unreachable, timed out, refused, undecodable).
    pub etcd_errors: u64,
    /// The duration of every etcd request, failed ones included.
    pub etcd_latency: Histogram,
}

impl ClusterStats {
    /// Counts one lock reclaimed.
    pub(crate) fn reclaimed(&self) {
        self.reclaims.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one etcd request of the manager: how long it took, and whether it failed.
    pub fn etcd_request(&self, took: Duration, failed: bool) {
        if failed {
            self.etcd_errors.fetch_add(1, Ordering::Relaxed);
        }
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.etcd_latency.lock().unwrap_or_else(PoisonError::into_inner).observe(ns);
    }

    /// The counts now.
    pub fn snapshot(&self) -> ClusterStatsSnapshot {
        ClusterStatsSnapshot {
            reclaims: self.reclaims.load(Ordering::Relaxed),
            etcd_errors: self.etcd_errors.load(Ordering::Relaxed),
            etcd_latency: *self.etcd_latency.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }
}
