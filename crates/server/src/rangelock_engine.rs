//! The `rangelock` engine: handlers drive the lock-free in-process skip-list
//! `rangelock::RangeLock` (its raw core [`SkipList`]) directly; no table, no combiner.
//!
//! # Algorithm
//!
//! * `LOCK` first calls `try_lock` on the handler thread (lock-free fast path). On a
//!   conflict, a `try` is answered `WOULD_BLOCK`; otherwise the request is recorded as
//!   waiting and a blocking-pool thread waits in `lock_until` slices of [`WAIT_SLICE`],
//!   checking between slices whether the request was withdrawn.
//! * Bookkeeping (live locks by id, released ids, poll outcomes) is per session, under a
//!   per-session mutex that only the session's own handler, its timers and its waiting
//!   threads touch; a global registry of sessions is locked only on open, close and stats.
//! * A waiter that acquires the range re-checks, under the session mutex, that its entry
//!   is still waiting; if it was withdrawn (cancel, timeout, unlock, close) meanwhile it
//!   releases the range at once. Withdrawal happens under the same mutex, so exactly one of
//!   "granted" and "withdrawn" wins.
//! * Fencing tokens come from one atomic counter, taken after the range is acquired: a
//!   holder that conflicts with an earlier one acquired after that one released, which
//!   was after it took its token — so conflicting holders see increasing tokens, and all
//!   tokens are distinct and increase in grant order.
//!
//! # Trade-offs
//!
//! Mutual exclusion is the skip list's; so is the waiting order — there is no FIFO per
//! overlap as with the table engines, and a `try` fails only on a conflicting *holder*.
//! Every waiting request occupies a blocking-pool thread and wakes every slice to notice a
//! withdrawal; this engine suits many short holds with few long waits. Stats are a
//! snapshot assembled session by session, not an atomic picture.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rangelock::{RawRangeLock, SkipList, SkipToken};

use crate::protocol::{
    op, Counters, EntryState, GrantMode, Mode, ResponseFrame, StatsBody, StatsEntry, Status,
};
use crate::table::{Command, ReplySink, TableLimits, RELEASED_MEMORY};

/// How long a waiting thread sleeps in the skip list before checking for withdrawal.
pub(crate) const WAIT_SLICE: Duration = Duration::from_millis(20);

#[derive(Debug)]
enum State {
    Held { token: u64, raw: SkipToken },
    Waiting { withdrawn: Arc<AtomicBool> },
}

#[derive(Debug)]
struct Entry {
    start: u64,
    end: u64,
    mode: Mode,
    seq: u64,
    nonce: u64,
    state: State,
}

#[derive(Debug)]
struct Session {
    sink: ReplySink,
    locks: HashMap<u64, Entry>,
    released_order: VecDeque<u64>,
    released: HashSet<u64>,
    outcomes: HashMap<u64, Status>,
}

impl Session {
    fn reply(&self, r: ResponseFrame) {
        // Replies come from handlers and from waiting threads alike: send each at once.
        crate::reply::send_now(&self.sink, r);
    }

    fn remember_released(&mut self, id: u64) {
        if self.released.insert(id) {
            self.released_order.push_back(id);
            if self.released_order.len() > RELEASED_MEMORY {
                if let Some(old) = self.released_order.pop_front() {
                    self.released.remove(&old);
                }
            }
        }
    }
}

type SessionRef = Arc<Mutex<Session>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
    errors: AtomicU64,
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
    lock: Arc<SkipList>,
    sessions: Mutex<HashMap<u64, SessionRef>>,
    grant: GrantMode,
    limits: TableLimits,
    seq: AtomicU64,
    counters: Arc<AtomicCounters>,
    handler_errors: Arc<AtomicU64>,
    /// Set by [`Command::Shutdown`]: no new locks (waiters are withdrawn at that moment).
    shutting_down: AtomicBool,
}

impl RangeLockEngine {
    pub(crate) fn new(
        grant: GrantMode,
        limits: TableLimits,
        handler_errors: Arc<AtomicU64>,
    ) -> Self {
        RangeLockEngine {
            lock: Arc::new(SkipList::new()),
            sessions: Mutex::new(HashMap::new()),
            grant,
            limits,
            seq: AtomicU64::new(0),
            counters: Arc::new(AtomicCounters::default()),
            handler_errors,
            shutting_down: AtomicBool::new(false),
        }
    }

    fn session(&self, id: u64) -> Option<SessionRef> {
        lock(&self.sessions).get(&id).cloned()
    }

    fn reply(&self, s: &Session, r: ResponseFrame) {
        if r.status.is_error() {
            inc(&self.counters.errors);
        }
        s.reply(r);
    }

    /// Executes one command (from a handler or a timer, inside the runtime).
    pub(crate) fn apply(&self, cmd: Command) {
        match cmd {
            Command::Open { session, sink } => {
                let s = Session {
                    sink,
                    locks: HashMap::new(),
                    released_order: VecDeque::new(),
                    released: HashSet::new(),
                    outcomes: HashMap::new(),
                };
                lock(&self.sessions).insert(session, Arc::new(Mutex::new(s)));
                inc(&self.counters.sessions_open);
                inc(&self.counters.sessions_total);
            }
            Command::Lock { session, id, start, end, mode, may_wait, nonce } => {
                if let Some(s) = self.session(session) {
                    self.lock_cmd(&s, id, start, end, mode, may_wait, nonce);
                }
            }
            Command::Unlock { session, id, target } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let status =
                    match g.locks.get(&target).map(|e| matches!(e.state, State::Held { .. })) {
                        Some(true) => {
                            let e = g.locks.remove(&target).expect("present");
                            self.release(e);
                            inc(&self.counters.releases);
                            g.remember_released(target);
                            Status::Ok
                        }
                        Some(false) => {
                            self.withdraw(&mut g, target, Status::Cancelled);
                            Status::Ok
                        }
                        None if g.released.contains(&target) => Status::AlreadyReleased,
                        None if g.outcomes.remove(&target).is_some() => Status::AlreadyReleased,
                        None => Status::NotHeld,
                    };
                self.reply(&g, ResponseFrame::new(op::UNLOCK, id, status, 0));
            }
            Command::Cancel { session, id, target } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let status =
                    match g.locks.get(&target).map(|e| matches!(e.state, State::Held { .. })) {
                        Some(true) => Status::NotWaiting,
                        Some(false) => {
                            self.withdraw(&mut g, target, Status::Cancelled);
                            Status::Ok
                        }
                        None => Status::NotHeld,
                    };
                self.reply(&g, ResponseFrame::new(op::CANCEL, id, status, 0));
            }
            Command::Poll { session, id, target } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let (status, value) = match g.locks.get(&target).map(|e| &e.state) {
                    Some(State::Held { token, .. }) => (Status::Ok, *token),
                    Some(State::Waiting { .. }) => (Status::Pending, 0),
                    None => match g.outcomes.remove(&target) {
                        Some(st) => (st, 0),
                        None if g.released.contains(&target) => (Status::AlreadyReleased, 0),
                        None => (Status::NotHeld, 0),
                    },
                };
                self.reply(&g, ResponseFrame::new(op::POLL, id, status, value));
            }
            Command::Expire { session, target, nonce } => {
                let Some(s) = self.session(session) else { return };
                let mut g = lock(&s);
                let waiting = matches!(
                    g.locks.get(&target),
                    Some(Entry { state: State::Waiting { .. }, nonce: n, .. }) if *n == nonce
                );
                if waiting {
                    self.withdraw(&mut g, target, Status::TimedOut);
                }
            }
            Command::Stats { session, id, max_entries } => self.stats(session, id, max_entries),
            Command::Shutdown => {
                self.shutting_down.store(true, Ordering::Relaxed);
                let sessions: Vec<SessionRef> = lock(&self.sessions).values().cloned().collect();
                for s in sessions {
                    let mut g = lock(&s);
                    let waiting: Vec<u64> = g
                        .locks
                        .iter()
                        .filter(|(_, e)| matches!(e.state, State::Waiting { .. }))
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
                for (_, e) in g.locks.drain() {
                    match e.state {
                        State::Held { .. } => {
                            inc(&self.counters.released_by_close);
                            self.release(e);
                        }
                        State::Waiting { withdrawn } => {
                            withdrawn.store(true, Ordering::Relaxed);
                            dec(&self.counters.waiters);
                        }
                    }
                }
                dec(&self.counters.sessions_open);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lock_cmd(
        &self,
        s: &SessionRef,
        id: u64,
        start: u64,
        end: u64,
        mode: Mode,
        may_wait: bool,
        nonce: u64,
    ) {
        let mut g = lock(s);
        let error = self.limits.refuse_lock(
            self.shutting_down.load(Ordering::Relaxed),
            start,
            end,
            g.locks.contains_key(&id) || g.outcomes.contains_key(&id),
            g.locks.len() + g.outcomes.len(),
        );
        if let Some(status) = error {
            self.reply(&g, ResponseFrame::new(op::LOCK, id, status, 0));
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        g.released.remove(&id);
        if let Some(raw) = self.lock.try_lock(start..end, mode) {
            let token = self.granted();
            g.locks.insert(
                id,
                Entry { start, end, mode, seq, nonce, state: State::Held { token, raw } },
            );
            self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::Ok, token));
            return;
        }
        if !may_wait {
            inc(&self.counters.would_block);
            self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::WouldBlock, 0));
            return;
        }
        let withdrawn = Arc::new(AtomicBool::new(false));
        let state = State::Waiting { withdrawn: withdrawn.clone() };
        g.locks.insert(id, Entry { start, end, mode, seq, nonce, state });
        inc(&self.counters.waiters);
        if self.grant == GrantMode::Poll {
            self.reply(&g, ResponseFrame::new(op::LOCK, id, Status::Pending, 0));
        }
        drop(g);
        let waiter = Waiter {
            lock: self.lock.clone(),
            session: s.clone(),
            counters: self.counters.clone(),
            push: self.grant == GrantMode::Push,
            id,
            nonce,
            range: start..end,
            mode,
            withdrawn,
        };
        tokio::task::spawn_blocking(move || waiter.run());
    }

    /// Takes the next fencing token.
    fn granted(&self) -> u64 {
        inc(&self.counters.holders);
        self.counters.grants.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Releases a held entry's range.
    fn release(&self, e: Entry) {
        if let State::Held { raw, .. } = e.state {
            dec(&self.counters.holders);
            // SAFETY: `raw` came from an acquisition on `self.lock` and the entry that owned
            // it has just been removed from its session, so it is released exactly once.
            unsafe { self.lock.unlock(raw) };
        }
    }

    /// Withdraws a waiting entry; its thread notices within a slice (or on acquiring).
    fn withdraw(&self, g: &mut Session, target: u64, status: Status) {
        let Some(e) = g.locks.remove(&target) else { return };
        if let State::Waiting { withdrawn } = &e.state {
            withdrawn.store(true, Ordering::Relaxed);
        }
        dec(&self.counters.waiters);
        match status {
            Status::TimedOut => inc(&self.counters.timeouts),
            Status::Cancelled => inc(&self.counters.cancels),
            _ => {}
        }
        match self.grant {
            GrantMode::Push => g.reply(ResponseFrame::new(op::LOCK, target, status, 0)),
            GrantMode::Poll if matches!(status, Status::TimedOut | Status::ShuttingDown) => {
                g.outcomes.insert(target, status);
            }
            GrantMode::Poll => g.remember_released(target),
        }
    }

    fn stats(&self, session: u64, id: u64, max_entries: u32) {
        let sessions: Vec<(u64, SessionRef)> =
            lock(&self.sessions).iter().map(|(k, v)| (*k, v.clone())).collect();
        let mut all: Vec<(u64, StatsEntry)> = Vec::new();
        for (sid, s) in &sessions {
            for (lid, e) in lock(s).locks.iter() {
                let (state, token) = match e.state {
                    State::Held { token, .. } => (EntryState::Held, token),
                    State::Waiting { .. } => (EntryState::Waiting, 0),
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
                    },
                ));
            }
        }
        all.sort_unstable_by_key(|(seq, _)| *seq);
        let max = max_entries.min(self.limits.max_stats_entries) as usize;
        let entries = all.into_iter().take(max).map(|(_, e)| e).collect();
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
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
            errors: get(&c.errors) + get(&self.handler_errors),
        };
        let mut r = ResponseFrame::new(op::STATS, id, Status::Ok, 0);
        r.stats = Some(StatsBody { counters, entries });
        if let Some(s) = self.session(session) {
            lock(&s).reply(r);
        }
    }
}

/// A waiting request, run on a blocking-pool thread.
struct Waiter {
    lock: Arc<SkipList>,
    session: SessionRef,
    counters: Arc<AtomicCounters>,
    push: bool,
    id: u64,
    nonce: u64,
    range: std::ops::Range<u64>,
    mode: Mode,
    withdrawn: Arc<AtomicBool>,
}

impl Waiter {
    fn run(self) {
        loop {
            if self.withdrawn.load(Ordering::Relaxed) {
                return;
            }
            let deadline = Instant::now() + WAIT_SLICE;
            let Some(raw) = self.lock.lock_until(self.range.clone(), self.mode, deadline) else {
                continue;
            };
            let mut g = lock(&self.session);
            let still_waiting = matches!(
                g.locks.get(&self.id),
                Some(Entry { state: State::Waiting { .. }, nonce, .. }) if *nonce == self.nonce
            );
            if !still_waiting {
                drop(g);
                // SAFETY: `raw` was just acquired on this lock and never stored anywhere.
                unsafe { self.lock.unlock(raw) };
                return;
            }
            dec(&self.counters.waiters);
            inc(&self.counters.holders);
            let token = self.counters.grants.fetch_add(1, Ordering::Relaxed) + 1;
            let e = g.locks.get_mut(&self.id).expect("checked above");
            e.state = State::Held { token, raw };
            if self.push {
                g.reply(ResponseFrame::new(op::LOCK, self.id, Status::Ok, token));
            }
            return;
        }
    }
}
