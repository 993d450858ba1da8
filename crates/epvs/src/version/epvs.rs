//! [`Epvs`] and [`EpvsGuard`]: protected regions, version transitions, state machines.
//! The algorithm and its correctness argument are in the module docs of
//! [`crate::version`].

use super::machine::SimpleMachine;
use super::tls::{self, Begin, CallbackScope};
use super::{AdvanceError, State, StateMachine, Step};
use crate::epoch::{Announce, Entered, LightEpoch, Protection};
use crate::primitive::{self as prim, fence, AtomicU64, Condvar, Mutex, MutexGuard};
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, PoisonError, TryLockError, Weak};

/// Spins on the state before parking while a transition is in flight.
#[cfg(not(loom))]
const SPINS: u32 = 64;
/// Upper bound of one park: a waiter re-checks and helps drain at least this often, so a
/// missed wake-up costs at most this much, never a hang.
#[cfg(not(loom))]
const PARK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1);
/// Bound on the drain rounds `Drop for Epvs` runs to complete in-flight transitions.
const DROP_DRAIN_ROUNDS: usize = 64;

/// The state word's bit for the adaptive announce mode (a reserved bit of [`State`],
/// never visible outside `Core`): set while regions that announce with a plain store must
/// also fence before they load the state, so that a step's scan needs no process-wide
/// barrier. See "Adaptive announce mode" in the module docs.
const FENCED: u64 = 1 << 9;
/// The state word's intermediate flag.
const INTERMEDIATE: u64 = State::rest(0).with_intermediate().to_bits();
/// The mode is fenced while consecutive changes come within this many times the last
/// measured process-wide barrier of each other (BRAVO inhibits its fast path for 9x the
/// revocation cost). The barrier's cost to the caller understates its cost to the
/// interrupted cores: at two threads here, fenced regions beat asymmetric ones at one
/// change per 10 000 operations (interval about 50 µs, barrier about 3 µs), and lose at
/// one per 100 000 (350 µs).
#[cfg(not(loom))]
const INHIBIT_FACTOR: u64 = 32;
/// ... and never longer than this (ns): a barrier measured while the other core was
/// descheduled (hundreds of µs) must not keep regions fenced when changes come every
/// few hundred µs, where the asymmetric mode is 1.3x faster at two threads here.
#[cfg(not(loom))]
const MAX_WINDOW_NS: u64 = 100_000;

/// Source of [`Core::id`]s (a plain std atomic: ids need no loom modelling).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// An Epoch-Protected Version Scheme instance (seed paper §3, §4.2).
///
/// Threads run protected regions with [`enter`](Epvs::enter); version transitions run
/// critical sections ([`advance_version`](Epvs::advance_version)) or whole state
/// machines ([`execute_state_machine`](Epvs::execute_state_machine)) in mutual
/// exclusion with every protected region. See the [module docs](crate::version) for the
/// algorithm, the re-entrancy rules and the trade-offs.
///
/// Each `Epvs` owns its [`LightEpoch`]; instances never share an epoch table.
pub struct Epvs {
    core: Arc<Core>,
}

/// The state shared by an [`Epvs`] and the epoch actions of its in-flight transitions
/// (which hold it weakly, so a dropped instance is never kept alive by its own epoch).
struct Core {
    /// Process-wide unique id of the instance, for the per-thread bookkeeping.
    id: u64,
    epoch: LightEpoch,
    /// The current [`State`], see the bit table there.
    ///
    /// | value                 | meaning                                                   |
    /// |-----------------------|-----------------------------------------------------------|
    /// | `s`, not intermediate | protected regions may enter and run in `s`                |
    /// | `s` + intermediate    | a critical section leaving `s` is pending or running;     |
    /// |                       | `enter` waits                                            |
    ///
    /// Written only with `slot` locked (set-intermediate in `begin_step`, the new state in
    /// `complete_step`), so a thread holding `slot` sees a stable value.
    state: AtomicU64,
    /// The installed state machine; `None` when no version change is under way.
    slot: Mutex<Option<Installed>>,
    /// Parking for `park_while`: waiters check the state with `park` held; `wake` takes
    /// it after every state change that clears the intermediate flag.
    park: Mutex<()>,
    unpark: Condvar,
    /// Threads in `park_while`'s parking loop: `wake` skips the lock and the condition
    /// variable (whose `notify_all` is a system call) while it is 0.
    parked: AtomicU64,
    /// [`Epvs::new`]: the announce mode follows the change rate (the `FENCED` bit).
    adaptive: bool,
    /// When the last step whose time was taken completed, in ns since `created` (0: none
    /// yet). Written only by `complete_step`, one at a time.
    #[cfg(not(loom))]
    last_step: std::sync::atomic::AtomicU64,
    #[cfg(not(loom))]
    created: std::time::Instant,
}

/// What entering produced, before it becomes an [`EpvsGuard`].
#[derive(Clone, Copy)]
struct Region<'a> {
    /// `None` for a nested guard.
    protection: Option<Protection<'a>>,
    state: State,
    level: usize,
    track: Track,
}

/// What [`Epvs::enter_sticky`] entered: a new region (its protection, state and way), or a
/// nested use of the thread's region (its way and level).
enum StickyEntry<'a> {
    Fresh(Protection<'a>, State, u32),
    Nested { way: u32, level: u32 },
}

/// Where a region's guards are accounted for on this thread.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Track {
    /// By the thread's sticky way `.0` of the instance's epoch, which counts the region's
    /// guards (see `epoch::region`).
    Sticky(u32),
    /// By the thread's fast record in `tls`, whose region this outermost guard holds.
    First,
    /// By `tls`, in general.
    Recorded,
}

struct Installed {
    machine: Arc<dyn StateMachine>,
    /// The rest state the machine was installed at.
    start: State,
    target: Option<u64>,
}

impl Default for Epvs {
    fn default() -> Self {
        Epvs::new()
    }
}

impl Epvs {
    /// A new instance at `REST(0)` with its own epoch table (sized from the core count),
    /// whose announce mode adapts to the change rate: while changes are rare, `enter` is
    /// plain stores and a change with other threads present pays a process-wide barrier
    /// (`membarrier`, microseconds); while they are frequent, `enter` adds a fence and
    /// changes pay none. See "Adaptive announce mode" in the [module docs](crate::version).
    ///
    /// Pin a mode with [`with_epoch`](Epvs::with_epoch) when the rate is known:
    /// `LightEpoch::asymmetric()` for changes known to be rare (never fenced),
    /// `LightEpoch::new()` for a fenced instance on transient slots.
    pub fn new() -> Epvs {
        Epvs::build(LightEpoch::asymmetric(), true, false)
    }

    /// A new instance at `REST(0)` on the given (fresh, unshared) epoch framework, whose
    /// announce mode it keeps: `LightEpoch::asymmetric()` pins the asymmetric mode,
    /// `LightEpoch::new()` the fenced one.
    pub fn with_epoch(epoch: LightEpoch) -> Epvs {
        Epvs::build(epoch, false, false)
    }

    /// An adaptive instance that starts in the fenced announce mode and stays there (models
    /// pin the mode), for the models. Its sticky announces are plain stores with no barrier
    /// even in the model, so only the mode's own fence orders them.
    #[cfg(all(loom, test))]
    pub(crate) fn fenced_adaptive() -> Epvs {
        Epvs::build(LightEpoch::asymmetric_plain_for_model(), true, true)
    }

    fn build(epoch: LightEpoch, adaptive: bool, fenced: bool) -> Epvs {
        let mode = if fenced { FENCED } else { 0 };
        Epvs {
            core: Arc::new(Core {
                // Relaxed: only uniqueness matters.
                id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                epoch,
                state: AtomicU64::new(State::rest(0).to_bits() | mode),
                slot: Mutex::new(None),
                park: Mutex::new(()),
                unpark: Condvar::new(),
                parked: AtomicU64::new(0),
                adaptive,
                #[cfg(not(loom))]
                last_step: std::sync::atomic::AtomicU64::new(0),
                #[cfg(not(loom))]
                created: std::time::Instant::now(),
            }),
        }
    }

    #[inline]
    fn id(&self) -> u64 {
        self.core.id
    }

    /// The current state, read without protection: it may be intermediate and may change
    /// right after the read. For monitoring and tests; protected code uses
    /// [`EpvsGuard::state`].
    pub fn state(&self) -> State {
        self.core.load()
    }

    /// How regions announce themselves right now: [`Announce::Fenced`] while an adaptive
    /// instance ([`Epvs::new`]) is in its fenced mode (changes are frequent) and for a
    /// fenced epoch, else [`Announce::Asymmetric`]. For monitoring and tests; it may change
    /// right after the call.
    pub fn announce(&self) -> Announce {
        if self.core.epoch.announce() == Announce::Fenced
            || self.core.state.load(SeqCst) & FENCED != 0
        {
            Announce::Fenced
        } else {
            Announce::Asymmetric
        }
    }

    /// Whether this thread's region in the instance lives in its sticky slot.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn in_sticky_region(&self) -> bool {
        self.core.epoch.region_uses() > 0
    }

    /// The way of the thread's sticky-slot cache this instance maps to (instances in the
    /// same way share it).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn sticky_way(&self) -> usize {
        self.core.epoch.sticky_way()
    }

    /// How many process-wide barriers the instance's scans have issued.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn heavy_barriers(&self) -> u64 {
        self.core.epoch.heavy_barriers().0
    }

    /// Enters a protected region; the region runs entirely within the returned guard's
    /// [`state`](EpvsGuard::state). Blocks while a transition's critical section is
    /// pending or running (brief spin, then parks with bounded wake-ups).
    ///
    /// Re-entrant: if this thread is already inside this instance, returns at once with
    /// a nested guard of the same region (same state), never blocking. Nested guards must
    /// be dropped before the guards they nest in (normal scoping does this).
    ///
    /// # Panics
    ///
    /// If called from a critical section or `next_step` of this instance's machine (the
    /// region would have to wait for the critical section that is calling it).
    // `inline(always)`: returned through memory from an out-of-line call, the guard costs
    // a store-forwarding stall when the caller moves it (measured: 19 vs 10 ns per
    // enter+leave in `epvs-ops`); inlined, it stays in registers.
    #[inline(always)]
    pub fn enter(&self) -> EpvsGuard<'_> {
        let region = match self.enter_first() {
            Some(region) => region,
            None => self.enter_general(true, "enter").expect("a blocking enter enters"),
        };
        self.guard(region)
    }

    /// Enters a protected region if no transition is in flight; never blocks. `None` if a
    /// critical section is pending or running.
    ///
    /// # Panics
    ///
    /// Like [`enter`](Epvs::enter), from a callback of this instance's machine.
    #[inline]
    pub fn try_enter(&self) -> Option<EpvsGuard<'_>> {
        let region = match self.enter_first() {
            Some(region) => region,
            None => self.enter_general(false, "try_enter")?,
        };
        Some(self.guard(region))
    }

    /// Runs `f` in a protected region entered for it and left right after: the same as
    /// `f(&self.enter())`, but the common case (a new region in the thread's sticky slot)
    /// is specialized, so that leaving it checks nothing else. For short operations in
    /// hot loops; blocks, re-enters and panics like [`enter`](Epvs::enter).
    #[inline(always)]
    pub fn with_region<R>(&self, f: impl FnOnce(&EpvsGuard<'_>) -> R) -> R {
        match self.enter_fresh_sticky() {
            Some((protection, state, way)) => {
                let track = Track::Sticky(way);
                let guard =
                    self.guard(Region { protection: Some(protection), state, level: 1, track });
                let result = f(&guard);
                guard.leave();
                result
            }
            None => self.with_region_slow(f),
        }
    }

    /// [`with_region`](Epvs::with_region) in general.
    #[cold]
    #[inline(never)]
    fn with_region_slow<R>(&self, f: impl FnOnce(&EpvsGuard<'_>) -> R) -> R {
        f(&self.enter())
    }

    /// The fast paths' entry into the thread's sticky slot, if the fast record is free and
    /// no transition is in flight: a new region, or a nested use of the thread's region
    /// here. `None` (having undone whatever it took) in every other case.
    #[inline(always)]
    fn enter_sticky(&self) -> Option<StickyEntry<'_>> {
        if !tls::first_is_free() {
            return None;
        }
        let epoch = &self.core.epoch;
        match epoch.enter_region() {
            Entered::Fresh { protection, way } => {
                let state = self.core.load();
                if state.is_intermediate() {
                    epoch.release_sticky(protection);
                    return None;
                }
                Some(StickyEntry::Fresh(protection, state, way))
            }
            Entered::Nested { way, level } => Some(StickyEntry::Nested { way, level }),
            Entered::Unavailable => None,
        }
    }

    /// A new region in the thread's sticky slot, with its state and way, as
    /// [`enter_sticky`](Epvs::enter_sticky) but undoing a nested use. Its result is only
    /// ever this case, which lets `with_region`'s leave skip every check of the others.
    #[inline(always)]
    fn enter_fresh_sticky(&self) -> Option<(Protection<'_>, State, u32)> {
        match self.enter_sticky()? {
            StickyEntry::Fresh(protection, state, way) => Some((protection, state, way)),
            StickyEntry::Nested { way, level } => {
                let undone = self.core.epoch.unnest(way, level);
                debug_assert!(undone);
                None
            }
        }
    }

    /// The fast path of `enter` and `try_enter`: a new region in the thread's sticky slot
    /// (asymmetric mode) or a guard nested in it, or a new region on a transient slot kept
    /// in the thread's fast record (fenced mode). `None` (holding nothing) in every other
    /// case, which `enter_general` handles: nesting in a recorded region, a transition in
    /// flight, a busy record or callback.
    #[inline(always)]
    fn enter_first(&self) -> Option<Region<'_>> {
        match self.enter_sticky() {
            Some(StickyEntry::Fresh(protection, state, way)) => {
                let track = Track::Sticky(way);
                Some(Region { protection: Some(protection), state, level: 1, track })
            }
            // What `enter_general` returns in this case, without its detour.
            Some(StickyEntry::Nested { way, level }) => {
                Some(self.nested(Track::Sticky(way), level as usize))
            }
            None => self.enter_first_transient(),
        }
    }

    /// Fenced mode's [`enter_first`](Epvs::enter_first): a transient slot, and the fast
    /// record keeps the region (nothing runs on this thread between `first_is_free` and
    /// `set_first`: protecting and loading run no callbacks).
    #[inline(always)]
    fn enter_first_transient(&self) -> Option<Region<'_>> {
        let epoch = &self.core.epoch;
        if epoch.announce() == Announce::Asymmetric || !tls::first_is_free() {
            return None;
        }
        let protection = epoch.protect_raw();
        let state = self.core.load();
        if state.is_intermediate() {
            epoch.release_protection(protection);
            return None;
        }
        tls::set_first(self.id());
        Some(Region { protection: Some(protection), state, level: 1, track: Track::First })
    }

    /// Every other case of `enter` (`blocking`) and `try_enter`: a nested guard of a
    /// recorded region, a region recorded on the slow path, waiting for a transition, or a
    /// callback's panic.
    #[cold]
    #[inline(never)]
    fn enter_general(&self, blocking: bool, caller: &str) -> Option<Region<'_>> {
        let id = self.id();
        match tls::begin_enter(id) {
            Begin::Fresh => {}
            Begin::Nested(level) => return Some(self.nested(Track::Recorded, level)),
            Begin::InCallback => callback_panic(caller),
        }
        let epoch = &self.core.epoch;
        match epoch.enter_region() {
            Entered::Nested { way, level } => {
                return Some(self.nested(Track::Sticky(way), level as usize));
            }
            Entered::Fresh { mut protection, way } => loop {
                let state = self.core.load();
                if !state.is_intermediate() {
                    let protection = Some(protection);
                    return Some(Region { protection, state, level: 1, track: Track::Sticky(way) });
                }
                if !blocking {
                    epoch.release_protection(protection);
                    return None;
                }
                // Wait without protecting, but keep the way (and so the region's place).
                epoch.suspend(&protection);
                self.core.park_while(|s| s.is_intermediate());
                epoch.resume(&mut protection);
            },
            Entered::Unavailable => {}
        }
        let (protection, state) = if blocking {
            self.protect_stable()
        } else {
            let protection = epoch.protect_raw();
            let state = self.core.load();
            if state.is_intermediate() {
                epoch.release_protection(protection);
                return None;
            }
            (protection, state)
        };
        // Draining (while waiting or releasing) may have run callbacks on this thread:
        // `push_entered` checks the fast record again.
        let track = if tls::push_entered(id) { Track::First } else { Track::Recorded };
        Some(Region { protection: Some(protection), state, level: 1, track })
    }

    /// A nested guard's region: no protection of its own, the outermost guard's covers it
    /// (guards of a region are dropped innermost first). The region's state is the
    /// instance's without the intermediate flag (see `tls`).
    fn nested(&self, track: Track, level: usize) -> Region<'_> {
        let state = self.core.load().without_intermediate();
        Region { protection: None, state, level, track }
    }

    /// The guard of a region entered by this thread.
    // The guard is built here, inline, from the parts the fast or slow path produced: a
    // slow path returning the guard itself would write it into the caller's guard in
    // memory, which keeps the guard in memory on the fast path too.
    #[inline(always)]
    fn guard<'a>(&'a self, region: Region<'a>) -> EpvsGuard<'a> {
        EpvsGuard {
            epvs: self,
            core: &self.core,
            announced: region.protection.map_or(0, |p| p.announced()),
            protection: region.protection,
            state: region.state,
            level: region.level,
            track: region.track,
            _not_send: PhantomData,
        }
    }

    /// Waits for a non-intermediate state and returns epoch protection with it (which the
    /// caller must release with `LightEpoch::release_protection`).
    #[cold]
    fn protect_stable(&self) -> (Protection<'_>, State) {
        loop {
            self.core.park_while(|s| s.is_intermediate());
            let protection = self.core.epoch.protect_raw();
            let state = self.core.load();
            if !state.is_intermediate() {
                return (protection, state);
            }
            self.core.epoch.release_protection(protection);
        }
    }

    /// Advances the version with `critical_section` run in mutual exclusion with every
    /// protected region: to `target` if given (each version is advanced to at most
    /// once), else to the next version. Asynchronous: installs the transition and returns
    /// the rest state it was installed at; the section runs (on some thread) once every
    /// region that observed that state has left. Never blocks on other transitions, so it
    /// may be called inside a protected region (the region must then refresh or leave
    /// before the transition can run).
    ///
    /// # Errors
    ///
    /// [`AdvanceError::Busy`] (spurious: another machine is active; retry after
    /// refreshing or leaving), [`AdvanceError::Stale`] (the target was already reached),
    /// [`AdvanceError::VersionOverflow`]. On error the section is dropped without running.
    pub fn advance_version<F>(
        &self,
        critical_section: F,
        target: Option<u64>,
    ) -> Result<State, AdvanceError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.install(Arc::new(SimpleMachine::new(critical_section, target)), target)
    }

    /// Installs `machine` and takes its first step if it is ready (see
    /// [`StateMachine`]). `target`, if given, is the version the machine ends at; the
    /// call is rejected as [`AdvanceError::Stale`] if the instance is already there.
    /// Returns the rest state the machine was installed at. Same non-blocking behaviour
    /// and errors as [`advance_version`](Epvs::advance_version).
    pub fn execute_state_machine<M: StateMachine>(
        &self,
        machine: M,
        target: Option<u64>,
    ) -> Result<State, AdvanceError> {
        self.install(Arc::new(machine), target)
    }

    fn install(
        &self,
        machine: Arc<dyn StateMachine>,
        target: Option<u64>,
    ) -> Result<State, AdvanceError> {
        if target.is_some_and(|t| t > State::MAX_VERSION) {
            return Err(AdvanceError::VersionOverflow);
        }
        if tls::in_callback(self.id()) {
            // A machine is active: it is the one calling us.
            return Err(AdvanceError::Busy);
        }
        let mut slot = match self.core.slot.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::WouldBlock) => return Err(AdvanceError::Busy),
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
        };
        if slot.is_some() {
            return Err(AdvanceError::Busy);
        }
        // Install first, then read the state and validate the target against it. While
        // the slot is held and empty nothing else can change the state, so the check
        // cannot be overtaken (FASTER reads the version *before* its install CAS; a
        // machine completing in between makes the stale request run and the version go
        // backwards). Holding the slot lock is the install here.
        let placeholder = State::rest(0);
        *slot = Some(Installed { machine, start: placeholder, target });
        let current = self.core.load();
        debug_assert!(!current.is_intermediate() && current.is_rest(), "{current:?}");
        let rejected = match target {
            Some(t) if t <= current.version() => {
                Some(AdvanceError::Stale { target: t, current: current.version() })
            }
            None if current.version() == State::MAX_VERSION => Some(AdvanceError::VersionOverflow),
            _ => None,
        };
        if let Some(err) = rejected {
            let machine = slot.take();
            drop(slot);
            drop(machine);
            return Err(err);
        }
        if let Some(installed) = slot.as_mut() {
            installed.start = current;
        }
        Core::step_locked(&self.core, slot);
        Ok(current)
    }

    /// Attempts the next step of the installed machine (for machines whose next step
    /// waits on outside work: call this once the work is done). Never waits for a
    /// transition; may be called inside a protected region.
    pub fn try_step(&self) -> Step {
        if tls::in_callback(self.id()) {
            return Step::InFlight;
        }
        let slot = self.core.lock_slot();
        Core::step_locked(&self.core, slot)
    }

    /// Blocks until the state is not intermediate and satisfies `pred`; returns that
    /// state (which may change right after). Waits with bounded wake-ups and helps drain
    /// the epoch. Blocks forever if no transition ever produces such a state.
    ///
    /// # Panics
    ///
    /// If this thread is inside this instance (a transition could wait for this very
    /// thread) or in a callback of its machine.
    pub fn wait_until(&self, mut pred: impl FnMut(State) -> bool) -> State {
        let id = self.id();
        if tls::depth(id) > 0 || self.core.epoch.region_uses() > 0 {
            panic!(
                "Epvs::wait_until called inside a protected region of the same Epvs: the \
                 transition it waits for needs this thread to leave first"
            );
        }
        if tls::in_callback(id) {
            callback_panic("wait_until");
        }
        loop {
            let s = self.core.load();
            if !s.is_intermediate() && pred(s) {
                return s;
            }
            self.core.park_while(|s| s.is_intermediate() || !pred(s));
        }
    }

    /// Blocks until the version is at least `version` (and no transition is in flight);
    /// see [`wait_until`](Epvs::wait_until).
    pub fn wait_for_version(&self, version: u64) -> State {
        self.wait_until(|s| s.version() >= version)
    }

    /// Runs `critical_section` as a version transition (in mutual exclusion with every
    /// protected region) and blocks until it has run: when this returns, no region that
    /// observed the state before it is still running. Another machine in flight is waited
    /// for and the transition retried ([`AdvanceError::Busy`] is not an error here). The
    /// blocking counterpart of [`advance_version`](Epvs::advance_version), for rare
    /// changes such as an ownership change (seed 2, Fig. 8: `acquire`, `relinquish`).
    ///
    /// # Panics
    ///
    /// Like [`wait_until`](Epvs::wait_until), if called inside a protected region of this
    /// instance or from a callback of its machine; and if the version would overflow.
    pub fn transition<F>(&self, critical_section: F)
    where
        F: FnOnce() + Send + 'static,
    {
        // A refused attempt drops its closure, not the section: the next attempt takes it.
        let slot = Arc::new(std::sync::Mutex::new(Some(critical_section)));
        loop {
            let section = {
                let slot = Arc::clone(&slot);
                move || {
                    let f = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                    if let Some(f) = f {
                        f();
                    }
                }
            };
            match self.advance_version(section, None) {
                Ok(from) => {
                    self.wait_for_version(from.version() + 1);
                    return;
                }
                Err(AdvanceError::Busy) => {
                    let v = self.state().version();
                    self.wait_until(|s| s.version() > v || s.is_rest());
                }
                Err(e) => panic!("Epvs::transition failed: {e}"),
            }
        }
    }
}

impl Drop for Epvs {
    fn drop(&mut self) {
        // No guard exists (guards borrow `self`) and the epoch is not exposed, so nothing
        // is protected: every queued transition is ready. Let in-flight transitions finish
        // (each may start the next step of its machine), then abandon the machine.
        for _ in 0..DROP_DRAIN_ROUNDS {
            if self.core.epoch.pending_actions() == 0 {
                break;
            }
            self.core.epoch.drain();
        }
        let abandoned = self.core.lock_slot().take();
        drop(abandoned);
        // Actions still queued hold the core weakly and do nothing once it is gone.
    }
}

impl Core {
    #[inline]
    fn load(&self) -> State {
        // SeqCst: in `enter` this load follows the epoch announce (a SeqCst RMW/fence) and
        // forms the store-buffering pair with `begin_step` (SeqCst set-intermediate, then
        // the SeqCst epoch bump): either the bump's drain sees our announcement, or this
        // load sees the flag. It also acquires the critical section's writes published by
        // the store in `complete_step`.
        let raw = self.state.load(SeqCst);
        if raw & FENCED != 0 {
            return self.load_fenced();
        }
        // Only `State::to_bits` values, plus `FENCED`, are ever stored in the word.
        State::from_bits_trusted(raw)
    }

    /// [`load`](Self::load) in the fenced announce mode: a region that announced with a
    /// plain store fences before the load it runs on.
    #[cold]
    #[inline(never)]
    fn load_fenced(&self) -> State {
        // SeqCst: orders this thread's announce (a plain store in its sticky slot) before
        // the state load below, as the fenced claim does; pairs with the SeqCst fence that
        // starts every scan (`SlotTable::min_announced` without the process-wide barrier,
        // which a step from a `FENCED` state skips).
        fence(SeqCst);
        State::from_bits_trusted(self.state.load(SeqCst) & !FENCED)
    }

    /// The mode bit of the state a step completes at: fenced if the previous timed step
    /// completed within [`INHIBIT_FACTOR`] times the last measured process-wide barrier
    /// (at most [`MAX_WINDOW_NS`]; BRAVO's inhibition window, sized by what the barrier
    /// cost), asymmetric otherwise. A step from an asymmetric state that paid no barrier
    /// (nobody else holds a sticky slot) stays asymmetric without reading the clock.
    fn next_mode(&self, fenced: bool, heavy_before: u64) -> u64 {
        if !self.adaptive {
            return 0;
        }
        #[cfg(not(loom))]
        {
            let (count, cost) = self.epoch.heavy_barriers();
            if !fenced && count == heavy_before {
                return 0;
            }
            let now = self.created.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
            // Relaxed: only `complete_step` uses it, one step at a time.
            let prev = self.last_step.swap(now.max(1), std::sync::atomic::Ordering::Relaxed);
            let window = (cost.as_nanos() as u64).saturating_mul(INHIBIT_FACTOR).min(MAX_WINDOW_NS);
            if prev != 0 && now.saturating_sub(prev) < window {
                return FENCED;
            }
            0
        }
        #[cfg(loom)]
        {
            // Models pin the mode they start in.
            let _ = heavy_before;
            if fenced {
                FENCED
            } else {
                0
            }
        }
    }

    fn lock_slot(&self) -> MutexGuard<'_, Option<Installed>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the next step of the installed machine if it is ready; consumes the lock.
    fn step_locked(this: &Arc<Core>, slot: MutexGuard<'_, Option<Installed>>) -> Step {
        let Some(installed) = slot.as_ref() else {
            return Step::Idle;
        };
        let raw = this.state.load(SeqCst);
        let from = State::from_bits_trusted(raw & !FENCED);
        if from.is_intermediate() {
            return Step::InFlight;
        }
        let id = this.id;
        let next = {
            let _callback = CallbackScope::new(id);
            installed.machine.next_step(from)
        };
        let Some(to) = next else {
            return Step::NotReady;
        };
        validate_step(installed, from, to);
        // SeqCst: the flag is ordered before the epoch bump and before the scan of the
        // announcements that decides when the action runs (every such scan starts with a
        // SeqCst fence or the process-wide barrier, `SlotTable::min_announced`); pairs with
        // the epoch's fenced announce and the SeqCst state load in `enter`
        // (store-buffering pair, see `load`). The word, `FENCED` included, changes only with
        // the slot held (invariant 1), so `raw` is still its value.
        this.state.store(raw | INTERMEDIATE, SeqCst);
        // From a fenced state every region that can hold this step back fenced its announce
        // (`load_fenced`): the step's scans skip the process-wide barrier. Set before the
        // bump, as `set_light_scans` requires.
        let fenced = raw & FENCED != 0;
        this.epoch.set_light_scans(fenced);
        let heavy_before = this.epoch.heavy_barriers().0;
        let machine = Arc::clone(&installed.machine);
        let finishes = to.is_rest();
        drop(slot);
        let (prior, ready) = this.epoch.bump_ready();
        if ready {
            // Nothing protected at the old epoch: the step completes here, with no action
            // queued (no allocation, no weak reference).
            let mode = this.next_mode(fenced, heavy_before);
            Core::complete_step(this, &*machine, from, to, finishes, mode);
        } else {
            let weak: Weak<Core> = Arc::downgrade(this);
            this.epoch.defer(prior, move || {
                if let Some(core) = weak.upgrade() {
                    let mode = core.next_mode(fenced, heavy_before);
                    Core::complete_step(&core, &*machine, from, to, finishes, mode);
                }
            });
        }
        Step::Started { from, to }
    }

    /// The epoch action of a step: runs when every region that could have observed `from`
    /// has left, i.e. in mutual exclusion with all protected regions.
    fn complete_step(
        this: &Arc<Core>,
        machine: &dyn StateMachine,
        from: State,
        to: State,
        finishes: bool,
        mode: u64,
    ) {
        let id = this.id;
        let outcome = {
            let _callback = CallbackScope::new(id);
            panic::catch_unwind(AssertUnwindSafe(|| machine.on_entering_state(from, to)))
        };
        let finished = {
            let mut slot = this.lock_slot();
            let finished = if finishes { slot.take() } else { None };
            // SeqCst (Release would do): publishes the critical section's writes to
            // regions entering in `to`; pairs with the SeqCst load in `load`.
            this.state.store(to.to_bits() | mode, SeqCst);
            finished
        };
        drop(finished);
        this.wake();
        if let Err(payload) = outcome {
            // The transition completed anyway (no poisoning); the panic goes to whichever
            // thread drained the epoch.
            panic::resume_unwind(payload);
        }
        if !finishes {
            // The paper's extra step attempt after each transition: a machine that does
            // not wait on outside work finishes without further calls.
            let slot = this.lock_slot();
            Core::step_locked(this, slot);
        }
    }

    /// Waits while `cond(state)` holds: brief spin, then parks with bounded wake-ups.
    /// Helps drain the epoch so a transition whose regions have all left completes even
    /// if every other thread is waiting here.
    #[cold]
    fn park_while(&self, mut cond: impl FnMut(State) -> bool) {
        self.epoch.drain();
        #[cfg(not(loom))]
        for _ in 0..SPINS {
            if !cond(self.load()) {
                return;
            }
            std::hint::spin_loop();
        }
        loop {
            if !cond(self.load()) {
                return;
            }
            prim::eventually_visible();
            self.epoch.drain();
            // loom does not model wait timeouts, and the epoch's release path may miss a
            // freshly queued action (its pending check is Relaxed), so a model must keep
            // re-draining: yield instead of parking.
            #[cfg(loom)]
            loom::thread::yield_now();
            #[cfg(not(loom))]
            {
                // Counted before the state is checked, and `wake` reads the count after
                // storing the new state (both SeqCst: the store-buffering pair), so either
                // the check below sees the new state or `wake` sees this thread and takes
                // `park`. The state is checked with `park` held and `wake` notifies with it
                // held, so a wake-up between the check and the wait cannot be lost; the
                // timeout bounds the wait anyway and makes this thread help drain again.
                self.parked.fetch_add(1, SeqCst);
                let park = self.park.lock().unwrap_or_else(PoisonError::into_inner);
                if cond(self.load()) {
                    let (park, _) = self
                        .unpark
                        .wait_timeout(park, PARK_TIMEOUT)
                        .unwrap_or_else(PoisonError::into_inner);
                    drop(park);
                } else {
                    drop(park);
                }
                self.parked.fetch_sub(1, SeqCst);
            }
        }
    }

    /// Wakes every thread parked in `park_while` (after a state change), if any is: with
    /// none, a change costs no lock and no system call.
    fn wake(&self) {
        // SeqCst: after the SeqCst store of the new state; pairs with the increment in
        // `park_while` (see there).
        if self.parked.load(SeqCst) == 0 {
            return;
        }
        let park = self.park.lock().unwrap_or_else(PoisonError::into_inner);
        self.unpark.notify_all();
        drop(park);
    }
}

/// Panics unless `from -> to` is a valid step of `installed` (see [`StateMachine`]).
fn validate_step(installed: &Installed, from: State, to: State) {
    let bad = if to.is_intermediate() {
        Some("returned an intermediate state")
    } else if to.version() < from.version() {
        Some("decreased the version")
    } else if to.is_rest() && to.version() <= installed.start.version() {
        Some("returned a rest state that does not advance the version")
    } else if let Some(t) = installed.target {
        if to.is_rest() && to.version() != t {
            Some("ended at a version other than its target")
        } else if !to.is_rest() && to.version() >= t {
            Some("reached its target version outside a rest state")
        } else {
            None
        }
    } else {
        None
    };
    if let Some(bad) = bad {
        panic!(
            "invalid EPVS step {from} -> {to} (machine installed at {}, target {:?}): \
             next_step {bad}",
            installed.start, installed.target
        );
    }
}

#[cold]
fn callback_panic(what: &str) -> ! {
    panic!(
        "Epvs::{what} called from a state machine callback (critical section or next_step) \
         of the same Epvs: critical sections run in mutual exclusion with protected regions, \
         so this would wait for itself"
    )
}

/// A protected region of an [`Epvs`]; drop = leave. `!Send`: the protection belongs to
/// the thread.
///
/// Guards of one region (the first [`Epvs::enter`] on a thread and the nested ones after
/// it) must be dropped innermost first; dropping a guard while a guard nested in it is
/// alive (or was leaked) panics and leaves the region's protection in place for good,
/// since the nested guard still relies on it.
pub struct EpvsGuard<'a> {
    epvs: &'a Epvs,
    /// `epvs.core`, kept next to it: the guard's own paths (`refresh`, drop) then reach
    /// the epoch and the bookkeeping id with one dependent load fewer (measured: the
    /// refresh fast path is a handful of instructions, one load is a large part of it).
    core: &'a Core,
    /// The region's epoch protection: `Some` in the outermost guard (`None` only
    /// transiently inside `refresh` while waiting for a transition), `None` in nested ones.
    /// Held raw (released through `LightEpoch::release_protection` in `Drop`) so that
    /// ending a region never moves a guard value through memory.
    protection: Option<Protection<'a>>,
    /// The epoch `protection` announced, or 0 (never an epoch) without one: the refresh
    /// fast path compares it with the current epoch without looking into `protection`.
    announced: u64,
    state: State,
    /// Nesting level: 1 for the outermost guard of the region.
    level: usize,
    /// Where the region's guards are accounted for.
    track: Track,
    _not_send: PhantomData<*const ()>,
}

impl<'a> EpvsGuard<'a> {
    /// The state this region runs in; constant until [`refresh`](EpvsGuard::refresh).
    /// Never intermediate.
    #[inline]
    pub fn state(&self) -> State {
        self.state
    }

    /// Shorthand for `self.state().version()`.
    #[inline]
    pub fn version(&self) -> u64 {
        self.state.version()
    }

    /// The instance this region protects.
    #[inline]
    pub fn epvs(&self) -> &'a Epvs {
        self.epvs
    }

    /// Leaves and re-enters (cheaper than drop + [`Epvs::enter`]); lets pending
    /// transitions run (possibly on this thread) and returns the new state. Blocks like
    /// `enter` while a transition is in flight. When the instance's epoch has not moved
    /// since this region announced, there is nothing to let run: one load, and the state
    /// is returned unchanged.
    ///
    /// # Panics
    ///
    /// If this is a nested guard, or if another guard of the same instance is alive on
    /// this thread and the refresh has to move the region (the outer region would observe
    /// the state change; a silent no-op would turn wait-for-transition loops into
    /// livelocks). Use [`try_refresh`](EpvsGuard::try_refresh) to check.
    #[inline]
    pub fn refresh(&mut self) -> State {
        match self.try_refresh() {
            Some(s) => s,
            None => panic!(
                "EpvsGuard::refresh on a nested guard: another guard of the same Epvs is \
                 alive on this thread, and its region must not observe a state change"
            ),
        }
    }

    /// Like [`refresh`](EpvsGuard::refresh), but returns `None` (and does nothing) where
    /// `refresh` panics.
    #[inline(always)]
    pub fn try_refresh(&mut self) -> Option<State> {
        // Fast path: the epoch has not moved since this region announced, so neither has
        // the state. Every state change is a step that first sets the intermediate flag
        // and then bumps the epoch, and the step's new state is stored only after every
        // region announced at the old epoch has left it, which this one has not. (The
        // epoch is this instance's own; nothing else bumps it.) The flag may already be
        // set: returning the region's state then orders this refresh just before the
        // step, which waits for the region either way. Relaxed: a stale epoch only orders
        // the refresh a moment earlier in the same way. Nested guards of this region may
        // be alive: nothing changes for them either.
        if self.core.epoch.is_current(self.announced) {
            return Some(self.state);
        }
        if self.level != 1 || self.region_depth() != 1 {
            return None;
        }
        match (self.track, self.protection) {
            (Track::Sticky(_), Some(p)) => {
                let (p, state) = refresh_sticky(self.core, p);
                self.announced = p.announced();
                self.protection = Some(p);
                self.state = state;
                Some(state)
            }
            _ => self.refresh_recorded(),
        }
    }

    /// The slow path of `try_refresh` for a region recorded by `tls` (on a transient slot,
    /// or whose protection a panic took).
    #[cold]
    #[inline(never)]
    fn refresh_recorded(&mut self) -> Option<State> {
        let epoch = &self.core.epoch;
        if let Some(p) = self.protection.as_mut() {
            // Runs ready epoch actions, possibly critical sections of this instance:
            // this thread is between regions here (the new state is not read yet).
            epoch.refresh_protection(p);
            self.announced = p.announced();
        }
        let mut state = self.core.load();
        if state.is_intermediate() || self.protection.is_none() {
            // Taken before it is released, so that a panic while waiting cannot make the
            // guard's drop release it again.
            if let Some(p) = self.protection.take() {
                self.announced = 0;
                epoch.release_protection(p);
            }
            let (protection, s) = self.epvs.protect_stable();
            self.announced = protection.announced();
            self.protection = Some(protection);
            state = s;
        }
        self.state = state;
        Some(state)
    }

    /// The number of live guards of this guard's region on this thread.
    fn region_depth(&self) -> usize {
        match self.track {
            Track::Sticky(_) => self.core.epoch.region_uses(),
            Track::First | Track::Recorded => tls::depth(self.core.id),
        }
    }
}

impl<'a> EpvsGuard<'a> {
    /// Leaves the region: the same as dropping the guard, but always inlined at the call
    /// site (for hot loops: an out-of-line drop keeps the whole guard in memory).
    #[inline(always)]
    pub fn leave(self) {
        let this = ManuallyDrop::new(self);
        end_region(this.core, this.protection, this.level, this.track);
    }
}

impl Drop for EpvsGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        end_region(self.core, self.protection, self.level, self.track);
    }
}

/// The slow path of [`EpvsGuard::try_refresh`] for an outermost guard alone in its region
/// in a sticky slot: re-announces, runs ready actions, waits out a transition in flight,
/// and returns the protection and the region's state. Takes and returns the guard's parts
/// by value, so that a guard refreshed in a loop can stay in registers. A panic here (a
/// critical section run by the drain) leaves the guard's own copy of the protection
/// valid: the slot and way are the same, and releasing does not depend on the epoch.
#[cold]
#[inline(never)]
fn refresh_sticky<'a>(core: &Core, mut p: Protection<'a>) -> (Protection<'a>, State) {
    let epoch = &core.epoch;
    // Runs ready epoch actions, possibly critical sections of this instance: this thread
    // is between regions here (the new state is not read yet).
    epoch.refresh_protection(&mut p);
    let mut state = core.load();
    // Wait without protecting, keeping the way (the region's accounting).
    while state.is_intermediate() {
        epoch.suspend(&p);
        core.park_while(|s| s.is_intermediate());
        epoch.resume(&mut p);
        state = core.load();
    }
    (p, state)
}

/// Ends a guard of `core`'s region at nesting `level` holding `protection`. Takes the
/// guard's parts by value (all in registers: a protection is two words), and inlines only
/// the common cases, an outermost guard in a sticky slot with no nested guard alive and
/// the innermost nested guard of such a region: a larger drop is not inlined, and an
/// out-of-line drop (or a slow path borrowing the guard) keeps the whole guard in memory.
#[inline(always)]
fn end_region(core: &Core, protection: Option<Protection<'_>>, level: usize, track: Track) {
    match (track, protection) {
        (Track::Sticky(_), Some(p)) if core.epoch.try_release_sticky_fast(p) => {
            prim::eventually_visible();
            return;
        }
        // A nested guard of a sticky region: one count in the thread's cache.
        (Track::Sticky(way), None) if core.epoch.unnest(way, level as u32) => {
            prim::eventually_visible();
            return;
        }
        _ => {}
    }
    end_region_slow(core, protection, level, track);
}

#[cold]
#[inline(never)]
fn end_region_slow(core: &Core, protection: Option<Protection<'_>>, level: usize, track: Track) {
    let left = match track {
        // The way counts the guards: the outermost guard's release is refused while nested
        // ones remain, a nested one leaves only if it is the innermost.
        Track::Sticky(way) => match protection {
            Some(p) => core.epoch.release_sticky(p),
            None => core.epoch.unnest(way, level as u32),
        },
        // Leave the bookkeeping first: ending the protection may run critical sections of
        // this instance on this thread, which must not see it as inside.
        Track::First | Track::Recorded => {
            let left =
                (track == Track::First && tls::leave_first()) || tls::leave_general(core.id, level);
            if left {
                if let Some(p) = protection {
                    core.epoch.release_protection(p);
                }
            }
            left
        }
    };
    if !left {
        return dropped_out_of_order();
    }
    prim::eventually_visible();
}

/// A guard nested in the one being dropped is alive (or leaked) and relies on its
/// protection: the protection is kept for good (its slot stays announced, the region never
/// ends, transitions of the instance never complete) rather than let a critical section run
/// under the nested guard.
#[cold]
fn dropped_out_of_order() {
    if !std::thread::panicking() {
        panic!(
            "EpvsGuard dropped while a guard nested in it is alive (or leaked): guards of one \
             region must be dropped innermost first; the region's protection is kept forever"
        );
    }
}

impl fmt::Debug for Epvs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Epvs").field("state", &self.state()).finish_non_exhaustive()
    }
}

impl fmt::Debug for EpvsGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EpvsGuard").field("state", &self.state).finish_non_exhaustive()
    }
}
