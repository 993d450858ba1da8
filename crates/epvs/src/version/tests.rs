//! Unit, stress and property tests of the version scheme (loom models are in
//! `loom_tests.rs`).

use super::*;
use crate::epoch::{Announce, LightEpoch};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

/// Advances to the next version, retrying spurious failures; returns the new version.
fn advance_blocking(epvs: &Epvs, section: impl FnOnce() + Send + Clone + 'static) -> u64 {
    loop {
        match epvs.advance_version(section.clone(), None) {
            Ok(from) => return epvs.wait_for_version(from.version() + 1).version(),
            Err(AdvanceError::Busy) => thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
}

/// A fresh instance in each epoch mode: regions live in sticky slots (asymmetric, the
/// default) or are recorded per thread with transient slots (fenced).
fn both_modes() -> [Epvs; 2] {
    [Epvs::new(), Epvs::with_epoch(LightEpoch::new())]
}

/// The message `f` panics with; panics itself if `f` returns.
fn panic_of<R>(f: impl FnOnce() -> R) -> String {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(err) => panic_msg(&*err),
    }
}

fn panic_msg(err: &(dyn std::any::Any + Send)) -> String {
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// A machine `REST(v) -> P(v) -> ... -> REST(v+1)` through `phases`, whose steps out of
/// phase `gate` wait until `open` is set. Records every transition it runs.
struct Phased {
    phases: Vec<u8>,
    gate: Option<u8>,
    open: AtomicBool,
    log: Mutex<Vec<(State, State)>>,
    dropped: Arc<AtomicUsize>,
}

impl Phased {
    fn new(phases: Vec<u8>, gate: Option<u8>, dropped: Arc<AtomicUsize>) -> Arc<Self> {
        Arc::new(Phased {
            phases,
            gate,
            open: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
            dropped,
        })
    }
}

impl Drop for Phased {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, SeqCst);
    }
}

impl StateMachine for Arc<Phased> {
    fn next_step(&self, cur: State) -> Option<State> {
        if Some(cur.phase()) == self.gate && !self.open.load(SeqCst) {
            return None;
        }
        let idx = if cur.is_rest() {
            0
        } else {
            self.phases.iter().position(|&p| p == cur.phase()).unwrap() + 1
        };
        Some(match self.phases.get(idx) {
            Some(&p) => State::new(cur.version(), p),
            None => State::rest(cur.version() + 1),
        })
    }

    fn on_entering_state(&self, from: State, to: State) {
        self.log.lock().unwrap().push((from, to));
    }
}

#[test]
fn enter_advance_wait() {
    let epvs = Epvs::new();
    assert_eq!(epvs.enter().state(), State::rest(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    assert_eq!(
        epvs.advance_version(
            move || {
                r.fetch_add(1, SeqCst);
            },
            None
        ),
        Ok(State::rest(0))
    );
    assert_eq!(epvs.wait_for_version(1), State::rest(1));
    assert_eq!(ran.load(SeqCst), 1);
    assert_eq!(epvs.enter().state(), State::rest(1));
}

#[test]
fn stale_target_is_rejected_and_version_never_decreases() {
    let epvs = Epvs::new();
    assert_eq!(epvs.advance_version(|| {}, Some(1)), Ok(State::rest(0)));
    assert_eq!(epvs.advance_version(|| {}, Some(2)), Ok(State::rest(1)));
    assert_eq!(epvs.wait_for_version(2).version(), 2);
    // A request computed from an old observation (version 0 -> target 1) must not run.
    let ran = Arc::new(AtomicBool::new(false));
    let r = Arc::clone(&ran);
    assert_eq!(
        epvs.advance_version(move || r.store(true, SeqCst), Some(1)),
        Err(AdvanceError::Stale { target: 1, current: 2 })
    );
    assert_eq!(
        epvs.advance_version(|| {}, Some(2)),
        Err(AdvanceError::Stale { target: 2, current: 2 })
    );
    assert!(!ran.load(SeqCst));
    assert_eq!(epvs.state(), State::rest(2));
    // Jumping ahead is allowed; versions need not be contiguous.
    assert_eq!(epvs.advance_version(|| {}, Some(10)), Ok(State::rest(2)));
    assert_eq!(epvs.state(), State::rest(10));
}

#[test]
fn version_overflow_is_an_error() {
    let epvs = Epvs::new();
    assert_eq!(
        epvs.advance_version(|| {}, Some(State::MAX_VERSION + 1)),
        Err(AdvanceError::VersionOverflow)
    );
    assert_eq!(epvs.advance_version(|| {}, Some(State::MAX_VERSION)), Ok(State::rest(0)));
    assert_eq!(epvs.state(), State::rest(State::MAX_VERSION));
    assert_eq!(epvs.advance_version(|| {}, None), Err(AdvanceError::VersionOverflow));
    assert_eq!(epvs.state(), State::rest(State::MAX_VERSION));
}

#[test]
fn rejected_sections_are_dropped_not_leaked() {
    let epvs = Epvs::new();
    let token = Arc::new(());
    let t = Arc::clone(&token);
    epvs.advance_version(|| {}, Some(1)).unwrap();
    assert!(epvs.advance_version(move || drop(t), Some(1)).is_err());
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn advance_under_protection_runs_on_refresh() {
    for epvs in both_modes() {
        let mut g = epvs.enter();
        let ran = Arc::new(AtomicBool::new(false));
        let r = Arc::clone(&ran);
        assert_eq!(epvs.advance_version(move || r.store(true, SeqCst), None), Ok(State::rest(0)));
        // The section waits for this region: it has not run, and the region's state holds.
        assert!(!ran.load(SeqCst));
        assert_eq!(g.state(), State::rest(0));
        assert!(epvs.state().is_intermediate());
        // A second request while the first is in flight fails spuriously instead of waiting.
        assert_eq!(epvs.advance_version(|| {}, None), Err(AdvanceError::Busy));
        assert_eq!(g.refresh(), State::rest(1));
        assert!(ran.load(SeqCst));
    }
}

#[test]
fn nested_enter_never_blocks_and_shares_the_region() {
    for epvs in both_modes() {
        let outer = epvs.enter();
        epvs.advance_version(|| {}, None).unwrap();
        assert!(epvs.state().is_intermediate());
        // Would deadlock if it waited for the pending transition (which waits for `outer`).
        let inner = epvs.enter();
        assert_eq!(inner.state(), State::rest(0));
        assert!(epvs.try_enter().is_some());
        drop(inner); // the region lasts while `outer` lives
        assert!(epvs.state().is_intermediate());
        drop(outer);
        assert_eq!(epvs.state(), State::rest(1));
    }
}

#[test]
fn out_of_order_drop_panics_and_keeps_the_region_protected() {
    for epvs in both_modes() {
        let outer = epvs.enter();
        let inner = epvs.enter();
        epvs.advance_version(|| {}, None).unwrap();
        let msg = panic_of(|| drop(outer));
        assert!(msg.contains("innermost first"), "{msg}");
        // The inner guard is still protected: the transition cannot have run.
        assert_eq!(inner.state(), State::rest(0));
        assert!(epvs.state().is_intermediate());
        drop(inner);
        assert!(epvs.state().is_intermediate(), "the leaked protection pins the region");
    }
}

#[test]
fn refresh_of_nested_guard_is_refused() {
    for epvs in both_modes() {
        let _outer = epvs.enter();
        let mut inner = epvs.enter();
        assert_eq!(inner.try_refresh(), None);
        let msg = panic_of(|| inner.refresh());
        assert!(msg.contains("nested guard"), "{msg}");
    }
}

#[test]
fn outer_guard_refreshes_once_inner_is_gone() {
    for epvs in both_modes() {
        let mut outer = epvs.enter();
        drop(epvs.enter());
        epvs.advance_version(|| {}, None).unwrap();
        assert_eq!(outer.refresh(), State::rest(1));
    }
}

#[test]
fn outer_refresh_with_a_nested_guard_alive_is_refused_only_when_it_would_move() {
    for epvs in both_modes() {
        let mut outer = epvs.enter();
        let inner = epvs.enter();
        // Nothing moved: returning the region's state changes nothing for `inner`.
        assert_eq!(outer.try_refresh(), Some(State::rest(0)));
        epvs.advance_version(|| {}, None).unwrap();
        // The epoch moved: refreshing would let the transition run under `inner`.
        assert_eq!(outer.try_refresh(), None);
        let msg = panic_of(|| outer.refresh());
        assert!(msg.contains("nested guard"), "{msg}");
        assert!(epvs.state().is_intermediate());
        drop(inner);
        assert_eq!(outer.refresh(), State::rest(1));
    }
}

#[test]
fn leave_ends_the_region_like_drop() {
    for epvs in both_modes() {
        let g = epvs.enter();
        epvs.advance_version(|| {}, None).unwrap();
        assert!(epvs.state().is_intermediate(), "the region holds the transition back");
        g.leave();
        // `wait_for_version` panics inside a region: this also proves the thread left.
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
        // Nested guards leave innermost first, like drops.
        let outer = epvs.enter();
        let inner = epvs.enter();
        inner.leave();
        outer.leave();
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
    }
}

#[test]
fn with_region_runs_inside_a_region_and_leaves() {
    for epvs in both_modes() {
        let seen = epvs.with_region(|g| {
            epvs.advance_version(|| {}, None).unwrap();
            assert!(epvs.state().is_intermediate(), "the region holds the transition back");
            // Nested: inside `with_region`, and `with_region` inside a guard.
            let inner = epvs.enter();
            assert_eq!(inner.state(), g.state());
            let v = epvs.with_region(|g2| g2.version());
            drop(inner);
            (g.state(), v)
        });
        assert_eq!(seen, (State::rest(0), 0));
        // `wait_for_version` panics inside a region: the thread left.
        assert_eq!(epvs.wait_for_version(1), State::rest(1));
        let outer = epvs.enter();
        assert_eq!(epvs.with_region(|g| g.state()), State::rest(1));
        drop(outer);
        // A panic in `f` leaves the region on the way out.
        assert_eq!(panic_of(|| epvs.with_region(|_| panic!("boom"))), "boom");
        assert_eq!(advance_blocking(&epvs, || {}), 2);
    }
}

#[test]
fn with_region_waits_for_a_transition_in_flight() {
    for epvs in both_modes() {
        let outer = epvs.enter();
        epvs.advance_version(|| {}, None).unwrap();
        thread::scope(|s| {
            let t = s.spawn(|| epvs.with_region(|g| g.state()));
            // The other thread cannot enter before the transition, which waits for
            // `outer`; dropping it lets both go on (no sleep: the result proves the order).
            drop(outer);
            assert_eq!(t.join().unwrap(), State::rest(1));
        });
    }
}

#[test]
fn thread_exit_with_a_region_in_a_thread_local_ends_it() {
    struct Holder(std::cell::RefCell<Option<EpvsGuard<'static>>>);
    thread_local! {
        static HELD: Holder = const { Holder(std::cell::RefCell::new(None)) };
    }
    for epvs in both_modes() {
        let epvs: &'static Epvs = Box::leak(Box::new(epvs));
        thread::spawn(move || {
            let g = epvs.enter();
            let nested = epvs.enter();
            drop(nested);
            HELD.with(|h| *h.0.borrow_mut() = Some(g));
        })
        .join()
        .unwrap();
        // The guard ended with its thread (whichever thread-local went first), so a
        // transition completes.
        assert_eq!(advance_blocking(epvs, || {}), 1);
        let g = epvs.enter();
        assert_eq!(g.version(), 1);
    }
}

#[test]
fn nested_enter_from_a_thread_local_destructor_at_thread_exit() {
    /// Holds a region; when the thread exits, enters again (nested) before leaving it.
    struct Holder(std::cell::RefCell<Option<EpvsGuard<'static>>>);
    impl Drop for Holder {
        fn drop(&mut self) {
            if let Some(outer) = self.0.get_mut().take() {
                let mut inner = outer.epvs().enter();
                assert_eq!(inner.state(), outer.state());
                // A nested guard (refused), not a second region of the same instance.
                assert_eq!(inner.try_refresh(), None);
                drop(inner);
                drop(outer);
            }
        }
    }
    thread_local! {
        static HELD: Holder = const { Holder(std::cell::RefCell::new(None)) };
    }
    for epvs in both_modes() {
        let epvs: &'static Epvs = Box::leak(Box::new(epvs));
        thread::spawn(move || {
            // Registered before the epoch's own thread-locals, so (on platforms that run
            // thread-local destructors in reverse order) it is destroyed after them: the
            // region is then an orphan's, and its nested guard must still be one.
            HELD.with(|_| {});
            let g = epvs.enter();
            HELD.with(|h| *h.0.borrow_mut() = Some(g));
        })
        .join()
        .unwrap();
        // Both guards ended with the thread, so a transition completes.
        assert_eq!(advance_blocking(epvs, || {}), 1);
        assert_eq!(epvs.enter().version(), 1);
    }
}

#[test]
fn refresh_that_runs_a_panicking_section_leaves_the_guard_usable() {
    for epvs in both_modes() {
        let mut g = epvs.enter();
        epvs.advance_version(|| panic!("section"), None).unwrap();
        // The refresh lets the transition run on this thread; its panic surfaces here.
        assert_eq!(panic_of(|| g.refresh()), "section");
        // No poisoning: the transition completed, and the guard still works.
        assert_eq!(g.refresh(), State::rest(1));
        drop(g);
        assert_eq!(advance_blocking(&epvs, || {}), 2);
    }
}

#[test]
fn try_enter_does_not_block() {
    for epvs in both_modes() {
        let g = epvs.enter();
        epvs.advance_version(|| {}, None).unwrap();
        let epvs_ref = &epvs;
        // Another thread must not get in while the transition is pending.
        thread::scope(|s| {
            s.spawn(move || assert!(epvs_ref.try_enter().is_none())).join().unwrap();
        });
        drop(g);
        assert_eq!(epvs.try_enter().map(|g| g.state()), Some(State::rest(1)));
    }
}

#[test]
fn enter_from_critical_section_panics_and_transition_completes() {
    let epvs = Arc::new(Epvs::new());
    let e = Arc::clone(&epvs);
    let msg = panic_of(|| {
        let _ = epvs.advance_version(
            move || {
                let _g = e.enter();
            },
            None,
        );
    });
    assert!(msg.contains("state machine callback"), "{msg}");
    // No poisoning: the transition completed and the instance is usable.
    assert_eq!(epvs.state(), State::rest(1));
    assert_eq!(epvs.enter().state(), State::rest(1));
    // The section (and its Arc of the instance) is gone.
    assert_eq!(Arc::strong_count(&epvs), 1);
}

#[test]
fn wait_until_inside_region_panics() {
    let epvs = Epvs::new();
    let _g = epvs.enter();
    assert!(catch_unwind(AssertUnwindSafe(|| epvs.wait_for_version(0))).is_err());
}

#[test]
fn two_phase_machine_with_outside_work() {
    let epvs = Epvs::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    let m = Phased::new(vec![1, 2], Some(2), Arc::clone(&dropped));
    assert_eq!(epvs.execute_state_machine(Arc::clone(&m), Some(1)), Ok(State::rest(0)));
    // REST -> 1 -> 2 ran on their own; 2 waits for `open`.
    assert_eq!(epvs.state(), State::new(0, 2));
    assert_eq!(epvs.enter().state(), State::new(0, 2));
    assert_eq!(epvs.try_step(), Step::NotReady);
    assert_eq!(epvs.advance_version(|| {}, None), Err(AdvanceError::Busy));
    m.open.store(true, SeqCst);
    assert_eq!(epvs.try_step(), Step::Started { from: State::new(0, 2), to: State::rest(1) });
    assert_eq!(epvs.wait_for_version(1), State::rest(1));
    assert_eq!(epvs.try_step(), Step::Idle);
    assert_eq!(
        *m.log.lock().unwrap(),
        vec![
            (State::rest(0), State::new(0, 1)),
            (State::new(0, 1), State::new(0, 2)),
            (State::new(0, 2), State::rest(1)),
        ]
    );
    // Uninstalled: only our handle is left.
    assert_eq!(Arc::strong_count(&m), 1);
    drop(m);
    assert_eq!(dropped.load(SeqCst), 1);
}

#[test]
fn dropping_epvs_abandons_a_waiting_machine() {
    let dropped = Arc::new(AtomicUsize::new(0));
    {
        let epvs = Epvs::new();
        epvs.execute_state_machine(Phased::new(vec![1], Some(1), Arc::clone(&dropped)), None)
            .unwrap();
        assert_eq!(epvs.state(), State::new(0, 1));
    }
    assert_eq!(dropped.load(SeqCst), 1);
}

#[test]
fn invalid_step_panics_with_a_clear_message() {
    struct Backwards;
    impl StateMachine for Backwards {
        fn next_step(&self, _cur: State) -> Option<State> {
            Some(State::rest(0))
        }
        fn on_entering_state(&self, _: State, _: State) {}
    }
    let epvs = Epvs::new();
    let msg = panic_of(|| epvs.execute_state_machine(Backwards, None));
    assert!(msg.contains("does not advance the version"), "{msg}");
    assert_eq!(epvs.state(), State::rest(0));
}

#[test]
fn machine_must_end_at_its_target() {
    let epvs = Epvs::new();
    let m = Phased::new(vec![], None, Arc::new(AtomicUsize::new(0)));
    assert!(catch_unwind(AssertUnwindSafe(|| epvs.execute_state_machine(m, Some(5)))).is_err());
    assert_eq!(epvs.state(), State::rest(0));
}

/// Readers assert that the state they entered under stays constant and that they never
/// see a critical section half done, while a writer advances repeatedly.
#[test]
fn stress_regions_never_see_a_transition() {
    const READERS: usize = 3;
    const TRANSITIONS: u64 = 200;
    let epvs = Epvs::new();
    // Written only by critical sections: (a, b) == (v, v) at rest in version v.
    let pair = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..READERS {
            s.spawn(|| {
                let mut seen = 0u64;
                let mut guard = epvs.enter();
                while !done.load(Relaxed) {
                    let v = guard.version();
                    assert!(v >= seen, "version went backwards: {v} < {seen}");
                    seen = v;
                    for _ in 0..16 {
                        assert_eq!(pair.0.load(Relaxed), v);
                        assert_eq!(pair.1.load(Relaxed), v);
                        assert_eq!(guard.version(), v);
                    }
                    if v % 2 == 0 {
                        guard.refresh();
                    } else {
                        drop(guard);
                        guard = epvs.enter();
                    }
                }
            });
        }
        s.spawn(|| {
            for i in 1..=TRANSITIONS {
                let p = Arc::clone(&pair);
                let v = advance_blocking(&epvs, move || {
                    let v = p.0.load(Relaxed) + 1;
                    p.0.store(v, Relaxed);
                    thread::yield_now();
                    p.1.store(v, Relaxed);
                });
                assert_eq!(v, i);
            }
            done.store(true, Relaxed);
        });
    });
    assert_eq!(epvs.state(), State::rest(TRANSITIONS));
    assert_eq!(pair.0.load(Relaxed), TRANSITIONS);
}

/// Alone, a change pays no process-wide barrier and the mode stays asymmetric; with a
/// second thread in regions, back-to-back changes switch the default instance to the
/// fenced mode, and a change long after the previous one switches it back.
#[test]
fn adaptive_mode_follows_the_change_rate() {
    let epvs = Epvs::new();
    assert_eq!(epvs.announce(), Announce::Asymmetric);
    for _ in 0..1000 {
        drop(epvs.enter());
        advance_blocking(&epvs, || {});
    }
    assert_eq!((epvs.heavy_barriers(), epvs.announce()), (0, Announce::Asymmetric));

    let done = AtomicBool::new(false);
    let entries = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| region_loop(&epvs, &entries, &done));
        while epvs.announce() != Announce::Fenced {
            advance_blocking(&epvs, || {});
        }
        assert!(epvs.heavy_barriers() > 0);
        switch_back(&epvs, &entries);
        done.store(true, Relaxed);
    });
}

/// Enters and leaves `epvs` until `done`, counting in `entries`.
fn region_loop(epvs: &Epvs, entries: &AtomicU64, done: &AtomicBool) {
    while !done.load(Relaxed) {
        drop(std::hint::black_box(epvs.enter()));
        entries.fetch_add(1, Relaxed);
    }
}

/// Lets the region threads counting in `entries` run 2^20 more entries (far longer than
/// the inhibition window), then makes one change, until a change leaves the instance
/// asymmetric. Waits on the other threads' progress, not on a clock.
fn switch_back(epvs: &Epvs, entries: &AtomicU64) {
    switch_back_with(epvs, entries, || {
        advance_blocking(epvs, || {});
    });
}

/// The exclusion check of `stress_regions_never_see_a_transition` while the default
/// instance switches modes both ways: bursts of changes (fenced), then a change long
/// after the burst (asymmetric).
#[test]
fn stress_regions_never_see_a_transition_across_mode_switches() {
    const READERS: usize = 2;
    const BURSTS: u64 = 6;
    const PER_BURST: u64 = 40;
    let epvs = Epvs::new();
    let pair = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let done = AtomicBool::new(false);
    let entries = AtomicU64::new(0);
    let switches = AtomicU64::new(0);
    let changes = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..READERS {
            s.spawn(|| {
                while !done.load(Relaxed) {
                    let guard = epvs.enter();
                    let v = guard.version();
                    for _ in 0..4 {
                        assert_eq!(pair.0.load(Relaxed), v);
                        assert_eq!(pair.1.load(Relaxed), v);
                    }
                    drop(guard);
                    entries.fetch_add(1, Relaxed);
                }
            });
        }
        s.spawn(|| {
            let change = || {
                let p = Arc::clone(&pair);
                advance_blocking(&epvs, move || {
                    let v = p.0.load(Relaxed) + 1;
                    p.0.store(v, Relaxed);
                    p.1.store(v, Relaxed);
                });
                changes.fetch_add(1, Relaxed);
            };
            for _ in 0..BURSTS {
                for _ in 0..PER_BURST {
                    change();
                }
                if epvs.announce() == Announce::Fenced {
                    switches.fetch_add(1, Relaxed);
                }
                switch_back_with(&epvs, &entries, change);
            }
            done.store(true, Relaxed);
        });
    });
    assert_eq!(epvs.state(), State::rest(changes.load(Relaxed)));
    assert_eq!(pair.0.load(Relaxed), changes.load(Relaxed));
    assert!(switches.load(Relaxed) > 0, "no burst switched the mode to fenced");
}

/// [`switch_back`] with `change` as the change.
fn switch_back_with(epvs: &Epvs, entries: &AtomicU64, change: impl Fn()) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while epvs.announce() != Announce::Asymmetric {
        let from = entries.load(Relaxed);
        while entries.load(Relaxed) < from + (1 << 20) {
            thread::yield_now();
        }
        change();
        assert!(std::time::Instant::now() < deadline, "a late change left it fenced");
    }
}

/// A thread keeps a sticky slot in each of up to 16 instances, in turn and all at once
/// (four ways made the fifth instance fall back to transient slots or evict another), and
/// each instance's transitions still run.
///
/// The cache is direct-mapped by instance id, and tests on other threads take ids too, so
/// the test picks instances that map to distinct ways (instances created together in a
/// quiet process do so by themselves).
#[test]
fn up_to_sixteen_instances_per_thread_each_keep_a_sticky_slot() {
    for k in [1, 4, 8, 16] {
        let mut all: Vec<Epvs> = Vec::new();
        while all.len() < k {
            let e = Epvs::new();
            if all.iter().all(|a| a.sticky_way() != e.sticky_way()) {
                all.push(e);
            }
        }
        for (i, e) in all.iter().enumerate() {
            let guard = e.enter();
            assert!(e.in_sticky_region(), "instance {i} of {k}, entered in turn");
            drop(guard);
        }
        let guards: Vec<EpvsGuard<'_>> = all.iter().map(Epvs::enter).collect();
        for (i, e) in all.iter().enumerate() {
            assert!(e.in_sticky_region(), "instance {i} of {k}, all entered at once");
        }
        drop(guards);
        for e in &all {
            assert_eq!(advance_blocking(e, || {}), 1);
        }
    }
}

/// Many threads race to advance to the same target: each version's section runs once and
/// the version never decreases (the FASTER defect would run stale requests).
#[test]
fn stress_same_target_runs_once() {
    const THREADS: usize = 4;
    const TARGET: u64 = 150;
    let epvs = Epvs::new();
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..=TARGET).map(|_| AtomicUsize::new(0)).collect());
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (epvs, runs, barrier) = (&epvs, &runs, &barrier);
            s.spawn(move || {
                barrier.wait();
                let mut last = 0;
                loop {
                    // Observe under protection, like Fig. 3 line 20, then request v + 1.
                    let guard = epvs.enter();
                    let v = guard.version();
                    assert!(v >= last);
                    last = v;
                    if v >= TARGET {
                        break;
                    }
                    let r = Arc::clone(runs);
                    let res = epvs.advance_version(
                        move || {
                            r[v as usize + 1].fetch_add(1, SeqCst);
                        },
                        Some(v + 1),
                    );
                    if t % 2 == 0 {
                        drop(guard);
                    } else {
                        // Keep the stale observation alive a while to widen the race.
                        thread::yield_now();
                        drop(guard);
                    }
                    match res {
                        Ok(_) | Err(AdvanceError::Busy) | Err(AdvanceError::Stale { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    assert_eq!(epvs.state(), State::rest(TARGET));
    for (v, n) in runs.iter().enumerate().skip(1) {
        assert_eq!(n.load(SeqCst), 1, "version {v}");
    }
}

/// Many instances used at once from several threads, regions nested across instances.
#[test]
fn stress_many_instances() {
    const INSTANCES: usize = 32;
    const THREADS: usize = 3;
    const ROUNDS: usize = 300;
    let all: Vec<Epvs> = (0..INSTANCES).map(|_| Epvs::new()).collect();
    let counts: Vec<AtomicU64> = (0..INSTANCES).map(|_| AtomicU64::new(0)).collect();
    thread::scope(|s| {
        for t in 0..THREADS {
            let (all, counts) = (&all, &counts);
            s.spawn(move || {
                let mut x = t as u64 * 7919 + 1;
                for _ in 0..ROUNDS {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let i = (x % INSTANCES as u64) as usize;
                    let j = ((x >> 20) % INSTANCES as u64) as usize;
                    if x % 4 == 0 {
                        advance_blocking(&all[i], || {});
                        counts[i].fetch_add(1, SeqCst);
                    } else {
                        let a = all[i].enter();
                        let b = all[j].enter(); // nested, possibly the same instance
                        let c = all[i].enter();
                        assert_eq!(a.state(), c.state());
                        if i == j {
                            assert_eq!(a.state(), b.state());
                        }
                    }
                }
            });
        }
    });
    for (e, c) in all.iter().zip(&counts) {
        assert_eq!(e.state(), State::rest(c.load(SeqCst)));
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(Option<i8>),
    AdvanceUnderProtection(Option<i8>),
    Machine { phases: u8, gated: bool, target: Option<i8> },
    Open,
    Enter,
}

fn op() -> impl Strategy<Value = Op> {
    let target = prop::option::of(-2i8..4);
    prop_oneof![
        target.clone().prop_map(Op::Advance),
        target.clone().prop_map(Op::AdvanceUnderProtection),
        (0u8..3, any::<bool>(), target).prop_map(|(phases, gated, target)| Op::Machine {
            phases,
            gated,
            target
        }),
        Just(Op::Open),
        Just(Op::Enter),
    ]
}

proptest! {
    /// Single-threaded operation sequences against a sequential model of EPVS.
    #[test]
    fn matches_sequential_model(ops in prop::collection::vec(op(), 1..40)) {
        let epvs = Epvs::new();
        // Model: version, and the gated machine waiting at phase (version, phase).
        let mut version = 0u64;
        let mut waiting: Option<(Arc<Phased>, u8)> = None;
        let sections = Arc::new(AtomicU64::new(0));
        let mut expected_sections = 0;
        let dropped = Arc::new(AtomicUsize::new(0));
        for op in ops {
            let resolve = |t: Option<i8>| t.map(|d| (version as i64 + d as i64).max(0) as u64);
            match op {
                Op::Advance(t) | Op::AdvanceUnderProtection(t) => {
                    let target = resolve(t);
                    let protected = matches!(op, Op::AdvanceUnderProtection(_));
                    let g = protected.then(|| epvs.enter());
                    let s = Arc::clone(&sections);
                    let got = epvs.advance_version(move || { s.fetch_add(1, SeqCst); }, target);
                    drop(g);
                    let want = if waiting.is_some() {
                        Err(AdvanceError::Busy)
                    } else if target.is_some_and(|t| t <= version) {
                        Err(AdvanceError::Stale { target: target.unwrap(), current: version })
                    } else {
                        Ok(State::rest(version))
                    };
                    prop_assert_eq!(got, want);
                    if got.is_ok() {
                        version = target.unwrap_or(version + 1);
                        expected_sections += 1;
                    }
                }
                Op::Machine { phases, gated, target } => {
                    let phase_list: Vec<u8> = (1..=phases).collect();
                    let gate = if gated && phases > 0 { Some(phases) } else { None };
                    let m = Phased::new(phase_list, gate, Arc::clone(&dropped));
                    // Phased always ends at version + 1: the target is that or none.
                    let target = target.map(|_| version + 1);
                    let got = epvs.execute_state_machine(Arc::clone(&m), target);
                    if waiting.is_some() {
                        prop_assert_eq!(got, Err(AdvanceError::Busy));
                    } else {
                        prop_assert_eq!(got, Ok(State::rest(version)));
                        match gate {
                            Some(p) => waiting = Some((m, p)),
                            None => version += 1,
                        }
                    }
                }
                Op::Open => {
                    if let Some((m, p)) = waiting.take() {
                        prop_assert_eq!(epvs.state(), State::new(version, p));
                        m.open.store(true, SeqCst);
                        prop_assert_eq!(
                            epvs.try_step(),
                            Step::Started { from: State::new(version, p), to: State::rest(version + 1) }
                        );
                        version += 1;
                    } else {
                        prop_assert_eq!(epvs.try_step(), Step::Idle);
                    }
                }
                Op::Enter => {
                    let want = match &waiting {
                        Some((_, p)) => State::new(version, *p),
                        None => State::rest(version),
                    };
                    prop_assert_eq!(epvs.enter().state(), want);
                }
            }
            prop_assert!(!epvs.state().is_intermediate());
        }
        prop_assert_eq!(sections.load(SeqCst), expected_sections);
    }
}

#[test]
fn leaked_guard_does_not_leak_into_later_instances() {
    for _ in 0..16 {
        let e = Epvs::new();
        std::mem::forget(e.enter());
        drop(e);
        // A later instance (possibly at the same address) starts fresh on this thread.
        let e2 = Epvs::new();
        let mut g = e2.enter();
        assert_eq!(g.try_refresh(), Some(State::rest(0)));
    }
}

#[test]
fn epvs_and_arrays_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Epvs>();
    check::<crate::array::ResizableArray>();
    check::<crate::array::TwoPhaseArray>();
}

/// A two-phase machine whose critical sections write an encoding of the state they enter
/// into two cells, non-atomically; readers in any phase see exactly their state's encoding.
/// The step out of the middle phase waits for a worker thread (outside work + `try_step`).
#[test]
fn stress_two_phase_machine_with_readers() {
    const MACHINES: u64 = 60;
    const MID: u8 = 7;
    fn encode(s: State) -> u64 {
        s.version() * 256 + s.phase() as u64
    }
    struct Pair {
        cells: Arc<(AtomicU64, AtomicU64)>,
        done: Arc<AtomicBool>,
    }
    impl StateMachine for Pair {
        fn next_step(&self, cur: State) -> Option<State> {
            if cur.is_rest() {
                Some(State::new(cur.version(), MID))
            } else {
                self.done.load(SeqCst).then(|| State::rest(cur.version() + 1))
            }
        }
        fn on_entering_state(&self, _from: State, to: State) {
            self.cells.0.store(encode(to), Relaxed);
            thread::yield_now();
            self.cells.1.store(encode(to), Relaxed);
        }
    }
    let epvs = Epvs::new();
    let cells = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut g = epvs.enter();
                while !stop.load(Relaxed) {
                    let want = encode(g.state());
                    assert_eq!(cells.0.load(Relaxed), want);
                    thread::yield_now();
                    assert_eq!(cells.1.load(Relaxed), want);
                    g.refresh();
                }
            });
        }
        for _ in 0..MACHINES {
            let done = Arc::new(AtomicBool::new(false));
            let m = Pair { cells: Arc::clone(&cells), done: Arc::clone(&done) };
            // Only this thread installs machines, and the previous one finished.
            let from = epvs.execute_state_machine(m, None).unwrap();
            let v = from.version();
            epvs.wait_until(|s| s == State::new(v, MID));
            // The outside work, then the explicit step, from another thread.
            let epvs = &epvs;
            s.spawn(move || {
                done.store(true, SeqCst);
                epvs.try_step();
            })
            .join()
            .unwrap();
            assert_eq!(epvs.wait_for_version(v + 1), State::rest(v + 1));
        }
        stop.store(true, Relaxed);
    });
    assert_eq!(epvs.state(), State::rest(MACHINES));
}

/// `Epvs::transition` runs each section exactly once, blocks until it has run, and
/// retries when another machine is in flight: four threads racing 50 transitions each
/// while a reader keeps entering regions end at version 200 with 200 sections run, and
/// every section ran in mutual exclusion with the reader's regions.
#[test]
fn transition_runs_each_section_once_and_returns_after_it() {
    let epvs = Arc::new(Epvs::new());
    let ran = Arc::new(AtomicUsize::new(0));
    let in_region = Arc::new(AtomicBool::new(false));
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Relaxed) {
                let _g = epvs.enter();
                in_region.store(true, SeqCst);
                thread::yield_now();
                in_region.store(false, SeqCst);
            }
        });
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..50 {
                        let (counter, in_region) = (ran.clone(), in_region.clone());
                        let before = ran.load(SeqCst);
                        epvs.transition(move || {
                            assert!(!in_region.load(SeqCst), "a section ran inside a region");
                            counter.fetch_add(1, SeqCst);
                        });
                        assert!(ran.load(SeqCst) > before, "returned before its section ran");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Relaxed);
    });
    assert_eq!(ran.load(SeqCst), 200);
    assert_eq!(epvs.state().version(), 200);
}
