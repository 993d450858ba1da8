//! A planned move's handed-over locks at their new owner: placeholders that keep every
//! holder's and every waiter's place until its client comes back.
//!
//! # The story of a move, from the table's side
//!
//! 1. The old owner's table answers [`Command::Handover`](super::Command::Handover) with
//!    every entry on the partition, held *and* waiting, in arrival order, in the same
//!    command that drops them (holders get a `NOTICE NOT_OWNER`, waiters a `NOT_OWNER`
//!    reply).
//! 2. The new owner's table installs one **placeholder** per entry, in that order, before
//!    any request for the partition is admitted
//!    ([`Command::Expect`](super::Command::Expect)). A placeholder is an ordinary table
//!    entry of the pseudo-session [`HANDOVER_SESSION`]: a holder's is held (with its
//!    token), a waiter's is queued behind the earlier entries it conflicts with, exactly
//!    as it was at the old owner. Placeholders are never granted.
//! 3. A returning client takes its placeholder over, keeping its arrival number and so its
//!    place: a `RECLAIM` of a holder (same range, mode and token), a waiting `LOCK` of a
//!    waiter (same range and mode; its timeout starts again at the new owner).
//! 4. The grace period ends as soon as every placeholder is taken over. Waiters have a
//!    shorter window than holders (the node's *requeue window*): when it closes, the
//!    waiters' placeholders still unclaimed are removed, which wakes whoever queued behind
//!    them. Whatever is still unclaimed when the grace period ends is removed too.
//!
//! Matching a `LOCK` by range and mode cannot forge anything: a placeholder taken over by
//! another client that happens to ask for the same range and mode gives that client the
//! place in the queue, not a grant the rules would refuse; the original waiter then queues
//! behind. A holder's placeholder needs the token it was granted with.

use std::collections::{HashMap, VecDeque};

use super::interval_tree::Handle;
use super::partitions::HandoverLock;

/// The session id of placeholders (real sessions are numbered from 1).
pub(crate) const HANDOVER_SESSION: u64 = 0;

/// The unclaimed placeholders of one partition.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    /// By the lock that claims them (`token` 0 for a waiter), earliest first; no queue is
    /// ever left empty, so the map is empty exactly when every placeholder is claimed.
    open: HashMap<HandoverLock, VecDeque<Handle>>,
}

impl Placeholders {
    /// Registers the placeholder `h` for `lock`, after every earlier one.
    pub(crate) fn add(&mut self, lock: HandoverLock, h: Handle) {
        self.open.entry(lock).or_default().push_back(h);
    }

    /// Takes the earliest unclaimed placeholder for `lock`, if any.
    pub(crate) fn claim(&mut self, lock: HandoverLock) -> Option<Handle> {
        let queue = self.open.get_mut(&lock)?;
        let h = queue.pop_front();
        if queue.is_empty() {
            self.open.remove(&lock);
        }
        h
    }

    /// Forgets the waiters' unclaimed placeholders (the requeue window closed), returning
    /// their handles for the table to remove.
    pub(crate) fn close_waiters(&mut self) -> Vec<Handle> {
        let mut out = Vec::new();
        self.open.retain(|lock, queue| {
            if lock.is_waiter() {
                out.extend(queue.drain(..));
            }
            !lock.is_waiter()
        });
        out
    }

    /// Whether every placeholder has been claimed (or forgotten).
    pub(crate) fn all_claimed(&self) -> bool {
        self.open.is_empty()
    }
}

/// A planned move in which every client comes back, in any order, is invisible: the table
/// of the new owner holds and queues exactly what the old one would have, in the same
/// order (up to identical waiters, which may swap places) (the FIFO model of `tests/table_model.rs`: an entry is held iff no earlier entry
/// overlaps it in a conflicting mode), and goes on granting in that order.
#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::time::Duration;

    use proptest::prelude::*;
    use tokio::sync::mpsc;

    use crate::ownership::{Fence, Reports};
    use crate::protocol::{op, EntryState, GrantMode, Mode, Partitioning, ResponseFrame, Status};
    use crate::table::{Command, LockTable, PartitionChange, TableLimits, TablePartitions};

    const SLOTS: usize = 3;

    /// The tokens of held locks by (slot, request id).
    type Tokens = HashMap<(usize, u64), u64>;

    #[derive(Clone, Debug)]
    enum Op {
        Lock {
            slot: usize,
            start: u64,
            len: u64,
            shared: bool,
        },
        Unlock {
            slot: usize,
            pick: usize,
        },
        /// Hand partition 0 over to a fresh table; clients come back in the order `seed`
        /// shuffles them into.
        Move {
            seed: u64,
        },
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let slot = 0..SLOTS;
        proptest::collection::vec(
            prop_oneof![
                6 => (slot.clone(), 0u64..40, 1u64..12, any::<bool>())
                    .prop_map(|(slot, start, len, shared)| Op::Lock { slot, start, len, shared }),
                4 => (slot, any::<usize>()).prop_map(|(slot, pick)| Op::Unlock { slot, pick }),
                1 => any::<u64>().prop_map(|seed| Op::Move { seed }),
            ],
            1..80,
        )
    }

    #[derive(Clone, Debug)]
    struct Model {
        slot: usize,
        id: u64,
        start: u64,
        end: u64,
        mode: Mode,
    }

    fn held(model: &[Model], i: usize) -> bool {
        let e = &model[i];
        !model[..i].iter().any(|x| x.start < e.end && e.start < x.end && !x.mode.compatible(e.mode))
    }

    /// One node's table with its sessions (one per slot).
    struct Node {
        table: LockTable,
        session: [u64; SLOTS],
        rx: HashMap<u64, mpsc::UnboundedReceiver<ResponseFrame>>,
        grace_done: Arc<Reports>,
    }

    impl Node {
        fn new(epoch: u64, next_session: &mut u64) -> Node {
            let fence = Arc::new(Fence::new());
            fence.extend_until(Fence::now(), Duration::from_secs(600));
            let grace_done = Arc::new(Reports::new(Arc::default()));
            let parts = TablePartitions::new(
                Partitioning::new(1).unwrap(),
                fence,
                Arc::new(Reports::new(Arc::default())),
                grace_done.clone(),
                Arc::default(),
            );
            let limits = TableLimits {
                max_locks_per_session: 1000,
                max_stats_entries: 10_000,
                max_stats_bytes: 1 << 20,
                max_names: 1 << 20,
            };
            let mut table = LockTable::new(GrantMode::Push, limits, Arc::default());
            table.set_partitions(parts);
            let grace_until = (epoch > 1).then_some(u64::MAX);
            let change = PartitionChange::Own { epoch, grace_until };
            table.apply(Command::Partition { partition: 0, change });
            let mut node = Node { table, session: [0; SLOTS], rx: HashMap::new(), grace_done };
            for slot in 0..SLOTS {
                *next_session += 1;
                let (tx, rx) = mpsc::unbounded_channel();
                let session = *next_session;
                node.apply(Command::Open { session, sink: Arc::new(tx) });
                node.rx.insert(session, rx);
                node.session[slot] = session;
            }
            node
        }

        fn apply(&mut self, cmd: Command) {
            self.table.apply(cmd);
            LockTable::flush_replies();
        }

        fn replies(&mut self, slot: usize) -> Vec<ResponseFrame> {
            let rx = self.rx.get_mut(&self.session[slot]).unwrap();
            std::iter::from_fn(|| rx.try_recv().ok()).collect()
        }

        /// (slot, id, held) of every entry, in arrival order; tokens of held ones.
        fn entries(&mut self) -> (Vec<(usize, u64, bool)>, Tokens) {
            self.apply(Command::Stats {
                session: self.session[0],
                id: u64::MAX,
                max_entries: 10_000,
                kind: crate::table::StatsKind::Plain,
            });
            let stats = self.replies(0).into_iter().find_map(|r| r.stats).expect("stats");
            let slot_of = |s: u64| self.session.iter().position(|x| *x == s).expect("a client");
            let mut tokens = HashMap::new();
            let order = stats
                .entries
                .iter()
                .map(|e| {
                    let held = e.state == EntryState::Held;
                    if held {
                        tokens.insert((slot_of(e.session), e.id), e.token);
                    }
                    (slot_of(e.session), e.id, held)
                })
                .collect();
            (order, tokens)
        }
    }

    fn run(ops: Vec<Op>) {
        let mut next_session = 0;
        let mut epoch = 1;
        let mut node = Node::new(epoch, &mut next_session);
        let mut model: Vec<Model> = Vec::new();
        let mut next_id = 0;
        for op in ops {
            match op {
                Op::Lock { slot, start, len, shared } => {
                    next_id += 1;
                    let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                    let (session, end) = (node.session[slot], start + len);
                    let lock = Command::Lock {
                        session,
                        id: next_id,
                        start,
                        end,
                        name: None,
                        mode,
                        may_wait: true,
                        nonce: next_id,
                        arrived: 0,
                        desired: None,
                    };
                    node.apply(lock);
                    model.push(Model { slot, id: next_id, start, end, mode });
                }
                Op::Unlock { slot, pick } => {
                    let mine: Vec<usize> =
                        (0..model.len()).filter(|i| model[*i].slot == slot).collect();
                    if mine.is_empty() {
                        continue;
                    }
                    let i = mine[pick % mine.len()];
                    let target = model[i].id;
                    node.apply(Command::Unlock { session: node.session[slot], id: 0, target });
                    model.remove(i);
                }
                Op::Move { seed } => {
                    let (_, tokens) = node.entries();
                    let (tx, rx) = std::sync::mpsc::channel();
                    node.apply(Command::Handover { partition: 0, report: tx });
                    let list = rx.recv().unwrap();
                    assert_eq!(list.len(), model.len(), "every entry is handed over");
                    epoch += 1;
                    let mut new = Node::new(epoch, &mut next_session);
                    new.apply(Command::Expect { partition: 0, locks: list });
                    // Everyone comes back, in a shuffled order, with the same request ids.
                    let mut back: Vec<usize> = (0..model.len()).collect();
                    let mut x = seed | 1;
                    for i in (1..back.len()).rev() {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        back.swap(i, (x % (i as u64 + 1)) as usize);
                    }
                    // A waiter takes the earliest place left of its range and mode: two
                    // identical waiters may swap places (the spec; see the module docs).
                    let mut after = model.clone();
                    let mut taken = vec![false; model.len()];
                    for &i in &back {
                        let m = &model[i];
                        let j = if tokens.contains_key(&(m.slot, m.id)) {
                            i
                        } else {
                            (0..model.len())
                                .find(|&j| {
                                    let o = &model[j];
                                    !taken[j]
                                        && !tokens.contains_key(&(o.slot, o.id))
                                        && (o.start, o.end, o.mode) == (m.start, m.end, m.mode)
                                })
                                .expect("a place")
                        };
                        taken[j] = true;
                        (after[j].slot, after[j].id) = (m.slot, m.id);
                    }
                    for i in back {
                        let m = &model[i];
                        let session = new.session[m.slot];
                        let (id, start, end, mode) = (m.id, m.start, m.end, m.mode);
                        let cmd = match tokens.get(&(m.slot, m.id)) {
                            Some(&token) => Command::Reclaim {
                                session,
                                id,
                                start,
                                end,
                                name: None,
                                mode,
                                token,
                            },
                            None => Command::Lock {
                                session,
                                id,
                                start,
                                end,
                                name: None,
                                mode,
                                may_wait: true,
                                nonce: id,
                                arrived: 0,
                                desired: None,
                            },
                        };
                        new.apply(cmd);
                        for r in new.replies(m.slot) {
                            assert_eq!(
                                r.op,
                                op::RECLAIM,
                                "waiters are not answered in grace: {r:?}"
                            );
                            assert_eq!(r.status, Status::Ok);
                        }
                    }
                    let done = new.grace_done.take();
                    assert_eq!(done, vec![0], "everyone is back");
                    new.apply(Command::Partition { partition: 0, change: PartitionChange::Serve });
                    node = new;
                    model = after;
                }
            }
            let (got, _) = node.entries();
            let want: Vec<(usize, u64, bool)> =
                (0..model.len()).map(|i| (model[i].slot, model[i].id, held(&model, i))).collect();
            assert_eq!(got, want);
        }
    }

    /// The answers to slot `slot` of request `id`, and whether a `CALLBACK` notice came.
    fn answers(node: &mut Node, slot: usize, id: u64) -> (Vec<ResponseFrame>, bool) {
        let all = node.replies(slot);
        let called = all.iter().any(|r| r.is_notice() && r.status == Status::Callback);
        (all.into_iter().filter(|r| !r.is_notice() && r.id == id).collect(), called)
    }

    /// A waiting exclusive lock of `[10, 20)` (a `LOCK_CACHED` if `desired`).
    fn lock(session: u64, id: u64, desired: Option<(u64, u64)>) -> Command {
        Command::Lock {
            session,
            id,
            start: 10,
            end: 20,
            name: None,
            mode: Mode::Exclusive,
            may_wait: true,
            nonce: id,
            arrived: 0,
            desired,
        }
    }

    /// A caching session's kept extent, reclaimed at the partition's new owner (after a
    /// move: into its placeholder; after a failover: in the grace period), is an
    /// ordinary hold there: the same session's later `LOCK_CACHED` waits for it (the
    /// client's threads inside the old extent must order its new local locks) and nobody
    /// calls it back; its unlock lets the session's request through.
    fn reclaimed_kept_extent_is_an_ordinary_hold(moved: bool) {
        let mut next_session = 0;
        let mut a = Node::new(1, &mut next_session);
        let lock_cached = |session, id| lock(session, id, Some((0, 1000)));
        a.apply(Command::CacheOn { session: a.session[0], id: 100 });
        a.apply(lock_cached(a.session[0], 1));
        let (got, _) = answers(&mut a, 0, 1);
        let granted = got.iter().find(|r| r.op == op::LOCK_CACHED).expect("granted");
        let grant = granted.grant.expect("an extent");
        assert!(grant.cached, "{grant:?}");
        let token = granted.value;
        let mut b = Node::new(2, &mut next_session);
        if moved {
            let (tx, rx) = std::sync::mpsc::channel();
            a.apply(Command::Handover { partition: 0, report: tx });
            b.apply(Command::Expect { partition: 0, locks: rx.recv().unwrap() });
        }
        let (me, other) = (b.session[0], b.session[1]);
        b.apply(Command::CacheOn { session: me, id: 100 });
        b.apply(Command::Reclaim {
            session: me,
            id: 1,
            start: grant.start,
            end: grant.end,
            name: None,
            mode: Mode::Exclusive,
            token,
        });
        let (got, _) = answers(&mut b, 0, 1);
        assert_eq!(got.iter().map(|r| r.status).collect::<Vec<_>>(), vec![Status::Ok]);
        b.apply(Command::Partition { partition: 0, change: PartitionChange::Serve });
        b.apply(lock_cached(me, 2));
        b.apply(lock(other, 3, None));
        let (got, called) = answers(&mut b, 0, 2);
        assert!(got.is_empty(), "moved {moved}: granted over its own reclaimed hold: {got:?}");
        assert!(!called, "moved {moved}: a reclaimed hold was called back");
        assert!(answers(&mut b, 1, 3).0.is_empty(), "moved {moved}: granted over a hold");
        b.apply(Command::Unlock { session: me, id: 4, target: 1 });
        let (got, _) = answers(&mut b, 0, 2);
        assert!(
            got.iter().any(|r| r.op == op::LOCK_CACHED && r.status == Status::Ok),
            "moved {moved}: not granted after the unlock: {got:?}"
        );
    }

    #[test]
    fn a_kept_extent_reclaimed_after_a_move_is_an_ordinary_hold() {
        reclaimed_kept_extent_is_an_ordinary_hold(true);
    }

    #[test]
    fn a_kept_extent_reclaimed_after_a_failover_is_an_ordinary_hold() {
        reclaimed_kept_extent_is_an_ordinary_hold(false);
    }

    /// A caching session's `LOCK_CACHED` that waited at the old owner comes back into its
    /// placeholder and is answered as a `LOCK_CACHED`: an exact grant, not kept.
    #[test]
    fn a_requeued_cached_waiter_is_answered_as_one() {
        let mut next_session = 0;
        let mut a = Node::new(1, &mut next_session);
        a.apply(lock(a.session[1], 1, None));
        let (got, _) = answers(&mut a, 1, 1);
        let token = got.first().expect("granted").value;
        a.apply(Command::CacheOn { session: a.session[0], id: 100 });
        a.apply(lock(a.session[0], 2, Some((0, 1000))));
        assert!(answers(&mut a, 0, 2).0.is_empty(), "it waits");
        let (tx, rx) = std::sync::mpsc::channel();
        a.apply(Command::Handover { partition: 0, report: tx });
        let mut b = Node::new(2, &mut next_session);
        b.apply(Command::Expect { partition: 0, locks: rx.recv().unwrap() });
        let (holder, waiter) = (b.session[1], b.session[0]);
        b.apply(Command::Reclaim {
            session: holder,
            id: 1,
            start: 10,
            end: 20,
            name: None,
            mode: Mode::Exclusive,
            token,
        });
        b.apply(Command::CacheOn { session: waiter, id: 100 });
        b.apply(lock(waiter, 2, Some((0, 1000))));
        b.apply(Command::Partition { partition: 0, change: PartitionChange::Serve });
        assert!(answers(&mut b, 0, 2).0.is_empty(), "it waits behind the holder");
        b.apply(Command::Unlock { session: holder, id: 3, target: 1 });
        let (got, _) = answers(&mut b, 0, 2);
        let r = got.first().expect("granted after the unlock");
        assert_eq!((r.op, r.status), (op::LOCK_CACHED, Status::Ok), "{r:?}");
        let grant = r.grant.expect("a LOCK_CACHED answer has its extent");
        assert_eq!((grant.start, grant.end, grant.cached), (10, 20, false));
    }

    proptest! {
        #[test]
        fn a_move_everyone_returns_from_is_invisible_to_the_fifo_model(ops in ops()) {
            run(ops);
        }
    }
}
