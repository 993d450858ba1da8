//! The lock table: an interval tree of held and queued locks with blocking-range counts.
//!
//! # Algorithm (seed 3, §4.3.3, made complete)
//!
//! Every lock request gets an arrival number `seq`. A request entering the table counts
//! the *conflicting* entries already in it that overlap its range — held or still
//! waiting; a shared request counts only exclusive ones, an exclusive one counts all.
//! That count is its `blocking` number. It is inserted either way (unless it is a `try`
//! with a non-zero count, which is answered `WOULD_BLOCK` and forgotten). With
//! `blocking == 0` it is granted at once.
//!
//! When an entry `X` leaves the table (unlock, cancel, timeout, session close) every entry
//! `Y` overlapping it with `Y.seq > X.seq` and a conflicting mode has its `blocking`
//! decremented; a `Y` that reaches zero is granted.
//!
//! # Invariants and correctness
//!
//! * **`Y.blocking` = number of entries `X` in the table with `X.seq < Y.seq`, overlapping
//!   and conflicting with `Y`.** True at insertion (the table holds exactly the entries that
//!   arrived earlier and are still present); removal of `X` decrements exactly the `Y` that
//!   counted `X` (later, overlapping, conflicting); nothing else changes the set.
//! * **Mutual exclusion.** If `A` and `B` overlap and conflict and both are held, the later
//!   one, say `B`, counted `A` while `A` is present, so `B.blocking >= 1` — it cannot have
//!   been granted. Hence a held entry has `blocking == 0` forever after.
//! * **FIFO fairness per overlap.** A request waits for every earlier conflicting
//!   overlapping request, queued or held, so a stream of readers cannot starve a writer
//!   and grants among conflicting requests follow arrival order.
//! * **Liveness.** The earliest waiting entry among any chain has nothing earlier to wait
//!   for but holders; holders leave by unlock, session close or lease expiry.
//! * **Fencing tokens** come from one counter incremented per grant; the table is driven
//!   by one thread at a time, so tokens strictly increase across all grants.
//! * **Handed-over entries** (cluster nodes, after a planned move: see [`super::handover`])
//!   are ordinary entries installed in their old arrival order, so the invariants above
//!   hold for them; a returning client takes one over with its arrival number, and the
//!   pseudo-session they belong to until then is never granted anything.
//!
//! # Reclaimed locks of caching sessions
//!
//! A caching session's entries do not conflict with each other (its client orders its
//! own threads in process), and its kept extents are called back. A lock it *reclaims*
//! at a partition's new owner (`RECLAIM`, into a placeholder after a move or in the grace
//! period after a failover) is neither: it is an ordinary hold. The client's threads
//! still inside the extent it kept at the old owner must be ordered before its new local
//! locks, which now come from this node's grants; were the reclaimed lock one of the
//! session's own entries, this node would grant the same range to the same client again
//! and two of its threads would hold it. So the session's later requests wait for the
//! reclaimed hold like anyone's, nothing calls it back, and the client unlocks it when
//! its last holder inside the old extent is done (`docs/design/cached.md`, "In a
//! cluster").
//!
//! # Named resources
//!
//! Every resource has its own number line: the unnamed one is line 0, and each live name
//! gets a line of its own, never reused. The tree holds every line laid end to end, keyed
//! by `line << 64 | unit` (see [`at`]), so ranges of different names never overlap and
//! everything above holds per name with one tree, one arrival order and one token
//! counter. A name's line exists while an entry is on it: the removal of its last entry
//! forgets the name ([`LockTable::names_live`]).
//!
//! On a cluster node a named entry's partition is that of its stripe
//! ([`crate::protocol::Partitioning::partition_of_named`], from the name's hash kept with
//! its line), not of its unit: the named entries are indexed by partition, so that a
//! partition change (drop, handover, end of grace) finds them without a scan.
//!
//! # Trade-offs
//!
//! The table is sequential; engines decide who runs it (one combiner thread, any handler
//! under a mutex, or a single-threaded server). Unlock by id goes through a per-session
//! `HashMap` to the tree handle: `O(1)` to find, `O(log n + k)` to remove and wake.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::cache::{conflicting, CacheConfig, CachePolicy, History, Payoff};
use super::command::{Command, ReplySink, StatsKind};
use super::ended::Ended;
use super::handover::{Placeholders, HANDOVER_SESSION};
use super::interval_tree::{Handle, IntervalTree};
use super::partitions::{HandoverLock, PartitionChange, TablePartitions};

mod cached;
use crate::metrics::{CacheCounts, Clock, EngineSnapshot, ErrorCounts, ErrorTally, Timings};
use crate::protocol::{
    name_hash, op, stats_cached_entries_within, stats_named_entries_within, CachedGrant, Counters,
    EntryState, GrantMode, Mode, ResponseFrame, StatsBody, StatsEntry, Status,
};

/// The point of `unit` on resource line `line` (0: the unnamed resource), as the tree
/// keys it.
fn at(line: u64, unit: u64) -> u128 {
    u128::from(line) << 64 | u128::from(unit)
}

/// The unit of a tree point (its low 64 bits).
fn unit(point: u128) -> u64 {
    // Truncation intended: the low half is the unit.
    point as u64
}

/// The resource line of a tree point (its high 64 bits).
fn line(point: u128) -> u64 {
    (point >> 64) as u64
}

/// A live name: its line, and how many entries (held or waiting) are on it.
#[derive(Debug)]
struct Line {
    name: Arc<[u8]>,
    live: usize,
    /// Cluster nodes: the name's placement hash ([`name_hash`]); 0 on a single server.
    hash: u64,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    session: u64,
    id: u64,
    mode: Mode,
    nonce: u64,
    blocking: u32,
    /// `Some(token)` once granted.
    token: Option<u64>,
    /// Metrics on: when the request arrived while it waits, when it was granted once held
    /// (see `crate::metrics`); 0 and unused with metrics off.
    stamp: u64,
    /// Entered by a session that sent `CACHE_ON`: it never waits for, nor blocks, another
    /// such entry of its own session (the client orders its own threads with its
    /// in-process lock; see [`Entry::conflicts`]).
    own: bool,
    /// A cached extent the client may keep after its own unlock: a conflicting request
    /// of another session calls it back.
    kept: bool,
    /// Asked with `LOCK_CACHED`: the grant is answered with its extent.
    cached_req: bool,
    /// Metrics on: when it was first called back since its last give-back (0: not).
    called: u64,
    /// Called back since its last give-back: the next `GIVE_BACK` tells what it served.
    recalled: bool,
    /// Granted wider than asked (a piece of such a grant stays so).
    grown: bool,
}

impl Entry {
    /// Whether `self` and `other` (overlapping) exclude each other: their modes conflict,
    /// unless both are entries of one caching session. The relation is symmetric and
    /// fixed for a pair, so the blocking counts stay exact (module docs).
    /// The op of this lock request's answers: `LOCK_CACHED` for one, else `LOCK`.
    fn answer_op(&self) -> u8 {
        if self.cached_req {
            op::LOCK_CACHED
        } else {
            op::LOCK
        }
    }

    #[inline]
    fn conflicts(&self, other: &Entry) -> bool {
        conflicting(self.mode, other.mode)
            && !(self.own && other.own && self.session == other.session)
    }
}

/// What a caching session (`CACHE_ON`) adds to its state.
#[derive(Debug, Default)]
struct SessionCache {
    /// What its recalled extents served, exclusive ones at 0, shared ones at 1
    /// ([`super::cache::slot`]).
    payoff: [Payoff; 2],
    /// Its kept extents' ids, least recently granted first (stale ids are skipped).
    kept: VecDeque<u64>,
    /// How many of its entries are kept extents.
    kept_live: usize,
}

#[derive(Debug)]
struct SessionState {
    sink: ReplySink,
    /// Live locks (held or waiting) by request id.
    locks: HashMap<u64, Handle>,
    /// Locks that ended recently.
    ended: Ended,
    /// `Some` once the session sent `CACHE_ON`.
    cache: Option<SessionCache>,
}

impl SessionState {
    fn reply(&self, r: ResponseFrame) {
        // Buffered; the engine flushes after the command (or the combiner's batch). The
        // connection may be gone already; the session's Close follows.
        crate::reply::queue(&self.sink, r);
    }
}

/// Limits the table enforces.
#[derive(Clone, Copy, Debug)]
pub struct TableLimits {
    /// Live locks (held + waiting) per session.
    pub max_locks_per_session: usize,
    /// Entries in a `STATS` reply.
    pub max_stats_entries: u32,
    /// Bytes of a `STATS_NAMED` reply (the output limit; its list is cut to fit).
    pub max_stats_bytes: usize,
    /// Live names on the server.
    pub max_names: usize,
}

impl TableLimits {
    /// Why a new lock request of a session must be refused, if it must: the checks every
    /// engine makes, in this order, before touching its lock structure.
    ///
    /// `duplicate` says whether the request id is already live in the session (held or
    /// waiting); `live` counts the session's held and waiting locks. The order of the
    /// checks is the documented precedence of errors (`docs/PROTOCOL.md` §2); a range
    /// error is normally caught earlier, when the frame is decoded.
    pub(crate) fn refuse_lock(
        &self,
        shutting_down: bool,
        start: u64,
        end: u64,
        duplicate: bool,
        live: usize,
    ) -> Option<Status> {
        if shutting_down {
            Some(Status::ShuttingDown)
        } else if start >= end {
            Some(Status::InvalidRange)
        } else if duplicate {
            Some(Status::DuplicateId)
        } else if live >= self.max_locks_per_session {
            Some(Status::TooManyLocks)
        } else {
            None
        }
    }
}

/// The sequential lock table; see the module docs.
#[derive(Debug)]
pub struct LockTable {
    tree: IntervalTree<Entry, u128>,
    /// The live names by line (the unnamed resource, line 0, is not here).
    lines: HashMap<u64, Line>,
    /// The line of each live name.
    line_of: HashMap<Arc<[u8]>, u64>,
    /// The line the next new name gets (never reused in a run).
    next_line: u64,
    sessions: HashMap<u64, SessionState>,
    grant: GrantMode,
    limits: TableLimits,
    next_seq: u64,
    /// The `STATS` counters, but `errors`, which is the total of `errors` and
    /// `handler_errors`.
    counters: Counters,
    /// Error responses of the table, per status.
    errors: ErrorTally,
    /// Errors counted outside the table (by handlers), added to the table's in stats.
    handler_errors: Arc<ErrorCounts>,
    /// Metrics on: the wait and hold histograms and their clock.
    timings: Option<Timings>,
    scratch: Vec<Handle>,
    /// Set by [`Command::Shutdown`]: no more grants or new locks.
    shutting_down: bool,
    /// Cluster nodes only: which partitions this node serves, and their token counters.
    parts: Option<TablePartitions>,
    /// Cluster nodes only: the named entries (held, waiting, placeholders) by partition.
    named_on: HashMap<u32, HashSet<Handle>>,
    /// Cached locks: the policy and its bounds.
    cache: CacheConfig,
    /// Sessions that sent `CACHE_ON` (the history is kept only while there are some).
    cache_sessions: usize,
    /// Recent requests per line, for the history policy.
    history: HashMap<u64, History>,
    /// Kept extents on the server.
    kept_total: usize,
    /// Callbacks sent and give-backs done.
    cache_counts: CacheCounts,
}

impl LockTable {
    /// An empty table.
    pub fn new(grant: GrantMode, limits: TableLimits, handler_errors: Arc<ErrorCounts>) -> Self {
        LockTable {
            tree: IntervalTree::new(),
            lines: HashMap::new(),
            line_of: HashMap::new(),
            next_line: 1,
            sessions: HashMap::new(),
            grant,
            limits,
            next_seq: 0,
            counters: Counters::default(),
            errors: ErrorTally::default(),
            handler_errors,
            timings: None,
            scratch: Vec::new(),
            shutting_down: false,
            parts: None,
            named_on: HashMap::new(),
            cache: CacheConfig::default(),
            cache_sessions: 0,
            history: HashMap::new(),
            kept_total: 0,
            cache_counts: CacheCounts::default(),
        }
    }

    /// Sets how `LOCK_CACHED` is granted (default: [`CacheConfig::default`]).
    pub fn set_cache(&mut self, cache: CacheConfig) {
        self.cache = cache;
    }

    /// What cached locks did so far.
    pub fn cache_counts(&self) -> CacheCounts {
        CacheCounts { kept: self.kept_total as u64, ..self.cache_counts }
    }

    /// Makes this the table of a cluster node: it grants only on partitions it owns (see
    /// [`crate::ownership`]), with per-partition tokens.
    pub(crate) fn set_partitions(&mut self, parts: TablePartitions) {
        self.parts = Some(parts);
    }

    /// Turns the wait and hold histograms on, timed by `clock` (metrics on).
    pub(crate) fn set_metrics(&mut self, clock: Clock) {
        self.timings = Some(Timings::new(clock));
    }

    /// The metrics clock's time of the current command (0 with metrics off).
    fn stamp_now(&mut self) -> u64 {
        self.timings.as_mut().map_or(0, Timings::now)
    }

    /// Executes one command, queueing its responses on the sessions' sinks; the caller
    /// flushes them on this thread afterwards ([`LockTable::flush_replies`]), after one
    /// command or a batch.
    pub fn apply(&mut self, cmd: Command) {
        if let Some(t) = &mut self.timings {
            t.next_command();
        }
        match cmd {
            Command::Open { session, sink } => {
                self.counters.sessions_open += 1;
                self.counters.sessions_total += 1;
                self.sessions.insert(
                    session,
                    SessionState {
                        sink,
                        locks: HashMap::new(),
                        ended: Ended::default(),
                        cache: None,
                    },
                );
            }
            Command::Lock {
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
            } => self.lock(session, id, start, end, name, mode, may_wait, nonce, arrived, desired),
            Command::CacheOn { session, id } => self.cache_on(session, id),
            Command::GiveBack { session, id, target, start, end, downgrade, used } => {
                self.give_back(session, id, target, start, end, downgrade, used)
            }
            Command::Unlock { session, id, target } => self.unlock(session, id, target),
            Command::Cancel { session, id, target } => self.cancel(session, id, target),
            Command::Poll { session, id, target } => self.poll(session, id, target),
            Command::Expire { session, target, nonce } => self.expire(session, target, nonce),
            Command::Stats { session, id, max_entries, kind } => {
                self.stats(session, id, max_entries, kind)
            }
            Command::Close { session } => self.close(session),
            Command::Detach { session } => {
                if let Some(s) = self.sessions.get_mut(&session) {
                    s.sink = Arc::new(crate::reply::Discard);
                }
            }
            Command::Shutdown => self.shutdown(),
            Command::Reclaim { session, id, start, end, name, mode, token } => {
                self.reclaim(session, id, start, end, name, mode, token)
            }
            Command::Partition { partition, change } => self.partition(partition, change),
            Command::Handover { partition, report } => {
                let _ = report.send(self.entries_on(partition));
                let status = Status::NotOwner;
                self.partition(partition, PartitionChange::Drop { status });
            }
            Command::Expect { partition, locks } => self.expect(partition, locks),
            Command::Metrics { report } => {
                let _ = report.send(self.snapshot());
            }
        }
    }

    fn reply(&mut self, session: u64, r: ResponseFrame) {
        if r.status.is_error() {
            self.errors.count(r.status);
        }
        if let Some(s) = self.sessions.get(&session) {
            s.reply(r);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lock(
        &mut self,
        session: u64,
        id: u64,
        start: u64,
        end: u64,
        name: Option<Arc<[u8]>>,
        mode: Mode,
        may_wait: bool,
        nonce: u64,
        arrived: u64,
        desired: Option<(u64, u64)>,
    ) {
        let Some(s) = self.sessions.get(&session) else { return };
        let answer = if desired.is_some() { op::LOCK_CACHED } else { op::LOCK };
        let own = s.cache.is_some();
        // Precedence (PROTOCOL.md §2): shutdown and range, then ownership, then the
        // session's own limits.
        let early = self.limits.refuse_lock(self.shutting_down, start, end, false, 0);
        let cluster = || {
            let parts = self.parts.as_ref()?;
            parts.refuse_lock(parts.place(self.hash_of(name.as_ref()), start, end))
        };
        let late =
            || self.limits.refuse_lock(false, start, end, s.locks.contains_key(&id), s.locks.len());
        let refusal = early.map(|st| (st, 0)).or_else(cluster).or_else(|| late().map(|st| (st, 0)));
        if let Some((status, value)) = refusal {
            // After a planned move, a waiter coming back takes its place in the queue.
            let back = status == Status::InGrace && may_wait && late().is_none();
            let cached = desired.is_some();
            if !(back && self.requeue(session, id, start, end, name, mode, nonce, arrived, cached))
            {
                self.reply(session, ResponseFrame::new(answer, id, status, value));
            }
            return;
        }
        self.sessions.get_mut(&session).expect("checked above").ended.reuse(id);
        // A name that is not live has nothing on its line.
        let live = self.live_line(name.as_ref());
        if live.is_none() && name.is_some() && self.lines.len() >= self.limits.max_names {
            let max = self.limits.max_names as u64;
            self.reply(session, ResponseFrame::new(answer, id, Status::TooManyNames, max));
            return;
        }
        let who = own.then_some(session);
        let blocking = live.map_or(0, |l| self.blocking(l, start, end, mode, who));
        // Remembered for the history policy while any session caches.
        let now = (self.cache_sessions > 0 && self.cache.policy == CachePolicy::History)
            .then(Instant::now);
        if blocking > 0 && !may_wait {
            self.counters.would_block += 1;
            if let Some(l) = live {
                self.call_back(l, start, end, mode, session);
                self.remember(l, session, start, end, mode, now);
            }
            self.reply(session, ResponseFrame::new(answer, id, Status::WouldBlock, 0));
            return;
        }
        let (g_start, g_end, kept) = match desired {
            Some((ds, de)) if blocking == 0 => {
                self.expand(session, live, name.as_ref(), start, end, ds, de, mode, now)
            }
            _ => (start, end, false),
        };
        // The line `live_line` found, without a second lookup.
        let l = match live {
            Some(l) => self.enter_live_line(l),
            None => self.enter_line(name),
        };
        debug_assert!(blocking > 0 || self.blocking(l, g_start, g_end, mode, who) == 0);
        self.remember(l, session, start, end, mode, now);
        self.next_seq += 1;
        let entry = Entry {
            session,
            id,
            mode,
            nonce,
            blocking,
            token: None,
            stamp: arrived,
            own,
            kept,
            cached_req: desired.is_some(),
            called: 0,
            recalled: false,
            grown: (g_start, g_end) != (start, end),
        };
        let h = self.insert(l, g_start, g_end, entry);
        let s = self.sessions.get_mut(&session).expect("checked above");
        s.locks.insert(id, h);
        if kept {
            self.keep(session, id);
        }
        if blocking > 0 {
            self.call_back(l, start, end, mode, session);
        }
        if blocking == 0 && self.grant(h, false) {
            if kept {
                self.bound_kept(session);
            }
            return;
        }
        self.counters.waiters += 1;
        if blocking == 0 && !may_wait {
            // A cluster node holding grants back (its token counter ran out): a try
            // does not wait for the new epoch.
            self.remove(h);
            self.sessions.get_mut(&session).expect("checked above").locks.remove(&id);
            self.counters.would_block += 1;
            self.reply(session, ResponseFrame::new(answer, id, Status::WouldBlock, 0));
            return;
        }
        if self.grant == GrantMode::Poll {
            self.reply(session, ResponseFrame::new(answer, id, Status::Pending, 0));
        }
    }

    /// Marks an entry held and tells its owner. A lock granted at once is answered in both
    /// grant modes; a `queued` one only in push mode (the poll-mode client was told
    /// `PENDING` and finds the grant with `POLL`).
    ///
    /// A cluster node's table grants only where [`TablePartitions::mint`] gives a token;
    /// otherwise the entry stays queued (`false`) until the partition can grant again or
    /// is dropped.
    fn grant(&mut self, h: Handle, queued: bool) -> bool {
        let token = match &mut self.parts {
            None => self.counters.grants + 1,
            // A placeholder waits for its client (see `handover`).
            Some(_) if self.tree.get(h).session == HANDOVER_SESSION => return false,
            Some(_) => {
                let p = self.partition_of(self.tree.interval(h).0);
                match self.parts.as_mut().and_then(|parts| parts.mint(p)) {
                    Some(t) => t,
                    None => return false,
                }
            }
        };
        self.counters.grants += 1;
        self.count_held(self.tree.interval(h).0);
        let e = self.tree.get_mut(h);
        debug_assert!(e.token.is_none() && e.blocking == 0);
        e.token = Some(token);
        if let Some(t) = &mut self.timings {
            e.stamp = t.granted(e.stamp);
        }
        let (session, id, cached_req, cached) = (e.session, e.id, e.cached_req, e.kept);
        if !queued || self.grant == GrantMode::Push {
            let r = if cached_req {
                let (start, end, _) = self.tree.interval(h);
                let (start, end) = (unit(start), unit(end));
                ResponseFrame::lock_cached(id, token, CachedGrant { start, end, cached })
            } else {
                ResponseFrame::new(op::LOCK, id, Status::Ok, token)
            };
            self.reply(session, r);
        }
        true
    }

    /// Takes an entry out of the table and grants the waiters that only it blocked.
    fn remove(&mut self, h: Handle) -> Entry {
        let (start, end, seq) = self.tree.interval(h);
        if line(start) != 0 && self.parts.is_some() {
            let p = self.partition_of(start);
            if let Some(on) = self.named_on.get_mut(&p) {
                on.remove(&h);
                if on.is_empty() {
                    self.named_on.remove(&p);
                }
            }
        }
        let entry = self.tree.remove(h);
        if entry.token.is_some() {
            self.counters.holders -= 1;
            if line(start) != 0 {
                self.counters.named_holders -= 1;
            }
        } else {
            self.counters.waiters -= 1;
        }
        if entry.kept {
            self.unkeep(entry.session);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.tree.overlaps(start, end, &mut scratch);
        for &y in &scratch {
            let (_, _, yseq) = self.tree.interval(y);
            let ye = self.tree.get_mut(y);
            if yseq > seq && ye.conflicts(&entry) {
                debug_assert!(
                    ye.blocking > 0 && ye.token.is_none(),
                    "a held entry is never blocked"
                );
                ye.blocking -= 1;
                if ye.blocking == 0 && !self.shutting_down && self.grant(y, true) {
                    self.counters.waiters -= 1;
                }
            }
        }
        self.scratch = scratch;
        self.leave_line(line(start));
        entry
    }

    /// Counts one more holder, starting at tree point `start`.
    fn count_held(&mut self, start: u128) {
        self.counters.holders += 1;
        if line(start) != 0 {
            self.counters.named_holders += 1;
        }
    }

    /// One more entry on the line of `name`, which becomes live if it was not: the line.
    fn enter_line(&mut self, name: Option<Arc<[u8]>>) -> u64 {
        let Some(name) = name else { return 0 };
        if let Some(&l) = self.line_of.get(&name) {
            return self.enter_live_line(l);
        }
        let l = self.next_line;
        self.next_line += 1;
        // Only a cluster node places names by their hash.
        let hash = if self.parts.is_some() { name_hash(&name) } else { 0 };
        self.line_of.insert(Arc::clone(&name), l);
        self.lines.insert(l, Line { name, live: 1, hash });
        l
    }

    /// One more entry on line `l`, already live (0: the unnamed resource): `l`.
    fn enter_live_line(&mut self, l: u64) -> u64 {
        if l != 0 {
            self.lines.get_mut(&l).expect("a live name has its line").live += 1;
        }
        l
    }

    /// Inserts `entry` on `[start, end)` of line `l` as the latest arrival; a named entry
    /// of a cluster node is indexed by its partition.
    fn insert(&mut self, l: u64, start: u64, end: u64, entry: Entry) -> Handle {
        let h = self.tree.insert(at(l, start), at(l, end), self.next_seq, entry);
        if l != 0 && self.parts.is_some() {
            let p = self.partition_of(at(l, start));
            self.named_on.entry(p).or_default().insert(h);
        }
        h
    }

    /// The placement hash of `name` on a cluster node (`None`: the unnamed resource), from
    /// its line if it is live.
    fn hash_of(&self, name: Option<&Arc<[u8]>>) -> Option<u64> {
        let name = name?;
        Some(match self.line_of.get(name) {
            Some(l) => self.lines[l].hash,
            None => name_hash(name),
        })
    }

    /// The partition of the entry that starts at tree point `point` (cluster nodes only).
    fn partition_of(&self, point: u128) -> u32 {
        let parts = self.parts.as_ref().expect("a cluster node's table").partitioning();
        match line(point) {
            0 => parts.of(unit(point)),
            l => parts.partition_of_named(self.lines[&l].hash, unit(point)),
        }
    }

    /// The line of `name` if it is live (0: the unnamed resource, always live).
    fn live_line(&self, name: Option<&Arc<[u8]>>) -> Option<u64> {
        match name {
            None => Some(0),
            Some(n) => self.line_of.get(n).copied(),
        }
    }

    /// Every entry on partition `p` (cluster nodes only), unnamed and named, in arrival
    /// order.
    fn handles_on(&self, p: u32) -> Vec<Handle> {
        let Some(parts) = &self.parts else { return Vec::new() };
        let (start, end) = (parts.partitioning().start(p), parts.partitioning().end(p));
        let mut hs = Vec::new();
        self.tree.overlaps(at(0, start), at(0, end), &mut hs);
        hs.extend(self.named_on.get(&p).into_iter().flatten().copied());
        hs.sort_unstable_by_key(|h| self.tree.interval(*h).2);
        hs
    }

    /// One entry fewer on line `l`: its name is forgotten with its last entry.
    fn leave_line(&mut self, l: u64) {
        if l == 0 {
            return;
        }
        let entry = self.lines.get_mut(&l).expect("an entry's line is live");
        entry.live -= 1;
        if entry.live == 0 {
            self.history.remove(&l);
            let gone = self.lines.remove(&l).expect("present");
            self.line_of.remove(&gone.name);
            // Give memory back after a burst of names (amortized: only once the maps are
            // three quarters empty, to half).
            if self.lines.capacity() > 64 && self.lines.len() < self.lines.capacity() / 4 {
                self.lines.shrink_to(self.lines.len() * 2);
                self.line_of.shrink_to(self.lines.len() * 2);
            }
        }
    }

    /// How many names have something held or queued on them (the unnamed resource not
    /// counted).
    pub fn names_live(&self) -> usize {
        self.lines.len()
    }

    /// Ends a waiting entry with `status` (timeout or cancel). Push mode: the waiting
    /// `LOCK` is answered with `status`. Poll mode: a timeout is kept for the next `POLL`;
    /// a cancel (which the client asked for) is remembered like a release.
    fn end_wait(&mut self, session: u64, h: Handle, status: Status) {
        let e = self.remove(h);
        let s = self.sessions.get_mut(&session).expect("entry's session is open");
        s.locks.remove(&e.id);
        match self.grant {
            GrantMode::Push => {
                s.ended.released(e.id);
                s.reply(ResponseFrame::new(e.answer_op(), e.id, status, 0));
            }
            GrantMode::Poll if status == Status::TimedOut => s.ended.unpolled(e.id, status),
            GrantMode::Poll => s.ended.released(e.id),
        }
    }

    fn unlock(&mut self, session: u64, id: u64, target: u64) {
        let Some(s) = self.sessions.get(&session) else { return };
        match s.locks.get(&target).copied() {
            Some(h) if self.tree.get(h).token.is_some() => {
                let e = self.remove(h);
                self.counters.releases += 1;
                if let Some(t) = &mut self.timings {
                    t.released(e.stamp);
                }
                let s = self.sessions.get_mut(&session).expect("open");
                s.locks.remove(&e.id);
                s.ended.released(e.id);
                s.reply(ResponseFrame::new(op::UNLOCK, id, Status::Ok, 0));
            }
            Some(h) => {
                // Unlock of a queued lock withdraws it.
                self.counters.cancels += 1;
                self.end_wait(session, h, Status::Cancelled);
                self.reply(session, ResponseFrame::new(op::UNLOCK, id, Status::Ok, 0));
            }
            None => {
                let status = self.sessions.get_mut(&session).expect("open").ended.unlock(target);
                self.reply(session, ResponseFrame::new(op::UNLOCK, id, status, 0))
            }
        }
    }

    fn cancel(&mut self, session: u64, id: u64, target: u64) {
        let Some(s) = self.sessions.get_mut(&session) else { return };
        let status = match s.locks.get(&target).copied() {
            Some(h) if self.tree.get(h).token.is_some() => Status::NotWaiting,
            Some(h) => {
                self.counters.cancels += 1;
                self.end_wait(session, h, Status::Cancelled);
                Status::Ok
            }
            None => s.ended.unlock(target),
        };
        self.reply(session, ResponseFrame::new(op::CANCEL, id, status, 0));
    }

    fn poll(&mut self, session: u64, id: u64, target: u64) {
        let Some(s) = self.sessions.get_mut(&session) else { return };
        let (status, value) = match s.locks.get(&target).copied() {
            Some(h) => match self.tree.get(h).token {
                Some(t) => (Status::Ok, t),
                None if self.shutting_down => (Status::ShuttingDown, 0),
                None => (Status::Pending, 0),
            },
            None => (s.ended.poll(target), 0),
        };
        self.reply(session, ResponseFrame::new(op::POLL, id, status, value));
    }

    fn expire(&mut self, session: u64, target: u64, nonce: u64) {
        let Some(s) = self.sessions.get(&session) else { return };
        let Some(h) = s.locks.get(&target).copied() else { return };
        let e = self.tree.get(h);
        if e.token.is_none() && e.nonce == nonce {
            self.counters.timeouts += 1;
            self.end_wait(session, h, Status::TimedOut);
        }
    }

    /// `STATS`, `STATS_NAMED` or `STATS_CACHED` (`kind`): the counters and the oldest
    /// entries, at most `max_entries` (already clamped to the limit of a `STATS` answer);
    /// a named list is also cut by bytes to the output limit. `STATS_CACHED` marks the
    /// kept extents.
    fn stats(&mut self, session: u64, id: u64, max_entries: u32, kind: StatsKind) {
        let named = kind.named();
        let max = max_entries.min(self.limits.max_stats_entries) as usize;
        let mut all: Vec<(u64, Handle)> =
            self.tree.handles().map(|h| (self.tree.interval(h).2, h)).collect();
        all.sort_unstable_by_key(|(seq, _)| *seq);
        let total = all.len();
        let mut entries: Vec<StatsEntry> = all
            .into_iter()
            .take(max)
            .map(|(_, h)| {
                let (start, end, _) = self.tree.interval(h);
                let e = self.tree.get(h);
                let name = match line(start) {
                    0 => None,
                    l if named => Some(Arc::clone(&self.lines[&l].name)),
                    _ => None,
                };
                StatsEntry {
                    session: e.session,
                    id: e.id,
                    start: unit(start),
                    end: unit(end),
                    mode: e.mode,
                    state: if e.token.is_some() { EntryState::Held } else { EntryState::Waiting },
                    token: e.token.unwrap_or(0),
                    name,
                    kept: kind == StatsKind::Cached && e.kept && e.token.is_some(),
                }
            })
            .collect();
        let bytes = self.limits.max_stats_bytes;
        match kind {
            StatsKind::Plain => {}
            StatsKind::Named => entries.truncate(stats_named_entries_within(bytes, &entries)),
            StatsKind::Cached => entries.truncate(stats_cached_entries_within(bytes, &entries)),
        }
        let omitted = (total - entries.len()) as u64;
        let body = StatsBody { counters: self.counters(), entries, omitted };
        self.reply(session, kind.answer(id, body));
    }

    fn close(&mut self, session: u64) {
        let Some(s) = self.sessions.get_mut(&session) else { return };
        // Remove latest first: an entry's removal only wakes later entries, which are
        // already gone, so no waiter of this closing session is granted meanwhile.
        let mut hs: Vec<Handle> = s.locks.drain().map(|(_, h)| h).collect();
        hs.sort_unstable_by_key(|h| std::cmp::Reverse(self.tree.interval(*h).2));
        for h in hs {
            let e = self.tree.get(h);
            if e.token.is_some() {
                self.counters.released_by_close += 1;
                if let Some(t) = &mut self.timings {
                    t.released(e.stamp);
                }
            }
            self.remove(h);
        }
        if self.sessions.remove(&session).is_some_and(|s| s.cache.is_some()) {
            self.cache_sessions -= 1;
        }
        self.counters.sessions_open -= 1;
    }

    /// `RECLAIM` (and `RECLAIM_NAMED` of `name`): reinstalls a lock the session held at
    /// the partition's previous owner, with its old token, if the partition is in its
    /// grace period and nothing conflicts.
    #[allow(clippy::too_many_arguments)]
    fn reclaim(
        &mut self,
        session: u64,
        id: u64,
        start: u64,
        end: u64,
        name: Option<Arc<[u8]>>,
        mode: Mode,
        tok: u64,
    ) {
        let Some(s) = self.sessions.get(&session) else { return };
        // Precedence (PROTOCOL.md §2): NOT_CLUSTERED, shutdown and range, ownership, the
        // session's limits, then whether a reclaim is in place at all.
        let Some(parts) = &self.parts else {
            let r = ResponseFrame::new(op::RECLAIM, id, Status::NotClustered, 0);
            return self.reply(session, r);
        };
        let place = parts.place(self.hash_of(name.as_ref()), start, end);
        let early = self.limits.refuse_lock(self.shutting_down, start, end, false, 0);
        let late =
            || self.limits.refuse_lock(false, start, end, s.locks.contains_key(&id), s.locks.len());
        let refusal = early
            .map(|st| (st, 0))
            .or_else(|| parts.refuse_reclaim_early(place))
            .or_else(|| late().map(|st| (st, 0)))
            .or_else(|| {
                let p = place.expect("a crossing range was refused above");
                parts.reclaim_refused(p, tok).then_some((Status::ReclaimRefused, 0))
            });
        if let Some((status, value)) = refusal {
            self.reply(session, ResponseFrame::new(op::RECLAIM, id, status, value));
            return;
        }
        let p = place.expect("a crossing range was refused above");
        if parts.in_handover(p) {
            // After a planned move only the handed-over locks are reclaimed, each into its
            // placeholder (which keeps its place among the waiters).
            let listed = HandoverLock { name, start, end, mode, token: tok };
            let parts = self.parts.as_mut().expect("checked above");
            match parts.claim(p, listed) {
                Some(h) => {
                    let now = self.stamp_now();
                    self.take_over(h, session, id, 0, now);
                    if let Some(parts) = &self.parts {
                        parts.count_reclaim();
                    }
                    self.reply(session, ResponseFrame::new(op::RECLAIM, id, Status::Ok, tok));
                }
                None => {
                    let r = ResponseFrame::new(op::RECLAIM, id, Status::ReclaimRefused, 0);
                    self.reply(session, r);
                }
            }
            return;
        }
        // A reclaimed lock is an ordinary hold, even for a caching session: it conflicts
        // with that session's own entries, and nothing calls it back (module docs,
        // "Reclaimed locks of caching sessions").
        let blocking =
            self.live_line(name.as_ref()).map_or(0, |l| self.blocking(l, start, end, mode, None));
        if blocking > 0 {
            self.reply(session, ResponseFrame::new(op::RECLAIM, id, Status::ReclaimRefused, 0));
            return;
        }
        let l = self.enter_line(name);
        self.next_seq += 1;
        let stamp = self.stamp_now();
        let entry = Entry {
            session,
            id,
            mode,
            nonce: 0,
            blocking: 0,
            token: Some(tok),
            stamp,
            own: false,
            kept: false,
            cached_req: false,
            called: 0,
            recalled: false,
            grown: false,
        };
        let h = self.insert(l, start, end, entry);
        let s = self.sessions.get_mut(&session).expect("checked above");
        s.ended.reuse(id);
        s.locks.insert(id, h);
        self.count_held(at(l, start));
        if let Some(parts) = &self.parts {
            parts.count_reclaim();
        }
        self.reply(session, ResponseFrame::new(op::RECLAIM, id, Status::Ok, tok));
    }

    /// The entries on `[start, end)` of line `l` a request in `mode` would wait for: its
    /// `blocking` number if it arrived now. `who`: the request's session if it caches
    /// (its own caching entries do not count).
    fn blocking(&mut self, l: u64, start: u64, end: u64, mode: Mode, who: Option<u64>) -> u32 {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.tree.overlaps(at(l, start), at(l, end), &mut scratch);
        let n = scratch
            .iter()
            .filter(|h| {
                let e = self.tree.get(**h);
                conflicting(e.mode, mode) && !(e.own && Some(e.session) == who)
            })
            .count();
        self.scratch = scratch;
        n as u32
    }

    /// Every entry on partition `p`, held (with its token) or waiting (token 0), in
    /// arrival order: what a planned move hands over (cluster nodes only).
    fn entries_on(&self, p: u32) -> Vec<HandoverLock> {
        self.handles_on(p)
            .into_iter()
            .filter(|h| self.tree.get(*h).session != HANDOVER_SESSION)
            .map(|h| {
                let (start, end, _) = self.tree.interval(h);
                let e = self.tree.get(h);
                let name = match line(start) {
                    0 => None,
                    l => Some(Arc::clone(&self.lines[&l].name)),
                };
                let (start, end) = (unit(start), unit(end));
                HandoverLock { name, start, end, mode: e.mode, token: e.token.unwrap_or(0) }
            })
            .collect()
    }

    /// Installs the placeholders of a planned move's handed-over `locks` on `p`, in
    /// their order (see [`super::handover`]). The partition was just acquired, so nothing
    /// else is on it.
    fn expect(&mut self, p: u32, locks: Vec<HandoverLock>) {
        if self.parts.is_none() {
            return;
        }
        let mut placeholders = Placeholders::default();
        for (i, lock) in locks.into_iter().enumerate() {
            let live = self.live_line(lock.name.as_ref());
            let blocking =
                live.map_or(0, |l| self.blocking(l, lock.start, lock.end, lock.mode, None));
            let token = (!lock.is_waiter()).then_some(lock.token);
            if token.is_some() && blocking > 0 {
                // Two conflicting holders in one list cannot come from a correct owner:
                // install only the earlier one; the later one's reclaim is refused.
                tracing::error!(partition = p, ?lock, "handed-over holder conflicts: skipped");
                continue;
            }
            self.next_seq += 1;
            let entry = Entry {
                session: HANDOVER_SESSION,
                id: i as u64,
                mode: lock.mode,
                nonce: 0,
                blocking,
                token,
                stamp: self.stamp_now(),
                own: false,
                kept: false,
                cached_req: false,
                called: 0,
                recalled: false,
                grown: false,
            };
            let l = self.enter_line(lock.name.clone());
            let h = self.insert(l, lock.start, lock.end, entry);
            if token.is_some() {
                self.count_held(at(l, lock.start));
            } else {
                self.counters.waiters += 1;
            }
            placeholders.add(lock, h);
        }
        self.parts.as_mut().expect("checked above").set_placeholders(p, placeholders);
    }

    /// A waiting `LOCK` in a handover grace: takes over the placeholder of a handed-over
    /// waiter with the same range and mode, if one is left (`false`: none). A
    /// `LOCK_CACHED` (`cached_req`) is answered as one, with an exact grant that is not
    /// kept (an ordinary hold, as a reclaimed one is).
    #[allow(clippy::too_many_arguments)]
    fn requeue(
        &mut self,
        session: u64,
        id: u64,
        start: u64,
        end: u64,
        name: Option<Arc<[u8]>>,
        mode: Mode,
        nonce: u64,
        arrived: u64,
        cached_req: bool,
    ) -> bool {
        let hash = self.hash_of(name.as_ref());
        let Some(parts) = &mut self.parts else { return false };
        let Ok(p) = parts.place(hash, start, end) else { return false };
        let Some(h) = parts.claim(p, HandoverLock { name, start, end, mode, token: 0 }) else {
            return false;
        };
        self.take_over(h, session, id, nonce, arrived);
        self.tree.get_mut(h).cached_req = cached_req;
        if self.grant == GrantMode::Poll {
            self.reply(session, ResponseFrame::new(op::LOCK, id, Status::Pending, 0));
        }
        true
    }

    /// Gives placeholder `h` to lock `id` of `session`: same place, same state; its wait
    /// or hold is timed from `stamp` on. An ordinary hold or wait even for a caching
    /// session, as in `reclaim`: placeholders are entered neither own nor kept.
    fn take_over(&mut self, h: Handle, session: u64, id: u64, nonce: u64, stamp: u64) {
        let e = self.tree.get_mut(h);
        debug_assert_eq!(e.session, HANDOVER_SESSION);
        (e.session, e.id, e.nonce, e.stamp) = (session, id, nonce, stamp);
        let s = self.sessions.get_mut(&session).expect("the request's session is open");
        s.ended.reuse(id);
        s.locks.insert(id, h);
    }

    /// Removes placeholders (latest first, so that a removal wakes only entries that stay).
    fn remove_placeholders(&mut self, mut hs: Vec<Handle>) {
        hs.sort_unstable_by_key(|h| std::cmp::Reverse(self.tree.interval(*h).2));
        for h in hs {
            self.remove(h);
        }
    }

    /// A change of partition ownership (cluster nodes only).
    fn partition(&mut self, p: u32, change: PartitionChange) {
        let Some(parts) = &mut self.parts else { return };
        if change == PartitionChange::RequeueOver {
            let gone = parts.close_requeue(p);
            return self.remove_placeholders(gone);
        }
        parts.change(p, change);
        // Earliest first when granting, latest first when dropping (so that removing an
        // entry wakes only entries that are already gone).
        let hs = self.handles_on(p);
        match change {
            // (`RequeueOver` returned above.)
            PartitionChange::Own { .. } | PartitionChange::RequeueOver => {}
            PartitionChange::Serve | PartitionChange::Epoch { .. } => {
                // The grace period is over: placeholders nobody came back for go (after a
                // handover; a new epoch keeps them).
                let (phantoms, hs): (Vec<Handle>, Vec<Handle>) = hs.into_iter().partition(|h| {
                    change == PartitionChange::Serve
                        && self.tree.get(*h).session == HANDOVER_SESSION
                });
                self.remove_placeholders(phantoms);
                // Grants held back while the partition could not grant go ahead now.
                for h in hs {
                    let e = self.tree.get(h);
                    if e.token.is_none() && e.blocking == 0 && self.grant(h, true) {
                        self.counters.waiters -= 1;
                    }
                }
            }
            PartitionChange::Drop { status } => {
                let mut notify = std::collections::BTreeSet::new();
                for h in hs.into_iter().rev() {
                    let e = self.remove(h);
                    if e.session == HANDOVER_SESSION {
                        continue;
                    }
                    let s = self.sessions.get_mut(&e.session).expect("entry's session is open");
                    s.locks.remove(&e.id);
                    if e.token.is_some() {
                        self.counters.releases += 1;
                        if let Some(t) = &mut self.timings {
                            t.released(e.stamp);
                        }
                        s.ended.released(e.id);
                        notify.insert(e.session);
                    } else if self.grant == GrantMode::Push {
                        s.ended.released(e.id);
                        s.reply(ResponseFrame::new(e.answer_op(), e.id, status, 0));
                    } else {
                        s.ended.unpolled(e.id, status);
                    }
                }
                // Holders learn at once that their locks are no longer served here: they
                // re-read the map and reclaim at the new owner.
                for session in notify {
                    let s = &self.sessions[&session];
                    s.reply(ResponseFrame::new(op::NOTICE, 0, status, u64::from(p)));
                }
            }
        }
    }

    fn shutdown(&mut self) {
        self.shutting_down = true;
        if self.grant == GrantMode::Push {
            for h in self.tree.handles().collect::<Vec<_>>() {
                let e = self.tree.get(h);
                if e.token.is_none() && e.session != HANDOVER_SESSION {
                    let (session, id, answer) = (e.session, e.id, e.answer_op());
                    self.reply(session, ResponseFrame::new(answer, id, Status::ShuttingDown, 0));
                }
            }
        }
    }

    /// Sends the responses this thread queued (see [`LockTable::apply`]).
    pub fn flush_replies() {
        crate::reply::flush_pending();
    }

    /// Counters (for tests and the engines' own stats); `errors` includes the handlers'.
    pub fn counters(&self) -> Counters {
        let errors = self.errors.total() + self.handler_errors.tally().total();
        self.with_cache(Counters { errors, names_live: self.lines.len() as u64, ..self.counters })
    }

    /// `counters` with the cache's counters (what `STATS_CACHED` adds) filled in.
    fn with_cache(&self, counters: Counters) -> Counters {
        let cache = self.cache_counts();
        Counters {
            cached_extents: cache.kept,
            callbacks: cache.callbacks,
            give_backs: cache.give_backs,
            cache_expanded: cache.expanded,
            ..counters
        }
    }

    /// Counters, errors per status (the handlers' included) and histograms, for a scrape.
    fn snapshot(&self) -> EngineSnapshot {
        let mut errors = self.errors;
        errors.add(&self.handler_errors.tally());
        let names_live = self.lines.len() as u64;
        let counters =
            self.with_cache(Counters { errors: errors.total(), names_live, ..self.counters });
        let (wait, hold, callback) =
            self.timings.as_ref().map(|t| (t.wait, t.hold, t.callback)).unwrap_or_default();
        let cache = self.cache_counts();
        EngineSnapshot { counters, errors, wait, hold, cache, callback }
    }
}
