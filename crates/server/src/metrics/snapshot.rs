//! What an engine reports when `/metrics` is scraped.

use super::errors::ErrorTally;
use super::histogram::Histogram;
use crate::protocol::Counters;

/// An engine's counters at one moment: the `STATS` counters, the errors per status (its
/// own and the request handlers'; `counters.errors` is their total) and the wait and hold
/// histograms (empty when metrics are off).
///
/// The table engines take it between two commands, so it is one consistent picture; the
/// rangelock engine reads each counter on its own (as for `STATS`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineSnapshot {
    /// The counters `STATS` reports.
    pub counters: Counters,
    /// Error responses per status.
    pub errors: ErrorTally,
    /// Request arrival to grant, per grant.
    pub wait: Histogram,
    /// Grant to release, per release (by `UNLOCK` or session end).
    pub hold: Histogram,
    /// Cached locks: kept extents now, callbacks, give-backs, grown grants (zero for the
    /// rangelock engine, which caches nothing).
    pub cache: CacheCounts,
    /// A `CALLBACK` to the `GIVE_BACK` that answered it, per answered callback.
    pub callback: Histogram,
}

/// What cached locks did (protocol version 6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Kept extents now.
    pub kept: u64,
    /// `CALLBACK` notices sent.
    pub callbacks: u64,
    /// `GIVE_BACK`s done.
    pub give_backs: u64,
    /// `LOCK_CACHED` grants wider than asked.
    pub expanded: u64,
}
