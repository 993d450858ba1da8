//! `aliasing-counts`: instructions and simulated L1 data-cache misses per `aliasing`
//! transaction, counted by valgrind's cachegrind (Fig. 5.5 of Concurrent Range Locking).
//!
//! Without hardware performance counters (a VM without PMU passthrough, where `perf`
//! reports `<not supported>`), cycles and real L1 misses cannot be read. Cachegrind instead
//! counts every executed instruction and simulates the caches, the same on every host.
//! Design:
//!
//! - `rangelock bench aliasing-txns --variant V --txns N` (hidden) runs exactly N
//!   transactions of the `aliasing` suite's variant V on one thread and exits
//!   ([`aliasing::run_transactions`]: the suite's own transaction code);
//! - each case of this suite runs that command under
//!   `valgrind --tool=cachegrind --cache-sim=yes` twice, with N1 < N2 transactions, and
//!   reads the totals of the `summary:` line of cachegrind's out file (event names from
//!   its `events:` line). Per transaction: `(I(N2) - I(N1)) / (N2 - N1)`, which cancels
//!   everything both runs share (process start, mapping and pre-faulting the 64 MiB area,
//!   the buffers' setup, exit);
//! - `instructions_per_txn` is `Ir`; `l1d_misses_per_txn` is `D1mr + D1mw` (read and write
//!   misses of the simulated L1 data cache, pinned at [`D1`] = 32 KiB, 8-way, 64-byte lines,
//!   the L1d of the Ryzen 9 7950X Concurrent Range Locking measured on, so the counts do not depend on the host).
//!
//! Every record also says whether hardware counters work here, measured, not assumed:
//! `hardware_counters` (1 or 0) from [`hw_counters::probe`] (`perf_event_open` of the
//! hardware instructions counter; no `perf` binary needed), and when 0
//! `hardware_counters_reason`, the kernel's refusal. That is the reason the thesis's
//! per-thread-count cycles and L1 misses are not testable on a machine that reads 0.
//!
//! One thread only: cachegrind runs a program's threads one at a time, so a multi-threaded
//! run would show no contention; Fig. 5.5's question (do the counts grow with threads?)
//! needs hardware counters. Valgrind executes `rep movsb` (which glibc's `memcpy` uses for
//! large copies) one iteration per counted instruction, so the two 1 MiB copies count as
//! about 2.1 M instructions per transaction; the lock's share is a few hundred.
//!
//! The command: `RANGELOCK_BIN` if set, else this process's executable when its file name
//! is `rangelock` (the suite runs inside the CLI); otherwise (e.g. in `cargo test` of this
//! crate) every case is skipped with the reason, as it is without `valgrind` on the `PATH`.
//! `RANGELOCK_ALIASING_TXNS=N1,N2` overrides the transaction counts (default 20,60; quick
//! runs 5,15). The counts do not depend on time: each case is measured once, in the first
//! round; later rounds repeat its numbers. A case's two runs go side by side (cachegrind
//! simulates the caches, so its counts do not depend on what else runs). Cost on this
//! 2-core VM (release build): about 2.5-3 s per cachegrind run; in `cargo test` nothing runs under valgrind but the CLI
//! test's one variant at 2,6 transactions (about 3 s).
//!
//! One variant by hand:
//!
//! ```text
//! valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --cachegrind-out-file=cg.out \
//!   target/release/rangelock bench aliasing-txns --variant segments --txns 20
//! grep -E '^(events|summary):' cg.out
//! ```
//!
//! One run (`rangelock bench aliasing-counts --rounds 1`, release build, valgrind 3.19, an
//! Intel Xeon 2-vCPU VM) gave 2 100 431 (`rangelock`) to 2 101 041 (`song-skiplist`)
//! instructions and 66 075 to 66 108 simulated L1d misses per transaction: the copies set
//! both counts (2 MiB read and 2 MiB written, 65 536 lines each missing once), and the
//! variants differ by a few hundred instructions and a few dozen misses, under 0.05 %.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{aliasing, common, hw_counters};
use crate::harness::{Case, Measure, Options, Sample, Suite};

/// The simulated L1 data cache: size, associativity, line size (cachegrind's `--D1`).
pub const D1: &str = "32768,8,64";
/// Transactions of the two runs of a full run (report).
pub const TXNS: (u64, u64) = (20, 60);
/// Transactions of the two runs of a quick run.
pub const QUICK_TXNS: (u64, u64) = (5, 15);
/// The record fields, in table order (the plot shows the first).
pub const FIELDS: &[&str] = &["instructions_per_txn", "l1d_misses_per_txn"];

/// The `aliasing-counts` suite.
#[derive(Clone, Copy, Debug, Default)]
pub struct AliasingCounts;

impl Suite for AliasingCounts {
    fn name(&self) -> &'static str {
        "aliasing-counts"
    }

    fn about(&self) -> &'static str {
        "aliasing's transaction at 1 thread under valgrind's cachegrind: instructions and \
         simulated L1d misses (32 KiB, 8-way) per transaction, from two runs of N1 < N2 \
         transactions; not a timing (no hardware counters here: no cycles, no thread scaling)"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn measure(&self) -> Measure {
        Measure::Extras(FIELDS)
    }

    fn settings(&self, record: &crate::harness::Record) -> String {
        let n = |k: &str| record.params.get(k).and_then(Value::as_u64);
        let runs = match (n("txns_small"), n("txns_large")) {
            (Some(n1), Some(n2)) if n2 > n1 => format!(
                "two runs of {n1} and {n2} transactions on one thread, per transaction the \
                 difference of their totals divided by {}",
                n2 - n1
            ),
            _ => "two runs of N1 < N2 transactions on one thread, per transaction the \
                  difference of their totals divided by N2 - N1"
                .to_owned(),
        };
        format!(
            "cachegrind counts (simulated caches) from {runs}; counted once per case in the \
             first round (later rounds repeat the count): a count, not a timing"
        )
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let (n1, n2) = txns(opts.quick);
        let tool = tool();
        let counters = hw_counters::probe();
        aliasing::variant_names()
            .into_iter()
            .filter(|name| common::selected(name))
            .map(|name| {
                let (tool, counters) = (tool.clone(), counters.clone());
                let mut first: Option<Sample> = None;
                Case {
                    variant: name.to_owned(),
                    threads: 1,
                    params: common::params([
                        ("txns_small", n1.into()),
                        ("txns_large", n2.into()),
                        ("d1_cache", D1.into()),
                        ("blob_bytes", aliasing::BLOB.into()),
                    ]),
                    oversubscribed: false,
                    // Counts do not depend on time: measured once, repeated in later rounds.
                    run: Box::new(move |_| {
                        first
                            .get_or_insert_with(|| {
                                let mut sample = measure(tool.as_ref(), name, n1, n2);
                                note_counters(&mut sample, &counters);
                                sample
                            })
                            .clone()
                    }),
                }
            })
            .collect()
    }
}

/// Adds the [`hw_counters`] fields to a sample that was taken.
fn note_counters(sample: &mut Sample, counters: &Result<(), String>) {
    if sample.skip_reason().is_some() {
        return;
    }
    sample.extra.insert(hw_counters::FIELD.to_owned(), Value::from(u8::from(counters.is_ok())));
    if let Err(reason) = counters {
        sample.extra.insert(hw_counters::REASON_FIELD.to_owned(), Value::from(reason.clone()));
    }
}

/// N1 and N2: `RANGELOCK_ALIASING_TXNS=N1,N2` when set and valid (N1 < N2), else the
/// defaults.
fn txns(quick: bool) -> (u64, u64) {
    let parsed = std::env::var("RANGELOCK_ALIASING_TXNS").ok().and_then(|v| {
        let (a, b) = v.split_once(',')?;
        let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (a < b).then_some((a, b))
    });
    parsed.unwrap_or(if quick { QUICK_TXNS } else { TXNS })
}

/// The `rangelock` binary and `valgrind`, or why the suite cannot count.
fn tool() -> Result<PathBuf, String> {
    let bin = match std::env::var_os("RANGELOCK_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => {
            let exe = std::env::current_exe().map_err(|e| format!("no current executable: {e}"))?;
            if exe.file_name().is_some_and(|n| n == "rangelock") {
                exe
            } else {
                return Err(format!(
                    "needs the rangelock binary: set RANGELOCK_BIN (this process is {})",
                    exe.display()
                ));
            }
        }
    };
    if !bin.is_file() {
        return Err(format!("RANGELOCK_BIN {} is not a file", bin.display()));
    }
    match Command::new("valgrind").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(bin),
        Ok(o) => Err(format!("valgrind --version failed ({})", o.status)),
        Err(e) => Err(format!("valgrind not found ({e}); install valgrind to count")),
    }
}

/// One case: two cachegrind runs of `variant`, the per-transaction differences.
fn measure(tool: Result<&PathBuf, &String>, variant: &str, n1: u64, n2: u64) -> Sample {
    let bin = match tool {
        Ok(bin) => bin,
        Err(reason) => return Sample::skipped(reason.clone()),
    };
    // The two runs side by side (the counts are simulated: they do not depend on what
    // else runs), which halves the wait on 2 cores.
    let (small, large) = std::thread::scope(|s| {
        let small = s.spawn(|| cachegrind(bin, variant, n1));
        let large = cachegrind(bin, variant, n2);
        (small.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), large)
    });
    let counts = small.and_then(|small| per_txn(&small, &large?, n2 - n1));
    match counts {
        Ok(fields) => {
            let mut sample = Sample::default();
            for (key, value) in fields {
                let value = serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number);
                sample.extra.insert(key.to_owned(), value);
            }
            sample
        }
        Err(e) => Sample::skipped(e.to_string()),
    }
}

/// Why a count could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// Valgrind could not be started.
    #[error("cannot run valgrind: {0}")]
    Spawn(#[source] std::io::Error),
    /// Valgrind (or the program under it) failed.
    #[error("cachegrind of {variant} x{txns} failed ({status}): {stderr}")]
    Failed {
        /// The variant.
        variant: String,
        /// Transactions asked for.
        txns: u64,
        /// Valgrind's exit status.
        status: std::process::ExitStatus,
        /// The end of its stderr.
        stderr: String,
    },
    /// The out file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The out file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The out file has no `events:` or `summary:` line, or they do not match.
    #[error("cachegrind out file without matching events: and summary: lines")]
    NoSummary,
    /// An event the suite needs is missing from the out file.
    #[error("cachegrind counted no {0} (was --cache-sim=yes given?)")]
    MissingEvent(&'static str),
    /// The larger run counted no more than the smaller one.
    #[error("{event}: {large} events for N2 transactions, not more than {small} for N1")]
    NotIncreasing {
        /// The event.
        event: &'static str,
        /// Total of the smaller run.
        small: u64,
        /// Total of the larger run.
        large: u64,
    },
}

/// Runs `bin bench aliasing-txns --variant variant --txns txns` under cachegrind and
/// returns the totals of its out file, by event name.
pub fn cachegrind(bin: &Path, variant: &str, txns: u64) -> Result<Vec<(String, u64)>, CountError> {
    let out = std::env::temp_dir()
        .join(format!("rangelock-cachegrind-{}-{variant}-{txns}.out", std::process::id()));
    let o = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .arg(format!("--D1={D1}"))
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .arg(bin)
        .args(["bench", "aliasing-txns", "--variant", variant, "--txns"])
        .arg(txns.to_string())
        .output()
        .map_err(CountError::Spawn)?;
    if !o.status.success() {
        let _ = std::fs::remove_file(&out);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(CountError::Failed {
            variant: variant.to_owned(),
            txns,
            status: o.status,
            stderr: tail.join(" / "),
        });
    }
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    let text = text.map_err(|source| CountError::Read { path: out, source })?;
    totals(&text)
}

/// The totals of a cachegrind out file: the `summary:` line's numbers named by the
/// `events:` line.
pub fn totals(text: &str) -> Result<Vec<(String, u64)>, CountError> {
    let line =
        |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::split_whitespace);
    let (Some(events), Some(summary)) = (line("events:"), line("summary:")) else {
        return Err(CountError::NoSummary);
    };
    let events: Vec<String> = events.map(str::to_owned).collect();
    let values: Vec<u64> =
        summary.map(str::parse).collect::<Result<_, _>>().map_err(|_| CountError::NoSummary)?;
    if events.len() != values.len() || events.is_empty() {
        return Err(CountError::NoSummary);
    }
    Ok(events.into_iter().zip(values).collect())
}

/// `instructions_per_txn` and `l1d_misses_per_txn` from the totals of the N1 and N2 runs,
/// `txns` = N2 - N1 apart.
pub fn per_txn(
    small: &[(String, u64)],
    large: &[(String, u64)],
    txns: u64,
) -> Result<[(&'static str, f64); 2], CountError> {
    fn get(totals: &[(String, u64)], event: &'static str) -> Result<u64, CountError> {
        totals
            .iter()
            .find(|(e, _)| e == event)
            .map(|(_, v)| *v)
            .ok_or(CountError::MissingEvent(event))
    }
    let mut sums = [0u64; 2];
    for (i, group) in [&["Ir"][..], &["D1mr", "D1mw"]].into_iter().enumerate() {
        let (mut s, mut l) = (0, 0);
        for &event in group {
            s += get(small, event)?;
            l += get(large, event)?;
        }
        if l <= s {
            return Err(CountError::NotIncreasing { event: group[0], small: s, large: l });
        }
        sums[i] = l - s;
    }
    let per = |d: u64| d as f64 / txns as f64;
    Ok([(FIELDS[0], per(sums[0])), (FIELDS[1], per(sums[1]))])
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "desc: I1 cache: 32768 B, 64 B, 8-way associative\n\
                       cmd: rangelock bench aliasing-txns\n\
                       events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\n\
                       fl=x.rs\n\
                       fn=main\n\
                       1 2 0 0 0 0 0 0 0 0\n\
                       summary: 1000 5 5 400 30 3 300 20 2\n";

    #[test]
    fn totals_are_named_by_the_events_line() {
        let t = totals(OUT).unwrap();
        assert_eq!(t.len(), 9);
        assert_eq!(t[0], ("Ir".to_owned(), 1000));
        assert_eq!(t[4], ("D1mr".to_owned(), 30));
        assert_eq!(t[7], ("D1mw".to_owned(), 20));
        assert!(matches!(totals("events: Ir\n"), Err(CountError::NoSummary)));
        assert!(matches!(totals("events: Ir Dr\nsummary: 1\n"), Err(CountError::NoSummary)));
    }

    #[test]
    fn per_transaction_counts_are_differences_over_the_extra_transactions() {
        let small = totals(OUT).unwrap();
        let large = totals(
            &OUT.replace("summary: 1000", "summary: 5000").replace(" 30 3 300 20", " 130 3 300 60"),
        )
        .unwrap();
        let [(i, ir), (m, miss)] = per_txn(&small, &large, 40).unwrap();
        assert_eq!((i, m), ("instructions_per_txn", "l1d_misses_per_txn"));
        assert_eq!(ir, 100.0);
        assert_eq!(miss, 3.5); // (100 read + 40 write misses) / 40
        assert!(matches!(
            per_txn(&large, &small, 40),
            Err(CountError::NotIncreasing { event: "Ir", .. })
        ));
        let no_cache = |ir| vec![("Ir".to_owned(), ir)];
        assert!(matches!(
            per_txn(&no_cache(1), &no_cache(2), 1),
            Err(CountError::MissingEvent("D1mr"))
        ));
    }

    /// A sample taken says whether the counters work (with the reason when not); a
    /// skipped one stays as it was.
    #[test]
    fn samples_carry_the_hardware_counter_probe() {
        let mut taken = Sample::default();
        note_counters(&mut taken, &Err("no PMU".to_owned()));
        assert_eq!(taken.extra[hw_counters::FIELD], 0);
        assert_eq!(taken.extra[hw_counters::REASON_FIELD], "no PMU");
        let mut works = Sample::default();
        note_counters(&mut works, &Ok(()));
        assert_eq!(works.extra[hw_counters::FIELD], 1);
        assert!(!works.extra.contains_key(hw_counters::REASON_FIELD));
        let mut skipped = Sample::skipped("no valgrind");
        note_counters(&mut skipped, &Ok(()));
        assert!(!skipped.extra.contains_key(hw_counters::FIELD));
    }

    #[test]
    fn outside_the_cli_every_case_is_skipped_with_the_reason() {
        if std::env::var_os("RANGELOCK_BIN").is_some() {
            return; // the caller asked for real counts
        }
        let mut cases = AliasingCounts.cases(&Options::quick());
        assert_eq!(
            cases.len(),
            aliasing::variant_names().iter().filter(|v| common::selected(v)).count()
        );
        for case in &mut cases {
            let sample = (case.run)(Options::quick().span());
            let reason = sample.skip_reason().expect("skipped");
            assert!(reason.contains("RANGELOCK_BIN") || reason.contains("valgrind"), "{reason}");
        }
    }
}
