//! `song-skiplist`: a sequential skip list of held ranges under one spinlock (Song et al.).
//!
//! # Algorithm
//!
//! Concurrent-range-locking thesis §2.1.2: Song et al. replace the kernel's interval tree
//! by a skip list of the currently locked ranges, ordered by start, guarded by a single
//! spinlock. An acquisition takes the spinlock, searches the skip list for a range that
//! overlaps its own in an incompatible mode, and either inserts its node (granted) or
//! drops the spinlock and retries (spin with exponential backoff, then yield) until the
//! overlap is gone or its deadline passes. A release takes the spinlock and unlinks its
//! node; the token is the node's index, so the release finds its predecessors with one
//! O(log n) search by `(start, index)` and never searches by range equality.
//!
//! Shared mode: overlapping shared ranges coexist in the list, so a conflicting range may
//! start long before the one we check (the exclusive-only "only the predecessor can
//! overlap" shortcut does not hold). The list tracks `max_len`, an upper bound on the
//! length of every range in it (the maximum inserted since the list was last empty); any
//! range overlapping `[s, e)` starts in `[s - max_len, e)`, so the check searches to
//! `s - max_len` in O(log n) and scans forward to `e`. With ranges of similar size this
//! stays O(log n + k) for k nearby ranges; one huge range makes the scan long until the
//! list empties again.
//!
//! Nodes live in an arena (`Vec`) with a free list, so a steady workload allocates
//! nothing; levels are drawn from a xorshift generator under the spinlock (p = 1/2, at
//! most [`MAX_LEVEL`] levels).
//!
//! # Invariants
//!
//! * Level 0 holds every granted, unreleased acquisition, sorted by `(start, index)`;
//!   level `l` is a sorted sub-list of level `l - 1`.
//! * No two nodes overlap unless both are shared (checked under the spinlock before every
//!   insert).
//! * `max_len >= end - start` for every node in the list.
//!
//! # Trade-offs
//!
//! Every acquisition and release serializes on one spinlock; waiters hammer it with
//! retries (no queue, no fairness, no parking). It is the best baseline when many ranges
//! are held at once and contention is low (the thesis's W2), and collapses under many
//! short critical sections (W1) where the spinlock is the bottleneck.

use core::fmt;
use core::ops::Range;
use std::time::Instant;

use super::spin::SpinLock;
use super::sync::Backoff;
use rangelock::internals::overlaps;
use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// Highest level of a node (levels `0..MAX_LEVEL`).
pub const MAX_LEVEL: usize = 16;

/// "No node": the end of a level, or the head when used as a predecessor.
const NIL: u32 = u32::MAX;

/// One held range in the arena.
#[derive(Debug, Clone)]
struct Node {
    start: u64,
    end: u64,
    mode: Mode,
    /// Number of levels this node is linked on (`1..=MAX_LEVEL`); 0 while free.
    height: usize,
    /// Successor index per level; `next[0]` doubles as the free-list link.
    next: [u32; MAX_LEVEL],
}

/// The sequential skip list, only touched under the spinlock.
#[derive(Debug)]
struct List {
    nodes: Vec<Node>,
    /// Head of the free list through `next[0]`.
    free: u32,
    head: [u32; MAX_LEVEL],
    len: usize,
    /// Upper bound on `end - start` over the nodes in the list (see module docs).
    max_len: u64,
    rng: u64,
}

impl List {
    fn new() -> Self {
        List {
            nodes: Vec::new(),
            free: NIL,
            head: [NIL; MAX_LEVEL],
            len: 0,
            max_len: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    #[inline]
    fn next(&self, pred: u32, level: usize) -> u32 {
        if pred == NIL {
            self.head[level]
        } else {
            self.nodes[pred as usize].next[level]
        }
    }

    #[inline]
    fn set_next(&mut self, pred: u32, level: usize, to: u32) {
        if pred == NIL {
            self.head[level] = to;
        } else {
            self.nodes[pred as usize].next[level] = to;
        }
    }

    /// Whether node `i` sorts before the key `(start, index)`.
    #[inline]
    fn before(&self, i: u32, start: u64, index: u32) -> bool {
        let n = &self.nodes[i as usize];
        (n.start, i) < (start, index)
    }

    /// The last node before `(start, index)` on every level (`NIL` = head).
    fn preds(&self, start: u64, index: u32) -> [u32; MAX_LEVEL] {
        let mut preds = [NIL; MAX_LEVEL];
        let mut pred = NIL;
        for level in (0..MAX_LEVEL).rev() {
            loop {
                let next = self.next(pred, level);
                if next != NIL && self.before(next, start, index) {
                    pred = next;
                } else {
                    break;
                }
            }
            preds[level] = pred;
        }
        preds
    }

    /// Whether `range` in `mode` is compatible with every node.
    fn admits(&self, range: &Range<u64>, mode: Mode) -> bool {
        if self.len == 0 {
            return true;
        }
        // Every range overlapping `range` starts at or after `lower` (see module docs).
        let lower = range.start.saturating_sub(self.max_len);
        let mut cur = self.next(self.preds(lower, 0)[0], 0);
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if n.start >= range.end {
                break;
            }
            if overlaps(&(n.start..n.end), range) && !mode.compatible(n.mode) {
                return false;
            }
            cur = n.next[0];
        }
        true
    }

    /// A random height: geometric with p = 1/2, capped at `MAX_LEVEL`.
    fn random_height(&mut self) -> usize {
        // xorshift64
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x.trailing_ones() as usize + 1).min(MAX_LEVEL)
    }

    /// Inserts `range` (already checked by `admits`) and returns its node index.
    fn insert(&mut self, range: Range<u64>, mode: Mode) -> u32 {
        let height = self.random_height();
        let node =
            Node { start: range.start, end: range.end, mode, height, next: [NIL; MAX_LEVEL] };
        let index = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next[0];
            self.nodes[i as usize] = node;
            i
        } else {
            let i = u32::try_from(self.nodes.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("song-skiplist: more than u32::MAX - 1 held ranges");
            self.nodes.push(node);
            i
        };
        let preds = self.preds(range.start, index);
        for (level, &pred) in preds.iter().enumerate().take(height) {
            let succ = self.next(pred, level);
            self.nodes[index as usize].next[level] = succ;
            self.set_next(pred, level, index);
        }
        self.len += 1;
        self.max_len = self.max_len.max(range.end - range.start);
        index
    }

    /// Unlinks node `index` and puts it on the free list.
    fn remove(&mut self, index: u32) {
        let (start, height) = {
            let n = &self.nodes[index as usize];
            (n.start, n.height)
        };
        debug_assert!(height > 0, "song-skiplist: unlock of a free node");
        let preds = self.preds(start, index);
        for (level, &pred) in preds.iter().enumerate().take(height) {
            debug_assert_eq!(self.next(pred, level), index);
            let succ = self.nodes[index as usize].next[level];
            self.set_next(pred, level, succ);
        }
        let n = &mut self.nodes[index as usize];
        n.height = 0;
        n.next[0] = self.free;
        self.free = index;
        self.len -= 1;
        if self.len == 0 {
            self.max_len = 0;
        }
    }
}

/// Song et al.'s range lock: a sequential skip list under one spinlock.
///
/// See the [module documentation](self).
pub struct SongSkipList {
    list: SpinLock<List>,
}

/// A range held in a [`SongSkipList`]: its node index.
#[derive(Debug)]
pub struct SongToken {
    index: u32,
}

impl SongSkipList {
    /// An empty lock.
    pub fn new() -> Self {
        SongSkipList { list: SpinLock::new(List::new()) }
    }

    /// One attempt under the spinlock.
    #[inline]
    fn attempt(&self, range: &Range<u64>, mode: Mode) -> Option<SongToken> {
        let mut list = self.list.lock();
        list.admits(range, mode).then(|| SongToken { index: list.insert(range.clone(), mode) })
    }

    #[cold]
    fn lock_slow(
        &self,
        range: Range<u64>,
        mode: Mode,
        deadline: Option<Instant>,
    ) -> Option<SongToken> {
        let mut backoff = Backoff::new();
        loop {
            backoff.snooze();
            if let Some(token) = self.attempt(&range, mode) {
                return Some(token);
            }
            if backoff.is_completed() && deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
        }
    }
}

impl Default for SongSkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SongSkipList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = self.list.lock().len;
        f.debug_struct("SongSkipList").field("held", &held).finish()
    }
}

// SAFETY: every insert is preceded, under the same spinlock hold, by a check that no node
// overlaps in an incompatible mode; nodes leave only through `unlock`. The spinlock's
// Acquire/Release orders each release before every later acquisition.
unsafe impl RawRangeLock for SongSkipList {
    type Token = SongToken;

    const NAME: &'static str = "song-skiplist";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.attempt(&range, mode)
    }

    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token {
        rangelock::internals::assert_valid(&range);
        match self.attempt(&range, mode) {
            Some(token) => token,
            None => match self.lock_slow(range, mode, None) {
                Some(token) => token,
                None => unreachable!("song-skiplist: a wait without deadline gave up"),
            },
        }
    }

    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        match self.attempt(&range, mode) {
            Some(token) => Some(token),
            None => self.lock_slow(range, mode, Some(deadline)),
        }
    }

    #[inline]
    unsafe fn unlock(&self, token: Self::Token) {
        self.list.lock().remove(token.index);
    }
}
