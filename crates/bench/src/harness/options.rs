//! Options of one suite run (from the command line).

use std::path::PathBuf;
use std::time::Duration;

use super::budget::WorkBudget;
use super::span::Span;

/// How to run a suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Short runs and smaller parameter sweeps.
    pub quick: bool,
    /// Thread counts. Default `[1, 2]`, plus the oversubscribed `[8, 16]` in full runs for
    /// suites that ask while [`Options::oversubscribe`] is set (see
    /// [`Options::threads_for`]; quick runs: `[16]`, for the suites whose claims read the
    /// most threads, see [`Options::threads_with_most`]).
    pub threads: Vec<usize>,
    /// Report directory (default `target/rangelock-report`).
    pub out: PathBuf,
    /// Interleaved rounds; the report keeps the median over rounds (default 5, quick 3).
    pub rounds: usize,
    /// Duration of one measurement (default 1 s, quick 200 ms).
    pub duration: Duration,
    /// Operations every worker thread completes before a measurement may end, however long
    /// that takes past [`Options::duration`] (default 0: the duration alone). For tiny runs
    /// on a busy machine, where a thread may get no CPU within the duration; see [`Span`].
    pub min_ops: u64,
    /// Whether suites that ask for it also run the oversubscribed counts `[8, 16]` (default
    /// true; the CLI clears it when `--threads` is given, so an explicit list is taken as is).
    pub oversubscribe: bool,
    /// The work budget of every measurement (default none, quick [`WorkBudget::QUICK`]): a
    /// measurement that spends more CPU time is cut (see [`WorkBudget`]).
    pub budget: Option<WorkBudget>,
}

/// Thread counts every suite runs by default (this machine has 2 cores).
pub const DEFAULT_THREADS: [usize; 2] = [1, 2];
/// Thread counts oversubscribing the machine: a robustness view, never a scaling claim.
pub const OVERSUBSCRIBED_THREADS: [usize; 2] = [8, 16];
/// The oversubscribed counts of a quick run, for the suites whose claims read the most
/// threads ([`Options::threads_with_most`]): the most only.
pub const QUICK_OVERSUBSCRIBED_THREADS: [usize; 1] = [16];
/// Default report directory.
pub const DEFAULT_OUT: &str = "target/rangelock-report";

impl Options {
    /// The defaults of a full run.
    pub fn full() -> Self {
        Options {
            quick: false,
            threads: DEFAULT_THREADS.to_vec(),
            out: PathBuf::from(DEFAULT_OUT),
            rounds: 5,
            duration: Duration::from_secs(1),
            min_ops: 0,
            oversubscribe: true,
            budget: None,
        }
    }

    /// The defaults of a quick run.
    pub fn quick() -> Self {
        Options {
            quick: true,
            rounds: 3,
            duration: Duration::from_millis(200),
            budget: Some(WorkBudget::QUICK),
            ..Options::full()
        }
    }

    /// The span of one measurement: [`Options::duration`] and [`Options::min_ops`], with no
    /// budget yet (the runner starts [`Options::budget`] for each measurement).
    pub fn span(&self) -> Span {
        Span::new(self.duration, self.min_ops)
    }

    /// The thread counts of a suite: [`Options::threads`], followed by the oversubscribed
    /// counts [`OVERSUBSCRIBED_THREADS`] (those not already listed) when the suite asks
    /// (`suite_wants`), [`Options::oversubscribe`] is set and the run is not quick (the
    /// oversubscribed rows are a robustness view no claim compares). Each entry says
    /// whether it is oversubscribed (more threads than available cores).
    pub fn threads_for(&self, suite_wants: bool) -> Vec<(usize, bool)> {
        self.threads_plus(if suite_wants && !self.quick { &OVERSUBSCRIBED_THREADS } else { &[] })
    }

    /// As [`Options::threads_for`]`(true)`, except that a quick run adds the most
    /// oversubscribed count ([`QUICK_OVERSUBSCRIBED_THREADS`]): for a suite whose claims
    /// read the most threads (`epvs-table`).
    pub fn threads_with_most(&self) -> Vec<(usize, bool)> {
        self.threads_plus(if self.quick {
            &QUICK_OVERSUBSCRIBED_THREADS
        } else {
            &OVERSUBSCRIBED_THREADS
        })
    }

    /// [`Options::threads`], then those of `extra` not listed yet when
    /// [`Options::oversubscribe`] is set, each with whether it oversubscribes the cores.
    fn threads_plus(&self, extra: &[usize]) -> Vec<(usize, bool)> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut list = self.threads.clone();
        if self.oversubscribe {
            list.extend(extra.iter().filter(|t| !self.threads.contains(t)));
        }
        list.into_iter().map(|t| (t, t > cores)).collect()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::full()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversubscribed_counts_only_extend_the_default_list() {
        let opts = Options::full();
        let all: Vec<usize> = opts.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(all, [1, 2, 8, 16]);
        let plain: Vec<usize> = opts.threads_for(false).into_iter().map(|(t, _)| t).collect();
        assert_eq!(plain, [1, 2]);
        let quick = Options::quick();
        let none: Vec<usize> = quick.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(none, [1, 2], "quick runs add none ...");
        let most: Vec<usize> = quick.threads_with_most().into_iter().map(|(t, _)| t).collect();
        assert_eq!(most, [1, 2, 16], "... but the most where a claim reads it");
        let full: Vec<usize> = opts.threads_with_most().into_iter().map(|(t, _)| t).collect();
        assert_eq!(full, [1, 2, 8, 16]);
        let custom = Options { threads: vec![3, 8], ..Options::full() };
        let more: Vec<usize> = custom.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(more, [3, 8, 16]);
        let exact = Options { threads: vec![3], oversubscribe: false, ..Options::full() };
        let given: Vec<usize> = exact.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(given, [3]);
        assert_eq!(exact.threads_with_most(), [(3, exact.threads_for(true)[0].1)]);
        assert!(opts.threads_for(true).iter().any(|&(t, over)| t == 16 && over));
    }
}
