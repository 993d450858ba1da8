//! The lock table's cached locks against a sequential model: a list of entries in arrival
//! order (a split's two parts share a place) where an entry is held iff no earlier entry
//! overlaps it in a conflicting mode, two entries of one caching session never
//! conflicting. The model computes what the policy must grant (the extent and whether it
//! is kept), which callbacks each request must send, and which waiters each release must
//! grant; the table's answers, notices and STATS list must match it exactly.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use rangelock_server::protocol::{
    op, CachedGrant, Callback, EntryState, GrantMode, Mode, ResponseFrame, Status,
    CACHE_REPORTS_USE,
};
use rangelock_server::table::{
    CacheConfig, CachePolicy, Command, LockTable, StatsKind, TableLimits,
};
use tokio::sync::mpsc;

/// Sessions 0 and 1 cache; session 2 does not.
const SLOTS: usize = 3;
const CACHING: [bool; SLOTS] = [true, true, false];

#[derive(Clone, Debug)]
enum Op {
    Lock {
        slot: usize,
        start: u64,
        len: u64,
        shared: bool,
        may_wait: bool,
        grow: Option<(u64, u64)>,
    },
    Unlock {
        slot: usize,
        pick: usize,
    },
    GiveBack {
        slot: usize,
        pick: usize,
        cut: (u64, u64),
        downgrade: bool,
        used: Option<u32>,
    },
    Close {
        slot: usize,
    },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let s = 0usize..SLOTS;
    let grow = prop::option::weighted(0.7, (0u64..30, 0u64..30));
    proptest::collection::vec(
        prop_oneof![
            6 => (s.clone(), 0u64..60, 1u64..10, any::<bool>(), prop::bool::weighted(0.8), grow)
                .prop_map(|(slot, start, len, shared, may_wait, grow)| Op::Lock { slot, start, len, shared, may_wait, grow }),
            3 => (s.clone(), any::<usize>()).prop_map(|(slot, pick)| Op::Unlock { slot, pick }),
            4 => (s.clone(), any::<usize>(), (0u64..20, 0u64..20), prop::bool::weighted(0.2), prop::option::of(0u32..5))
                .prop_map(|(slot, pick, cut, downgrade, used)| Op::GiveBack { slot, pick, cut, downgrade, used }),
            1 => s.prop_map(|slot| Op::Close { slot }),
        ],
        1..80,
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct M {
    place: u64,
    session: u64,
    id: u64,
    start: u64,
    end: u64,
    mode: Mode,
    own: bool,
    kept: bool,
    cached_req: bool,
    /// Called back since its last give-back.
    recalled: bool,
    /// Granted wider than asked.
    grown: bool,
}

fn mode_slot(mode: Mode) -> usize {
    usize::from(mode == Mode::Shared)
}

fn conflicts(a: &M, b: &M) -> bool {
    let same_caching_session = a.own && b.own && a.session == b.session;
    !(a.mode.compatible(b.mode) || same_caching_session)
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

struct Harness {
    table: LockTable,
    policy: CachePolicy,
    rx: HashMap<u64, mpsc::UnboundedReceiver<ResponseFrame>>,
    slot: [u64; SLOTS],
    caching: HashSet<u64>,
    next_session: u64,
    next_id: u64,
    next_place: u64,
    model: Vec<M>,
    /// Requests seen (session, range, mode), oldest first.
    history: Vec<(u64, u64, u64, Mode)>,
    /// Per session and mode (exclusive 0, shared 1): recalled extents given back, how many of them
    /// were exact grants, and the local locks they served; the window is longer than any case.
    payoff: HashMap<(u64, usize), (u32, u32, u64)>,
    expected: HashMap<u64, Vec<ResponseFrame>>,
}

impl Harness {
    fn new(policy: CachePolicy) -> Self {
        let limits = TableLimits {
            max_locks_per_session: 1000,
            max_stats_entries: 10_000,
            max_stats_bytes: 1 << 20,
            max_names: 1 << 20,
        };
        let mut table = LockTable::new(GrantMode::Push, limits, Arc::default());
        table.set_cache(CacheConfig {
            policy,
            window: Duration::from_secs(3600),
            history: 10_000,
            ..CacheConfig::default()
        });
        let mut h = Harness {
            table,
            policy,
            rx: HashMap::new(),
            slot: [0; SLOTS],
            caching: HashSet::new(),
            next_session: 0,
            next_id: 0,
            next_place: 0,
            model: Vec::new(),
            history: Vec::new(),
            payoff: HashMap::new(),
            expected: HashMap::new(),
        };
        for (i, caching) in CACHING.into_iter().enumerate() {
            h.slot[i] = h.open(caching);
        }
        h.check();
        h
    }

    fn open(&mut self, caching: bool) -> u64 {
        self.next_session += 1;
        let s = self.next_session;
        let (tx, rx) = mpsc::unbounded_channel();
        self.table.apply(Command::Open { session: s, sink: Arc::new(tx) });
        self.rx.insert(s, rx);
        if caching {
            self.next_id += 1;
            self.table.apply(Command::CacheOn { session: s, id: self.next_id });
            let ok = ResponseFrame::new(op::CACHE_ON, self.next_id, Status::Ok, CACHE_REPORTS_USE);
            self.expect(s, ok);
            self.caching.insert(s);
        }
        s
    }

    fn expect(&mut self, session: u64, r: ResponseFrame) {
        self.expected.entry(session).or_default().push(r);
    }

    fn held(&self, i: usize) -> bool {
        let e = &self.model[i];
        !self.model.iter().any(|x| {
            x.place < e.place && overlap((x.start, x.end), (e.start, e.end)) && conflicts(x, e)
        })
    }

    fn held_set(&self) -> HashSet<(u64, u64)> {
        (0..self.model.len())
            .filter(|&i| self.held(i))
            .map(|i| (self.model[i].session, self.model[i].id))
            .collect()
    }

    /// Expects a grant answer for every entry held now that was not in `before`.
    fn expect_grants(&mut self, before: &HashSet<(u64, u64)>) {
        let now = self.held_set();
        let mut news: Vec<M> = self
            .model
            .iter()
            .copied()
            .filter(|m| now.contains(&(m.session, m.id)) && !before.contains(&(m.session, m.id)))
            .collect();
        news.sort_by_key(|m| m.place);
        for m in news {
            let r = if m.cached_req {
                let grant = CachedGrant { start: m.start, end: m.end, cached: m.kept };
                ResponseFrame::lock_cached(m.id, 0, grant)
            } else {
                ResponseFrame::new(op::LOCK, m.id, Status::Ok, 0)
            };
            self.expect(m.session, r);
        }
    }

    /// Whether session `s`'s recalled extents of `mode` did not pay (on average fewer than
    /// 2 local locks each): `Some(often)`, often once 4 of them were exact grants; `None` if
    /// they did.
    fn contended(&self, s: u64, mode: Mode) -> Option<bool> {
        let &(recalls, exact, used) = self.payoff.get(&(s, mode_slot(mode)))?;
        (recalls > 0 && used < 2 * u64::from(recalls)).then_some(exact >= 4)
    }

    /// The extent and keep flag the policy must grant a grantable `LOCK_CACHED`.
    fn expand(
        &self,
        s: u64,
        start: u64,
        end: u64,
        ds: u64,
        de: u64,
        mode: Mode,
    ) -> (u64, u64, bool) {
        let me = M {
            place: 0,
            session: s,
            id: 0,
            start,
            end,
            mode,
            own: true,
            kept: false,
            cached_req: true,
            recalled: false,
            grown: false,
        };
        match self.policy {
            CachePolicy::Off => return (start, end, false),
            CachePolicy::Exact => return (start, end, true),
            CachePolicy::History if self.contended(s, mode).is_some_and(|often| often) => {
                return (start, end, false)
            }
            CachePolicy::History if self.contended(s, mode).is_some() => {
                let touched = self.history.iter().any(|&(hs, a, b, m)| {
                    hs != s && !m.compatible(mode) && overlap((a, b), (start, end))
                });
                return (start, end, !touched);
            }
            _ => {}
        }
        let (mut lo, mut hi) = (ds, de);
        let mut clip = |xs: u64, xe: u64| {
            if xe <= start {
                lo = lo.max(xe);
            } else if xs >= end {
                hi = hi.min(xs);
            }
        };
        for x in &self.model {
            if overlap((x.start, x.end), (ds, de)) && conflicts(x, &me) {
                clip(x.start, x.end);
            }
        }
        if self.policy == CachePolicy::History {
            for &(hs, a, b, m) in &self.history {
                if hs == s || m.compatible(mode) {
                    continue;
                }
                if overlap((a, b), (start, end)) {
                    return (start, end, false);
                }
                clip(a, b);
            }
        }
        (lo, hi, true)
    }

    fn lock(
        &mut self,
        slot: usize,
        start: u64,
        end: u64,
        mode: Mode,
        may_wait: bool,
        grow: Option<(u64, u64)>,
    ) {
        let s = self.slot[slot];
        self.next_id += 1;
        let id = self.next_id;
        let own = self.caching.contains(&s);
        let desired = grow.filter(|_| own).map(|(b, a)| (start.saturating_sub(b), end + a));
        let probe = M {
            place: u64::MAX,
            session: s,
            id,
            start,
            end,
            mode,
            own,
            kept: false,
            cached_req: desired.is_some(),
            recalled: false,
            grown: false,
        };
        let blocking = self
            .model
            .iter()
            .filter(|x| overlap((x.start, x.end), (start, end)) && conflicts(x, &probe))
            .count();
        if blocking > 0 {
            let holders: Vec<M> = self
                .model
                .iter()
                .copied()
                .filter(|x| {
                    x.kept
                        && x.session != s
                        && !x.mode.compatible(mode)
                        && overlap((x.start, x.end), (start, end))
                        && self.held_set().contains(&(x.session, x.id))
                })
                .collect();
            for x in holders {
                let part = Callback { start: start.max(x.start), end: end.min(x.end), mode };
                for y in self.model.iter_mut().filter(|y| (y.session, y.id) == (x.session, x.id)) {
                    y.recalled = true;
                }
                self.expect(x.session, ResponseFrame::callback(x.id, part));
            }
        }
        let answer = if desired.is_some() { op::LOCK_CACHED } else { op::LOCK };
        let (gs, ge, kept) = match desired {
            Some((ds, de)) if blocking == 0 => self.expand(s, start, end, ds, de, mode),
            _ => (start, end, false),
        };
        self.table.apply(Command::Lock {
            session: s,
            id,
            start,
            end,
            name: None,
            mode,
            may_wait,
            nonce: id,
            arrived: 0,
            desired,
        });
        self.history.push((s, start, end, mode));
        if blocking > 0 && !may_wait {
            self.expect(s, ResponseFrame::new(answer, id, Status::WouldBlock, 0));
            return;
        }
        self.next_place += 1;
        let m = M {
            place: self.next_place,
            session: s,
            id,
            start: gs,
            end: ge,
            mode,
            own,
            kept,
            cached_req: desired.is_some(),
            recalled: false,
            grown: (gs, ge) != (start, end),
        };
        self.model.push(m);
        if blocking == 0 {
            let r = match desired {
                Some(_) => ResponseFrame::lock_cached(
                    id,
                    0,
                    CachedGrant { start: gs, end: ge, cached: kept },
                ),
                None => ResponseFrame::new(op::LOCK, id, Status::Ok, 0),
            };
            self.expect(s, r);
        }
    }

    fn pick(&self, session: u64, pick: usize, held_only: bool) -> Option<M> {
        let held = self.held_set();
        let mine: Vec<M> = self
            .model
            .iter()
            .copied()
            .filter(|e| e.session == session && (!held_only || held.contains(&(e.session, e.id))))
            .collect();
        (!mine.is_empty()).then(|| mine[pick % mine.len()])
    }

    fn run(&mut self, op: Op) {
        match op {
            Op::Lock { slot, start, len, shared, may_wait, grow } => {
                let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                self.lock(slot, start, start + len, mode, may_wait, grow)
            }
            Op::Unlock { slot, pick } => {
                let s = self.slot[slot];
                let Some(m) = self.pick(s, pick, false) else { return };
                let before = self.held_set();
                self.next_id += 1;
                self.table.apply(Command::Unlock { session: s, id: self.next_id, target: m.id });
                let was_held = before.contains(&(s, m.id));
                self.model.retain(|x| (x.session, x.id) != (s, m.id));
                if !was_held {
                    // A waiting LOCK withdrawn by UNLOCK is answered CANCELLED.
                    let answer = if m.cached_req { op::LOCK_CACHED } else { op::LOCK };
                    self.expect(s, ResponseFrame::new(answer, m.id, Status::Cancelled, 0));
                }
                self.expect(s, ResponseFrame::new(op::UNLOCK, self.next_id, Status::Ok, 0));
                self.expect_grants(&before);
            }
            Op::GiveBack { slot, pick, cut, downgrade, used } => {
                let s = self.slot[slot];
                if !self.caching.contains(&s) {
                    return;
                }
                let Some(m) = self.pick(s, pick, true) else { return };
                let len = m.end - m.start;
                let a = m.start + cut.0 % len;
                let b = (a + 1 + cut.1 % len).min(m.end);
                let (a, b) = if downgrade { (m.start, m.end) } else { (a, b) };
                self.next_id += 1;
                let id = self.next_id;
                self.table.apply(Command::GiveBack {
                    session: s,
                    id,
                    target: m.id,
                    start: a,
                    end: b,
                    downgrade,
                    used,
                });
                if m.recalled {
                    let p = self.payoff.entry((s, mode_slot(m.mode))).or_insert((0, 0, 0));
                    *p = (p.0 + 1, p.1 + u32::from(!m.grown), p.2 + u64::from(used.unwrap_or(0)));
                }
                let mut before = self.held_set();
                // The right part of a split is held already, not granted.
                before.insert((s, id));
                let i = self.model.iter().position(|x| (x.session, x.id) == (s, m.id)).unwrap();
                self.model[i].recalled = false;
                let m = M { recalled: false, ..m };
                if downgrade {
                    self.model[i].mode = Mode::Shared;
                } else if (a, b) == (m.start, m.end) {
                    self.model.remove(i);
                } else if a == m.start {
                    self.model[i].start = b;
                } else if b == m.end {
                    self.model[i].end = a;
                } else {
                    self.model[i].end = a;
                    self.model.insert(i + 1, M { id, start: b, end: m.end, ..m });
                }
                self.expect(s, ResponseFrame::new(op::GIVE_BACK, id, Status::Ok, 0));
                self.expect_grants(&before);
            }
            Op::Close { slot } => {
                let s = self.slot[slot];
                let before = self.held_set();
                self.table.apply(Command::Close { session: s });
                self.model.retain(|x| x.session != s);
                self.expected.remove(&s);
                self.rx.remove(&s);
                self.caching.remove(&s);
                self.expect_grants(&before);
                self.slot[slot] = self.open(CACHING[slot]);
            }
        }
        self.check();
    }

    fn check(&mut self) {
        // Answers and notices: per session, the same frames in the same order (tokens
        // are not modelled).
        for s in self.slot {
            let mut got = Vec::new();
            while let Ok(mut r) = self.rx.get_mut(&s).unwrap().try_recv() {
                if (r.op == op::LOCK || r.op == op::LOCK_CACHED) && r.status == Status::Ok {
                    r.value = 0;
                }
                got.push(r);
            }
            let mut want = self.expected.remove(&s).unwrap_or_default();
            // One release may grant several waiters of a session in any order.
            let key = |r: &ResponseFrame| (r.id, r.op, r.status.code(), format!("{r:?}"));
            got.sort_by_key(key);
            want.sort_by_key(key);
            assert_eq!(got, want, "session {s}");
        }
        let probe = self.slot[2];
        self.table.apply(Command::Stats {
            session: probe,
            id: u64::MAX,
            max_entries: 10_000,
            kind: StatsKind::Cached,
        });
        let st = self.rx.get_mut(&probe).unwrap().try_recv().expect("stats").stats.expect("body");
        // (session, id, start, end, mode, held, kept)
        type Listed = (u64, u64, u64, u64, Mode, bool, bool);
        let mut got: Vec<Listed> = st
            .entries
            .iter()
            .map(|e| (e.session, e.id, e.start, e.end, e.mode, e.state == EntryState::Held, e.kept))
            .collect();
        let held = self.held_set();
        let mut want: Vec<Listed> = self
            .model
            .iter()
            .map(|m| {
                let h = held.contains(&(m.session, m.id));
                (m.session, m.id, m.start, m.end, m.mode, h, h && m.kept)
            })
            .collect();
        let key = |e: &Listed| (e.0, e.1, e.2);
        got.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(got, want);
        // Exclusion: no two held entries of different sessions conflict.
        let hs: Vec<&M> = self.model.iter().filter(|m| held.contains(&(m.session, m.id))).collect();
        for a in &hs {
            for b in &hs {
                if a.session != b.session && overlap((a.start, a.end), (b.start, b.end)) {
                    assert!(a.mode.compatible(b.mode), "{a:?} and {b:?} both held");
                }
            }
        }
        let kept = self.model.iter().filter(|m| m.kept).count() as u64;
        assert_eq!(self.table.cache_counts().kept, kept);
        assert_eq!(st.counters.cached_extents, kept);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn cached_locks_match_the_model_history(ops in ops()) {
        let mut h = Harness::new(CachePolicy::History);
        for op in ops {
            h.run(op);
        }
    }

    #[test]
    fn cached_locks_match_the_model_expand_all(ops in ops()) {
        let mut h = Harness::new(CachePolicy::ExpandAll);
        for op in ops {
            h.run(op);
        }
    }

    #[test]
    fn cached_locks_match_the_model_exact(ops in ops()) {
        let mut h = Harness::new(CachePolicy::Exact);
        for op in ops {
            h.run(op);
        }
    }
}
