//! What the machine does to a measurement while it runs: the price of moving one cache
//! line between two cores, probed after every case of two threads or more.
//!
//! On a 2-vCPU VM that price need not be a constant. [`line_transfer_ns`] bounces one line
//! between two threads pinned to the two CPUs ([`PROBE_ROUND_TRIPS`] round trips after a
//! warm-up); `cargo run --release -p rangelock-bench --example line_transfer` prints it
//! once a second. On an AMD EPYC VM (1 MiB L2 per core, 32 MiB L3) it read 21-60 ns one
//! way when the vCPUs were close and 190-330 ns when they were not, nothing in between:
//! under sustained load on both the hypervisor moved them apart within seconds, then back.
//! On an Intel Xeon VM (2.50 GHz, 2 MiB L2 per core, 33 MiB L3) it read 99-121 ns after
//! nearly every case.
//!
//! Everything a shared lock does costs whatever its shared lines cost, so a 2-thread record
//! means little without the price it ran at. On the EPYC VM, alternating the probe with
//! `mixed_loop 30000000 <variant> 2 100` (the `rangelock` crate's example; ns per operation
//! of both threads), the shared `rangelock` took 19-20 ns with the probe at 22-24 ns and
//! 40-57 ns with it at 193-204 ns, while a lock per thread (`separate`) stayed at 15-16 ns;
//! `segments-256Ki` misses to memory at either placement, so one run can show either lock
//! 2x ahead (`rangelock_bench::suites::mixed`, "At 2 threads: the lines both cores write").
//! Records of two threads or more carry the probe as the extra field [`LINE_TRANSFER_NS`]
//! (median over rounds) with its range over the rounds ([`LINE_TRANSFER_MIN_NS`],
//! [`LINE_TRANSFER_MAX_NS`]), and the table shows the median, or the range when the rounds
//! ran at different placements.
//!
//! The processor matters as much: on the Xeon VM the loop with no lock ran 2.2x slower than
//! on the EPYC VM (`mixed_loop 3000000 none 1 100`: 9.5 against 4.3 ns per operation), and
//! what a compute-bound lock gains over a memory-bound one moved with it (`rangelock` over
//! `segments-256Ki` on `mixed` at 1 thread: 2.26-2.51x on the EPYC VM, 1.27-1.84x on the
//! Xeon VM, the same lock code but for one line). So every record names its machine
//! ([`cpu_model`], and the record's machine block).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;

/// The extra field of a record that holds the probe: nanoseconds per one-way transfer of a
/// cache line between two threads, right after the case ran (median over its rounds).
pub const LINE_TRANSFER_NS: &str = "line_transfer_ns";

/// The extra fields with the smallest and largest probe over a case's rounds: far apart
/// when the rounds ran at different placements.
pub const LINE_TRANSFER_MIN_NS: &str = "line_transfer_min_ns";
/// See [`LINE_TRANSFER_MIN_NS`].
pub const LINE_TRANSFER_MAX_NS: &str = "line_transfer_max_ns";

/// Round trips per probe: under a millisecond at the slow price, enough for a stable
/// median at the fast one.
pub const PROBE_ROUND_TRIPS: u64 = 2_000;

/// Spins before a waiting side yields its CPU: the probe's two threads may share one CPU
/// (a busy machine, or one core), and pure spinning would then wait out a time slice per
/// transfer.
const SPINS_BEFORE_YIELD: u32 = 1 << 12;

/// The processor's model name (Linux: the first `model name` of `/proc/cpuinfo`), or
/// `None` where the system does not say.
///
/// Printed with every table: ratios against a memory-bound variant move with the machine.
/// The same commit gave `rangelock` 2.26-2.51x `segments-256Ki` on `mixed` at 1 thread on
/// an AMD EPYC VM and 1.27-1.84x on an Intel Xeon VM (module docs).
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    model_name(&info)
}

/// The first `model name` line's value in the text of `/proc/cpuinfo`.
fn model_name(cpuinfo: &str) -> Option<String> {
    super::hardware::cpuinfo_value(cpuinfo, "model name").map(str::to_owned)
}

/// Whether probing means anything here: two CPUs this process may run on.
pub fn can_probe() -> bool {
    probe_cpus().is_some()
}

/// The first two CPUs of this process's affinity mask, if it has two.
fn probe_cpus() -> Option<(usize, usize)> {
    // SAFETY: `cpu_set_t` is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed; pid 0 is the
    // calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, core::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return None;
    }
    // SAFETY: `set` was filled in above; every index is below `CPU_SETSIZE`.
    let mut cpus =
        (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) });
    Some((cpus.next()?, cpus.next()?))
}

/// Pins the calling thread to `cpu`; false if the kernel refused.
fn pin_to(cpu: usize) -> bool {
    // SAFETY: as in `probe_cpus`.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: `cpu` is below `CPU_SETSIZE` (it came from `probe_cpus`); `set` is ours.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, core::mem::size_of_val(&set), &set) == 0 }
}

/// Bounces one cache line between two threads pinned to two different CPUs `round_trips`
/// times (each side waits for the other's value, then writes its own) and returns
/// nanoseconds per one-way transfer, or `None` without two CPUs to pin to.
///
/// Pinned, because the scheduler may first run a new thread on its parent's CPU (waking
/// an idle vCPU costs tens of microseconds here), and two threads taking turns on one CPU
/// measure context switches, not the line. The caller's own thread is left unpinned: both
/// sides run on threads of their own, after a warm-up of [`WARM_UP_ROUND_TRIPS`].
pub fn line_transfer_ns(round_trips: u64) -> Option<f64> {
    let (a, b) = probe_cpus()?;
    let line = CachePadded::new(AtomicU64::new(0));
    let warm = WARM_UP_ROUND_TRIPS;
    let total = warm + round_trips.max(1);
    std::thread::scope(|s| {
        // The partner answers every even value with the next odd one.
        s.spawn(|| {
            pin_to(b);
            for i in 0..total {
                wait_for(&line, 2 * i);
                // Release: pairs with the Acquire load in `wait_for` on the other thread.
                line.store(2 * i + 1, Ordering::Release);
            }
        });
        s.spawn(|| {
            pin_to(a);
            let mut start = Instant::now();
            for i in 0..total {
                if i == warm {
                    start = Instant::now();
                }
                wait_for(&line, 2 * i + 1);
                // Release: as above.
                line.store(2 * i + 2, Ordering::Release);
            }
            Some(start.elapsed().as_nanos() as f64 / (2 * (total - warm)) as f64)
        })
        .join()
        .unwrap_or(None)
    })
}

/// Round trips before the probe starts its clock: both threads running on their CPUs.
pub const WARM_UP_ROUND_TRIPS: u64 = 200;

/// Spins (yielding now and then) until `line` holds `value`.
fn wait_for(line: &AtomicU64, value: u64) {
    let mut spins = 0u32;
    // Acquire: pairs with the other thread's Release store of `value` (the value is the
    // whole message; the ordering keeps the ping-pong a real round trip).
    while line.load(Ordering::Acquire) != value {
        spins += 1;
        if spins % SPINS_BEFORE_YIELD == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_completes_and_reports_a_positive_price() {
        match line_transfer_ns(100) {
            Some(ns) => assert!(ns.is_finite() && ns > 0.0, "{ns}"),
            None => assert!(!can_probe(), "two CPUs, yet no probe"),
        }
    }

    #[test]
    fn the_model_name_is_the_first_processors() {
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) \
                    Processor @ 2.50GHz\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: Other\n";
        assert_eq!(model_name(info).as_deref(), Some("Intel(R) Xeon(R) Processor @ 2.50GHz"));
        assert_eq!(model_name("processor\t: 0\nflags\t: fpu\n"), None);
        assert_eq!(model_name("model name:"), Some(String::new()));
    }
}
