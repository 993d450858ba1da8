//! The table's side of cached locks (protocol version 6): `CACHE_ON`, the expansion of a
//! `LOCK_CACHED`, callbacks, and `GIVE_BACK`. The policy is explained in
//! [`crate::table::CachePolicy`]'s module; here is how the table keeps its invariants.
//!
//! * **Same-session entries.** Two entries of one caching session never count each other
//!   ([`Entry::conflicts`]): the client orders its own threads with its in-process lock.
//!   The relation is fixed per pair, so every blocking count stays exact.
//! * **An expansion blocks nobody.** A `LOCK_CACHED` is expanded only when it is
//!   grantable, and only over units where no conflicting entry of another session sits,
//!   so its blocking count is 0 over the whole extent and no earlier entry is passed.
//! * **A give-back reshapes in place.** The remaining parts keep the entry's arrival
//!   number (a split's two parts share it: their starts differ, so the tree's key stays
//!   unique), its token and its state. Every later entry that overlapped the old extent
//!   has its count changed by how many of the new parts it still conflicts with, minus
//!   one: a part given back wakes exactly the waiters that only it blocked, and a waiter
//!   spanning both parts of a split now waits for two.

use std::collections::VecDeque;
use std::time::Instant;

use super::{at, line, unit, Entry, LockTable, SessionCache};
use crate::protocol::{
    op, Callback, Mode, ResponseFrame, Status, CACHE_REPORTS_USE, NAME_STRIPE_SHIFT,
};
use crate::table::cache::{clip, conflicting, slot, CachePolicy, Contention, Seen};
use crate::table::Handle;

impl LockTable {
    /// `CACHE_ON`: the session may keep extents from now on.
    pub(super) fn cache_on(&mut self, session: u64, id: u64) {
        let Some(s) = self.sessions.get_mut(&session) else { return };
        if s.cache.is_none() {
            s.cache = Some(SessionCache::default());
            self.cache_sessions += 1;
        }
        let ok = ResponseFrame::new(op::CACHE_ON, id, Status::Ok, CACHE_REPORTS_USE);
        self.reply(session, ok);
    }

    /// Remembers a request on line `l` for the history policy (`now`: `None` when no
    /// history is kept).
    pub(super) fn remember(
        &mut self,
        l: u64,
        session: u64,
        start: u64,
        end: u64,
        mode: Mode,
        now: Option<Instant>,
    ) {
        if let Some(at) = now {
            let cap = self.cache.history;
            self.history.entry(l).or_default().push(Seen { session, start, end, mode, at }, cap);
        }
    }

    /// The extent to grant a grantable `LOCK_CACHED` of `[start, end)` within
    /// `[ds, de)`, and whether the client may keep it (module docs of `cache`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn expand(
        &mut self,
        session: u64,
        live: Option<u64>,
        name: Option<&std::sync::Arc<[u8]>>,
        start: u64,
        end: u64,
        ds: u64,
        de: u64,
        mode: Mode,
        now: Option<Instant>,
    ) -> (u64, u64, bool) {
        let exact_kept = (start, end, true);
        let exact = (start, end, false);
        let policy = self.cache.policy;
        match policy {
            CachePolicy::Off => return exact,
            CachePolicy::Exact if self.kept_total < self.cache.max_kept => return exact_kept,
            _ if self.kept_total >= self.cache.max_kept => return exact,
            _ => {}
        }
        let window = self.cache.window;
        if policy == CachePolicy::History {
            let cache = self.sessions.get(&session).and_then(|s| s.cache.as_ref());
            let payoff = cache.map(|c| c.payoff[slot(mode)]).unwrap_or_default();
            let contention = payoff.contention(now.unwrap_or_else(Instant::now), window);
            if contention == Contention::Often {
                return exact;
            }
            if contention == Contention::Sometimes {
                // Contended now and then: exactly what was asked, kept only if no other
                // session asked for any of it lately (a strided writer keeps its own
                // blocks).
                let touched = live.zip(now).is_some_and(|(l, now)| {
                    let since = now.checked_sub(window).unwrap_or(now);
                    self.history.get(&l).is_some_and(|h| {
                        h.others(session, since)
                            .any(|s| conflicting(s.mode, mode) && s.start < end && s.end > start)
                    })
                });
                return (start, end, !touched);
            }
        }
        let (mut lo, mut hi) = (ds, de);
        if let Some(parts) = &self.parts {
            // A cluster node's extent stays inside the piece the required range lies in.
            let p = parts.partitioning();
            let (a, b) = match name {
                None => {
                    let q = p.of(start);
                    (p.start(q), p.end(q))
                }
                Some(_) => {
                    let stripe = start >> NAME_STRIPE_SHIFT;
                    let next = (stripe + 1).checked_shl(NAME_STRIPE_SHIFT).unwrap_or(0);
                    (stripe << NAME_STRIPE_SHIFT, if next == 0 { u64::MAX } else { next })
                }
            };
            lo = lo.max(a);
            hi = hi.min(b);
        }
        let Some(l) = live else { return (lo, hi, true) };
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.tree.overlaps(at(l, lo), at(l, hi), &mut scratch);
        for &h in &scratch {
            let e = self.tree.get(h);
            if (e.own && e.session == session) || !conflicting(e.mode, mode) {
                continue;
            }
            let (xs, xe, _) = self.tree.interval(h);
            clip(&mut lo, &mut hi, start, end, unit(xs), unit(xe));
        }
        self.scratch = scratch;
        if let (CachePolicy::History, Some(now), Some(h)) = (policy, now, self.history.get(&l)) {
            let since = now.checked_sub(window).unwrap_or(now);
            for seen in h.others(session, since) {
                if !conflicting(seen.mode, mode) || seen.end <= lo || seen.start >= hi {
                    continue;
                }
                if seen.start < end && seen.end > start {
                    // Another session wanted this very range lately: taking turns.
                    return exact;
                }
                clip(&mut lo, &mut hi, start, end, seen.start, seen.end);
            }
        }
        if (lo, hi) != (start, end) {
            self.cache_counts.expanded += 1;
        }
        (lo, hi, true)
    }

    /// Sends a `CALLBACK` to every other session holding a kept extent that conflicts
    /// with a request of `session` for `[start, end)` of line `l` in `mode`.
    pub(super) fn call_back(&mut self, l: u64, start: u64, end: u64, mode: Mode, session: u64) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.tree.overlaps(at(l, start), at(l, end), &mut scratch);
        for &h in &scratch {
            let e = *self.tree.get(h);
            if !e.kept || e.token.is_none() || e.session == session || !conflicting(e.mode, mode) {
                continue;
            }
            let (xs, xe, _) = self.tree.interval(h);
            let part = Callback { start: start.max(unit(xs)), end: end.min(unit(xe)), mode };
            if e.called == 0 {
                if let Some(t) = &mut self.timings {
                    self.tree.get_mut(h).called = t.now().max(1);
                }
            }
            self.cache_counts.callbacks += 1;
            self.tree.get_mut(h).recalled = true;
            self.reply(e.session, ResponseFrame::callback(e.id, part));
        }
        self.scratch = scratch;
    }

    /// Counts a new kept extent `id` of `session`; over the session's bound, calls back
    /// its least recently granted one.
    pub(super) fn keep(&mut self, session: u64, id: u64) {
        self.kept_total += 1;
        let Some(c) = self.sessions.get_mut(&session).and_then(|s| s.cache.as_mut()) else {
            return;
        };
        c.kept_live += 1;
        c.kept.push_back(id);
        if c.kept.len() > 2 * c.kept_live + 16 {
            // Forget the ids of extents that ended (amortized).
            let s = &self.sessions[&session];
            let live: VecDeque<u64> = s
                .cache
                .as_ref()
                .expect("checked above")
                .kept
                .iter()
                .copied()
                .filter(|i| s.locks.get(i).is_some_and(|h| self.tree.get(*h).kept))
                .collect();
            self.sessions.get_mut(&session).expect("open").cache.as_mut().expect("on").kept = live;
        }
    }

    /// Over its bound of kept extents, `session` is asked for its least recently granted
    /// one (after the answer to the grant that passed the bound).
    pub(super) fn bound_kept(&mut self, session: u64) {
        let max = self.cache.max_kept_per_session;
        let s = self.sessions.get(&session);
        if s.and_then(|s| s.cache.as_ref()).is_some_and(|c| c.kept_live > max) {
            self.call_back_oldest(session);
        }
    }

    /// Calls back the least recently granted kept extent of `session` (whole).
    fn call_back_oldest(&mut self, session: u64) {
        loop {
            let s = self.sessions.get_mut(&session).expect("open");
            let Some(id) = s.cache.as_mut().and_then(|c| c.kept.pop_front()) else { return };
            let Some(&h) = s.locks.get(&id) else { continue };
            let e = *self.tree.get(h);
            if !e.kept || e.token.is_none() {
                continue;
            }
            let (xs, xe, _) = self.tree.interval(h);
            let part = Callback { start: unit(xs), end: unit(xe), mode: Mode::Exclusive };
            self.cache_counts.callbacks += 1;
            self.reply(session, ResponseFrame::callback(id, part));
            return;
        }
    }

    /// One kept extent of `session` fewer.
    pub(super) fn unkeep(&mut self, session: u64) {
        self.kept_total -= 1;
        if let Some(c) = self.sessions.get_mut(&session).and_then(|s| s.cache.as_mut()) {
            c.kept_live -= 1;
        }
    }

    /// `GIVE_BACK`: releases `[start, end)` of the held lock `target`, or turns it shared.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn give_back(
        &mut self,
        session: u64,
        id: u64,
        target: u64,
        start: u64,
        end: u64,
        downgrade: bool,
        used: Option<u32>,
    ) {
        let Some(s) = self.sessions.get_mut(&session) else { return };
        let answer = |status| ResponseFrame::new(op::GIVE_BACK, id, status, 0);
        let h = match s.locks.get(&target).copied() {
            Some(h) if self.tree.get(h).token.is_some() => h,
            Some(_) => return self.reply(session, answer(Status::NotHeld)),
            None => {
                let status = s.ended.unlock(target);
                return self.reply(session, answer(status));
            }
        };
        let (xs, xe, _) = self.tree.interval(h);
        let (l, ls, le) = (line(xs), unit(xs), unit(xe));
        let whole = (start, end) == (ls, le);
        if start < ls || end > le || (downgrade && !whole) {
            return self.reply(session, answer(Status::InvalidRange));
        }
        let e = *self.tree.get(h);
        let pieces: Vec<(u64, u64, u64)> = if downgrade {
            vec![(ls, le, target)]
        } else if whole {
            vec![]
        } else if start == ls {
            vec![(end, le, target)]
        } else if end == le {
            vec![(ls, start, target)]
        } else {
            let s = &self.sessions[&session];
            if s.locks.contains_key(&id) {
                return self.reply(session, answer(Status::DuplicateId));
            }
            if s.locks.len() >= self.limits.max_locks_per_session {
                return self.reply(session, answer(Status::TooManyLocks));
            }
            vec![(ls, start, target), (end, le, id)]
        };
        self.cache_counts.give_backs += 1;
        if e.recalled {
            // The answer to a callback: whether keeping this extent paid.
            let window = self.cache.window;
            if let Some(c) = self.sessions.get_mut(&session).and_then(|s| s.cache.as_mut()) {
                c.payoff[slot(e.mode)].note(used.unwrap_or(0), e.grown, Instant::now(), window);
            }
        }
        if let (Some(t), true) = (&mut self.timings, e.called != 0) {
            let now = t.now();
            t.callback.observe(now.saturating_sub(e.called));
        }
        if pieces.is_empty() {
            // The whole lock: an unlock.
            let e = self.remove(h);
            self.counters.releases += 1;
            if let Some(t) = &mut self.timings {
                t.released(e.stamp);
            }
            let s = self.sessions.get_mut(&session).expect("open");
            s.locks.remove(&target);
            s.ended.released(target);
        } else {
            let mode = if downgrade { Mode::Shared } else { e.mode };
            self.reshape(h, l, &pieces, mode);
        }
        self.reply(session, answer(Status::Ok));
    }

    /// Replaces held entry `h` on line `l` by `pieces` (`(start, end, id)`, the first
    /// keeps the entry's id) in `mode`, with its arrival number, token and flags, and
    /// wakes or re-counts the later entries that overlapped it (module docs).
    fn reshape(&mut self, h: Handle, l: u64, pieces: &[(u64, u64, u64)], mode: Mode) {
        let (xs, xe, seq) = self.tree.interval(h);
        if l != 0 && self.parts.is_some() {
            let p = self.partition_of(xs);
            if let Some(on) = self.named_on.get_mut(&p) {
                on.remove(&h);
            }
        }
        let old = self.tree.remove(h);
        let mut new = Vec::with_capacity(pieces.len());
        for (i, &(s, e, id)) in pieces.iter().enumerate() {
            let entry = Entry { id, mode, called: 0, recalled: false, ..old };
            let nh = self.tree.insert(at(l, s), at(l, e), seq, entry);
            if l != 0 && self.parts.is_some() {
                let p = self.partition_of(at(l, s));
                self.named_on.entry(p).or_default().insert(nh);
            }
            let sess = self.sessions.get_mut(&old.session).expect("open");
            sess.locks.insert(id, nh);
            if i > 0 {
                sess.ended.reuse(id);
                self.enter_live_line(l);
                self.count_held(at(l, s));
                if old.kept {
                    self.keep(old.session, id);
                }
            }
            new.push((at(l, s), at(l, e), entry));
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.tree.overlaps(xs, xe, &mut scratch);
        for &y in &scratch {
            let (ys, ye, yseq) = self.tree.interval(y);
            if yseq <= seq {
                continue;
            }
            let yv = *self.tree.get(y);
            let before = u32::from(yv.conflicts(&old));
            let after = new
                .iter()
                .filter(|(s, e, entry)| *s < ye && *e > ys && yv.conflicts(entry))
                .count() as u32;
            let yv = self.tree.get_mut(y);
            debug_assert!(yv.token.is_none() || (before == 0 && after == 0));
            yv.blocking = yv.blocking + after - before;
            if before > after && yv.blocking == 0 && !self.shutting_down && self.grant(y, true) {
                self.counters.waiters -= 1;
            }
        }
        self.scratch = scratch;
    }
}
