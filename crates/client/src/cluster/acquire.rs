//! Acquiring a guard's pieces: one per partition, in ascending partition order, each at
//! its partition's owner, following redirects (see the module docs of [`super`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rangelock_proto::{op, PartitionState, Piece, ResponseFrame, Status, Wait};
use tokio::sync::{broadcast, watch as news};

use super::backoff::{self, Backoff};
use super::client::Shared;
use super::error::ClusterError;
use super::nodes::{self, NodeConn};
use super::state::GuardState;
use super::watch;
use crate::cached::CachedGuard;
use crate::connection::Notice;
use crate::error::ClientError;
use crate::guard::AsyncLockGuard;

/// A cached cluster lock's pieces as they are granted, by partition.
pub(super) type CachedPieces = Vec<(u32, CachedGuard)>;

/// Why an acquisition stopped.
#[derive(Debug)]
pub(super) enum Failure {
    /// A node answered `CROSSES_PARTITION`: the map's partitioning is not the node's.
    /// The caller re-reads the map and starts over.
    Crosses {
        /// The partition of the piece.
        partition: u32,
    },
    /// The lock fails.
    Error(ClusterError),
}

impl From<ClusterError> for Failure {
    fn from(e: ClusterError) -> Self {
        Failure::Error(e)
    }
}

/// Acquires every piece of `state`'s range, in ascending partition order, adding each to
/// `state` as it is granted. On failure the pieces already added are the caller's to
/// release. `deadline`: the end of a [`Wait::Timeout`]. With `cached`, the pieces are
/// locks of the nodes' cached sessions, added there (`state` only says what to lock).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    state: &Arc<GuardState>,
    mut cached: Option<&mut CachedPieces>,
    wait: Wait,
    deadline: Option<Instant>,
) -> Result<(), Failure> {
    let map = shared.map();
    let parts = map.partitioning().map_err(|e| ClusterError::BadMap(e.to_string()))?;
    let (start, end) = (state.range.start, state.range.end);
    let pieces: Box<dyn Iterator<Item = Piece> + Send> = match &state.name {
        None => Box::new(parts.split(start, end)),
        // A named range: in ascending unit order, stripe by stripe (every client takes
        // one name's pieces in the same order, so none deadlocks).
        Some((_, hash)) => Box::new(parts.split_named(*hash, start, end)),
    };
    for piece in pieces {
        let (backoff, news) = (shared.backoff(), shared.map_news());
        let cached = cached.as_deref_mut();
        Piecewise { shared, state, cached, piece, wait, deadline, backoff, news }.run().await?;
    }
    Ok(())
}

/// The acquisition of one piece.
struct Piecewise<'a> {
    shared: &'a Arc<Shared>,
    state: &'a Arc<GuardState>,
    cached: Option<&'a mut CachedPieces>,
    piece: Piece,
    wait: Wait,
    deadline: Option<Instant>,
    backoff: Backoff,
    /// Map changes pushed by nodes: a pause ends at the next one.
    news: news::Receiver<u64>,
}

impl Piecewise<'_> {
    async fn run(mut self) -> Result<(), Failure> {
        let p = self.piece.partition;
        let mut redirects = 0u32;
        // The latest epoch of the partition's owner the client has heard of.
        let mut known_epoch = 0u64;
        // An owner a NOT_OWNER answer named, with a later epoch than any known.
        let mut hinted: Option<String> = None;
        // A try gives up on an unavailable owner after one re-read of the map.
        let mut reread = false;
        loop {
            let map = self.shared.map();
            known_epoch = known_epoch.max(map.owners.get(p as usize).map_or(0, |o| o.epoch));
            let owner = map
                .owner_of(p)
                .filter(|(_, o)| o.state != PartitionState::Unowned)
                .map(|(node, _)| node.addr.clone());
            let Some(addr) = hinted.take().or(owner) else {
                tracing::debug!(partition = p, "no owner known");
                self.unavailable(&mut reread, None).await?;
                continue;
            };
            let conn = match nodes::node(self.shared, &addr).await {
                Ok(conn) => conn,
                // The node is up but will not take this client: retrying cannot help.
                Err(e @ (ClientError::AuthRequired | ClientError::AuthFailed)) => {
                    return Err(ClusterError::Client(e).into())
                }
                Err(e) => {
                    tracing::debug!(partition = p, addr, error = %e, "owner unreachable");
                    self.unavailable(&mut reread, Some(&addr)).await?;
                    continue;
                }
            };
            let refusal = match self.request(&conn).await? {
                Ok(()) => return Ok(()),
                Err(r) => r,
            };
            match refusal.status {
                Status::WouldBlock => return Err(ClusterError::WouldBlock.into()),
                Status::TimedOut => return Err(ClusterError::TimedOut.into()),
                Status::NotOwner => {
                    redirects += 1;
                    if redirects > self.shared.options.max_redirects {
                        return Err(
                            ClusterError::TooManyRedirects { partition: p, redirects }.into()
                        );
                    }
                    let hint = refusal.owner.unwrap_or_default();
                    if !hint.addr.is_empty() && hint.addr != addr && refusal.value > known_epoch {
                        tracing::debug!(partition = p, from = addr, to = hint.addr, "redirected");
                        known_epoch = refusal.value;
                        hinted = Some(hint.addr);
                        continue;
                    }
                    // No better owner named: ask for the map, and give the cluster time
                    // to converge if it has nothing newer.
                    let before = map.revision;
                    let newer = match self.shared.refresh_map(None).await {
                        Ok(m) => m.revision > before,
                        Err(_) => false,
                    };
                    if !newer {
                        self.pause(None).await?;
                    }
                }
                Status::InGrace => {
                    if self.wait == Wait::Try {
                        return Err(ClusterError::Unavailable { partition: p }.into());
                    }
                    // Retry when the period is due to end (`value` ms), but poll at least
                    // as often as the backoff says: the owner ends it at a round of its
                    // manager, not to the millisecond, and an operator may end it early.
                    self.pause(Some(Duration::from_millis(refusal.value.max(1)))).await?;
                }
                Status::CrossesPartition => return Err(Failure::Crosses { partition: p }),
                Status::Fenced | Status::ShuttingDown => {
                    let status = refusal.status;
                    tracing::debug!(partition = p, addr, %status, "owner unavailable");
                    self.unavailable(&mut reread, Some(&addr)).await?;
                }
                Status::Cancelled => {
                    return Err(ClusterError::Client(ClientError::Cancelled).into())
                }
                status => return Err(ClusterError::Server(status).into()),
            }
        }
    }

    /// Sends the piece's `LOCK` to `conn` (giving up if the guard is lost meanwhile). A
    /// grant is added to the guard: `Ok(Ok(()))`; a refusal comes back whole; an
    /// unreachable node comes back as a `SHUTTING_DOWN` refusal (retried like one).
    async fn request(&mut self, conn: &NodeConn) -> Result<Result<(), ResponseFrame>, Failure> {
        let wait = match (self.wait, self.deadline) {
            // Whole milliseconds on the wire: round up, never give up early.
            (Wait::Timeout(_), Some(d)) => {
                let left = d.saturating_duration_since(Instant::now());
                Wait::Timeout(Duration::from_millis(left.as_nanos().div_ceil(1_000_000) as u64))
            }
            (w, _) => w,
        };
        let notices = conn.client.notices();
        // Changes pushed before this request cannot end the pause after its answer.
        self.news.borrow_and_update();
        let range = self.piece.start..self.piece.end;
        let name = self.state.name.as_ref().map(|(name, _)| name);
        if let (Some(pieces), Some(cache)) = (self.cached.as_deref_mut(), &conn.cache) {
            let (p, mode) = (self.piece.partition, self.state.mode);
            let name = name.cloned().unwrap_or_else(|| Arc::from(&[][..]));
            return match cache.lock_in(&name, range, mode, wait, p).await {
                Ok(Ok(g)) => {
                    pieces.push((p, g));
                    // A notice or the loss the watcher handled before the grant was kept.
                    watch::placed(self.shared, conn, p, notices);
                    Ok(Ok(()))
                }
                Ok(Err(r)) => Ok(Err(r)),
                Err(e) => self.client_error(e),
            };
        }
        let answer = tokio::select! {
            r = conn.client.lock_or_refusal_on(name, range, self.state.mode, wait) => r,
            // Dropping the request withdraws it.
            reason = self.state.wait_lost() => return Err(ClusterError::Lost(reason).into()),
        };
        match answer {
            Ok(Ok(lock)) => {
                self.place(conn, lock, notices)?;
                Ok(Ok(()))
            }
            Ok(Err(r)) => Ok(Err(r)),
            Err(e) => self.client_error(e),
        }
    }

    /// A lock call's error as the refusal it stands for (retried like one), or the
    /// failure of the lock.
    fn client_error(&self, e: ClientError) -> Result<Result<(), ResponseFrame>, Failure> {
        let refused = |status| Ok(Err(ResponseFrame::new(op::LOCK, 0, status, 0)));
        match e {
            // Poll grant mode: the outcome of a POLL.
            ClientError::WouldBlock => refused(Status::WouldBlock),
            ClientError::TimedOut => refused(Status::TimedOut),
            ClientError::Server(status) => refused(status),
            ClientError::ConnectionLost | ClientError::Io(_) | ClientError::Connect { .. } => {
                refused(Status::ShuttingDown)
            }
            e => Err(ClusterError::Client(e).into()),
        }
    }

    /// Adds a granted piece to the guard and registers it for reclaims.
    fn place(
        &self,
        conn: &NodeConn,
        lock: AsyncLockGuard,
        notices: broadcast::Receiver<Notice>,
    ) -> Result<(), ClusterError> {
        let p = self.piece.partition;
        if let Err(lock) = self.state.add_piece(p, conn.serial, lock) {
            drop(lock); // releases it
            return Err(match self.state.lost_reason() {
                Some(reason) => ClusterError::Lost(reason),
                None => ClusterError::Client(ClientError::Cancelled),
            });
        }
        self.shared.registry.add(conn.serial, self.state);
        watch::placed(self.shared, conn, p, notices);
        Ok(())
    }

    /// The owner is unknown, unreachable or fenced: a try re-reads the map once, then
    /// fails with `Unavailable`; a wait re-reads the map and backs off.
    async fn unavailable(&mut self, reread: &mut bool, avoid: Option<&str>) -> Result<(), Failure> {
        if self.wait == Wait::Try {
            if *reread {
                return Err(ClusterError::Unavailable { partition: self.piece.partition }.into());
            }
            *reread = true;
            let _ = self.shared.refresh_map(avoid).await;
            return Ok(());
        }
        let _ = self.shared.refresh_map(avoid).await;
        self.pause(None).await
    }

    /// Sleeps the next backoff step (at most `cap`), but not past the deadline, and no
    /// longer than until a node pushes a map change; fails with `TimedOut` if the deadline
    /// has passed.
    async fn pause(&mut self, cap: Option<Duration>) -> Result<(), Failure> {
        let mut pause = self.backoff.next_pause();
        if let Some(cap) = cap {
            pause = pause.min(cap);
        }
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClusterError::TimedOut.into());
            }
            pause = pause.min(left);
        }
        backoff::sleep_or_news(&mut self.news, pause).await;
        Ok(())
    }
}
