//! Reader announcements: a growable table of slots, each holding a pointer to the node of
//! one shared holder (or of a reader about to check for writers).
//!
//! A reader claims a free slot with a SeqCst CAS, starting at a per-thread offset so threads
//! tend to use different cache lines; when every slot is taken it appends a new segment.
//! Segments are never freed before the lock drops, so the table only grows to the peak
//! number of concurrently held (or announcing) shared ranges. A writer scans every slot of
//! every segment with SeqCst loads.

use core::ops::Range;
use core::ptr::NonNull;

use super::list::Conflict;
use super::node::Node;
use super::reclaim::Guard;
use crate::primitive::{fence, AtomicPtr, Ordering};
use crate::range::overlaps;

/// Slots per segment (one segment is 8 cache lines of pointers; 4 under loom, so the models
/// also exercise segment growth).
pub(crate) const SEGMENT_SLOTS: usize = if cfg!(loom) { 4 } else { 64 };

struct Segment {
    slots: [AtomicPtr<Node>; SEGMENT_SLOTS],
    next: AtomicPtr<Segment>,
}

impl Segment {
    fn new() -> Box<Segment> {
        Box::new(Segment {
            slots: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
            next: AtomicPtr::new(core::ptr::null_mut()),
        })
    }
}

/// The announcement table of one lock.
pub(crate) struct Readers {
    head: Box<Segment>,
}

impl Readers {
    pub(crate) fn new() -> Self {
        Readers { head: Segment::new() }
    }

    /// Announces `node` in a free slot and returns the slot.
    pub(crate) fn announce(&self, node: *mut Node, hint: usize) -> &AtomicPtr<Node> {
        let mut segment: &Segment = &self.head;
        let start = (hint * 8) % SEGMENT_SLOTS;
        loop {
            for i in 0..SEGMENT_SLOTS {
                let slot = &segment.slots[(start + i) % SEGMENT_SLOTS];
                // SeqCst: the announcement is the reader's half of the Dekker handshake with
                // writers (store announcement, then read the list; a writer links its node,
                // then reads the slots); pairs with the SeqCst loads in `overlapping`.
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
                    return slot;
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

    /// Clears the slot of a reader node (release or retraction).
    #[inline]
    pub(crate) fn clear(slot: &AtomicPtr<Node>) {
        // Release: the reader's critical section happens before a writer that reads the
        // cleared slot (Acquire/SeqCst in `overlapping`); later claims are CAS (RMW), so the
        // release sequence carries on through them.
        slot.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// An announced reader whose range overlaps `range`, if any.
    pub(crate) fn overlapping(&self, range: &Range<u64>, _guard: &Guard<'_>) -> Conflict {
        // SeqCst fence: the writer's half of the handshake, "link; fence; read the slots";
        // pairs with the fence in `List::overlapping` (see there).
        fence(Ordering::SeqCst);
        let mut segment: &Segment = &self.head;
        loop {
            for slot in &segment.slots {
                // SeqCst: the writer's half of the handshake (see `announce`).
                let node = slot.load(Ordering::SeqCst);
                if node.is_null() {
                    continue;
                }
                // SAFETY: a node read from a slot is retired only after its slot is cleared,
                // and reused only after every guard of that time (ours included) is dropped.
                let node = unsafe { &*node };
                if overlaps(&node.range(), range) {
                    if let Some(ticket) = node.ticket() {
                        return Conflict::Held(ticket);
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
            for slot in &segment.slots {
                // Relaxed: `&mut self`, no concurrent user.
                if let Some(node) =
                    NonNull::new(slot.swap(core::ptr::null_mut(), Ordering::Relaxed))
                {
                    nodes.push(node);
                }
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
