//! What a suite hands the runner: [`Suite`], [`Case`], [`Sample`], [`XAxis`].

use core::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use super::options::Options;
use super::span::Span;

/// One measurement's outcome.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Operations completed (summed over threads).
    pub ops: u64,
    /// Wall-clock time the operations took.
    pub elapsed: Duration,
    /// Latencies of (some of) the operations, in nanoseconds; may be empty, in which case
    /// the percentiles of the record are `null`.
    pub latencies_ns: Vec<u64>,
    /// Extra numeric fields for the record (median over rounds is reported).
    pub extra: Map<String, Value>,
}

/// The [`Sample::extra`] key that marks a measurement as not taken (see [`Sample::skipped`]).
pub const SKIPPED: &str = "skipped";
/// The [`Sample::extra`] key that marks a measurement as given up on when its work budget
/// ran out (see [`Sample::cut`]).
pub const CUT: &str = "cut";

impl Sample {
    /// A measurement that could not be taken (for instance its setup exceeded a time
    /// budget). The runner leaves the case out of the records and notes `reason` under the
    /// table; a case skipped in one round is skipped in all.
    pub fn skipped(reason: impl Into<String>) -> Self {
        let mut extra = Map::new();
        extra.insert(SKIPPED.to_owned(), Value::String(reason.into()));
        Sample { extra, ..Sample::default() }
    }

    /// Why this measurement was skipped, if it was.
    pub fn skip_reason(&self) -> Option<&str> {
        self.extra.get(SKIPPED).and_then(Value::as_str)
    }

    /// A measurement given up on because its work budget ran out (its
    /// [`Span::running`] turned false in a setup loop): `what` says how far it got. The
    /// runner cuts the case (see [`run_suite`](super::run_suite)); it would cut it for the
    /// CPU time spent anyway, this only says where.
    pub fn cut(what: impl Into<String>) -> Self {
        let mut extra = Map::new();
        extra.insert(CUT.to_owned(), Value::String(what.into()));
        Sample { extra, ..Sample::default() }
    }

    /// How far a measurement cut by its budget got ([`Sample::cut`]), if it was.
    pub fn cut_reason(&self) -> Option<&str> {
        self.extra.get(CUT).and_then(Value::as_str)
    }

    /// Operations per second of this sample (0 when nothing was timed).
    pub fn ops_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.ops as f64 / secs
        } else {
            0.0
        }
    }
}

/// One point of a suite: a variant at a thread count with workload parameters.
pub struct Case {
    /// Variant name, e.g. `"rangelock"`, `"kogan-list"`, `"fcntl-ofd"`.
    pub variant: String,
    /// Worker threads.
    pub threads: usize,
    /// Workload parameters: part of the record; cases with equal params and threads form
    /// the group the ratios are computed in.
    pub params: Map<String, Value>,
    /// Marks robustness rows run with more threads than cores (never a scaling claim).
    pub oversubscribed: bool,
    /// One measurement over the given span: its duration, and its floor of operations per
    /// worker thread, which [`run_threads`](super::run_threads) keeps.
    pub run: Box<dyn FnMut(Span) -> Sample>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("variant", &self.variant)
            .field("threads", &self.threads)
            .field("params", &self.params)
            .field("oversubscribed", &self.oversubscribed)
            .finish_non_exhaustive()
    }
}

/// The x axis of a suite's plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// Worker threads.
    Threads,
    /// Client threads, each with its own connection to a server (the server suites): the
    /// records' `threads` counted as clients.
    Clients,
    /// The named numeric entry of [`Case::params`].
    Param(&'static str),
}

/// A variant that bounds a suite's others instead of competing with them (see
/// [`Suite::ceilings`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ceiling {
    /// The variant's report name.
    pub name: &'static str,
    /// What it leaves out, for the table's header (e.g. "the workload with no lock").
    pub leaves_out: &'static str,
}

/// The ceiling of most lock suites: [`Unlocked`](crate::workload::Unlocked), the workload
/// with no lock.
pub const NO_LOCK: Ceiling =
    Ceiling { name: crate::workload::Unlocked::NAME, leaves_out: "the workload with no lock" };

/// What a suite's records report (see [`Suite::measure`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Throughput: ops/s, ns/op, sampled latencies and the ratios (every timing suite).
    Throughput,
    /// Quantities the suite records as these [`Sample::extra`] fields instead of a rate
    /// (the `memory` suite's byte counts): its samples complete no operations, the table
    /// shows these fields instead of ops/s and latencies, and the plot shows the first.
    Extras(&'static [&'static str]),
}

impl Measure {
    /// The value a plot shows for `record`: its ops/s, or its first listed extra field
    /// (`None` when the record lacks it or it is not a number).
    pub fn y(self, record: &super::record::Record) -> Option<f64> {
        match self {
            Measure::Throughput => Some(record.ops_per_sec),
            Measure::Extras(keys) => record.extra.get(*keys.first()?)?.as_f64(),
        }
    }

    /// What a suite of this measure shows when it says nothing more ([`Suite::quantity`]):
    /// `operations per second`, or the first listed extra field in words with its unit.
    pub fn quantity(self) -> String {
        match self {
            Measure::Throughput => "operations per second".to_owned(),
            Measure::Extras(_) => self.y_label(),
        }
    }

    /// The plot's y-axis label: `ops/s`, or the first listed extra field in words with its
    /// unit (`first_grant_ms` as `first grant (ms)`).
    pub fn y_label(self) -> String {
        match self {
            Measure::Throughput => "ops/s".to_owned(),
            Measure::Extras(keys) => {
                keys.first().map_or_else(|| "value".to_owned(), |k| super::report::field_label(k))
            }
        }
    }
}

/// The settings sentence of a timed suite ([`Suite::settings`]'s default): `median of 3
/// rounds of 500 ms per case`.
pub fn timing_settings(rounds: usize, duration_ms: u64) -> String {
    let rounds = match rounds {
        1 => "1 round".to_owned(),
        n => format!("{n} rounds"),
    };
    format!("median of {rounds} of {duration_ms} ms per case")
}

/// A benchmark suite.
pub trait Suite {
    /// Exact suite name, e.g. `"w1"`; names the report files.
    fn name(&self) -> &'static str;
    /// One line, printed with the parameters.
    fn about(&self) -> &'static str;
    /// The variant the ratio column divides by.
    fn baseline(&self) -> &'static str;
    /// What the plot puts on the x axis.
    fn x_axis(&self) -> XAxis {
        XAxis::Threads
    }
    /// Whether the suite also runs oversubscribed thread counts (8, 16; full runs) when
    /// the user did not pass `--threads`; see [`Options::threads_for`].
    fn oversubscribe(&self) -> bool {
        false
    }
    /// The variants that bound the others rather than compete with them: the workload
    /// without what is measured (no lock at all), or without a cost the measured variants
    /// must pay (a lock per thread: no sharing). Each is left out of the other rows'
    /// `ratio_vs_best_other` and named, with what it leaves out, in the table's header.
    fn ceilings(&self) -> &'static [Ceiling] {
        &[]
    }
    /// What the suite's plots show, in words (their titles, and the report's heading of a
    /// suite without a seed figure): what one operation of its throughput is, or for a
    /// [`Measure::Extras`] suite its first field ([`Measure::quantity`] by default).
    fn quantity(&self) -> String {
        self.measure().quantity()
    }
    /// Extra fields the tables show as columns after the rates, as (field, header): the
    /// few that explain the rates. The text table shows none without them, the report's
    /// tables every extra field (the records keep them all either way).
    fn table_extras(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// What the records report: throughput (the default), or extra fields such as byte
    /// counts ([`Measure::Extras`]).
    fn measure(&self) -> Measure {
        Measure::Throughput
    }
    /// How one of its records was measured, in a sentence (the report's "Settings" line),
    /// given one record of the run (its rounds, duration and params). The default is the
    /// timing ([`timing_settings`]); a suite that counts instead of timing, or runs one
    /// scenario per round, says what it does.
    fn settings(&self, record: &super::record::Record) -> String {
        timing_settings(record.rounds, record.duration_ms)
    }
    /// The cases to measure.
    fn cases(&self, opts: &Options) -> Vec<Case>;
}
