//! The callback task: runs each `CALLBACK` notice's recall, gives idle extents back, and
//! forgets every extent when the session is lost.
//!
//! Each callback runs in a task of its own, even two on one extent. One task for all of
//! them, in order (or one recall per extent at a time), could deadlock where uncached
//! locks do not: a recall waiting for a local holder of its part would hold up a later
//! callback for another part, which that holder's next lock (at the server, behind the
//! other session's waiter for that part) may need.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rangelock_proto::{Callback, Request, Status};
use tokio::sync::mpsc;

use super::client::Inner;
use super::handover::{GiveBack, Part, Recall, Target};
use crate::error::ConnectionLoss;

/// The task: until the session is lost or the client is gone.
pub(crate) async fn run(
    inner: Weak<Inner>,
    mut rx: mpsc::UnboundedReceiver<(u64, Callback)>,
    lost: impl Future<Output = Option<ConnectionLoss>>,
) {
    let idle = match inner.upgrade() {
        Some(i) => i.options.idle,
        None => return,
    };
    // Bounded above too: a far deadline would overflow the timer's clock.
    let period = (idle / 2).clamp(Duration::from_millis(10), Duration::from_secs(3600));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(lost);
    loop {
        tokio::select! {
            m = rx.recv() => {
                let Some((id, cb)) = m else { return };
                let Some(inner) = inner.upgrade() else { return };
                let part = Part { start: cb.start, end: cb.end, mode: cb.mode };
                tokio::spawn(async move { recall(&inner, id, part).await });
            }
            _ = tick.tick() => {
                let Some(inner) = inner.upgrade() else { return };
                give_back_idle(&inner, idle);
            }
            _ = &mut lost => {
                // A cluster client's watch carries the extents with local holders to the
                // partitions' new owners instead (`cluster/relocate.rs`).
                if let Some(inner) = inner.upgrade().filter(|i| !i.cluster) {
                    inner.handover.clear();
                }
                return;
            }
        }
    }
}

/// The callback for lock `id`: gives back `part` of every extent of the lock that holds
/// it in a conflicting mode.
async fn recall(inner: &Arc<Inner>, id: u64, part: Part) {
    loop {
        let target = match inner.handover.begin_recall(id, part) {
            Recall::Done | Recall::Deferred => return,
            Recall::Target(t) => t,
        };
        // Waits for the local holders of the part (new ones stay out: it is marked).
        let held = target.lock.lock_owned_async(target.part.clone()).await;
        let id = inner.client.core().next_id();
        let give_back = inner.handover.give_back(&target, held, id, |gb| send(inner, gb));
        finish(inner, &target, give_back).await;
    }
}

/// Gives back every extent unused for `idle` that has no local holder now.
fn give_back_idle(inner: &Arc<Inner>, idle: Duration) {
    for target in inner.handover.idle_candidates(Instant::now(), idle) {
        let e = &target.extent;
        let Ok(held) = target.lock.try_lock_owned(e.start..e.end) else { continue };
        let id = inner.client.core().next_id();
        if let Some((_, guards, _)) =
            inner.handover.give_back_whole(&target, held, id, |gb| send(inner, gb))
        {
            drop(guards);
        }
    }
}

/// With `give_back` sent: drops its local guards, ends the recall, and checks the answer.
async fn finish(
    inner: &Arc<Inner>,
    target: &Target,
    give_back: Option<(GiveBack, Vec<rangelock::OwnedRangeGuard>, Answer)>,
) {
    let Some((gb, guards, answer)) = give_back else {
        inner.handover.finish_recall(target);
        return;
    };
    // Sent: a local locker that gets the part now finds it uncovered and asks the server,
    // which sees the GIVE_BACK first.
    drop(guards);
    inner.handover.finish_recall(target);
    let Some(rx) = answer else { return };
    let Ok(r) = rx.await else { return };
    if !matches!(r.status, Status::Ok | Status::AlreadyReleased) {
        tracing::warn!(?gb, status = ?r.status, "GIVE_BACK refused; unlocking the whole extent");
        release_whole(inner, target, &gb).await;
    }
}

/// A `GIVE_BACK` the server refused (a split past the session's lock bound,
/// `TOO_MANY_LOCKS`): the server still holds the whole extent, and a waiter waits for it.
/// Forgets what is left of it (new local locks go to the server), waits for its local
/// holders and unlocks it whole.
async fn release_whole(inner: &Arc<Inner>, target: &Target, gb: &GiveBack) {
    inner.handover.forget(&target.name, &[gb.target, gb.id]);
    let held = target.lock.lock_owned_async(gb.extent.0..gb.extent.1).await;
    if let Err(err) = inner.client.core().unlock(gb.target).await {
        tracing::debug!(%err, id = gb.target, "unlocking a refused extent");
    }
    drop(held);
}

/// The receiver of a `GIVE_BACK`'s answer (`None`: the connection is gone).
type Answer = Option<tokio::sync::oneshot::Receiver<rangelock_proto::ResponseFrame>>;

/// Sends `GIVE_BACK` (it only queues it for the writer task: it never waits).
fn send(inner: &Inner, gb: &GiveBack) -> Answer {
    let core = inner.client.core();
    let rx = core.register(gb.id).ok()?;
    let used = inner.reports_use.then_some(gb.used);
    let (target, start, end) = (gb.target, gb.start, gb.end);
    let request = Request::GiveBack { target, start, end, downgrade: false, used };
    core.send(gb.id, request).ok()?;
    Some(rx)
}
