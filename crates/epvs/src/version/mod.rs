//! The Epoch-Protected Version Scheme (EPVS, seed paper §3 and §4.2).
//!
//! An almost-latch-free data structure spends nearly all its time at *rest* and only
//! occasionally goes through a *disturbed* state (a resize, a checkpoint, an ownership
//! change). EPVS makes the common path cost one epoch announcement, and runs the rare
//! changes as *transitions* whose critical sections execute in mutual exclusion with
//! every protected region.
//!
//! ```
//! use epvs::version::Epvs;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//!
//! let epvs = Epvs::new();
//! let hits = Arc::new(AtomicU64::new(0));
//! {
//!     let guard = epvs.enter(); // a protected region: its state cannot change under it
//!     assert_eq!(guard.version(), 0);
//! }
//! let h = Arc::clone(&hits);
//! let from = epvs.advance_version(move || { h.fetch_add(1, Ordering::Relaxed); }, Some(1));
//! assert_eq!(from.map(|s| s.version()), Ok(0));
//! assert_eq!(epvs.wait_for_version(1).version(), 1);
//! assert_eq!(hits.load(Ordering::Relaxed), 1);
//! // Each version is advanced to at most once.
//! assert!(epvs.advance_version(|| unreachable!(), Some(1)).is_err());
//! ```
//!
//! # Model
//!
//! The [`State`] is one `u64`: a version, a phase byte (`REST` = 0, other phases are the
//! user's semi-stable disturbed states) and an *intermediate* flag. A protected region
//! ([`Epvs::enter`] .. drop of the [`EpvsGuard`], or between two
//! [`EpvsGuard::refresh`]es) runs entirely within one non-intermediate state, which it
//! reads from [`EpvsGuard::state`]. A [`StateMachine`] moves the instance from
//! `REST(v)` through any number of phases to `REST(w)`, `w > v`; each step `from -> to`
//! runs the critical section [`StateMachine::on_entering_state`] with no protected region
//! active. [`Epvs::advance_version`] is the trivial machine `REST(v) -> REST(target)`.
//!
//! # Algorithm
//!
//! *Enter*: announce the epoch (`LightEpoch::protect`), then load the state. If the
//! intermediate flag is clear, the region runs in that state. Otherwise stop announcing,
//! wait for the flag to clear (brief spin, then park on a condition variable with a 1 ms
//! bound per park, helping drain the epoch on every wake-up), and retry. On an
//! asymmetric epoch (the default) the region lives in the thread's sticky slot, whose
//! way also counts the region's nested guards, so entering and leaving touch only that
//! way and the slot (see `epoch::region`); otherwise the thread records the region
//! itself (`tls`) and protects it with a transient slot.
//!
//! *Step* (under the slot lock, which holds the installed machine): read the state `s`;
//! if it is intermediate a step is already in flight. Ask `next_step(s)`; if it returns
//! `t`, store `s | intermediate` (SeqCst, then a SeqCst fence), release the lock and
//! `bump_with(action)`. The epoch *action* runs once every thread that could have
//! observed the old epoch has left it; it runs `on_entering_state(s, t)`, then (slot
//! locked) stores `t` — clearing the flag — uninstalls the machine if `t` is its final
//! rest state, wakes parked threads, and otherwise immediately attempts the next step
//! (the paper's extra step attempt, so machines that do not wait on outside work finish
//! on their own). Machines whose next step waits on outside work are stepped with
//! [`Epvs::try_step`] once it is done.
//!
//! *Install* ([`Epvs::advance_version`], [`Epvs::execute_state_machine`]): try-lock the
//! slot; if it is locked or holds a machine, fail with [`AdvanceError::Busy`]. Otherwise
//! install, *then* read the state and validate the target against it, then take the
//! first step.
//!
//! # Invariants
//!
//! 1. The state changes only with the slot lock held, and only by a step of the
//!    installed machine: set-intermediate (in the step) and the new state (in the action).
//!    With the slot held and empty the state is a stable rest state.
//! 2. At most one step is in flight: a step starts only from a non-intermediate state and
//!    the flag is cleared only by the action that completes it.
//! 3. Versions never decrease: installs are validated against the state read after
//!    installing (1 makes that read stable), and every step is validated
//!    (`to.version() >= from.version()`, final rest version `>` start, `== target`).
//! 4. A guard's state is never intermediate and is constant until it refreshes.
//!
//! # Correctness: critical sections exclude protected regions
//!
//! Let a step store `s | intermediate` (SeqCst, followed by a SeqCst fence) and then
//! bump the epoch from `E` to `E + 1`; its action runs when `E` is safe, i.e. every
//! thread that is protected has announced an epoch `> E`. Take a region `R` that
//! announces epoch `e` and then loads the state (SeqCst).
//!
//! * `e <= E` and the bump's scan of the epoch table sees the announcement: the action
//!   (and the critical section) waits until `R` leaves or refreshes.
//! * `e > E`: `R` read the incremented epoch, which was written after the step's fence,
//!   so (fence-to-fence synchronization) `R`'s later state load sees the flag or a later
//!   value.
//! * The scan misses `R`'s announcement: then `R`'s fenced announce is ordered after the
//!   step's fence in the SeqCst order (the store-buffering pattern cannot lose both
//!   sides), so again `R`'s state load sees the flag or a later value.
//!
//! Values after the flag are written only by the action, after the critical section.
//! So `R` either waits for the section or runs entirely after it, in the new state, and
//! acquires its writes (the new state is stored after the section; `R` loads it SeqCst).
//! What this relies on from [`LightEpoch`](crate::epoch::LightEpoch): the announce in
//! `protect`/`refresh` is ordered before later loads as seen by the scan that decides an
//! action may run (a SeqCst RMW or fence in `Fenced` mode; in `Asymmetric` mode, which
//! [`Epvs::new`] uses, a compiler barrier paired with the process-wide barrier every such
//! scan issues first — the argument above goes through with that pair in place of the
//! fences), `bump_with` scans the announcements after incrementing the epoch, and a
//! region's end happens-before an action that waited for it (so the critical section
//! sees the region's writes).
//!
//! *Refresh fast path*: if the epoch still equals the one the region announced, the state
//! has not changed for it: a step sets the flag and then bumps, and stores its new state
//! only after every region at the old epoch has left. So [`EpvsGuard::refresh`] is then
//! one relaxed load of the epoch, and returns the region's state. (Guards nested in the
//! region may be alive: nothing changes for them either, so the nesting check below is
//! only made when the refresh has to move the region.)
//!
//! So no region overlaps a critical section, a region that entered in version `v` never
//! observes a state of `v + 1` (invariant 4: it keeps its state until it refreshes, and
//! the step out of its state waits for it), and the section sees every write made by
//! the regions it waited for. Critical sections are mutually exclusive by invariant 2.
//!
//! # Adaptive announce mode
//!
//! [`Epvs::new`] runs on an asymmetric epoch: a region announces with a plain store, and a
//! step's scan pays the process-wide barrier (`membarrier`, microseconds, an interrupt
//! on every other core). That is right while changes are rare and wrong while they are
//! frequent, so the instance picks per step. The state word carries an internal
//! `FENCED` bit (a reserved bit of [`State`], masked from every state a caller sees):
//!
//! * **Regions**: a region that loads a state with `FENCED` issues a SeqCst fence and
//!   loads the state again, and runs in that second value. Its plain announce is then
//!   ordered before its state load like a fenced claim's.
//! * **Steps**: a step reads `FENCED` with the state it sets the intermediate flag on. From
//!   a fenced state every region that can hold the step back has fenced, so the step's
//!   scans use a plain SeqCst fence (`LightEpoch::set_light_scans`). From an asymmetric
//!   state they pay the barrier as before. A region that accepted an asymmetric state
//!   is waited out by the step leaving it, which paid the barrier. So when the bit is set
//!   (only as the new state of a step), no asymmetric region is left.
//! * **Which mode**: a step completes in the fenced mode when the previous timed step
//!   completed within 32x the last measured barrier and at most 100 µs (BRAVO's
//!   inhibition window, sized by what the barrier cost), else in the asymmetric one. The
//!   bit changes only as part of a step's new state. The factor is large because the
//!   barrier's cost to the caller understates its cost to the interrupted cores: at two
//!   threads here the fenced regions beat the asymmetric ones at one change per 10 000
//!   operations (a change every 50 µs or so, barrier 3 µs) and lose at one per 100 000.
//!   An instance whose changes stop while it is fenced stays fenced (a fence per region
//!   entry, as the pinned fenced mode pays) until a change comes after a longer gap.
//! * **Nobody else there**: with one thread, no step pays the barrier at all. The scan
//!   skips it when no other thread holds a sticky slot (`SlotTable::others_sticky`),
//!   because every other announce is then a fenced claim. So the mode never leaves
//!   asymmetric.
//!
//! Pin a mode with [`Epvs::with_epoch`]. Use `LightEpoch::asymmetric()` where changes are
//! known to be rare and a burst of them must never leave regions fenced. Use
//! `LightEpoch::new()` for a fenced instance whose regions never use sticky slots.
//!
//! # What a version change costs
//!
//! Measured with `cargo run --release -p epvs --example protect_loop -- change` (enter,
//! leave, `advance_version` with an empty section, one thread), and the same under
//! `valgrind --tool=callgrind` (instructions per change):
//!
//! | step | time per change | instructions |
//! |---|---|---|
//! | before: queue a boxed action, scan all 64 slots twice, `membarrier`, run, wake | 764 ns | 3 293 |
//! | scan only slots ever used; no `membarrier` while no other thread holds a sticky slot | 328 ns | |
//! | run a ready action in `bump_with` without queueing it (no box, no drain-list lock) | 270 ns | 892 |
//! | wake only when a thread is parked (`notify_all` is a `futex` system call) | 139 ns | 856 |
//! | a step that is ready at once completes in place (no queued action, no `Weak`) | 125 ns | 831 |
//! | callback scopes in a thread-local cell, not a `RefCell<Vec>` | 109 ns | 701 |
//!
//! (Instructions: the run's total over 100 000 changes; process start adds about 3 per
//! change.) What remains of the 701: `Arc` of the machine and its `Mutex<Option<F>>`
//! (malloc and free, about a third), the slot mutex (taken twice), the state store, the
//! epoch bump and the scan's fence (three locked instructions).
//! With two threads, a step that must wait for the other thread's region completes when
//! that region ends: the region's release runs the step (one cache-line transfer each
//! way), and the advancing thread spins briefly on the state before it parks. From an
//! asymmetric state the step also pays the process-wide barrier: about 3 µs per change
//! at two threads here (`epvs-asym` in `bench epvs-freq`, p = 1), which is why the mode
//! adapts.
//!
//! # What a phase costs
//!
//! A machine's phase is one version step, and a step costs what a change does: at one
//! thread the table above (no barrier, no wait); with another thread inside a region, the
//! step also waits for that region to end and completes on its release. The work a step
//! runs is the machine's own. `rangelock bench epvs-phases --threads 1,2` splits a fixed
//! change (4096 hashes of 64 bytes, one change per 10 000 operations) over the critical
//! sections of 1, 2, 4 or 8 phases: 8 phases ran at 1.01x one phase at one thread and
//! 1.04x at two (5 rounds of 1 s, medians), so the per-phase overhead is below this
//! measurement's noise at that change rate.
//!
//! # Re-entrancy rules
//!
//! * **Nested `enter` on the same thread** (already inside this instance): supported. It
//!   never blocks and returns a nested guard of the *same* region (same state), whatever
//!   is pending. The outermost guard holds the region's epoch protection, so guards of a
//!   region are dropped innermost first (normal scoping); dropping a guard while one
//!   nested in it is alive panics and keeps the protection forever (sound, but the
//!   instance can no longer advance). [`EpvsGuard::refresh`] on a nested guard, or on
//!   the outermost guard while another guard of the same instance is alive on the
//!   thread and the epoch has moved, **panics** (the outer region would see its state
//!   change; a no-op would silently livelock the usual "advance, then refresh until
//!   done" loop, whose advance moves the epoch); [`EpvsGuard::try_refresh`] returns
//!   `None` instead.
//! * **Advancing under protection** (the paper's self-dependency): supported.
//!   `advance_version`, `execute_state_machine` and `try_step` never wait for a
//!   transition; a transition started from inside a region runs once the region
//!   refreshes or leaves (possibly on this thread, inside `refresh`/drop). If another
//!   machine is active they fail spuriously with [`AdvanceError::Busy`] instead of
//!   retrying, since that machine may be waiting for the caller's own region; retry
//!   after refreshing.
//! * **Calls from a machine's own callbacks** (`on_entering_state`, `next_step`):
//!   `enter`, `try_enter` and `wait_until` panic with a clear message (they would wait
//!   for the running critical section); installs return `Busy`; `try_step` returns
//!   [`Step::InFlight`].
//! * **[`Epvs::wait_until`] inside a region of the same instance** panics: the awaited
//!   transition needs this thread to leave.
//! * **Several instances**: each `Epvs` owns its `LightEpoch`, so being inside instance
//!   `x` never delays transitions of instance `y`. Cycles across instances (a critical
//!   section of `x` entering `y` while one of `y` enters `x`, seed paper Fig. 7) deadlock
//!   like lock-order inversions; merge the instances or order them.
//!
//! # Spurious failure
//!
//! An install fails with [`AdvanceError::Busy`] whenever another machine is installed
//! or the slot lock is momentarily held (by a concurrent install or step attempt), even
//! if an immediate retry would succeed. Callers retry after refreshing or leaving; the
//! resizable arrays in [`crate::array`] show the loop.
//!
//! # The FASTER target defect, avoided
//!
//! FASTER's `AdvanceVersion(target)` reads the version, compares it with the target and
//! *then* installs its machine with a CAS. A machine that completes between the read and
//! the CAS makes the stale request install anyway and move the version to `target`,
//! which may be *below* the current version. Here the slot is taken first and the state
//! is read with the slot held (invariant 1: it cannot change then), so the comparison is
//! against the state the machine actually starts from. `tests` check this with
//! concurrent same-target requests (the section runs once, the version never decreases,
//! a loom model explores the interleavings).
//!
//! # Verification
//!
//! loom models (`loom_tests.rs`, run by `ci/loom.sh`) on the real `LightEpoch`: a
//! critical section vs. a concurrent region (loom `UnsafeCell`s report any overlap),
//! advancing under protection, a two-phase machine stepped by an outside worker, and
//! concurrent same-target advances (the section runs once; a FASTER-style
//! read-before-install mutant fails this model). Under `cfg(loom)` waiters yield and
//! re-drain instead of parking (loom models neither wait timeouts nor the eventual
//! visibility of a store to a spinning thread; a loom-only SeqCst fence after a region
//! ends stands for the latter).
//!
//! The fenced mode has its own model. The instance's sticky announces are plain stores
//! with no barrier even in the model, and the step scans after a plain fence. The model
//! fails if the fence in `load_fenced` is removed. Two things loom cannot check, because
//! it cannot express a process-wide barrier: that a step from an asymmetric state may
//! skip the barrier when no other thread holds a sticky slot, and the switch between the
//! modes. The first rests on the SeqCst argument at `SlotTable::others_sticky`; the second
//! on "Adaptive announce mode" above (the bit changes only in a step's new state, which
//! every region that saw the old one has left). Stress tests and a proptest against a
//! sequential model are in `tests.rs`.
//!
//! # Panics in critical sections
//!
//! No poisoning: if `on_entering_state` panics, the transition still completes (the
//! state moves to `to`, waiters wake) and the panic resumes on the thread that ran the
//! epoch action.
//!
//! # Trade-offs
//!
//! * Protected regions are nearly free at rest (four plain stores to thread-owned memory
//!   and a load of the state: 3 ns per enter and leave, 0.4 ns per refresh in `bench
//!   epvs-ops`). A version change with other threads present costs either a
//!   process-wide barrier (asymmetric mode) or a fence per region (fenced mode); the
//!   adaptive mode above picks between them (see "Adaptive announce mode"). Every
//!   region waits while a critical section is pending, and a transition waits for the
//!   slowest region to leave: a thread that stays protected for long stalls every
//!   version change (refresh often).
//! * Transitions are asynchronous and run on whichever thread drains the epoch, so
//!   critical sections and machines are `Send + 'static` (capture `Arc`s of the data,
//!   never the `Epvs` itself, or the instance keeps itself alive through its epoch).
//! * One epoch table per instance (no sharing): a little memory per instance in exchange
//!   for independence — a region of one instance never holds back another instance's
//!   transitions, and nested entry across instances cannot deadlock on a shared epoch.
//! * Versions are 48 bits; advancing past [`State::MAX_VERSION`] is an error.
//! * The slot is a mutex, taken only on the transition path (installs use `try_lock`);
//!   `enter` never touches it.

mod epvs;
mod error;
mod machine;
mod state;
mod tls;

pub use epvs::{Epvs, EpvsGuard};
pub use error::AdvanceError;
pub use machine::{StateMachine, Step};
pub use state::State;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
