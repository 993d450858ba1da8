//! Epoch protection and the Epoch-Protected Version Scheme (EPVS).
//!
//! Two layers, after Li, Chandramouli and Madden, *Performant almost-latch-free data
//! structures using epoch protection in more depth* (VLDB Journal 2024):
//!
//! - [`epoch`]: [`LightEpoch`], FASTER-style epoch protection. A protected region costs one
//!   uncontended CAS to enter and one store to leave in the fenced mode, two plain stores
//!   in the asymmetric one (a pinned thread's refresh is one load);
//!   [`LightEpoch::bump_with`] defers an action (typically freeing memory) until every
//!   thread that could still see the old epoch has left it.
//! - [`version`]: [`Epvs`], the version scheme built on it. Protected regions run latch-free
//!   within one [`State`] ([`Epvs::enter`], or [`Epvs::with_region`] around a closure);
//!   rare *transitions* (resize, checkpoint, ownership change) run their critical sections
//!   in mutual exclusion with every protected region, driven by a [`StateMachine`].
//! - [`array`](mod@array): the paper's resizable arrays, simple ([`ResizableArray`], Fig. 3) and
//!   two-phase ([`TwoPhaseArray`], Figs. 4–6), as library types.
//!
//! The examples in `crates/epvs/examples/` show the paper's other uses: an ownership map
//! (Fig. 8) and a checkpointed key-value map whose snapshot is a consistent cut (Fig. 10).
//!
//! # What differs from the anchors (FASTER / Garnet)
//!
//! The announce is ordered before protected loads; a full table parks with bounded
//! wake-ups instead of spinning or throwing; every instance owns its table; the drain list
//! grows instead of spinning when full; `advance_version(target)` validates the target
//! after installing its machine, so the version never goes backwards. Each module documents
//! its argument; loom models next to the code check them (`ci/loom.sh`).
//!
//! # Trade-offs
//!
//! Protection is cheap and version changes are not: a transition waits for every
//! protected region to leave (an epoch drain) and blocks new regions while its critical
//! section runs. Alone, a change costs about 110 ns. With other threads, the default
//! instance switches to a fenced announce while changes are frequent, so it does not fall
//! below a latch by the cost of process-wide barriers (the `epvs-freq` benchmark suite
//! shows where). Each [`Epvs`] owns its own [`LightEpoch`], trading
//! memory (one slot table per instance) for freedom from cross-instance deadlocks.

pub mod array;
pub mod epoch;
mod primitive;
pub mod version;

pub use array::{ResizableArray, TwoPhaseArray};
pub use epoch::{EpochError, EpochGuard, LightEpoch};
pub use version::{AdvanceError, Epvs, EpvsGuard, State, StateMachine, Step};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
