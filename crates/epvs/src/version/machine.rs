//! The [`StateMachine`] trait, the outcome of a step attempt, and the trivial machine
//! behind [`Epvs::advance_version`](super::Epvs::advance_version).

use super::State;
use crate::primitive::Mutex;
use std::fmt;

/// A transition state machine (seed paper §3.2): a version change that moves through
/// semi-stable intermediate phases, with a critical section between any two states.
///
/// A machine is installed at a rest state `REST(v)` and must end at a rest state with a
/// larger version (exactly the target version if one was given); the machine is
/// uninstalled when it reaches that state. In between it may visit any number of
/// non-rest phases. Versions never decrease along the way.
///
/// # Contract
///
/// * [`next_step`](StateMachine::next_step) is called with the slot lock of the
///   [`Epvs`](super::Epvs) held: keep it quick and pure (read flags, compute the next
///   state). Calls back into the same `Epvs` from it do not deadlock
///   ([`try_step`](super::Epvs::try_step) reports [`Step::InFlight`], installs report
///   [`AdvanceError::Busy`](super::AdvanceError::Busy), `enter` panics), but they are
///   never useful.
/// * [`on_entering_state`](StateMachine::on_entering_state) is the critical section: it
///   runs in mutual exclusion with every protected region of the `Epvs` and with every
///   other critical section, on whichever thread drains the epoch (possibly not the thread
///   that installed the machine). It must not [`enter`](super::Epvs::enter) the same
///   `Epvs` (that panics: it would wait for itself) and must not block on work that
///   needs a protected region of it.
/// * A machine that returns an invalid step (an intermediate state, a smaller version, a
///   rest state that does not advance the version, a version past the target) is a bug;
///   the step attempt panics with a message naming the states.
pub trait StateMachine: Send + Sync + 'static {
    /// The next state after `current` if the machine is ready to take it now, `None` if
    /// it is waiting (on outside work, e.g. a copy finishing). A machine that returns
    /// `None` must be stepped again with [`Epvs::try_step`](super::Epvs::try_step) once
    /// the outside work is done.
    fn next_step(&self, current: State) -> Option<State>;

    /// The critical section of the transition `from -> to`; runs before any protected
    /// region observes `to`, after every protected region that observed `from` has left.
    fn on_entering_state(&self, from: State, to: State);
}

/// The outcome of [`Epvs::try_step`](super::Epvs::try_step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A transition `from -> to` was started: the intermediate flag is set and the
    /// critical section runs once every protected region that observed `from` has left.
    Started {
        /// The state being left.
        from: State,
        /// The state being entered.
        to: State,
    },
    /// A transition is already in flight (or this thread is inside a callback of the
    /// machine); it will take the next step itself when it completes.
    InFlight,
    /// The installed machine is waiting (its `next_step` returned `None`).
    NotReady,
    /// No state machine is installed.
    Idle,
}

/// The trivial state machine of `advance_version`: `REST(v) -> REST(target)` with the
/// user's critical section, run exactly once.
pub(super) struct SimpleMachine<F> {
    section: Mutex<Option<F>>,
    target: Option<u64>,
}

impl<F: FnOnce() + Send + 'static> SimpleMachine<F> {
    pub(super) fn new(section: F, target: Option<u64>) -> Self {
        SimpleMachine { section: Mutex::new(Some(section)), target }
    }
}

impl<F: FnOnce() + Send + 'static> StateMachine for SimpleMachine<F> {
    fn next_step(&self, current: State) -> Option<State> {
        // Installed at REST(v) (validated: target > v, v < MAX_VERSION); the machine is
        // uninstalled when it reaches the rest state below, so this runs once.
        Some(State::rest(self.target.unwrap_or(current.version() + 1)))
    }

    fn on_entering_state(&self, _from: State, _to: State) {
        let section = self.section.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(section) = section {
            section();
        }
    }
}

impl<F> fmt::Debug for SimpleMachine<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimpleMachine").field("target", &self.target).finish_non_exhaustive()
    }
}
