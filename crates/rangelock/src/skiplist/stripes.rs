//! The stripe table: a direct-mapped, node-free fast path for ranges that fit in one
//! stripe, or in a few stripes of one window; and the coarse table, the same structure
//! over stripes 64 times wider, for the ranges too long for that.
//!
//! The domain is cut into stripes of `1 << shift` units, and the stripes into *windows* of
//! `slots` consecutive stripes. Stripe `s` owns slot `s mod slots` of its window's table
//! (see "Windows" below: each window in use gets a table of its own, up to a budget, and
//! the rest share one overflow table, where stripes `slots` apart share a slot). An
//! exclusive range that lies inside one stripe may hold its range by claiming that stripe's
//! slot with one CAS (`FREE → its range`) instead of linking a node into the skip list. The
//! slot's word is the whole hold: the range's offsets inside the stripe and its window, so
//! a stripe hold allocates nothing, retires nothing and takes no epoch guard. The word is
//! also a *wait word* (`wait`): whoever must wait for the holder parks on it, and the
//! holder's release (one plain store back to `FREE`) wakes them. It is a *counted* wait
//! word: waiters count themselves in the slot's `waiting` (on the same line) and pass a
//! process-wide barrier before they park, so the release needs no RMW to learn of them
//! (`wait`, "Counted words").
//!
//! **Multi-stripe claims.** A range over 2 up to `claim_stripes` stripes (8 by default:
//! `Builder::claim_stripes`; at most [`SHARED_CLAIM_STRIPES`] for a shared range) of one
//! window holds the same way, claiming each of its
//! stripes' slots in order; each slot's word holds the range's *piece* in that stripe
//! (from the range's start to the stripe's end, the whole stripe, or from the stripe's
//! start to the range's end), so a checker reads each piece exactly as it reads a
//! one-stripe holder. A claim never waits: on the first slot that is not free it frees the
//! slots it took (waking their waiters) and the range takes the list path, where it waits
//! like any list writer. So a claimer never holds a slot while it waits for another, and
//! no cycle of claimers can form. After the last slot it runs the handshake below once,
//! reading every claimed slot's count. The cost is one CAS and one store per stripe, all on
//! lines of its own region, where a list insertion writes the links of whatever nodes
//! neighbour it: for ranges spread over the domain by several threads (the `mixed` suite)
//! the list's first nodes and the head are what every insertion writes, and the claims are
//! what scales (the claim limit trades that against an RMW per stripe; see `mixed_loop`).
//!
//! **Coarse claims.** A longer range (up to two *coarse stripes*, of 64 stripes each: 1 Mi
//! units by default; stripes of at most two windows) holds on a second table of the same
//! kind, the *coarse table* (`Stripes<COARSE_OFFSET_BITS>`: its slot words have 20-bit
//! offsets, so coarse stripes may be 2^20 units wide). Nobody counts in the coarse table;
//! a coarse holder is a *counted party* of the stripe table that makes itself visible with
//! slot claims instead of a list node or a reader announcement:
//!
//! 1. it counts itself in the stripe table, as a list writer does (its stripes' slots, or
//!    its windows' `wide` counts);
//! 2. it claims (or joins) its coarse stripes' slots with its pieces, in order, never
//!    waiting (a taken slot: it frees what it took, uncounts, and takes the list path);
//! 3. after the handshake fence it checks the stripe table's slots of its stripes (as a
//!    list writer does after linking), and reads the counts it added to: one above its own
//!    share (`coarse_view`) sends it to the search of the list and the reader table;
//! 4. on any conflict it retracts: frees its coarse slots (waking their waiters), uncounts,
//!    and takes the list path. Its release frees the coarse slots, then uncounts.
//!
//! Every other party checks the coarse slots over its range where it checks the stripe
//! slots: list writers after linking, readers after announcing, and stripe holders in
//! their slow check. A stripe holder never reads the coarse table on its fast path: a
//! coarse holder over its stripe is counted, so the stripe holder's count check sends it
//! to the slow check. The pairs: a coarse holder and a stripe holder inside its range are
//! the Dekker pair (coarse claim, fence, stripe-slot loads) against (stripe claim, fence,
//! count loads, then coarse-slot loads), the coarse holder's count being part of its first
//! store; a coarse holder and a list writer or reader are two counted parties that each
//! check the other's kind of visibility after their fences (the list writer the coarse
//! slots, the coarse holder the counts, then the list); two coarse holders of one coarse
//! stripe exclude each other by the CAS, and of different coarse stripes cannot overlap.
//! So a range of up to 2 Mi units costs two count RMWs, one or two coarse CASes and as many
//! stores, and loads of its stripes' slots (up to 128): no node, no epoch guard, no write to
//! a line shared with far-away ranges (except the count of the overflow windows' group).
//!
//! The slot says "this range is held (or about to be)", exactly like a reader's
//! announcement says it for a shared range, and the same Dekker handshake makes it safe:
//!
//! - a *stripe holder* claims its slot (or slots), then (after the handshake fence) reads
//!   the slot's count (each slot's), its table's `wide` count and the lock's `wide` count,
//!   and only if one is not zero searches the list and the reader table;
//! - a *counted party* (a list writer or a reader) counts itself first: in the slot of
//!   each stripe its range touches (up to [`NARROW`] stripes), or in the `wide` count of
//!   each window table its range touches (up to [`NARROW_WINDOWS`] windows), or in the
//!   lock's one `wide` count; then it links its node (writer) or announces it (reader),
//!   and after its own handshake fence checks the slots of the stripes its range touches.
//!
//! Whichever of two overlapping parties passes its fence second sees the other's store
//! (see `skiplist`, Consistency). Every list node and every announced reader that overlaps
//! stripe `s` was counted in a count that `s`'s holder reads before it became visible, and
//! is uncounted only after it is gone, so a holder that reads all three counts at zero
//! after its fence knows no list node and no reader overlaps its range (a party whose fence
//! comes later reads the holder's slot instead). A non-zero count (perhaps for a party of
//! another stripe of the same slot or table) only sends the holder to the search. Holders
//! of *other* regions never see a reader or a wide writer: a long-held shared range or a
//! wide exclusive range costs the stripe holders of its own stripes or windows the search,
//! and nobody else anything.
//!
//! A stripe holder that finds any conflict **retracts** (it frees its slots, waking whoever
//! waited on them) and continues as a list writer, so a stripe holder never waits while it
//! is visible and nobody can wait for it in a cycle. Two stripe holders of one slot exclude
//! each other by the CAS; the loser takes the list path, where it sees the winner in the
//! slot and checks the actual ranges, so disjoint ranges of one stripe both hold. Stripe
//! holders that share no slot share no stripe and cannot overlap.
//!
//! A stripe hold costs one CAS on a slot and one store to release it; for threads working
//! on different regions of the domain the slot lies on a line no other thread writes, and
//! the counts, the directory and the list's head are only read. That is the point of the
//! table: a skip-list insertion writes the shared links of its neighbours. The CAS is not
//! preceded by a load of the slot (which would save a failing RMW when the slot is taken):
//! when another core wrote the line last, a load brings it over shared and the CAS must
//! fetch it again to write it, and with threads spread over the domain that second transfer
//! doubled the cost of the whole fast path (`claim_slot`).
//!
//! # The slot word
//!
//! | bits   | meaning                                                          |
//! |--------|------------------------------------------------------------------|
//! | 0      | `FREE` (the wait word's `OVER`): no holder                        |
//! | 1      | 0 (`PARKED` in flagged wait words; slot waiters count themselves in `waiting`) |
//! | 2      | 0 (`WAKERS` likewise)                                             |
//! | 3      | `SHARED`: the holders are readers                                |
//! | 4..12  | readers holding the slot (0 for an exclusive holder)             |
//! | 12..28 | the holder's first unit, as an offset into its stripe            |
//! | 28..44 | the holder's last unit, as an offset into its stripe             |
//! | 44..64 | the holder's window, modulo 2^20                                 |
//!
//! So stripes are at most 2^16 units wide ([`MAX_STRIPE_SHIFT`]). A checker learns the
//! holder's exact range from the word and from where it found the slot: a window table
//! belongs to one window; a slot of the overflow table is shared by the stripes of many
//! windows, and the word's window field says which one holds it. That field is exact
//! because only windows below 2^20 may hold overflow slots (a stripe of a later window
//! whose window has no table of its own takes the list path: with the default geometry
//! that is beyond 2^45 units, and only once its directory probe path is full).
//!
//! **Readers in a slot.** A shared range inside one stripe takes its slot when the slot is
//! free, or joins it when it is held by readers of exactly the same range: one CAS sets (or
//! raises) the reader count; it then reads the same three counts as an exclusive holder,
//! and searches the list (only: readers do not conflict with readers) if one is not zero,
//! retracting on a conflict. The last reader to leave frees the slot (a CAS: a reader may be
//! joining). The word names the readers' exact range, so a checker sees no false conflict.
//! A reader of a slot held by anyone else (an exclusive holder, readers of another range,
//! or 255 readers) announces itself in the reader table as before, and so does an
//! exclusive range of a stripe whose slot readers hold (on the list). A shared range over a
//! few stripes joins each slot the same way, piece by piece (readers of different ranges
//! that both cover a whole stripe share that stripe's slot: their pieces are equal), and
//! leaves the ones it joined if one refuses it.
//!
//! So a reader pays two RMWs a stripe (join, leave) on lines that writers and other readers
//! write too. A protocol whose readers announce on a line of their own thread instead, and
//! whose writers load every such line, writes no shared line for readers but a load per
//! reading thread for every writer; the `mixed` suite of `rangelock-bench` measures both
//! protocols' floors (`claim-floor`, `announce-floor`; its `suites::mixed` module docs).
//!
//! # Windows
//!
//! One direct-mapped table aliases: ranges held anywhere in the domain occupy (or count
//! themselves in) the slots that a far-away region maps to, and send that region's ranges
//! to the list. So a window (`slots` stripes: 2048 x 16 Ki units = 32 Mi units by default)
//! gets a table of its own the first time a stripe holder or a counted party needs a slot
//! (or the `wide` count) of it, found through a small directory of `windows` entries (64 by
//! default): open addressing with linear probing from the window's home entry (at most
//! [`PROBES`] entries), one key word per entry (`0`: free; else the window plus one) and the
//! entry's table and `wide` count beside it. An entry is never freed while the lock lives,
//! so a window *resolves* the same way forever: to its entry's table, or, once every entry
//! of its probe path is taken by other windows, to
//! the shared overflow table (with the overflow's `wide` count).
//!
//! - *Creating resolution* (stripe holders, and counted parties before they count): probe;
//!   at the first free entry, make sure the entry's table exists (allocate, install it with
//!   a CAS; a loser frees its copy), then CAS the key from `0` to ours. The table is
//!   installed before the key, so whoever reads the key (Acquire) finds the table.
//! - *Lookup* (the checks of list writers and readers, after their handshake fence):
//!   probe; a free entry on the way ends the search with "no table": no stripe holder of
//!   that window exists that the handshake could require us to see. A stripe holder
//!   resolves its window *before* its claim and fence; if its fence comes first in the
//!   SeqCst order, our loads after our fence read its key CAS (and every key it read on
//!   its way, which it read before its fence), so we follow the same probe sequence to the
//!   same entry. If our fence comes first, the holder sees our count and searches.
//! - Entries are taken in probe order and never freed, so a free entry on the probe path
//!   means the window has no entry yet, and a probe path with no free entry and none for
//!   the window stays that way: the overflow table is final for it.
//! - Once every entry is taken (a count, `taken`, says so), a window not at its home
//!   entry would probe [`PROBES`] entries on every resolution to learn it has none: with
//!   ranges spread over far more windows than the directory holds, that was a third of the
//!   instructions of the `mixed` suite. A Bloom filter of the windows with an entry (each
//!   window's bit set before its key) answers "none" in one load for most of them, before
//!   the home entry is read; a set bit (the window's own, or a false positive) reads the
//!   home entry and probes as before.
//! - The overflow table's `wide` count is split in 16, by window, each on a line of its
//!   own: the wide ranges of windows without a table are spread over the domain, and one
//!   count for all of them was a line every wide list writer wrote twice and every stripe
//!   holder of those windows read.
//!
//! Memory is allocated per window in use (32 KiB a window by default), at most `windows`
//! tables besides the overflow table, and freed when the lock drops. A range wide enough
//! to cover a whole window (at least `slots` stripes) checks the slots of every existing
//! table that its windows touch, which is the price of a lock-wide writer or reader.

use core::ops::Range;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::list::Conflict;
use super::readers::handshake_fence;
use super::reclaim::Guard;
use super::wait::{self, Ticket, OVER, USE_SHIFT};
use crate::primitive::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::range::{overlaps, Mode};

/// Default stripe width: `1 << DEFAULT_STRIPE_SHIFT` units (16 Ki; 2 under loom, so the
/// models' tiny ranges take both paths).
pub const DEFAULT_STRIPE_SHIFT: u32 = if cfg!(loom) { 1 } else { 14 };
/// Default number of slots per table (2048 slots of 16 bytes: 32 KiB per table; 2 under
/// loom).
pub const DEFAULT_STRIPE_SLOTS: usize = if cfg!(loom) { 2 } else { 2048 };
/// Default number of window tables a lock may allocate besides its overflow table (64: at
/// most 2 MiB, for 64 windows of 32 Mi units; 1 under loom, so the models' later windows
/// share the overflow table).
pub const DEFAULT_STRIPE_WINDOWS: usize = if cfg!(loom) { 1 } else { 64 };
/// Directory entries a window probes, from its home entry on, before it settles for the
/// overflow table.
pub(crate) const PROBES: usize = 8;
/// The largest window directory ([`Builder::windows`](super::Builder::windows)).
pub const MAX_WINDOWS: usize = 64;
/// The widest stripe: `1 << MAX_STRIPE_SHIFT` units (a holder's offsets fill 16 bits each of
/// the slot word).
pub const MAX_STRIPE_SHIFT: u32 = 16;
/// The most stripes a stripe hold may span ([`Builder::claim_stripes`](super::Builder::claim_stripes)).
pub const MAX_CLAIM_STRIPES: usize = 64;
/// Default for the most stripes (of one window) a stripe hold may span: 8 (128 Ki units
/// with the default stripes). 1 under loom, so that the models' ranges over two stripes
/// keep taking the list path; the models of multi-stripe claims ask for them.
pub const DEFAULT_CLAIM_STRIPES: usize = if cfg!(loom) { 1 } else { 8 };
/// Words of the directory's Bloom filter (`Stripes::bloom`): 4096 bits (512 bytes) for at
/// most 64 windows, about 1.6 % false positives once the directory is full. With 1024
/// bits (6 %) the probes of the false positives cost every resolution 8-30 instructions
/// on average (`valgrind --tool=cachegrind target/release/examples/mixed_loop 200000
/// rangelock 1 <pct> [<octaves>]`, instructions an operation, 1024 -> 4096 bits: one
/// stripe 246.2 -> 238.3, the whole mix 388.9 -> 377.5 at 100 % exclusive and 1052.8 ->
/// 1040.2 at 0 %, coarse claims 939.2 -> 909.7). 16 words under loom, whose models
/// never fill the directory.
const BLOOM_WORDS: usize = if cfg!(loom) { 16 } else { 64 };
/// The most stripes a *shared* stripe claim may span (when the lock's limit is higher):
/// wider shared ranges take a coarse claim (`Stripes::claim_of`). `mixed_loop 2000000
/// rangelock 1 0 14..18` (shared ranges of 1 to 17 stripes, 7 interleaved runs, medians):
/// 99.5 ns per operation with readers claiming up to 8 stripes, 87.9 with up to 4, 98.4
/// with up to 3.
pub(crate) const SHARED_CLAIM_STRIPES: u64 = 4;
/// The offset bits of the coarse table's slot words: coarse stripes are at most 2^20
/// units wide (module docs, "Coarse claims").
pub(crate) const COARSE_OFFSET_BITS: u32 = 20;
/// The coarse table: stripes of 2^[`COARSE_LOG2`] fine stripes.
pub(crate) type Coarse = Stripes<COARSE_OFFSET_BITS>;
/// Fine stripes per coarse stripe, log2: 64 (2 under loom).
pub(crate) const COARSE_LOG2: u32 = if cfg!(loom) { 1 } else { 6 };
/// Coarse stripes one coarse claim may span.
pub(crate) const COARSE_CLAIM: u64 = 2;
/// How many `wide` counts the windows without a table of their own share (see
/// `Stripes::overflow_wide`).
const OVERFLOW_WIDE: usize = if cfg!(loom) { 1 } else { 16 };
/// A counted range touching at most this many stripes counts itself in their slots.
pub(crate) const NARROW: u64 = 4;
/// A counted range touching more than [`NARROW`] stripes but at most this many windows
/// counts itself in the `wide` count of each of their tables; a wider one in the lock's.
pub(crate) const NARROW_WINDOWS: u64 = 4;

/// Slot word: no holder (the wait word's `OVER`).
const FREE: u64 = OVER;
/// Slot word: the holders are readers (see "The slot word").
const SHARED: u64 = 1 << USE_SHIFT;
/// Slot word: where the reader count starts.
const COUNT_SHIFT: u32 = USE_SHIFT + 1;
/// Slot word: one reader.
const COUNT_ONE: u64 = 1 << COUNT_SHIFT;
/// Slot word: the most readers one slot counts (more go to the reader table).
const MAX_COUNT: u64 = 255;
/// Slot word: the reader count's bits.
const COUNT_MASK: u64 = MAX_COUNT << COUNT_SHIFT;
/// Slot word: where the holder's first offset starts.
const FIRST_SHIFT: u32 = COUNT_SHIFT + 8;
/// Slot word: the holder's range and window.
const HOLDER_MASK: u64 = !0 << FIRST_SHIFT;

/// One slot: the stripe holder's word and the count of parties that may overlap the slot's
/// stripes. Aligned to its size, so a slot never straddles two cache lines (four slots per
/// line).
#[repr(align(16))]
pub(crate) struct Slot {
    /// The holder, and the wait word of whoever waits for it (layout in the module docs,
    /// "The slot word").
    word: AtomicU64,
    /// Counted parties (list writers and readers) whose range touches one of the slot's
    /// stripes: about to become visible, visible, or just gone.
    counted: AtomicU32,
    /// Threads and tasks waiting for the word's holder: the word is a *counted* wait word,
    /// released with a plain store (`wait`, "Counted words"). In the slot's padding, so on
    /// the line the release has just written.
    waiting: AtomicU32,
}

impl Slot {
    /// Frees a claimed slot (release or retraction) and wakes its waiters: a plain store,
    /// a compiler fence and a load of the waiter count on the same line (`wait`, "Counted
    /// words").
    #[inline]
    pub(crate) fn release(&self) {
        wait::end_counted_use(&self.word, &self.waiting, FREE);
    }

    /// Ends one reader's hold of a shared slot (release or retraction): the last reader
    /// frees the slot and wakes its waiters; the others leave the hull as it is.
    #[inline]
    pub(crate) fn release_shared(&self) {
        // Relaxed: the CAS below reads the latest value.
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            debug_assert!(cur & SHARED != 0 && cur & COUNT_MASK != 0, "a reader of a shared slot");
            // The last reader frees the slot; a CAS, not a swap: a reader may join at once.
            let next = if cur & COUNT_MASK == COUNT_ONE { FREE } else { cur - COUNT_ONE };
            // Release: the reader's critical section happens before whoever reads the word
            // after it (a writer that finds the slot free reads this value or a later one of
            // its release sequence).
            match self.word.compare_exchange_weak(cur, next, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => {
                    if next == FREE {
                        wait::counted_wake(&self.word, &self.waiting);
                    }
                    return;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Ends a hold of the slot in `mode`: [`release`](Self::release) or
    /// [`release_shared`](Self::release_shared).
    #[inline]
    pub(crate) fn release_in(&self, mode: Mode) {
        match mode {
            Mode::Exclusive => self.release(),
            Mode::Shared => self.release_shared(),
        }
    }
}

/// Ends a multi-stripe hold in `mode`: frees (or, for a reader, leaves) its slots, in
/// order, waking their waiters.
///
/// # Safety
///
/// `claimed` names slots of this lock's tables that the caller holds in `mode` (claimed,
/// or joined as a reader) and has not released.
#[inline]
pub(crate) unsafe fn release_claimed(claimed: Claimed, mode: Mode) {
    for i in 0..claimed.len {
        // SAFETY: the claim's slots are consecutive in one table, which lives as long as
        // the lock (the caller's contract); `i < len`.
        unsafe { claimed.first.add(i).as_ref() }.release_in(mode);
    }
}

/// One entry of the window directory.
pub(crate) struct Entry {
    /// The window that uses this entry's table.
    ///
    /// | value   | meaning                                                       |
    /// |---------|---------------------------------------------------------------|
    /// | `0`     | free                                                          |
    /// | `w + 1` | window `w` uses `table` (installed before the key was set)     |
    key: AtomicU64,
    /// This entry's table (null until first needed), as many slots as the overflow table.
    table: AtomicPtr<Slot>,
    /// Counted parties wider than [`NARROW`] stripes that touch this entry's window.
    wide: AtomicU32,
}

impl Entry {
    /// The table of an entry whose key is set (so its table is installed).
    #[inline]
    fn table(&self, window: u64) -> Table<'_> {
        // Acquire: pairs with the installing CAS in `install_table`, which the key's setter
        // did (or read) before it set the key we read.
        let slots = self.table.load(Ordering::Acquire);
        debug_assert!(!slots.is_null(), "a directory key without its table");
        Table { slots, wide: &self.wide, window: Some(window) }
    }
}

/// A resolved table: its slots, its `wide` count, and its window (`None` for the overflow
/// table, whose slots' windows are in their words).
#[derive(Clone, Copy)]
struct Table<'a> {
    slots: *const Slot,
    wide: &'a AtomicU32,
    window: Option<u64>,
}

/// The slot a holder of a range inside one stripe may claim, and what it stores there.
#[derive(Clone, Copy)]
pub(crate) struct StripeSlot<'a> {
    slot: &'a Slot,
    /// Its table's `wide` count.
    wide: &'a AtomicU32,
    /// The holder's word (the range's offsets and window).
    word: u64,
}

/// The slots a holder of a range over a few stripes of one window may claim (one per
/// stripe, consecutive in one table), and what it stores in each.
#[derive(Clone, Copy)]
pub(crate) struct StripeClaim<'a> {
    /// The slot of the range's first stripe; the others follow it in the same table.
    first: &'a Slot,
    /// How many slots: the stripes the range touches, 2 up to the lock's claim limit.
    len: usize,
    /// Their table's `wide` count.
    wide: &'a AtomicU32,
    /// The word of the first slot: from the range's start to the end of its first stripe,
    /// and the window.
    head: u64,
    /// The word of a middle slot: a whole stripe of the window.
    mid: u64,
    /// The word of the last slot: from the stripe's start to the range's end.
    tail: u64,
}

/// What a coarse holder's check found ([`Stripes::coarse_view`]). Two bits, not the
/// [`Conflict`] (with its ticket) that `overlapping` returns: the holder retracts on any
/// conflict and never waits for one, and a smaller result is cheaper to return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// No stripe holder in its way, and no other counted party over it.
    Clear,
    /// No stripe holder in its way, but another counted party may overlap it: search the
    /// list and the reader table.
    Counted,
    /// A stripe holder in its way: retract.
    Held,
}

/// The slots a multi-stripe hold claimed: what its token keeps, to release them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Claimed {
    /// The first slot; the others follow it in the same table.
    pub(crate) first: NonNull<Slot>,
    /// How many slots.
    pub(crate) len: usize,
}

/// The stripe table of one lock: the window directory, its tables and the overflow table.
pub(crate) struct Stripes<const B: u32 = MAX_STRIPE_SHIFT> {
    /// The table of every window without one of its own (direct-mapped: windows alias).
    overflow: Box<[Slot]>,
    /// Counted parties wider than [`NARROW`] stripes that touch a window without a table of
    /// its own, in [`OVERFLOW_WIDE`] counts on lines of their own: window `w` counts in
    /// `w mod OVERFLOW_WIDE`, so the wide parties of far-apart windows (and the stripe
    /// holders that read their counts) do not all meet on one line.
    overflow_wide: [CachePadded<AtomicU32>; OVERFLOW_WIDE],
    /// The window directory (see "Windows" in the module docs), inline so that the common
    /// lookup is as many dependent loads away from the slot as a direct-mapped table; only
    /// the first `dir_len` entries are used.
    dir: [Entry; MAX_WINDOWS],
    /// Directory entries in use: a power of two up to [`MAX_WINDOWS`], or 0.
    dir_len: usize,
    /// Directory keys set so far (each after its key's CAS): at `dir_len` the directory is
    /// full and every window resolves as it will forever.
    taken: AtomicUsize,
    /// A Bloom filter of the windows with an entry: each window's bit (`bloom_bit`) is set
    /// before its key is. Once the directory is full, a window whose bit is clear has no
    /// entry and resolves to the overflow table without probing (the common resolution when
    /// ranges are spread over many more windows than the directory holds).
    bloom: [AtomicU64; BLOOM_WORDS],
    /// Counted parties that touch more than [`NARROW_WINDOWS`] windows.
    wide: CachePadded<AtomicU32>,
    /// The most stripes (of one window) a stripe holder's range may touch (at least 1).
    claim_max: u64,
    /// The same for a shared holder: `claim_max`, or less when coarse claims take over
    /// sooner for readers ([`with_coarse_claims`](Self::with_coarse_claims)).
    shared_claim_max: u64,
    /// Stripe width, log2 units.
    shift: u32,
    /// Stripes per window (slots per table), log2.
    slot_bits: u32,
    /// Slots per table minus one. Kept although `len() - 1` gives it: deriving it costs the
    /// stripe fast path a load and a decrement (4 instructions per lock+unlock, callgrind on
    /// `w1_loop`).
    slot_mask: usize,
    /// Directory entries minus one (0 without entries).
    dir_mask: usize,
}

impl<const B: u32> Stripes<B> {
    /// Slot word: where the holder's last offset starts (offsets are `B` bits).
    const LAST_SHIFT: u32 = FIRST_SHIFT + B;
    /// Slot word: where the holder's window starts.
    const WINDOW_SHIFT: u32 = Self::LAST_SHIFT + B;
    /// Slot word: the bits of a window.
    const WINDOW_BITS: u32 = 64 - Self::WINDOW_SHIFT;
    /// Slot word: the mask of an offset.
    const OFFSET_MASK: u64 = (1 << B) - 1;

    /// A table of `slots` slots (a power of two, or 0 for no fast path) for stripes of
    /// `1 << shift` units, with a directory of `windows` window tables (a power of two, or
    /// 0 for the overflow table alone).
    pub(crate) fn new(shift: u32, slots: usize, windows: usize, claim_max: usize) -> Self {
        validate_for::<B>(shift, slots, windows, claim_max);
        let slot_bits = slots.max(1).trailing_zeros();
        let windows = windows_of(shift, slots, windows);
        Stripes {
            overflow: new_table(slots),
            overflow_wide: core::array::from_fn(|_| CachePadded::new(AtomicU32::new(0))),
            dir: core::array::from_fn(|_| Entry {
                key: AtomicU64::new(0),
                table: AtomicPtr::new(core::ptr::null_mut()),
                wide: AtomicU32::new(0),
            }),
            dir_len: windows,
            taken: AtomicUsize::new(0),
            bloom: core::array::from_fn(|_| AtomicU64::new(0)),
            wide: CachePadded::new(AtomicU32::new(0)),
            claim_max: claim_max as u64,
            shared_claim_max: claim_max as u64,
            shift,
            slot_bits,
            slot_mask: slots.max(1) - 1,
            dir_mask: windows.max(1) - 1,
        }
    }

    /// This table, with a coarse table beside it: shared ranges over more than
    /// [`SHARED_CLAIM_STRIPES`] stripes leave the stripe claims to the coarse claims
    /// (`claim_of`).
    pub(crate) fn with_coarse_claims(mut self) -> Self {
        self.shared_claim_max = self.claim_max.min(SHARED_CLAIM_STRIPES);
        self
    }

    /// Number of slots per table (0: the fast path is off).
    pub(crate) fn len(&self) -> usize {
        self.overflow.len()
    }

    /// Number of directory entries (window tables the lock may allocate; tests: the lock
    /// answers from its options, `windows_of`).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn windows(&self) -> usize {
        self.dir_len
    }

    /// Window tables allocated so far.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn tables_in_use(&self) -> usize {
        self.window_tables().count()
    }

    /// The window tables allocated so far. Relaxed loads: only for callers with no
    /// concurrent user (drop, a test after its threads are done).
    fn window_tables(&self) -> impl Iterator<Item = *mut Slot> + '_ {
        self.dir[..self.dir_len]
            .iter()
            // Relaxed: no concurrent user (above).
            .map(|e| e.table.load(Ordering::Relaxed))
            .filter(|t| !t.is_null())
    }

    /// Stripe width, log2 units (tests: the lock answers from its options).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// The window of stripe `stripe`.
    #[inline]
    fn window(&self, stripe: u64) -> u64 {
        stripe >> self.slot_bits
    }

    /// The stripes `range` touches.
    #[inline]
    fn stripes(&self, range: &Range<u64>) -> (u64, u64) {
        (range.start >> self.shift, (range.end - 1) >> self.shift)
    }

    /// The table of window `window`: its directory entry's, the overflow table if the
    /// directory is full without it, or — for a lookup (`create` false) — `None` if it has
    /// no entry yet (module docs, "Windows"). The common cases are inline: a window without
    /// an entry once the directory is full (the Bloom filter says so), and a window found at
    /// its home entry. The filter goes first: with ranges spread over more windows than the
    /// directory holds, nearly every resolution ends there, and the home entry's load and
    /// comparison would be spent in vain (7 instructions a resolution, where a directory
    /// that is not full pays 2 for the filter's test of `taken`).
    #[inline]
    fn table(&self, window: u64, create: bool) -> Option<Table<'_>> {
        // SeqCst (Acquire is what matters): reading `dir_len` here reads the last of the
        // `taken` increments, each after its entry's Bloom bit (SeqCst RMWs in one release
        // sequence), so the bit loads below see every bit of every entry. (With no
        // directory, `taken` and `dir_len` are 0 and every bit is clear.)
        if self.taken.load(Ordering::SeqCst) == self.dir_len {
            let (word, bit) = bloom_bit(window);
            // SeqCst: as above. A clear bit: no entry for `window`, and none can come (the
            // directory is full); probing would end at the overflow table too.
            if self.bloom[word].load(Ordering::SeqCst) & bit == 0 {
                return Some(self.overflow(window));
            }
        }
        let home = &self.dir[self.home(window)];
        // SeqCst: as in `table_slow`.
        if home.key.load(Ordering::SeqCst) == window + 1 {
            return Some(home.table(window));
        }
        self.table_slow(window, create)
    }

    /// The table of window `window` for a stripe holder or a counting party: a creating
    /// resolution, which always finds one.
    #[inline]
    fn resolve(&self, window: u64) -> Table<'_> {
        match self.table(window, true) {
            Some(table) => table,
            None => unreachable!("a creating resolution always finds a table"),
        }
    }

    /// The overflow table, as window `window` sees it (its slots, and its `wide` count).
    #[cfg_attr(loom, allow(clippy::modulo_one, reason = "OVERFLOW_WIDE is 1 under loom"))]
    fn overflow(&self, window: u64) -> Table<'_> {
        let wide = &self.overflow_wide[window as usize % OVERFLOW_WIDE];
        Table { slots: self.overflow.as_ptr(), wide, window: None }
    }

    /// The directory entry window `window` probes first: the window modulo the directory,
    /// so neighbouring windows take neighbouring entries and a lookup costs no multiply.
    #[inline]
    fn home(&self, window: u64) -> usize {
        // (`MAX_WINDOWS - 1` is implied by `dir_mask`; saying it spares the index's bounds
        // check.)
        window as usize & self.dir_mask & (MAX_WINDOWS - 1)
    }

    /// [`table`](Self::table) past the home entry: probe, and for a creating resolution
    /// take the first free entry.
    #[cold]
    fn table_slow(&self, window: u64, create: bool) -> Option<Table<'_>> {
        // A window probes at most `PROBES` entries: with the directory full, a window
        // without an entry (of many: windows are 32 Mi units by default) costs every lookup
        // and resolution `PROBES` loads, not the whole directory.
        let n = self.dir_len.min(PROBES);
        let key = window + 1;
        let home = self.home(window);
        for i in 0..n {
            let entry = &self.dir[(home + i) & self.dir_mask];
            // SeqCst: read after a checker's handshake fence, it sees every key a stripe
            // holder whose fence came first set or read before its fence (module docs);
            // its Acquire half pairs with the key CAS below, which follows the table's
            // installation.
            let found = entry.key.load(Ordering::SeqCst);
            if found == key {
                return Some(entry.table(window));
            }
            if found != 0 {
                continue;
            }
            if !create {
                return None;
            }
            install_table(entry, self.len());
            let (word, bit) = bloom_bit(window);
            // SeqCst: before the key (and the `taken` increment after it); pairs with the
            // loads in `table`. A CAS below that loses leaves a harmless false positive.
            self.bloom[word].fetch_or(bit, Ordering::SeqCst);
            // SeqCst: part of the stripe holder's stores before its handshake fence (module
            // docs); its Release half publishes the table installed above to whoever reads
            // the key.
            match entry.key.compare_exchange(0, key, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    // SeqCst: after the key; pairs with the load in `table`.
                    self.taken.fetch_add(1, Ordering::SeqCst);
                    return Some(entry.table(window));
                }
                Err(other) if other == key => return Some(entry.table(window)),
                Err(_) => {}
            }
        }
        Some(self.overflow(window))
    }

    /// The slot of `stripe` in `table`: stripe modulo the table, so a region of the domain
    /// maps to a contiguous run of slots, and threads working on different regions (the
    /// common way to split work) write different cache lines of the table. A hash would
    /// spread each thread's stripes over the whole table, and every slot line would move
    /// between the cores of the threads that take turns writing it (`w1_loop 3000000 0
    /// rangelock 2`, 2 threads on disjoint 16 MiB shares, default table, three interleaved
    /// runs each of a build with this function replaced by a multiply-shift hash and of
    /// this one: 34.1M-36.9M lock+unlock/s with the hash, 46.1M-56.6M with this).
    #[inline]
    fn slot_at<'a>(&self, table: Table<'a>, stripe: u64) -> &'a Slot {
        // SAFETY: as in `slots_of`; the index is below `self.len()` (a power of two: tables
        // exist only when it is not 0).
        unsafe { &*table.slots.add(stripe as usize & self.slot_mask) }
    }

    /// The slot of the one stripe `range` lies in (its window resolved, creating the
    /// window's table if needed) and the word a holder of `range` stores there, or `None`
    /// if the range spans stripes, the fast path is off, or the window may not use it.
    #[inline]
    pub(crate) fn slot_of(&self, range: &Range<u64>) -> Option<StripeSlot<'_>> {
        let (first, last) = self.stripes(range);
        if first != last {
            return None;
        }
        let (window, table) = self.claim_table(first)?;
        let base = first << self.shift;
        let word = ((range.start - base) << FIRST_SHIFT)
            | ((range.end - 1 - base) << Self::LAST_SHIFT)
            | (window << Self::WINDOW_SHIFT);
        Some(StripeSlot { slot: self.slot_at(table, first), wide: table.wide, word })
    }

    /// The slots of the stripes `range` touches, if they are 2 up to the claim limit of one
    /// window for a holder in `mode` (resolved as in [`slot_of`](Self::slot_of)), and the
    /// words a holder of `range` stores there; `None` otherwise.
    ///
    /// With coarse claims on, a reader's limit is the lock's limit capped at
    /// [`SHARED_CLAIM_STRIPES`] ([`with_coarse_claims`](Self::with_coarse_claims)): a reader
    /// pays two RMWs per stripe (it joins each slot with a CAS and leaves it with one,
    /// since others may join), where an exclusive holder pays one and a plain store, so for
    /// a reader the coarse claim (four RMWs whatever the length) wins sooner.
    #[inline]
    pub(crate) fn claim_of(&self, range: &Range<u64>, mode: Mode) -> Option<StripeClaim<'_>> {
        let (first, last) = self.stripes(range);
        if first == last {
            return None;
        }
        let max = match mode {
            Mode::Exclusive => self.claim_max,
            Mode::Shared => self.shared_claim_max,
        };
        self.span(range, first, last, max)
    }

    /// The slots of the stripes `range` touches, if they are 1 up to `max` of one window,
    /// and the words a holder of `range` stores there (as in `claim_of`).
    #[inline]
    pub(crate) fn span_of(&self, range: &Range<u64>, max: u64) -> Option<StripeClaim<'_>> {
        let (first, last) = self.stripes(range);
        self.span(range, first, last, max)
    }

    /// [`span_of`](Self::span_of) for the stripes `first..=last` of `range`.
    #[inline]
    fn span(&self, range: &Range<u64>, first: u64, last: u64, max: u64) -> Option<StripeClaim<'_>> {
        if last - first >= max || self.window(last) != self.window(first) {
            return None;
        }
        let (window, table) = self.claim_table(first)?;
        let (base, top) = (first << self.shift, last << self.shift);
        let whole = (1 << self.shift) - 1;
        let window_bits = window << Self::WINDOW_SHIFT;
        let head_end = if first == last { range.end - 1 - base } else { whole };
        Some(StripeClaim {
            first: self.slot_at(table, first),
            len: (last - first + 1) as usize,
            wide: table.wide,
            head: ((range.start - base) << FIRST_SHIFT)
                | (head_end << Self::LAST_SHIFT)
                | window_bits,
            mid: (whole << Self::LAST_SHIFT) | window_bits,
            tail: ((range.end - 1 - top) << Self::LAST_SHIFT) | window_bits,
        })
    }

    /// The range held by the hold that claimed (or joined) `claimed` (from
    /// [`span_of`](Self::span_of)) for a range starting at `start`: the end is the last
    /// slot's holder offset, which is the hold's own while it lasts (a taken slot's holder
    /// bits change only when its last holder frees it; readers who join or leave change its
    /// count only). What a coarse token keeps instead of the range's end.
    ///
    /// # Safety
    ///
    /// `claimed` names slots of this table claimed (or joined) by a hold of a range
    /// starting at `start` that has not ended.
    #[inline]
    pub(crate) unsafe fn claimed_range(&self, claimed: Claimed, start: u64) -> Range<u64> {
        let last = (start >> self.shift) + claimed.len as u64 - 1;
        // SAFETY: the claim's slots are consecutive in one table, which lives as long as the
        // lock (the caller's contract); `len - 1 < len`.
        let slot = unsafe { claimed.first.add(claimed.len - 1).as_ref() };
        // Relaxed: the hold's own claim (or join) wrote this word earlier in the hold, so
        // coherence gives that value or a later one, all with the same holder bits.
        let word = slot.word.load(Ordering::Relaxed);
        debug_assert!(word & FREE == 0, "a held coarse slot is taken");
        start..(last << self.shift) + ((word >> Self::LAST_SHIFT) & Self::OFFSET_MASK) + 1
    }

    /// Whether `range` may hold a coarse claim (module docs, "Coarse claims"): the stripe
    /// table is on and the range spans stripes of at most two windows (so it counts itself
    /// in slots or in its windows' `wide` counts, which `coarse_view` reads).
    pub(crate) fn coarse_eligible(&self, range: &Range<u64>) -> bool {
        let (first, last) = self.stripes(range);
        !self.overflow.is_empty() && last > first && self.window(last) - self.window(first) < 2
    }

    /// A coarse holder's check, after counting `range` (a
    /// [`coarse_eligible`](Self::coarse_eligible) one), claiming its coarse slots and its
    /// handshake fence, in one pass over the slots of its stripes: a stripe holder in its
    /// way ([`View::Held`], as `overlapping` finds it), else whether a counted party
    /// *besides it* may overlap it ([`View::Counted`]): a count it reads above its own
    /// share, that is, its stripes' slot counts (its own 1 each when it counts there: up to
    /// [`NARROW`] stripes), its windows' `wide` counts (its own 1 each otherwise), the
    /// lock's `wide` count (never its own).
    #[inline]
    pub(crate) fn coarse_view(&self, range: &Range<u64>, mode: Mode) -> View {
        debug_assert!(self.coarse_eligible(range));
        let (first, last) = self.stripes(range);
        let (in_slots, in_wide) = if last - first < NARROW { (1, 0) } else { (0, 1) };
        // SeqCst (every load here): the holder's handshake loads, after its fence; pair
        // with the SeqCst claims of stripe holders and the SeqCst increments of `count`.
        let mut others = self.wide.load(Ordering::SeqCst) != 0;
        for w in self.window(first)..=self.window(last) {
            // The table exists: our own count created it.
            let table = self.resolve(w);
            others |= table.wide.load(Ordering::SeqCst) > in_wide;
            let (lo, hi) = (first.max(w << self.slot_bits), last.min(self.last_stripe(w)));
            let lo_slot: *const Slot = self.slot_at(table, lo);
            let n = (hi - lo + 1) as usize;
            // SAFETY: stripes `lo..=hi` lie in window `w`, whose slots are consecutive in
            // `table` (slot = stripe mod slots), so `lo_slot + i` is `lo + i`'s, `i < n`.
            let slots = unsafe { core::slice::from_raw_parts(lo_slot, n) };
            // One pass without a branch per slot: are all words free, and does a count
            // exceed our share (`count >> in_slots` is non-zero exactly when `count >
            // in_slots`, for a share of 0 or 1; the shift is taken once, of the counts'
            // OR, as shifting commutes with OR)? Ranges spread over the domain nearly
            // always find that, so only a taken slot costs the exact pass below.
            let (mut all, mut any) = (FREE, 0);
            for slot in slots {
                all &= slot.word.load(Ordering::SeqCst);
                any |= slot.counted.load(Ordering::SeqCst);
            }
            others |= any >> in_slots != 0;
            if all & FREE != 0 {
                continue;
            }
            // Some slot is taken: find it and check its holder. (Later loads than the pass
            // above, so they see every holder it saw, or that holder's release.)
            for (i, slot) in slots.iter().enumerate() {
                let word = slot.word.load(Ordering::SeqCst);
                if word & FREE == 0 {
                    let stripe = lo + i as u64;
                    if is_held(&self.check_word(table, stripe, word, range, mode)) {
                        return View::Held;
                    }
                }
            }
        }
        if others {
            View::Counted
        } else {
            View::Clear
        }
    }

    /// The window of stripe `stripe` and its table (resolved, created if needed), or `None`
    /// if the fast path is off or the window may not use it (too far out for an overflow
    /// slot: "The slot word" in the module docs).
    #[inline]
    fn claim_table(&self, stripe: u64) -> Option<(u64, Table<'_>)> {
        if self.overflow.is_empty() {
            return None;
        }
        let window = self.window(stripe);
        // A creating `table` is never `None`; `?` says so for free, where `resolve`'s
        // unreachable arm costs the fast path a branch.
        let table = self.table(window, true)?;
        if window >> Self::WINDOW_BITS != 0 && table.window.is_none() {
            return None;
        }
        Some((window, table))
    }

    /// Counts a party (list writer or reader) of `range`, before it becomes visible.
    pub(crate) fn count(&self, range: &Range<u64>) {
        self.each_count(range, |count| {
            // SeqCst: the party's handshake store, before its link or announcement; pairs
            // with the SeqCst loads of `StripeSlot::counted`.
            count.fetch_add(1, Ordering::SeqCst);
        });
    }

    /// Uncounts a party of `range` (after it is gone: unlinked, or its announcement
    /// cleared, or given up before it was visible).
    pub(crate) fn uncount(&self, range: &Range<u64>) {
        self.each_count(range, |count| {
            // Release: a stripe holder that reads the count this leaves (Acquire half of
            // its SeqCst load) sees the party's critical section.
            count.fetch_sub(1, Ordering::Release);
        });
    }

    /// Applies `f` to the counts of a counted range: the `counted` count of each stripe's
    /// slot, or the `wide` count of each window's table, or the lock's one `wide` count
    /// (windows resolved, creating their tables: a window resolves the same way for the
    /// count and the uncount). Always inline: out of line, its prologue, spills and
    /// epilogue cost a coarse hold 23 of its 909 instructions (`mixed_loop 200000
    /// rangelock 1 100 17..20`).
    #[inline(always)]
    fn each_count(&self, range: &Range<u64>, f: impl Fn(&AtomicU32)) {
        if self.overflow.is_empty() {
            return;
        }
        let (first, last) = self.stripes(range);
        if last - first < NARROW {
            // One resolution per window, not per stripe (a resolution may probe).
            let mut table = self.resolve(self.window(first));
            for s in first..last + 1 {
                if s != first && s & self.slot_mask as u64 == 0 {
                    table = self.resolve(self.window(s));
                }
                f(&self.slot_at(table, s).counted);
            }
            return;
        }
        let (first, last) = (self.window(first), self.window(last));
        if last - first < NARROW_WINDOWS {
            for w in first..last + 1 {
                f(self.resolve(w).wide);
            }
        } else {
            f(&self.wide);
        }
    }

    /// A stripe holder overlapping `range` in a mode that conflicts with `mode`, if any
    /// (list writers and readers, after their own handshake store).
    pub(crate) fn overlapping(
        &self,
        range: &Range<u64>,
        mode: Mode,
        _guard: &Guard<'_>,
    ) -> Conflict {
        self.overlapping_slots(range, mode)
    }

    /// [`overlapping`](Self::overlapping) without a guard: slots are never freed while the
    /// lock lives, so reading them needs none (the guard of `overlapping` only says where
    /// callers run it).
    pub(crate) fn overlapping_slots(&self, range: &Range<u64>, mode: Mode) -> Conflict {
        if self.overflow.is_empty() {
            return Conflict::None;
        }
        handshake_fence();
        let (first, last) = self.stripes(range);
        let (first_window, last_window) = (self.window(first), self.window(last));
        let found = if last_window - first_window >= 2 {
            // The range covers at least one whole window: check the tables that exist
            // instead of looking up every window, every holder a candidate.
            self.wide_check(range, mode, first_window, last_window)
        } else {
            (first_window..=last_window).find_map(|w| {
                let table = self.table(w, false)?; // a lookup: `None` is "no table yet"
                let (lo, hi) = (first.max(w << self.slot_bits), last.min(self.last_stripe(w)));
                (lo..hi + 1).map(|s| self.check(table, s, range, mode)).find(is_held)
            })
        };
        found.unwrap_or(Conflict::None)
    }

    /// The last stripe of window `window`.
    #[inline]
    fn last_stripe(&self, window: u64) -> u64 {
        (window << self.slot_bits) | ((1u64 << self.slot_bits) - 1)
    }

    /// `overlapping` for a range over windows `first..=last` (at least three): every slot
    /// of the overflow table and of each window table of those windows.
    #[cold]
    fn wide_check(
        &self,
        range: &Range<u64>,
        mode: Mode,
        first: u64,
        last: u64,
    ) -> Option<Conflict> {
        let listed = self.dir[..self.dir_len].iter().filter_map(|entry| {
            // SeqCst: as in `table_slow`.
            let key = entry.key.load(Ordering::SeqCst);
            (key != 0 && (first..=last).contains(&(key - 1))).then(|| entry.table(key - 1))
        });
        // (Only the overflow table's slots are read here, not a window's `wide` count.)
        core::iter::once(self.overflow(0)).chain(listed).find_map(|table| {
            (0..self.len() as u64).map(|s| self.check(table, s, range, mode)).find(is_held)
        })
    }

    /// The holder(s) of the slot of stripe `stripe` in `table` if they overlap `range` in a
    /// mode that conflicts with `mode` (for the overflow table, `stripe` only picks the
    /// slot: the holder's window is in its word).
    #[inline]
    fn check(&self, table: Table<'_>, stripe: u64, range: &Range<u64>, mode: Mode) -> Conflict {
        let slot = self.slot_at(table, stripe);
        // SeqCst: the list writer's or reader's handshake load; pairs with the SeqCst claim.
        let word = slot.word.load(Ordering::SeqCst);
        self.check_word(table, stripe, word, range, mode)
    }

    /// [`check`](Self::check) of the word `word` read from stripe `stripe`'s slot of
    /// `table`.
    #[inline]
    fn check_word(
        &self,
        table: Table<'_>,
        stripe: u64,
        word: u64,
        range: &Range<u64>,
        mode: Mode,
    ) -> Conflict {
        let slot = self.slot_at(table, stripe);
        if word & FREE != 0 || (word & SHARED != 0 && mode == Mode::Shared) {
            return Conflict::None;
        }
        let window = table.window.unwrap_or(word >> Self::WINDOW_SHIFT);
        let base = ((window << self.slot_bits) | (stripe & self.slot_mask as u64)) << self.shift;
        let holder = base + ((word >> FIRST_SHIFT) & Self::OFFSET_MASK)
            ..base + ((word >> Self::LAST_SHIFT) & Self::OFFSET_MASK) + 1;
        if overlaps(&holder, range) {
            Conflict::Held(Ticket::counted(&slot.word, &slot.waiting, word))
        } else {
            Conflict::None
        }
    }
}

impl StripeSlot<'_> {
    /// Claims the slot in `mode`: exclusively if it is free (`claim_slot`), or as one of its
    /// readers (`join_shared`).
    #[inline]
    pub(crate) fn claim(&self, mode: Mode) -> bool {
        match mode {
            Mode::Exclusive => claim_slot(self.slot, self.word),
            Mode::Shared => join_shared(self.slot, self.word),
        }
    }

    /// Whether a counted party may overlap the claimed stripe (a stripe holder's check,
    /// after its claim and `handshake_fence`).
    #[inline]
    pub(crate) fn counted<const B: u32>(&self, stripes: &Stripes<B>) -> bool {
        // SeqCst: the stripe holder's handshake loads; pair with the SeqCst increments in
        // `count`, which precede the party's link or announcement and its fence. Acquire: a
        // zero written by `uncount` publishes the party's critical section.
        self.slot.counted.load(Ordering::SeqCst) != 0
            || self.wide.load(Ordering::SeqCst) != 0
            || stripes.wide.load(Ordering::SeqCst) != 0
    }

    /// The claimed slot, for the token.
    #[inline]
    pub(crate) fn slot(&self) -> NonNull<Slot> {
        NonNull::from(self.slot)
    }
}

impl StripeClaim<'_> {
    /// The `i`-th slot of the claim (`i < self.len`).
    #[inline]
    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < self.len);
        // SAFETY: `claim_of` found `len` consecutive stripes of one window, whose slots are
        // consecutive in that window's table (or the overflow table): `first` is the first
        // of them, so `first + i` is in the same table.
        unsafe { &*core::ptr::from_ref(self.first).add(i) }
    }

    /// Claims every slot of the claim in `mode`, in order: exclusively if each is free
    /// (`claim_slot`), or as one of its readers (`join_shared`). On the first slot that will
    /// not have us, gives back the ones taken (waking their waiters) and says no. Never
    /// waits, so a holder of some slots never blocks another holder: nobody waits for a
    /// stripe holder that waits.
    #[inline]
    pub(crate) fn claim(&self, mode: Mode) -> bool {
        match mode {
            Mode::Exclusive => self.claim_each(claim_slot, Mode::Exclusive),
            Mode::Shared => self.claim_each(join_shared, Mode::Shared),
        }
    }

    /// [`claim`](Self::claim) with `take` for each slot: the head's word, the middle
    /// slots' (a loop with no choice of word in it: choosing the word per slot cost a
    /// claim of 4-5 stripes 17 instructions), then the tail's.
    #[inline(always)]
    fn claim_each(&self, take: impl Fn(&Slot, u64) -> bool, mode: Mode) -> bool {
        let last = self.len - 1;
        // The slots taken so far are `0..i`; give them back if slot `i` will not have us.
        let refuse = |i: usize| {
            (0..i).for_each(|j| self.slot(j).release_in(mode));
            false
        };
        if !take(self.slot(0), self.head) {
            return false;
        }
        if last == 0 {
            return true;
        }
        for i in 1..last {
            if !take(self.slot(i), self.mid) {
                return refuse(i);
            }
        }
        take(self.slot(last), self.tail) || refuse(last)
    }

    /// Whether a counted party may overlap the claimed stripes (a stripe holder's check,
    /// after its claim and `handshake_fence`).
    pub(crate) fn counted<const B: u32>(&self, stripes: &Stripes<B>) -> bool {
        // SeqCst: as in `StripeSlot::counted`.
        (0..self.len).any(|i| self.slot(i).counted.load(Ordering::SeqCst) != 0)
            || self.wide.load(Ordering::SeqCst) != 0
            || stripes.wide.load(Ordering::SeqCst) != 0
    }

    /// What the token keeps.
    pub(crate) fn claimed(&self) -> Claimed {
        Claimed { first: NonNull::from(self.first), len: self.len }
    }
}

/// Claims `slot` with the holder word `word` if it is free.
#[inline]
fn claim_slot(slot: &Slot, word: u64) -> bool {
    // No load before the CAS, although a taken slot then costs an RMW: a slot line that
    // another core wrote last would cross twice (shared for the load, then owned for the
    // CAS), and for ranges spread over the domain by two threads that doubled the cost of
    // the fast path (`mixed_loop`, octaves below 17 at 2 threads: 18.5M ops/s with the
    // load, 53.4M without; callgrind cannot see this).
    // SeqCst CAS: the stripe holder's store in the handshake (claim, fence, read the
    // counts); pairs with the SeqCst slot loads of counted parties in `check`. Its Acquire
    // half reads the `FREE` of the previous holder's Release `end_use`.
    slot.word.compare_exchange(FREE, word, Ordering::SeqCst, Ordering::Relaxed).is_ok()
}

/// Joins `slot` as one of its readers with the holder word `word`, if it is free or held
/// by readers of exactly that word's range (fewer than `MAX_COUNT` of them).
#[inline]
fn join_shared(slot: &Slot, word: u64) -> bool {
    // The first CAS guesses a free slot instead of loading the word first: a load that
    // misses brings the line in shared and the CAS must then fetch it again for writing,
    // two transfers where one does (see `claim`).
    let mut cur = FREE;
    loop {
        let next = if cur == FREE {
            word | SHARED | COUNT_ONE
        } else if cur & SHARED != 0
            && (cur ^ word) & HOLDER_MASK == 0
            && cur & COUNT_MASK != COUNT_MASK
        {
            cur + COUNT_ONE
        } else {
            return false;
        };
        // SeqCst: the reader's store in the handshake (join, fence, read the counts), as
        // the exclusive claim's; pairs with the SeqCst loads in `check`. Acquire half:
        // reads the release of the previous holder.
        match slot.word.compare_exchange_weak(cur, next, Ordering::SeqCst, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// A slot word's current value (tests).
#[cfg(all(test, not(loom)))]
pub(crate) fn word_of(slot: NonNull<Slot>) -> u64 {
    // SAFETY: the caller's slot is in a table of a lock it borrows.
    unsafe { slot.as_ref() }.word.load(Ordering::Relaxed)
}

/// A slot's waiter count (tests).
#[cfg(all(test, not(loom)))]
pub(crate) fn waiting_of(slot: NonNull<Slot>) -> u32 {
    // SAFETY: the caller's slot is in a table of a lock it borrows.
    unsafe { slot.as_ref() }.waiting.load(Ordering::Relaxed)
}

impl<const B: u32> Drop for Stripes<B> {
    fn drop(&mut self) {
        let len = self.len();
        for table in self.window_tables() {
            // SAFETY: `&mut self`: nobody uses the table any more; each is freed once, here.
            unsafe { free_table(table, len) };
        }
    }
}

/// Checks the options of a stripe table (what [`Stripes::new`] asserts) without building
/// it: the lock validates its options when it is built and builds its tables on first use.
///
/// # Panics
///
/// As [`Builder::build_raw`](super::Builder::build_raw).
pub(crate) fn validate(shift: u32, slots: usize, windows: usize, claim_max: usize) {
    validate_for::<MAX_STRIPE_SHIFT>(shift, slots, windows, claim_max);
}

/// [`validate`] for a table whose offsets are `B` bits.
fn validate_for<const B: u32>(shift: u32, slots: usize, windows: usize, claim_max: usize) {
    assert!(slots == 0 || slots.is_power_of_two(), "stripe slots must be a power of two");
    assert!(
        windows == 0 || (windows.is_power_of_two() && windows <= MAX_WINDOWS),
        "stripe windows must be 0 or a power of two up to {MAX_WINDOWS}, got {windows}"
    );
    assert!(slots == 0 || shift <= B, "stripes must be at most 2^{B} units wide, got 2^{shift}");
    assert!(
        (1..=MAX_CLAIM_STRIPES).contains(&claim_max),
        "a stripe claim spans 1..={MAX_CLAIM_STRIPES} stripes, got {claim_max}"
    );
}

/// The directory entries a table of `slots` slots of `1 << shift` units gets when
/// `windows` are asked for: none without a table, or when a window would be one unit (a
/// window number must leave room for the `+ 1` of its key; without that, there would be no
/// point in a directory anyway).
pub(crate) fn windows_of(shift: u32, slots: usize, windows: usize) -> usize {
    let slot_bits = slots.max(1).trailing_zeros();
    if slots == 0 || shift + slot_bits == 0 {
        0
    } else {
        windows
    }
}

/// Makes sure the table of directory entry `entry` exists (`len` slots).
#[cold]
fn install_table(entry: &Entry, len: usize) {
    // Acquire: as in `Entry::table`.
    if entry.table.load(Ordering::Acquire).is_null() {
        let fresh = Box::into_raw(new_table(len)).cast::<Slot>();
        // AcqRel: Release publishes the fresh table to the key's readers; Acquire reads a
        // competitor's table on failure.
        if entry
            .table
            .compare_exchange(core::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: `fresh` is `Box::into_raw(new_table(len))`, ours, never published.
            unsafe { free_table(fresh, len) };
        }
    }
}

/// Frees a window table.
///
/// # Safety
///
/// `table` comes from `Box::into_raw(new_table(len))` (cast to its first slot), nobody
/// uses it any more, and it is freed only once.
unsafe fn free_table(table: *mut Slot, len: usize) {
    // SAFETY: the caller's contract: this is the whole boxed slice, freed once.
    drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(table, len)) });
}

/// A table of `slots` free slots.
fn new_table(slots: usize) -> Box<[Slot]> {
    (0..slots)
        .map(|_| Slot {
            word: AtomicU64::new(FREE),
            counted: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
        })
        .collect()
}

/// Window `window`'s bit in `Stripes::bloom`: its word and mask.
#[inline]
fn bloom_bit(window: u64) -> (usize, u64) {
    const BITS: u32 = (BLOOM_WORDS * 64).trailing_zeros();
    let h = (window.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BITS)) as usize;
    (h / 64, 1 << (h % 64))
}

fn is_held(c: &Conflict) -> bool {
    matches!(c, Conflict::Held(_))
}
