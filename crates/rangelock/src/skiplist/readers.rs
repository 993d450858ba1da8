//! Reader announcements: a growable table of slots, each holding a pointer to the node of
//! one shared holder (or of a reader about to check for writers).
//!
//! The table is a list of segments; a segment is [`LINES`] cache lines, and each line holds
//! [`LINE_SLOTS`] slots plus a count of the slots in use on that line. A reader claims a
//! free slot with a SeqCst CAS, starting at a per-thread line so threads tend to use
//! different cache lines, and then increments its line's count (an RMW on a line it already
//! owns, so readers of different lines do not contend); when every slot is taken it appends a
//! new segment. Segments are never freed before the lock drops, so the table only grows to
//! the peak number of concurrently held (or announcing) shared ranges.
//!
//! A writer loads the count of every line (SeqCst) and scans only the slots of lines whose
//! count is not zero: with no reader announced, a writer's scan costs one load per line
//! instead of one per slot.
//!
//! # Why the counts keep the handshake sound
//!
//! A reader's slot CAS and count increment both come before its handshake point (see
//! `handshake_fence`) and its reads of the list; a writer's count and slot loads both come
//! after its handshake point. If the writer's handshake point is the later one, its count
//! load sees the reader's increment or a later value of the count; the count drops back only
//! when a reader has cleared its slot (`clear` clears, then decrements), so a zero count
//! means the reader has left, and the writer's Acquire load of that value synchronizes with
//! the decrement (all changes of a count are RMWs, so a later value still carries the
//! release). A non-zero count makes the writer scan the line's slots, which it reads after
//! the reader's CAS. If the reader's handshake point is the later one, the reader sees the
//! writer's node in the list (module docs of `skiplist`).

use core::ops::Range;
use core::ptr::NonNull;

use super::list::Conflict;
use super::node::Node;
use super::reclaim::Guard;
use crate::primitive::{AtomicPtr, AtomicUsize, Ordering};
use crate::range::overlaps;

/// Slots per cache line (the eighth word is the line's count); 2 under loom.
pub(crate) const LINE_SLOTS: usize = if cfg!(loom) { 2 } else { 7 };
/// Cache lines per segment (2 under loom, so the models also exercise segment growth).
pub(crate) const LINES: usize = if cfg!(loom) { 2 } else { 8 };

/// One cache line of the table: a count and its slots.
#[repr(align(64))]
pub(crate) struct Line {
    /// Slots of this line in use (claimed and not yet cleared); incremented after a claim,
    /// decremented after a clear.
    readers: AtomicUsize,
    /// Announced reader nodes; null when free.
    slots: [AtomicPtr<Node>; LINE_SLOTS],
}

struct Segment {
    lines: [Line; LINES],
    next: AtomicPtr<Segment>,
}

impl Segment {
    fn new() -> Box<Segment> {
        Box::new(Segment {
            lines: core::array::from_fn(|_| Line {
                readers: AtomicUsize::new(0),
                slots: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
            }),
            next: AtomicPtr::new(core::ptr::null_mut()),
        })
    }
}

/// A claimed slot: its line and index, recorded in the reader's node for an O(1) release.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Claim {
    line: NonNull<Line>,
    index: usize,
}

impl Claim {
    /// The line and slot index (for storing the claim in a node).
    pub(crate) fn parts(self) -> (NonNull<Line>, usize) {
        (self.line, self.index)
    }

    /// A claim from the parts `parts` returned.
    pub(crate) fn from_parts(line: NonNull<Line>, index: usize) -> Claim {
        Claim { line, index }
    }
}

/// Orders this thread's handshake store (a writer's link CAS, a reader's slot CAS and count
/// increment) before its handshake loads (the writer's count and slot loads, the reader's
/// list loads).
///
/// Every access of the handshake is SeqCst, which already forbids the store-buffering
/// outcome in the Rust (C++20) memory model, and on x86 the `lock`-prefixed RMW before this
/// point is a full barrier; so on x86 no fence instruction is needed. Elsewhere, and under
/// loom (which models SeqCst fences exactly but SeqCst accesses more weakly), an explicit
/// `fence(SeqCst)` makes the Dekker argument hold fence-to-fence.
#[inline(always)]
pub(crate) fn handshake_fence() {
    #[cfg(any(loom, not(any(target_arch = "x86", target_arch = "x86_64"))))]
    // SeqCst: the handshake's fence; pairs with the same fence on the other side (reader
    // in `List::overlapping`, writer in `Readers::overlapping`).
    crate::primitive::fence(Ordering::SeqCst);
    #[cfg(all(not(loom), any(target_arch = "x86", target_arch = "x86_64")))]
    // SeqCst: keeps the compiler from moving handshake loads above the store (the CPU does
    // not, see above).
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// The announcement table of one lock.
pub(crate) struct Readers {
    head: Box<Segment>,
}

impl Readers {
    pub(crate) fn new() -> Self {
        Readers { head: Segment::new() }
    }

    /// Announces `node` in a free slot (slot CAS, then the line's count) and returns the
    /// claim.
    pub(crate) fn announce(&self, node: *mut Node, hint: usize) -> Claim {
        let mut segment: &Segment = &self.head;
        // Every other line, so two threads' lines are not neighbours (adjacent-line prefetch).
        let start = (hint * 2 + hint / (LINES / 2).max(1)) % LINES;
        loop {
            for i in 0..LINES {
                let line = &segment.lines[(start + i) % LINES];
                for (index, slot) in line.slots.iter().enumerate() {
                    // SeqCst: the announcement is the reader's store in the Dekker handshake
                    // with writers (announce, then read the list; a writer links its node,
                    // then reads the counts and slots); pairs with the SeqCst loads in
                    // `overlapping`.
                    if slot.load(Ordering::Relaxed).is_null()
                        && slot
                            .compare_exchange(
                                core::ptr::null_mut(),
                                node,
                                Ordering::SeqCst,
                                Ordering::Relaxed,
                            )
                            .is_ok()
                    {
                        // SeqCst: part of the reader's handshake store, like the CAS above;
                        // a writer that skips this line must not miss the slot.
                        line.readers.fetch_add(1, Ordering::SeqCst);
                        return Claim { line: NonNull::from(line), index };
                    }
                }
            }
            segment = self.next_segment(segment);
        }
    }

    #[cold]
    fn next_segment<'a>(&'a self, segment: &'a Segment) -> &'a Segment {
        // Acquire: the segment's slots were initialized before the AcqRel CAS that linked it.
        let next = segment.next.load(Ordering::Acquire);
        if !next.is_null() {
            // SAFETY: linked segments live until the table drops.
            return unsafe { &*next };
        }
        let fresh = Box::into_raw(Segment::new());
        // AcqRel: Release publishes the fresh segment; Acquire (also on failure) reads the
        // segment another thread linked first.
        match segment.next.compare_exchange(
            core::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: we just linked `fresh`; it lives until the table drops.
            Ok(_) => unsafe { &*fresh },
            Err(other) => {
                // SAFETY: `fresh` was never shared.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: linked segments live until the table drops.
                unsafe { &*other }
            }
        }
    }

    /// Clears the slot of a reader node (release or retraction), then decrements its line's
    /// count.
    ///
    /// # Safety
    ///
    /// `claim` was returned by `announce` on a table that is still alive and not cleared
    /// since.
    #[inline]
    pub(crate) unsafe fn clear(claim: Claim) {
        // SAFETY: lines live as long as their table (caller's contract).
        let line = unsafe { claim.line.as_ref() };
        // Release: the reader's critical section happens before a writer that reads the
        // cleared slot (Acquire/SeqCst in `overlapping`); later claims are CAS (RMW), so the
        // release sequence carries on through them.
        line.slots[claim.index].store(core::ptr::null_mut(), Ordering::Release);
        // Release: a writer that reads this count (or a later one: every change is an RMW)
        // and skips the line sees the reader's critical section; pairs with the SeqCst load
        // in `overlapping`.
        line.readers.fetch_sub(1, Ordering::Release);
    }

    /// An announced reader whose range overlaps `range`, if any.
    pub(crate) fn overlapping(&self, range: &Range<u64>, _guard: &Guard<'_>) -> Conflict {
        // The writer's half of the handshake: "link; fence; read the counts and slots".
        handshake_fence();
        let mut segment: &Segment = &self.head;
        loop {
            for line in &segment.lines {
                // SeqCst: the writer's handshake load (see the module docs); Acquire for the
                // release by `clear` when it reads zero.
                if line.readers.load(Ordering::SeqCst) == 0 {
                    continue;
                }
                for slot in &line.slots {
                    // SeqCst: the writer's half of the handshake (see `announce`).
                    let node = slot.load(Ordering::SeqCst);
                    if node.is_null() {
                        continue;
                    }
                    // SAFETY: a node read from a slot is retired only after its slot is
                    // cleared, and reused only after every guard of that time (ours included)
                    // is dropped.
                    let node = unsafe { &*node };
                    if overlaps(&node.range(), range) {
                        if let Some(ticket) = node.ticket() {
                            return Conflict::Held(ticket);
                        }
                    }
                }
            }
            // Acquire: pairs with the AcqRel CAS linking a segment in `next_segment`.
            let next = segment.next.load(Ordering::Acquire);
            if next.is_null() {
                return Conflict::None;
            }
            // SAFETY: linked segments live until the table drops.
            segment = unsafe { &*next };
        }
    }
}

impl Readers {
    /// Takes every node still announced (only when the lock drops: no concurrent user).
    pub(crate) fn drain(&mut self) -> Vec<NonNull<Node>> {
        let mut nodes = Vec::new();
        let mut segment: &Segment = &self.head;
        loop {
            for line in &segment.lines {
                for slot in &line.slots {
                    // Relaxed: `&mut self`, no concurrent user.
                    if let Some(node) =
                        NonNull::new(slot.swap(core::ptr::null_mut(), Ordering::Relaxed))
                    {
                        nodes.push(node);
                    }
                }
                // Relaxed: as above.
                line.readers.store(0, Ordering::Relaxed);
            }
            // Relaxed: as above.
            let next = segment.next.load(Ordering::Relaxed);
            if next.is_null() {
                return nodes;
            }
            // SAFETY: linked segments live until the table drops.
            segment = unsafe { &*next };
        }
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no concurrent user.
        let mut next = self.head.next.load(Ordering::Relaxed);
        while !next.is_null() {
            // SAFETY: every linked segment came from `Box::into_raw` and is freed once, here.
            let segment = unsafe { Box::from_raw(next) };
            next = segment.next.load(Ordering::Relaxed);
        }
    }
}
