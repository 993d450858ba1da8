//! The benchmark harness: suites, cases, measurement and reports.
//!
//! A [`Suite`] turns [`Options`] into [`Case`]s: one (variant, threads, params) point each,
//! with a closure that performs one measurement over a [`Span`] and returns a [`Sample`].
//! A span is [`Options::duration`], and, when [`Options::min_ops`] is set (tiny test runs
//! on a busy machine), as much longer as it takes every worker thread to complete that many
//! operations; the rate is operations over the elapsed time either way.
//!
//! A quick run gives every measurement a work budget ([`WorkBudget`], [`Options::budget`]):
//! CPU time of the process, which the span carries ([`Span::running`],
//! [`ThreadCtl::running`] turn false once it is spent). A measurement over it cuts its
//! case: no more rounds, left out of the records, named under the table
//! ([`SuiteReport::cut`]). Full runs have no budget.
//!
//! [`run_suite`] runs the cases *interleaved*: in each of [`Options::rounds`] rounds every
//! case is measured once, in registration order, so slow drifts of the machine (frequency,
//! other tenants, page cache) spread over all variants alike instead of biasing whichever
//! ran last. Per case it keeps the **median** over rounds of the throughput (with its
//! smallest and largest round, and the median of every `extra` field), pools the latency
//! samples of all rounds for the percentiles, and stamps every record with what the run
//! ran on and was built from ([`RunInfo`]).
//!
//! The report ([`report`]) is a table on stdout with ratios against the suite's baseline
//! variant and against the best *other* variant of the same (params, threads) group,
//! `<out>/<suite>.json` (an array of [`Record`]s) and `<out>/<suite>.svg` (ops/s against
//! threads or a parameter, one line per variant, one panel per params group).
//!
//! # Writing a suite
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use rangelock_bench::harness::{run_threads, Case, Options, Suite, ThreadResult};
//!
//! struct Counter;
//!
//! impl Suite for Counter {
//!     fn name(&self) -> &'static str { "counter" }
//!     fn about(&self) -> &'static str { "fetch_add on one shared counter" }
//!     fn baseline(&self) -> &'static str { "fetch-add" }
//!     fn cases(&self, opts: &Options) -> Vec<Case> {
//!         opts.threads_for(self.oversubscribe())
//!             .into_iter()
//!             .map(|(threads, oversubscribed)| {
//!                 let counter = Arc::new(AtomicU64::new(0));
//!                 Case {
//!                     variant: "fetch-add".into(),
//!                     threads,
//!                     params: serde_json::Map::new(),
//!                     oversubscribed,
//!                     run: Box::new(move |span| {
//!                         run_threads(threads, span, |_, ctl| {
//!                             let mut ops = 0;
//!                             while ctl.running() {
//!                                 counter.fetch_add(1, Ordering::Relaxed);
//!                                 ops += 1;
//!                             }
//!                             ThreadResult { ops, latencies_ns: Vec::new() }
//!                         })
//!                     }),
//!                 }
//!             })
//!             .collect()
//!     }
//! }
//!
//! let out = std::env::temp_dir().join(format!("rangelock-doc-{}", std::process::id()));
//! let opts = Options {
//!     rounds: 1,
//!     duration: std::time::Duration::from_millis(2),
//!     min_ops: 1, // every thread completes an operation, however busy the machine
//!     out: out.clone(),
//!     ..Options::quick()
//! };
//! let report = rangelock_bench::harness::run_suite(&Counter, &opts).unwrap();
//! assert!(report.records.iter().all(|r| r.ops_per_sec > 0.0));
//! std::fs::remove_dir_all(out).unwrap();
//! ```
//!
//! # Trade-offs
//!
//! Medians over a handful of rounds resist one-off outliers but hide bimodal behaviour;
//! the per-round values are not kept. Latency percentiles come from whatever samples a
//! suite records (the range-lock suites time one operation in 16 to keep the clock off
//! the hot path), so they describe sampled operations, not every operation.

mod budget;
mod case;
mod error;
pub mod hardware;
pub mod machine;
mod options;
mod progress;
mod record;
pub mod report;
mod rng;
mod run_info;
mod runner;
mod span;
pub mod stats;
mod threads;

pub use budget::{Budget, CpuClock, WorkBudget, BUDGET_POLL};
pub use case::{
    timing_settings, Case, Ceiling, Measure, Sample, Suite, XAxis, CUT, NO_LOCK, SKIPPED,
};
pub use error::BenchError;
pub use options::{
    Options, DEFAULT_OUT, DEFAULT_THREADS, OVERSUBSCRIBED_THREADS, QUICK_OVERSUBSCRIBED_THREADS,
};
pub use record::Record;
pub use rng::SplitMix64;
pub use run_info::{utc_date, RunInfo, BUILD_COMMIT, BUILD_RUSTC};
pub use runner::{run_suite, CaseWork, SuiteReport};
pub use span::Span;
pub use threads::{run_threads, run_threads_with, LatencySampler, ThreadCtl, ThreadResult};
