//! The product range lock: a lock-free skip list of exclusive ranges plus reader
//! announcements for shared ranges, with parking waits and epoch reclamation.
//!
//! # Algorithm
//!
//! **Exclusive ranges** are nodes of a lock-free skip list (Herlihy et al.'s
//! `LockFreeSkipList` as adapted by the concurrent-range-locking thesis), sorted by
//! `(start, node address)`. An exclusive acquisition `find`s the position of its start,
//! checks the level-0 predecessor and successor for overlap, and links its node with a CAS on
//! the predecessor's level-0 link (then at the upper levels). Because the ranges of the
//! unmarked nodes are pairwise disjoint, those two neighbours are the only nodes that can
//! overlap (see `list` for the invariants and the argument). Release marks the node's links
//! top-down (the level-0 mark is the linearization point), wakes waiters, snips the node out
//! with one `find` for its exact key, and retires it. The token is the node: unlock is O(1)
//! in the number of held ranges, with no search by range.
//!
//! **Exclusive ranges inside one stripe** usually skip the list. The domain is cut into
//! stripes of 16 Ki units and the stripes into windows of 2048 (32 Mi units); stripe `s`
//! owns slot `s mod 2048` of its window's table (`stripes`). Each window in use gets a table
//! of its own, allocated on first use and found through a directory of 64 entries; once the
//! directory is full, further windows share one overflow table (all three sizes are
//! [`Builder`] options). An exclusive range that lies inside one stripe
//! claims its stripe's slot with a CAS and then checks for a conflict: the slot's count of
//! list nodes that may overlap its stripes (list writers count themselves in the slots of
//! the stripes they touch before they link, and uncount after they unlink) and the reader
//! table. If both are empty it holds the range, with its node in the slot and nothing
//! linked; if the count is not zero it searches the list for an actual overlap. If the
//! slot is taken it takes the list path; if it finds a conflict it *retracts* (clears the
//! slot, ends the node's use and retires it) and takes the list path with a fresh node, so
//! a stripe holder never waits while visible. List writers and readers, after their own
//! handshake store, check the slots of the stripes their range touches. In the common case
//! the check reads two counters and the reader table's line counts and takes no epoch
//! guard: a stripe hold is one CAS on a slot plus reads of lines nobody writes, so threads
//! locking disjoint ranges of different regions share no written cache line (a list
//! insertion writes its neighbours' links, which two threads working on one list keep
//! moving between cores).
//!
//! **Shared ranges** are not in the list. A reader announces its node in a slot of a
//! growable table (`readers`) and then checks the list for an overlapping exclusive node; if
//! there is none it holds the range, otherwise it retracts the announcement and waits for
//! that node. An exclusive acquisition, after linking its node, scans the announcement table
//! (skipping, with one load, every cache line of slots whose reader count is zero)
//! and waits for every overlapping announced reader to leave before it holds the range.
//!
//! A node in the list is *pending* until its owner has drained the overlapping readers; new
//! readers and writers treat pending nodes like held ones.
//!
//! Repairs of the thesis code: ranges are half-open with no reserved values (head is -∞, a
//! null link +∞), so `0..1`, `u64::MAX - 1..u64::MAX` and adjacent ranges all lock; the
//! address tie-break makes every key unique; `find` restarts when a predecessor's own link is
//! marked; an upper-level retry re-points the new node's link at the fresh successor; nodes
//! are retired through epochs and recycled (no leak); heights come from a per-thread
//! xorshift; release goes through the token.
//!
//! # Consistency
//!
//! *Exclusive vs exclusive.* Invariant: the unmarked nodes of the list are pairwise
//! disjoint. An insertion checks its level-0 neighbours `pred`, `succ` (read from one unmarked
//! link of `pred`) and links with a CAS that succeeds only if `pred` is still unmarked and
//! still points at `succ`; so at the CAS instant `pred`/`succ` are adjacent in the sorted
//! list, every unmarked node before `pred` ends at or before `pred.start` (invariant, by
//! induction) and every node after `succ` starts at or after `succ.start`. A node is
//! therefore linked only if it overlaps no unmarked node. A holder's node stays unmarked
//! until it unlocks.
//!
//! *Shared vs exclusive* is a Dekker handshake through SeqCst fences. A writer W (1) links
//! its node with a CAS, (2) executes `fence(SeqCst)`, (3) reads the reader count of every
//! line of announcement slots and every slot of a line whose count is not zero. A reader R
//! (1) stores its announcement with a CAS and increments its line's count, (2) executes
//! `fence(SeqCst)`, (3) reads the list. The two fences are ordered in the single SeqCst
//! order; the thread whose fence comes second reads (at least) the other's stores. If that
//! is W, W sees R's count (or a later value: a count returns to zero only after R cleared
//! its slot) and R's announcement, and waits until R clears its slot. If it is R, every list read of R comes after W's
//! link: R's final `find` reads an unmarked link `pred → succ` with W linked and unmarked
//! (invariant 2 of `list`), W overlaps R, and the sorted order leaves three places for W:
//! W is `pred` (then `pred.end > R.start`); W comes at or after `succ` (then
//! `succ.start <= W.start < R.end`); or W lies before `pred`, where disjointness from `pred`
//! gives `W.end <= pred.start < R.start`, contradicting the overlap. So R sees an
//! overlapping writer and retracts. A reader and a writer therefore never both hold
//! overlapping ranges; readers never exclude each other. (SeqCst accesses alone would do
//! in the C++/Rust model; we use fences because loom models SeqCst fences exactly but
//! SeqCst accesses more weakly: without the fences its model reports the reader and the
//! writer both inside. On x86, where the `lock`-prefixed CAS before each fence is already a
//! full barrier and every access of the handshake is SeqCst, the fence compiles to a
//! compiler fence only: see `readers::handshake_fence`.)
//!
//! *Stripe holders* take part in the same handshake, as writers whose store is the slot CAS
//! instead of the link CAS. Against a reader it is the argument above with the slot in
//! place of the list (the reader checks the slots of its stripes after its fence). Against
//! a list writer W, the stripe holder S (1) claims its slot, (2) fences, (3) reads the
//! slot's list count (and the `wide` count), and searches the list like a reader if a
//! count is not zero; W (1) increments the counts of its stripes' slots (or `wide`), links,
//! (2) fences, (3) reads the slots of its stripes, which include S's. If S's fence is
//! later, S's count load sees W's increment (or a later value, which drops to zero only
//! once W's node is unlinked), so S searches the list and sees W by the reader argument;
//! if W's is later, W reads S's node and checks its range. So S and W never both hold
//! overlapping ranges. S sees a conflict only while the other party is announced, and
//! then retracts, so S never waits while visible; W may wait for S, which holds (and will
//! release) or retracts. Two stripe holders of one slot are excluded by the CAS, and
//! holders of different slots lie in different stripes, which are disjoint. A node that
//! was visible in a slot is never reused for the list path of the same acquisition (it is
//! retired): a waiter holding a ticket on it must see that use end, not wait for our own
//! list node while we wait for it.
//!
//! *Happens-before.* Unlocking is a Release (the level-0 mark, the slot clear, the `state`
//! release); every acquisition reads them, or links/slot values derived from them by RMWs
//! in the same release sequence, with Acquire or SeqCst loads, so the next holder of an
//! overlapping range sees the previous holder's writes.
//!
//! *Writers are not starved by readers.* A writer links its (pending) node *before* waiting
//! for readers. From then on every new reader of an overlapping range finds the node and
//! backs off, so the writer waits only for the readers announced before its link — a
//! finite set, each of which either holds (and will release) or retracts on seeing the
//! writer. Readers can, in turn, wait behind a stream of writers: the policy prefers
//! writers.
//!
//! *Progress.* `try_lock*` never waits: it fails on the first conflict (a writer that
//! already linked its node unlinks it again). Two racing `try_lock`s, one shared and one
//! exclusive, may both fail (each saw the other's announcement or pending node); so may a
//! `try_lock` inside one stripe and an overlapping one on the list. Blocking
//! acquisitions wait only for nodes whose owners are running acquisitions or holding
//! ranges, so they wait only as long as conflicting holders hold (plus writers ahead of a
//! reader, see above).
//!
//! The loom models in this module check insert/mark/unlink and the reader/writer
//! handshake; the crate's stress tests and property tests check the lock end to end.
//!
//! # Trade-offs
//!
//! - Writer preference has the usual cost of reader-writer locks that prefer writers
//!   (`std`'s and `parking_lot`'s `RwLock` behave the same way): a thread that holds a
//!   shared range and then blocks on another range that overlaps a *waiting* writer, while
//!   that writer waits for the first range, deadlocks. Do not block on a second range while
//!   holding a shared one unless all threads acquire in one global order that makes such a
//!   cycle impossible; use `try_lock*` or a timeout otherwise. Likewise there is no
//!   upgrade: locking exclusively a range that overlaps one's own shared hold waits forever
//!   (`try_lock` fails, a timeout expires).
//! - Every exclusive acquisition reads the reader count of every line of the announcement
//!   table (8 cache lines of 7 slots and a count per segment) and scans the slots of the
//!   lines in use; with no reader that is 8 loads of lines that stay cached. The table grows
//!   to the peak number of concurrently announced readers and never shrinks while the lock
//!   lives. Readers only read the skip list (besides helping to snip released nodes), so
//!   read-mostly workloads do not contend on list nodes; a reader pays one more RMW (its
//!   line's count, on the line its slot CAS already owns) to acquire and one to release;
//!   readers whose slots share a line contend on it; threads start probing at different,
//!   non-adjacent lines.
//! - A reader finds conflicting writers in O(log n) (only exclusive nodes are in the list);
//!   a writer pays O(log n) in the list plus O(slots) in the table.
//! - The stripe tables cost 32 KiB each (2048 slots of a node pointer, a count and a tag):
//!   the overflow table from the start, plus one per window in use, up to 64 (2 MiB), all
//!   freed when the lock drops. A range inside one stripe is one slot; a range across
//!   stripes goes to the list: it increments and later decrements the counts of up to 4
//!   slots (a wider range: one `wide` count, which sends every stripe holder to the list
//!   search while it is held), and it (like every reader) checks the holder of one slot per
//!   stripe it touches; a range over three windows or more checks every slot of the
//!   overflow table and of the window tables of its windows (2048 loads each).
//! - Stripe holders find their window's table through the directory: one load of the home
//!   entry's key and one of its table pointer, as many dependent loads as the one
//!   direct-mapped table before windows took (`valgrind --tool=callgrind
//!   target/release/examples/w1_loop N 0 rangelock 1`, N = 200 000 and 400 000: 247.6
//!   instructions per lock+unlock both before window tables and with them; the token
//!   carries its slot, so release looks nothing up). A window not at its home entry (two windows whose
//!   numbers are 64 apart) probes on, in a cold path.
//! - Window entries are never freed while the lock lives, so a lock used over more than 64
//!   windows (2 Gi units, by default) in its life sends the later ones to the overflow
//!   table, which is direct-mapped: there stripes 32 Mi units apart share a slot. Ranges of
//!   one slot held at the same time take turns: the first holds the slot, the others take
//!   the list path and cost what a list insertion costs, and a list node counted in a slot
//!   sends the holders of every stripe of that slot to the list search. (Before window
//!   tables, this was the whole domain's fate: the `held` suite, with up to 2 x 100 000
//!   ranges 1 KiB apart below a W1 area 2 GiB up, sent nearly every W1 range to the list,
//!   and `w1_loop 3000000 100000 rangelock` ran at 4.9-9.2M lock+unlock/s at 1 and 2
//!   threads; with its own table W1's window runs at 57-59M at 1 thread and 65-91M at 2,
//!   as with nothing held.) The stripe width (16 Ki units:
//!   16 KiB when units are bytes) trades the share of ranges that fit one stripe against
//!   the chance that two ranges held at once meet in one.
//! - A stripe attempt that meets a conflict retires its node and starts over on the list
//!   with a fresh one (one node more for that acquisition; the fast path allocates one).
//! - Ranges of one stripe contend on its slot and fall back to the list as described;
//!   with many threads locking overlapping small ranges of a few stripes (the `contended`
//!   suite) most acquisitions take the list path and pay one failed slot load first.
//! - Nodes are recycled and returned to the allocator only when the lock drops (type-stable
//!   memory lets waiters park without an epoch guard), so memory is bounded by the peak use,
//!   not by the current one. Every acquisition and release retires one node (readers too),
//!   so the peak includes what is retired while some thread sits in a protected region: a
//!   thread preempted inside an operation holds back reuse for its time slice (on a busy
//!   2-core machine we saw a few thousand to ~50k nodes of ~180 bytes at millions of
//!   operations per second). Guards are never held while waiting or while holding a range.
//! - Each lock owns a `LightEpoch` (its slot table is sized from the core count, some KB per
//!   lock). `try_lock*` never waits for a range, but like every operation it may wait in
//!   `LightEpoch::protect` if more threads than the table has slots are inside lock
//!   operations at the same instant, and it takes the (sharded, per-thread) pool spin locks for
//!   one `Vec` push or pop.
//! - Heights are geometric with p = 1/4 (4/3 levels per node on average), so `h` levels
//!   index about `4^(h-1)` nodes at logarithmic cost, and a search skips the empty top
//!   levels (a null head link), so a short list costs the levels of its tallest node, not
//!   the maximum height. The default maximum height is [`DEFAULT_MAX_HEIGHT`] = 12, chosen
//!   from the `height` suite (W2, batches of 16, 2^14 ranges of 1 KiB) on the 2-core
//!   development machine (loaded, so differences below ~10% are noise): ops/s at heights
//!   4/6/8/10/12/14/16 were 5.27/5.39/5.19/5.08/5.05/5.09/4.15 M with 1 thread and
//!   4.06/4.32/3.66/3.93/3.85/3.34/3.02 M with 2 threads; a second run gave
//!   3.10/2.92/3.39/3.02/2.47/2.99/2.62 M and 2.31/2.50/2.55/2.15/2.31/2.38/2.34 M. The
//!   differences do not repeat between runs: W2's few dozen nodes never reach the top
//!   levels, which searches skip while empty, so W2 does not choose the height. (Those runs
//!   predate the stripe table; with it, W2's ranges rarely reach the list, and the suite is
//!   flat: 9.41-9.74M ops/s at 1 thread and 17.31-18.56M at 2 over heights 4-16.) What
//!   the height must cover is the number of held ranges: the `held` suite keeps 2 x 100 000 ranges, which needs 10 levels
//!   (`4^9` = 262 144) to stay logarithmic; 12 levels keep searches logarithmic up to about
//!   4 million held ranges (`4^11`), beyond which the top level grows linearly. (The old
//!   default, 10 levels with p = 1/2, indexed 1024 nodes: with 200 000 held ranges W1 ran at
//!   0.1x of its 16-range speed.) Every node carries 16 link words (the largest height
//!   [`RangeLock::with_max_height`] accepts), so the pools need a single size class (about
//!   180 bytes per node).
//! - Waiting spins 64 times, then parks in `parking_lot_core`'s global parking lot keyed by
//!   the node address; the release of a node with parked waiters wakes all of them (they
//!   re-check; most re-park or acquire).
//! - Against static segments (`variants::Segments` with 1 KiB segments, exactly the `w1`
//!   ranges): a segment lock takes one CAS and releases with a plain store, because its
//!   waiters spin. A stripe hold takes the slot CAS, the node's release RMW (so a parked
//!   waiter is never missed: a release that can wake a sleeper needs an RMW or a full
//!   fence) and the pool shard locks of one allocation and one retirement. After the
//!   workload's 1 KiB memset the first of them waits for the store buffer to drain. In one
//!   `rangelock bench w1 --threads 1,2,16 --rounds 5 --duration-ms 500` run (2-core EPYC
//!   VM) the loop alone (`unlocked`) took 104.9 ns/op at 1 thread, `segments` 162.9 and
//!   this lock 212.7; at 2 threads 22.6, 34.6 and 55.8 ns/op. So ranges of one fixed size
//!   that a segment table can be sized for are cheaper in one; what the segment table
//!   cannot do is the rest: any range over the whole `u64` domain without memory per unit,
//!   no false conflicts between disjoint ranges of one segment, one list node (not one CAS per
//!   segment) for a long range, parking instead of spinning, and writers that are not
//!   starved.
//!
//! Under loom the lock runs this code with loom's primitives. Reclamation is the real
//! `LightEpoch` (a 3-slot table) with one-node retirement batches, so a retired node goes
//! back to the pool and is reused within a model run: the models check that no traversal
//! reaches a node after its reuse and that a waiter tells a recycled node's new use from the
//! one it waited for (the generation in the wait word). Waiting is the same loop as outside
//! loom (`wait`, without the spin phase and without deadlines) over a model of the parking
//! lot, a loom mutex and condition variable, so a lost wake-up is a deadlock that loom
//! reports. The pool shard locks are loom mutexes, and the models with three threads, too
//! large with the real epoch, reclaim through a deferred list that reuses nothing while the
//! model runs.

mod list;
mod node;
mod pool_lock;
mod readers;
mod reclaim;
mod rng;
mod stripes;
mod wait;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;

use core::fmt;
use core::ops::Range;
use core::ptr::NonNull;
use std::time::Instant;

use crate::lock::Lock;
use crate::range::Mode;
use crate::raw::{RawRangeLock, RawRangeLockDowngrade};

use list::{Conflict, List};
use node::{Node, MAX_HEIGHT};
use readers::Readers;
use reclaim::Reclaim;
use stripes::Stripes;
pub use stripes::{DEFAULT_STRIPE_SHIFT, DEFAULT_STRIPE_SLOTS, DEFAULT_STRIPE_WINDOWS};
use wait::{wait_for, Wait};

/// The default number of skip-list levels (see `# Trade-offs` in the module docs).
pub const DEFAULT_MAX_HEIGHT: usize = 12;

/// The product range lock: [`Lock`] over the lock-free [`SkipList`].
///
/// ```
/// use rangelock::RangeLock;
///
/// let lock = RangeLock::new();
/// let a = lock.lock(0..10).unwrap();
/// let b = lock.try_lock(10..20).unwrap(); // adjacent ranges do not overlap
/// assert!(lock.try_lock(5..15).is_err());
/// drop((a, b));
/// let r1 = lock.lock_shared(0..100).unwrap();
/// let r2 = lock.try_lock_shared(50..150).unwrap(); // shared holders share
/// assert!(lock.try_lock(99..100).is_err());
/// # drop((r1, r2));
/// ```
pub type RangeLock = Lock<SkipList>;

impl Lock<SkipList> {
    /// A range lock with the default height ([`DEFAULT_MAX_HEIGHT`]) and stripe table
    /// ([`DEFAULT_STRIPE_SHIFT`], [`DEFAULT_STRIPE_SLOTS`]).
    pub fn new() -> Self {
        Lock::from_raw(SkipList::new())
    }

    /// Options for a lock that differs from [`RangeLock::new`]'s defaults.
    ///
    /// ```
    /// use rangelock::RangeLock;
    ///
    /// // 4 KiB stripes over 8192 slots, for page-sized locks spread over 32 MiB.
    /// let lock = RangeLock::builder().stripes(12, 8192).build();
    /// let page = lock.lock(4096..8192).unwrap();
    /// # drop(page);
    /// // No stripe table: every exclusive range goes to the skip list.
    /// let listed = RangeLock::builder().stripes(0, 0).max_height(8).build();
    /// # drop(listed);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A range lock whose skip list uses `height` levels.
    ///
    /// # Panics
    ///
    /// If `height` is 0 or larger than 16.
    pub fn with_max_height(height: usize) -> Self {
        Lock::from_raw(SkipList::with_max_height(height))
    }
}

/// Options of a [`SkipList`]: [`RangeLock::builder`].
#[derive(Clone, Copy, Debug)]
pub struct Builder {
    max_height: usize,
    stripe_shift: u32,
    stripe_slots: usize,
    stripe_windows: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            max_height: DEFAULT_MAX_HEIGHT,
            stripe_shift: DEFAULT_STRIPE_SHIFT,
            stripe_slots: DEFAULT_STRIPE_SLOTS,
            stripe_windows: DEFAULT_STRIPE_WINDOWS,
        }
    }
}

impl Builder {
    /// Skip-list levels (1..=16; default [`DEFAULT_MAX_HEIGHT`]).
    pub fn max_height(self, height: usize) -> Self {
        Builder { max_height: height, ..self }
    }

    /// The stripe table (module docs): stripes of `1 << shift` units, `slots` slots of 16
    /// bytes (a power of two, or 0 to send every exclusive range to the skip list).
    /// Defaults: [`DEFAULT_STRIPE_SHIFT`], [`DEFAULT_STRIPE_SLOTS`].
    pub fn stripes(self, shift: u32, slots: usize) -> Self {
        Builder { stripe_shift: shift, stripe_slots: slots, ..self }
    }

    /// How many windows of the domain (`slots` consecutive stripes each) may get a stripe
    /// table of their own, allocated when first used (a power of two, or 0 for one
    /// direct-mapped table shared by the whole domain). Windows beyond that share the
    /// overflow table. Default: [`DEFAULT_STRIPE_WINDOWS`].
    pub fn windows(self, windows: usize) -> Self {
        Builder { stripe_windows: windows, ..self }
    }

    /// The raw lock.
    ///
    /// # Panics
    ///
    /// If the height is 0 or larger than 16, `slots` or `windows` is neither 0 nor a power
    /// of two, or `shift` is 64 or more.
    pub fn build_raw(self) -> SkipList {
        assert!(
            (1..=MAX_HEIGHT).contains(&self.max_height),
            "skip-list height must be in 1..={MAX_HEIGHT}, got {}",
            self.max_height
        );
        SkipList {
            list: List::new(self.max_height),
            readers: Readers::new(),
            stripes: Stripes::new(self.stripe_shift, self.stripe_slots, self.stripe_windows),
            reclaim: Reclaim::new(),
        }
    }

    /// The lock.
    ///
    /// # Panics
    ///
    /// As [`build_raw`](Self::build_raw).
    pub fn build(self) -> RangeLock {
        Lock::from_raw(self.build_raw())
    }
}

/// The lock-free skip-list range lock: the raw core of [`RangeLock`] (the [module
/// documentation](self) describes the algorithm).
pub struct SkipList {
    list: List,
    readers: Readers,
    stripes: Stripes,
    reclaim: Reclaim,
}

// SAFETY: the raw pointers inside are nodes and segments owned by this lock and shared only
// through atomics under the protocol in the module docs; nothing is tied to a thread.
unsafe impl Send for SkipList {}
// SAFETY: as above; every shared mutation goes through atomics or the pool locks.
unsafe impl Sync for SkipList {}

/// A held range of a [`SkipList`]: where its hold is (list node, stripe slot or reader
/// announcement).
pub struct SkipToken(Kind);

/// Where a held range is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Exclusive, this node linked in the skip list.
    List(NonNull<Node>),
    /// Exclusive, this slot of its stripe (see `stripes`): no node.
    Stripe(NonNull<stripes::Slot>),
    /// Shared, this node announced in the reader table.
    Shared(NonNull<Node>),
}

// SAFETY: the token only names a node or slot of its lock; releasing from another thread is
// part of the protocol (any thread may mark a node or free a slot).
unsafe impl Send for SkipToken {}

impl fmt::Debug for SkipToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SkipToken").field(&self.0).finish()
    }
}

impl SkipList {
    /// A lock with the default height ([`DEFAULT_MAX_HEIGHT`]).
    pub fn new() -> Self {
        Self::with_max_height(DEFAULT_MAX_HEIGHT)
    }

    /// A lock whose skip list uses `height` levels.
    ///
    /// # Panics
    ///
    /// If `height` is 0 or larger than 16.
    pub fn with_max_height(height: usize) -> Self {
        Builder::default().max_height(height).build_raw()
    }

    /// Stripe width (log2 units) and number of slots of the stripe table (0: no table).
    pub fn stripes(&self) -> (u32, usize) {
        (self.stripes.shift(), self.stripes.len())
    }

    /// How many windows may get a stripe table of their own ([`Builder::windows`]; 0 when
    /// there is no stripe table).
    pub fn stripe_windows(&self) -> usize {
        self.stripes.windows()
    }

    /// The number of skip-list levels.
    pub fn max_height(&self) -> usize {
        self.list.height()
    }

    /// Nodes allocated by this lock and not yet freed: held, pending, retired or pooled.
    /// It stays bounded by the peak number of simultaneously used nodes plus the retirement
    /// batches in flight; all of them are freed when the lock drops.
    pub fn allocated_nodes(&self) -> usize {
        self.reclaim.allocated()
    }

    #[inline]
    fn acquire(&self, range: Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        // The safe `RawRangeLock` methods are reachable through `Lock::raw`: an empty or
        // inverted range must not wrap around into a range over every window.
        assert!(
            range.start < range.end,
            "{}",
            crate::RangeError { start: range.start, end: range.end }
        );
        match mode {
            Mode::Exclusive => self.acquire_exclusive(&range, wait),
            Mode::Shared => {
                self.acquire_shared(&range, wait).map(|node| SkipToken(Kind::Shared(node)))
            }
        }
    }

    #[inline]
    fn acquire_exclusive(&self, range: &Range<u64>, wait: Wait) -> Option<SkipToken> {
        if let Some(stripe) = self.stripes.slot_of(range) {
            if stripe.claim() {
                // The common case reaches no node, so it needs no epoch guard: no counted
                // party may overlap (handshake loads, after the fence).
                readers::handshake_fence();
                if !stripe.counted(&self.stripes) || self.stripe_is_free_slow(range, wait) {
                    return Some(SkipToken(Kind::Stripe(stripe.slot())));
                }
                // Retract: whoever waits on the slot sees it free and looks again.
                // SAFETY: `stripe` is ours, claimed above.
                Stripes::release(unsafe { stripe.slot().as_ref() });
                if let Wait::Never = wait {
                    return None;
                }
            }
        }
        self.acquire_listed(self.list_node(range), range, wait)
    }

    /// A fresh private node for the list path.
    fn list_node(&self, range: &Range<u64>) -> NonNull<Node> {
        let node = self.reclaim.alloc();
        // SAFETY: the node is private until linked.
        unsafe { node.as_ref() }.init(range, rng::random_height(self.list.height()));
        node
    }

    /// After claiming a stripe slot whose counts are not all zero: whether no list node and
    /// no reader overlaps.
    #[cold]
    fn stripe_is_free_slow(&self, range: &Range<u64>, wait: Wait) -> bool {
        #[cfg(all(test, not(loom)))]
        tests::SLOW_CHECKS.with(|c| c.set(c.get() + 1));
        // A full epoch table counts as a conflict: retract, and let the list path wait (or
        // give up) as `wait` says.
        let Some(guard) = self.reclaim.pin_for(wait) else { return false };
        matches!(self.list.overlapping(range, &guard), Conflict::None)
            && matches!(self.readers.overlapping(range, &guard), Conflict::None)
    }

    /// The list path of an exclusive acquisition: count the range in the stripe table,
    /// link the (private, initialized) node, then drain overlapping readers and stripe
    /// holders.
    fn acquire_listed(
        &self,
        node: NonNull<Node>,
        range: &Range<u64>,
        wait: Wait,
    ) -> Option<SkipToken> {
        // Counted before the link (part of the handshake with stripe holders: see
        // `stripes`), uncounted only after the unlink (`release_exclusive`).
        self.stripes.count(range);
        // One guard covers the insertion and the reader scan; it is dropped before waiting.
        // Every wait (a conflict, or a full epoch table) is bounded by `wait`.
        let give_up = || {
            self.stripes.uncount(range);
            self.reclaim.free_private(node);
            None
        };
        let Some(mut guard) = self.reclaim.pin_for(wait) else { return give_up() };
        loop {
            match self.list.insert(node, &guard) {
                Conflict::None => break,
                Conflict::Held(ticket) => {
                    drop(guard);
                    if !wait_for(ticket, wait) {
                        return give_up();
                    }
                    let Some(again) = self.reclaim.pin_for(wait) else { return give_up() };
                    guard = again;
                }
                Conflict::Gone => {}
            }
        }
        // Linked (pending): new readers and stripe holders back off; wait out the stripe
        // holders and drain the readers that came first. Stripes before readers: a stripe
        // holder that downgrades announces its reader before it frees its slot, so a pass
        // that finds the slot free finds the reader (module docs, "Downgrade").
        loop {
            let conflict = match self.stripes.overlapping(range, &guard) {
                Conflict::None => self.readers.overlapping(range, &guard),
                other => other,
            };
            match conflict {
                Conflict::None => return Some(SkipToken(Kind::List(node))),
                Conflict::Held(ticket) => {
                    drop(guard);
                    let again =
                        if wait_for(ticket, wait) { self.reclaim.pin_for(wait) } else { None };
                    let Some(again) = again else {
                        self.release_exclusive(node);
                        return None;
                    };
                    guard = again;
                }
                Conflict::Gone => {}
            }
        }
    }

    fn acquire_shared(&self, range: &Range<u64>, wait: Wait) -> Option<NonNull<Node>> {
        // Counted before the announcement (the handshake with stripe holders, see
        // `stripes`), uncounted only after the slot is cleared for good (`release_shared`).
        self.stripes.count(range);
        let node = self.reclaim.alloc();
        // SAFETY: the node is private until announced.
        let node_ref = unsafe { node.as_ref() };
        node_ref.init(range, 0);
        let mut announced = false;
        loop {
            let Some(guard) = self.reclaim.pin_for(wait) else {
                self.stripes.uncount(range);
                if announced {
                    self.reclaim.retire(node);
                } else {
                    self.reclaim.free_private(node);
                }
                return None;
            };
            announced = true;
            let (claim, conflict) = {
                let claim = self.readers.announce(node.as_ptr(), rng::thread_index());
                node_ref.set_claim(claim);
                let conflict = match self.list.overlapping(range, &guard) {
                    Conflict::None => self.stripes.overlapping(range, &guard),
                    other => other,
                };
                (claim, conflict)
            };
            // Never wait inside a protected region.
            drop(guard);
            let Conflict::Held(ticket) = conflict else {
                return Some(node);
            };
            // Retract, so the writer we wait for does not wait for us.
            // SAFETY: `claim` is ours, just announced in this lock's table.
            unsafe { Readers::clear(claim) };
            node_ref.release();
            if !wait_for(ticket, wait) {
                self.stripes.uncount(range);
                self.reclaim.retire(node);
                return None;
            }
            // A new generation *before* re-announcing: a writer that reads the slot must not
            // see a released state and skip us.
            node_ref.new_generation();
        }
    }

    /// Ends an exclusive hold (or a pending node): mark, wake, unlink, uncount, retire.
    fn release_exclusive(&self, node: NonNull<Node>) {
        // SAFETY: the caller owns the held node; it stays valid (type-stable) throughout.
        let node_ref = unsafe { node.as_ref() };
        node_ref.mark();
        node_ref.release();
        {
            let guard = self.reclaim.pin();
            self.list.unlink(node, &guard);
        }
        self.stripes.uncount(&node_ref.range());
        self.reclaim.retire(node);
    }

    /// Ends a shared hold: clear the slot, wake, uncount, retire.
    fn release_shared(&self, node: NonNull<Node>) {
        // SAFETY: the caller owns the held node.
        let node_ref = unsafe { node.as_ref() };
        // SAFETY: the claim was recorded by `acquire_shared`, is still announced (the token
        // is released once) and slots live as long as the lock.
        unsafe { Readers::clear(node_ref.claim()) };
        node_ref.release();
        self.stripes.uncount(&node_ref.range());
        self.reclaim.retire(node);
    }
}

// SAFETY: the reader is announced (and counted) before the exclusive hold ends, so every
// writer that could take the range after that end meets the announcement (module docs,
// "Downgrade").
unsafe impl RawRangeLockDowngrade for SkipList {
    unsafe fn downgrade(&self, token: SkipToken, range: Range<u64>) -> SkipToken {
        // Announce a reader of the range while still holding it exclusively: no overlapping
        // exclusive node is linked (ours excludes them), so there is nothing to check.
        self.stripes.count(&range);
        let node = self.reclaim.alloc();
        // SAFETY: the node is private until announced.
        let node_ref = unsafe { node.as_ref() };
        node_ref.init(&range, 0);
        node_ref.set_claim(self.readers.announce(node.as_ptr(), rng::thread_index()));
        // Then end the exclusive hold: the writers it wakes drain readers and find ours.
        // SAFETY: the caller's token, released once, here.
        unsafe { self.unlock(token) };
        SkipToken(Kind::Shared(node))
    }
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SkipList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("max_height", &self.max_height())
            .field("allocated_nodes", &self.allocated_nodes())
            .finish_non_exhaustive()
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        // No guard borrows the lock any more. Nodes still linked or announced belong to
        // guards that were forgotten (`mem::forget`); they go back to the pool, which frees
        // everything when `reclaim` drops.
        // (A forgotten stripe hold is only a word in a table, freed with it.)
        let (list, readers) = (self.list.drain(), self.readers.drain());
        for node in list.into_iter().chain(readers) {
            self.reclaim.free_private(node);
        }
    }
}

// SAFETY: mutual exclusion and the happens-before edges are argued in the module docs
// (`# Consistency`): unmarked list nodes are disjoint, and readers and writers meet in a
// SeqCst Dekker handshake; unlock is a Release read by later acquisitions.
unsafe impl RawRangeLock for SkipList {
    type Token = SkipToken;

    const NAME: &'static str = "rangelock";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<SkipToken> {
        self.acquire(range, mode, Wait::Never)
    }

    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> SkipToken {
        match self.acquire(range, mode, Wait::Until(None)) {
            Some(token) => token,
            None => unreachable!("waiting without a deadline always acquires"),
        }
    }

    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<SkipToken> {
        self.acquire(range, mode, Wait::Until(Some(deadline)))
    }

    #[inline]
    unsafe fn unlock(&self, token: SkipToken) {
        match token.0 {
            Kind::List(node) => self.release_exclusive(node),
            // SAFETY: the slot of a stripe token is in one of this lock's tables, which live
            // as long as the lock; the token is released once, so the slot is still ours.
            Kind::Stripe(slot) => Stripes::release(unsafe { slot.as_ref() }),
            Kind::Shared(node) => self.release_shared(node),
        }
    }
}
