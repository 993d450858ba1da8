//! Carrying a cached cluster client's locks to a partition's new owner
//! (`docs/design/cached.md`, "In a cluster").
//!
//! A node session of a [`CachedClusterClient`](super::CachedClusterClient) holds kept
//! extents and exact grants, each in one partition (a node's grant never crosses one).
//! When the node gives a partition up (a `NOT_OWNER` or `FENCED` notice), or the session
//! is lost, the node no longer holds them for the client:
//!
//! 1. [`Handover::evict`](crate::cached::handover::Handover::evict) takes them out of the
//!    session's map at once: no new local lock starts in them, and a thread that wants
//!    the range asks the partition's owner, as every other client does.
//! 2. One with no local holder (its `try_lock` succeeds) is done with, after a failover:
//!    nobody needs it. After a move, it sits in the new owner's hand-over as a
//!    placeholder, which would hold its range until the grace period ends; so it is
//!    reclaimed and unlocked there at once.
//! 3. One with local holders is reclaimed at the new owner with its token, as a cluster
//!    guard's piece is (`reclaim.rs`: same window, same rounds, same refusals), through
//!    the client's session with that node. The node enters it as an ordinary hold, even
//!    for a caching session (the server's `lock_table.rs`, "Reclaimed locks of caching
//!    sessions"): the client's own later locks of the range, through that node, wait for
//!    it. When the last local holder is done, the client unlocks it.
//! 4. A reclaim refused, or not placed within the reclaim window, makes every guard inside
//!    the lock lost ([`CachedGuard::is_lost`](crate::CachedGuard::is_lost), with the
//!    reason); so does a session that ended because its lease lapsed. Their tokens are
//!    fenced: another client may hold the range now.
//!
//! The carrier is an ordinary [`ClusterGuard`] with one detached piece, so a carried lock
//! whose new node fails or moves the partition again is carried on, like any guard's.

use std::sync::Arc;

use rangelock_proto::name_hash;

use super::client::Shared;
use super::error::{LostCause, LostReason};
use super::guard::ClusterGuard;
use super::reclaim;
use crate::cached::client::Inner;
use crate::cached::handover::Evicted;
use crate::{ConnectionLoss, LossCause};

/// The node gave `partition` up (`None`: all of them): carry the session's locks there.
pub(super) fn given_up(shared: &Arc<Shared>, cache: &Arc<Inner>, partition: Option<u32>) {
    let evicted = cache.handover.evict(|p| partition.is_none_or(|q| q == p), false);
    carry(shared, evicted, true, None, false);
}

/// The session with the node at `addr` is gone (`loss` says how): carry all its locks, as
/// [`reclaim::node_lost`] does a cluster guard's pieces.
pub(super) fn session_lost(
    shared: &Arc<Shared>,
    cache: &Arc<Inner>,
    addr: &str,
    loss: Option<&ConnectionLoss>,
) {
    let evicted = cache.handover.evict(|_| true, true);
    if let Some(lapsed) = loss.filter(|l| l.lease_lapsed()) {
        // The node released them while this client was silent: another may hold them.
        let safe_until = lapsed.alive_at + lapsed.lease;
        for Evicted { held: x, .. } in evicted {
            let cause = LostCause::SessionLapsed;
            if let Some(lost) = &x.lost {
                lost.set(LostReason { partition: x.part, cause, safe_until });
            }
        }
        return;
    }
    let ask_old_owner = loss.is_none_or(|l| l.cause != LossCause::Unresponsive);
    carry(shared, evicted, false, Some(addr), ask_old_owner);
}

/// Carries `evicted` to their partitions' new owners (see the module docs); `moved`: the
/// node gave the partitions up (and handed their locks over), it did not fail.
fn carry(
    shared: &Arc<Shared>,
    evicted: Vec<Evicted>,
    moved: bool,
    avoid: Option<&str>,
    ask_old_owner: bool,
) {
    let mut carriers = Vec::new();
    for Evicted { lock, held: x, kept } in evicted {
        let idle = lock.try_lock_owned(x.range.clone()).is_ok();
        if idle && !moved {
            continue;
        }
        let name = (!x.name.is_empty()).then(|| (x.name.clone(), name_hash(&x.name)));
        let carrier = ClusterGuard::new(shared, x.range.clone(), x.mode, name);
        carrier.state().add_detached(x.part, x.range.clone(), x.token);
        if let Some(lost) = x.lost.clone() {
            carrier.on_lost(move |reason| lost.set(reason.clone()));
        }
        carriers.push(carrier.state().clone());
        let (partition, range) = (x.part, &x.range);
        tracing::info!(partition, ?range, idle, kept, "carrying a cached lock");
        let window = shared.options.reclaim_window;
        tokio::spawn(async move {
            // The local holders, if any (no new one starts: it is out of the map).
            let held = lock.lock_owned_async(x.range.clone()).await;
            if moved {
                // Reclaimed (or lost) before it is unlocked, even if its holders are done:
                // its placeholder would hold the range until the grace period ends.
                let _ = tokio::time::timeout(window, carrier.state().settle()).await;
            }
            // Unlocks it at the new owner, or stops its reclaim.
            drop(carrier);
            drop(held);
        });
    }
    reclaim::carry(shared, carriers, avoid, ask_old_owner);
}
