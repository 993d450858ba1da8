//! What an engine records for the wait and hold histograms, when metrics are on.
//!
//! Every lock entry keeps one timestamp (`stamp`, [`Clock`] nanoseconds): while it waits,
//! when its request arrived (read by the handler that decoded the `LOCK`); once granted,
//! when it was granted. A grant records `now - stamp` as a wait and sets `stamp = now`; a
//! release (`UNLOCK`, session end, a cluster partition given up) records `now - stamp` as
//! a hold. With metrics off the engines hold no `Timings` and never read the clock; the
//! stamp is written as 0 and never read.

use super::clock::Clock;
use super::histogram::{AtomicHistogram, Histogram};

/// The histograms of a lock table (one thread at a time), with the clock read at most
/// once per command: every grant and release a command causes happens at the same `now`
/// (an `UNLOCK` that grants three waiters reads the clock once).
#[derive(Debug)]
pub(crate) struct Timings {
    clock: Clock,
    /// The clock as read during the current command, if it was.
    now: Option<u64>,
    pub(crate) wait: Histogram,
    pub(crate) hold: Histogram,
    /// A callback to the give-back that answered it.
    pub(crate) callback: Histogram,
}

impl Timings {
    pub(crate) fn new(clock: Clock) -> Timings {
        let h = Histogram::default();
        Timings { clock, now: None, wait: h, hold: h, callback: h }
    }

    /// A new command starts: the next [`Timings::now`] reads the clock.
    #[inline]
    pub(crate) fn next_command(&mut self) {
        self.now = None;
    }

    /// The time of the current command.
    #[inline]
    pub(crate) fn now(&mut self) -> u64 {
        let clock = self.clock;
        *self.now.get_or_insert_with(|| clock.now())
    }

    /// Records the grant of an entry stamped `stamp` (its arrival); returns its new stamp.
    #[inline]
    pub(crate) fn granted(&mut self, stamp: u64) -> u64 {
        let now = self.now();
        self.wait.observe(now.saturating_sub(stamp));
        now
    }

    /// Records the release of an entry stamped `stamp` (its grant).
    #[inline]
    pub(crate) fn released(&mut self, stamp: u64) {
        let now = self.now();
        self.hold.observe(now.saturating_sub(stamp));
    }
}

/// The histograms of the rangelock engine, recorded into by concurrent handlers: one
/// clock read and two relaxed atomic adds per grant and per release.
#[derive(Debug)]
pub(crate) struct AtomicTimings {
    clock: Clock,
    pub(crate) wait: AtomicHistogram,
    pub(crate) hold: AtomicHistogram,
}

impl AtomicTimings {
    pub(crate) fn new(clock: Clock) -> AtomicTimings {
        AtomicTimings { clock, wait: AtomicHistogram::default(), hold: AtomicHistogram::default() }
    }

    /// Records the grant of an entry stamped `stamp` (its arrival); returns its new stamp.
    #[inline]
    pub(crate) fn granted(&self, stamp: u64) -> u64 {
        let now = self.clock.now();
        self.wait.observe(now.saturating_sub(stamp));
        now
    }

    /// Records the release of an entry stamped `stamp` (its grant).
    #[inline]
    pub(crate) fn released(&self, stamp: u64) {
        self.hold.observe(self.clock.now().saturating_sub(stamp));
    }
}
