//! Whether this machine's hardware performance counters can be read: the measured reason
//! behind the claims `aliasing-counts` cannot test (cycles and real cache misses per thread
//! count need them).
//!
//! The probe asks the kernel directly with `perf_event_open(2)` for the hardware
//! instructions counter of the calling thread (user space only, as an unprivileged
//! `perf stat -e instructions` would), enables it around a short loop and reads it back.
//! The counters work when the counter opens and counts more than zero; otherwise the reason
//! is the kernel's error (`ENOENT` / `EOPNOTSUPP`: the CPU or the hypervisor exposes no
//! hardware PMU; `EACCES` / `EPERM`: not permitted at this `kernel.perf_event_paranoid`).
//! No `perf` binary is needed. On a system other than Linux the probe says so.

/// The record field: 1 when hardware counters work here, 0 when not.
pub const FIELD: &str = "hardware_counters";
/// The record field with the reason when [`FIELD`] is 0.
pub const REASON_FIELD: &str = "hardware_counters_reason";

/// `Ok` when the hardware instructions counter opens and counts; else why not.
pub fn probe() -> Result<(), String> {
    imp::probe()
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;

    /// `PERF_TYPE_HARDWARE`.
    const TYPE_HARDWARE: u32 = 0;
    /// `PERF_COUNT_HW_INSTRUCTIONS`.
    const HW_INSTRUCTIONS: u64 = 1;
    /// `PERF_ATTR_SIZE_VER0`: the first 64 bytes of `struct perf_event_attr`, which hold
    /// every field set here.
    const ATTR_SIZE: u32 = 64;
    /// `perf_event_attr` flag bits: `disabled`, `exclude_kernel`, `exclude_hv`.
    const FLAGS: u64 = 1 | 1 << 5 | 1 << 6;
    /// `PERF_FLAG_FD_CLOEXEC`.
    const FD_CLOEXEC: libc::c_ulong = 8;
    /// `PERF_EVENT_IOC_ENABLE` and `PERF_EVENT_IOC_DISABLE` (`_IO('$', 0)`, `_IO('$', 1)`).
    const IOC_ENABLE: libc::c_ulong = 0x2400;
    const IOC_DISABLE: libc::c_ulong = 0x2401;

    pub(super) fn probe() -> Result<(), String> {
        // `struct perf_event_attr` as u64 words: type and size share word 0, config is
        // word 1, the flag bits word 5; everything else zero.
        let mut attr = [0u64; 16];
        attr[0] = u64::from(TYPE_HARDWARE) | u64::from(ATTR_SIZE) << 32;
        attr[1] = HW_INSTRUCTIONS;
        attr[5] = FLAGS;
        // SAFETY: `attr` is a readable buffer of 128 bytes, more than the `ATTR_SIZE` bytes
        // the kernel reads; pid 0 and cpu -1 ask for this thread on any CPU; no group.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr.as_ptr(),
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            let why = match e.raw_os_error() {
                Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => {
                    "this CPU or its hypervisor exposes no hardware PMU".to_owned()
                }
                Some(libc::EACCES | libc::EPERM) => format!(
                    "not permitted (kernel.perf_event_paranoid = {})",
                    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                        .map_or_else(|_| "?".to_owned(), |s| s.trim().to_owned())
                ),
                _ => "the kernel refused the counter".to_owned(),
            };
            return Err(format!("perf_event_open(hardware instructions) failed: {e}: {why}"));
        }
        let fd = fd as libc::c_int;
        let counted = count(fd);
        // SAFETY: `fd` is the descriptor opened above, closed once here.
        unsafe { libc::close(fd) };
        match counted {
            Ok(n) if n > 0 => Ok(()),
            Ok(_) => Err("perf_event_open(hardware instructions) opened but counted nothing \
                          (a virtual PMU that does not count)"
                .to_owned()),
            Err(e) => Err(format!("reading the hardware instructions counter failed: {e}")),
        }
    }

    /// Enables the counter `fd` around a short loop and reads its count.
    fn count(fd: libc::c_int) -> io::Result<u64> {
        // SAFETY: `fd` is an open perf event descriptor; ENABLE takes no argument.
        if unsafe { libc::ioctl(fd, IOC_ENABLE as _, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut x = 0u64;
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        // SAFETY: as above.
        if unsafe { libc::ioctl(fd, IOC_DISABLE as _, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut value = 0u64;
        // SAFETY: `value` is 8 writable bytes, what a counter without a read format gives.
        let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
        if n != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(value)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn probe() -> Result<(), String> {
        Err("hardware counters are probed on Linux only (perf_event_open)".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal names the counter and its cause; on x86-64 without a CPU PMU in sysfs
    /// (`cpu`, or `cpu_core` on hybrid parts) the cause is the missing PMU, and a counter
    /// that counts needs one.
    #[test]
    fn the_probe_agrees_with_sysfs_and_says_why() {
        let devices = std::path::Path::new("/sys/bus/event_source/devices");
        let pmu = devices.join("cpu").exists() || devices.join("cpu_core").exists();
        let x86 = cfg!(all(target_os = "linux", target_arch = "x86_64"));
        match probe() {
            Ok(()) => assert!(pmu || !x86, "counted without a cpu PMU in sysfs"),
            Err(reason) => {
                assert!(reason.contains("hardware instructions"), "{reason}");
                if x86 && !pmu {
                    assert!(reason.contains("no hardware PMU"), "{reason}");
                }
            }
        }
    }
}
