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

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rangelock::internals::{overlaps, RawRangeLock, SkipList, SkipToken};

use crate::metrics::{AtomicTimings, Clock, EngineSnapshot, ErrorCounts};
use crate::protocol::{
    op, stats_named_entries_within, Counters, EntryState, GrantMode, Mode, ResponseFrame,
    StatsBody, StatsEntry, Status,
};
use crate::table::{Command, Ended, Handle, IntervalTree, ReplySink, TableLimits};

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
}

/// Waiting requests by range and arrival order; see the module docs.
#[derive(Debug)]
struct Registry {
    tree: IntervalTree<Waiter>,
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
    lock: SkipList,
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
            Command::Lock { session, id, start, end, name, mode, may_wait, nonce, arrived } => {
                debug_assert!(name.is_none(), "the rangelock engine serves no names yet");
                if let Some(s) = self.session(session) {
                    self.lock_cmd(&s, id, start..end, mode, may_wait, nonce, arrived);
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
                if let Some(range) = freed {
                    self.wake(range);
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
            Command::Stats { session, id, max_entries, named } => {
                self.stats(session, id, max_entries, named)
            }
            // A cluster node never runs this engine (`ServerConfig::validate`).
            Command::Reclaim { session, id, .. } => {
                if let Some(s) = self.session(session) {
                    let r = ResponseFrame::new(op::RECLAIM, id, Status::NotClustered, 0);
                    self.reply(&lock(&s), r);
                }
            }
            Command::Partition { .. } | Command::Expect { .. } => {}
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
                        }
                    }
                }
                drop(g);
                dec(&self.counters.sessions_open);
                for range in freed {
                    self.wake(range);
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
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let (start, end) = (range.start, range.end);
        if let Some(raw) = self.lock.try_lock(range.clone(), mode) {
            let (token, stamp) = self.granted(arrived);
            let state = State::Held { token, raw };
            g.locks.insert(id, Entry { start, end, mode, seq, nonce, state, stamp });
            self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::Ok, token));
            return;
        }
        if may_wait {
            let state = State::Waiting;
            g.locks.insert(id, Entry { start, end, mode, seq, nonce, state, stamp: arrived });
            // Counted before a `wake` can install (and uncount) it.
            inc(&self.counters.waiters);
            let mut reg = lock(&self.waiters);
            let waiter = Waiter { session: s.clone(), id, nonce, mode };
            let h = reg.tree.insert(start, end, seq, waiter);
            reg.by_seq.insert(seq, h);
            // Registered: from here on a release's `wake` retries it. Retry once more for a
            // release that came between the fast path and the registration.
            if let Some(raw) = self.lock.try_lock(range.clone(), mode) {
                reg.remove(seq);
                drop(reg);
                dec(&self.counters.waiters);
                let (token, stamp) = self.granted(arrived);
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
        }
        drop(g);
        // The failed fast-path attempt may have made a retry inside another `wake` fail.
        self.wake(range);
    }

    /// Retries the registered waiters overlapping `range` and installs the ones that get
    /// it; see the module docs. Called with no session mutex held.
    fn wake(&self, range: Range<u64>) {
        let mut pending = vec![range];
        while let Some(range) = pending.pop() {
            for g in self.retry_waiters(range) {
                if let Some(freed) = self.install(g) {
                    pending.push(freed);
                }
            }
        }
    }

    /// Under the registry mutex: `try_lock` for each waiter overlapping `range`, in arrival
    /// order; takes the ones that succeed out of the registry.
    fn retry_waiters(&self, range: Range<u64>) -> Vec<Granted> {
        let mut granted: Vec<Granted> = Vec::new();
        let mut reg = lock(&self.waiters);
        if reg.by_seq.is_empty() || self.shutting_down.load(Ordering::Relaxed) {
            return granted;
        }
        let mut hs = std::mem::take(&mut reg.scratch);
        hs.clear();
        reg.tree.overlaps(range.start, range.end, &mut hs);
        let mut order: Vec<(u64, Handle)> =
            hs.iter().map(|h| (reg.tree.interval(*h).2, *h)).collect();
        order.sort_unstable_by_key(|(seq, _)| *seq);
        for (seq, h) in order {
            let (start, end, _) = reg.tree.interval(h);
            let mode = reg.tree.get(h).mode;
            let blocked_by_grant = granted
                .iter()
                .any(|g| overlaps(&g.range, &(start..end)) && !g.waiter.mode.compatible(mode));
            if blocked_by_grant {
                continue;
            }
            if let Some(raw) = self.lock.try_lock(start..end, mode) {
                let waiter = reg.remove(seq).expect("registered");
                granted.push(Granted { waiter, range: start..end, raw });
            }
        }
        reg.scratch = hs;
        granted
    }

    /// Makes an acquired waiter's entry held and tells its client. If the entry was
    /// withdrawn meanwhile, releases the range and returns it (to wake others).
    fn install(&self, g: Granted) -> Option<Range<u64>> {
        let Granted { waiter, range, raw } = g;
        let mut s = lock(&waiter.session);
        let entry = s.locks.get_mut(&waiter.id).filter(|e| {
            matches!(e.state, State::Waiting)
                && e.nonce == waiter.nonce
                && !self.shutting_down.load(Ordering::Relaxed)
        });
        let Some(entry) = entry else {
            drop(s);
            // SAFETY: `raw` was acquired on `self.lock` by `retry_waiters` and is owned by
            // nobody else: the entry it was for is gone.
            unsafe { self.lock.unlock(raw) };
            return Some(range);
        };
        dec(&self.counters.waiters);
        let (token, stamp) = self.granted(entry.stamp);
        (entry.state, entry.stamp) = (State::Held { token, raw }, stamp);
        if self.grant == GrantMode::Push {
            s.reply(ResponseFrame::new(op::LOCK, waiter.id, Status::Ok, token));
        }
        None
    }

    /// Counts a grant of a request stamped `stamp` (its arrival) and takes the next
    /// fencing token; returns it and the entry's new stamp (its grant).
    fn granted(&self, stamp: u64) -> (u64, u64) {
        inc(&self.counters.holders);
        let token = self.counters.grants.fetch_add(1, Ordering::Relaxed) + 1;
        (token, self.timings.as_ref().map_or(0, |t| t.granted(stamp)))
    }

    /// Releases a held entry's range and returns it; the caller wakes it once it holds no
    /// session mutex.
    fn release(&self, e: Entry) -> Range<u64> {
        if let State::Held { raw, .. } = e.state {
            dec(&self.counters.holders);
            if let Some(t) = &self.timings {
                t.released(e.stamp);
            }
            // SAFETY: `raw` came from an acquisition on `self.lock` and the entry that owned
            // it has just been removed from its session, so it is released exactly once.
            unsafe { self.lock.unlock(raw) };
        }
        e.start..e.end
    }

    /// Withdraws a waiting entry (under its session mutex) and answers or records it.
    fn withdraw(&self, g: &mut Session, target: u64, status: Status) {
        let Some(e) = g.locks.remove(&target) else { return };
        // If `wake` took it out already, its install finds the entry gone and releases.
        lock(&self.waiters).remove(e.seq);
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

    /// `STATS`, or with `named` `STATS_NAMED` (this engine serves no names yet: every
    /// entry is of the unnamed resource).
    fn stats(&self, session: u64, id: u64, max_entries: u32, named: bool) {
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
                        name: None,
                    },
                ));
            }
        }
        all.sort_unstable_by_key(|(seq, _)| *seq);
        let max = max_entries.min(self.limits.max_stats_entries) as usize;
        let total = all.len();
        let mut entries: Vec<StatsEntry> = all.into_iter().take(max).map(|(_, e)| e).collect();
        if named {
            entries.truncate(stats_named_entries_within(self.limits.max_stats_bytes, &entries));
        }
        let omitted = (total - entries.len()) as u64;
        let body = StatsBody { counters: self.snapshot().counters, entries, omitted };
        let r = if named {
            ResponseFrame::stats_named(id, body)
        } else {
            ResponseFrame::stats(id, body)
        };
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
            // No names here yet.
            names_live: 0,
            named_holders: 0,
        };
        let (wait, hold) = match &self.timings {
            Some(t) => (t.wait.snapshot(), t.hold.snapshot()),
            None => Default::default(),
        };
        EngineSnapshot { counters, errors, wait, hold }
    }
}
