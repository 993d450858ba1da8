//! CPU time of an in-process `rangelockd`'s threads, by role, and of the whole process.
//!
//! The server runs inside the bench process, its threads named by role: `rangelock-server`
//! (the thread that starts the server and runs its listeners), `rangelock-handler` (the
//! handler runtime's workers) and `rangelock-combiner` (the combiner engine's one thread).
//! A [`ThreadsCpu`] snapshot reads each such thread's CPU time from
//! `/proc/self/task/<tid>/schedstat` (nanoseconds; `/proc/<tid>/stat`'s clock ticks where
//! schedstat is missing); [`ThreadsCpu::since`] gives what each role spent between two
//! snapshots. Client threads (whatever their name) are not counted; [`process_cpu_ns`]
//! counts every thread of the process, those that have ended included.

use crate::peers::redis;

/// What a server thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `rangelock-server`: starts the server, accepts connections.
    Listener,
    /// `rangelock-handler`: a worker of the handler runtime.
    Handler,
    /// `rangelock-combiner`: the combiner engine's thread.
    Combiner,
}

impl Role {
    /// The role of a thread named `comm` (the thread name truncated to 15 bytes).
    fn of(comm: &str) -> Option<Role> {
        [
            ("rangelock-serve", Role::Listener),
            ("rangelock-handl", Role::Handler),
            ("rangelock-combi", Role::Combiner),
        ]
        .into_iter()
        .find_map(|(prefix, role)| comm.starts_with(prefix).then_some(role))
    }
}

/// The CPU time of every server thread of this process at one moment.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadsCpu {
    /// `(tid, role, nanoseconds)` of each server thread.
    threads: Vec<(u32, Role, u64)>,
}

/// CPU time each role spent between two [`ThreadsCpu`] snapshots, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoleCpu {
    /// The listener thread.
    pub(crate) listener: u64,
    /// All handler threads together.
    pub(crate) handlers: u64,
    /// The busiest handler thread.
    pub(crate) busiest_handler: u64,
    /// The combiner thread (0 for engines without one).
    pub(crate) combiner: u64,
}

impl RoleCpu {
    /// Every server thread together.
    pub(crate) fn total(&self) -> u64 {
        self.listener + self.handlers + self.combiner
    }
}

impl ThreadsCpu {
    /// Reads the snapshot (`None` without `/proc/self/task`).
    pub(crate) fn now() -> Option<ThreadsCpu> {
        let mut threads = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
                continue;
            };
            let dir = task.path();
            let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else { continue };
            let Some(role) = Role::of(comm.trim_end()) else { continue };
            let ns = std::fs::read_to_string(dir.join("schedstat"))
                .ok()
                .and_then(|s| s.split_ascii_whitespace().next()?.parse::<u64>().ok())
                .or_else(|| {
                    redis::proc_stat_cpu_ns(&std::fs::read_to_string(dir.join("stat")).ok()?)
                });
            threads.push((tid, role, ns.unwrap_or(0)));
        }
        Some(ThreadsCpu { threads })
    }

    /// CPU time of every server thread so far.
    pub(crate) fn total_ns(&self) -> u64 {
        self.threads.iter().map(|&(_, _, ns)| ns).sum()
    }

    /// What each role spent from `earlier` to `self`; a thread started in between counts
    /// from zero, one that ended in between is lost (server threads live as long as their
    /// server).
    pub(crate) fn since(&self, earlier: &ThreadsCpu) -> RoleCpu {
        let mut cpu = RoleCpu::default();
        for &(tid, role, ns) in &self.threads {
            let before = earlier
                .threads
                .iter()
                .find(|&&(t, r, _)| t == tid && r == role)
                .map_or(0, |&(_, _, ns)| ns);
            let spent = ns.saturating_sub(before);
            match role {
                Role::Listener => cpu.listener += spent,
                Role::Handler => {
                    cpu.handlers += spent;
                    cpu.busiest_handler = cpu.busiest_handler.max(spent);
                }
                Role::Combiner => cpu.combiner += spent,
            }
        }
        cpu
    }
}

/// CPU time of this whole process so far (every thread, ended ones included), in
/// nanoseconds.
pub(crate) fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_read_from_truncated_thread_names() {
        assert_eq!(Role::of("rangelock-serve"), Some(Role::Listener));
        assert_eq!(Role::of("rangelock-handl"), Some(Role::Handler));
        assert_eq!(Role::of("rangelock-combi"), Some(Role::Combiner));
        assert_eq!(Role::of("rangelock"), None);
        assert_eq!(Role::of("tokio-runtime-w"), None);
    }

    /// Differences per role, the busiest handler, a thread born in between from zero.
    #[test]
    fn since_splits_by_role() {
        let earlier = ThreadsCpu {
            threads: vec![(1, Role::Listener, 10), (2, Role::Handler, 100), (3, Role::Handler, 5)],
        };
        let later = ThreadsCpu {
            threads: vec![
                (1, Role::Listener, 15),
                (2, Role::Handler, 130),
                (3, Role::Handler, 45),
                (4, Role::Combiner, 70),
            ],
        };
        let cpu = later.since(&earlier);
        assert_eq!(cpu, RoleCpu { listener: 5, handlers: 70, busiest_handler: 40, combiner: 70 });
        assert_eq!(cpu.total(), 145);
        assert_eq!(later.total_ns(), 260);
    }

    /// The process clock moves with work done on this thread.
    #[test]
    fn process_cpu_advances() {
        let a = process_cpu_ns().unwrap();
        let mut x = 0u64;
        for _ in 0..1_000_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(process_cpu_ns().unwrap() > a);
    }
}
