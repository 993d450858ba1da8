//! The lock-free skip list of exclusive ranges (the thesis's list, repaired).
//!
//! Nodes are sorted by the key `(start, address)`: the address breaks ties so every key is
//! unique (a released node and a new node with the same start can coexist, and
//! `find_delete` of one never stops at the other). The head sentinel is -∞ and never
//! compared; a null link is +∞, so no range value is reserved and `0..` and `..u64::MAX`
//! ranges work.
//!
//! Invariants (at every instant):
//! 1. the physical list at every level is sorted by key;
//! 2. an unmarked node is linked at level 0 (links are only ever swung past marked nodes);
//! 3. the ranges of the unmarked nodes are pairwise disjoint (half-open overlap).
//!
//! [`List::find`] returns, per level, a predecessor with key < target and its successor,
//! both read from one *unmarked* link of the predecessor: at the instant of that read the
//! two were adjacent and the predecessor was in the list. With invariant 3 this makes the
//! conflict test local: among unmarked nodes only the level-0 predecessor can overlap a
//! range from the left, and only the level-0 successor can be the first to overlap it from
//! the right (a node before the predecessor ends at or before the predecessor's start; a
//! node after the successor starts at or after the successor's start). Insertion re-checks
//! that adjacency with its level-0 CAS, which keeps invariant 3.

use core::ops::Range;
use core::ptr::NonNull;

use super::node::{tag, untag, Node, MAX_HEIGHT};
use super::readers::handshake_fence;
use super::reclaim::Guard;
use super::wait::Ticket;
use crate::primitive::Ordering;
use crate::range::overlaps;

/// Per-level predecessors or successors filled by [`List::find`].
type Levels = [*mut Node; MAX_HEIGHT];

/// The sort key of a node: start, then address.
type Key = (u64, usize);

#[inline]
fn key_of(node: *mut Node) -> Key {
    // SAFETY: callers pass nodes reached under an epoch guard (or their own node).
    (unsafe { &*node }.start(), node as usize)
}

/// What a conflict test found.
#[derive(Debug)]
pub(crate) enum Conflict {
    /// No node of the list overlaps the range.
    None,
    /// This node overlaps and its current use is not over: wait for it.
    Held(Ticket),
    /// An overlapping node was found but its use ended meanwhile: look again.
    Gone,
}

/// The skip list (head sentinel and height). Traversals need an epoch guard.
pub(crate) struct List {
    head: NonNull<Node>,
    height: usize,
}

impl List {
    /// An empty list using `height` levels (1..=MAX_HEIGHT).
    pub(crate) fn new(height: usize) -> Self {
        let head = Box::new(Node::new());
        head.init(&(0..0), height);
        List { head: NonNull::from(Box::leak(head)), height }
    }

    /// The number of levels.
    pub(crate) fn height(&self) -> usize {
        self.height
    }

    /// Fills `preds[l]`/`succs[l]` for every level with the last node whose key is below
    /// `key` and its successor, snipping marked nodes on the way (thesis `find`, with the
    /// restart when a predecessor's own link is marked, so every returned pair comes from
    /// an unmarked link).
    ///
    /// Only levels below `min_levels` are filled (callers use no others): an insertion
    /// passes its node's height, so every level it links at is filled, and `unlink` passes
    /// the node's own height, so every level it is linked at is searched.
    ///
    /// Levels at or above `min_levels` only speed the search up, and are used as far up as
    /// they are non-empty without a gap: the non-empty levels of a skip list are its lowest
    /// ones (a node is linked at every level below its top), so a short list costs one
    /// load of the head, not one per level of the maximum height. While nodes are being
    /// linked or unlinked a higher level may be non-empty above an empty one; starting
    /// below it is still correct (every level below the start is traversed from the
    /// head), only slower.
    fn find(
        &self,
        key: Key,
        min_levels: usize,
        preds: &mut Levels,
        succs: &mut Levels,
        _guard: &Guard<'_>,
    ) {
        // SAFETY: the head lives as long as the list.
        let head = unsafe { self.head.as_ref() };
        'retry: loop {
            // SeqCst: like every link load of a traversal (see below); the head is never
            // marked, so a null link is an empty level.
            let upper = head.links().get(min_levels..self.height).unwrap_or(&[]);
            let levels =
                min_levels + upper.iter().take_while(|l| l.load(Ordering::SeqCst) != 0).count();
            let mut pred = self.head.as_ptr();
            for level in (0..levels).rev() {
                // SAFETY: `pred` is the head or a node reached under `_guard`; retired nodes
                // are not reused while the guard lives, and nodes are never freed before the
                // lock drops.
                let pred_ref = unsafe { &*pred };
                // SeqCst: link loads take part in the reader/writer handshake (module docs of
                // `skiplist`, Consistency) and acquire the node contents published by the
                // inserting CAS.
                let (mut curr, marked) = untag(pred_ref.link(level).load(Ordering::SeqCst));
                if marked {
                    continue 'retry;
                }
                loop {
                    if curr.is_null() {
                        break;
                    }
                    // SAFETY: as for `pred`.
                    let curr_ref = unsafe { &*curr };
                    // SeqCst: as above; also acquires the releaser's critical section when the
                    // link is marked.
                    let (succ, curr_marked) = untag(curr_ref.link(level).load(Ordering::SeqCst));
                    if curr_marked {
                        // SAFETY: as for `pred`.
                        let pred_link = unsafe { &*pred }.link(level);
                        // SeqCst: swings the link past a deleted node; ordered with inserts and
                        // marks on the same word.
                        match pred_link.compare_exchange(
                            tag(curr),
                            tag(succ),
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        ) {
                            Ok(_) => {
                                curr = succ;
                                continue;
                            }
                            Err(_) => continue 'retry,
                        }
                    }
                    if key_of(curr) < key {
                        pred = curr;
                        curr = succ;
                    } else {
                        break;
                    }
                }
                preds[level] = pred;
                succs[level] = curr;
            }
            return;
        }
    }

    /// The conflict between `range` and the adjacent pair `pred`, `succ` (see module docs).
    fn conflict(&self, pred: *mut Node, succ: *mut Node, range: &Range<u64>) -> Conflict {
        let mut found = None;
        if pred != self.head.as_ptr() {
            // SAFETY: reached under the caller's guard.
            let p = unsafe { &*pred };
            if p.end() > range.start {
                found = Some(p);
            }
        }
        if found.is_none() && !succ.is_null() {
            // SAFETY: reached under the caller's guard.
            let s = unsafe { &*succ };
            if s.start() < range.end {
                found = Some(s);
            }
        }
        match found {
            None => Conflict::None,
            Some(node) => {
                debug_assert!(overlaps(&node.range(), range));
                match node.ticket() {
                    Some(ticket) => Conflict::Held(ticket),
                    None => Conflict::Gone,
                }
            }
        }
    }

    /// The exclusive node overlapping `range`, if any (used by readers after announcing).
    pub(crate) fn overlapping(&self, range: &Range<u64>, guard: &Guard<'_>) -> Conflict {
        // The reader's half of the handshake is "announce; fence; read the list"; pairs with
        // the writer's "link; fence; read the counts and slots" in `Readers::overlapping`. Of
        // the two, the later one in the SeqCst order makes its thread's reads see the other
        // thread's store (see `handshake_fence`).
        handshake_fence();
        let mut preds = [core::ptr::null_mut(); MAX_HEIGHT];
        let mut succs = [core::ptr::null_mut(); MAX_HEIGHT];
        loop {
            // Key (start, 0): the predecessor is the last node starting before `start`.
            self.find((range.start, 0), 1, &mut preds, &mut succs, guard);
            match self.conflict(preds[0], succs[0], range) {
                Conflict::Gone => continue,
                other => return other,
            }
        }
    }

    /// Links `node` (private, initialized) at all its levels if no unmarked node overlaps its
    /// range; otherwise returns the conflict and leaves `node` private.
    pub(crate) fn insert(&self, node: NonNull<Node>, guard: &Guard<'_>) -> Conflict {
        let node_ptr = node.as_ptr();
        // SAFETY: the caller owns the node.
        let node_ref = unsafe { node.as_ref() };
        let key = key_of(node_ptr);
        let range = node_ref.range();
        let height = node_ref.height();
        let mut preds = [core::ptr::null_mut(); MAX_HEIGHT];
        let mut succs = [core::ptr::null_mut(); MAX_HEIGHT];
        loop {
            self.find(key, height, &mut preds, &mut succs, guard);
            match self.conflict(preds[0], succs[0], &range) {
                Conflict::None => {}
                Conflict::Gone => continue,
                held => return held,
            }
            for (level, succ) in succs[..height].iter().enumerate() {
                // Relaxed: the node is private; the CAS below publishes it.
                node_ref.link(level).store(tag(*succ), Ordering::Relaxed);
            }
            // SAFETY: reached under `guard`.
            let pred0 = unsafe { &*preds[0] };
            // SeqCst: the linearization point of the acquisition attempt; publishes the node
            // (Release) and takes part in the reader/writer handshake.
            if pred0
                .link(0)
                .compare_exchange(tag(succs[0]), tag(node_ptr), Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                continue;
            }
            for level in 1..height {
                loop {
                    // Relaxed: the node is not linked at `level` yet, so nobody reads this link
                    // before the CAS below publishes it.
                    node_ref.link(level).store(tag(succs[level]), Ordering::Relaxed);
                    // SAFETY: reached under `guard`.
                    let pred = unsafe { &*preds[level] };
                    // SeqCst: publishes the node at this level; same order as level 0.
                    if pred
                        .link(level)
                        .compare_exchange(
                            tag(succs[level]),
                            tag(node_ptr),
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        )
                        .is_ok()
                    {
                        break;
                    }
                    self.find(key, height, &mut preds, &mut succs, guard);
                }
            }
            return Conflict::None;
        }
    }

    /// Physically unlinks a marked node from every level (a `find` for its exact key snips
    /// it wherever it is still linked). Afterwards no thread that starts a traversal can
    /// reach it.
    pub(crate) fn unlink(&self, node: NonNull<Node>, guard: &Guard<'_>) {
        let mut preds = [core::ptr::null_mut(); MAX_HEIGHT];
        let mut succs = [core::ptr::null_mut(); MAX_HEIGHT];
        // SAFETY: the caller owns the (marked) node.
        let height = unsafe { node.as_ref() }.height();
        self.find(key_of(node.as_ptr()), height, &mut preds, &mut succs, guard);
    }

    /// Takes every node still linked at level 0 (only called when no other thread can use
    /// the list, i.e. when the lock drops).
    pub(crate) fn drain(&mut self) -> Vec<NonNull<Node>> {
        let mut nodes = Vec::new();
        // SAFETY: `&mut self`: no concurrent user; the head is valid.
        let (mut curr, _) = untag(unsafe { self.head.as_ref() }.link(0).load(Ordering::Relaxed));
        while let Some(node) = NonNull::new(curr) {
            nodes.push(node);
            // SAFETY: linked nodes are valid pool nodes.
            curr = untag(unsafe { node.as_ref() }.link(0).load(Ordering::Relaxed)).0;
        }
        for level in 0..self.height {
            // SAFETY: as above.
            unsafe { self.head.as_ref() }.link(level).store(0, Ordering::Relaxed);
        }
        nodes
    }
}

impl Drop for List {
    fn drop(&mut self) {
        // SAFETY: the head came from `Box::leak` in `new` and is freed only here.
        drop(unsafe { Box::from_raw(self.head.as_ptr()) });
    }
}
