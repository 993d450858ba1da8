//! The node: one range (held or waiting), its tagged forward links and its wait word.
//!
//! Nodes are *type-stable*: once allocated by a lock's pool they stay valid `Node`s until
//! that lock is dropped (retired nodes go back to the pool, never to the allocator before
//! the lock drops). Two consequences the protocol relies on:
//! - traversals hold an epoch guard, so a node they reach is not *reused* under them
//!   (no ABA on the links they compare-and-swap);
//! - waiters hold no guard while parked: they keep a [`Ticket`] on the node's wait word
//!   (`state`, see `wait`), which is always a valid atomic, and a generation change tells
//!   them the range they waited for is gone.

use core::ops::Range;
use core::ptr::NonNull;

use super::readers::{Claim, Line};
use super::wait::{self, Ticket, OVER, USE_SHIFT};
use crate::primitive::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// The largest height a lock may use (the length of every node's link array; 4 under loom
/// to keep the models small).
pub(crate) const MAX_HEIGHT: usize = if cfg!(loom) { 4 } else { 16 };

/// The low bit of a forward link: set when the node *owning* the link is logically deleted.
const MARK: usize = 1;

/// `state`: the holder released (or the waiter retracted) this use of the node.
const RELEASED: u64 = OVER;
/// `state`: one generation (the use bits of the wait word).
const GEN_ONE: u64 = 1 << USE_SHIFT;
/// `state`: the generation bits.
const GEN_MASK: u64 = !(GEN_ONE - 1);

/// A skip-list node (exclusive ranges) or a reader announcement (shared ranges).
pub(crate) struct Node {
    /// Tagged forward links, one per level; `next[l] & MARK` marks *this* node as deleted
    /// at level `l`. Only `next[..height]` are used. Null is the +∞ end of the list.
    next: [AtomicUsize; MAX_HEIGHT],
    /// Range start; written while the node is private, read under an epoch guard.
    start: AtomicU64,
    /// Range end (exclusive); like `start`.
    end: AtomicU64,
    /// Number of levels this node is linked at (1..=MAX_HEIGHT; 0 for reader nodes).
    height: AtomicUsize,
    /// The wait word (layout and protocol in `wait`):
    ///
    /// | bits  | meaning                                                         |
    /// |-------|-----------------------------------------------------------------|
    /// | 0     | `RELEASED` (`OVER`): this use is over (unlocked or retracted)    |
    /// | 1     | `PARKED`: a waiter is parked on the node; the releaser unparks  |
    /// | 2     | reserved                                                        |
    /// | 3..64 | generation: bumped every time the node is (re)used              |
    state: AtomicU64,
    /// For a reader node: the line of the announcement slot it occupies (for O(1) release).
    claim_line: AtomicPtr<Line>,
    /// For a reader node: the index of its slot in `claim_line`.
    claim_index: AtomicUsize,
}

impl Node {
    /// A fresh, unlinked node (generation 0, released).
    pub(crate) fn new() -> Self {
        Node {
            next: core::array::from_fn(|_| AtomicUsize::new(0)),
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
            height: AtomicUsize::new(0),
            state: AtomicU64::new(RELEASED),
            claim_line: AtomicPtr::new(core::ptr::null_mut()),
            claim_index: AtomicUsize::new(0),
        }
    }

    /// Prepares a private node for a new use: sets the range and height, clears the links and
    /// starts a new generation.
    ///
    /// The caller owns the node exclusively (fresh from the pool); it becomes visible to
    /// others only through a later SeqCst publication (link CAS or slot CAS).
    pub(crate) fn init(&self, range: &Range<u64>, height: usize) {
        debug_assert!(height <= MAX_HEIGHT);
        self.start.store(range.start, Ordering::Relaxed);
        self.end.store(range.end, Ordering::Relaxed);
        self.set_height(height);
        self.new_generation();
    }

    /// Gives a private node initialized with height 0 (a stripe attempt) the height of a
    /// list node, with cleared links.
    pub(crate) fn set_height(&self, height: usize) {
        debug_assert!(height <= MAX_HEIGHT);
        self.height.store(height, Ordering::Relaxed);
        for link in &self.next[..height] {
            link.store(0, Ordering::Relaxed);
        }
    }

    /// Starts a new generation (unreleased, no parked waiters).
    ///
    /// Called on private nodes and by a reader re-announcing its own retracted node; waiters
    /// holding an older ticket see the generation change and stop waiting.
    pub(crate) fn new_generation(&self) {
        let s = self.state.load(Ordering::Relaxed);
        // Release: a waiter that reads the new generation (Acquire in `is_over`) and then
        // rescans sees everything this owner did before; pairs with `Node::is_over`.
        self.state.store((s & GEN_MASK).wrapping_add(GEN_ONE), Ordering::Release);
    }

    /// The range of the node.
    #[inline]
    pub(crate) fn range(&self) -> Range<u64> {
        self.start.load(Ordering::Relaxed)..self.end.load(Ordering::Relaxed)
    }

    /// Range start.
    #[inline]
    pub(crate) fn start(&self) -> u64 {
        self.start.load(Ordering::Relaxed)
    }

    /// Range end (exclusive).
    #[inline]
    pub(crate) fn end(&self) -> u64 {
        self.end.load(Ordering::Relaxed)
    }

    /// Number of levels the node is linked at.
    #[inline]
    pub(crate) fn height(&self) -> usize {
        self.height.load(Ordering::Relaxed)
    }

    /// The forward link at `level`.
    #[inline]
    pub(crate) fn link(&self, level: usize) -> &AtomicUsize {
        &self.next[level]
    }

    /// The links of every level, `[..MAX_HEIGHT]` (only `[..height]` are used).
    #[inline]
    pub(crate) fn links(&self) -> &[AtomicUsize; MAX_HEIGHT] {
        &self.next
    }

    /// Marks the node deleted at every level, top-down; the level-0 mark is the
    /// linearization point of the release. Only the node's owner marks, once.
    pub(crate) fn mark(&self) {
        for link in self.next[..self.height()].iter().rev() {
            // SeqCst: the mark must be ordered with the link CASes of traversals (a snip
            // reads the mark and then swings the predecessor's link) and, at level 0, it
            // publishes the holder's critical section to the next holder, which reads the
            // mark (or the snipped link) in `List::find`.
            link.fetch_or(MARK, Ordering::SeqCst);
        }
    }

    /// A ticket for the current use of the node, or `None` if that use is already over.
    #[inline]
    pub(crate) fn ticket(&self) -> Option<Ticket> {
        // Acquire: pairs with the Release of `release`/`new_generation`.
        let s = self.state.load(Ordering::Acquire);
        (s & RELEASED == 0).then(|| Ticket::new(&self.state, s))
    }

    /// Ends this use of the node and wakes its parked waiters.
    #[inline]
    pub(crate) fn release(&self) {
        // The owner is the only writer of the generation, so the next value is known: the
        // same generation, released, no parked waiters (those are woken now).
        let s = self.state.load(Ordering::Relaxed);
        let old = wait::end_use(&self.state, (s & GEN_MASK) | RELEASED);
        wait::wake(&self.state, old);
    }

    /// Records the announcement slot of a reader node.
    #[inline]
    pub(crate) fn set_claim(&self, claim: Claim) {
        let (line, index) = claim.parts();
        // Relaxed: read back only by the node's owner (`claim`), or by whoever the token
        // moved to, which synchronized with the owner when it received the token.
        self.claim_line.store(line.as_ptr(), Ordering::Relaxed);
        // Relaxed: as above.
        self.claim_index.store(index, Ordering::Relaxed);
    }

    /// The announcement slot of a reader node (set by `set_claim`).
    #[inline]
    pub(crate) fn claim(&self) -> Claim {
        // Relaxed: see `set_claim`.
        let line = self.claim_line.load(Ordering::Relaxed);
        // Relaxed: see `set_claim`.
        let index = self.claim_index.load(Ordering::Relaxed);
        Claim::from_parts(NonNull::new(line).expect("a reader node records its slot"), index)
    }
}

/// Splits a tagged link into the successor pointer and the mark of the link's owner.
#[inline]
pub(crate) fn untag(link: usize) -> (*mut Node, bool) {
    ((link & !MARK) as *mut Node, link & MARK != 0)
}

/// An unmarked link to `node`.
#[inline]
pub(crate) fn tag(node: *mut Node) -> usize {
    node as usize
}
