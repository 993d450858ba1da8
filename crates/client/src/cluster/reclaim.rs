//! Reclaiming the pieces a node dropped (see the module docs of [`super`] for the
//! protocol and the contract).
//!
//! One task per triggering event (a lost connection, a notice) reclaims every piece the
//! event detached, in rounds: re-read the map, send each piece's `RECLAIM` to its
//! partition's owner (all at once), back off, until every piece is placed or lost or the
//! window has passed.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use rangelock_proto::{token, ClusterMap, Mode, PartitionState, Status};
use tokio::sync::broadcast;
use tokio::task::JoinSet;

use super::backoff;
use super::client::Shared;
use super::error::{LostCause, LostReason};
use super::nodes::{self, NodeConn};
use super::state::GuardState;
use super::watch;
use crate::connection::Notice;
use crate::guard::AsyncLockGuard;

/// A piece to reclaim, and the owner a `NOT_OWNER` answer named (address, epoch).
#[derive(Debug)]
struct Item {
    guard: Arc<GuardState>,
    piece: usize,
    hint: Option<(String, u64)>,
}

/// What one `RECLAIM` attempt came to.
#[derive(Debug)]
enum Outcome {
    /// Accepted: the piece lives on `conn` now.
    Accepted(NodeConn, AsyncLockGuard, broadcast::Receiver<Notice>),
    /// `RECLAIM_REFUSED`: the piece, and so the guard, is lost.
    Refused,
    /// `NOT_OWNER`, perhaps naming the owner: try again.
    Redirected(Option<(String, u64)>),
    /// Unreachable, fenced, timed out…: try again.
    Retry,
}

/// Connection `serial` to `addr` is gone (`loss` says how): reclaim every piece that
/// lived on it.
///
/// A session that ended because its lease lapsed is not reclaimed: its guards are lost
/// ([`LostCause::SessionLapsed`]). Otherwise, unless the node stopped answering (a paused
/// or unreachable node), the `RECLAIM` also
/// goes to the partition's owner of the piece's own epoch: a live owner that ended our
/// session (its lease lapsed while this process was stopped) refuses it at once, and
/// the guard is reported lost instead of waiting for a new owner that never comes. A
/// dead owner refuses the connection, which costs nothing.
pub(super) fn node_lost(
    shared: &Arc<Shared>,
    addr: &str,
    serial: u64,
    loss: Option<&crate::ConnectionLoss>,
) {
    let guards = shared.registry.guards_on(serial);
    shared.registry.drop_conn(serial);
    if let Some(lapsed) = loss.filter(|l| l.lease_lapsed()) {
        // The node ended the session because this client was silent for a lease: it
        // released the locks, and may have granted them to others since. Reclaiming them
        // (at a later owner, after a move or failover) would resurrect a lock whose
        // token was superseded: the guard is lost, now.
        let safe_until = lapsed.alive_at + lapsed.lease;
        for guard in guards {
            for piece in guard.detach(serial, |_| true) {
                if let Some((partition, ..)) = guard.wanted(piece) {
                    let cause = LostCause::SessionLapsed;
                    guard.lose(LostReason { partition, cause, safe_until });
                }
            }
        }
        return;
    }
    let ask_old_owner = loss.is_none_or(|l| l.cause != crate::LossCause::Unresponsive);
    start(shared, guards, serial, |_| true, Some(addr), ask_old_owner);
}

/// The node at `addr` gave up `partition` (`None`: all its partitions): reclaim the
/// pieces there that lived on connection `serial`.
pub(super) fn node_notice(shared: &Arc<Shared>, addr: &str, serial: u64, partition: Option<u32>) {
    let guards = shared.registry.guards_on(serial);
    tracing::debug!(addr, serial, ?partition, "notice: partition given up");
    // The node said it gave the partition up: only a later owner can accept a reclaim.
    start(shared, guards, serial, |p| partition.is_none_or(|q| q == p), None, false);
}

fn start(
    shared: &Arc<Shared>,
    guards: Vec<Arc<GuardState>>,
    serial: u64,
    covers: impl Fn(u32) -> bool,
    avoid: Option<&str>,
    ask_old_owner: bool,
) {
    let mut items = Vec::new();
    for guard in guards {
        for piece in guard.detach(serial, &covers) {
            items.push(Item { guard: guard.clone(), piece, hint: None });
        }
    }
    if items.is_empty() {
        return;
    }
    tracing::info!(pieces = items.len(), ?avoid, "reclaiming cluster locks");
    tokio::spawn(run(shared.clone(), items, avoid.map(str::to_owned), ask_old_owner));
}

/// Reclaims the one piece of each of `guards`, added detached
/// ([`GuardState::add_detached`]): as after a lost connection (`avoid`, `ask_old_owner`: see
/// [`node_lost`]) or a notice (`None`, `false`).
pub(super) fn carry(
    shared: &Arc<Shared>,
    guards: Vec<Arc<GuardState>>,
    avoid: Option<&str>,
    ask_old_owner: bool,
) {
    let items: Vec<Item> =
        guards.into_iter().map(|guard| Item { guard, piece: 0, hint: None }).collect();
    if !items.is_empty() {
        tokio::spawn(run(shared.clone(), items, avoid.map(str::to_owned), ask_old_owner));
    }
}

/// Reclaims `items` until each is placed or lost (see the module docs). `avoid`: a node
/// that is gone, asked for the map last.
async fn run(
    shared: Arc<Shared>,
    mut items: Vec<Item>,
    avoid: Option<String>,
    ask_old_owner: bool,
) {
    let window = shared.options.reclaim_window;
    let started = Instant::now();
    let mut backoff = shared.backoff();
    let mut news = shared.map_news();
    loop {
        items.retain(|it| it.guard.wanted(it.piece).is_some());
        if items.is_empty() {
            return;
        }
        let elapsed = started.elapsed();
        if elapsed >= window {
            for it in &items {
                if let Some((partition, ..)) = it.guard.wanted(it.piece) {
                    let safe_until = it.guard.detached_at(it.piece);
                    let cause = LostCause::WindowMissed;
                    it.guard.lose(LostReason { partition, cause, safe_until });
                }
            }
            return;
        }
        // Changes pushed before this round's map cannot end the pause after it.
        news.borrow_and_update();
        let map = match shared.refresh_map(avoid.as_deref()).await {
            Ok(map) => map,
            Err(e) => {
                tracing::debug!(error = %e, "reclaim: no node gave a map; using the cached one");
                shared.map()
            }
        };
        let limit = shared.options.connect_timeout.min(window - elapsed);
        let mut attempts = JoinSet::new();
        for (k, it) in items.iter().enumerate() {
            let Some((partition, range, tok)) = it.guard.wanted(it.piece) else { continue };
            let Some(addr) = target(&map, partition, tok, it.hint.as_ref(), ask_old_owner) else {
                continue;
            };
            let (shared, mode) = (shared.clone(), it.guard.mode);
            let name = it.guard.name.as_ref().map(|(name, _)| name.clone());
            attempts.spawn(async move {
                let outcome = attempt(&shared, &addr, name, range, mode, tok, limit).await;
                (k, partition, outcome)
            });
        }
        let mut done = vec![false; items.len()];
        while let Some(joined) = attempts.join_next().await {
            // A panicked attempt is retried next round.
            let Ok((k, partition, outcome)) = joined else { continue };
            let it = &mut items[k];
            match outcome {
                Outcome::Accepted(conn, lock, notices) => {
                    match it.guard.reattach(it.piece, conn.serial, lock) {
                        Ok(()) => {
                            tracing::info!(partition, node = conn.addr, "lock reclaimed");
                            shared.registry.add(conn.serial, &it.guard);
                            watch::placed(&shared, &conn, partition, notices);
                        }
                        // Released (or lost) meanwhile: dropping it unlocks it.
                        Err(lock) => drop(lock),
                    }
                    done[k] = true;
                }
                Outcome::Refused => {
                    let safe_until = it.guard.detached_at(it.piece);
                    let cause = LostCause::ReclaimRefused;
                    it.guard.lose(LostReason { partition, cause, safe_until });
                    done[k] = true;
                }
                Outcome::Redirected(hint) => it.hint = hint,
                Outcome::Retry => {}
            }
        }
        let mut k = 0;
        items.retain(|_| {
            k += 1;
            !done[k - 1]
        });
        if items.is_empty() {
            return;
        }
        let left = window.saturating_sub(started.elapsed());
        backoff::sleep_or_news(&mut news, backoff.next_pause().min(left)).await;
    }
}

/// Where to send the `RECLAIM` of a piece of `partition` granted with `tok`: to an owner
/// of a later epoch than the token's (only such an owner accepts it), from the map or
/// from a `NOT_OWNER` hint, whichever knows the later epoch; with `ask_old_owner`, also
/// to the owner of the token's own epoch (which refuses it if it is alive: see
/// [`node_lost`]). `None` while neither names one (the old owner's lease has not expired
/// yet, nobody claimed the partition yet).
fn target(
    map: &ClusterMap,
    partition: u32,
    tok: u64,
    hint: Option<&(String, u64)>,
    ask_old_owner: bool,
) -> Option<String> {
    let granted_in = token::epoch(tok);
    let from_map = map
        .owner_of(partition)
        .filter(|(_, o)| {
            o.state != PartitionState::Unowned
                && (o.epoch > granted_in || ask_old_owner && o.epoch == granted_in)
        })
        .map(|(node, o)| (node.addr.clone(), o.epoch));
    let from_hint = hint.filter(|(_, epoch)| *epoch > granted_in).cloned();
    match (from_map, from_hint) {
        (Some(m), Some(h)) => Some(if h.1 > m.1 { h.0 } else { m.0 }),
        (m, h) => m.or(h).map(|(addr, _)| addr),
    }
}

/// One `RECLAIM` (`RECLAIM_NAMED` of `name`) of `range` with token `tok` at `addr`,
/// answered within `limit`.
async fn attempt(
    shared: &Arc<Shared>,
    addr: &str,
    name: Option<Arc<[u8]>>,
    range: Range<u64>,
    mode: Mode,
    tok: u64,
    limit: std::time::Duration,
) -> Outcome {
    let conn = match nodes::node(shared, addr).await {
        Ok(conn) => conn,
        Err(e) => {
            tracing::debug!(addr, error = %e, "reclaim: node unreachable");
            return Outcome::Retry;
        }
    };
    let notices = conn.client.notices();
    // On a timeout the future is dropped, which releases whatever the node accepts.
    let reclaim = conn.client.reclaim(name.as_ref(), range, mode, tok);
    match tokio::time::timeout(limit, reclaim).await {
        Ok(Ok(Ok(lock))) => Outcome::Accepted(conn, lock, notices),
        Ok(Ok(Err(r))) => match r.status {
            Status::ReclaimRefused => Outcome::Refused,
            Status::NotOwner => {
                let hint = r.owner.filter(|h| !h.addr.is_empty()).map(|h| (h.addr, r.value));
                Outcome::Redirected(hint)
            }
            status => {
                tracing::debug!(addr, %status, "reclaim: retrying");
                Outcome::Retry
            }
        },
        Ok(Err(e)) => {
            tracing::debug!(addr, error = %e, "reclaim: retrying");
            Outcome::Retry
        }
        Err(_) => {
            tracing::debug!(addr, ?limit, "reclaim: no answer; retrying");
            Outcome::Retry
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rangelock_proto::{NodeInfo, PartitionOwner, Partitioning};

    fn map(state: PartitionState, epoch: u64) -> ClusterMap {
        ClusterMap::new(
            1,
            Partitioning::new(1).unwrap(),
            vec![NodeInfo::new("b", "b:1").unwrap()],
            vec![PartitionOwner { node: Some(0), state, epoch }],
        )
        .unwrap()
    }

    #[test]
    fn a_reclaim_goes_only_to_an_owner_of_a_later_epoch() {
        let tok = token::pack(7, 3);
        // The map still names the old owner's epoch: wait.
        assert_eq!(target(&map(PartitionState::Serving, 7), 0, tok, None, false), None);
        assert_eq!(target(&map(PartitionState::Unowned, 9), 0, tok, None, false), None);
        let m = map(PartitionState::Grace, 8);
        assert_eq!(target(&m, 0, tok, None, false).as_deref(), Some("b:1"));
        // A hint of a later epoch than the map's wins; an older one does not.
        let hint = ("c:1".to_owned(), 9);
        let m = map(PartitionState::Grace, 8);
        assert_eq!(target(&m, 0, tok, Some(&hint), false).as_deref(), Some("c:1"));
        let m = map(PartitionState::Grace, 10);
        assert_eq!(target(&m, 0, tok, Some(&hint), false).as_deref(), Some("b:1"));
        let stale = ("c:1".to_owned(), 7);
        let m = map(PartitionState::Serving, 7);
        assert_eq!(target(&m, 0, tok, Some(&stale), false), None);
    }

    /// After a loss that was not a silent node, the owner of the token's own epoch is
    /// asked too: if it is alive it refuses (our session there ended), and the guard is
    /// reported lost at once.
    #[test]
    fn the_old_owner_is_asked_unless_it_stopped_answering() {
        let tok = token::pack(7, 3);
        let m = map(PartitionState::Serving, 7);
        assert_eq!(target(&m, 0, tok, None, true).as_deref(), Some("b:1"));
        assert_eq!(target(&m, 0, tok, None, false), None);
        // Never an owner of an earlier epoch, nor an unowned partition.
        assert_eq!(target(&map(PartitionState::Serving, 6), 0, tok, None, true), None);
        assert_eq!(target(&map(PartitionState::Unowned, 7), 0, tok, None, true), None);
    }
}
