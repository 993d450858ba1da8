//! Errors of the version scheme.

/// Why [`Epvs::advance_version`](super::Epvs::advance_version) or
/// [`Epvs::execute_state_machine`](super::Epvs::execute_state_machine) did not install
/// its machine. Nothing was changed and the critical section / machine was dropped
/// without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AdvanceError {
    /// Another state machine is active (or its slot is momentarily locked). This is the
    /// paper's *spurious failure*: the call never waits for the other machine, because
    /// the caller may be inside a protected region that the other machine waits for.
    /// Retry after refreshing or leaving protection.
    #[error("another EPVS state machine is active; retry after refreshing or leaving protection")]
    Busy,
    /// The target version has already been reached: some other call advanced to it (or
    /// past it). Each version is advanced to at most once.
    #[error("EPVS target version {target} is not ahead of the current version {current}")]
    Stale {
        /// The requested target version.
        target: u64,
        /// The version at the time of the check (after installing).
        current: u64,
    },
    /// The target (or the next version) is larger than [`State::MAX_VERSION`](super::State::MAX_VERSION).
    #[error("EPVS version space exhausted (maximum version is {max})", max = super::State::MAX_VERSION)]
    VersionOverflow,
}
