//! `kernel-tree`: a Linux-style range lock: an augmented interval tree of holders *and*
//! waiters under one spinlock, with per-waiter blocking counts (FIFO-fair).
//!
//! # Algorithm
//!
//! This is the kernel range lock the concurrent-range-locking thesis starts from (§2.1.1:
//! "a range tree accompanied by a spin lock", Bueso/Kara's `range_lock`; the server-sided
//! thesis's combiner counts blocking ranges the same way). Every request, granted or not,
//! is a node of an interval tree keyed by `(start, seq)`, where `seq` is the request's
//! arrival number, and each node stores the maximum `end` of its subtree.
//!
//! * **Acquire**: under the spinlock, count the nodes already in the tree (holders and
//!   earlier waiters) that overlap the range in an incompatible mode, insert the request
//!   with that count as `blocking`, and drop the spinlock. `blocking == 0` means granted;
//!   otherwise the thread waits (spin, then park) until a release brings its count to 0.
//!   `try_lock` does not insert when the count is non-zero.
//! * **Release** (and a waiter giving up at its deadline): under the spinlock, remove the
//!   node, then visit the overlapping nodes with a larger `seq` and an incompatible mode and
//!   decrement their `blocking`; each that reaches 0 is granted and woken (unparked after
//!   the spinlock is dropped).
//!
//! The tree is a treap (a randomized balanced binary search tree: keys in BST order,
//! random priorities in heap order, expected depth O(log n)) in an arena with a free list,
//! augmented with the subtree `max_end` so an overlap query prunes every subtree whose
//! `max_end <= start` and stops at keys `>= end`: O(log n + k) for k overlapping nodes.
//!
//! # Invariants and correctness
//!
//! * For every node `n` in the tree, `n.blocking` equals the number of nodes `m` in the
//!   tree with `m.seq < n.seq` that overlap `n` in an incompatible mode. Insertion gives
//!   the new (largest) `seq` exactly that count; removing `m` decrements exactly the nodes
//!   it was counted by. So two overlapping incompatible nodes can never both have
//!   `blocking == 0`: the later one counts the earlier one. Granted = `blocking == 0`.
//! * FIFO fairness: a request counts earlier *waiters* too, so it never overtakes an
//!   earlier incompatible request (a reader arriving behind a waiting writer waits).
//! * Every grant happens under the spinlock in the releasing thread, after the release's
//!   removal; the waiter observes it through its cell's Acquire load (paired with the
//!   granter's Release swap), so the previous holder's writes are visible to the next one.
//! * Deadlock freedom: a node is only ever blocked by nodes with a smaller `seq`.
//!
//! # Trade-offs
//!
//! Fair and predictable, with waiters sleeping instead of spinning on the structure. Every
//! acquisition and release still serializes on one spinlock, and the balanced tree's
//! rotations and augmentation make each critical section longer than a list's for few held
//! ranges; under many short critical sections the spinlock is the bottleneck (thesis §2.1.1).

use core::fmt;
use core::ops::Range;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::Instant;

use super::spin::SpinLock;
use super::sync::Backoff;
use rangelock::internals::overlaps;
use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// "No node": an empty subtree or the end of the free list.
const NIL: u32 = u32::MAX;

/// How a waiting thread learns it was granted: one cell per thread, reused.
///
/// `state`:
///
/// | value     | meaning                                             |
/// |-----------|-----------------------------------------------------|
/// | `WAITING` | registered, spinning                                |
/// | `PARKED`  | registered, parked (the granter must unpark)        |
/// | `GRANTED` | the count reached 0; the range is held              |
struct WaitCell {
    state: AtomicU8,
    thread: Thread,
}

const WAITING: u8 = 0;
const PARKED: u8 = 1;
const GRANTED: u8 = 2;

impl WaitCell {
    /// Marks the waiter granted; returns whether it is parked and must be unparked.
    #[inline]
    fn grant(&self) -> bool {
        // Release: the waiter's Acquire load of GRANTED must see the release that led to
        // this grant; pairs with the Acquire loads in `wait`.
        self.state.swap(GRANTED, Ordering::Release) == PARKED
    }

    /// Waits until granted (true) or `deadline` passes (false).
    fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut backoff = Backoff::new();
        while !backoff.is_completed() {
            // Acquire: pairs with the Release swap in `grant`.
            if self.state.load(Ordering::Acquire) == GRANTED {
                return true;
            }
            backoff.snooze();
        }
        // Acquire (on failure): a GRANTED seen here pairs with `grant`'s Release swap.
        if self
            .state
            .compare_exchange(WAITING, PARKED, Ordering::Relaxed, Ordering::Acquire)
            .is_err()
        {
            return true;
        }
        loop {
            match deadline {
                None => thread::park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    thread::park_timeout(d - now);
                }
            }
            // Acquire: pairs with the Release swap in `grant`.
            if self.state.load(Ordering::Acquire) == GRANTED {
                return true;
            }
        }
    }
}

thread_local! {
    /// This thread's wait cell (a thread waits on one range at a time).
    static CELL: RefCell<Option<Arc<WaitCell>>> = const { RefCell::new(None) };
}

/// This thread's wait cell, created on first use.
fn wait_cell() -> Arc<WaitCell> {
    CELL.with(|c| {
        Arc::clone(c.borrow_mut().get_or_insert_with(|| {
            Arc::new(WaitCell { state: AtomicU8::new(WAITING), thread: thread::current() })
        }))
    })
}

/// Waiters granted under the spinlock, unparked after it is dropped.
#[derive(Default)]
struct Wakeups {
    cells: Vec<Arc<WaitCell>>,
}

impl Wakeups {
    fn unpark_all(self) {
        for cell in self.cells {
            cell.thread.unpark();
        }
    }
}

/// One request (holder or waiter) in the arena.
struct Node {
    start: u64,
    end: u64,
    /// Maximum `end` in this node's subtree.
    max_end: u64,
    mode: Mode,
    /// Arrival number; also the tie-breaker of the key `(start, seq)`.
    seq: u64,
    priority: u32,
    left: u32,
    right: u32,
    /// Incompatible overlapping earlier requests still in the tree; 0 = granted.
    blocking: u32,
    /// The waiting thread, until granted. `left` doubles as the free-list link.
    waiter: Option<Arc<WaitCell>>,
}

/// The treap, only touched under the spinlock.
struct Tree {
    nodes: Vec<Node>,
    root: u32,
    free: u32,
    len: usize,
    next_seq: u64,
    rng: u32,
}

impl Tree {
    fn new() -> Self {
        Tree { nodes: Vec::new(), root: NIL, free: NIL, len: 0, next_seq: 0, rng: 0x2545_F491 }
    }

    #[inline]
    fn key(&self, i: u32) -> (u64, u64) {
        let n = &self.nodes[i as usize];
        (n.start, n.seq)
    }

    #[inline]
    fn max_end(&self, i: u32) -> u64 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].max_end
        }
    }

    /// Recomputes the augmentation of `i` from its children.
    #[inline]
    fn update(&mut self, i: u32) {
        let (l, r) = (self.nodes[i as usize].left, self.nodes[i as usize].right);
        let m = self.nodes[i as usize].end.max(self.max_end(l)).max(self.max_end(r));
        self.nodes[i as usize].max_end = m;
    }

    fn rotate_right(&mut self, t: u32) -> u32 {
        let l = self.nodes[t as usize].left;
        self.nodes[t as usize].left = self.nodes[l as usize].right;
        self.nodes[l as usize].right = t;
        self.update(t);
        self.update(l);
        l
    }

    fn rotate_left(&mut self, t: u32) -> u32 {
        let r = self.nodes[t as usize].right;
        self.nodes[t as usize].right = self.nodes[r as usize].left;
        self.nodes[r as usize].left = t;
        self.update(t);
        self.update(r);
        r
    }

    fn insert_at(&mut self, t: u32, x: u32) -> u32 {
        if t == NIL {
            return x;
        }
        let t = if self.key(x) < self.key(t) {
            let l = self.insert_at(self.nodes[t as usize].left, x);
            self.nodes[t as usize].left = l;
            if self.nodes[l as usize].priority > self.nodes[t as usize].priority {
                return self.rotate_right(t);
            }
            t
        } else {
            let r = self.insert_at(self.nodes[t as usize].right, x);
            self.nodes[t as usize].right = r;
            if self.nodes[r as usize].priority > self.nodes[t as usize].priority {
                return self.rotate_left(t);
            }
            t
        };
        self.update(t);
        t
    }

    /// Joins two treaps whose keys are all ordered `a < b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    fn remove_at(&mut self, t: u32, x: u32) -> u32 {
        debug_assert_ne!(t, NIL, "kernel-tree: removing a node that is not in the tree");
        if t == x {
            let (l, r) = (self.nodes[t as usize].left, self.nodes[t as usize].right);
            return self.merge(l, r);
        }
        if self.key(x) < self.key(t) {
            let l = self.remove_at(self.nodes[t as usize].left, x);
            self.nodes[t as usize].left = l;
        } else {
            let r = self.remove_at(self.nodes[t as usize].right, x);
            self.nodes[t as usize].right = r;
        }
        self.update(t);
        t
    }

    /// Number of nodes under `t` overlapping `range` in a mode incompatible with `mode`.
    fn count_blockers(&self, t: u32, range: &Range<u64>, mode: Mode) -> u32 {
        if t == NIL || self.nodes[t as usize].max_end <= range.start {
            return 0;
        }
        let n = &self.nodes[t as usize];
        let mut count = self.count_blockers(n.left, range, mode);
        if n.start < range.end {
            if overlaps(&(n.start..n.end), range) && !mode.compatible(n.mode) {
                count += 1;
            }
            count += self.count_blockers(n.right, range, mode);
        }
        count
    }

    /// Decrements the count of every node under `t` that arrived after `seq` and overlaps
    /// `range` in a mode incompatible with `mode`; grants those reaching 0.
    fn unblock(&mut self, t: u32, range: &Range<u64>, mode: Mode, seq: u64, wake: &mut Wakeups) {
        if t == NIL || self.nodes[t as usize].max_end <= range.start {
            return;
        }
        let (left, right, start) = {
            let n = &self.nodes[t as usize];
            (n.left, n.right, n.start)
        };
        self.unblock(left, range, mode, seq, wake);
        if start < range.end {
            let n = &mut self.nodes[t as usize];
            if n.seq > seq && overlaps(&(n.start..n.end), range) && !mode.compatible(n.mode) {
                debug_assert!(n.blocking > 0, "kernel-tree: blocking count underflow");
                n.blocking -= 1;
                if n.blocking == 0 {
                    if let Some(cell) = n.waiter.take() {
                        if cell.grant() {
                            wake.cells.push(cell);
                        }
                    }
                }
            }
            self.unblock(right, range, mode, seq, wake);
        }
    }

    /// Adds a request with `blocking` earlier conflicts; returns its index.
    fn insert(
        &mut self,
        range: Range<u64>,
        mode: Mode,
        blocking: u32,
        waiter: Option<Arc<WaitCell>>,
    ) -> u32 {
        // xorshift32 priorities
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        let seq = self.next_seq;
        self.next_seq += 1;
        let node = Node {
            start: range.start,
            end: range.end,
            max_end: range.end,
            mode,
            seq,
            priority: x,
            left: NIL,
            right: NIL,
            blocking,
            waiter,
        };
        let index = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].left;
            self.nodes[i as usize] = node;
            i
        } else {
            let i = u32::try_from(self.nodes.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("kernel-tree: more than u32::MAX - 1 requests");
            self.nodes.push(node);
            i
        };
        self.root = self.insert_at(self.root, index);
        self.len += 1;
        index
    }

    /// Removes request `index`, unblocking the later requests it blocked.
    fn remove(&mut self, index: u32, wake: &mut Wakeups) {
        self.root = self.remove_at(self.root, index);
        self.len -= 1;
        let (range, mode, seq) = {
            let n = &mut self.nodes[index as usize];
            n.waiter = None;
            (n.start..n.end, n.mode, n.seq)
        };
        self.unblock(self.root, &range, mode, seq, wake);
        let n = &mut self.nodes[index as usize];
        n.left = self.free;
        n.right = NIL;
        self.free = index;
    }
}

/// The Linux kernel's range lock: an augmented interval tree with blocking counts under
/// a spinlock.
///
/// See the [module documentation](self).
pub struct KernelTree {
    tree: SpinLock<Tree>,
}

/// A range held in a [`KernelTree`]: its node index.
#[derive(Debug)]
pub struct KernelTreeToken {
    index: u32,
}

impl KernelTree {
    /// An empty lock.
    pub fn new() -> Self {
        KernelTree { tree: SpinLock::new(Tree::new()) }
    }

    fn acquire(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: bool,
        deadline: Option<Instant>,
    ) -> Option<KernelTreeToken> {
        let mut tree = self.tree.lock();
        let blocking = tree.count_blockers(tree.root, &range, mode);
        if blocking == 0 {
            return Some(KernelTreeToken { index: tree.insert(range, mode, 0, None) });
        }
        if !wait {
            return None;
        }
        let cell = wait_cell();
        // Relaxed: only granters write the cell, and they run under the spinlock we hold.
        cell.state.store(WAITING, Ordering::Relaxed);
        let index = tree.insert(range, mode, blocking, Some(Arc::clone(&cell)));
        drop(tree);
        self.wait_slow(index, &cell, deadline)
    }

    #[cold]
    fn wait_slow(
        &self,
        index: u32,
        cell: &WaitCell,
        deadline: Option<Instant>,
    ) -> Option<KernelTreeToken> {
        if cell.wait(deadline) {
            return Some(KernelTreeToken { index });
        }
        let mut tree = self.tree.lock();
        if tree.nodes[index as usize].blocking == 0 {
            // Granted between the deadline and taking the spinlock; the spinlock orders the
            // granting release before us.
            return Some(KernelTreeToken { index });
        }
        let mut wake = Wakeups::default();
        tree.remove(index, &mut wake);
        drop(tree);
        wake.unpark_all();
        None
    }
}

impl KernelTree {
    /// Number of requests in the tree: holders plus waiters (a statistic; it may be stale
    /// as soon as it is returned).
    pub fn requests(&self) -> usize {
        self.tree.lock().len
    }
}

impl Default for KernelTree {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for KernelTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.tree.lock().len;
        f.debug_struct("KernelTree").field("requests", &len).finish()
    }
}

// SAFETY: see "Invariants and correctness" in the module docs: a request is granted only
// when no earlier overlapping incompatible request remains in the tree, and every later
// overlapping incompatible request counts it until it is removed by `unlock`. Grants are
// published with Release and observed with Acquire (or under the spinlock).
unsafe impl RawRangeLock for KernelTree {
    type Token = KernelTreeToken;

    const NAME: &'static str = "kernel-tree";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.acquire(range, mode, false, None)
    }

    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token {
        rangelock::internals::assert_valid(&range);
        match self.acquire(range, mode, true, None) {
            Some(token) => token,
            None => unreachable!("kernel-tree: a wait without deadline gave up"),
        }
    }

    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.acquire(range, mode, true, Some(deadline))
    }

    unsafe fn unlock(&self, token: Self::Token) {
        let mut wake = Wakeups::default();
        self.tree.lock().remove(token.index, &mut wake);
        wake.unpark_all();
    }
}
