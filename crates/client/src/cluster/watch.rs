//! Watching node connections: a task per connection turns its loss and its notices into
//! reclaims (and a pushed map change into a map read that wakes the pauses between
//! retries), and [`placed`] catches what that task may have scanned for before a new
//! piece was registered.

use std::future::Future;
use std::sync::{Arc, Weak};

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use super::client::Shared;
use super::nodes::NodeConn;
use super::{reclaim, relocate};
use crate::cached::client::Inner;
use crate::connection::Notice;
use crate::ConnectionLoss;

/// Watches connection `serial` to `addr` (with its cached side, if any) until it is gone
/// (or the client is): a notice reclaims the pieces of its partitions that lived on the
/// connection, and carries its kept extents in use to the new owner; the loss does it for
/// all of them. Holds the client and the cached side weakly (a cached side with locks to
/// carry lives in their guards), and the connection not at all.
pub(super) async fn watch(
    shared: Weak<Shared>,
    (addr, serial, cache): (String, u64, Option<Weak<Inner>>),
    lost: impl Future<Output = Option<crate::ConnectionLoss>>,
    mut notices: broadcast::Receiver<Notice>,
) {
    tokio::pin!(lost);
    loop {
        let partition = tokio::select! {
            // Notices read before the loss first: they name fewer pieces.
            biased;
            n = notices.recv() => match n {
                Ok(n) if n.map_revision().is_some() => {
                    let (Some(shared), Some(revision)) = (shared.upgrade(), n.map_revision())
                    else {
                        return;
                    };
                    // Off this task: the notices behind it must not wait for a MAP.
                    let addr = addr.clone();
                    tokio::spawn(async move { shared.map_pushed(&addr, revision).await });
                    continue;
                }
                Ok(n) => n.partition,
                // Notices were missed: any partition may have been given up.
                Err(RecvError::Lagged(_)) => None,
                // The connection and every handle to it are gone: so are its pieces.
                Err(RecvError::Closed) => return,
            },
            loss = &mut lost => {
                if let Some(shared) = shared.upgrade() {
                    shared.nodes.forget(&addr, serial);
                    let cache = cache.as_ref().and_then(Weak::upgrade);
                    gone(&shared, (&addr, serial, cache.as_ref()), loss.as_ref());
                }
                return;
            }
        };
        let Some(shared) = shared.upgrade() else { return };
        let cache = cache.as_ref().and_then(Weak::upgrade);
        given_up(&shared, (&addr, serial, cache.as_ref()), partition);
    }
}

/// A connection: its address, serial and cached side.
type Conn<'a> = (&'a str, u64, Option<&'a Arc<Inner>>);

/// The node gave `partition` up (`None`: all its partitions): the guards' pieces there
/// that lived on the connection are reclaimed, and its cached side's locks carried.
fn given_up(shared: &Arc<Shared>, (addr, serial, cache): Conn<'_>, partition: Option<u32>) {
    reclaim::node_notice(shared, addr, serial, partition);
    if let Some(cache) = cache {
        relocate::given_up(shared, cache, partition);
    }
}

/// The connection is gone (`loss` says how): as [`given_up`], for everything on it.
fn gone(shared: &Arc<Shared>, (addr, serial, cache): Conn<'_>, loss: Option<&ConnectionLoss>) {
    reclaim::node_lost(shared, addr, serial, loss);
    if let Some(cache) = cache {
        relocate::session_lost(shared, cache, addr, loss);
    }
}

/// A piece of `partition` was just placed on `conn` and registered. The watcher may have
/// handled a notice or the loss of the connection before the registration, so the piece
/// checks for itself: `notices` was subscribed before its `LOCK` or `RECLAIM` was sent.
pub(super) fn placed(
    shared: &Arc<Shared>,
    conn: &NodeConn,
    partition: u32,
    mut notices: broadcast::Receiver<Notice>,
) {
    let mut noticed = false;
    loop {
        match notices.try_recv() {
            Ok(n) => noticed |= n.covers(partition),
            Err(TryRecvError::Lagged(_)) => noticed = true,
            Err(TryRecvError::Empty | TryRecvError::Closed) => break,
        }
    }
    let me = (conn.addr.as_str(), conn.serial, conn.cache.as_ref());
    if noticed {
        given_up(shared, me, Some(partition));
    }
    if !conn.client.is_connected() {
        gone(shared, me, conn.client.loss().as_ref());
    }
}
