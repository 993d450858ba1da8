//! The `rangelock` engine: handlers drive the lock-free in-process skip-list
//! `rangelock::RangeLock` (its raw core [`SkipList`]) directly; no table, no combiner.
//! Waiting requests sit in a registry, not on threads.
//!
//! # Algorithm
//!
//! * `LOCK` calls `try_lock` on the handler thread (lock-free fast path). On success the
//!   lock is held. On a conflict a `try` is answered `WOULD_BLOCK`; a request that may
//!   wait is *registered*: an entry in the waiter registry, an interval tree keyed by
//!   range and arrival order under one mutex (`waiters`). Nothing runs for it meanwhile.
//! * **Wake-ups.** Whoever makes a range available calls [`RangeLockEngine::wake`] on it:
//!   a release (`UNLOCK`, session close) after unlocking, and also every failed
//!   acquisition attempt (see below). `wake` takes the registry mutex, retries, in arrival
//!   order, each registered waiter overlapping the range with `try_lock`, and removes the
//!   ones that succeed; after dropping the mutex it *installs* each success in its
//!   session (held, token, `OK` in push mode). A waiter that conflicts with one granted
//!   earlier in the same pass is skipped without a retry.
//! * **Registration** happens under the same mutex and retries `try_lock` once more after
//!   inserting. So a release either unlocks before the registration's retry (which then
//!   succeeds: the release's unlock happens before its `wake` takes the mutex, and the
//!   registration's mutex section comes after that) or its `wake` finds the waiter
//!   registered. No wake-up is lost, and no atomic handshake is needed: every path that
//!   can make a waiter grantable takes the mutex after it.
//! * **Failed attempts wake too.** Two racing `try_lock`s of the skip list can both fail,
//!   each seeing the other's announcement (rangelock docs, "Progress"). If a retry inside
//!   `wake` failed only because of a handler's fast-path attempt that then failed too, no
//!   release would ever come to retry it again. So a failed fast-path attempt calls `wake`
//!   on its range afterwards: its announcement is gone by then, and its `wake` comes after
//!   the retry it disturbed (that retry ran under the mutex). Retries inside `wake` and
//!   registration run one at a time under the mutex, so they never disturb each other.
//! * **Withdrawal** (cancel, timeout, `UNLOCK` of a waiting lock, close, shutdown) removes
//!   the session's entry under the session mutex and then the registry entry. If `wake`
//!   has already taken the waiter out (it acquired the range, but has not installed it),
//!   the install finds the entry gone or replaced (nonce) and releases the range again.
//! * **Lock order:** a session mutex, then the registry mutex. `wake` installs grants only
//!   after dropping the registry mutex, and nobody calls `wake` while holding a session
//!   mutex, so no cycle exists.
//! * Fencing tokens come from one atomic counter, taken after the range is acquired: a
//!   holder that conflicts with an earlier one acquired after that one released, which
//!   was after it took its token — so conflicting holders see increasing tokens, and all
//!   tokens are distinct.
//!
//! # Named resources
//!
//! The unnamed resource is the engine's own skip list. Each live name has a skip list of its
//! own ([`Named`]) in a sharded map (`names`), with a count of the entries (held or
//! waiting) on it, kept under its shard's mutex: `LOCK` takes one before it tries the
//! lock, and the end of the entry (release, withdrawal, `WOULD_BLOCK`) gives it back. The
//! last one out removes the name, so nothing of it stays once nothing is held or queued on
//! it. A held entry counts, so every holder of a name holds on the same skip list, and
//! locks on different names never meet. The registry keys a waiter by `line << 64 | unit`,
//! where the line is the name's (never reused in a run) and 0 is the unnamed resource, so
//! a release of one name retries only its waiters. A shard mutex is a leaf: nothing else
//! is locked under it. The unnamed path does no name work, and tokens come from the one
//! counter for all resources.
//!
//! # Trade-offs
//!
//! Mutual exclusion is the skip list's. Order is not FIFO per overlap as with the table
//! engines: a new request's fast path may overtake registered waiters (a stream of
//! conflicting requests can starve a waiter), and a `try` fails only on a conflicting
//! *holder* (registered waiters hold nothing). Waiting costs an entry in the registry, no
//! thread and no periodic wake-up, and one session's waiters delay another session's
//! grants only by the retries of waiters that overlap the released range. Every release
//! and failed attempt takes the registry mutex briefly (the per-command session lookup
//! already takes a global mutex). Stats are a snapshot assembled session by session, not
//! an atomic picture.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rangelock::internals::{overlaps, RawRangeLock, SkipList, SkipToken};

use crate::metrics::{AtomicTimings, Clock, EngineSnapshot, ErrorCounts};
use crate::protocol::{
    op, stats_cached_entries_within, stats_named_entries_within, Counters, EntryState, GrantMode,
    Mode, ResponseFrame, StatsBody, StatsEntry, Status,
};
use crate::table::{Command, Ended, Handle, IntervalTree, ReplySink, StatsKind, TableLimits};

/// Shards of the name map: enough that handlers locking different names rarely meet.
const NAME_SHARDS: usize = 64;

/// The registry key of `unit` on line `line` (0: the unnamed resource).
fn at(line: u64, unit: u64) -> u128 {
    u128::from(line) << 64 | u128::from(unit)
}

/// A name's key in its shard: the name and its hash, computed once per `LOCK`.
#[derive(Clone, Debug)]
struct NameKey {
    hash: u64,
    name: Arc<[u8]>,
}

impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for NameKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && (Arc::ptr_eq(&self.name, &other.name) || self.name == other.name)
    }
}

impl Eq for NameKey {}

/// Passes a [`NameKey`]'s hash through to the shard's map, so a name is hashed once.
#[derive(Debug, Default)]
struct PassHash(u64);

impl Hasher for PassHash {
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; fold anything else in all the same.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A named resource while something of it is held or queued.
#[derive(Debug)]
struct Named {
    key: NameKey,
    /// Its line in the registry (never reused in a run; the unnamed resource is 0).
    line: u64,
    lock: SkipList,
}

/// A live name in its shard, and how many entries (held or waiting) are on it.
#[derive(Debug)]
struct Live {
    res: Arc<Named>,
    users: usize,
}

type Shard = HashMap<NameKey, Live, BuildHasherDefault<PassHash>>;

/// The live names: see "Named resources" in the module docs.
#[derive(Debug)]
struct Names {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    /// The line the next new name gets.
    next_line: AtomicU64,
    /// Live names, all shards together (the `--max-names` bound and STATS).
    live: AtomicU64,
}

impl Names {
    fn new() -> Self {
        Names {
            shards: (0..NAME_SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: RandomState::new(),
            next_line: AtomicU64::new(1),
            live: AtomicU64::new(0),
        }
    }

    fn shard(&self, hash: u64) -> &Mutex<Shard> {
        // The map uses the low and the top bits of the hash; the shard bits in between.
        &self.shards[(hash >> 32) as usize % NAME_SHARDS]
    }

    /// One more entry on `name`, which becomes live if it was not: its resource; `None`
    /// when it is not live and `max` names are (`TOO_MANY_NAMES`).
    fn enter(&self, name: Arc<[u8]>, max: usize) -> Option<Arc<Named>> {
        let key = NameKey { hash: self.hasher.hash_one(&*name), name };
        let mut shard = lock(self.shard(key.hash));
        if let Some(live) = shard.get_mut(&key) {
            live.users += 1;
            return Some(Arc::clone(&live.res));
        }
        // Relaxed: a count; taking one slot before the check keeps the bound exact across
        // shards.
        if self.live.fetch_add(1, Ordering::Relaxed) >= max as u64 {
            self.live.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let line = self.next_line.fetch_add(1, Ordering::Relaxed);
        let res = Arc::new(Named { key: key.clone(), line, lock: SkipList::new() });
        shard.insert(key, Live { res: Arc::clone(&res), users: 1 });
        Some(res)
    }

    /// One entry fewer on `res`: its name leaves with its last entry.
    fn leave(&self, res: &Named) {
        let mut shard = lock(self.shard(res.key.hash));
        let live = shard.get_mut(&res.key).expect("an entry's name is live");
        live.users -= 1;
        if live.users == 0 {
            shard.remove(&res.key);
            // Relaxed: a count (see `enter`).
            self.live.fetch_sub(1, Ordering::Relaxed);
            // Give memory back after a burst of names (amortized, as the table engines).
            if shard.capacity() > 64 && shard.len() < shard.capacity() / 4 {
                let len = shard.len();
                shard.shrink_to(len * 2);
            }
        }
    }
}

/// The line of a resource (`None`: the unnamed one).
fn line_of(res: &Option<Arc<Named>>) -> u64 {
    res.as_ref().map_or(0, |n| n.line)
}

/// A range made available on a line, to retry its waiters on.
type Freed = (u64, Range<u64>);

#[derive(Debug)]
enum State {
    Held { token: u64, raw: SkipToken },
    Waiting,
}

#[derive(Debug)]
struct Entry {
    start: u64,
    end: u64,
    mode: Mode,
    /// Arrival order, engine-wide; also the key of a waiting entry in the registry.
    seq: u64,
    nonce: u64,
    state: State,
    /// Metrics on: when the request arrived while it waits, when it was granted once held
    /// (see `crate::metrics`); 0 and unused with metrics off.
    stamp: u64,
    /// The entry's name (`None`: the unnamed resource); it counts as one of its users.
    res: Option<Arc<Named>>,
}

#[derive(Debug)]
struct Session {
    sink: ReplySink,
    locks: HashMap<u64, Entry>,
    ended: Ended,
}

impl Session {
    fn reply(&self, r: ResponseFrame) {
        // Replies come from handlers and from other sessions' wakes alike: send at once.
        crate::reply::send_now(&self.sink, r);
    }
}

type SessionRef = Arc<Mutex<Session>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A registered waiting request.
#[derive(Debug)]
struct Waiter {
    session: SessionRef,
    id: u64,
    nonce: u64,
    mode: Mode,
    res: Option<Arc<Named>>,
}

/// Waiting requests by resource line, range and arrival order; see the module docs.
#[derive(Debug)]
struct Registry {
    tree: IntervalTree<Waiter, u128>,
    /// Registry handle of each waiting entry, by the entry's `seq`.
    by_seq: HashMap<u64, Handle>,
    /// Scratch for overlap queries.
    scratch: Vec<Handle>,
}

impl Registry {
    fn remove(&mut self, seq: u64) -> Option<Waiter> {
        self.by_seq.remove(&seq).map(|h| self.tree.remove(h))
    }
}

/// A waiter `wake` acquired, to install in its session.
#[derive(Debug)]
struct Granted {
    waiter: Waiter,
    range: Range<u64>,
    raw: SkipToken,
}

#[derive(Debug, Default)]
struct AtomicCounters {
    sessions_open: AtomicU64,
    sessions_total: AtomicU64,
    holders: AtomicU64,
    named_holders: AtomicU64,
    waiters: AtomicU64,
    grants: AtomicU64,
    releases: AtomicU64,
    released_by_close: AtomicU64,
    would_block: AtomicU64,
    timeouts: AtomicU64,
    cancels: AtomicU64,
    /// Error responses per status (`STATS` reports the total).
    errors: ErrorCounts,
}

fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn dec(c: &AtomicU64) {
    c.fetch_sub(1, Ordering::Relaxed);
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct RangeLockEngine {
    /// The unnamed resource.
    lock: SkipList,
    names: Names,
    sessions: Mutex<HashMap<u64, SessionRef>>,
    waiters: Mutex<Registry>,
    grant: GrantMode,
    limits: TableLimits,
    seq: AtomicU64,
    counters: AtomicCounters,
    handler_errors: Arc<ErrorCounts>,
    /// Metrics on: the wait and hold histograms and their clock.
    timings: Option<AtomicTimings>,
    /// Set by [`Command::Shutdown`]: no new locks and no more grants (waiters are
    /// withdrawn at that moment).
    shutting_down: AtomicBool,
}

impl RangeLockEngine {
    pub(crate) fn new(
        grant: GrantMode,
        limits: TableLimits,
        handler_errors: Arc<ErrorCounts>,
        clock: Option<Clock>,
    ) -> Self {
        RangeLockEngine {
            lock: SkipList::new(),
            names: Names::new(),
            sessions: Mutex::new(HashMap::new()),
            waiters: Mutex::new(Registry {
                tree: IntervalTree::new(),
                by_seq: HashMap::new(),
                scratch: Vec::new(),
            }),
            grant,
            limits,
            seq: AtomicU64::new(0),
            counters: AtomicCounters::default(),
            handler_errors,
            timings: clock.map(AtomicTimings::new),
            shutting_down: AtomicBool::new(false),
        }
    }

    /// The skip list of a resource (`None`: the unnamed one).
    fn lock_of<'a>(&'a self, res: &'a Option<Arc<Named>>) -> &'a SkipList {
        res.as_deref().map_or(&self.lock, |n| &n.lock)
    }

    /// How many names have something held or queued on them (the unnamed resource not
    /// counted), by the shards' maps; tests only (STATS reads the `live` count, which this
    /// checks). Each shard is read on its own: not one atomic picture.
    #[cfg(test)]
    pub(crate) fn names_live(&self) -> usize {
        let n = self.names.shards.iter().map(|s| lock(s).len()).sum();
        assert_eq!(self.names.live.load(Ordering::Relaxed), n as u64, "the live count");
        n
    }

    fn session(&self, id: u64) -> Option<SessionRef> {
        lock(&self.sessions).get(&id).cloned()
    }

    fn reply(&self, s: &Session, r: ResponseFrame) {
        if r.status.is_error() {
            self.counters.errors.count(r.status);
        }
        s.reply(r);
    }

    /// Executes one command (from a handler or a timer, inside the runtime).
    pub(crate) fn apply(&self, cmd: Command) {
        match cmd {
            Command::Open { session, sink } => {
                let s = Session { sink, locks: HashMap::new(), ended: Ended::default() };
                lock(&self.sessions).insert(session, Arc::new(Mutex::new(s)));
                inc(&self.counters.sessions_open);
                inc(&self.counters.sessions_total);
            }
            // `desired` is always `None`: sessions of this engine cannot cache (`CACHE_ON`
            // is answered `CACHE_UNAVAILABLE`: it has no queue to find holders to call back).
            Command::Lock {
                session, id, start, end, name, mode, may_wait, nonce, arrived, ..
            } => {
                if let Some(s) = self.session(session) {
                    self.lock_cmd(&s, id, start..end, name, mode, may_wait, nonce, arrived);
                }
            }
            Command::Unlock { session, id, target } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let (status, freed) = match g.locks.get(&target).map(|e| &e.state) {
                    Some(State::Held { .. }) => {
                        let e = g.locks.remove(&target).expect("present");
                        inc(&self.counters.releases);
                        g.ended.released(target);
                        (Status::Ok, Some(self.release(e)))
                    }
                    Some(State::Waiting) => {
                        self.withdraw(&mut g, target, Status::Cancelled);
                        (Status::Ok, None)
                    }
                    None => (g.ended.unlock(target), None),
                };
                self.reply(&g, ResponseFrame::new(op::UNLOCK, id, status, 0));
                drop(g);
                if let Some(freed) = freed {
                    self.wake(freed);
                }
            }
            Command::Cancel { session, id, target } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let status = match g.locks.get(&target).map(|e| &e.state) {
                    Some(State::Held { .. }) => Status::NotWaiting,
                    Some(State::Waiting) => {
                        self.withdraw(&mut g, target, Status::Cancelled);
                        Status::Ok
                    }
                    None => g.ended.unlock(target),
                };
                self.reply(&g, ResponseFrame::new(op::CANCEL, id, status, 0));
            }
            Command::Poll { session, id, target } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let (status, value) = match g.locks.get(&target).map(|e| &e.state) {
                    Some(State::Held { token, .. }) => (Status::Ok, *token),
                    Some(State::Waiting) => (Status::Pending, 0),
                    None => (g.ended.poll(target), 0),
                };
                self.reply(&g, ResponseFrame::new(op::POLL, id, status, value));
            }
            Command::Expire { session, target, nonce } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let waiting = matches!(
                    g.locks.get(&target),
                    Some(Entry { state: State::Waiting, nonce: n, .. }) if *n == nonce
                );
                if waiting {
                    self.withdraw(&mut g, target, Status::TimedOut);
                }
            }
            Command::Stats { session, id, max_entries, kind } => {
                self.stats(session, id, max_entries, kind)
            }
            // A cluster node never runs this engine (`ServerConfig::validate`).
            Command::Reclaim { session, id, .. } => {
                if let Some(s) = self.session(session) {
                    let r = ResponseFrame::new(op::RECLAIM, id, Status::NotClustered, 0);
                    self.reply(&lock(&s), r);
                }
            }
            Command::Partition { .. }
            | Command::Expect { .. }
            | Command::CacheOn { .. }
            | Command::Detach { .. }
            | Command::GiveBack { .. } => {}
            Command::Handover { report, .. } => {
                let _ = report.send(Vec::new());
            }
            Command::Metrics { report } => {
                let _ = report.send(self.snapshot());
            }
            Command::Shutdown => {
                self.shutting_down.store(true, Ordering::Relaxed);
                let sessions: Vec<SessionRef> = lock(&self.sessions).values().cloned().collect();
                for s in sessions {
                    let mut g = lock(&s);
                    let waiting: Vec<u64> = g
                        .locks
                        .iter()
                        .filter(|(_, e)| matches!(e.state, State::Waiting))
                        .map(|(id, _)| *id)
                        .collect();
                    for id in waiting {
                        self.withdraw(&mut g, id, Status::ShuttingDown);
                    }
                }
            }
            Command::Close { session } => {
                let Some(s) = lock(&self.sessions).remove(&session) else { return };
                let mut g = lock(&s);
                let mut freed = Vec::new();
                for (_, e) in g.locks.drain() {
                    match e.state {
                        State::Held { .. } => {
                            inc(&self.counters.released_by_close);
                            freed.push(self.release(e));
                        }
                        State::Waiting => {
                            dec(&self.counters.waiters);
                            lock(&self.waiters).remove(e.seq);
                            if let Some(n) = &e.res {
                                self.names.leave(n);
                            }
                        }
                    }
                }
                drop(g);
                dec(&self.counters.sessions_open);
                for f in freed {
                    self.wake(f);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lock_cmd(
        &self,
        s: &SessionRef,
        id: u64,
        range: Range<u64>,
        name: Option<Arc<[u8]>>,
        mode: Mode,
        may_wait: bool,
        nonce: u64,
        arrived: u64,
    ) {
        let mut g = lock(s);
        let error = self.limits.refuse_lock(
            self.shutting_down.load(Ordering::Relaxed),
            range.start,
            range.end,
            g.locks.contains_key(&id),
            g.locks.len(),
        );
        if let Some(status) = error {
            self.reply(&g, ResponseFrame::new(op::LOCK, id, status, 0));
            return;
        }
        g.ended.reuse(id);
        // A user of the name from here until the entry ends.
        let res = match name.map(|n| self.names.enter(n, self.limits.max_names)) {
            None => None,
            Some(Some(res)) => Some(res),
            Some(None) => {
                let max = self.limits.max_names as u64;
                self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::TooManyNames, max));
                return;
            }
        };
        let line = line_of(&res);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let (start, end) = (range.start, range.end);
        if let Some(raw) = self.lock_of(&res).try_lock(range.clone(), mode) {
            let (token, stamp) = self.granted(arrived, &res);
            let state = State::Held { token, raw };
            g.locks.insert(id, Entry { start, end, mode, seq, nonce, state, stamp, res });
            self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::Ok, token));
            return;
        }
        if may_wait {
            let state = State::Waiting;
            let entry =
                Entry { start, end, mode, seq, nonce, state, stamp: arrived, res: res.clone() };
            g.locks.insert(id, entry);
            // Counted before a `wake` can install (and uncount) it.
            inc(&self.counters.waiters);
            let mut reg = lock(&self.waiters);
            let waiter = Waiter { session: s.clone(), id, nonce, mode, res: res.clone() };
            let h = reg.tree.insert(at(line, start), at(line, end), seq, waiter);
            reg.by_seq.insert(seq, h);
            // Registered: from here on a release's `wake` retries it. Retry once more for a
            // release that came between the fast path and the registration.
            if let Some(raw) = self.lock_of(&res).try_lock(range.clone(), mode) {
                reg.remove(seq);
                drop(reg);
                dec(&self.counters.waiters);
                let (token, stamp) = self.granted(arrived, &res);
                let e = g.locks.get_mut(&id).expect("inserted above");
                (e.state, e.stamp) = (State::Held { token, raw }, stamp);
                self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::Ok, token));
                return;
            }
            drop(reg);
            if self.grant == GrantMode::Poll {
                self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::Pending, 0));
            }
        } else {
            inc(&self.counters.would_block);
            self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::WouldBlock, 0));
            if let Some(n) = &res {
                self.names.leave(n);
            }
        }
        drop(g);
        // The failed fast-path attempt may have made a retry inside another `wake` fail.
        self.wake((line, range));
    }

    /// Retries the registered waiters overlapping a freed range and installs the ones that
    /// get it; see the module docs. Called with no session mutex held.
    fn wake(&self, freed: Freed) {
        let mut pending = vec![freed];
        while let Some(freed) = pending.pop() {
            for g in self.retry_waiters(freed) {
                if let Some(freed) = self.install(g) {
                    pending.push(freed);
                }
            }
        }
    }

    /// Under the registry mutex: `try_lock` for each waiter overlapping `range` on `line`,
    /// in arrival order; takes the ones that succeed out of the registry.
    fn retry_waiters(&self, (line, range): Freed) -> Vec<Granted> {
        let mut granted: Vec<Granted> = Vec::new();
        let mut reg = lock(&self.waiters);
        if reg.by_seq.is_empty() || self.shutting_down.load(Ordering::Relaxed) {
            return granted;
        }
        let mut hs = std::mem::take(&mut reg.scratch);
        hs.clear();
        reg.tree.overlaps(at(line, range.start), at(line, range.end), &mut hs);
        let mut order: Vec<(u64, Handle)> =
            hs.iter().map(|h| (reg.tree.interval(*h).2, *h)).collect();
        order.sort_unstable_by_key(|(seq, _)| *seq);
        for (seq, h) in order {
            let (start, end, _) = reg.tree.interval(h);
            // Truncation intended: the low half of a key is the unit (the line is `line`).
            let (start, end) = (start as u64, end as u64);
            let w = reg.tree.get(h);
            let mode = w.mode;
            let blocked_by_grant = granted
                .iter()
                .any(|g| overlaps(&g.range, &(start..end)) && !g.waiter.mode.compatible(mode));
            if blocked_by_grant {
                continue;
            }
            if let Some(raw) = self.lock_of(&w.res).try_lock(start..end, mode) {
                let waiter = reg.remove(seq).expect("registered");
                granted.push(Granted { waiter, range: start..end, raw });
            }
        }
        reg.scratch = hs;
        granted
    }

    /// Makes an acquired waiter's entry held and tells its client. If the entry was
    /// withdrawn meanwhile, releases the range and returns it (to wake others).
    fn install(&self, g: Granted) -> Option<Freed> {
        let Granted { waiter, range, raw } = g;
        let mut s = lock(&waiter.session);
        let entry = s.locks.get_mut(&waiter.id).filter(|e| {
            matches!(e.state, State::Waiting)
                && e.nonce == waiter.nonce
                && !self.shutting_down.load(Ordering::Relaxed)
        });
        let Some(entry) = entry else {
            drop(s);
            // SAFETY: `raw` was acquired on the waiter's resource's lock by `retry_waiters`
            // (the waiter's `Arc` keeps a named one alive) and is owned by nobody else: the
            // entry it was for is gone.
            unsafe { self.lock_of(&waiter.res).unlock(raw) };
            return Some((line_of(&waiter.res), range));
        };
        dec(&self.counters.waiters);
        let (token, stamp) = self.granted(entry.stamp, &entry.res);
        (entry.state, entry.stamp) = (State::Held { token, raw }, stamp);
        if self.grant == GrantMode::Push {
            s.reply(ResponseFrame::new(op::LOCK, waiter.id, Status::Ok, token));
        }
        None
    }

    /// Counts a grant of a request stamped `stamp` (its arrival) and takes the next
    /// fencing token; returns it and the entry's new stamp (its grant).
    fn granted(&self, stamp: u64, res: &Option<Arc<Named>>) -> (u64, u64) {
        inc(&self.counters.holders);
        if res.is_some() {
            inc(&self.counters.named_holders);
        }
        let token = self.counters.grants.fetch_add(1, Ordering::Relaxed) + 1;
        (token, self.timings.as_ref().map_or(0, |t| t.granted(stamp)))
    }

    /// Releases a held entry's range and returns it; the caller wakes it once it holds no
    /// session mutex.
    fn release(&self, e: Entry) -> Freed {
        if let State::Held { raw, .. } = e.state {
            dec(&self.counters.holders);
            if e.res.is_some() {
                dec(&self.counters.named_holders);
            }
            if let Some(t) = &self.timings {
                t.released(e.stamp);
            }
            // SAFETY: `raw` came from an acquisition on the entry's resource's lock (alive:
            // the entry holds its `Arc`) and the entry that owned it has just been removed
            // from its session, so it is released exactly once.
            unsafe { self.lock_of(&e.res).unlock(raw) };
        }
        if let Some(n) = &e.res {
            self.names.leave(n);
        }
        (line_of(&e.res), e.start..e.end)
    }

    /// Withdraws a waiting entry (under its session mutex) and answers or records it.
    fn withdraw(&self, g: &mut Session, target: u64, status: Status) {
        let Some(e) = g.locks.remove(&target) else { return };
        // If `wake` took it out already, its install finds the entry gone and releases.
        lock(&self.waiters).remove(e.seq);
        if let Some(n) = &e.res {
            self.names.leave(n);
        }
        dec(&self.counters.waiters);
        match status {
            Status::TimedOut => inc(&self.counters.timeouts),
            Status::Cancelled => inc(&self.counters.cancels),
            _ => {}
        }
        match self.grant {
            GrantMode::Push => {
                g.ended.released(target);
                g.reply(ResponseFrame::new(op::LOCK, target, status, 0));
            }
            GrantMode::Poll if matches!(status, Status::TimedOut | Status::ShuttingDown) => {
                g.ended.unpolled(target, status)
            }
            GrantMode::Poll => g.ended.released(target),
        }
    }

    /// `STATS`, `STATS_NAMED` or `STATS_CACHED` (`kind`; this engine keeps no extents, so
    /// the cache's counters are 0 and no entry is kept).
    fn stats(&self, session: u64, id: u64, max_entries: u32, kind: StatsKind) {
        let named = kind.named();
        let sessions: Vec<(u64, SessionRef)> =
            lock(&self.sessions).iter().map(|(k, v)| (*k, v.clone())).collect();
        let mut all: Vec<(u64, StatsEntry)> = Vec::new();
        for (sid, s) in &sessions {
            for (lid, e) in lock(s).locks.iter() {
                let (state, token) = match e.state {
                    State::Held { token, .. } => (EntryState::Held, token),
                    State::Waiting => (EntryState::Waiting, 0),
                };
                all.push((
                    e.seq,
                    StatsEntry {
                        session: *sid,
                        id: *lid,
                        start: e.start,
                        end: e.end,
                        mode: e.mode,
                        state,
                        token,
                        name: match (&e.res, named) {
                            (Some(n), true) => Some(Arc::clone(&n.key.name)),
                            _ => None,
                        },
                        kept: false,
                    },
                ));
            }
        }
        all.sort_unstable_by_key(|(seq, _)| *seq);
        let max = max_entries.min(self.limits.max_stats_entries) as usize;
        let total = all.len();
        let mut entries: Vec<StatsEntry> = all.into_iter().take(max).map(|(_, e)| e).collect();
        let bytes = self.limits.max_stats_bytes;
        match kind {
            StatsKind::Plain => {}
            StatsKind::Named => entries.truncate(stats_named_entries_within(bytes, &entries)),
            StatsKind::Cached => entries.truncate(stats_cached_entries_within(bytes, &entries)),
        }
        let omitted = (total - entries.len()) as u64;
        let body = StatsBody { counters: self.snapshot().counters, entries, omitted };
        let r = kind.answer(id, body);
        if let Some(s) = self.session(session) {
            lock(&s).reply(r);
        }
    }

    /// Counters, errors per status (the handlers' included) and histograms, for `STATS`
    /// and scrapes: each counter read on its own, not one atomic picture.
    fn snapshot(&self) -> EngineSnapshot {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut errors = c.errors.tally();
        errors.add(&self.handler_errors.tally());
        let counters = Counters {
            sessions_open: get(&c.sessions_open),
            sessions_total: get(&c.sessions_total),
            holders: get(&c.holders),
            waiters: get(&c.waiters),
            grants: get(&c.grants),
            releases: get(&c.releases),
            released_by_close: get(&c.released_by_close),
            would_block: get(&c.would_block),
            timeouts: get(&c.timeouts),
            cancels: get(&c.cancels),
            errors: errors.total(),
            names_live: self.names.live.load(Ordering::Relaxed),
            named_holders: get(&c.named_holders),
            ..Counters::default()
        };
        let (wait, hold) = match &self.timings {
            Some(t) => (t.wait.snapshot(), t.hold.snapshot()),
            None => Default::default(),
        };
        EngineSnapshot { counters, errors, wait, hold, ..EngineSnapshot::default() }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;
    use tokio::sync::mpsc;

    use super::*;

    struct Harness {
        engine: RangeLockEngine,
        rx: HashMap<u64, mpsc::UnboundedReceiver<ResponseFrame>>,
        tokens: HashSet<u64>,
        /// The last token each session was granted with.
        last_token: HashMap<u64, u64>,
    }

    impl Harness {
        fn new(sessions: u64) -> Self {
            let limits = TableLimits {
                max_locks_per_session: 1000,
                max_stats_entries: 10_000,
                max_stats_bytes: 1 << 20,
                max_names: 1 << 20,
            };
            let engine = RangeLockEngine::new(GrantMode::Push, limits, Arc::default(), None);
            let mut h = Harness {
                engine,
                rx: HashMap::new(),
                tokens: HashSet::new(),
                last_token: HashMap::new(),
            };
            for session in 1..=sessions {
                let (tx, rx) = mpsc::unbounded_channel();
                h.engine.apply(Command::Open { session, sink: Arc::new(tx) });
                h.rx.insert(session, rx);
            }
            h
        }

        fn lock(&self, session: u64, id: u64, name: &str, r: Range<u64>, mode: Mode, wait: bool) {
            let name = (!name.is_empty()).then(|| Arc::from(name.as_bytes()));
            let (start, end) = (r.start, r.end);
            let may_wait = wait;
            let (nonce, arrived) = (id, 0);
            let desired = None;
            let cmd = Command::Lock {
                session,
                id,
                start,
                end,
                name,
                mode,
                may_wait,
                nonce,
                arrived,
                desired,
            };
            self.engine.apply(cmd);
        }

        /// The answers `session` got since the last call: `(op, id, status)`.
        fn answers(&mut self, session: u64) -> Vec<(u8, u64, Status)> {
            let rx = self.rx.get_mut(&session).expect("open");
            let mut v = Vec::new();
            while let Ok(r) = rx.try_recv() {
                if r.op == op::LOCK && r.status == Status::Ok {
                    assert!(self.tokens.insert(r.value), "fencing tokens are unique");
                    // A session's answers come in grant order, whatever the resource.
                    let last = self.last_token.entry(session).or_insert(0);
                    assert!(r.value > *last, "tokens grow across names");
                    *last = r.value;
                }
                v.push((r.op, r.id, r.status));
            }
            v
        }

        /// The one LOCK answer of `session` since the last call.
        fn lock_answer(&mut self, session: u64) -> Option<Status> {
            let a: Vec<_> = self.answers(session).into_iter().filter(|a| a.0 == op::LOCK).collect();
            assert!(a.len() <= 1, "{a:?}");
            a.first().map(|a| a.2)
        }

        fn names(&self) -> usize {
            self.engine.names_live()
        }
    }

    const X: Mode = Mode::Exclusive;

    #[test]
    fn different_names_never_conflict_while_the_same_name_does() {
        let mut h = Harness::new(2);
        h.lock(1, 1, "a", 0..10, X, false);
        h.lock(2, 1, "b", 0..10, X, false);
        h.lock(2, 2, "", 0..10, X, false);
        assert_eq!(h.lock_answer(1), Some(Status::Ok));
        assert_eq!(h.answers(2).len(), 2);
        h.lock(2, 3, "a", 5..6, X, false);
        assert_eq!(h.lock_answer(2), Some(Status::WouldBlock), "the same name conflicts");
        h.lock(2, 4, "a", 5..6, Mode::Shared, true);
        assert_eq!(h.lock_answer(2), None, "it waits");
        // A release of another name or of the unnamed resource does not grant it.
        h.engine.apply(Command::Unlock { session: 2, id: 5, target: 1 });
        h.engine.apply(Command::Unlock { session: 2, id: 6, target: 2 });
        assert_eq!(h.lock_answer(2), None);
        h.engine.apply(Command::Unlock { session: 1, id: 2, target: 1 });
        assert_eq!(h.lock_answer(2), Some(Status::Ok), "granted when `a` is released");
        // Shared holders of one name share.
        h.lock(1, 3, "a", 0..10, Mode::Shared, false);
        assert_eq!(h.lock_answer(1), Some(Status::Ok));
        assert_eq!(h.names(), 1);
    }

    #[test]
    fn names_live_only_while_held_or_queued() {
        let mut h = Harness::new(2);
        assert_eq!(h.names(), 0);
        h.lock(1, 1, "a", 0..10, X, false);
        assert_eq!(h.lock_answer(1), Some(Status::Ok));
        assert_eq!(h.names(), 1);
        // A refused try leaves nothing behind.
        h.lock(2, 1, "a", 0..10, X, false);
        assert_eq!(h.lock_answer(2), Some(Status::WouldBlock));
        h.lock(2, 2, "b", 0..10, X, false);
        assert_eq!(h.lock_answer(2), Some(Status::Ok));
        assert_eq!(h.names(), 2);
        h.engine.apply(Command::Unlock { session: 2, id: 3, target: 2 });
        assert_eq!(h.names(), 1, "`b` left with its release");
        // A cancelled waiter and a timed-out one: `a` stays while held, then leaves.
        h.lock(2, 4, "a", 0..10, X, true);
        h.engine.apply(Command::Cancel { session: 2, id: 5, target: 4 });
        assert!(h.answers(2).contains(&(op::CANCEL, 5, Status::Ok)));
        h.lock(2, 6, "c", 0..10, X, false);
        h.lock(2, 7, "c", 0..10, X, true);
        assert_eq!(h.names(), 2);
        h.engine.apply(Command::Expire { session: 2, target: 7, nonce: 7 });
        assert!(h.answers(2).contains(&(op::LOCK, 7, Status::TimedOut)));
        h.engine.apply(Command::Unlock { session: 2, id: 8, target: 6 });
        assert_eq!(h.names(), 1, "`c` left after its waiter timed out and its holder left");
        h.lock(2, 9, "a", 0..10, X, true);
        h.engine.apply(Command::Unlock { session: 1, id: 2, target: 1 });
        assert_eq!(h.lock_answer(2), Some(Status::Ok), "the waiter got `a`");
        assert_eq!(h.names(), 1);
        // A session's close ends its held and waiting named locks.
        h.lock(1, 3, "a", 0..10, X, true);
        h.lock(1, 4, "d", 0..10, X, false);
        assert_eq!(h.names(), 2);
        h.engine.apply(Command::Close { session: 1 });
        assert_eq!(h.names(), 1);
        h.engine.apply(Command::Unlock { session: 2, id: 10, target: 9 });
        assert_eq!(h.names(), 0);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Lock { session: u64, start: u64, len: u64, shared: bool, may_wait: bool, name: u8 },
        Unlock { session: u64, pick: usize },
        Cancel { session: u64, pick: usize },
        Expire { session: u64, pick: usize },
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let s = 1u64..4;
        proptest::collection::vec(
            prop_oneof![
                6 => (s.clone(), 0u64..30, 1u64..10, any::<bool>(), prop::bool::weighted(0.7), 0u8..3)
                    .prop_map(|(session, start, len, shared, may_wait, name)| Op::Lock { session, start, len, shared, may_wait, name }),
                4 => (s.clone(), any::<usize>()).prop_map(|(session, pick)| Op::Unlock { session, pick }),
                1 => (s.clone(), any::<usize>()).prop_map(|(session, pick)| Op::Cancel { session, pick }),
                1 => (s, any::<usize>()).prop_map(|(session, pick)| Op::Expire { session, pick }),
            ],
            1..100,
        )
    }

    /// Every entry of every session: `(name, range, mode, held)`.
    fn entries(e: &RangeLockEngine) -> Vec<(Vec<u8>, Range<u64>, Mode, bool)> {
        let sessions: Vec<SessionRef> = lock(&e.sessions).values().cloned().collect();
        let mut v = Vec::new();
        for s in sessions {
            for en in lock(&s).locks.values() {
                let name = en.res.as_ref().map_or(Vec::new(), |n| n.key.name.to_vec());
                v.push((name, en.start..en.end, en.mode, matches!(en.state, State::Held { .. })));
            }
        }
        v
    }

    /// Threads, each a session, lock, wait for, cancel and release random ranges of three
    /// resources at once: conflicting holders of one resource never overlap (checked on a
    /// count per unit), and at the end nothing is held, queued or live.
    #[test]
    fn concurrent_sessions_on_names_exclude_per_name_and_leave_nothing() {
        const UNITS: u64 = 24;
        let limits = TableLimits {
            max_locks_per_session: 100,
            max_stats_entries: 100,
            max_stats_bytes: 1 << 20,
            max_names: 1 << 20,
        };
        let engine = RangeLockEngine::new(GrantMode::Push, limits, Arc::default(), None);
        // Per resource and unit: -1 held exclusive, n > 0 held shared n times.
        let units: Vec<Mutex<Vec<i32>>> =
            (0..3).map(|_| Mutex::new(vec![0; UNITS as usize])).collect();
        let take = |res: usize, r: Range<u64>, mode: Mode| {
            let mut u = lock(&units[res]);
            for x in &mut u[r.start as usize..r.end as usize] {
                match mode {
                    Mode::Exclusive => {
                        assert_eq!(*x, 0, "an exclusive holder overlaps another holder");
                        *x = -1;
                    }
                    Mode::Shared => {
                        assert!(*x >= 0, "a shared holder overlaps an exclusive one");
                        *x += 1;
                    }
                }
            }
        };
        let give = |res: usize, r: Range<u64>, mode: Mode| {
            let mut u = lock(&units[res]);
            for x in &mut u[r.start as usize..r.end as usize] {
                *x = if mode == Mode::Exclusive { 0 } else { *x - 1 };
            }
        };
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                let (engine, take, give) = (&engine, &take, &give);
                scope.spawn(move || {
                    let session = t + 1;
                    let (tx, mut rx) = mpsc::unbounded_channel();
                    engine.apply(Command::Open { session, sink: Arc::new(tx) });
                    let mut answer = |op_: u8, id: u64| loop {
                        let r = rx.blocking_recv().expect("the session is open");
                        if (r.op, r.id) == (op_, id) {
                            return r.status;
                        }
                    };
                    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t << 32);
                    let mut next = move |n: u64| {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng % n
                    };
                    for i in 0..300u64 {
                        let id = 2 * i + 1;
                        let res = next(3) as usize;
                        let start = next(UNITS - 1);
                        let range = start..(start + 1 + next(6)).min(UNITS);
                        let mode = if next(3) == 0 { Mode::Shared } else { X };
                        let name = [None, Some(b"a"), Some(b"b")][res].map(|n| Arc::from(&n[..]));
                        let (may_wait, cancel) = match next(8) {
                            0 => (false, false),
                            1 => (true, true),
                            _ => (true, false),
                        };
                        let (start, end) = (range.start, range.end);
                        let cmd = Command::Lock {
                            session,
                            id,
                            start,
                            end,
                            name,
                            mode,
                            may_wait,
                            nonce: id,
                            arrived: 0,
                            desired: None,
                        };
                        engine.apply(cmd);
                        if cancel {
                            engine.apply(Command::Cancel { session, id: id + 1, target: id });
                        }
                        match answer(op::LOCK, id) {
                            Status::Ok => {
                                take(res, range.clone(), mode);
                                std::thread::yield_now();
                                give(res, range, mode);
                                engine.apply(Command::Unlock { session, id: id + 1, target: id });
                                assert_eq!(answer(op::UNLOCK, id + 1), Status::Ok);
                            }
                            Status::WouldBlock => assert!(!may_wait),
                            Status::Cancelled => assert!(cancel),
                            s => panic!("{s:?}"),
                        }
                    }
                    engine.apply(Command::Close { session });
                });
            }
        });
        assert_eq!(engine.names_live(), 0, "no name is left behind");
        assert!(lock(&engine.waiters).by_seq.is_empty(), "no waiter is left behind");
        let c = engine.snapshot().counters;
        assert_eq!((c.holders, c.waiters), (0, 0));
        assert!(c.grants > 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Run one command at a time: holders of a resource never conflict, a waiter
        /// conflicts with a holder of its own resource, and the names live are exactly the
        /// names with entries, each counting them.
        #[test]
        fn names_are_separate_resources_that_live_while_used(ops in ops()) {
            let mut h = Harness::new(3);
            let mut mine: HashMap<u64, Vec<u64>> = HashMap::new();
            for (id, o) in (1u64..).zip(ops) {
                let pick = |mine: &HashMap<u64, Vec<u64>>, s: u64, p: usize| {
                    mine.get(&s).filter(|v| !v.is_empty()).map(|v| v[p % v.len()])
                };
                match o {
                    Op::Lock { session, start, len, shared, may_wait, name } => {
                        let mode = if shared { Mode::Shared } else { X };
                        let name = ["", "a", "b"][usize::from(name)];
                        h.lock(session, id, name, start..start + len, mode, may_wait);
                        mine.entry(session).or_default().push(id);
                    }
                    Op::Unlock { session, pick: p } => {
                        if let Some(target) = pick(&mine, session, p) {
                            h.engine.apply(Command::Unlock { session, id, target });
                        }
                    }
                    Op::Cancel { session, pick: p } => {
                        if let Some(target) = pick(&mine, session, p) {
                            h.engine.apply(Command::Cancel { session, id, target });
                        }
                    }
                    Op::Expire { session, pick: p } => {
                        if let Some(target) = pick(&mine, session, p) {
                            h.engine.apply(Command::Expire { session, target, nonce: target });
                        }
                    }
                }
                for s in 1..=3 {
                    h.answers(s);
                }
                let all = entries(&h.engine);
                for (i, a) in all.iter().enumerate() {
                    let conflicts = |b: &(Vec<u8>, Range<u64>, Mode, bool)| {
                        a.0 == b.0 && overlaps(&a.1, &b.1) && !a.2.compatible(b.2)
                    };
                    if a.3 {
                        let other =
                            all.iter().enumerate().any(|(j, b)| j != i && b.3 && conflicts(b));
                        prop_assert!(!other, "conflicting holders: {all:?}");
                    } else {
                        let blocked = all.iter().any(|b| b.3 && conflicts(b));
                        prop_assert!(blocked, "a waiter could go: {all:?}");
                    }
                }
                let names: HashSet<&[u8]> =
                    all.iter().filter(|e| !e.0.is_empty()).map(|e| &e.0[..]).collect();
                prop_assert_eq!(h.names(), names.len());
                let users: usize = h.engine.names.shards.iter()
                    .map(|s| lock(s).values().map(|l| l.users).sum::<usize>())
                    .sum();
                prop_assert_eq!(users, all.iter().filter(|e| !e.0.is_empty()).count());
            }
        }
    }
}
