//! Checkers shared by the range-lock test binaries, generic over [`RawRangeLock`].
//!
//! * [`Checker`]: per-cell owner, stamp and reader count; an exclusive holder writes its id
//!   over its cells and checks they still hold it (and no reader came in) before releasing;
//!   a shared holder checks that no writer is inside and no cell changes while it holds.
//! * [`stress`]: threads lock random overlapping ranges of a small domain in random modes
//!   through `try` / blocking / timeout calls ([`acquire`]), checked by a [`Checker`] with
//!   one cell per unit.
//! * [`NoLock`]: a lock that grants everything, to show that the checkers catch it.
//! * [`check_against_model`]: a single-threaded run of `try_lock` / `try_lock_shared` /
//!   unlock-by-index against a sequential model (a `Vec` of held ranges with modes); every
//!   success or failure must match the model exactly.
//! * Edge cases: [`edge_cases`].

#![allow(dead_code)] // each test binary uses a subset

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rangelock::internals::{Guard, Lock, RawRangeLock};
use rangelock::{LockError, Mode};

/// SplitMix64: a small deterministic generator for the stress threads.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// What a stress run does.
#[derive(Clone, Debug)]
pub struct StressConfig {
    pub threads: usize,
    /// Operations per thread (ignored when `duration` is set).
    pub ops_per_thread: usize,
    /// Run for this long instead of a fixed number of operations.
    pub duration: Option<Duration>,
    /// Units of the shared array; ranges lie in `offset..offset + domain`.
    pub domain: u64,
    /// First unit of the locked domain (unit `offset + i` is cell `i` of the array).
    pub offset: u64,
    /// Longest range.
    pub max_len: u64,
    /// Percentage of shared acquisitions.
    pub shared_percent: u64,
    /// Longest shared range, when it differs from `max_len` (long readers over short
    /// writers exercise the reader-writer validation of list-based locks).
    pub shared_max_len: Option<u64>,
    pub seed: u64,
}

impl StressConfig {
    /// The CI configuration: bounded by operation count, a second or so per variant.
    pub fn short() -> Self {
        StressConfig {
            threads: 4,
            ops_per_thread: 3_000,
            duration: None,
            domain: 64,
            offset: 0,
            max_len: 12,
            shared_percent: 40,
            shared_max_len: None,
            seed: 0x5EED,
        }
    }
}

/// What a stress run observed.
#[derive(Debug, Default)]
pub struct StressReport {
    pub acquired: usize,
    pub refused: usize,
    pub timed_out: usize,
}

/// How an acquisition is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `try_lock_mode`.
    Try,
    /// `lock_mode` (waits as long as it takes).
    Blocking,
    /// `try_lock_mode_until(now + d)`.
    Timeout(Duration),
}

impl Call {
    /// Try, blocking or a timeout of `0..max_timeout_us` microseconds, one third each.
    pub fn random(rng: &mut Rng, max_timeout_us: u64) -> Call {
        match rng.below(3) {
            0 => Call::Try,
            1 => Call::Blocking,
            _ => Call::Timeout(Duration::from_micros(rng.below(max_timeout_us + 1))),
        }
    }

    /// Try or a timeout: never waits without a deadline (for threads that already hold a
    /// range: blocking then could deadlock with any range lock).
    pub fn random_bounded(rng: &mut Rng, max_timeout_us: u64) -> Call {
        match rng.below(2) {
            0 => Call::Try,
            _ => Call::Timeout(Duration::from_micros(rng.below(max_timeout_us + 1))),
        }
    }
}

/// Acquires `range` in `mode` through `call`: the guard, or `None` if a try was refused or a
/// timeout expired. Panics on any other outcome (a refusal from a blocking call, an error
/// that does not match the call, an invalid range).
pub fn acquire<R: RawRangeLock>(
    lock: &Lock<R>,
    range: Range<u64>,
    mode: Mode,
    call: Call,
) -> Option<Guard<'_, R>> {
    let result = match call {
        Call::Try => lock.try_lock_mode(range.clone(), mode),
        Call::Blocking => lock.lock_mode(range.clone(), mode),
        Call::Timeout(d) => lock.try_lock_mode_until(range.clone(), mode, Instant::now() + d),
    };
    match result {
        Ok(guard) => Some(guard),
        Err(LockError::WouldBlock) if call == Call::Try => None,
        Err(LockError::TimedOut) if matches!(call, Call::Timeout(_)) => None,
        Err(e) => panic!("{}: {call:?} of {mode:?} {range:?} failed with {e}", R::NAME),
    }
}

/// Spins or yields for a random short while (a holder's critical section).
pub fn pause(rng: &mut Rng) {
    match rng.below(4) {
        0 => {}
        1 => {
            for _ in 0..rng.below(64) {
                std::hint::spin_loop();
            }
        }
        n => {
            for _ in 1..n {
                thread::yield_now();
            }
        }
    }
}

/// A mutual-exclusion checker over cells of the domain.
///
/// The cells are the intervals between consecutive *bounds* (a sorted set of units); every
/// checked range must start and end at bounds (or beyond the first or last bound, where it
/// is clipped), so two checked ranges overlap exactly when they share a cell. Each cell has
/// the exclusive holder that is inside (`owner`), the last exclusive holder that entered
/// (`stamp`, never cleared) and the number of shared holders inside (`readers`):
///
/// * an exclusive holder writes its id over its cells, finding no owner and no reader, and
///   verifies before it leaves that every cell still has its id and still no reader;
/// * a shared holder counts itself in its cells' readers, finds no owner, and verifies
///   before it leaves that no owner entered and no stamp changed (so a writer that came
///   and went while it held is caught too).
///
/// Every violation panics with the lock's name, the range, mode, call and thread that
/// found it, what it found, and what every thread holds over that range at that moment.
#[derive(Debug)]
pub struct Checker {
    name: &'static str,
    bounds: Vec<u64>,
    owner: Vec<AtomicU64>,
    stamp: Vec<AtomicU64>,
    readers: Vec<AtomicU64>,
    threads: Vec<Mutex<Holds>>,
    failed: AtomicBool,
}

/// The holds of one checker thread (read by others only to report a violation).
#[derive(Debug, Default)]
struct Holds {
    ops: u64,
    held: Vec<(u64, Range<u64>, Mode, Call)>,
}

/// A range inside the [`Checker`]: pass it back to [`Checker::leave`].
#[derive(Debug)]
#[must_use = "leave the checker before releasing the range"]
pub struct Held {
    id: u64,
    range: Range<u64>,
    mode: Mode,
    call: Call,
    cells: Range<usize>,
    /// Shared holders: the stamps of the cells when they entered.
    stamps: Vec<u64>,
}

/// Bits of a holder id that number the thread's operations.
const OP_BITS: u32 = 40;

impl Checker {
    /// A checker for `threads` threads (numbered `0..threads`) over the cells between
    /// `bounds` (sorted and deduplicated here; at least two).
    pub fn new(name: &'static str, bounds: impl IntoIterator<Item = u64>, threads: usize) -> Self {
        let mut bounds: Vec<u64> = bounds.into_iter().collect();
        bounds.sort_unstable();
        bounds.dedup();
        assert!(bounds.len() >= 2, "a checker needs at least one cell");
        let cells = bounds.len() - 1;
        let atomics = || (0..cells).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        Checker {
            name,
            bounds,
            owner: atomics(),
            stamp: atomics(),
            readers: atomics(),
            threads: (0..threads).map(|_| Mutex::default()).collect(),
            failed: AtomicBool::new(false),
        }
    }

    /// The bounds (sorted): the units where checked ranges may start and end.
    pub fn bounds(&self) -> &[u64] {
        &self.bounds
    }

    /// Whether some thread found a violation (the others may stop early).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// The cells of `range`, clipped to the bounds.
    fn cells(&self, range: &Range<u64>) -> Range<usize> {
        let (first, last) = (self.bounds[0], self.bounds[self.bounds.len() - 1]);
        let (start, end) = (range.start.clamp(first, last), range.end.clamp(first, last));
        let index = |unit: u64| {
            self.bounds
                .binary_search(&unit)
                .unwrap_or_else(|_| panic!("checker: {range:?} does not start and end at bounds"))
        };
        if start >= end {
            return 0..0;
        }
        index(start)..index(end)
    }

    fn holds(&self, thread: usize) -> std::sync::MutexGuard<'_, Holds> {
        // A thread that panicked while reporting may have poisoned it; the data is fine.
        self.threads[thread].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Thread `thread` holds `range` in `mode` (acquired through `call`) from now on.
    pub fn enter(&self, thread: usize, range: Range<u64>, mode: Mode, call: Call) -> Held {
        let id = {
            let mut holds = self.holds(thread);
            holds.ops += 1;
            let id = ((thread as u64 + 1) << OP_BITS) | (holds.ops & ((1 << OP_BITS) - 1));
            holds.held.push((id, range.clone(), mode, call));
            id
        };
        let cells = self.cells(&range);
        let mut held = Held { id, range, mode, call, cells, stamps: Vec::new() };
        for c in held.cells.clone() {
            match mode {
                Mode::Exclusive => {
                    let prev = self.owner[c].swap(id, Ordering::SeqCst);
                    if prev != 0 {
                        self.violation(&held, c, &format!("owned by {}", self.who(prev)));
                    }
                    self.stamp[c].store(id, Ordering::SeqCst);
                    let readers = self.readers[c].load(Ordering::SeqCst);
                    if readers != 0 {
                        self.violation(&held, c, &format!("{readers} shared holder(s) inside"));
                    }
                }
                Mode::Shared => {
                    self.readers[c].fetch_add(1, Ordering::SeqCst);
                    let owner = self.owner[c].load(Ordering::SeqCst);
                    if owner != 0 {
                        self.violation(&held, c, &format!("owned by {}", self.who(owner)));
                    }
                    held.stamps.push(self.stamp[c].load(Ordering::SeqCst));
                }
            }
        }
        held
    }

    /// Verifies that nothing broke into `held` so far.
    pub fn check(&self, held: &Held) {
        for (i, c) in held.cells.clone().enumerate() {
            let owner = self.owner[c].load(Ordering::SeqCst);
            match held.mode {
                Mode::Exclusive => {
                    if owner != held.id {
                        self.violation(held, c, &format!("overwritten by {}", self.who(owner)));
                    }
                    let readers = self.readers[c].load(Ordering::SeqCst);
                    if readers != 0 {
                        self.violation(held, c, &format!("{readers} shared holder(s) came in"));
                    }
                }
                Mode::Shared => {
                    if owner != 0 {
                        self.violation(held, c, &format!("{} came in", self.who(owner)));
                    }
                    let stamp = self.stamp[c].load(Ordering::SeqCst);
                    if stamp != held.stamps[i] {
                        self.violation(held, c, &format!("{} came and went", self.who(stamp)));
                    }
                }
            }
        }
    }

    /// Verifies `held` one last time and takes it out (before its guard is dropped).
    pub fn leave(&self, thread: usize, held: Held) {
        self.check(&held);
        for c in held.cells.clone() {
            match held.mode {
                Mode::Exclusive => {
                    let owner = self.owner[c].swap(0, Ordering::SeqCst);
                    if owner != held.id {
                        self.violation(&held, c, &format!("overwritten by {}", self.who(owner)));
                    }
                }
                Mode::Shared => {
                    self.readers[c].fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
        self.holds(thread).held.retain(|h| h.0 != held.id);
    }

    /// "thread t op n", with what it holds if it still holds it.
    fn who(&self, id: u64) -> String {
        let thread = (id >> OP_BITS) as usize - 1;
        let op = id & ((1 << OP_BITS) - 1);
        match self.holds(thread).held.iter().find(|h| h.0 == id) {
            Some((_, range, mode, call)) => {
                format!("thread {thread} op {op} ({mode:?} {range:?} via {call:?})")
            }
            None => format!("thread {thread} op {op} (gone)"),
        }
    }

    fn violation(&self, held: &Held, cell: usize, what: &str) -> ! {
        self.failed.store(true, Ordering::Relaxed);
        let thread = (held.id >> OP_BITS) as usize - 1;
        let op = held.id & ((1 << OP_BITS) - 1);
        let cell = self.bounds[cell]..self.bounds[cell + 1];
        let mut others = Vec::new();
        for t in 0..self.threads.len() {
            for (id, range, mode, call) in &self.holds(t).held {
                if *id != held.id && rangelock::internals::overlaps(range, &held.range) {
                    others.push(format!(
                        "thread {t} op {} {mode:?} {range:?} via {call:?}",
                        id & ((1 << OP_BITS) - 1)
                    ));
                }
            }
        }
        panic!(
            "{}: mutual exclusion violated: thread {thread} op {op}, {:?} {:?} via {:?}: cell \
             {cell:?} {what}; overlapping holds now: {others:?}",
            self.name, held.mode, held.range, held.call
        );
    }
}

/// Runs the stress checker on `lock`; panics on any violation of mutual exclusion.
pub fn stress<R: RawRangeLock>(lock: R, cfg: &StressConfig) -> StressReport {
    let lock = Lock::from_raw(lock);
    let checker = Checker::new(R::NAME, cfg.offset..=cfg.offset + cfg.domain, cfg.threads);
    let acquired = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    let timed_out = AtomicUsize::new(0);
    let start = Instant::now();
    thread::scope(|s| {
        let mut handles = Vec::new();
        for t in 0..cfg.threads {
            let (lock, checker, cfg) = (&lock, &checker, cfg);
            let (acquired, refused, timed_out) = (&acquired, &refused, &timed_out);
            handles.push(s.spawn(move || {
                let mut rng = Rng::new(cfg.seed ^ ((t as u64 + 1) << 32));
                let mut op = 0u64;
                while !checker.failed() {
                    match cfg.duration {
                        Some(d) if op % 64 == 0 && start.elapsed() >= d => break,
                        None if op as usize >= cfg.ops_per_thread => break,
                        _ => {}
                    }
                    op += 1;
                    let mode = if rng.below(100) < cfg.shared_percent {
                        Mode::Shared
                    } else {
                        Mode::Exclusive
                    };
                    let max_len = match mode {
                        Mode::Shared => cfg.shared_max_len.unwrap_or(cfg.max_len),
                        Mode::Exclusive => cfg.max_len,
                    };
                    let begin = rng.below(cfg.domain);
                    let len = 1 + rng.below(max_len.min(cfg.domain - begin));
                    let range = cfg.offset + begin..cfg.offset + begin + len;
                    let call = Call::random(&mut rng, 299);
                    let Some(guard) = acquire(lock, range.clone(), mode, call) else {
                        match call {
                            Call::Try => refused.fetch_add(1, Ordering::Relaxed),
                            _ => timed_out.fetch_add(1, Ordering::Relaxed),
                        };
                        continue;
                    };
                    acquired.fetch_add(1, Ordering::Relaxed);
                    let held = checker.enter(t, range, mode, call);
                    for _ in 0..rng.below(4) {
                        thread::yield_now();
                    }
                    checker.leave(t, held);
                    drop(guard);
                }
            }));
        }
        // Re-raise the first failure with its own message.
        for h in handles {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    let report = StressReport {
        acquired: acquired.into_inner(),
        refused: refused.into_inner(),
        timed_out: timed_out.into_inner(),
    };
    assert!(report.acquired > 0, "{}: nothing was ever acquired: {report:?}", R::NAME);
    // Everything was released: the whole domain is free again.
    let all = lock
        .try_lock(cfg.offset..cfg.offset + cfg.domain)
        .expect("domain still locked after the run");
    drop(all);
    report
}

/// A "lock" that grants everything: the checkers must catch it.
#[derive(Debug, Default)]
pub struct NoLock;

// SAFETY: deliberately violated, only to show that the checkers detect a broken lock.
// Nothing unsound follows: the checkers only use atomics and `Lock`'s safe API.
unsafe impl RawRangeLock for NoLock {
    type Token = ();
    const NAME: &'static str = "no-lock";
    fn try_lock(&self, _: Range<u64>, _: Mode) -> Option<()> {
        Some(())
    }
    fn lock(&self, _: Range<u64>, _: Mode) {}
    fn lock_until(&self, _: Range<u64>, _: Mode, _: Instant) -> Option<()> {
        Some(())
    }
    unsafe fn unlock(&self, (): ()) {}
}

/// Seconds for the long (`#[ignore]`) stress run: `RANGELOCK_STRESS_SECS`, default 600.
pub fn long_duration() -> Duration {
    let secs =
        std::env::var("RANGELOCK_STRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    Duration::from_secs(secs)
}

/// One step of a model run.
#[derive(Clone, Debug)]
pub enum Op {
    /// `try_lock_mode(start..start + len, mode)`.
    Try { start: u64, len: u64, shared: bool },
    /// Drop the held guard at `index % held.len()` (no-op when nothing is held).
    Unlock(usize),
}

/// Random op sequences over units `0..domain`.
pub fn ops(domain: u64, max_len: u64, steps: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..domain, 1..=max_len, any::<bool>())
            .prop_map(|(start, len, shared)| Op::Try { start, len, shared }),
        2 => any::<usize>().prop_map(Op::Unlock),
    ];
    proptest::collection::vec(op, 0..steps)
}

/// Runs `ops` on a fresh lock and on the model; fails on the first divergence.
pub fn check_against_model<R: RawRangeLock>(raw: R, ops: &[Op]) -> Result<(), TestCaseError> {
    let lock = Lock::from_raw(raw);
    let mut held = Vec::new();
    let mut model: Vec<(Range<u64>, Mode)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Try { start, len, shared } => {
                let range = start..start + len;
                let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                let expect = model.iter().all(|(r, m)| {
                    !rangelock::internals::overlaps(r, &range) || mode.compatible(*m)
                });
                match lock.try_lock_mode(range.clone(), mode) {
                    Ok(guard) => {
                        prop_assert!(
                            expect,
                            "step {step}: {} granted {range:?} {mode:?} over {model:?}",
                            R::NAME
                        );
                        held.push(guard);
                        model.push((range, mode));
                    }
                    Err(e) => {
                        prop_assert_eq!(e, LockError::WouldBlock);
                        prop_assert!(
                            !expect,
                            "step {step}: {} refused {range:?} {mode:?} over {model:?}",
                            R::NAME
                        );
                    }
                }
            }
            Op::Unlock(i) => {
                if !held.is_empty() {
                    let i = i % held.len();
                    drop(held.swap_remove(i));
                    model.swap_remove(i);
                }
            }
        }
    }
    drop(held);
    prop_assert!(lock.try_lock(0..u64::MAX).is_ok(), "{}: not empty after all unlocks", R::NAME);
    Ok(())
}

/// Every edge case, on fresh locks from `make`. `exact_top` is false for locks that do
/// not distinguish units near `u64::MAX` (segments clamp them into the last segment).
pub fn edge_cases<R: RawRangeLock>(make: impl Fn() -> R, exact_top: bool) {
    range_at_zero(make());
    range_to_max(make());
    adjacent_ranges(make(), exact_top);
    invalid_ranges(make());
    shared_and_exclusive(make());
    timeout_while_held(make());
    timed_out_waiter_leaves_no_trace(make());
    blocking_handoff(make());
}

fn range_at_zero<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let a = lock.try_lock(0..1).expect("0..1 is free");
    assert_eq!(lock.try_lock(0..1).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock_shared(0..5).unwrap_err(), LockError::WouldBlock);
    let b = lock.try_lock(1..2).expect("1..2 is adjacent to 0..1");
    drop((a, b));
    let whole = lock.lock(0..u64::MAX).expect("whole domain");
    assert!(lock.try_lock(0..1).is_err());
    drop(whole);
}

fn range_to_max<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let top = lock.try_lock(u64::MAX - 1..u64::MAX).expect("last unit is free");
    assert!(lock.try_lock(0..u64::MAX).is_err());
    assert!(lock.try_lock_shared(u64::MAX - 10..u64::MAX).is_err());
    drop(top);
    let r1 = lock.try_lock_shared(0..u64::MAX).expect("whole domain shared");
    let r2 = lock.try_lock_shared(u64::MAX - 1..u64::MAX).expect("shared overlaps shared");
    assert!(lock.try_lock(u64::MAX - 1..u64::MAX).is_err());
    drop((r1, r2));
    assert!(lock.try_lock(0..u64::MAX).is_ok());
}

fn adjacent_ranges<R: RawRangeLock>(raw: R, exact_top: bool) {
    let lock = Lock::from_raw(raw);
    let a = lock.try_lock(0..10).expect("0..10");
    let b = lock.try_lock(10..20).expect("10..20 is adjacent, not overlapping");
    let c = lock.try_lock_shared(20..30).expect("20..30");
    assert!(lock.try_lock(9..11).is_err());
    assert!(lock.try_lock(19..21).is_err());
    if exact_top {
        let d = lock.try_lock(u64::MAX - 20..u64::MAX - 10).expect("high range");
        let e = lock.try_lock(u64::MAX - 10..u64::MAX).expect("adjacent at the top");
        drop((d, e));
    }
    drop((a, b, c));
}

#[allow(clippy::reversed_empty_ranges)] // inverted ranges are the input under test
fn invalid_ranges<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let bad = |e: LockError| matches!(e, LockError::InvalidRange(_));
    assert!(bad(lock.lock(5..5).unwrap_err()));
    assert!(bad(lock.lock_shared(7..3).unwrap_err()));
    assert!(bad(lock.try_lock(0..0).unwrap_err()));
    assert!(bad(lock.try_lock_shared(u64::MAX..u64::MAX).unwrap_err()));
    assert!(bad(lock.try_lock_for(9..1, Duration::from_millis(1)).unwrap_err()));
    assert!(bad(lock.try_lock_shared_for(3..3, Duration::from_millis(1)).unwrap_err()));
    // Nothing was locked by the rejected calls.
    assert!(lock.try_lock(0..u64::MAX).is_ok());
}

fn shared_and_exclusive<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let r1 = lock.try_lock_shared(0..10).expect("shared");
    let r2 = lock.try_lock_shared(5..15).expect("shared overlapping shared");
    let r3 = lock.try_lock_shared(0..10).expect("same range shared twice");
    assert!(lock.try_lock(9..10).is_err());
    assert!(lock.try_lock(14..20).is_err());
    let w = lock.try_lock(15..20).expect("disjoint exclusive");
    assert!(lock.try_lock_shared(15..16).is_err());
    drop((r1, r3));
    assert!(lock.try_lock(0..5).is_ok());
    assert!(lock.try_lock(5..6).is_err());
    drop((r2, w));
    assert!(lock.try_lock(0..20).is_ok());
}

fn timeout_while_held<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let held = lock.lock(0..10).expect("0..10");
    let ms = Duration::from_millis(2);
    assert_eq!(lock.try_lock_for(5..6, ms).unwrap_err(), LockError::TimedOut);
    assert_eq!(lock.try_lock_shared_for(0..1, ms).unwrap_err(), LockError::TimedOut);
    assert_eq!(lock.try_lock_for(9..20, Duration::ZERO).unwrap_err(), LockError::TimedOut);
    assert!(lock.try_lock_for(10..20, ms).is_ok(), "a free range does not time out");
    drop(held);
    let again = lock.try_lock_for(5..6, ms).expect("free after the holder left");
    drop(again);
    let shared = lock.lock_shared(0..10).expect("shared");
    assert!(lock.try_lock_shared_for(5..15, ms).is_ok(), "shared is compatible");
    assert_eq!(lock.try_lock_for(5..15, ms).unwrap_err(), LockError::TimedOut);
    drop(shared);
    assert!(lock.try_lock(0..20).is_ok());
}

/// A waiter that times out must not keep blocking later requests (FIFO locks count
/// waiters) nor hold anything.
fn timed_out_waiter_leaves_no_trace<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let held = lock.lock(0..10).expect("0..10");
    thread::scope(|s| {
        s.spawn(|| {
            let r = lock.try_lock_for(5..15, Duration::from_millis(3));
            assert_eq!(r.unwrap_err(), LockError::TimedOut);
        });
    });
    let later = lock.try_lock(10..15).expect("the timed-out waiter is gone");
    drop((held, later));
    assert!(lock.try_lock(0..20).is_ok());
}

/// A blocked acquisition is granted once the holder releases.
fn blocking_handoff<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let counter = AtomicU64::new(0);
    let held = lock.lock(0..100).expect("0..100");
    thread::scope(|s| {
        for i in 0..3u64 {
            let (lock, counter) = (&lock, &counter);
            s.spawn(move || {
                let mode = if i == 0 { Mode::Exclusive } else { Mode::Shared };
                let g = lock.lock_mode(i * 10..i * 10 + 50, mode).expect("eventually granted");
                counter.fetch_add(1, Ordering::Relaxed);
                drop(g);
            });
        }
        // The waiters cannot get in while we hold the range.
        assert_eq!(counter.load(Ordering::Relaxed), 0);
        drop(held);
    });
    assert_eq!(counter.load(Ordering::Relaxed), 3);
}
