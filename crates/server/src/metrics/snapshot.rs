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
}
