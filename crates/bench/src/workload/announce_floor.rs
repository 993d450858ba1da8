//! [`AnnounceFloor`]: the memory traffic of a stripe protocol whose readers write no shared
//! line, the floor of that protocol on a workload (the `mixed` suite's `announce-floor`, as
//! a `RangeTarget` in `target.rs`). It is `claim-floor` for writers, and a different
//! reader: `rangelock`'s `mixed_loop` example includes this file (`#[path]`, beside
//! `claim_floor.rs`, whose tables it uses) for its own `announce-floor`, so both measure
//! the same code.
//!
//! What it showed on the `mixed` suite (measured in `rangelock_bench::suites::mixed`): readers
//! that write no shared line help where readers are nearly all there is (0 % exclusive,
//! 2 threads: 2.45-2.63x `segments-256Ki` against `claim-floor`'s 1.45-1.61x), but at 20 %
//! each writer loads the lines the other thread's readers keep writing, and at 100 % the
//! seats are one load more for nothing. Moving `rangelock` to this protocol would take: a
//! seat per thread and lock (taken once, given back at thread exit) with a waiter count for
//! the writers that wait on it (a counted wait word, as a slot is); every writer, on every
//! path, loading the seats after its handshake fence; a reader that sees a writer, or a
//! count, leaving its seat for the list path; the readers' counts gone from the stripe
//! protocol's fast path; and loom models for the seat handshake and its waits. Its cost
//! lands on writers: one load per seat taken, which grows with the threads that ever read.

use core::ops::Range;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use rangelock::Mode;

use super::claim_floor::{ClaimFloor, ClaimHeld};

/// What an uncontended acquisition and release cost in a stripe protocol where a reader
/// *announces* its range on a line of its own thread instead of joining stripe slots, and
/// where writers look for readers in those lines, as BRAVO's readers and writers do
/// (Dice and Kogan, "BRAVO — Biased Locking for Reader-Writer Locks", USENIX ATC 2019):
///
/// - A writer pays exactly `claim-floor`'s exclusive traffic (its stripe slots, or its
///   counts, coarse slots and the scan of its stripes' slots), then loads the announcement
///   word of every seat taken so far (one line per thread that has read).
/// - A reader stores its range on its seat's line (the end, then the announcing word with
///   an RMW-priced SeqCst swap, which on x86 orders it before the loads as the claim's RMW
///   does), then loads every stripe slot word and count over its range and the `wide`
///   counts of its windows (`ClaimFloor::peek`), whatever the range's length; it leaves
///   with a plain store and a load of its seat's waiter count, as a stripe holder does.
///
/// So a reader writes no line another thread writes: at 0 % exclusive no line moves
/// between cores at all, and at 20 % only what writers write moves. The price is on the
/// writers: a load per seat, lines the readers write. `announce-floor` over `claim-floor`
/// is what changing `rangelock`'s reader protocol to this one could gain at most.
///
/// A ceiling, not a lock: nobody waits, no conflict is acted on. Only sound where no two
/// threads touch the same data under the lock: `mixed`, whose critical sections touch
/// per-thread buffers.
#[derive(Debug, Default)]
pub struct AnnounceFloor {
    claims: ClaimFloor,
    seats: Arc<Seats>,
}

/// The announcement lines of an [`AnnounceFloor`] (shared with the bench's per-thread
/// [`SeatOf`]s, which give their seat back when their thread is done).
#[derive(Debug)]
struct Seats {
    lines: Box<[CachePadded<Seat>; SEATS]>,
    /// The seats in use, a bit each.
    taken: AtomicU64,
    /// Seats ever taken, from 0: a writer scans `0..high`.
    high: AtomicUsize,
}

/// Seats of an [`AnnounceFloor`]: at most this many threads read at once.
pub const SEATS: usize = 64;

/// One thread's announcement line: the reader's announcing word (its range's start, or 0),
/// its range's end, and the count of writers waiting for it.
#[derive(Debug, Default)]
struct Seat {
    word: AtomicU64,
    end: AtomicU64,
    waiting: AtomicU32,
}

/// An [`AnnounceFloor`] hold: a reader's seat, or a writer's claims.
#[derive(Debug)]
pub enum AnnounceHeld {
    /// A reader, announced on this seat.
    Reader(usize),
    /// A writer, with `claim-floor`'s claims.
    Writer(ClaimHeld),
}

impl AnnounceFloor {
    /// The report name.
    pub const NAME: &'static str = "announce-floor";

    /// The floor for `rangelock`'s default geometry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A seat for the calling thread (the lowest free one), given back when dropped; its
    /// thread passes [`SeatOf::get`] to every [`hold`](Self::hold).
    ///
    /// # Panics
    ///
    /// If all seats are taken.
    pub fn seat(&self) -> SeatOf {
        SeatOf { seat: self.seats.take(), seats: self.seats.clone() }
    }

    /// Takes `range` in `mode` on behalf of the thread on `seat`. Never refuses.
    #[inline]
    pub fn hold(&self, seat: usize, range: Range<u64>, mode: Mode) -> AnnounceHeld {
        match mode {
            Mode::Shared => {
                let line = &self.seats.lines[seat % SEATS];
                line.end.store(range.end, Ordering::Relaxed);
                // SeqCst: the announcement, an RMW as a lock's store-then-load handshake
                // needs; the loads below come after it.
                line.word.swap(range.start | 1, Ordering::SeqCst);
                core::hint::black_box(self.claims.peek(&range));
                AnnounceHeld::Reader(seat % SEATS)
            }
            Mode::Exclusive => {
                let held = self.claims.hold(range, Mode::Exclusive);
                let mut seen = 0;
                // SeqCst (every load here): the handshake loads, after the claims.
                for line in &self.seats.lines[..self.seats.high.load(Ordering::SeqCst)] {
                    seen |= line.word.load(Ordering::SeqCst);
                }
                core::hint::black_box(seen);
                AnnounceHeld::Writer(held)
            }
        }
    }

    /// Gives back what [`hold`](Self::hold) took.
    #[inline]
    pub fn give_back(&self, held: AnnounceHeld) {
        match held {
            AnnounceHeld::Reader(seat) => {
                let line = &self.seats.lines[seat % SEATS];
                // Release: the reader's leaving store.
                line.word.store(0, Ordering::Release);
                core::hint::black_box(line.waiting.load(Ordering::Relaxed));
            }
            AnnounceHeld::Writer(held) => self.claims.give_back(held),
        }
    }

    /// Seat `seat`'s announcing word (tests).
    #[cfg(test)]
    fn announced(&self, seat: usize) -> u64 {
        self.seats.lines[seat].word.load(Ordering::Relaxed)
    }
}

impl Default for Seats {
    fn default() -> Self {
        let lines: Box<[CachePadded<Seat>]> = (0..SEATS).map(|_| Default::default()).collect();
        Seats {
            lines: lines.try_into().unwrap_or_else(|_| unreachable!("SEATS seats")),
            taken: AtomicU64::new(0),
            high: AtomicUsize::new(0),
        }
    }
}

impl Seats {
    /// Takes the lowest free seat.
    fn take(&self) -> usize {
        // AcqRel: a seat is one thread's at a time; pairs with `leave`'s release.
        let previous = self.taken.fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
            (taken != u64::MAX).then(|| taken | (taken + 1))
        });
        let seat = (!previous.expect("announce-floor: every seat taken")).trailing_zeros();
        // SeqCst: a writer whose scan comes after this reader's announcement reads a `high`
        // that covers its seat (the announcing swap comes after this).
        self.high.fetch_max(seat as usize + 1, Ordering::SeqCst);
        seat as usize
    }

    /// Gives back `seat`.
    fn leave(&self, seat: usize) {
        // Release: the seat's last announcement is withdrawn; pairs with `take`.
        self.taken.fetch_and(!(1 << seat), Ordering::Release);
    }
}

/// A thread's seat at an [`AnnounceFloor`], given back when dropped (the bench's
/// per-thread state).
#[derive(Debug)]
pub struct SeatOf {
    seat: usize,
    seats: Arc<Seats>,
}

impl SeatOf {
    /// The seat, for [`AnnounceFloor::hold`].
    pub fn get(&self) -> usize {
        self.seat
    }
}

impl Drop for SeatOf {
    fn drop(&mut self) {
        self.seats.leave(self.seat);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_writes_its_seat_and_nothing_else_and_a_writer_claims_as_claim_floor() {
        let floor = AnnounceFloor::new();
        let (seat_a, seat_b) = (floor.seat(), floor.seat());
        let (a, b) = (seat_a.get(), seat_b.get());
        assert_eq!((a, b, floor.seats.high.load(Ordering::Relaxed)), (0, 1, 2));
        let stripe = 1u64 << rangelock::internals::DEFAULT_STRIPE_SHIFT;
        // A reader over 40 stripes: its seat announces its range; it claims and counts
        // nothing in the tables (a writer's claims there are seen).
        let reader = floor.hold(b, 3 * stripe..43 * stripe, Mode::Shared);
        assert_eq!(floor.announced(b), (3 * stripe) | 1);
        assert_eq!(floor.seats.lines[b].end.load(Ordering::Relaxed), 43 * stripe);
        let before = floor.claims.peek(&(3 * stripe..43 * stripe));
        assert_eq!(before, 0, "the reader claimed and counted nothing");
        let writer = floor.hold(a, 3 * stripe..5 * stripe, Mode::Exclusive);
        assert_ne!(floor.claims.peek(&(3 * stripe..5 * stripe)), 0, "the writer's claims");
        floor.give_back(writer);
        floor.give_back(reader);
        assert_eq!(floor.announced(b), 0, "the reader left");
        // Seats are reused lowest first; `high` stays where it was.
        drop(seat_a);
        assert_eq!(floor.seat().get(), 0);
        assert_eq!(floor.seats.high.load(Ordering::Relaxed), 2);
    }
}
