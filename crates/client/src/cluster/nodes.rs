//! The node connections of a cluster client: one [`AsyncClient`] (one session) per node
//! address, created on first use with the connect timeout and cached while it is up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rangelock_proto::Request;

use super::client::Shared;
use super::watch;
use crate::cached::client::Inner;
use crate::connection::AsyncClient;
use crate::endpoint::Endpoint;
use crate::error::ClientError;

/// A connection to one node. `serial` tells connections to the same address apart: a
/// piece records the serial of the session it lives in.
#[derive(Clone, Debug)]
pub(super) struct NodeConn {
    pub(super) addr: String,
    pub(super) serial: u64,
    pub(super) client: AsyncClient,
    /// A cached cluster client's: the session's kept extents and local locks.
    pub(super) cache: Option<Arc<Inner>>,
}

#[derive(Debug, Default)]
struct Slot {
    conn: Option<NodeConn>,
    /// Held while connecting, so concurrent users of a new address share one connection.
    connecting: Arc<tokio::sync::Mutex<()>>,
}

/// The cached connections, by address.
#[derive(Debug, Default)]
pub(super) struct NodePool {
    slots: Mutex<HashMap<String, Slot>>,
    next_serial: AtomicU64,
}

impl NodePool {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached connection to `addr`, while it is up.
    pub(super) fn cached(&self, addr: &str) -> Option<NodeConn> {
        let slots = self.lock();
        slots.get(addr)?.conn.clone().filter(|c| c.client.is_connected())
    }

    /// Addresses with a live connection.
    pub(super) fn live(&self) -> Vec<String> {
        let slots = self.lock();
        let live = |(addr, s): (&String, &Slot)| {
            s.conn.as_ref().is_some_and(|c| c.client.is_connected()).then(|| addr.clone())
        };
        slots.iter().filter_map(live).collect()
    }

    /// The cached sides of the live connections.
    pub(super) fn caches(&self) -> Vec<Arc<Inner>> {
        let slots = self.lock();
        let live =
            slots.values().filter_map(|s| s.conn.as_ref()).filter(|c| c.client.is_connected());
        live.filter_map(|c| c.cache.clone()).collect()
    }

    /// Drops connection `serial` to `addr` from the cache (it is gone).
    pub(super) fn forget(&self, addr: &str, serial: u64) {
        if let Some(slot) = self.lock().get_mut(addr) {
            if slot.conn.as_ref().is_some_and(|c| c.serial == serial) {
                slot.conn = None;
            }
        }
    }
}

/// The connection to the node at `addr`: the cached one while it is up, else a new one
/// (connect and handshake within the connect timeout), watched from then on
/// ([`watch::watch`]).
pub(super) async fn node(shared: &Arc<Shared>, addr: &str) -> Result<NodeConn, ClientError> {
    if let Some(conn) = shared.nodes.cached(addr) {
        return Ok(conn);
    }
    let gate = shared.nodes.lock().entry(addr.to_owned()).or_default().connecting.clone();
    let _connecting = gate.lock().await;
    if let Some(conn) = shared.nodes.cached(addr) {
        return Ok(conn);
    }
    let endpoint: Endpoint = addr.parse().map_err(|e: String| {
        ClientError::connect(
            &Endpoint::Tcp(addr.to_owned()),
            std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        )
    })?;
    let timeout = shared.options.connect_timeout;
    let connect = AsyncClient::connect_with(&endpoint, &shared.options.connect);
    let client = match tokio::time::timeout(timeout, connect).await {
        Ok(client) => client?,
        Err(_) => {
            let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
            return Err(ClientError::connect(&endpoint, e));
        }
    };
    let serial = shared.nodes.next_serial.fetch_add(1, Ordering::Relaxed);
    // Subscribed before any request goes out on the connection: no notice is missed.
    let (lost, notices) = (client.lost_signal(), client.notices());
    let cache = match shared.cache {
        Some(options) => {
            let start = Inner::start(client.clone(), options, true);
            match tokio::time::timeout(timeout, start).await {
                Ok(inner) => Some(inner?),
                Err(_) => {
                    let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "no CACHE_ON answer");
                    return Err(ClientError::connect(&endpoint, e));
                }
            }
        }
        None => None,
    };
    let conn = NodeConn { addr: addr.to_owned(), serial, client, cache };
    // Ask for the node's map changes (`MAP_CHANGED` notices), ahead of any other request:
    // the answer is not awaited, and a node that does not know the request answers
    // `UNKNOWN_OP` and pushes nothing.
    conn.client.send_and_forget(Request::WatchMap);
    let watched = (conn.addr.clone(), serial, conn.cache.as_ref().map(Arc::downgrade));
    tokio::spawn(watch::watch(Arc::downgrade(shared), watched, lost, notices));
    tracing::debug!(addr, serial, "connected to cluster node");
    shared.nodes.lock().entry(addr.to_owned()).or_default().conn = Some(conn.clone());
    Ok(conn)
}
