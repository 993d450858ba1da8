//! The `process_*` series every Prometheus client library exports (open and maximum file
//! descriptors, resident and virtual memory, CPU seconds, start time), read from
//! `/proc/self` at each scrape; Linux only (elsewhere the series are left out).
//!
//! Why by hand: `prometheus-client` has no process collector, and the `procfs` crate
//! (what the `prometheus` crate's collector uses) would add a large dependency tree for
//! six numbers from two files, a directory listing and `getrlimit`. The names, types and
//! units are those of the Prometheus client libraries, so existing dashboards and alerts
//! (`process_open_fds / process_max_fds > 0.8`) work unchanged.

use std::io;

/// One reading of the process's resources.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ProcessStats {
    /// `process_cpu_seconds_total`: user and system CPU time.
    pub(crate) cpu_seconds: f64,
    /// `process_open_fds`.
    pub(crate) open_fds: u64,
    /// `process_max_fds`: the soft `RLIMIT_NOFILE`.
    pub(crate) max_fds: u64,
    /// `process_virtual_memory_bytes`.
    pub(crate) virtual_memory_bytes: u64,
    /// `process_resident_memory_bytes`.
    pub(crate) resident_memory_bytes: u64,
    /// `process_start_time_seconds`: since the Unix epoch.
    pub(crate) start_time_seconds: f64,
}

impl ProcessStats {
    /// Reads this process's resources, or `None` where `/proc` is not there.
    pub(crate) fn read() -> Option<ProcessStats> {
        Self::try_read().ok()
    }

    fn try_read() -> io::Result<ProcessStats> {
        let stat = std::fs::read_to_string("/proc/self/stat")?;
        let boot = std::fs::read_to_string("/proc/stat")?;
        let open_fds = std::fs::read_dir("/proc/self/fd")?.count() as u64;
        // SAFETY: sysconf reads a constant of the system; no memory is passed.
        let (ticks, page) =
            unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_PAGESIZE)) };
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `limit` is a valid, writable rlimit for the call to fill.
        let max_fds = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
            0 => limit.rlim_cur,
            _ => return Err(io::Error::last_os_error()),
        };
        parse(&stat, &boot, ticks as f64, page as u64, open_fds, max_fds)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc format"))
    }
}

/// Parses `/proc/self/stat` (`proc(5)`: fields after the command name in parentheses,
/// which may itself hold spaces and parentheses) and `btime` of `/proc/stat`.
fn parse(
    stat: &str,
    proc_stat: &str,
    ticks_per_second: f64,
    page_size: u64,
    open_fds: u64,
    max_fds: u64,
) -> Option<ProcessStats> {
    // Field 3 (state) is the first after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // proc(5) numbers fields from 1: utime 14, stime 15, starttime 22, vsize 23, rss 24;
    // `f[0]` is field 3.
    let field = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    let (utime, stime, start, vsize, rss) =
        (field(14)?, field(15)?, field(22)?, field(23)?, field(24)?);
    let btime: u64 =
        proc_stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    Some(ProcessStats {
        cpu_seconds: (utime + stime) as f64 / ticks_per_second,
        open_fds,
        max_fds,
        virtual_memory_bytes: vsize,
        resident_memory_bytes: rss * page_size,
        start_time_seconds: btime as f64 + start as f64 / ticks_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_a_hostile_name_parses() {
        // The command name holds ") (" and spaces: only the last ')' ends it.
        let stat = "4242 (rangelock) x (y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 \
                    5 0 12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 \
                    0 0 0 0 0";
        let s = parse(stat, "cpu 1 2 3\nbtime 1700000000\n", 100.0, 4096, 7, 1024).unwrap();
        assert_eq!(s.cpu_seconds, 3.0);
        assert_eq!(s.virtual_memory_bytes, 104_857_600);
        assert_eq!(s.resident_memory_bytes, 2560 * 4096);
        assert!((s.start_time_seconds - 1_700_000_123.45).abs() < 1e-3, "{s:?}");
        assert_eq!((s.open_fds, s.max_fds), (7, 1024));
        assert!(parse("garbage", "btime 1", 100.0, 4096, 0, 0).is_none());
    }

    #[test]
    fn this_process_reads() {
        let s = ProcessStats::read().expect("Linux has /proc");
        assert!(s.open_fds >= 3 && s.open_fds <= s.max_fds, "{s:?}");
        assert!(s.resident_memory_bytes > 0 && s.virtual_memory_bytes >= s.resident_memory_bytes);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        assert!(s.start_time_seconds <= now.as_secs_f64() + 1.0);
        assert!(s.start_time_seconds > now.as_secs_f64() - 86_400.0 * 365.0);
    }
}
