//! Options of one suite run (from the command line).

use std::path::PathBuf;
use std::time::Duration;

use super::span::Span;

/// How to run a suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Short runs and smaller parameter sweeps.
    pub quick: bool,
    /// Thread counts. Default `[1, 2]`, plus the oversubscribed `[8, 16]` for suites that ask
    /// while [`Options::oversubscribe`] is set (see [`Options::threads_for`]).
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
}

/// Thread counts every suite runs by default (this machine has 2 cores).
pub const DEFAULT_THREADS: [usize; 2] = [1, 2];
/// Thread counts oversubscribing the machine: a robustness view, never a scaling claim.
pub const OVERSUBSCRIBED_THREADS: [usize; 2] = [8, 16];
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
        }
    }

    /// The defaults of a quick run.
    pub fn quick() -> Self {
        Options { quick: true, rounds: 3, duration: Duration::from_millis(200), ..Options::full() }
    }

    /// The span of one measurement: [`Options::duration`] and [`Options::min_ops`].
    pub fn span(&self) -> Span {
        Span::new(self.duration, self.min_ops)
    }

    /// The thread counts of a suite: [`Options::threads`], followed by the oversubscribed
    /// counts [`OVERSUBSCRIBED_THREADS`] (those not already listed) when the suite asks
    /// (`suite_wants`) and [`Options::oversubscribe`] is set. Each entry says whether it is
    /// oversubscribed (more threads than available cores).
    pub fn threads_for(&self, suite_wants: bool) -> Vec<(usize, bool)> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut list = self.threads.clone();
        if suite_wants && self.oversubscribe {
            list.extend(OVERSUBSCRIBED_THREADS.iter().filter(|t| !self.threads.contains(t)));
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
        let opts = Options::quick();
        let all: Vec<usize> = opts.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(all, [1, 2, 8, 16]);
        let plain: Vec<usize> = opts.threads_for(false).into_iter().map(|(t, _)| t).collect();
        assert_eq!(plain, [1, 2]);
        let custom = Options { threads: vec![3, 8], ..Options::quick() };
        let more: Vec<usize> = custom.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(more, [3, 8, 16]);
        let exact = Options { threads: vec![3], oversubscribe: false, ..Options::quick() };
        let given: Vec<usize> = exact.threads_for(true).into_iter().map(|(t, _)| t).collect();
        assert_eq!(given, [3]);
        assert!(opts.threads_for(true).iter().any(|&(t, over)| t == 16 && over));
    }
}
