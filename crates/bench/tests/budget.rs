//! Every quick case of every registered suite is bounded by work, not by wall time.
//!
//! Each suite's quick cases run once with a tiny work budget ([`BUDGET`] of the process's
//! CPU time per measurement). The harness counts what each measurement spent
//! ([`CaseWork`]); every case must stay within [`bound`] of the budget, and every case
//! over the budget must be reported cut. Nothing here reads a wall clock: a busy machine
//! makes the run slower, not the counts larger, with one exception: a case whose threads
//! spin while they wait (`server-oltp`'s 49 clients of the local-memory DSLR on 2 cores)
//! finishes the operations in flight when its budget runs out, and if a lock holder is
//! off the CPU then, the spinning waiters burn CPU time until it is back. So a suite with
//! a case over the bound runs a second time, and only a case over it both times fails: one
//! that ignores its budget overruns every time. A negative control shows the check can
//! fail: a case that spins past its budget without polling it is caught and cut.
//!
//! The tests share one process, whose CPU clock they read: they run one at a time
//! ([`SERIAL`]). The counting allocator is installed (as in the `rangelock` binary) so that
//! `memory` has cases. Suites that need `redis-server` or etcd run their other variants
//! without them; this binary says loudly what it could not cover (CI installs both).

mod support;

use std::sync::Mutex;
use std::time::Duration;

use rangelock_bench::alloc::CountingAlloc;
use rangelock_bench::harness::{
    run_suite, Case, CaseWork, Options, Sample, Suite, SuiteReport, WorkBudget, BUDGET_POLL,
};
use rangelock_bench::peers::redis::RedisServer;
use support::TempDir;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// One test at a time: both read the process's CPU clock.
static SERIAL: Mutex<()> = Mutex::new(());

/// The budget of every measurement here: far below what most quick cases would spend in
/// 50 ms, so nearly every case runs into it.
const BUDGET: Duration = Duration::from_millis(30);

/// What a case may spend past its budget, twice the budget plus 250 ms, which covers:
///
/// - the budget again, for undoing what the case built within it (releasing the ranges it
///   took costs about what taking them did; a lock whose insertions are O(held) pays as
///   much for its removals);
/// - the last step before a poll noticed the budget was spent: workers poll their stop flag
///   once per operation and the timing thread the clock every [`BUDGET_POLL`] (2 ms, on
///   each of 2 cores); setup loops poll every few dozen steps, and one step of `memory`'s
///   one-holder case on `segments` (a range over its whole domain: 2^22 counters) takes
///   tens of milliseconds;
/// - fixed teardown: joining up to 64 threads, stopping an in-process server, the cluster
///   suites' nodes.
fn bound(budget: Duration) -> Duration {
    2 * budget + Duration::from_millis(250).max(BUDGET_POLL)
}

/// The cases of `report` that spent more than [`bound`] of `budget`, and those over the
/// budget that were not reported cut.
fn unbounded(work: &[CaseWork], budget: Duration) -> Vec<String> {
    let mut bad = Vec::new();
    for w in work {
        if w.cpu > bound(budget) {
            bad.push(format!("{}: spent {:?}, bound {:?}", w.case, w.cpu, bound(budget)));
        }
        if w.cpu > budget && !w.cut {
            bad.push(format!("{}: spent {:?} over {budget:?} but was not cut", w.case, w.cpu));
        }
    }
    bad
}

fn opts(dir: &TempDir) -> Options {
    Options {
        rounds: 1,
        duration: Duration::from_millis(50),
        budget: Some(WorkBudget::cpu(BUDGET)),
        out: dir.0.clone(),
        ..Options::quick()
    }
}

#[test]
fn every_quick_case_of_every_suite_is_bounded_by_its_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // Loud when a peer is missing (a panic in CI, where both are installed).
    drop(RedisServer::start_or_skip("budget: the suites' redis variants"));
    drop(rangelock_cluster::etcd::local_etcd_or_skip("budget: the cluster suites"));
    let mut bad = Vec::new();
    let (mut cases, mut cut) = (0, 0);
    for suite in rangelock_bench::suites::all() {
        let run = || -> Option<SuiteReport> {
            let dir = TempDir::new(suite.name());
            match run_suite(suite.as_ref(), &opts(&dir)) {
                Ok(report) => Some(report),
                // `cluster-failover` without etcd (announced above).
                Err(e) => {
                    eprintln!("{}: not run: {e}", suite.name());
                    None
                }
            }
        };
        let Some(report) = run() else { continue };
        let (records, skipped) = (report.records.len(), report.skipped.len());
        assert_eq!(report.work.len(), records + skipped + report.cut.len());
        for w in &report.work {
            assert_eq!(w.measurements, 1, "{}", w.case);
            let named = report.cut.iter().any(|line| line.starts_with(&format!("{}: ", w.case)));
            assert_eq!(w.cut, named, "{}: {:?}", w.case, report.cut);
        }
        cases += report.work.len();
        cut += report.cut.len();
        let mut over = unbounded(&report.work, BUDGET);
        if !over.is_empty() {
            eprintln!("{}: over the bound, running it again: {over:?}", suite.name());
            let again = run().map_or_else(Vec::new, |r| unbounded(&r.work, BUDGET));
            let case = |line: &str| line.split(": spent").next().unwrap_or(line).to_owned();
            over.retain(|line| again.iter().any(|l| case(l) == case(line)));
        }
        bad.extend(over.into_iter().map(|b| format!("{}: {b}", suite.name())));
    }
    assert!(bad.is_empty(), "cases not bounded by their budget:\n{}", bad.join("\n"));
    // The budget did bite: most quick cases need more than 30 ms of CPU time.
    assert!(cases > 100 && cut > cases / 4, "{cut} of {cases} cases cut");
}

/// A suite with one case that spins for a fixed amount of CPU time, polling its budget or
/// not.
struct Spinner {
    polls: bool,
    spin: Duration,
}

impl Suite for Spinner {
    fn name(&self) -> &'static str {
        "spinner"
    }
    fn about(&self) -> &'static str {
        "spins for a fixed CPU time"
    }
    fn baseline(&self) -> &'static str {
        "spin"
    }
    fn cases(&self, _: &Options) -> Vec<Case> {
        let (polls, spin) = (self.polls, self.spin);
        vec![Case {
            variant: "spin".into(),
            threads: 1,
            params: serde_json::Map::new(),
            oversubscribed: false,
            run: Box::new(move |span| {
                let mine = rangelock_bench::harness::Budget::start(spin);
                let mut ops = 0;
                while !mine.exceeded() && (!polls || span.running()) {
                    ops += 1;
                }
                Sample { ops, elapsed: Duration::from_millis(1), ..Sample::default() }
            }),
        }]
    }
}

/// The negative control: a case that ignores its budget spends far more than the bound
/// and is caught (and cut); the same case polling its budget stays within the bound.
#[test]
fn a_case_that_ignores_its_budget_is_caught_and_cut() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = TempDir::new("spinner");
    let spin = bound(BUDGET) + Duration::from_millis(200);
    let rogue = run_suite(&Spinner { polls: false, spin }, &opts(&dir)).unwrap();
    assert!(rogue.records.is_empty() && rogue.cut.len() == 1, "{:?}", rogue.cut);
    assert!(rogue.table.contains("cut: spin x1 {}: round 1 spent"), "{}", rogue.table);
    assert!(rogue.table.contains("its budget is 30 ms per measurement"), "{}", rogue.table);
    let caught = unbounded(&rogue.work, BUDGET);
    assert_eq!(caught.len(), 1, "{caught:?}");
    let polite = run_suite(&Spinner { polls: true, spin }, &opts(&dir)).unwrap();
    assert!(polite.work[0].cut, "{:?}", polite.work);
    assert!(unbounded(&polite.work, BUDGET).is_empty(), "{:?}", polite.work);
    // Without a budget nothing is cut: the case spins its full time.
    let free = Options { budget: None, ..opts(&dir) };
    let full = run_suite(&Spinner { polls: true, spin: BUDGET * 2 }, &free).unwrap();
    assert!(full.cut.is_empty() && full.records.len() == 1 && full.work[0].cpu > BUDGET * 2);
}
