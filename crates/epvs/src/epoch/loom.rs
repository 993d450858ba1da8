//! Loom models of the epoch protocol. Run with `ci/loom.sh`.

use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::{Announce, LightEpoch};

/// An object that records whether its reclamation action ran.
struct Obj {
    reclaimed: AtomicBool,
}

/// Leaks `Obj`s for the model's duration; the model checks the flag instead of freeing, so
/// a protocol bug shows up as an assertion, not as undefined behaviour.
fn obj() -> *mut Obj {
    Box::into_raw(Box::new(Obj { reclaimed: AtomicBool::new(false) }))
}

/// A reader protects (and, if `refresh`, refreshes), then reads the shared object while a
/// writer replaces it and retires the old one with `bump_with`. The reader must never find
/// the object it reached reclaimed while it is protected.
fn reclaim_model(refresh: bool, announce: Announce) {
    loom::model(move || {
        let epoch = Arc::new(LightEpoch::with_options(2, announce));
        let first = obj();
        let shared = Arc::new(AtomicPtr::new(first));

        let reader = {
            let (epoch, shared) = (epoch.clone(), shared.clone());
            thread::spawn(move || {
                let mut guard = epoch.protect();
                if refresh {
                    guard.refresh();
                }
                let p = shared.load(Ordering::Acquire);
                // SAFETY: objects are never freed during the model (see `obj`).
                let o = unsafe { &*p };
                assert!(!o.reclaimed.load(Ordering::Relaxed), "read a reclaimed object");
                drop(guard);
            })
        };

        let next = obj();
        let old = shared.swap(next, Ordering::AcqRel) as usize;
        epoch.bump_with(move || {
            // SAFETY: `old` came from `obj()` and is never freed during the model.
            let o = unsafe { &*(old as *const Obj) };
            o.reclaimed.store(true, Ordering::Relaxed);
        });
        reader.join().unwrap();
        // The reader's release may have missed the action (the pending check is a hint);
        // an explicit drain after the join must run it.
        epoch.drain();
        assert_eq!(epoch.pending_actions(), 0);
        // SAFETY: both objects came from `obj()`, and no thread uses them any more.
        unsafe {
            drop(Box::from_raw(first));
            drop(Box::from_raw(next));
        }
    });
}

/// (a) A region protected before a bump never sees the bump's action run.
#[test]
fn loom_protect_bump_reclaim() {
    reclaim_model(false, Announce::Fenced);
}

/// (a) in asymmetric mode: the reader announces in its sticky slot with a plain store
/// and a light barrier; the drain's heavy barrier (both `fence(SeqCst)` under loom, which
/// is what `membarrier` guarantees) must still keep the object alive.
#[test]
fn loom_asymmetric_protect_bump_reclaim() {
    reclaim_model(false, Announce::Asymmetric);
}

/// A refresh in asymmetric mode re-announces in the sticky slot.
#[test]
fn loom_asymmetric_refresh_keeps_protection() {
    reclaim_model(true, Announce::Asymmetric);
}

/// A refresh re-announces a newer epoch without ever exposing the slot as free.
#[test]
fn loom_refresh_keeps_protection() {
    reclaim_model(true, Announce::Fenced);
}

/// Two bumps racing with drains run each action exactly once.
#[test]
fn loom_concurrent_bumps_run_each_action_once() {
    loom::model(|| {
        let epoch = Arc::new(LightEpoch::with_slots(2));
        let runs = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (epoch, runs) = (epoch.clone(), runs.clone());
                thread::spawn(move || {
                    let r = runs.clone();
                    epoch.bump_with(move || {
                        r.fetch_add(1, Ordering::Relaxed);
                    });
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        epoch.drain();
        assert_eq!(runs.load(Ordering::Relaxed), 2);
        assert_eq!(epoch.pending_actions(), 0);
    });
}
