//! The synchronous core of the cached client: the map of kept extents, the in-process
//! [`RangeLock`] per resource, and the hand-over between local holders and a callback.
//!
//! It knows nothing of tokio or the connection, so the loom model (`loom_tests.rs`) runs
//! it as it ships; the async client ([`super::client`]) and the callback task
//! ([`super::callbacks`]) only add the waiting and the sending around it.
//!
//! # The protocol
//!
//! * **Local lock (fast path).** [`Handover::find`] says whether a kept extent covers the
//!   range in a compatible mode and is not being recalled; the caller then takes the
//!   resource's `RangeLock` over the range and calls [`Handover::confirm`], which checks
//!   again, under the map mutex, that a kept extent still covers it (a callback may have
//!   given it back in between). If not, the caller drops its local guard and retries.
//! * **Callback.** [`Handover::begin_recall`] marks the extent recalled (no new fast-path
//!   lock starts in it); the caller takes the `RangeLock` exclusively over the part wanted
//!   (this waits for the local holders of the part) and calls [`Handover::give_back`],
//!   which, under the map mutex, looks at the extent as it is now, `try_lock`s the rest of
//!   it on each side, chooses what to give back (the part plus every side without a local
//!   holder) and updates the map *while the local guards are held*. Recalls of one extent
//!   may run at once: each gives back what is still there of its part, and sends its
//!   `GIVE_BACK` under the map mutex, so the server sees them in the order they changed
//!   the map. The caller then drops the guards and calls
//!   [`Handover::finish_recall`]. A local locker that waited for the `RangeLock` over a
//!   part given back finds it uncovered in `confirm` and goes to the server, where its
//!   request queues behind the other session's.
//!
//! So a local guard over the part is either granted before the callback took the part
//! (and dropped before `GIVE_BACK` is sent), or refused by `confirm` after.
//!
//! * **Eviction** (a cluster client, `super::relocate`). When the node gave up a
//!   partition, or the session is gone, [`Handover::evict`] takes every kept extent and
//!   every exact grant of the affected partitions out of the map at once: no new local
//!   lock starts in them (`confirm` finds nothing), and the caller learns, from the local
//!   lock, which still have local holders to carry to the partition's new owner.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rangelock::{Mode, OwnedRangeGuard, RangeLock};

#[cfg(not(loom))]
use crate::cluster::LostReason;
/// The loom build has no cluster client.
#[cfg(loom)]
type LostReason = ();

#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

/// A resource's local lock: the default one (under loom, with the short skip list that
/// loom builds of `rangelock` take).
fn new_local_lock() -> RangeLock {
    #[cfg(not(loom))]
    return RangeLock::new();
    #[cfg(loom)]
    return RangeLock::builder().max_height(2).build();
}

/// A resource's name; empty for the unnamed resource.
pub(crate) type Name = Arc<[u8]>;

/// Set once a lock the server held for this session is lost while local guards are
/// inside it (a cluster client could not carry it to a partition's new owner); shared by
/// the extent or exact grant and its guards. A cluster client's only: a single server's
/// locks have `None`, so its fast path touches no shared count for it.
pub(crate) type Lost = Arc<LostCell>;

/// See [`Lost`]: the reason, set once, and a wake-up for those waiting for it.
#[derive(Debug, Default)]
pub(crate) struct LostCell {
    reason: OnceLock<LostReason>,
    #[cfg(not(loom))]
    told: tokio::sync::Notify,
}

impl LostCell {
    /// Sets the reason (the first one wins) and wakes the waiters.
    pub(crate) fn set(&self, reason: LostReason) {
        if self.reason.set(reason).is_ok() {
            #[cfg(not(loom))]
            self.told.notify_waiters();
        }
    }

    /// The reason, once set.
    pub(crate) fn get(&self) -> Option<&LostReason> {
        self.reason.get()
    }

    /// Completes with the reason once it is set.
    #[cfg(not(loom))]
    pub(crate) async fn wait(&self) -> LostReason {
        loop {
            let told = self.told.notified();
            tokio::pin!(told);
            // Registered before the check, so a reason set in between still wakes us.
            told.as_mut().enable();
            if let Some(reason) = self.get() {
                return reason.clone();
            }
            told.await;
        }
    }
}

/// Whether a hold in `have` serves a lock in `want` (exclusive serves both).
pub(crate) fn serves(have: Mode, want: Mode) -> bool {
    have == Mode::Exclusive || want == Mode::Shared
}

/// Whether holds in `a` and `b` conflict.
fn conflict(a: Mode, b: Mode) -> bool {
    a == Mode::Exclusive || b == Mode::Exclusive
}

/// A kept extent: a lock the server granted as cached, which this client holds at the
/// server while no local lock is inside it.
#[derive(Clone, Debug)]
pub(crate) struct Extent {
    /// First unit.
    pub(crate) start: u64,
    /// One past the last unit.
    pub(crate) end: u64,
    /// How it is held at the server.
    pub(crate) mode: Mode,
    /// The request id that names it at the server (its fencing token was noted with
    /// [`Handover::note_grant`]: guards take [`Handover::high`]).
    pub(crate) id: u64,
    /// When a local lock inside it last started or ended.
    pub(crate) last_use: Instant,
    /// How many local locks it served since its grant (a split's parts keep the count);
    /// a `GIVE_BACK` tells the server (`used`).
    pub(crate) used: u32,
    /// The fencing token the server granted it with (a split's parts keep it): what a
    /// `RECLAIM` of it names.
    pub(crate) token: u64,
    /// The partition it lies in (0 for a single server): a node's grant never crosses one.
    pub(crate) part: u32,
    /// Whether it, and so every guard inside it, was lost (a cluster client's).
    pub(crate) lost: Option<Lost>,
}

/// A lock the server holds for this session, as a cluster client carries it: an exact
/// grant (one the server did not let the client keep, or an ordinary `LOCK`'s in a
/// cluster, held for one guard, which also holds the local lock over it), or an evicted
/// kept extent.
#[derive(Clone, Debug)]
pub(crate) struct Exact {
    /// Its resource.
    pub(crate) name: Name,
    /// The range the server holds.
    pub(crate) range: Range<u64>,
    /// How it is held.
    pub(crate) mode: Mode,
    /// Its fencing token.
    pub(crate) token: u64,
    /// Its partition.
    pub(crate) part: u32,
    /// Whether it, and every guard inside it, was lost (a cluster client's).
    pub(crate) lost: Option<Lost>,
}

/// What [`Handover::settle`] records.
#[derive(Debug)]
pub(crate) enum Grant {
    /// Nothing: refused, withdrawn.
    None,
    /// A kept extent.
    Kept(Extent),
    /// An exact grant, under its lock id.
    Exact(Exact),
}

/// A lock [`Handover::evict`] took out of the map: the server no longer holds it in this
/// session (the node gave its partition up, or the session is gone).
#[derive(Debug)]
pub(crate) struct Evicted {
    /// Its resource's local lock: held over the range while a local guard is inside it.
    pub(crate) lock: Arc<RangeLock>,
    /// The lock.
    pub(crate) held: Exact,
    /// A kept extent (`false`: an exact grant, whose own guard holds the local lock).
    pub(crate) kept: bool,
}

/// The part of a lock another session wants (a `CALLBACK` notice's body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// First unit wanted.
    pub(crate) start: u64,
    /// One past the last unit wanted.
    pub(crate) end: u64,
    /// How the other session wants it.
    pub(crate) mode: Mode,
}

/// An extent being recalled: what [`Handover::begin_recall`] picked (or the idle pass).
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// Its resource.
    pub(crate) name: Name,
    /// The resource's local lock.
    pub(crate) lock: Arc<RangeLock>,
    /// The extent as it was when picked.
    pub(crate) extent: Extent,
    /// The part to give back at least (inside the extent).
    pub(crate) part: Range<u64>,
    /// The lock id the extent's family descends from (splits keep it).
    root: u64,
    /// The recall's mark (0: none, the idle pass).
    mark: u64,
}

/// A `GIVE_BACK` to send: release `[start, end)` of lock `target`; the request's own id is
/// `id` (it names the right part after a split).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GiveBack {
    /// The request id of the `GIVE_BACK` itself.
    pub(crate) id: u64,
    /// The extent's lock id.
    pub(crate) target: u64,
    /// First unit given back.
    pub(crate) start: u64,
    /// One past the last unit given back.
    pub(crate) end: u64,
    /// The extent as the server holds it until this `GIVE_BACK`: `(start, end)`.
    pub(crate) extent: (u64, u64),
    /// The local locks the extent served ([`Extent::used`]).
    pub(crate) used: u32,
}

/// What [`Handover::begin_recall`] found for a callback.
#[derive(Debug)]
pub(crate) enum Recall {
    /// Nothing (more) to do: the lock is gone, or no extent of it overlaps the part in a
    /// conflicting mode.
    Done,
    /// The lock's `LOCK_CACHED` answer is not settled yet: the callback is kept and
    /// returned by [`Handover::settle`].
    Deferred,
    /// Give this back.
    Target(Target),
}

/// One resource: its local lock, its kept extents by `(start, id)`, and the recalls in
/// progress (each marks the extent it started on: no fast-path lock starts in it).
#[derive(Debug)]
struct Resource {
    lock: Arc<RangeLock>,
    extents: BTreeMap<(u64, u64), Extent>,
    recalls: Vec<(u64, Range<u64>)>,
}

impl Resource {
    /// Whether a recall in progress marks (part of) `e`.
    fn recalled(&self, e: &Extent) -> bool {
        self.recalls.iter().any(|(_, r)| r.start < e.end && e.start < r.end)
    }
}

#[derive(Debug, Default)]
struct State {
    resources: HashMap<Name, Resource>,
    /// Each kept extent's resource and start, by lock id.
    by_id: HashMap<u64, (Name, u64)>,
    /// The lock ids of a split: each right part's id, and the id of the extent it came
    /// from (a callback sent before the split names the left part's id).
    family: HashMap<u64, u64>,
    /// `LOCK_CACHED`s sent whose answer is not settled yet, with the callbacks that came
    /// for them meanwhile.
    inflight: HashMap<u64, Vec<Part>>,
    /// The exact grants whose guards live, by lock id.
    exact: HashMap<u64, Exact>,
    /// The highest fencing token of any grant the session has received, per partition
    /// ([`Handover::high`]).
    high: HashMap<u32, u64>,
    /// The session is gone: nothing is kept any more.
    lost: bool,
    /// The last recall mark handed out.
    marks: u64,
}

impl State {
    /// The family root of lock `id`: the id of the grant it was split from.
    fn root(&self, mut id: u64) -> u64 {
        while let Some(&up) = self.family.get(&id) {
            id = up;
        }
        id
    }

    fn remove(&mut self, name: &Name, start: u64, id: u64) -> Option<Extent> {
        let r = self.resources.get_mut(name)?;
        let e = r.extents.remove(&(start, id))?;
        self.by_id.remove(&id);
        if self.by_id.is_empty() {
            // No extent left: no callback can name a split's part any more.
            self.family.clear();
        }
        Some(e)
    }

    /// Forgets resource `name` if nothing uses it: no extent, and no one holds its local
    /// lock (clones are made under the state mutex, so none can appear meanwhile).
    fn prune(&mut self, name: &Name) {
        let unused = self
            .resources
            .get(name)
            .is_some_and(|r| r.extents.is_empty() && Arc::strong_count(&r.lock) == 1);
        if unused {
            self.resources.remove(name);
        }
    }

    /// The extent of family `root` in resource `name` that overlaps `part` and conflicts
    /// with `mode`, if any (a family's extents are disjoint).
    fn piece(&self, name: &Name, root: u64, part: &Range<u64>, mode: Mode) -> Option<Extent> {
        let r = self.resources.get(name)?;
        r.extents
            .range(..(part.end, 0))
            .map(|(_, e)| e)
            .find(|e| e.end > part.start && conflict(e.mode, mode) && self.root(e.id) == root)
            .cloned()
    }

    fn insert(&mut self, name: &Name, e: Extent) {
        self.by_id.insert(e.id, (name.clone(), e.start));
        let r = self.resources.get_mut(name).expect("a resource's lock is made before its extents");
        r.extents.insert((e.start, e.id), e);
    }
}

/// The map of kept extents and the local locks; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Handover {
    state: Mutex<State>,
}

impl Handover {
    /// A grant in partition `part` with `token` was received, before its local lock is
    /// taken.
    pub(crate) fn note_grant(&self, part: u32, token: u64) {
        let mut s = self.state();
        let high = s.high.entry(part).or_default();
        *high = (*high).max(token);
    }

    /// The token for a guard in partition `part` whose local lock was just taken: the
    /// highest token the session has been granted in the partition so far (which includes
    /// the guard's own grant or extent).
    ///
    /// The server orders a caching session's grants among themselves by nothing, and
    /// tokens count grants: two threads' grants may reach their local lock in the other
    /// order, and a thread in a kept extent may follow one that held a newer grant over
    /// the same units. A fencing store must see each unit's tokens rise in the order the
    /// units are held, so a guard takes the highest token issued to the session before
    /// it. That is safe: any other session's later holder of the units was granted them
    /// after this guard ended, with a token the server issued later, so a higher one.
    /// (`loom_tests.rs` checks the order.) Per partition: a node serves several, and
    /// tokens of different partitions (`epoch << 32 | seq`) are not comparable; a guard
    /// given a later epoch of another partition would make the fencing store refuse its
    /// own partition's next holder.
    ///
    /// The state mutex orders it: a later local holder of overlapping units took the
    /// local lock after an earlier one released it, and the earlier one's grant was noted
    /// before its local lock was taken. Read by [`Handover::confirm`] and
    /// [`Handover::settle`], under the mutex they take anyway.
    fn high(s: &State, part: u32) -> u64 {
        s.high.get(&part).copied().unwrap_or(0)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The local lock of resource `name` (made on first use; it lives as long as the
    /// client).
    pub(crate) fn local_lock(&self, name: &Name) -> Arc<RangeLock> {
        let mut s = self.state();
        let r = s.resources.entry(name.clone()).or_insert_with(|| Resource {
            lock: Arc::new(new_local_lock()),
            extents: BTreeMap::new(),
            recalls: Vec::new(),
        });
        r.lock.clone()
    }

    /// A kept extent of `name` covering `range` in a mode that serves `mode`, skipping
    /// recalled ones if `recalled` is false: its id.
    fn covering(
        s: &mut State,
        name: &Name,
        range: &Range<u64>,
        mode: Mode,
        recalled: bool,
        now: Option<Instant>,
    ) -> Option<(u64, u32, Option<Lost>)> {
        let r = s.resources.get_mut(name)?;
        let Resource { extents, recalls, .. } = r;
        let marked = |e: &Extent| recalls.iter().any(|(_, x)| x.start < e.end && e.start < x.end);
        let hit = extents
            .range_mut(..=(range.start, u64::MAX))
            .rev()
            .map(|(_, e)| e)
            .find(|e| e.end >= range.end && serves(e.mode, mode) && (recalled || !marked(e)))?;
        if let Some(now) = now {
            hit.last_use = now;
            hit.used = hit.used.saturating_add(1);
        }
        Some((hit.id, hit.part, hit.lost.clone()))
    }

    /// Whether a kept extent covers `range` of `name` for `mode` and is not being
    /// recalled: the fast path may start.
    pub(crate) fn find(&self, name: &Name, range: &Range<u64>, mode: Mode) -> bool {
        Self::covering(&mut self.state(), name, range, mode, false, None).is_some()
    }

    /// With the local lock over `range` held: whether a kept extent still covers it for
    /// `mode` (recalled or not: the recall waits for this holder). Its id, the guard's
    /// token ([`Handover::high`]) and the extent's lost flag; it counts as used
    /// `now`.
    pub(crate) fn confirm(
        &self,
        name: &Name,
        range: &Range<u64>,
        mode: Mode,
        now: Instant,
    ) -> Option<(u64, u64, Option<Lost>)> {
        let mut s = self.state();
        let (id, part, lost) = Self::covering(&mut s, name, range, mode, true, Some(now))?;
        Some((id, Self::high(&s, part), lost))
    }

    /// A local lock over `range` of `name` ended `now` (its guard dropped): the extents it
    /// lay in were used; a resource left without extents or local holders is forgotten.
    pub(crate) fn released(&self, name: &Name, range: &Range<u64>, now: Instant) {
        let mut s = self.state();
        if let Some(r) = s.resources.get_mut(name) {
            for (_, e) in r.extents.range_mut(..(range.end, 0)) {
                if e.end > range.start {
                    e.last_use = now;
                }
            }
        }
        s.prune(name);
    }

    /// How many resources have a local lock (for tests).
    #[cfg(test)]
    pub(crate) fn resources(&self) -> usize {
        self.state().resources.len()
    }

    /// A `LOCK_CACHED` with id `id` is about to be sent: callbacks for it are kept until
    /// [`Handover::settle`].
    pub(crate) fn begin_flight(&self, id: u64) {
        self.state().inflight.insert(id, Vec::new());
    }

    /// The lock `id` is settled, with its local lock held: `grant` is its extent if the
    /// client keeps it, its exact grant, or nothing (refused, withdrawn). The callbacks
    /// that came for it meanwhile, to run now (none unless kept), and its guard's token
    /// ([`Handover::high`] of its partition; 0 for nothing); `None` if a grant could
    /// not be recorded because the session is gone (the server no longer holds it).
    pub(crate) fn settle(&self, id: u64, name: &Name, grant: Grant) -> Option<(Vec<Part>, u64)> {
        let mut s = self.state();
        let pending = s.inflight.remove(&id).unwrap_or_default();
        match grant {
            Grant::None => Some((Vec::new(), 0)),
            _ if s.lost => None,
            Grant::Kept(e) => {
                let token = Self::high(&s, e.part);
                s.insert(name, e);
                Some((pending, token))
            }
            Grant::Exact(x) => {
                let token = Self::high(&s, x.part);
                s.exact.insert(id, x);
                Some((Vec::new(), token))
            }
        }
    }

    /// The guard of exact grant `id` ended.
    pub(crate) fn exact_released(&self, id: u64) {
        self.state().exact.remove(&id);
    }

    /// Takes every kept extent and exact grant of a partition `covers` accepts out of the
    /// map (see the module docs); with `gone`, the session is gone: everything is taken,
    /// locks in flight are forgotten, and nothing is recorded any more.
    pub(crate) fn evict(&self, covers: impl Fn(u32) -> bool, gone: bool) -> Vec<Evicted> {
        let mut s = self.state();
        let mut out = Vec::new();
        let ids: Vec<u64> =
            s.exact.iter().filter(|(_, x)| covers(x.part)).map(|(i, _)| *i).collect();
        for id in ids {
            let x = s.exact.remove(&id).expect("listed");
            let lock = s.resources.get(&x.name).map(|r| r.lock.clone());
            let Some(lock) = lock else { continue };
            out.push(Evicted { lock, held: x, kept: false });
        }
        let names: Vec<Name> = s.resources.keys().cloned().collect();
        for name in names {
            let r = s.resources.get_mut(&name).expect("listed");
            let keys: Vec<(u64, u64)> =
                r.extents.iter().filter(|(_, e)| covers(e.part)).map(|(k, _)| *k).collect();
            let lock = r.lock.clone();
            for (start, id) in keys {
                let e = s.remove(&name, start, id).expect("listed");
                let (name, range) = (name.clone(), e.start..e.end);
                let (mode, token, part, lost) = (e.mode, e.token, e.part, e.lost);
                let held = Exact { name, range, mode, token, part, lost };
                out.push(Evicted { lock: lock.clone(), held, kept: true });
            }
        }
        if gone {
            s.lost = true;
            for r in s.resources.values_mut() {
                r.recalls.clear();
            }
            s.family.clear();
            s.inflight.clear();
        }
        out
    }

    /// A callback for lock `id` wants `part`: the next extent of the lock to give (part
    /// of) back, if any, marked recalled (see [`Recall`]). Call again after each give-back
    /// until `Done`: a part may span the two halves of a split. Recalls of one extent may
    /// run at once ([`Handover::give_back`] looks at the extent as it is then).
    pub(crate) fn begin_recall(&self, id: u64, part: Part) -> Recall {
        let mut s = self.state();
        if s.lost {
            return Recall::Done;
        }
        if let Some(pending) = s.inflight.get_mut(&id) {
            pending.push(part);
            return Recall::Deferred;
        }
        let root = s.root(id);
        let Some((name, _)) = s.by_id.get(&id).cloned().or_else(|| {
            // Given back whole, or split: look for the other parts of its family.
            s.by_id.iter().find(|(i, _)| s.root(**i) == root).map(|(_, v)| v.clone())
        }) else {
            return Recall::Done;
        };
        let Some(e) = s.piece(&name, root, &(part.start..part.end), part.mode) else {
            return Recall::Done;
        };
        s.marks += 1;
        let mark = s.marks;
        let r = s.resources.get_mut(&name).expect("an extent's resource");
        r.recalls.push((mark, e.start..e.end));
        let (lock, p) = (r.lock.clone(), part.start.max(e.start)..part.end.min(e.end));
        Recall::Target(Target { name, lock, extent: e, part: p, root, mark })
    }

    /// The idle pass: every kept extent not being recalled and not used locally since
    /// `idle` before `now`, whole (not marked: the pass only `try_lock`s them).
    pub(crate) fn idle_candidates(&self, now: Instant, idle: Duration) -> Vec<Target> {
        let s = self.state();
        let mut out = Vec::new();
        for (name, r) in &s.resources {
            for e in r.extents.values() {
                if !r.recalled(e) && now.saturating_duration_since(e.last_use) >= idle {
                    let (lock, part, root, mark) = (r.lock.clone(), e.start..e.end, e.id, 0);
                    let extent = e.clone();
                    out.push(Target { name: name.clone(), lock, extent, part, root, mark });
                }
            }
        }
        out
    }

    /// With `held`, the local lock over `target.part` held exclusively: looks at the
    /// extent of the lock that holds the part now (another recall may have reshaped it),
    /// `try_lock`s the rest of it on each side of the part, updates the map to give back
    /// the part and every side without a local holder, and returns the `GIVE_BACK` to
    /// send (with id `id`, which names the right part after a split), handed to `send`
    /// under the map mutex, and the local guards, to drop after that. `None` if no extent
    /// holds the part any more (another recall gave it back, or the session was lost).
    ///
    /// `send` runs under the mutex so that the `GIVE_BACK`s of one extent reach the server
    /// in the order they reshaped the map: two recalls of one extent each split it, and
    /// the second names a part the first created. Sent out of order, the server would
    /// refuse the second, and the client's unlock of what it thinks is left could
    /// release parts the map still shows as kept.
    pub(crate) fn give_back<R>(
        &self,
        target: &Target,
        held: OwnedRangeGuard,
        id: u64,
        send: impl FnOnce(&GiveBack) -> R,
    ) -> Option<(GiveBack, Vec<OwnedRangeGuard>, R)> {
        let mut s = self.state();
        let e = s.piece(&target.name, target.root, &target.part, Mode::Exclusive)?;
        let p = target.part.start.max(e.start)..target.part.end.min(e.end);
        let lock = &target.lock;
        let mut guards = vec![held];
        // Only `try_lock` under the state mutex: it never waits.
        let mut side = |range: Range<u64>| -> bool {
            if range.is_empty() {
                return true;
            }
            match lock.try_lock_owned(range) {
                Ok(g) => {
                    guards.push(g);
                    true
                }
                Err(_) => false,
            }
        };
        let start = if side(e.start..p.start) { e.start } else { p.start };
        let end = if side(p.end..e.end) { e.end } else { p.end };
        let mut old = s.remove(&target.name, e.start, e.id)?;
        if start > old.start {
            s.insert(&target.name, Extent { end: start, ..old.clone() });
        }
        if end < old.end {
            let right_id = if start > old.start {
                s.family.insert(id, e.id);
                id
            } else {
                e.id
            };
            old.start = end;
            old.id = right_id;
            s.insert(&target.name, old);
        }
        let extent = (e.start, e.end);
        let gb = GiveBack { id, target: e.id, start, end, extent, used: e.used };
        let sent = send(&gb);
        Some((gb, guards, sent))
    }

    /// With the whole extent of `target` held locally (`held`, the idle pass): removes it
    /// from the map unless a callback is recalling it; the `GIVE_BACK`, handed to `send`
    /// under the map mutex (as in [`Handover::give_back`]), and the guard to drop after.
    pub(crate) fn give_back_whole<R>(
        &self,
        target: &Target,
        held: OwnedRangeGuard,
        id: u64,
        send: impl FnOnce(&GiveBack) -> R,
    ) -> Option<(GiveBack, Vec<OwnedRangeGuard>, R)> {
        let e = &target.extent;
        let mut s = self.state();
        let r = s.resources.get(&target.name)?;
        let same = r.extents.get(&(e.start, e.id));
        if !same.is_some_and(|x| !r.recalled(x) && x.end == e.end && x.mode == e.mode) {
            return None;
        }
        s.remove(&target.name, e.start, e.id)?;
        let (start, end, extent) = (e.start, e.end, (e.start, e.end));
        let gb = GiveBack { id, target: e.id, start, end, extent, used: e.used };
        let sent = send(&gb);
        Some((gb, vec![held], sent))
    }

    /// The recall of `target` is over (`GIVE_BACK` sent, guards dropped, or nothing given
    /// back): clears its mark.
    pub(crate) fn finish_recall(&self, target: &Target) {
        let mut s = self.state();
        if let Some(r) = s.resources.get_mut(&target.name) {
            r.recalls.retain(|(m, _)| *m != target.mark);
        }
    }

    /// Forgets the extents `ids` of `name` (the server refused to reshape one: the caller
    /// unlocks it whole).
    pub(crate) fn forget(&self, name: &Name, ids: &[u64]) {
        let mut s = self.state();
        for &id in ids {
            if let Some((n, start)) = s.by_id.get(&id).cloned() {
                if n == *name {
                    s.remove(name, start, id);
                }
            }
        }
    }

    /// The session is gone: forgets every extent and every lock in flight.
    pub(crate) fn clear(&self) {
        self.evict(|_| true, true);
    }

    /// How many extents are kept (for tests).
    pub(crate) fn kept(&self) -> usize {
        self.state().by_id.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn extent(start: u64, end: u64, id: u64) -> Extent {
        let mode = Mode::Exclusive;
        let (last_use, lost) = (Instant::now(), None);
        Extent { start, end, mode, id, last_use, used: 0, token: 9, part: 0, lost }
    }

    /// Keeps `e`, granted with token 9, as `lock_at_server` does.
    fn keep(h: &Handover, name: &Name, e: Extent) {
        h.note_grant(e.part, 9);
        h.begin_flight(e.id);
        assert_eq!(h.settle(e.id, name, Grant::Kept(e)), Some((Vec::new(), 9)));
    }

    fn part(start: u64, end: u64) -> Part {
        Part { start, end, mode: Mode::Exclusive }
    }

    fn target(r: Recall) -> Target {
        match r {
            Recall::Target(t) => t,
            r => panic!("expected a target, got {r:?}"),
        }
    }

    /// A split's right part gets the GIVE_BACK's id; a callback that names the left id for
    /// a part now in the right half finds it through the family.
    #[test]
    fn a_split_keeps_both_halves_and_their_family() {
        let (h, name): (Handover, Name) = (Handover::default(), Arc::from(&b"f"[..]));
        let lock = h.local_lock(&name);
        keep(&h, &name, extent(0, 100, 1));
        let left = lock.lock_owned(0..10);
        let right = lock.lock_owned(90..100);
        let t = target(h.begin_recall(1, part(50, 60)));
        // Two callbacks for one part: both recall, the second finds it given back.
        let twice = target(h.begin_recall(1, part(55, 60)));
        assert!(!h.find(&name, &(20..30), Mode::Shared), "recalled: no new local lock");
        let held = t.lock.lock_owned(t.part.clone());
        let (gb, guards, ()) = h.give_back(&t, held, 7, |_| ()).unwrap();
        assert_eq!(
            gb,
            GiveBack { id: 7, target: 1, start: 50, end: 60, extent: (0, 100), used: 0 }
        );
        drop(guards);
        h.finish_recall(&t);
        assert!(!h.find(&name, &(20..30), Mode::Shared), "still recalled by the second");
        let held = twice.lock.lock_owned(twice.part.clone());
        assert!(h.give_back(&twice, held, 70, |_| ()).is_none());
        h.finish_recall(&twice);
        assert!(matches!(h.begin_recall(1, part(55, 60)), Recall::Done));
        assert!(
            h.find(&name, &(20..30), Mode::Exclusive) && h.find(&name, &(70..80), Mode::Shared)
        );
        assert!(!h.find(&name, &(55..56), Mode::Shared));
        let (id, token, _) = h.confirm(&name, &(70..80), Mode::Exclusive, Instant::now()).unwrap();
        assert_eq!((id, token), (7, 9));
        // A late callback under the left id for a part of the right half.
        drop(right);
        let t = target(h.begin_recall(1, part(80, 85)));
        assert_eq!((t.extent.id, t.part.clone()), (7, 80..85));
        let held = t.lock.lock_owned(t.part.clone());
        let (gb, guards, ()) = h.give_back(&t, held, 8, |_| ()).unwrap();
        // `used` 1: the confirm of 70..80 above.
        let all = GiveBack { id: 8, target: 7, start: 60, end: 100, extent: (60, 100), used: 1 };
        assert_eq!(gb, all, "no holder: all of it");
        drop(guards);
        h.finish_recall(&t);
        assert!(matches!(h.begin_recall(7, part(80, 85)), Recall::Done));
        assert_eq!(h.kept(), 1);
        // The left half with a holder on one side: that side stays whole.
        let t = target(h.begin_recall(1, part(40, 45)));
        let held = t.lock.lock_owned(t.part.clone());
        let (gb, guards, ()) = h.give_back(&t, held, 9, |_| ()).unwrap();
        assert_eq!(gb, GiveBack { id: 9, target: 1, start: 40, end: 50, extent: (0, 50), used: 0 });
        drop(guards);
        h.finish_recall(&t);
        drop(left);
        assert_eq!(h.kept(), 1);
        assert!(h.find(&name, &(0..40), Mode::Exclusive));
    }

    /// Eviction takes the extents and exact grants of the partitions named, leaves the
    /// others serving, and once the session is gone records nothing more.
    #[test]
    fn eviction_takes_what_lies_in_the_partitions_named() {
        let (h, name): (Handover, Name) = (Handover::default(), Arc::from(&b"e"[..]));
        let lock = h.local_lock(&name);
        keep(&h, &name, Extent { part: 1, ..extent(0, 10, 1) });
        keep(&h, &name, Extent { part: 2, ..extent(20, 30, 2) });
        let lost = Some(Lost::default());
        let x = Exact {
            name: name.clone(),
            range: 40..50,
            mode: Mode::Shared,
            token: 5,
            part: 1,
            lost,
        };
        h.begin_flight(3);
        assert_eq!(h.settle(3, &name, Grant::Exact(x)), Some((Vec::new(), 9)));
        h.note_grant(2, 1 << 40);
        assert_eq!(Handover::high(&h.state(), 1), 9, "partition 2's tokens are not 1's");
        let held = lock.lock_owned(5..6);
        let mut out = h.evict(|p| p == 1, false);
        out.sort_by_key(|e| e.held.range.start);
        let got: Vec<_> =
            out.iter().map(|e| (e.held.range.clone(), e.held.token, e.kept)).collect();
        assert_eq!(got, [(0..10, 9, true), (40..50, 5, false)]);
        assert!(out[0].lock.try_lock_owned(0..10).is_err(), "its local holder is seen");
        assert!(!h.find(&name, &(5..6), Mode::Shared), "evicted: no new local lock");
        assert!(h.find(&name, &(25..26), Mode::Shared), "partition 2 still serves");
        drop(held);
        assert_eq!(h.evict(|_| true, true).len(), 1);
        h.begin_flight(4);
        assert_eq!(h.settle(4, &name, Grant::Kept(extent(60, 70, 4))), None, "session gone");
        assert_eq!(h.kept(), 0);
    }

    /// A callback before its lock is settled waits for it; one for a lock not kept is
    /// dropped; a resource without extents or holders is forgotten.
    #[test]
    fn callbacks_wait_for_their_lock_and_unused_resources_go() {
        let (h, name): (Handover, Name) = (Handover::default(), Arc::from(&b"g"[..]));
        let lock = h.local_lock(&name);
        h.begin_flight(3);
        assert!(matches!(h.begin_recall(3, part(0, 1)), Recall::Deferred));
        assert_eq!(h.settle(3, &name, Grant::Kept(extent(0, 10, 3))), Some((vec![part(0, 1)], 0)));
        h.begin_flight(4);
        assert!(matches!(h.begin_recall(4, part(20, 21)), Recall::Deferred));
        assert_eq!(h.settle(4, &name, Grant::None), Some((Vec::new(), 0)));
        assert!(matches!(h.begin_recall(4, part(20, 21)), Recall::Done));
        let t = h.idle_candidates(Instant::now(), Duration::ZERO).pop().unwrap();
        let g = lock.try_lock_owned(0..10).unwrap();
        let (gb, guards, ()) = h.give_back_whole(&t, g, 5, |_| ()).unwrap();
        assert_eq!((gb.target, gb.start, gb.end), (3, 0, 10));
        drop((guards, lock, t));
        assert_eq!(h.resources(), 1, "kept until a guard's release looks");
        h.released(&name, &(0..1), Instant::now());
        assert_eq!(h.resources(), 0);
    }
}
