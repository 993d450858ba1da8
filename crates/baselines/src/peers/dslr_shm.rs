//! `dslr-shm`: DSLR static segmentation over a shared-memory mapping, the one-sided-RDMA
//! analog of the server benchmarks (seed 3, §3.1; DSLR, Yoon et al., SIGMOD 2018).
//!
//! # Algorithm
//!
//! The unit space is cut into fixed segments of [`DslrLayout::segment_units`] units; each
//! segment has one 64-bit **ticket word** holding two Lamport bakeries, one for readers and
//! one for writers (seed 3, §2.4 and §3.1):
//!
//! | bits  | field   | meaning                                  |
//! |-------|---------|------------------------------------------|
//! | 0-15  | `n_s`   | readers served (released)                |
//! | 16-31 | `n_x`   | writers served (released)                |
//! | 32-47 | `max_s` | reader tickets taken                     |
//! | 48-63 | `max_x` | writer tickets taken                     |
//!
//! To lock a range a client locks every segment the range touches, in ascending order,
//! one after the other. To lock a segment it takes a ticket with one fetch-and-add on
//! `max_s` (shared) or `max_x` (exclusive); the value the FAA returns is a snapshot of all
//! four counters at the instant the ticket was taken. A reader may enter once
//! `n_x == snapshot.max_x` (every writer ahead of it has left); a writer once additionally
//! `n_s == snapshot.max_s` (every reader ahead of it has left). Until then it re-reads the
//! word (an RDMA read in the original) with back-off. Unlock is one FAA on `n_s` or `n_x`.
//!
//! **Counter reset.** Counters are 16 bits and a FAA would carry into the next field, so a
//! word is reset before it can overflow: the client whose ticket is `count_max - 1` in
//! either bakery takes the epoch's **last** valid ticket. Any FAA that returns a snapshot
//! with `max_s` or `max_x >= count_max` took a *bogus* ticket: it undoes its increment and
//! waits until the word has been reset, then retries. The last-ticket holder, after its own
//! unlock, waits until every valid ticket has been served and no bogus increment is in
//! flight — the word is then exactly `(n_s, n_x, max_s, max_x) = (fs, fx, fs, fx)` for the
//! epoch's final counts — and compare-and-swaps it to 0.
//!
//! # Correctness
//!
//! - Mutual exclusion within a segment is the bakery argument: tickets of a bakery are
//!   served in order; a writer enters only after every earlier ticket of either bakery was
//!   served, a reader only after every earlier writer. Later tickets cannot be served
//!   first, so `n_x` (`n_s`) stays equal to the snapshot value while the waiter waits.
//! - Only valid snapshots are ever waited on: the first field to reach `count_max` does so
//!   through the last valid ticket, so every snapshot with both fields below `count_max`
//!   predates it and contains no bogus increment.
//! - No carry: valid counts stay `<= count_max`, bogus increments add at most one per
//!   concurrent client, so with `count_max = 2^14` and fewer than 2^14 clients every field
//!   stays below 2^15 and bit 63 is never set (the word also fits a signed 64-bit Redis
//!   integer, which `dslr-redis` relies on).
//! - The reset CAS succeeds only on the exact final word, i.e. once all valid holders left
//!   and every bogus increment was undone; waiters of the next epoch see a zero word.
//! - No deadlock across segments: segments are acquired in ascending order and a client
//!   takes the next ticket only after entering the previous segment, so a wait-for chain
//!   always points to a higher segment and ends. Resets keep that shape: a client whose
//!   range held the last tickets of several words resets them from the highest down. (In
//!   ascending order, its reset of segment `a` waits for a client inside `a`, which waits
//!   for the reset of a higher segment `b` that the first client has not done yet: a
//!   cycle, seen as a hang of the frequent-reset checker and reported by the loom model
//!   `loom_dslr_readers_reset_highest_first`.)
//!
//! The algorithm is written once, over [`TicketWords`]; this file's [`ShmWords`] runs it on
//! atomics in a shared mapping, [`super::dslr_redis::RedisWords`] on a Redis server. Its memory
//! orderings are written once too, in the [`TicketWords`] implementation for every
//! [`AtomicWords`]: the loom models in `tests/dslr_loom.rs` run that same code on loom's
//! atomics.
//!
//! # Trade-offs
//!
//! Words are packed 8 bytes apart as in the RDMA original (neighbouring segments share a
//! cache line: the false sharing seed 3 §6 suspects). Waiting spins briefly, then yields
//! the CPU (this machine has 2 cores and the suites run up to 64 clients). Starvation-free
//! like DSLR, but a range of `k` segments costs `2k` atomic operations at least.

use std::convert::Infallible;
use std::io;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::MmapMut;
use rangelock::Mode;

/// Default segment width of the suites: 2^8 units (seed 3, §5.2.2).
pub const SEGMENT_UNITS: u64 = 1 << 8;
/// Default reset threshold of a bakery counter: 2^14 (keeps every field below 2^15).
pub const COUNT_MAX: u64 = 1 << 14;

const N_S: u32 = 0;
const N_X: u32 = 16;
const MAX_S: u32 = 32;
const MAX_X: u32 = 48;

/// A ticket word's value; see the table in the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TicketWord(pub u64);

impl TicketWord {
    /// Builds a word from its fields.
    pub fn from_fields(n_s: u64, n_x: u64, max_s: u64, max_x: u64) -> Self {
        TicketWord(
            (n_s & 0xFFFF) << N_S
                | (n_x & 0xFFFF) << N_X
                | (max_s & 0xFFFF) << MAX_S
                | (max_x & 0xFFFF) << MAX_X,
        )
    }

    fn field(self, shift: u32) -> u64 {
        (self.0 >> shift) & 0xFFFF
    }

    /// Readers served.
    pub fn n_s(self) -> u64 {
        self.field(N_S)
    }

    /// Writers served.
    pub fn n_x(self) -> u64 {
        self.field(N_X)
    }

    /// Reader tickets taken.
    pub fn max_s(self) -> u64 {
        self.field(MAX_S)
    }

    /// Writer tickets taken.
    pub fn max_x(self) -> u64 {
        self.field(MAX_X)
    }

    /// The FAA delta that takes a ticket in `mode`.
    pub fn ticket_delta(mode: Mode) -> u64 {
        match mode {
            Mode::Shared => 1 << MAX_S,
            Mode::Exclusive => 1 << MAX_X,
        }
    }

    /// The FAA delta that releases a ticket of `mode`.
    pub fn release_delta(mode: Mode) -> u64 {
        match mode {
            Mode::Shared => 1 << N_S,
            Mode::Exclusive => 1 << N_X,
        }
    }

    /// Whether a ticket whose FAA returned `self` is valid (taken before the epoch's last
    /// ticket) under the threshold `count_max`.
    pub fn is_valid_snapshot(self, count_max: u64) -> bool {
        self.max_s() < count_max && self.max_x() < count_max
    }

    /// Whether a holder whose valid ticket snapshot is `self` may enter in `mode` when the
    /// word currently reads `now`.
    pub fn may_enter(self, mode: Mode, now: TicketWord) -> bool {
        match mode {
            Mode::Shared => now.n_x() == self.max_x(),
            Mode::Exclusive => now.n_x() == self.max_x() && now.n_s() == self.max_s(),
        }
    }

    /// If the ticket whose FAA returned `self` is the epoch's last one, the exact word the
    /// holder must see (everything served, no bogus increment) before resetting it to 0.
    pub fn reset_target(self, mode: Mode, count_max: u64) -> Option<TicketWord> {
        let (fs, fx) = match mode {
            Mode::Shared if self.max_s() == count_max - 1 => (count_max, self.max_x()),
            Mode::Exclusive if self.max_x() == count_max - 1 => (self.max_s(), count_max),
            _ => return None,
        };
        Some(TicketWord::from_fields(fs, fx, fs, fx))
    }
}

/// The words of one client's view of the segments: one-sided atomic operations on them.
/// Each method's error is the transport's (`Infallible` for shared memory).
pub trait TicketWords {
    /// Transport error.
    type Error;
    /// Atomically adds `delta` to word `seg`; returns the previous value.
    fn fetch_add(&mut self, seg: usize, delta: u64) -> Result<u64, Self::Error>;
    /// Atomically subtracts `delta` from word `seg`.
    fn fetch_sub(&mut self, seg: usize, delta: u64) -> Result<(), Self::Error>;
    /// Reads word `seg`.
    fn load(&mut self, seg: usize) -> Result<u64, Self::Error>;
    /// Replaces word `seg` by `new` if it equals `current`; whether it did.
    fn compare_exchange(&mut self, seg: usize, current: u64, new: u64)
        -> Result<bool, Self::Error>;
    /// Waits a little before re-reading a word; `round` counts the re-reads of this wait.
    fn backoff(&mut self, round: u32);
    /// Adds `delta` to word `seg` for a release, whose result nobody needs. A transport
    /// may send it without waiting for its completion (an unsignalled RDMA FAA, a
    /// pipelined Redis `INCRBY`), as long as it reaches the word before any later
    /// operation of this client and a failure is reported by a later call.
    fn release_add(&mut self, seg: usize, delta: u64) -> Result<(), Self::Error> {
        self.fetch_add(seg, delta).map(drop)
    }
    /// Called once per unlock, after its releases: a transport that queued them sends
    /// them (and may or may not wait for their completion).
    fn end_unlock(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Sends whatever is still queued.
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Segment width and reset threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DslrLayout {
    /// Units covered by the whole space.
    pub units: u64,
    /// Units per segment.
    pub segment_units: u64,
    /// Reset threshold of a bakery counter (at most [`COUNT_MAX`], at least 2).
    pub count_max: u64,
}

impl DslrLayout {
    /// `units` split into segments of `segment_units`, threshold [`COUNT_MAX`].
    pub fn new(units: u64, segment_units: u64) -> Self {
        DslrLayout { units, segment_units: segment_units.max(1), count_max: COUNT_MAX }
    }

    /// Number of segments (ticket words).
    pub fn segments(&self) -> usize {
        usize::try_from(self.units.div_ceil(self.segment_units)).unwrap_or(usize::MAX)
    }

    /// The segments `range` touches (empty for an empty range); panics beyond the space.
    pub fn segments_of(&self, range: &Range<u64>) -> Range<usize> {
        assert!(range.end <= self.units, "range {range:?} beyond {} units", self.units);
        if range.is_empty() {
            return 0..0;
        }
        let first = range.start / self.segment_units;
        let last = (range.end - 1) / self.segment_units;
        first as usize..last as usize + 1
    }
}

/// A range held through [`DslrClient::lock`]; give it back to [`DslrClient::unlock`].
#[derive(Debug)]
#[must_use = "a DSLR range stays locked until passed to DslrClient::unlock"]
pub struct DslrHeld {
    segments: Range<usize>,
    mode: Mode,
    /// `(segment, exact final word)` for each segment whose last ticket of the epoch this
    /// holder took: it resets those words after unlocking.
    resets: Vec<(usize, TicketWord)>,
}

/// One client of a DSLR lock over the words `W`.
#[derive(Debug)]
pub struct DslrClient<W> {
    words: W,
    layout: DslrLayout,
}

impl<W: TicketWords> DslrClient<W> {
    /// A client using `words` (one per client: its connection or its view of the mapping).
    pub fn new(words: W, layout: DslrLayout) -> Self {
        DslrClient { words, layout }
    }

    /// Locks `range` in `mode`, segment after segment, waiting as long as it takes.
    pub fn lock(&mut self, range: Range<u64>, mode: Mode) -> Result<DslrHeld, W::Error> {
        let segments = self.layout.segments_of(&range);
        let mut held = DslrHeld { segments: segments.clone(), mode, resets: Vec::new() };
        for seg in segments {
            if let Some(target) = self.lock_segment(seg, mode)? {
                held.resets.push((seg, target));
            }
        }
        Ok(held)
    }

    /// Unlocks a range taken by [`lock`](Self::lock), resetting the words whose last
    /// ticket it held.
    pub fn unlock(&mut self, held: DslrHeld) -> Result<(), W::Error> {
        let delta = TicketWord::release_delta(held.mode);
        for seg in held.segments.clone().rev() {
            self.words.release_add(seg, delta)?;
        }
        self.words.end_unlock()?;
        // Descending order: a client that holds a lower segment may be waiting for the
        // reset of a higher one (its ticket there was bogus), and the reset of the lower
        // segment waits for that client to leave it. Resetting the highest word first
        // breaks the cycle (see "No deadlock" in the module docs).
        for &(seg, target) in held.resets.iter().rev() {
            self.reset_slow(seg, target)?;
        }
        Ok(())
    }

    /// The words this client works on.
    pub fn words(&self) -> &W {
        &self.words
    }

    /// Sends releases the transport still queues (see [`TicketWords::flush`]).
    pub fn flush(&mut self) -> Result<(), W::Error> {
        self.words.flush()
    }

    /// Takes a valid ticket on `seg` and waits until it is served; returns the reset target
    /// when this was the epoch's last ticket.
    fn lock_segment(&mut self, seg: usize, mode: Mode) -> Result<Option<TicketWord>, W::Error> {
        let delta = TicketWord::ticket_delta(mode);
        let count_max = self.layout.count_max;
        loop {
            let snap = TicketWord(self.words.fetch_add(seg, delta)?);
            if !snap.is_valid_snapshot(count_max) {
                self.words.fetch_sub(seg, delta)?;
                self.await_reset_slow(seg)?;
                continue;
            }
            // The FAA's own result tells whether the segment is free (seed 3 §3.1): only
            // a ticket that must wait re-reads the word.
            if !snap.may_enter(mode, snap) {
                self.await_turn_slow(seg, mode, snap)?;
            }
            return Ok(snap.reset_target(mode, count_max));
        }
    }

    /// Re-reads word `seg` until the ticket whose snapshot is `snap` is served.
    #[cold]
    fn await_turn_slow(
        &mut self,
        seg: usize,
        mode: Mode,
        snap: TicketWord,
    ) -> Result<(), W::Error> {
        let mut round = 0;
        loop {
            self.words.backoff(round);
            round = round.saturating_add(1);
            if snap.may_enter(mode, TicketWord(self.words.load(seg)?)) {
                return Ok(());
            }
        }
    }

    #[cold]
    fn await_reset_slow(&mut self, seg: usize) -> Result<(), W::Error> {
        let mut round = 0;
        while !TicketWord(self.words.load(seg)?).is_valid_snapshot(self.layout.count_max) {
            self.words.backoff(round);
            round = round.saturating_add(1);
        }
        Ok(())
    }

    #[cold]
    fn reset_slow(&mut self, seg: usize, target: TicketWord) -> Result<(), W::Error> {
        let mut round = 0;
        while !self.words.compare_exchange(seg, target.0, 0)? {
            self.words.backoff(round);
            round = round.saturating_add(1);
        }
        Ok(())
    }
}

/// The ticket words in a shared mapping (a file in `/dev/shm`, else the temporary
/// directory, unlinked once mapped). Cloning shares the mapping.
#[derive(Clone, Debug)]
pub struct ShmWords {
    map: Arc<Mapping>,
}

#[derive(Debug)]
struct Mapping {
    /// Keeps the mapping alive; only accessed through `words`.
    _map: MmapMut,
    /// The mapping's start, as `len` atomic words.
    words: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is only accessed through `AtomicU64`s, which are `Sync`; `_map` owns
// the pages and is dropped (unmapped) only with the last `Arc<Mapping>`.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mapping {}

impl ShmWords {
    /// The report name of the peer.
    pub const NAME: &'static str = "dslr-shm";

    /// Maps `segments` zeroed ticket words.
    ///
    /// # Errors
    ///
    /// When the backing file cannot be created, sized or mapped.
    pub fn new(segments: usize) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::path::Path::new("/dev/shm");
        let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
        let path = dir.join(format!("rangelock-dslr-{}-{n}", std::process::id()));
        let file =
            std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        let result = (|| {
            let len = segments.max(1);
            file.set_len((len * 8) as u64)?;
            // SAFETY: the file was just created by us with a unique name and is unlinked
            // below; nobody else truncates it while it is mapped.
            let mut map = unsafe { MmapMut::map_mut(&file)? };
            let words = NonNull::new(map.as_mut_ptr().cast::<AtomicU64>())
                .ok_or_else(|| io::Error::other("mmap returned a null pointer"))?;
            Ok(ShmWords { map: Arc::new(Mapping { _map: map, words, len }) })
        })();
        let _ = std::fs::remove_file(&path);
        result
    }
}

/// A 64-bit atomic word: `std`'s in the shared mapping, loom's in the model
/// (`tests/dslr_loom.rs`), so both run the one set of operations and orderings below.
pub trait AtomicWord {
    /// `fetch_add` with the given ordering.
    fn fetch_add(&self, delta: u64, order: Ordering) -> u64;
    /// `fetch_sub` with the given ordering.
    fn fetch_sub(&self, delta: u64, order: Ordering) -> u64;
    /// `load` with the given ordering.
    fn load(&self, order: Ordering) -> u64;
    /// `compare_exchange` with the given orderings.
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
}

impl AtomicWord for AtomicU64 {
    #[inline]
    fn fetch_add(&self, delta: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_add(self, delta, order)
    }

    #[inline]
    fn fetch_sub(&self, delta: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_sub(self, delta, order)
    }

    #[inline]
    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }

    #[inline]
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        AtomicU64::compare_exchange(self, current, new, success, failure)
    }
}

/// Ticket words held in local atomics: [`TicketWords`] for every `AtomicWords` comes with
/// DSLR's memory orderings.
pub trait AtomicWords {
    /// The word type.
    type Word: AtomicWord;
    /// Word `seg`.
    fn word(&self, seg: usize) -> &Self::Word;
    /// Waits a little before re-reading a word (see [`TicketWords::backoff`]).
    fn backoff(&mut self, round: u32);
}

impl<W: AtomicWords> TicketWords for W {
    type Error = Infallible;

    #[inline]
    fn fetch_add(&mut self, seg: usize, delta: u64) -> Result<u64, Infallible> {
        // AcqRel: taking a ticket may be the acquire that enters (it then must see the
        // writes of the holders it follows, published by their release FAA / reset CAS);
        // a release FAA must publish this holder's writes. Pairs with itself, with
        // `load` and with the reset CAS.
        Ok(self.word(seg).fetch_add(delta, Ordering::AcqRel))
    }

    #[inline]
    fn fetch_sub(&mut self, seg: usize, delta: u64) -> Result<(), Infallible> {
        // Release: the undo must be visible to the resetter's CAS, which acquires it;
        // carries no data.
        self.word(seg).fetch_sub(delta, Ordering::Release);
        Ok(())
    }

    #[inline]
    fn load(&mut self, seg: usize) -> Result<u64, Infallible> {
        // Acquire: seeing the served counter reach our ticket must make the previous
        // holders' writes visible; pairs with the AcqRel release FAA in `fetch_add`.
        Ok(self.word(seg).load(Ordering::Acquire))
    }

    fn compare_exchange(&mut self, seg: usize, current: u64, new: u64) -> Result<bool, Infallible> {
        // AcqRel: the reset acquires every release of the epoch and publishes the zero word
        // to the next epoch's FAAs and loads.
        Ok(self
            .word(seg)
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .is_ok())
    }

    #[inline]
    fn backoff(&mut self, round: u32) {
        AtomicWords::backoff(self, round);
    }
}

impl AtomicWords for ShmWords {
    type Word = AtomicU64;

    #[inline]
    fn word(&self, seg: usize) -> &AtomicU64 {
        assert!(seg < self.map.len, "segment {seg} beyond {}", self.map.len);
        // SAFETY: `seg < len` and the mapping holds `len` 8-byte words; it is page aligned,
        // so every word is aligned for `AtomicU64`; it lives as long as `self.map`, and
        // its bytes are only ever accessed atomically.
        unsafe { self.map.words.add(seg).as_ref() }
    }

    #[inline]
    fn backoff(&mut self, round: u32) {
        if round < 16 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sequential word for checking the ticket logic step by step.
    struct One(u64);

    impl TicketWords for One {
        type Error = Infallible;
        fn fetch_add(&mut self, _: usize, delta: u64) -> Result<u64, Infallible> {
            let prev = self.0;
            self.0 += delta;
            Ok(prev)
        }
        fn fetch_sub(&mut self, _: usize, delta: u64) -> Result<(), Infallible> {
            self.0 -= delta;
            Ok(())
        }
        fn load(&mut self, _: usize) -> Result<u64, Infallible> {
            Ok(self.0)
        }
        fn compare_exchange(&mut self, _: usize, cur: u64, new: u64) -> Result<bool, Infallible> {
            let ok = self.0 == cur;
            if ok {
                self.0 = new;
            }
            Ok(ok)
        }
        fn backoff(&mut self, round: u32) {
            assert!(round < 4, "a sequential test must never wait");
        }
    }

    fn take(w: &mut u64, mode: Mode) -> TicketWord {
        let prev = TicketWord(*w);
        *w += TicketWord::ticket_delta(mode);
        prev
    }

    fn release(w: &mut u64, mode: Mode) {
        *w += TicketWord::release_delta(mode);
    }

    #[test]
    fn fields_round_trip() {
        let w = TicketWord::from_fields(1, 2, 3, 4);
        assert_eq!((w.n_s(), w.n_x(), w.max_s(), w.max_x()), (1, 2, 3, 4));
        let d = TicketWord(TicketWord::ticket_delta(Mode::Exclusive));
        assert_eq!(d.max_x(), 1);
        assert_eq!(TicketWord(TicketWord::release_delta(Mode::Shared)).n_s(), 1);
    }

    #[test]
    fn bakery_orders_readers_and_writers() {
        let mut w = 0u64;
        let r1 = take(&mut w, Mode::Shared);
        let r2 = take(&mut w, Mode::Shared);
        let x1 = take(&mut w, Mode::Exclusive);
        let r3 = take(&mut w, Mode::Shared);
        let now = TicketWord(w);
        // Readers ahead of any writer enter together; the writer waits for both; the reader
        // behind the writer waits for the writer.
        assert!(r1.may_enter(Mode::Shared, now) && r2.may_enter(Mode::Shared, now));
        assert!(!x1.may_enter(Mode::Exclusive, now));
        assert!(!r3.may_enter(Mode::Shared, now));
        release(&mut w, Mode::Shared);
        assert!(!x1.may_enter(Mode::Exclusive, TicketWord(w)));
        release(&mut w, Mode::Shared);
        assert!(x1.may_enter(Mode::Exclusive, TicketWord(w)));
        assert!(!r3.may_enter(Mode::Shared, TicketWord(w)));
        release(&mut w, Mode::Exclusive);
        assert!(r3.may_enter(Mode::Shared, TicketWord(w)));
        // A second writer queues behind r3 (a reader) and the first writer.
        let x2 = take(&mut w, Mode::Exclusive);
        assert!(!x2.may_enter(Mode::Exclusive, TicketWord(w)));
        release(&mut w, Mode::Shared);
        assert!(x2.may_enter(Mode::Exclusive, TicketWord(w)));
    }

    #[test]
    fn last_ticket_resets_and_bogus_tickets_back_off() {
        let count_max = 3;
        let mut w = 0u64;
        let mut valid = Vec::new();
        for mode in [Mode::Shared, Mode::Exclusive, Mode::Shared, Mode::Shared] {
            let snap = take(&mut w, mode);
            assert!(snap.is_valid_snapshot(count_max));
            valid.push((mode, snap));
        }
        // The third reader ticket was max_s = 2 = count_max - 1: the epoch's last.
        let targets: Vec<_> = valid.iter().map(|&(m, s)| s.reset_target(m, count_max)).collect();
        assert_eq!(targets[..3], [None, None, None]);
        assert_eq!(targets[3], Some(TicketWord::from_fields(3, 1, 3, 1)));
        // Anyone after it, in either mode, gets a bogus ticket.
        assert!(!take(&mut w, Mode::Exclusive).is_valid_snapshot(count_max));
        assert!(!take(&mut w, Mode::Shared).is_valid_snapshot(count_max));
        w -= TicketWord::ticket_delta(Mode::Exclusive) + TicketWord::ticket_delta(Mode::Shared);
        for (mode, _) in &valid {
            release(&mut w, *mode);
        }
        assert_eq!(TicketWord(w), targets[3].unwrap());
    }

    #[test]
    fn client_resets_the_word_after_an_epoch() {
        let layout = DslrLayout { units: 8, segment_units: 8, count_max: 3 };
        let mut c = DslrClient::new(One(0), layout);
        for i in 0..10 {
            let mode = if i % 3 == 0 { Mode::Exclusive } else { Mode::Shared };
            let Ok(held) = c.lock(0..8, mode);
            assert_eq!(held.segments, 0..1);
            let Ok(()) = c.unlock(held);
            let word = TicketWord(c.words.0);
            assert!(word.is_valid_snapshot(3), "never left at the threshold: {word:?}");
            assert_eq!((word.n_s(), word.n_x()), (word.max_s(), word.max_x()));
        }
    }

    #[test]
    fn segments_of_ranges() {
        let l = DslrLayout::new(1 << 16, 256);
        assert_eq!(l.segments(), 256);
        assert_eq!(l.segments_of(&(0..1)), 0..1);
        assert_eq!(l.segments_of(&(255..257)), 0..2);
        assert_eq!(l.segments_of(&(256..512)), 1..2);
        assert_eq!(l.segments_of(&(5..5)), 0..0);
        assert_eq!(l.segments_of(&(0..1 << 16)), 0..256);
    }
}
