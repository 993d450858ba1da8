//! Intents: how a list writer that cannot link yet keeps its place against newcomers.
//!
//! A list writer links its node only when no unmarked node of the list overlaps it; until
//! then it waits for one conflicting holder at a time. Stripe holders (of one stripe, of a
//! few, or of coarse stripes) and readers cannot get ahead of it (they do not block its
//! insertion, which meets list nodes only, and once it is linked they back off from it),
//! but *list writers* can: a wide writer whose range keeps meeting some newly linked node
//! of another writer could wait forever. (Making stripe holders defer to intents too was
//! tried: it bought no bound the link does not already give, and under contention it sent
//! them to park behind waiting writers: `contended` at 2 threads, 100 % exclusive, fell
//! from 11.7M to 5.7M ops/s, with a p99.9 of 53 µs.) So after its first failed insertion a
//! writer publishes an **intent**: its range and its node, under an arrival number. Before
//! each insertion attempt, a list writer looks for an intent that overlaps its range and is
//! older than its own (any intent, if it has none), and if there is one it waits for that
//! writer's node to be released, exactly as if the node were already linked. A writer
//! withdraws its intent when it links (its pending node then does the job) or gives up.
//!
//! The bound: once a writer's intent is published, a list writer that checks intents after
//! that (every insertion attempt does) waits for it; only writers already past their check
//! (at most one per thread) can still link ahead of it, and `lock_many` requests on their
//! fair path past their first range (`ordered`), which check no intent: they hold nodes
//! that the intent's writer may be waiting for. Intents never wait for younger
//! intents, so waits between intents form no cycle. The table has [`INTENTS`] entries; a
//! writer that finds it full waits unordered as before (the bound then holds only for the
//! writers that got an entry).
//!
//! Reading an entry is a seqlock read: arrival number, fields, number again; numbers are
//! unique, so a reader that sees the same number twice read one writer's entry, and the
//! node's ticket it took in between names that writer's use (a writer withdraws its entry
//! before it releases or recycles its node).

use core::ops::Range;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::node::Node;
use super::wait::Ticket;
use crate::primitive::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use crate::range::overlaps;

/// Entries of the intent table.
pub(crate) const INTENTS: usize = if cfg!(loom) { 2 } else { 16 };

/// An entry's number while its writer fills it in.
const FILLING: u64 = u64::MAX;

/// One intent.
struct Entry {
    /// `0`: free; [`FILLING`]: being published; else the writer's arrival number.
    seq: AtomicU64,
    start: AtomicU64,
    end: AtomicU64,
    node: AtomicPtr<Node>,
}

/// The intent table of one lock.
pub(crate) struct Intents {
    /// Published intents: lets the common case (none) skip the table with one load.
    published: CachePadded<AtomicUsize>,
    /// The next arrival number.
    next: AtomicU64,
    entries: [Entry; INTENTS],
}

/// A writer's own intent, if it published one: its entry and number.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Own(Option<(usize, u64)>);

impl Own {
    /// The writer's number ([`u64::MAX`] without an intent: it respects every intent).
    fn seq(self) -> u64 {
        self.0.map_or(u64::MAX, |(_, seq)| seq)
    }

    /// Whether the writer has published an intent.
    pub(crate) fn is_some(self) -> bool {
        self.0.is_some()
    }
}

impl Intents {
    pub(crate) fn new() -> Self {
        Intents {
            published: CachePadded::new(AtomicUsize::new(0)),
            next: AtomicU64::new(1),
            entries: core::array::from_fn(|_| Entry {
                seq: AtomicU64::new(0),
                start: AtomicU64::new(0),
                end: AtomicU64::new(0),
                node: AtomicPtr::new(core::ptr::null_mut()),
            }),
        }
    }

    /// An intent older than `own` that overlaps `range` and whose writer's node is still in
    /// use: the ticket to wait on.
    #[inline]
    pub(crate) fn older_overlapping(&self, range: &Range<u64>, own: Own) -> Option<Ticket> {
        // Acquire: pairs with the Release increment in `publish` (the entry is filled).
        if self.published.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.scan(range, own.seq())
    }

    #[cold]
    fn scan(&self, range: &Range<u64>, own: u64) -> Option<Ticket> {
        self.entries.iter().find_map(|e| {
            // Acquire: pairs with the Release store of the number in `publish`.
            let seq = e.seq.load(Ordering::Acquire);
            if seq == 0 || seq == FILLING || seq >= own {
                return None;
            }
            // Relaxed: validated by the second read of `seq` below.
            let held = e.start.load(Ordering::Relaxed)..e.end.load(Ordering::Relaxed);
            // Relaxed: as above.
            let node = NonNull::new(e.node.load(Ordering::Relaxed))?;
            if !overlaps(&held, range) {
                return None;
            }
            // SAFETY: nodes are type-stable for the lock's life; the number check below
            // tells whether this was still the entry's writer's node.
            let ticket = unsafe { node.as_ref() }.ticket()?;
            // Acquire: keeps the field and ticket loads above before the re-read (seqlock).
            fence(Ordering::Acquire);
            // Relaxed: ordered by the fence.
            (e.seq.load(Ordering::Relaxed) == seq).then_some(ticket)
        })
    }

    /// Publishes the intent of the writer of `node` (its range set); [`Own`] stays empty if
    /// the table is full.
    #[cold]
    pub(crate) fn publish(&self, node: NonNull<Node>, range: &Range<u64>) -> Own {
        for (i, e) in self.entries.iter().enumerate() {
            // Relaxed pre-check; Acquire CAS: the entry's last withdrawal is before us.
            if e.seq.load(Ordering::Relaxed) != 0
                || e.seq.compare_exchange(0, FILLING, Ordering::Acquire, Ordering::Relaxed).is_err()
            {
                continue;
            }
            // Relaxed: published by the Release store of the number.
            e.start.store(range.start, Ordering::Relaxed);
            // Relaxed: as above.
            e.end.store(range.end, Ordering::Relaxed);
            // Relaxed: as above.
            e.node.store(node.as_ptr(), Ordering::Relaxed);
            // Relaxed: only uniqueness and order of numbers matter.
            let seq = self.next.fetch_add(1, Ordering::Relaxed);
            // Release: readers that see the number see the fields; pairs with `scan`.
            e.seq.store(seq, Ordering::Release);
            // SeqCst: a writer whose later check loads this count finds the entry (its
            // Release half publishes the entry to the Acquire load in `older_overlapping`).
            self.published.fetch_add(1, Ordering::SeqCst);
            return Own(Some((i, seq)));
        }
        Own(None)
    }

    /// The next arrival number (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn next_seq(&self) -> u64 {
        self.next.load(Ordering::SeqCst)
    }

    /// The number of the published intent of exactly `range`, if any (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn seq_of(&self, range: &Range<u64>) -> Option<u64> {
        self.entries.iter().find_map(|e| {
            let seq = e.seq.load(Ordering::SeqCst);
            let same = e.start.load(Ordering::SeqCst) == range.start
                && e.end.load(Ordering::SeqCst) == range.end;
            (seq != 0 && seq != FILLING && same).then_some(seq)
        })
    }

    /// Withdraws `own`'s intent (before its writer's node is released or recycled).
    #[inline]
    pub(crate) fn withdraw(&self, own: &mut Own) {
        if let Some((i, _)) = own.0.take() {
            // Release: a reader that sees 0 (or a later number) skips the entry; the
            // writer's later release of its node follows this store.
            self.entries[i].seq.store(0, Ordering::Release);
            // Release: pairs with the Acquire load in `older_overlapping`.
            self.published.fetch_sub(1, Ordering::Release);
        }
    }
}
