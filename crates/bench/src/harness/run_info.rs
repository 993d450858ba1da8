//! What a run ran on: the machine block of every record ([`RunInfo`]).
//!
//! A number means little without the machine, the kernel, the compiler and the commit it
//! came from, and a report regenerated elsewhere must still say where its records were
//! measured. So every [`Record`](super::Record) carries the block of the run that measured
//! it, and the report shows the blocks of its records, never those of the machine that
//! renders it. The compiler and the commit are those the binary was *built* with
//! (`crates/bench/build.rs`): a run measures the code it was compiled from, not whatever
//! the work tree holds when it runs.
//!
//! Beside the model name the block carries what decides the price of a cache line: the
//! clock, the caches with their sharing, SMT and whether the CPUs are a hypervisor's vCPUs
//! ([`hardware`](super::hardware) says where each comes from). Those fields came later and
//! default to empty, so older records still load (their lines read "unknown").

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::hardware::{self, Cache, Hardware};
use super::machine;

/// Where and with what a run was measured (the `machine` object of a record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Processor model name (`/proc/cpuinfo`), or `"unknown"`.
    pub cpu: String,
    /// `cpu MHz` of the first processor in `/proc/cpuinfo` at the start of the run (see
    /// [`hardware`]); `None` where it does not say (or in records older than the field).
    #[serde(default)]
    pub cpu_mhz: Option<f64>,
    /// CPUs this process could run on.
    pub cores: usize,
    /// Hardware threads per core (SMT siblings); `None`: unknown.
    #[serde(default)]
    pub threads_per_core: Option<usize>,
    /// CPU 0's caches (empty: unknown).
    #[serde(default)]
    pub caches: Vec<Cache>,
    /// `VM (KVM): <evidence>`, `bare metal: <evidence>` or `unknown`
    /// ([`hardware::virtualization`]); `None` in records older than the field.
    #[serde(default)]
    pub virtualization: Option<String>,
    /// Memory of the machine in GiB (`/proc/meminfo` MemTotal, one decimal), or `None`.
    pub memory_gib: Option<f64>,
    /// Kernel release (`uname -r`), or `"unknown"`.
    pub kernel: String,
    /// `rustc --version` of the compiler the binary was built with.
    pub rustc: String,
    /// Short commit hash the binary was built from, `-dirty` when the tree had changes, or
    /// `"unknown"` (built outside git).
    pub commit: String,
    /// Day of the run, UTC, `YYYY-MM-DD`.
    pub date: String,
}

/// The compiler the binary was built with (from `build.rs`).
pub const BUILD_RUSTC: &str = env!("RANGELOCK_BUILD_RUSTC");
/// The commit the binary was built from (from `build.rs`).
pub const BUILD_COMMIT: &str = env!("RANGELOCK_BUILD_COMMIT");

impl RunInfo {
    /// The block of this process: this machine, the build's compiler and commit, today.
    pub fn current() -> RunInfo {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let hw = Hardware::current();
        RunInfo {
            cpu: machine::cpu_model().unwrap_or_else(|| "unknown".to_owned()),
            cpu_mhz: hw.cpu_mhz,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            threads_per_core: hw.threads_per_core,
            caches: hw.caches,
            virtualization: Some(hw.virtualization),
            memory_gib: read("/proc/meminfo").as_deref().and_then(mem_total_gib),
            kernel: read("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "unknown".to_owned()),
            rustc: BUILD_RUSTC.to_owned(),
            commit: BUILD_COMMIT.to_owned(),
            date: utc_date(SystemTime::now()),
        }
    }

    /// The block as `key: value` lines, in a fixed order (what the report and the table
    /// print).
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let unknown = || "unknown".to_owned();
        vec![
            ("cpu", self.cpu.clone()),
            ("clock", self.clock(self.cpu_mhz.map(|m| (m, m)))),
            ("cores", self.cores.to_string()),
            (
                "smt",
                match self.threads_per_core {
                    None => unknown(),
                    Some(1) => "off (1 thread per core)".to_owned(),
                    Some(n) => format!("on ({n} threads per core)"),
                },
            ),
            (
                "caches",
                if self.caches.is_empty() {
                    unknown()
                } else {
                    self.caches.iter().map(Cache::describe).collect::<Vec<_>>().join(", ")
                },
            ),
            ("memory", self.memory_gib.map_or_else(unknown, |g| format!("{g:.1} GiB"))),
            ("virtualization", self.virtualization.clone().unwrap_or_else(unknown)),
            ("kernel", self.kernel.clone()),
            ("rustc", self.rustc.clone()),
            ("commit", self.commit.clone()),
            ("date", self.date.clone()),
        ]
    }
}

impl RunInfo {
    /// The `clock` line for the smallest and largest `cpu MHz` of the runs of one machine
    /// (`None`: not known): `2445 MHz (/proc/cpuinfo cpu MHz at the run's start)`, a range
    /// when the runs read different values, and the model name's nominal clock where it has
    /// one ([`hardware::nominal_ghz`]).
    pub fn clock(&self, mhz: Option<(f64, f64)>) -> String {
        let nominal = hardware::nominal_ghz(&self.cpu);
        let measured = match mhz {
            Some((lo, hi)) if (hi - lo).abs() >= 0.5 => {
                format!("{lo:.0}–{hi:.0} MHz (/proc/cpuinfo cpu MHz at the start of each run)")
            }
            Some((lo, _)) => format!("{lo:.0} MHz (/proc/cpuinfo cpu MHz at the run's start)"),
            None => String::new(),
        };
        match (measured.is_empty(), nominal) {
            (false, Some(g)) => format!("{measured}; the model name says {g:.2} GHz"),
            (false, None) => measured,
            (true, Some(g)) => format!("{g:.2} GHz (nominal, from the model name)"),
            (true, None) => "unknown".to_owned(),
        }
    }
}

impl fmt::Display for RunInfo {
    /// One line: `cpu, clock, N CPUs available, M GiB, VM (...), kernel K, rustc R, commit C,
    /// date D` (clock and virtualisation where known).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.cpu)?;
        if let Some(m) = self.cpu_mhz {
            write!(f, " at {m:.0} MHz")?;
        }
        write!(f, ", {} CPUs available", self.cores)?;
        if let Some(g) = self.memory_gib {
            write!(f, ", {g:.1} GiB")?;
        }
        if let Some(v) = &self.virtualization {
            // The verdict without its evidence: `VM (KVM)`, `bare metal`.
            write!(f, ", {}", v.split(':').next().unwrap_or(v))?;
        }
        write!(
            f,
            ", kernel {}, {}, commit {}, {} (UTC)",
            self.kernel, self.rustc, self.commit, self.date
        )
    }
}

/// MemTotal of the text of `/proc/meminfo`, in GiB rounded to one decimal.
fn mem_total_gib(meminfo: &str) -> Option<f64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let kib: f64 = words.next()?.parse().ok()?;
    if words.next() != Some("kB") {
        return None;
    }
    Some((kib / (1024.0 * 1024.0) * 10.0).round() / 10.0)
}

/// `t` as a UTC calendar date, `YYYY-MM-DD` (the epoch's date before 1970).
pub fn utc_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 as (year, month, day) of the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn dates_are_utc_calendar_days() {
        let at = |secs| utc_date(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01");
        assert_eq!(at(86_399), "1970-01-01");
        assert_eq!(at(951_782_400), "2000-02-29"); // a leap day of a year divisible by 400
        assert_eq!(at(951_868_800), "2000-03-01");
        assert_eq!(at(1_709_251_199), "2024-02-29");
        assert_eq!(at(1_735_689_600), "2025-01-01");
        assert_eq!(at(4_107_542_400), "2100-03-01"); // 2100 is not a leap year
    }

    #[test]
    fn mem_total_is_read_in_gib() {
        let info = "MemTotal:        8131236 kB\nMemFree:          123456 kB\n";
        assert_eq!(mem_total_gib(info), Some(7.8));
        assert_eq!(mem_total_gib("MemFree: 1 kB\n"), None);
    }

    fn block() -> RunInfo {
        RunInfo {
            cpu: "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz".into(),
            cpu_mhz: Some(2394.6),
            cores: 2,
            threads_per_core: Some(2),
            caches: vec![
                Cache { level: 1, kind: "Data".into(), size_kib: 32, shared_by: 2 },
                Cache { level: 3, kind: "Unified".into(), size_kib: 35840, shared_by: 28 },
            ],
            virtualization: Some("bare metal: no hypervisor flag".into()),
            memory_gib: Some(7.8),
            kernel: "6.1.0".into(),
            rustc: "rustc 1.99.0".into(),
            commit: "abc1234".into(),
            date: "2031-05-17".into(),
        }
    }

    /// The lines give the clock (with the model's nominal one), SMT, the caches with their
    /// sharing and the virtualisation verdict.
    #[test]
    fn the_block_shows_clock_caches_smt_and_virtualisation() {
        let lines: std::collections::BTreeMap<_, _> = block().lines().into_iter().collect();
        assert_eq!(
            lines["clock"],
            "2395 MHz (/proc/cpuinfo cpu MHz at the run's start); the model name says 2.40 GHz"
        );
        assert_eq!(lines["smt"], "on (2 threads per core)");
        assert_eq!(lines["caches"], "L1d 32 KiB (shared by 2 CPUs), L3 35 MiB (shared by 28 CPUs)");
        assert_eq!(lines["virtualization"], "bare metal: no hypervisor flag");
        let range = block().clock(Some((1200.0, 3400.0)));
        assert!(range.starts_with("1200–3400 MHz (/proc/cpuinfo cpu MHz at the start of each"));
        let text = block().to_string();
        assert!(text.starts_with("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz at 2395 MHz, 2 CPUs"));
        assert!(text.contains(", bare metal, kernel"), "{text}");
    }

    /// A block written before the hardware fields loads; its lines say "unknown".
    #[test]
    fn an_older_block_loads_and_says_unknown() {
        let mut value = serde_json::to_value(block()).unwrap();
        let object = value.as_object_mut().unwrap();
        for k in ["cpu_mhz", "threads_per_core", "caches", "virtualization"] {
            assert!(object.remove(k).is_some(), "{k}");
        }
        object.insert("cpu".into(), "Intel(R) Xeon(R) Processor".into());
        let old: RunInfo = serde_json::from_value(value).unwrap();
        assert!(old.caches.is_empty() && old.cpu_mhz.is_none());
        for (k, v) in old.lines() {
            if ["clock", "smt", "caches", "virtualization"].contains(&k) {
                assert_eq!(v, "unknown", "{k}");
            }
        }
    }

    #[test]
    fn the_current_block_names_the_build() {
        let info = RunInfo::current();
        assert!(info.cores >= 1);
        assert!(info.rustc.starts_with("rustc ") || info.rustc == "unknown", "{}", info.rustc);
        assert!(!info.commit.is_empty());
        assert_eq!(info.date.len(), 10, "{}", info.date);
        let text = serde_json::to_string(&info).unwrap();
        assert_eq!(serde_json::from_str::<RunInfo>(&text).unwrap(), info);
    }
}
