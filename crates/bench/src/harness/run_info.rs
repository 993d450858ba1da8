//! What a run ran on: the machine block of every record ([`RunInfo`]).
//!
//! A number means little without the machine, the kernel, the compiler and the commit it
//! came from, and a report regenerated elsewhere must still say where its records were
//! measured. So every [`Record`](super::Record) carries the block of the run that measured
//! it, and the report shows the blocks of its records, never those of the machine that
//! renders it. The compiler and the commit are those the binary was *built* with
//! (`crates/bench/build.rs`): a run measures the code it was compiled from, not whatever
//! the work tree holds when it runs.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::machine;

/// Where and with what a run was measured (the `machine` object of a record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Processor model name (`/proc/cpuinfo`), or `"unknown"`.
    pub cpu: String,
    /// CPUs this process could run on.
    pub cores: usize,
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
        RunInfo {
            cpu: machine::cpu_model().unwrap_or_else(|| "unknown".to_owned()),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
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
        vec![
            ("cpu", self.cpu.clone()),
            ("cores", self.cores.to_string()),
            (
                "memory",
                self.memory_gib.map_or_else(|| "unknown".to_owned(), |g| format!("{g:.1} GiB")),
            ),
            ("kernel", self.kernel.clone()),
            ("rustc", self.rustc.clone()),
            ("commit", self.commit.clone()),
            ("date", self.date.clone()),
        ]
    }
}

impl fmt::Display for RunInfo {
    /// One line: `cpu, N CPUs available, M GiB, kernel K, rustc R, commit C, date D`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {} CPUs available", self.cpu, self.cores)?;
        if let Some(g) = self.memory_gib {
            write!(f, ", {g:.1} GiB")?;
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
