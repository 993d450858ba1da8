//! Loom models of the hand-over between a local locker and a callback on one kept extent
//! ([`super::handover`]), and of the order of the guards' fencing tokens, with the real
//! `RangeLock` (built under loom, its waits modeled).
//!
//! The client crate builds under `--cfg loom` with only this core (`lib.rs`): the rest
//! needs tokio. Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test
//! --release -p rangelock-client --lib -- loom` (ci/loom.sh).

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use loom::thread;
use rangelock::Mode;

use super::handover::{Exact, Extent, Grant, Handover, Name, Part, Recall};

/// The extent `0..4` (id 1), exclusive, kept by a client with nothing held locally.
fn kept() -> (Arc<Handover>, Name) {
    let h = Arc::new(Handover::default());
    let name: Name = Arc::from(&b""[..]);
    h.local_lock(&name);
    h.begin_flight(1);
    let e = Extent {
        start: 0,
        end: 4,
        mode: Mode::Exclusive,
        id: 1,
        last_use: Instant::now(),
        used: 0,
        token: 7,
        part: 0,
        lost: None,
    };
    assert_eq!(h.settle(1, &name, Grant::Kept(e)), Some((Vec::new(), 0)));
    (h, name)
}

/// What the two threads saw: the locker holds its local guard; the range the callback
/// gave back in the map (`updated`) and in the `GIVE_BACK` it sent (`sent`), packed as
/// `start << 32 | end`, or [`NONE`] before.
struct Seen {
    held: AtomicBool,
    updated: AtomicU64,
    sent: AtomicU64,
}

const NONE: u64 = u64::MAX;

fn pack(r: &Range<u64>) -> u64 {
    r.start << 32 | r.end
}

/// Whether `r` overlaps the packed range `p` (never [`NONE`]).
fn overlaps(r: &Range<u64>, p: u64) -> bool {
    p != NONE && r.start < (p & 0xffff_ffff) && (p >> 32) < r.end
}

/// The local locker: the fast path over `range` (`find`, the local lock, `confirm`).
/// Whether it got a local guard (else it would go to the server).
fn locker(h: &Handover, name: &Name, range: Range<u64>, seen: &Seen) -> bool {
    if !h.find(name, &range, Mode::Exclusive) {
        return false;
    }
    let lock = h.local_lock(name);
    let g = lock.lock_owned(range.clone());
    if h.confirm(name, &range, Mode::Exclusive, Instant::now()).is_none() {
        return false;
    }
    // Granted locally: nothing of the range was given back before.
    seen.held.store(true, Ordering::SeqCst);
    let updated = seen.updated.load(Ordering::SeqCst);
    assert!(!overlaps(&range, updated), "a local guard in what the map gave back");
    let sent = seen.sent.load(Ordering::SeqCst);
    assert!(!overlaps(&range, sent), "a local guard in what GIVE_BACK gave back");
    seen.held.store(false, Ordering::SeqCst);
    drop(g);
    true
}

/// The callback for `part` of lock 1, as `callbacks::recall` runs it. The range given
/// back.
fn callback(h: &Handover, part: Range<u64>, seen: &Seen, locker_range: Range<u64>) -> Range<u64> {
    let p = Part { start: part.start, end: part.end, mode: Mode::Exclusive };
    let Recall::Target(t) = h.begin_recall(1, p) else { panic!("the extent is kept") };
    let held = t.lock.lock_owned(t.part.clone());
    let (gb, guards, ()) = h.give_back(&t, held, 99, |_| ()).expect("the extent is still there");
    let back = gb.start..gb.end;
    seen.updated.store(pack(&back), Ordering::SeqCst);
    // "Sends" GIVE_BACK: no local holder may be inside what goes back.
    let held = seen.held.load(Ordering::SeqCst);
    assert!(!(held && overlaps(&locker_range, pack(&back))), "a local holder inside {gb:?}");
    seen.sent.store(pack(&back), Ordering::SeqCst);
    drop(guards);
    h.finish_recall(&t);
    assert!(matches!(h.begin_recall(1, p), Recall::Done), "the part is given back");
    back
}

/// Runs the locker on `locker_range` against a callback for `part`.
fn model(locker_range: Range<u64>, part: Range<u64>) {
    loom::model(move || {
        let (h, name) = kept();
        let seen = Arc::new(Seen {
            held: AtomicBool::new(false),
            updated: AtomicU64::new(NONE),
            sent: AtomicU64::new(NONE),
        });
        let t = {
            let (h, name, seen, r) = (h.clone(), name.clone(), seen.clone(), locker_range.clone());
            thread::spawn(move || locker(&h, &name, r, &seen))
        };
        let back = callback(&h, part.clone(), &seen, locker_range.clone());
        let local = t.join().unwrap();
        assert!(back.start <= part.start && part.end <= back.end);
        // What was given back is no longer served locally; what is left still is.
        assert!(!h.find(&name, &back, Mode::Shared));
        for rest in [0..back.start, back.end..4] {
            assert!(rest.is_empty() || h.find(&name, &rest, Mode::Exclusive), "{rest:?} kept");
        }
        // A locker outside the part is always served locally (the extent covered it
        // until its side was given back, which waits for no one but is skipped while
        // it holds).
        if locker_range.end <= part.start || part.end <= locker_range.start {
            assert!(local || overlaps(&locker_range, pack(&back)));
        }
    });
}

/// The locker wants part of what the callback wants.
#[test]
fn loom_a_local_guard_over_the_part_ends_before_the_give_back() {
    model(1..2, 1..3);
}

/// The locker is on a side of the part: that side is given back only if it has no
/// local holder when the callback looks.
#[test]
fn loom_a_side_with_a_local_holder_is_kept() {
    model(3..4, 1..2);
}

/// The locker against the idle pass, which gives the whole extent back only if it can
/// `try_lock` all of it.
#[test]
fn loom_the_idle_pass_never_takes_an_extent_in_use() {
    loom::model(|| {
        let (h, name) = kept();
        let seen = Arc::new(Seen {
            held: AtomicBool::new(false),
            updated: AtomicU64::new(NONE),
            sent: AtomicU64::new(NONE),
        });
        let t = {
            let (h, name, seen) = (h.clone(), name.clone(), seen.clone());
            thread::spawn(move || locker(&h, &name, 1..2, &seen))
        };
        let mut back = None;
        for target in h.idle_candidates(Instant::now(), std::time::Duration::ZERO) {
            let e = &target.extent;
            let Ok(held) = target.lock.try_lock_owned(e.start..e.end) else { continue };
            let Some((gb, guards, ())) = h.give_back_whole(&target, held, 99, |_| ()) else {
                continue;
            };
            let r = gb.start..gb.end;
            seen.updated.store(pack(&r), Ordering::SeqCst);
            assert!(!seen.held.load(Ordering::SeqCst), "a local holder inside {gb:?}");
            seen.sent.store(pack(&r), Ordering::SeqCst);
            drop(guards);
            back = Some(r);
        }
        let local = t.join().unwrap();
        match back {
            Some(r) => assert_eq!((r, h.kept()), (0..4, 0)),
            None => assert!(local && h.kept() == 1, "kept only because it was in use"),
        }
    });
}

/// Guard tokens rise in the order the local lock is held: a thread inside the kept
/// extent (token 7) and a thread whose own grant (token 9) overlaps it take the local
/// lock in either order; the later holder's token is never below the earlier one's, and
/// each is at least its own grant's (`Handover::high`).
#[test]
fn loom_guard_tokens_rise_in_the_order_the_units_are_held() {
    loom::model(|| {
        let (h, name) = kept();
        h.note_grant(0, 7); // the extent's grant, as `lock_at_server` notes it
        let order = Arc::new(AtomicU64::new(0));
        // (position in the local lock's order, token), per thread.
        let run = |h: Arc<Handover>, name: Name, order: Arc<AtomicU64>, grant: Option<u64>| {
            let lock = h.local_lock(&name);
            if let Some(t) = grant {
                h.begin_flight(2);
                h.note_grant(0, t); // received, then the local lock (`lock_at_server`)
            }
            let g = lock.lock_owned(1..3);
            let token = match grant {
                Some(token) => {
                    // Recorded as an exact grant, as `lock_at_server` does.
                    let (name, range, mode) = (name.clone(), 1..3, Mode::Exclusive);
                    let x = Exact { name: name.clone(), range, mode, token, part: 0, lost: None };
                    h.settle(2, &name, Grant::Exact(x)).unwrap().1
                }
                None => {
                    let (_, t, _) =
                        h.confirm(&name, &(1..3), Mode::Exclusive, Instant::now()).unwrap();
                    t
                }
            };
            let at = order.fetch_add(1, Ordering::SeqCst);
            drop(g);
            (at, token, grant.unwrap_or(7))
        };
        let t = {
            let (h, name, order) = (h.clone(), name.clone(), order.clone());
            thread::spawn(move || run(h, name, order, Some(9)))
        };
        let kept = run(h.clone(), name.clone(), order.clone(), None);
        let exact = t.join().unwrap();
        let (first, second) = if kept.0 < exact.0 { (kept, exact) } else { (exact, kept) };
        assert!(first.1 <= second.1, "tokens by holding order: {first:?} then {second:?}");
        assert!(first.1 >= first.2 && second.1 >= second.2, "{first:?} {second:?}");
    });
}

/// A cluster client's eviction (a node gave the partition up) against a local locker: an
/// extent evicted as idle (its `try_lock` succeeded, so nothing is carried to the new
/// owner) never has a local guard in it; a locker either was confirmed before the
/// eviction, and then the `try_lock` sees its hold, or goes to the server.
#[test]
fn loom_an_extent_evicted_as_idle_has_no_local_guard() {
    loom::model(|| {
        let (h, name) = kept();
        let looked = Arc::new(AtomicBool::new(false));
        let t = {
            let (h, name, looked) = (h.clone(), name.clone(), looked.clone());
            thread::spawn(move || {
                if !h.find(&name, &(1..3), Mode::Exclusive) {
                    return false;
                }
                let lock = h.local_lock(&name);
                let g = lock.lock_owned(1..3);
                if h.confirm(&name, &(1..3), Mode::Exclusive, Instant::now()).is_none() {
                    return false;
                }
                // The guard lives until the eviction has looked.
                while !looked.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                drop(g);
                true
            })
        };
        let evicted = h.evict(|_| true, false);
        assert_eq!(evicted.len(), 1);
        let idle = evicted[0].lock.try_lock_owned(evicted[0].held.range.clone()).is_ok();
        looked.store(true, Ordering::SeqCst);
        let local = t.join().unwrap();
        assert!(!(idle && local), "evicted as idle while a local guard was inside");
        assert!(!h.find(&name, &(1..3), Mode::Shared), "an evicted extent serves nothing");
    });
}
