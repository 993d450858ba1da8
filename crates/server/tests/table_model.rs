//! The lock table against a sequential model: a list of requests in arrival order where
//! an entry is held iff no earlier entry of the same resource (the unnamed one, or a name)
//! overlaps it in a conflicting mode.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use rangelock_server::protocol::{op, EntryState, GrantMode, Mode, ResponseFrame, Status};
use rangelock_server::table::{Command, LockTable, StatsKind, TableLimits};
use tokio::sync::mpsc;

#[derive(Clone, Debug)]
enum Op {
    Lock { session: usize, start: u64, len: u64, shared: bool, may_wait: bool, name: u8 },
    Unlock { session: usize, pick: usize },
    Cancel { session: usize, pick: usize },
    Expire { session: usize, pick: usize },
    Close { session: usize },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let s = 0usize..3;
    proptest::collection::vec(
        prop_oneof![
            6 => (s.clone(), 0u64..40, 1u64..12, any::<bool>(), prop::bool::weighted(0.8), 0u8..3)
                .prop_map(|(session, start, len, shared, may_wait, name)| Op::Lock { session, start, len, shared, may_wait, name }),
            4 => (s.clone(), any::<usize>()).prop_map(|(session, pick)| Op::Unlock { session, pick }),
            1 => (s.clone(), any::<usize>()).prop_map(|(session, pick)| Op::Cancel { session, pick }),
            1 => (s.clone(), any::<usize>()).prop_map(|(session, pick)| Op::Expire { session, pick }),
            1 => s.prop_map(|session| Op::Close { session }),
        ],
        1..120,
    )
}

#[derive(Clone, Debug)]
struct MEntry {
    session: u64,
    id: u64,
    start: u64,
    end: u64,
    mode: Mode,
    /// 0: the unnamed resource; else the name `[name]`.
    name: u8,
}

fn held(model: &[MEntry], i: usize) -> bool {
    let e = &model[i];
    !model[..i].iter().any(|x| {
        x.name == e.name && x.start < e.end && e.start < x.end && !x.mode.compatible(e.mode)
    })
}

/// A STATS entry as the model checks it: session, id, held, name.
type Listed = (u64, u64, bool, Option<Arc<[u8]>>);

/// The name of model name `n` (`None` for 0, the unnamed resource).
fn resource(n: u8) -> Option<Arc<[u8]>> {
    (n != 0).then(|| Arc::from(&[b'n', n][..]))
}

struct Harness {
    table: LockTable,
    rx: HashMap<u64, mpsc::UnboundedReceiver<ResponseFrame>>,
    next_id: u64,
    model: Vec<MEntry>,
    /// Session number of each slot (sessions are replaced after a close).
    slot: [u64; 3],
    next_session: u64,
    last_token: HashMap<u64, u64>,
    tokens: std::collections::HashSet<u64>,
}

impl Harness {
    fn new(grant: GrantMode) -> Self {
        let limits = TableLimits {
            max_locks_per_session: 1000,
            max_stats_entries: 10_000,
            max_stats_bytes: 1 << 20,
            max_names: 1 << 20,
        };
        let mut h = Harness {
            table: LockTable::new(grant, limits, Arc::default()),
            rx: HashMap::new(),
            next_id: 0,
            model: Vec::new(),
            slot: [0; 3],
            next_session: 0,
            last_token: HashMap::new(),
            tokens: Default::default(),
        };
        for i in 0..3 {
            h.slot[i] = h.open();
        }
        h
    }

    fn open(&mut self) -> u64 {
        self.next_session += 1;
        let (tx, rx) = mpsc::unbounded_channel();
        self.table.apply(Command::Open { session: self.next_session, sink: Arc::new(tx) });
        self.rx.insert(self.next_session, rx);
        self.next_session
    }

    fn drain(&mut self, session: u64) -> Vec<ResponseFrame> {
        let mut v = Vec::new();
        if let Some(rx) = self.rx.get_mut(&session) {
            while let Ok(r) = rx.try_recv() {
                if r.op == op::LOCK && r.status == Status::Ok {
                    // Responses of one session arrive in grant order.
                    let last = self.last_token.entry(session).or_insert(0);
                    assert!(r.value > *last, "fencing tokens strictly increase");
                    *last = r.value;
                    assert!(self.tokens.insert(r.value), "fencing tokens are unique");
                }
                v.push(r);
            }
        }
        v
    }

    fn pick(&self, session: u64, pick: usize) -> Option<u64> {
        let mine: Vec<u64> =
            self.model.iter().filter(|e| e.session == session).map(|e| e.id).collect();
        (!mine.is_empty()).then(|| mine[pick % mine.len()])
    }

    fn check(&mut self) {
        for s in self.slot {
            self.drain(s);
        }
        let probe = self.slot[0];
        self.table.apply(Command::Stats {
            session: probe,
            id: u64::MAX,
            max_entries: 10_000,
            kind: StatsKind::Named,
        });
        let r = self.rx.get_mut(&probe).unwrap().try_recv().expect("stats reply");
        let st = r.stats.expect("stats body");
        let got: Vec<Listed> = st
            .entries
            .iter()
            .map(|e| (e.session, e.id, e.state == EntryState::Held, e.name.clone()))
            .collect();
        let want: Vec<Listed> = (0..self.model.len())
            .map(|i| {
                let m = &self.model[i];
                (m.session, m.id, held(&self.model, i), resource(m.name))
            })
            .collect();
        assert_eq!(got, want);
        let named_held = (0..self.model.len())
            .filter(|&i| self.model[i].name != 0 && held(&self.model, i))
            .count();
        assert_eq!(st.counters.named_holders as usize, named_held);
        assert_eq!(st.counters.holders as usize, want.iter().filter(|w| w.2).count());
        assert_eq!(st.counters.waiters as usize, want.iter().filter(|w| !w.2).count());
        // A name is live while something is held or queued on it, and only then.
        let names: std::collections::HashSet<u8> =
            self.model.iter().map(|e| e.name).filter(|&n| n != 0).collect();
        assert_eq!(self.table.names_live(), names.len());
        assert_eq!(st.counters.names_live as usize, names.len());
    }

    fn run(&mut self, op: Op, grant: GrantMode) {
        match op {
            Op::Lock { session, start, len, shared, may_wait, name } => {
                let s = self.slot[session];
                self.next_id += 1;
                let id = self.next_id;
                let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                let e = MEntry { session: s, id, start, end: start + len, mode, name };
                self.model.push(e);
                let would_hold = held(&self.model, self.model.len() - 1);
                if !would_hold && !may_wait {
                    self.model.pop();
                }
                self.table.apply(Command::Lock {
                    session: s,
                    id,
                    start,
                    end: start + len,
                    name: resource(name),
                    mode,
                    may_wait,
                    nonce: id,
                    arrived: 0,
                    desired: None,
                });
                let replies = self.drain(s);
                let mine: Vec<Status> =
                    replies.iter().filter(|r| r.id == id).map(|r| r.status).collect();
                let want = match (would_hold, may_wait, grant) {
                    (true, _, _) => vec![Status::Ok],
                    (false, false, _) => vec![Status::WouldBlock],
                    (false, true, GrantMode::Push) => vec![],
                    (false, true, GrantMode::Poll) => vec![Status::Pending],
                };
                assert_eq!(mine, want);
            }
            Op::Unlock { session, pick }
            | Op::Cancel { session, pick }
            | Op::Expire { session, pick } => {
                let s = self.slot[session];
                let Some(target) = self.pick(s, pick) else { return };
                let i = self.model.iter().position(|e| e.session == s && e.id == target).unwrap();
                let is_held = held(&self.model, i);
                let removes = match op {
                    Op::Unlock { .. } => {
                        self.table.apply(Command::Unlock { session: s, id: 0, target });
                        true
                    }
                    Op::Cancel { .. } => {
                        self.table.apply(Command::Cancel { session: s, id: 0, target });
                        !is_held
                    }
                    _ => {
                        self.table.apply(Command::Expire { session: s, target, nonce: target });
                        !is_held
                    }
                };
                if removes {
                    self.model.remove(i);
                }
            }
            Op::Close { session } => {
                let s = self.slot[session];
                self.table.apply(Command::Close { session: s });
                self.model.retain(|e| e.session != s);
                self.rx.remove(&s);
                self.slot[session] = self.open();
            }
        }
        self.check();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn table_matches_the_fifo_model_push(ops in ops()) {
        let mut h = Harness::new(GrantMode::Push);
        for op in ops {
            h.run(op, GrantMode::Push);
        }
    }

    #[test]
    fn table_matches_the_fifo_model_poll(ops in ops()) {
        let mut h = Harness::new(GrantMode::Poll);
        for op in ops {
            h.run(op, GrantMode::Poll);
        }
    }
}

#[test]
fn a_writer_is_not_starved_by_a_stream_of_readers() {
    let mut h = Harness::new(GrantMode::Push);
    h.run(
        Op::Lock { session: 0, start: 0, len: 10, shared: true, may_wait: true, name: 0 },
        GrantMode::Push,
    );
    h.run(
        Op::Lock { session: 1, start: 5, len: 1, shared: false, may_wait: true, name: 0 },
        GrantMode::Push,
    );
    // A later reader queues behind the waiting writer even though it is compatible with
    // the current holder.
    h.run(
        Op::Lock { session: 2, start: 0, len: 10, shared: true, may_wait: true, name: 0 },
        GrantMode::Push,
    );
    assert!(!held(&h.model, 2));
    h.run(Op::Unlock { session: 0, pick: 0 }, GrantMode::Push);
    assert!(held(&h.model, 0), "the writer is granted first");
    assert!(!held(&h.model, 1));
}

/// Two names and the unnamed resource on the same units never conflict; the same name
/// does; the release of a name's last lock forgets the name, and it comes back fresh.
#[test]
fn names_are_separate_lines_that_live_while_locked() {
    let mut h = Harness::new(GrantMode::Push);
    let x = |session, name| Op::Lock {
        session,
        start: 0,
        len: 10,
        shared: false,
        may_wait: true,
        name,
    };
    h.run(x(0, 0), GrantMode::Push);
    h.run(x(1, 1), GrantMode::Push);
    h.run(x(2, 2), GrantMode::Push);
    assert!((0..3).all(|i| held(&h.model, i)), "three resources, three holders");
    assert_eq!(h.table.names_live(), 2);
    h.run(x(0, 1), GrantMode::Push);
    assert!(!held(&h.model, 3), "the same name conflicts");
    h.run(Op::Unlock { session: 1, pick: 0 }, GrantMode::Push);
    assert!(held(&h.model, 2), "the waiter on name 1 is granted");
    h.run(Op::Close { session: 0 }, GrantMode::Push);
    assert_eq!(h.table.names_live(), 1, "name 1 had only session 0's lock left");
    h.run(Op::Close { session: 2 }, GrantMode::Push);
    assert_eq!(h.table.names_live(), 0);
    h.run(x(1, 2), GrantMode::Push);
    assert!(held(&h.model, 0));
    assert_eq!(h.table.names_live(), 1);
}
