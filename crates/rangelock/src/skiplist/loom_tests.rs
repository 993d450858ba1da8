//! Loom models of the skip-list protocols: insert/mark/unlink between writers, and the
//! shared/exclusive handshake. Data protected by the lock lives in loom `UnsafeCell`s, so
//! loom itself reports any two holders that overlap in incompatible modes.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p rangelock
//! --lib -- loom` (ci/loom.sh).

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use super::*;

/// One cell per unit of a tiny domain.
struct Units(Vec<UnsafeCell<u64>>);

// SAFETY: access to the cells is serialized by the range lock under test; loom checks it.
unsafe impl Sync for Units {}

impl Units {
    fn new(n: usize) -> Self {
        Units((0..n).map(|_| UnsafeCell::new(0)).collect())
    }

    fn write(&self, range: Range<u64>) {
        for u in range {
            self.0[u as usize].with_mut(|p| {
                // SAFETY: the caller holds `range` exclusively; loom checks the claim.
                unsafe { *p += 1 }
            });
        }
    }

    fn read(&self, range: Range<u64>) -> u64 {
        let mut sum = 0;
        for u in range {
            // SAFETY: the caller holds `range` (shared at least); loom checks the claim.
            sum += self.0[u as usize].with(|p| unsafe { *p });
        }
        sum
    }
}

/// A lock built by `builder` whose nodes are reclaimed through `reclaim::DeferredEpoch`
/// (nothing reused while the model runs) instead of the real epoch: for the models that
/// the real epoch makes too large (module docs).
fn deferred(builder: Builder) -> RangeLock {
    // Built before any thread runs: these models check the protocol, not the build.
    let raw = builder.solo(true).build_raw();
    raw.state.core(|| {
        let mut core = builder.core();
        core.reclaim = Reclaim::deferred();
        core
    });
    RangeLock::from_raw(raw)
}

/// Holds `range` exclusively (blocking) and writes it.
fn write_held(lock: &RangeLock, units: &Units, range: Range<u64>) {
    let g = lock.lock(range.clone());
    units.write(range);
    drop(g);
}

/// A thread that holds `range` shared (blocking) and reads it.
fn spawn_reader(
    lock: &Arc<RangeLock>,
    units: &Arc<Units>,
    range: Range<u64>,
) -> thread::JoinHandle<()> {
    let (lock, units) = (Arc::clone(lock), Arc::clone(units));
    thread::spawn(move || {
        let g = lock.lock_shared(range.clone());
        let _ = units.read(range);
        drop(g);
    })
}

/// A thread that holds `range` exclusively (blocking) and writes it ([`write_held`]).
fn spawn_writer(
    lock: &Arc<RangeLock>,
    units: &Arc<Units>,
    range: Range<u64>,
) -> thread::JoinHandle<()> {
    let (lock, units) = (Arc::clone(lock), Arc::clone(units));
    thread::spawn(move || write_held(&lock, &units, range))
}

/// Tries `range` once in `mode`; if granted, writes it (exclusive) or reads it (shared).
fn try_use(lock: &RangeLock, units: &Units, range: Range<u64>, mode: Mode) {
    if let Ok(g) = lock.try_lock_mode(range.clone(), mode) {
        match mode {
            Mode::Exclusive => units.write(range),
            Mode::Shared => {
                let _ = units.read(range);
            }
        }
        drop(g);
    }
}

/// A thread running [`try_use`].
fn spawn_try(
    lock: &Arc<RangeLock>,
    units: &Arc<Units>,
    range: Range<u64>,
    mode: Mode,
) -> thread::JoinHandle<()> {
    let (lock, units) = (Arc::clone(lock), Arc::clone(units));
    thread::spawn(move || try_use(&lock, &units, range, mode))
}

/// Two blocking writers of overlapping ranges, plus a third disjoint one: insert, wait,
/// mark and unlink interleave; the overlapping pair never holds together.
#[test]
fn loom_writers_overlap_insert_mark_unlink() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(2).build());
        let units = Arc::new(Units::new(4));
        let t = spawn_writer(&lock, &units, 0..2);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        // Both released and unlinked: everything locks again, and nothing stays linked.
        let all = lock.try_lock(0..u64::MAX).unwrap();
        drop(all);
        assert_eq!(units.read(0..4), 4);
    });
}

/// Two adjacent writers using `try_lock`: both must succeed (adjacent ranges never
/// conflict, whatever the interleaving of their CASes and snips).
#[test]
fn loom_adjacent_try_locks_both_succeed() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(2).build());
        let t = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                let g = lock.try_lock(0..1).expect("adjacent range refused");
                drop(g);
                let g = lock.try_lock(0..1).expect("released range refused");
                drop(g);
            })
        };
        let g = lock.try_lock(1..2).expect("adjacent range refused");
        drop(g);
        t.join().unwrap();
        let _all = lock.try_lock(0..2).unwrap();
    });
}

/// A blocking reader and a blocking writer of overlapping ranges: the Dekker handshake
/// (announce/scan list vs link/scan slots) with retraction and waiting on both sides.
#[test]
fn loom_shared_exclusive_handshake_blocking() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(3));
        let t = spawn_reader(&lock, &units, 0..2);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(0..3), 2);
    });
}

/// `try_lock` of a reader against `try_lock` of a writer: never both, and readers never
/// refuse readers.
#[test]
fn loom_shared_exclusive_try_never_both() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(2));
        let t = spawn_try(&lock, &units, 0..2, Mode::Shared);
        try_use(&lock, &units, 1..2, Mode::Exclusive);
        t.join().unwrap();
        // Readers are always compatible with readers.
        let r1 = lock.try_lock_shared(0..2).unwrap();
        let r2 = lock.try_lock_shared(1..2).unwrap();
        drop((r1, r2));
    });
}

/// Two readers and a writer on one range: the writer drains both readers (one may be
/// announced before the writer's link, one after), and readers share.
#[test]
fn loom_two_readers_one_writer() {
    loom::model(|| {
        // Deferred reclamation: three threads are too many for the real epoch (module docs).
        let lock = Arc::new(deferred(RangeLock::builder().max_height(1)));
        let units = Arc::new(Units::new(1));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (lock, units) = (Arc::clone(&lock), Arc::clone(&units));
                thread::spawn(move || {
                    if let Ok(g) = lock.try_lock_shared(0..1) {
                        let _ = units.read(0..1);
                        drop(g);
                    }
                })
            })
            .collect();
        write_held(&lock, &units, 0..1);
        for r in readers {
            r.join().unwrap();
        }
    });
}

/// The per-line reader counts: a reader may announce on the second line of the table (the
/// first one is full of other shared holders, which then leave, so the writer finds the
/// first line's count at zero and skips it). The writer must still see the reader.
#[test]
fn loom_reader_on_second_line_is_seen() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(3));
        // Fill the first line (readers::LINE_SLOTS shared holds of a disjoint range).
        let fillers: Vec<_> = (0..readers::LINE_SLOTS as u64)
            .map(|i| lock.try_lock_shared(10 + i..11 + i).unwrap())
            .collect();
        let t = spawn_reader(&lock, &units, 0..2);
        drop(fillers);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(0..3), 2);
    });
}

/// A blocking reader and a blocking writer of the same stripe-sized range (under loom a
/// stripe is 2 units): the writer takes the stripe slot, and the handshake runs between
/// the slot claim and the reader's announcement; a writer that sees the reader retracts
/// and takes the list path.
#[test]
fn loom_stripe_writer_and_reader() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(2));
        let t = spawn_reader(&lock, &units, 0..2);
        write_held(&lock, &units, 0..2);
        t.join().unwrap();
        assert_eq!(units.read(0..2), 2);
    });
}

/// Two `try_lock`s of overlapping ranges, one that fits a stripe and one across the
/// stripe boundary (list path): never both, whatever the interleaving of the slot claim,
/// the link and the two scans.
#[test]
fn loom_stripe_and_list_try_never_both() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        exclusive_tries_race(&lock, 0..2, 1..3, &Arc::new(Units::new(3)));
    });
}

/// Exclusive `try_lock`s of `a` (a spawned thread) and `b` (this one), each writing its
/// range if granted; afterwards nothing stays locked over `units`.
fn exclusive_tries_race(lock: &Arc<RangeLock>, a: Range<u64>, b: Range<u64>, units: &Arc<Units>) {
    let t = spawn_try(lock, units, a, Mode::Exclusive);
    try_use(lock, units, b, Mode::Exclusive);
    t.join().unwrap();
    let all = 0..units.0.len() as u64;
    let _all = lock.try_lock(all).expect("a range stayed locked");
}

/// A list writer whose range touches more than `stripes::NARROW` stripes counts itself in
/// the `wide` count of each table it touches (here windows 0-2: window 0's own table and
/// the overflow table) instead of per slot; a stripe holder inside its range must still see
/// it (or be seen).
#[test]
fn loom_wide_list_writer_and_stripe_holder() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(10));
        let t = spawn_writer(&lock, &units, 0..10);
        write_held(&lock, &units, 4..6);
        t.join().unwrap();
        assert_eq!(units.read(0..10), 12);
    });
}

/// Stripes 0 and 2 share slot 0 of the shared table under loom. After a holder of stripe 2
/// has come and gone, a stripe holder of stripe 0 and an overlapping list writer race: the
/// writer must read the holder's window from the slot word, not assume one (see
/// "The slot word" in `stripes`), and must not skip it.
#[test]
fn loom_aliased_overflow_slot_names_its_window() {
    loom::model(|| {
        // No window tables: the one shared table, where stripes 0 and 2 alias.
        let lock = Arc::new(RangeLock::builder().max_height(1).windows(0).build());
        let units = Arc::new(Units::new(6));
        write_held(&lock, &units, 4..6);
        exclusive_tries_race(&lock, 0..2, 1..3, &units);
    });
}

/// Under loom a window is 2 stripes (4 units) and one window gets a table of its own. A
/// stripe holder of stripe 0 and a narrow list writer over stripes 0-2 (windows 0 and 1)
/// race to resolve window 0 (one installs the table and sets the key, or both install and
/// one frees its copy); window 1 goes to the shared table. Never both hold.
#[test]
fn loom_window_table_resolution_race() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        exclusive_tries_race(&lock, 0..2, 1..5, &Arc::new(Units::new(5)));
    });
}

/// A holder downgrades its exclusive hold (stripe slot, or list node for a range across
/// stripes) while a writer of an overlapping range waits: the writer never writes while the
/// downgraded reader reads, and a reader may share with it.
#[test]
fn loom_downgrade_keeps_writers_out() {
    for (held, other) in [(0..2, 1..2), (1..3, 0..2)] {
        loom::model(move || {
            let lock = Arc::new(RangeLock::builder().max_height(1).build());
            let units = Arc::new(Units::new(4));
            let t = spawn_writer(&lock, &units, other.clone());
            let g = lock.lock(held.clone());
            units.write(held.clone());
            let r = g.downgrade();
            let _ = units.read(held.clone());
            drop(r);
            t.join().unwrap();
            let all = 0..units.0.len() as u64;
            assert_eq!(
                units.read(all.clone()),
                (held.end - held.start) + (other.end - other.start)
            );
            let _all = lock.try_lock(all).expect("a range stayed locked");
        });
    }
}

/// Two readers wait for one exclusive holder (a stripe slot's word, then a list node's):
/// the second to park may find `PARKED` already set and park without its CAS, and the
/// holder's release must wake both (`unpark_all`, after the RMW that reads `PARKED`). A
/// lost wake-up leaves a reader parked for good, and loom reports the deadlock.
#[test]
fn loom_release_wakes_every_parked_waiter() {
    for held in [0..2, 1..3] {
        loom::model(move || {
            // Deferred reclamation: three threads are too many for the real epoch (module
            // docs); the two-thread models check reuse.
            let lock = Arc::new(deferred(RangeLock::builder().max_height(1)));
            let units = Arc::new(Units::new(3));
            let g = lock.lock(held.clone());
            units.write(held.clone());
            let readers: Vec<_> =
                (0..2).map(|_| spawn_reader(&lock, &units, held.clone())).collect();
            drop(g);
            for r in readers {
                r.join().unwrap();
            }
        });
    }
}

/// A writer blocks on a stripe holder's slot, a *counted* wait word (`wait`, "Counted
/// words"): the holder releases with a plain store, a light barrier and a load of the
/// slot's waiter count; the waiter counts itself, passes the heavy barrier and validates.
/// Under loom both barriers are SeqCst fences. Drop either fence or the count and the
/// holder can miss a waiter that is about to park: loom reports the deadlock.
#[test]
fn loom_stripe_release_wakes_a_counted_waiter() {
    for (held, wanted, mode) in
        [(0..1, 0..1, Mode::Exclusive), (0..2, 1..2, Mode::Shared), (2..3, 2..4, Mode::Exclusive)]
    {
        loom::model(move || {
            let lock = Arc::new(RangeLock::builder().max_height(1).build());
            let units = Arc::new(Units::new(4));
            let g = lock.lock(held.clone());
            let t = match mode {
                Mode::Shared => spawn_reader(&lock, &units, wanted.clone()),
                Mode::Exclusive => spawn_writer(&lock, &units, wanted.clone()),
            };
            units.write(held.clone());
            drop(g);
            t.join().unwrap();
        });
    }
}

/// A waiter keeps a ticket on a node whose use ends; the node is retired, reclaimed by the
/// real epoch (a batch is one node under loom) and reused by the holder's next acquisition,
/// `second`, while the waiter sleeps or is about to. The new use carries a new generation,
/// so the waiter's ticket is over and it looks again. `second` does not conflict with the
/// waiter and lasts until the waiter is done, so a ticket that mistook the new use for the
/// old one deadlocks the model. The first use is `lock(1..3)`, a list node (the range
/// crosses a stripe boundary).
fn recycled_node_model(waiter: Mode, second: Range<u64>, second_mode: Mode) {
    loom::model(move || {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(7));
        let g = lock.lock(1..3);
        units.write(1..3);
        let t = match waiter {
            Mode::Shared => spawn_reader(&lock, &units, 1..3),
            Mode::Exclusive => spawn_writer(&lock, &units, 1..3),
        };
        drop(g);
        let again = lock.lock_mode(second.clone(), second_mode);
        match second_mode {
            Mode::Exclusive => units.write(second.clone()),
            Mode::Shared => {
                let _ = units.read(second.clone());
            }
        }
        t.join().unwrap();
        drop(again);
    });
}

/// [`recycled_node_model`]: a reader waits for a writer whose node comes back as the
/// holder's shared hold of the same range (readers share, so waiting for it is wrong).
#[test]
fn loom_recycled_node_reader_waiter() {
    recycled_node_model(Mode::Shared, 1..3, Mode::Shared);
}

/// [`recycled_node_model`]: a writer waits for a writer whose node comes back as the
/// holder's exclusive hold of a disjoint range.
#[test]
fn loom_recycled_node_writer_waiter() {
    recycled_node_model(Mode::Exclusive, 5..7, Mode::Exclusive);
}

/// A reader waits for a writer, whose holder then takes the range exclusively again (its
/// recycled node or a fresh one). The reader retracts and re-announces its node with a new
/// generation each time; the second writer must never skip an announced reader whose
/// state still says "released" (a re-announcement without its new generation), and never
/// writes while the reader reads.
#[test]
fn loom_reader_retracts_and_reannounces() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).build());
        let units = Arc::new(Units::new(3));
        let g = lock.lock(1..3);
        let t = spawn_reader(&lock, &units, 1..3);
        drop(g);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(1..3), 2);
    });
}

/// A lock whose ranges over both stripes of a window (under loom: 2 units a stripe, 2
/// stripes a window) hold by claiming both slots.
fn two_stripe_claims() -> RangeLock {
    RangeLock::builder().max_height(1).claim_stripes(2).build()
}

/// A two-slot claim (1..3: stripes 0 and 1) against a single-stripe holder of stripe 1
/// (2..4): whichever CAS wins slot 1, the other gives up (the claim frees slot 0 if it
/// took it) and takes the list path, where it meets the winner's piece. Never both, and
/// afterwards every slot is free.
#[test]
fn loom_two_stripe_claim_and_stripe_holder_try() {
    loom::model(|| {
        let lock = Arc::new(two_stripe_claims());
        exclusive_tries_race(&lock, 1..3, 2..4, &Arc::new(Units::new(4)));
    });
}

/// The same pair, blocking: the loser waits on the winner's slot and is woken by its
/// release (a claim's release frees each of its slots and wakes each slot's waiters).
#[test]
fn loom_two_stripe_claim_and_stripe_holder_blocking() {
    loom::model(|| {
        let lock = Arc::new(two_stripe_claims());
        let units = Arc::new(Units::new(4));
        let t = spawn_writer(&lock, &units, 2..4);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(0..4), 4);
    });
}

/// A two-slot claim against an overlapping list writer (0..5 crosses into window 1, so it
/// takes the list and counts itself in the slots of stripes 0-2): the Dekker handshake
/// between the claim (both slots, fence, both slots' counts) and the count, link, fence
/// and slot scan of the writer.
#[test]
fn loom_two_stripe_claim_and_list_writer() {
    loom::model(|| {
        let lock = Arc::new(two_stripe_claims());
        let units = Arc::new(Units::new(5));
        let t = spawn_writer(&lock, &units, 0..5);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(0..5), 7);
    });
}

/// A reader of both stripes (0..4, joining both slots) against a writer claiming them
/// (1..3): the writer's CAS fails on a slot the reader holds and it takes the list path,
/// where it waits for the reader's pieces; or it claims first and the reader goes to the
/// reader table and waits for its pieces.
#[test]
fn loom_two_stripe_reader_and_claiming_writer() {
    loom::model(|| {
        let lock = Arc::new(two_stripe_claims());
        let units = Arc::new(Units::new(4));
        let t = spawn_reader(&lock, &units, 0..4);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(0..4), 2);
    });
}

/// A lock with coarse claims (under loom: coarse stripes of 2 stripes, 4 units, in
/// windows of 2 coarse stripes, 8 units) and claims of one stripe: a range over 2 or more
/// stripes of at most two (4-unit) windows and 2 coarse stripes holds a coarse claim.
fn coarse_claims() -> RangeLock {
    RangeLock::builder().max_height(1).coarse_claims(true).build()
}

/// A coarse holder (1..5: stripes 0-2, windows 0-1, coarse stripes 0-1, counted in its
/// slots) against a stripe holder inside it (2..4: stripe 1): the coarse holder counts
/// itself, claims, fences and scans the stripe slots; the stripe holder claims, fences,
/// reads the counts and (counted over) checks the coarse slots. Never both.
#[test]
fn loom_coarse_claim_and_stripe_holder() {
    loom::model(|| {
        let lock = Arc::new(coarse_claims());
        let units = Arc::new(Units::new(5));
        let t = spawn_writer(&lock, &units, 2..4);
        write_held(&lock, &units, 1..5);
        t.join().unwrap();
        assert_eq!(units.read(0..5), 6);
    });
}

/// Two overlapping coarse candidates (1..3 in coarse stripe 0, 2..6 over coarse stripes
/// 0-1): the second CAS on coarse slot 0 fails and that range takes the list path, where
/// it counts, links and waits for the coarse piece; or both claim nothing in common and
/// the counts send one to the search. Never both.
#[test]
fn loom_coarse_claim_and_list_writer() {
    loom::model(|| {
        let lock = Arc::new(coarse_claims());
        let units = Arc::new(Units::new(6));
        let t = spawn_writer(&lock, &units, 2..6);
        write_held(&lock, &units, 1..3);
        t.join().unwrap();
        assert_eq!(units.read(0..6), 6);
    });
}

/// A coarse reader (1..5) against a stripe writer inside its range (2..4), both blocking:
/// the writer (counted over by the reader) checks the coarse slots and waits for the
/// reader's piece, or the reader finds the writer's slot and retracts to the reader table.
#[test]
fn loom_coarse_reader_and_stripe_writer() {
    loom::model(|| {
        let lock = Arc::new(coarse_claims());
        let units = Arc::new(Units::new(5));
        let t = spawn_reader(&lock, &units, 1..5);
        write_held(&lock, &units, 2..4);
        t.join().unwrap();
        assert_eq!(units.read(0..5), 2);
    });
}

/// An ordered request (`lock_many`'s fair path, `ordered`: 1..2 exclusive, then 3..4
/// shared) against a writer of 0..4 over both its ranges (starts differ: nodes of equal
/// starts are ordered by address, which varies between executions). The writer may meet
/// the request's first node, publish its intent and wait for that node; the request, past
/// its first range, must then not wait for the intent (loom reports the deadlock if it
/// does). Never both inside, and the request's shared range is downgraded with no writer in
/// between.
#[test]
fn loom_ordered_request_and_wide_writer() {
    loom::model(|| {
        let lock = Arc::new(deferred(RangeLock::builder().max_height(1)));
        let units = Arc::new(Units::new(4));
        let t = spawn_writer(&lock, &units, 0..4);
        let request = [(1..2, Mode::Exclusive), (3..4, Mode::Shared)];
        let tokens = lock.raw().lock_ordered(&request, None).expect("no deadline");
        units.write(1..2);
        let _ = units.read(3..4);
        for token in tokens {
            // SAFETY: acquired from this lock just above, released once, here.
            unsafe { lock.raw().unlock(token) };
        }
        t.join().unwrap();
        assert_eq!(units.read(0..4), 5);
        let _all = lock.try_lock(0..4).expect("a range stayed locked");
    });
}

/// The core is built by the first acquisition (module docs, "Built on first use"): a stripe
/// writer and a list writer of overlapping ranges race on a fresh lock, each may build a
/// core, one core is published and the other freed, and both then hold on the published one
/// (never together: loom checks the units).
#[test]
fn loom_first_acquisitions_race_to_build_the_core() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).solo(true).build());
        assert!(lock.raw().built().is_none());
        let units = Arc::new(Units::new(4));
        let t = spawn_writer(&lock, &units, 0..1); // inside stripe 0
        write_held(&lock, &units, 0..4); // over stripes 0 and 1: the list
        t.join().unwrap();
        assert_eq!(units.read(0..4), 5);
        let _all = lock.try_lock(0..4).expect("a range stayed locked");
    });
}

/// As [`loom_first_acquisitions_race_to_build_the_core`], a stripe reader against a stripe
/// writer of the same stripe, with `try_lock`s: at most one holds, and a holder's token
/// lies in the one published core.
#[test]
fn loom_first_try_locks_race_to_build_the_core() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).solo(true).build());
        let units = Arc::new(Units::new(2));
        let t = spawn_try(&lock, &units, 0..2, Mode::Shared);
        try_use(&lock, &units, 1..2, Mode::Exclusive);
        t.join().unwrap();
        let _all = lock.try_lock(0..2).expect("a range stayed locked");
    });
}

/// A solo writer downgrades while a second writer of an overlapping range builds the core:
/// the downgrade's CAS and the adoption race (the core adopts the hold exclusive or
/// shared, whichever the word says when the build's CAS lands), and the second writer
/// never holds with the first hold in either mode.
#[test]
fn loom_solo_downgrade_races_the_build() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).solo(true).build());
        let units = Arc::new(Units::new(2));
        let t = {
            let (lock, units) = (Arc::clone(&lock), Arc::clone(&units));
            thread::spawn(move || {
                let w = lock.lock(0..2);
                units.write(0..2);
                let r = w.downgrade();
                let _ = units.read(0..2);
                drop(r);
            })
        };
        write_held(&lock, &units, 1..2);
        t.join().unwrap();
        assert_eq!(units.read(0..2), 3);
        let _all = lock.try_lock(0..2).expect("a range stayed locked");
    });
}

/// A solo reader and a writer of an overlapping range (the writer builds the core, which
/// adopts the reader as a reader, or the reader finds the writer's core).
#[test]
fn loom_solo_reader_and_writer_build_the_core() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).solo(true).build());
        let units = Arc::new(Units::new(4));
        let t = spawn_reader(&lock, &units, 0..4);
        write_held(&lock, &units, 2..3);
        t.join().unwrap();
        assert_eq!(units.read(0..4), 1);
    });
}

/// A solo hold of a range too long for the compact word (`solo`: claimed through
/// `CLAIMING`, its range in the range words) against a writer of a range inside it, which
/// builds the core: the builder adopts the range it reads from the range words, or finds
/// the claim unfinished and takes it over (the claimer then acquires on the core).
#[test]
fn loom_solo_claim_through_the_range_words_races_the_build() {
    loom::model(|| {
        let lock = Arc::new(RangeLock::builder().max_height(1).solo(true).build());
        let units = Arc::new(Units::new(2));
        let t = {
            let (lock, units) = (Arc::clone(&lock), Arc::clone(&units));
            thread::spawn(move || {
                let g = lock.lock(0..u64::MAX);
                units.write(0..2);
                drop(g);
            })
        };
        write_held(&lock, &units, 1..2);
        t.join().unwrap();
        assert_eq!(units.read(0..2), 3);
        let _all = lock.try_lock(0..u64::MAX).expect("a range stayed locked");
    });
}
