//! loom models of the version scheme (run by `ci/loom.sh`; names contain `loom`).
//!
//! Data touched by critical sections lives in loom `UnsafeCell`s, so loom itself reports
//! any access of a protected region that is concurrent with a critical section.

use super::*;
use crate::epoch::Announce;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;

/// Data that only critical sections write; regions read it.
struct Shared(UnsafeCell<u64>);

// SAFETY: accesses are synchronized by EPVS (that is what the models check; loom's
// UnsafeCell reports any unsynchronized access).
unsafe impl Sync for Shared {}
// SAFETY: plain data.
unsafe impl Send for Shared {}

impl Shared {
    fn read(&self) -> u64 {
        // SAFETY: called only inside protected regions, which exclude critical sections.
        self.0.with(|p| unsafe { *p })
    }
    fn write(&self, v: u64) {
        // SAFETY: called only inside critical sections.
        self.0.with_mut(|p| unsafe { *p = v })
    }
}

/// Checks a model whose threads may wait (re-draining) for each other's regions: the
/// spins add branches beyond loom's default bound.
fn check_waiting(model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 20_000;
    builder.check(model);
}

/// A fresh instance and its shared data (0), with a reader thread running `read` on them.
fn with_reader(
    read: impl FnOnce(&Epvs, &Shared) + Send + 'static,
) -> (Arc<Epvs>, Arc<Shared>, thread::JoinHandle<()>) {
    let epvs = Arc::new(Epvs::new());
    let data = Arc::new(Shared(UnsafeCell::new(0)));
    let reader = {
        let (epvs, data) = (Arc::clone(&epvs), Arc::clone(&data));
        thread::spawn(move || read(&epvs, &data))
    };
    (epvs, data, reader)
}

/// (b) A critical section vs. a concurrent region: the region never observes the section
/// half done (loom checks the cell accesses), and a region keeps its version's data.
#[test]
fn loom_critical_section_excludes_regions() {
    loom::model(|| {
        let (epvs, data, reader) = with_reader(|epvs, data| {
            let guard = epvs.enter();
            let v = guard.version();
            assert_eq!(data.read(), v);
            thread::yield_now();
            assert_eq!(data.read(), v, "a region observed the next version's data");
            assert_eq!(guard.state(), State::rest(v));
        });
        let d = Arc::clone(&data);
        let from = epvs.advance_version(move || d.write(1), Some(1)).unwrap();
        assert_eq!(from, State::rest(0));
        reader.join().unwrap();
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
        let guard = epvs.enter();
        assert_eq!(data.read(), 1);
        drop(guard);
    });
}

/// (b') Advancing under protection: the section waits for the caller's own region and
/// runs when it refreshes; another thread's region is excluded too.
#[test]
fn loom_advance_under_protection() {
    // Both threads may wait (re-draining) for each other's region to end.
    check_waiting(|| {
        let (epvs, data, reader) = with_reader(|epvs, data| {
            let guard = epvs.enter();
            assert_eq!(data.read(), guard.version());
        });
        let mut guard = epvs.enter();
        let d = Arc::clone(&data);
        match epvs.advance_version(move || d.write(1), None) {
            Ok(from) => assert_eq!(from, State::rest(0)),
            Err(e) => panic!("{e}"),
        }
        assert_eq!(data.read(), 0);
        assert_eq!(guard.refresh(), State::rest(1));
        assert_eq!(data.read(), 1);
        drop(guard);
        reader.join().unwrap();
    });
}

/// A two-phase machine `REST(0) -> COPYING(0) -> REST(1)` whose second step waits for
/// outside work done by another thread, which then calls `try_step`.
struct TwoPhase {
    data: Arc<Shared>,
    copied: AtomicBool,
}

const COPYING: u8 = 1;

impl StateMachine for Arc<TwoPhase> {
    fn next_step(&self, cur: State) -> Option<State> {
        match cur.phase() {
            State::REST => Some(State::new(cur.version(), COPYING)),
            _ => self.copied.load(SeqCst).then(|| State::rest(cur.version() + 1)),
        }
    }
    fn on_entering_state(&self, from: State, to: State) {
        // Data encodes the phase: 0 at REST(0), 10 in COPYING, 1 at REST(1).
        self.data.write(if to.is_rest() { to.version() } else { 10 });
        assert!(from.version() <= to.version());
    }
}

/// (c) Two-phase machine vs. a region and the outside worker.
#[test]
fn loom_two_phase_machine() {
    loom::model(|| {
        let epvs = Arc::new(Epvs::new());
        let data = Arc::new(Shared(UnsafeCell::new(0)));
        let m = Arc::new(TwoPhase { data: Arc::clone(&data), copied: AtomicBool::new(false) });
        assert_eq!(epvs.execute_state_machine(Arc::clone(&m), Some(1)), Ok(State::rest(0)));
        let reader = {
            let (epvs, data) = (Arc::clone(&epvs), Arc::clone(&data));
            thread::spawn(move || {
                let guard = epvs.enter();
                let s = guard.state();
                let want = if s.phase() == COPYING { 10 } else { s.version() };
                assert_eq!(data.read(), want);
                assert!(s == State::rest(0) || s == State::new(0, COPYING) || s == State::rest(1));
            })
        };
        let worker = {
            let (epvs, m) = (Arc::clone(&epvs), Arc::clone(&m));
            thread::spawn(move || {
                m.copied.store(true, SeqCst);
                epvs.try_step();
            })
        };
        worker.join().unwrap();
        reader.join().unwrap();
        // Either the worker's try_step or the continuation after COPYING took the step.
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
        assert_eq!(epvs.try_step(), Step::Idle);
    });
}

/// (d) Concurrent `advance_version` to the same target: the section runs exactly once.
#[test]
fn loom_same_target_runs_once() {
    loom::model(|| {
        let epvs = Arc::new(Epvs::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let spawn_advancer = || {
            let (epvs, runs) = (Arc::clone(&epvs), Arc::clone(&runs));
            thread::spawn(move || loop {
                let r = Arc::clone(&runs);
                match epvs.advance_version(
                    move || {
                        r.fetch_add(1, SeqCst);
                    },
                    Some(1),
                ) {
                    Err(AdvanceError::Busy) => thread::yield_now(),
                    Ok(_) | Err(AdvanceError::Stale { .. }) => break,
                    Err(e) => panic!("{e}"),
                }
            })
        };
        let a = spawn_advancer();
        let b = spawn_advancer();
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
        assert_eq!(runs.load(SeqCst), 1);
    });
}

/// (b'') A region kept in the thread's sticky slot, with a nested guard and then a refresh
/// that may have to wait out the transition (suspending its announcement, keeping its way):
/// no access of the region overlaps the critical section, and the refreshed region sees
/// the section's write exactly when its state says so.
#[test]
fn loom_nested_region_and_waiting_refresh() {
    check_waiting(|| {
        let (epvs, data, reader) = with_reader(|epvs, data| {
            let mut outer = epvs.enter();
            let v = outer.version();
            let inner = epvs.enter();
            assert_eq!(inner.state(), outer.state());
            assert_eq!(data.read(), v);
            drop(inner);
            let s = outer.refresh();
            assert!(!s.is_intermediate());
            assert_eq!(data.read(), s.version());
            thread::yield_now();
            assert_eq!(data.read(), s.version(), "the refreshed region lost protection");
        });
        let d = Arc::clone(&data);
        epvs.advance_version(move || d.write(1), Some(1)).unwrap();
        // A second transition, which must wait for the refreshed region too.
        epvs.wait_for_version(1);
        let d = Arc::clone(&data);
        epvs.advance_version(move || d.write(2), Some(2)).unwrap();
        reader.join().unwrap();
        assert_eq!(epvs.wait_for_version(2), State::rest(2));
    });
}

/// (f) The adaptive mode's fenced announce. On an instance in the fenced mode whose sticky
/// announces are plain stores, with no barrier even in the model, a step scans after a
/// plain fence only (it skips the process-wide barrier). The region's own fence between
/// its announce and its state load is what keeps the critical section out of it: without
/// the fence in `Core::load_fenced`, this model fails.
#[test]
fn loom_fenced_mode_excludes_regions_without_the_heavy_barrier() {
    check_waiting(|| {
        let epvs = Arc::new(Epvs::fenced_adaptive());
        let data = Arc::new(Shared(UnsafeCell::new(0)));
        let reader = {
            let (epvs, data) = (Arc::clone(&epvs), Arc::clone(&data));
            thread::spawn(move || {
                let guard = epvs.enter();
                let v = guard.version();
                assert_eq!(data.read(), v);
                thread::yield_now();
                assert_eq!(data.read(), v, "a region observed the next version's data");
            })
        };
        let d = Arc::clone(&data);
        epvs.advance_version(move || d.write(1), Some(1)).unwrap();
        reader.join().unwrap();
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
        assert_eq!(epvs.announce(), Announce::Fenced, "the mode stays fenced");
        let guard = epvs.enter();
        assert_eq!(data.read(), 1);
        drop(guard);
    });
}
