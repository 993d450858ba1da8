//! The benchmark harness: suites, cases, measurement and reports.
//!
//! A [`Suite`] turns [`Options`] into [`Case`]s: one (variant, threads, params) point each,
//! with a closure that performs one measurement of about [`Options::duration`] and returns
//! a [`Sample`]. [`run_suite`] runs the cases *interleaved*: in each of
//! [`Options::rounds`] rounds every case is measured once, in registration order, so slow
//! drifts of the machine (frequency, other tenants, page cache) spread over all variants
//! alike instead of biasing whichever ran last. Per case it keeps the **median** over
//! rounds of the throughput (and of every `extra` field) and pools the latency samples of
//! all rounds for the percentiles.
//!
//! The report ([`report`]) is a table on stdout with ratios against the suite's baseline
//! variant and against the best *other* variant of the same (params, threads) group,
//! `<out>/<suite>.json` (an array of [`Record`]s) and `<out>/<suite>.svg` (ops/s against
//! threads or a parameter, one line per variant, one panel per params group).
//!
//! # Trade-offs
//!
//! Medians over a handful of rounds resist one-off outliers but hide bimodal behaviour;
//! the per-round values are not kept. Latency percentiles come from whatever samples a
//! suite records (the range-lock suites time one operation in 16 to keep the clock off
//! the hot path), so they describe sampled operations, not every operation.

mod case;
mod error;
mod options;
mod progress;
mod record;
pub mod report;
mod rng;
mod runner;
pub mod stats;
mod threads;

pub use case::{Case, Sample, Suite, XAxis, SKIPPED};
pub use error::BenchError;
pub use options::Options;
pub use record::Record;
pub use rng::SplitMix64;
pub use runner::{run_suite, SuiteReport};
pub use threads::{run_threads, run_threads_with, LatencySampler, ThreadCtl, ThreadResult};
