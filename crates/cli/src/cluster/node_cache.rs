//! The nodes of a cluster as last read from etcd, kept on disk for when etcd cannot be
//! reached.
//!
//! `lock --cluster http://…` and `stat --cluster http://…` read the live nodes from
//! etcd, then talk to the nodes only (they serve the cluster map themselves). The nodes
//! keep granting while etcd is down, until their fences close (an etcd TTL), so a client
//! that cannot reach etcd uses the nodes it read last time instead of failing.
//!
//! One small JSON file per cluster name and etcd endpoints, in
//! `$XDG_CACHE_HOME/rangelock/` (default `~/.cache/rangelock/`), written after each
//! successful read (to a temporary file, then renamed). A cached address that is no
//! longer a node fails to connect and the client tries the next; the client always
//! follows the newest map the nodes serve. Failing to write the cache only loses the
//! fallback.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// What the cache file holds.
#[derive(Debug, Serialize, Deserialize)]
struct Cached {
    cluster: String,
    etcd: Vec<String>,
    nodes: Vec<String>,
    /// When etcd was read, in ms since the Unix epoch.
    read_unix_ms: u64,
}

/// The cache entry of cluster `cluster` reached through etcd endpoints `etcd`.
#[derive(Debug)]
pub(crate) struct NodeCache {
    path: Option<PathBuf>,
    cluster: String,
    etcd: Vec<String>,
}

impl NodeCache {
    /// The entry for `cluster` at `etcd` (no file is touched yet). Without a cache
    /// directory (neither `$XDG_CACHE_HOME` nor `$HOME` set) nothing is kept.
    pub(crate) fn new(etcd: &[String], cluster: &str) -> NodeCache {
        let dir = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        let safe = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
                .collect()
        };
        let mut endpoints: Vec<String> = etcd.to_vec();
        endpoints.sort();
        let name = format!("nodes-{}-{}.json", safe(cluster), safe(&endpoints.join("+")));
        NodeCache {
            path: dir.map(|d| d.join("rangelock").join(name)),
            cluster: cluster.to_owned(),
            etcd: endpoints,
        }
    }

    /// Where the entry lives.
    pub(crate) fn path(&self) -> Option<&PathBuf> {
        self.path.as_ref()
    }

    /// Keeps `nodes`, best effort.
    pub(crate) fn store(&self, nodes: &[String]) {
        let Some(path) = &self.path else { return };
        let value = Cached {
            cluster: self.cluster.clone(),
            etcd: self.etcd.clone(),
            nodes: nodes.to_vec(),
            read_unix_ms: unix_ms(SystemTime::now()),
        };
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().expect("a file in a directory"))?;
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec(&value).expect("serializable"))?;
            std::fs::rename(&tmp, path)
        };
        if let Err(e) = write() {
            tracing::debug!(path = %path.display(), error = %e, "cannot keep the cluster's nodes");
        }
    }

    /// The nodes kept, and how long ago they were read from etcd.
    pub(crate) fn load(&self) -> Option<(Vec<String>, Duration)> {
        let bytes = std::fs::read(self.path.as_ref()?).ok()?;
        let c: Cached = serde_json::from_slice(&bytes).ok()?;
        if c.cluster != self.cluster || c.etcd != self.etcd || c.nodes.is_empty() {
            return None;
        }
        let age = unix_ms(SystemTime::now()).saturating_sub(c.read_unix_ms);
        Some((c.nodes, Duration::from_millis(age)))
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_per_cluster_and_endpoints_and_survive_a_round_trip() {
        let dir = std::env::temp_dir().join(format!("rangelock-node-cache-{}", std::process::id()));
        let entry = |etcd: &[&str], cluster: &str| {
            let etcd: Vec<String> = etcd.iter().map(|s| s.to_string()).collect();
            let mut c = NodeCache::new(&etcd, cluster);
            let name = c.path.as_ref().unwrap().file_name().unwrap().to_owned();
            c.path = Some(dir.join(name));
            c
        };
        let a = entry(&["http://127.0.0.1:2379", "http://10.0.0.2:2379"], "default");
        assert!(a.load().is_none());
        a.store(&["127.0.0.1:7001".into(), "127.0.0.1:7002".into()]);
        let (nodes, age) = a.load().unwrap();
        assert_eq!(nodes, ["127.0.0.1:7001", "127.0.0.1:7002"]);
        assert!(age < Duration::from_secs(60));
        // The same endpoints in another order: the same entry.
        let same = entry(&["http://10.0.0.2:2379", "http://127.0.0.1:2379"], "default");
        assert_eq!(same.path, a.path);
        assert!(same.load().is_some());
        // Another cluster name or other endpoints: another entry.
        assert!(entry(&["http://127.0.0.1:2379", "http://10.0.0.2:2379"], "other")
            .load()
            .is_none());
        assert!(entry(&["http://127.0.0.1:2379"], "default").load().is_none());
        let name = a.path.as_ref().unwrap().file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(name, "nodes-default-http___10.0.0.2_2379_http___127.0.0.1_2379.json");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
