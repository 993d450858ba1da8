//! The stripe table: a direct-mapped fast path for exclusive ranges that fit in one stripe.
//!
//! The domain is cut into stripes of `1 << shift` units, and the stripes into *windows* of
//! `slots` consecutive stripes. Stripe `s` owns slot `s mod slots` of its window's table
//! (see "Windows" below: each window in use gets a table of its own, up to a budget, and
//! the rest share one overflow table, where stripes `slots` apart share a slot). An exclusive range
//! that lies inside one stripe may hold its range by claiming that stripe's slot with a
//! CAS (`null → node`) instead of linking its node into the skip list. The slot says "the
//! range of this node is held (or about to be)", exactly like a reader's announcement says
//! it for a shared range, and the same Dekker handshake makes it safe:
//!
//! - a *stripe holder* claims its slot, then (after the handshake fence) checks for list
//!   nodes that may overlap and for overlapping readers;
//! - a *list writer* counts itself in the slots of the stripes its range touches (or, for a
//!   range of more than [`NARROW`] stripes, in the one `wide` count), links its node, and
//!   then checks the reader table and those slots' holders;
//! - a *reader* announces itself, then checks the list and the slots of its stripes.
//!
//! Whichever of two overlapping parties passes its fence second sees the other's store
//! (see `skiplist`, Consistency). The counts let a stripe holder skip the list search:
//! every list node that overlaps stripe `s` was counted in `s`'s slot (or in `wide`) before
//! it was linked and is uncounted only after it is unlinked, so a holder that reads both
//! counts at zero after its fence knows no list node overlaps its range (a writer whose
//! fence comes later reads the holder's slot instead). A non-zero count (perhaps for a
//! list node of another stripe of the same slot) only sends the holder to the list search.
//!
//! A stripe holder that finds any conflict **retracts** (it clears its slot, ends its node's
//! use, waking whoever took a ticket on it) and continues as a list writer with a fresh
//! node, so a stripe holder never waits while it is visible and nobody can wait for it in
//! a cycle. Two stripe holders of one slot exclude each other by the CAS; the loser takes
//! the list path, where it sees the winner's node in the slot and checks the actual ranges,
//! so disjoint ranges of one stripe both hold. Stripe holders of different slots lie in
//! different stripes and cannot overlap.
//!
//! A stripe hold costs one CAS on a slot that, for threads working on different regions
//! of the domain, lies on a line no other thread writes; the list's head and the reader
//! table are only read. That is the point of the table: a skip-list insertion writes the
//! shared links of its neighbours.
//!
//! # Windows
//!
//! One direct-mapped table aliases: ranges held anywhere in the domain occupy (or count
//! themselves in) the slots that a far-away region maps to, and send that region's ranges
//! to the list. So a window (`slots` stripes: 2048 x 16 Ki units = 32 Mi units by default)
//! gets a table of its own the first time a stripe holder or a narrow list writer needs a
//! slot of it, found through a small directory of `windows` entries (64 by default):
//! open addressing with linear probing from a hash of the window, one key word per entry
//! (`0`: free; else the window plus one) and the entry's table beside it. An entry is
//! never freed while the lock lives, so a window *resolves* the same way forever: to its
//! entry's table, or, once every entry is taken by other windows, to the shared overflow
//! table (the table of the lock before windows existed; its slot tags tell its windows
//! apart).
//!
//! - *Creating resolution* (stripe holders, and list writers before they count): probe;
//!   at the first free entry, make sure the entry's table exists (allocate, install it with
//!   a CAS; a loser frees its copy), then CAS the key from `0` to ours. The table is
//!   installed before the key, so whoever reads the key (Acquire) finds the table.
//! - *Lookup* (the checks of list writers and readers, after their handshake fence):
//!   probe; a free entry on the way ends the search with "no table": no stripe holder of
//!   that window exists that the handshake could require us to see. A stripe holder
//!   resolves its window *before* its claim and fence; if its fence comes first in the
//!   SeqCst order, our loads after our fence read its key CAS (and every key it read on
//!   its way, which it read before its fence), so we follow the same probe sequence to the
//!   same entry. If our fence comes first, the holder sees our own store and backs off.
//! - Entries are taken in probe order and never freed, so a free entry on the probe path
//!   means the window has no entry yet, and a full directory with no entry for a window
//!   stays that way: the overflow table is final for it.
//!
//! Memory is allocated per window in use (32 KiB a window by default), at most `windows`
//! tables besides the overflow table, and freed when the lock drops. A range wide enough
//! to cover a whole window (at least `slots` stripes) checks the slots of every existing
//! table that its windows touch, which is the price of a lock-wide writer or reader.

use core::ops::Range;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::list::Conflict;
use super::node::Node;
use super::readers::handshake_fence;
use super::reclaim::Guard;
use crate::primitive::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use crate::range::overlaps;

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
/// The largest window directory ([`Builder::windows`](super::Builder::windows)).
pub const MAX_WINDOWS: usize = 64;
/// A list range touching at most this many stripes counts itself in their slots; a wider
/// one counts itself once in the table's `wide` count.
pub(crate) const NARROW: u64 = 4;

/// One slot: the stripe holder's node, and the count of list nodes that may overlap the
/// slot's stripes. Aligned to its size, so a slot never straddles two cache lines (four
/// slots per line).
#[repr(align(16))]
pub(crate) struct Slot {
    /// The stripe holder (null when free).
    node: AtomicPtr<Node>,
    /// List writers counted in this slot: linked (or about to link, or just unlinked)
    /// nodes whose range touches one of the slot's stripes.
    listed: AtomicU32,
    /// Which of the slot's stripes the holder is in ([`Stripes::tag`]), or [`UNKNOWN`]:
    /// lets a checker skip the holder of another stripe without reading its node.
    ///
    /// | value     | meaning                                                       |
    /// |-----------|---------------------------------------------------------------|
    /// | `UNKNOWN` | free, or a holder that has claimed but not yet tagged the slot |
    /// | `t`       | the holder of `node` (or one that claimed later) has tag `t`  |
    ///
    /// The holder stores its tag after its claim and `UNKNOWN` before its clear, so a
    /// checker that read `node = p` and then a tag other than `UNKNOWN` and other than
    /// `p`'s own read it from a later holder, which claimed after `p` left. (Each half
    /// suffices on its own: the tag is also stored before the holder's handshake fence, so
    /// a checker that `p` does not see, whose fence comes later, reads `p`'s tag or a later
    /// one. The loom model `loom_slot_tag_of_an_aliased_stripe_is_not_trusted` fails when
    /// both the reset and the early store are removed.)
    tag: AtomicU32,
}

/// The tag of a slot whose holder's stripe is not known (see [`Slot::tag`](Slot)).
const UNKNOWN: u32 = u32::MAX;

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
}

impl Entry {
    /// The table of an entry whose key is set (so its table is installed).
    #[inline]
    fn table(&self) -> *const Slot {
        // Acquire: pairs with the installing CAS in `install_table`, which the key's setter
        // did (or read) before it set the key we read.
        let ptr = self.table.load(Ordering::Acquire);
        debug_assert!(!ptr.is_null(), "a directory key without its table");
        ptr
    }
}

/// The stripe table of one lock: the window directory, its tables and the overflow table.
pub(crate) struct Stripes {
    /// The table of every window without one of its own (direct-mapped: windows alias).
    overflow: Box<[Slot]>,
    /// The window directory (see "Windows" in the module docs), inline so that the common
    /// lookup is as many dependent loads away from the slot as a direct-mapped table; only
    /// the first `dir_len` entries are used.
    dir: [Entry; MAX_WINDOWS],
    /// Directory entries in use: a power of two up to [`MAX_WINDOWS`], or 0.
    dir_len: usize,
    /// List writers whose range touches more than [`NARROW`] stripes.
    wide: CachePadded<AtomicU32>,
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

impl Stripes {
    /// A table of `slots` slots (a power of two, or 0 for no fast path) for stripes of
    /// `1 << shift` units, with a directory of `windows` window tables (a power of two, or
    /// 0 for the overflow table alone).
    pub(crate) fn new(shift: u32, slots: usize, windows: usize) -> Self {
        assert!(slots == 0 || slots.is_power_of_two(), "stripe slots must be a power of two");
        assert!(
            windows == 0 || (windows.is_power_of_two() && windows <= MAX_WINDOWS),
            "stripe windows must be 0 or a power of two up to {MAX_WINDOWS}, got {windows}"
        );
        assert!(shift < 64, "stripe width must be below 2^64 units");
        let slot_bits = slots.max(1).trailing_zeros();
        // A window number must leave room for the `+ 1` of its key: windows cover at least
        // 2 units (without that, there would be no point in a directory anyway).
        let windows = if slots == 0 || shift + slot_bits == 0 { 0 } else { windows };
        Stripes {
            overflow: new_table(slots),
            dir: core::array::from_fn(|_| Entry {
                key: AtomicU64::new(0),
                table: AtomicPtr::new(core::ptr::null_mut()),
            }),
            dir_len: windows,
            wide: CachePadded::new(AtomicU32::new(0)),
            shift,
            slot_bits,
            slot_mask: slots.max(1) - 1,
            dir_mask: windows.max(1) - 1,
        }
    }

    /// Number of slots per table (0: the fast path is off).
    pub(crate) fn len(&self) -> usize {
        self.overflow.len()
    }

    /// Number of directory entries (window tables the lock may allocate).
    pub(crate) fn windows(&self) -> usize {
        self.dir_len
    }

    /// Window tables allocated so far.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn tables_in_use(&self) -> usize {
        self.window_tables().count()
    }

    /// The window tables allocated so far. Relaxed loads: only for callers with no
    /// concurrent user (drop, drain, a test after its threads are done).
    fn window_tables(&self) -> impl Iterator<Item = *mut Slot> + '_ {
        self.dir[..self.dir_len]
            .iter()
            // Relaxed: no concurrent user (above).
            .map(|e| e.table.load(Ordering::Relaxed))
            .filter(|t| !t.is_null())
    }

    /// Stripe width, log2 units.
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// The window of stripe `stripe`.
    #[inline]
    fn window(&self, stripe: u64) -> u64 {
        stripe >> self.slot_bits
    }

    /// The tag of stripe `stripe`: its window, in 31 bits (which of the stripes sharing an
    /// overflow slot it is; stripes whose tags collide are told apart by their nodes'
    /// ranges).
    #[inline]
    fn tag(&self, stripe: u64) -> u32 {
        window_tag(self.window(stripe))
    }

    /// The stripes `range` touches.
    #[inline]
    fn stripes(&self, range: &Range<u64>) -> (u64, u64) {
        (range.start >> self.shift, (range.end - 1) >> self.shift)
    }

    /// The table of window `window` (a pointer to its first slot; it has [`len`](Self::len)
    /// slots): its directory entry's, the overflow table if the directory is full without
    /// it, or — for a lookup (`create` false) — `None` if it has no entry yet (module docs,
    /// "Windows"). The common case, a window found at its home entry, is inline.
    #[inline]
    fn table(&self, window: u64, create: bool) -> Option<*const Slot> {
        let home = &self.dir[self.home(window)];
        // SeqCst: as in `table_slow`. (With no directory, entry 0 stays free.)
        if home.key.load(Ordering::SeqCst) == window + 1 {
            return Some(home.table());
        }
        self.table_slow(window, create)
    }

    /// The table of window `window` for a stripe holder or a counting list writer: a
    /// creating resolution, which always finds one.
    #[inline]
    fn resolve(&self, window: u64) -> *const Slot {
        match self.table(window, true) {
            Some(table) => table,
            None => unreachable!("a creating resolution always finds a table"),
        }
    }

    /// The directory entry window `window` probes first: the window modulo the directory,
    /// so neighbouring windows take neighbouring entries and a lookup costs no multiply.
    #[inline]
    fn home(&self, window: u64) -> usize {
        window as usize & self.dir_mask
    }

    /// [`table`](Self::table) past the home entry: probe, and for a creating resolution
    /// take the first free entry.
    #[cold]
    fn table_slow(&self, window: u64, create: bool) -> Option<*const Slot> {
        let n = self.dir_len;
        let key = window + 1;
        let home = self.home(window);
        for i in 0..n {
            let entry = (home + i) & self.dir_mask;
            // SeqCst: read after a checker's handshake fence, it sees every key a stripe
            // holder whose fence came first set or read before its fence (module docs);
            // its Acquire half pairs with the key CAS below, which follows the table's
            // installation.
            let found = self.dir[entry].key.load(Ordering::SeqCst);
            if found == key {
                return Some(self.dir[entry].table());
            }
            if found != 0 {
                continue;
            }
            if !create {
                return None;
            }
            let table = self.install_table(entry);
            // SeqCst: part of the stripe holder's stores before its handshake fence (module
            // docs); its Release half publishes the table installed above to whoever reads
            // the key.
            match self.dir[entry].key.compare_exchange(0, key, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(table),
                Err(other) if other == key => return Some(table),
                Err(_) => {}
            }
        }
        Some(self.overflow.as_ptr())
    }

    /// The slots of a table pointer from [`table`](Self::table).
    #[inline]
    fn slots_of(&self, table: *const Slot) -> &[Slot] {
        // SAFETY: `table` is the overflow table or a window table: `self.len()` slots that
        // live until the lock drops (window tables are freed in `Drop for Stripes`).
        unsafe { core::slice::from_raw_parts(table, self.len()) }
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
    fn slot_at(&self, table: *const Slot, stripe: u64) -> &Slot {
        // SAFETY: as in `slots_of`; the index is below `self.len()` (a power of two: tables
        // exist only when it is not 0).
        unsafe { &*table.add(stripe as usize & self.slot_mask) }
    }

    /// Makes sure the table of directory entry `entry` exists and returns it.
    #[cold]
    fn install_table(&self, entry: usize) -> *const Slot {
        let entry = &self.dir[entry];
        // Acquire: as in `Entry::table`.
        if entry.table.load(Ordering::Acquire).is_null() {
            let fresh = Box::into_raw(new_table(self.len())).cast::<Slot>();
            // AcqRel: Release publishes the zeroed table to the key's readers; Acquire reads
            // a competitor's table on failure.
            if entry
                .table
                .compare_exchange(core::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // SAFETY: `fresh` is `Box::into_raw(new_table(self.len()))`, ours, never
                // published.
                unsafe { free_table(fresh, self.len()) };
            }
        }
        entry.table()
    }

    /// The slot of the one stripe `range` lies in (its window resolved, creating the
    /// window's table if needed), and that stripe's tag, or `None` if it spans stripes (or
    /// the fast path is off).
    #[inline]
    pub(crate) fn slot_of(&self, range: &Range<u64>) -> Option<(&Slot, u32)> {
        let (first, last) = self.stripes(range);
        if first != last || self.overflow.is_empty() {
            return None;
        }
        let window = self.window(first);
        // A creating `table` is never `None`; `?` says so for free, where `resolve`'s
        // unreachable arm costs the fast path a branch.
        let table = self.table(window, true)?;
        Some((self.slot_at(table, first), window_tag(window)))
    }

    /// Claims `slot` for `node` (of a stripe whose tag is `tag`) if it is free.
    #[inline]
    pub(crate) fn claim(slot: &Slot, node: NonNull<Node>, tag: u32) -> bool {
        // Relaxed pre-check: a taken slot costs no RMW. SeqCst CAS: the stripe holder's
        // store in the handshake (claim, fence, read the counts, the list and the reader
        // table); pairs with the SeqCst slot loads of list writers and readers in
        // `overlapping`. Its Acquire half reads the null of the previous holder's Release
        // `clear`.
        let claimed = slot.node.load(Ordering::Relaxed).is_null()
            && slot
                .node
                .compare_exchange(
                    core::ptr::null_mut(),
                    node.as_ptr(),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                )
                .is_ok();
        if claimed {
            // Release: a checker that reads this tag (Acquire) after reading an earlier
            // holder's node sees that holder's critical section (its clear happened before
            // our claim); pairs with the load in `check`.
            slot.tag.store(tag, Ordering::Release);
        }
        claimed
    }

    /// Frees a claimed slot (release or retraction).
    #[inline]
    pub(crate) fn clear(slot: &Slot) {
        // Relaxed: ordered before the clear below by its Release; a checker that reads the
        // next holder's node reads this or a later tag (see `Slot::tag`).
        slot.tag.store(UNKNOWN, Ordering::Relaxed);
        // Release: the holder's critical section happens before whoever reads the cleared
        // slot (the next claim's CAS, or a SeqCst load in `overlapping`).
        slot.node.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// Whether a list node may overlap the stripe of `slot` (a stripe holder's check, after
    /// its claim and `handshake_fence`).
    #[inline]
    pub(crate) fn maybe_listed(&self, slot: &Slot) -> bool {
        // SeqCst: the stripe holder's handshake loads; pairs with the SeqCst increments in
        // `count_list`, which precede the writer's link and fence. Acquire: a zero written
        // by `uncount_list` after a writer's release publishes its critical section.
        slot.listed.load(Ordering::SeqCst) != 0 || self.wide.load(Ordering::SeqCst) != 0
    }

    /// Counts a list writer of `range` (before it links its node).
    pub(crate) fn count_list(&self, range: &Range<u64>) {
        self.each_count(range, |count| {
            // SeqCst: the list writer's handshake store, before its link; pairs with the
            // SeqCst loads of `maybe_listed`.
            count.fetch_add(1, Ordering::SeqCst);
        });
    }

    /// Uncounts a list writer of `range` (after its node is unlinked, or when it gives up
    /// before linking).
    pub(crate) fn uncount_list(&self, range: &Range<u64>) {
        self.each_count(range, |count| {
            // Release: a stripe holder that reads the count this leaves (Acquire half of
            // its SeqCst load) sees the writer's critical section.
            count.fetch_sub(1, Ordering::Release);
        });
    }

    /// Applies `f` to the counts of a list range: the `listed` count of each stripe's slot
    /// (windows resolved, creating their tables: a window resolves the same way for the
    /// count and the uncount), or the one `wide` count.
    #[inline]
    fn each_count(&self, range: &Range<u64>, f: impl Fn(&AtomicU32)) {
        if self.overflow.is_empty() {
            return;
        }
        let (first, last) = self.stripes(range);
        if last - first >= NARROW {
            f(&self.wide);
        } else {
            for s in first..=last {
                f(&self.slot_at(self.resolve(self.window(s)), s).listed);
            }
        }
    }

    /// A stripe holder overlapping `range`, if any (list writers and readers, after their
    /// own handshake store).
    pub(crate) fn overlapping(&self, range: &Range<u64>, _guard: &Guard<'_>) -> Conflict {
        if self.overflow.is_empty() {
            return Conflict::None;
        }
        handshake_fence();
        let (first, last) = self.stripes(range);
        let (first_window, last_window) = (self.window(first), self.window(last));
        let found = if last_window - first_window >= 2 {
            // The range covers at least one whole window: check the tables that exist
            // instead of looking up every window, every holder a candidate.
            self.wide_check(range, first_window, last_window)
        } else {
            (first_window..=last_window).find_map(|w| {
                let table = self.table(w, false)?; // a lookup: `None` is "no table yet"
                let (lo, hi) = (first.max(w << self.slot_bits), last.min(self.last_stripe(w)));
                (lo..=hi)
                    .map(|s| Self::check(self.slot_at(table, s), Some(self.tag(s)), range))
                    .find(is_held)
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
    fn wide_check(&self, range: &Range<u64>, first: u64, last: u64) -> Option<Conflict> {
        let listed = self.dir[..self.dir_len].iter().filter_map(|entry| {
            // SeqCst: as in `table_slow`.
            let key = entry.key.load(Ordering::SeqCst);
            (key != 0 && (first..=last).contains(&(key - 1))).then(|| self.slots_of(entry.table()))
        });
        core::iter::once(&self.overflow[..])
            .chain(listed)
            .flat_map(|table| table.iter())
            .map(|s| Self::check(s, None, range))
            .find(is_held)
    }

    /// The holder of `slot` if it overlaps `range`; `tag`, if given, is the tag of the one
    /// stripe of this slot that `range` touches.
    #[inline]
    fn check(slot: &Slot, tag: Option<u32>, range: &Range<u64>) -> Conflict {
        // SeqCst: the list writer's or reader's handshake load; pairs with the SeqCst claim.
        let node = slot.node.load(Ordering::SeqCst);
        if node.is_null() {
            return Conflict::None;
        }
        if let Some(tag) = tag {
            // Acquire: pairs with the Release tag store of a later holder, which claimed
            // after this node's holder left (see `Slot::tag`).
            let holder = slot.tag.load(Ordering::Acquire);
            if holder != UNKNOWN && holder != tag {
                // Another stripe's holder, or a later holder: this node's holder left.
                return Conflict::None;
            }
        }
        // SAFETY: a node read from a slot is retired only after the slot is cleared, and
        // reused only after every guard of that time (the caller's included) is dropped.
        let node = unsafe { &*node };
        if !overlaps(&node.range(), range) {
            return Conflict::None;
        }
        match node.ticket() {
            Some(ticket) => Conflict::Held(ticket),
            None => Conflict::None,
        }
    }

    /// Takes every node still in a slot (only when the lock drops: no concurrent user).
    pub(crate) fn drain(&mut self) -> Vec<NonNull<Node>> {
        let windows = self.window_tables().map(|t| self.slots_of(t));
        core::iter::once(&self.overflow[..])
            .chain(windows)
            .flat_map(|table| table.iter())
            // Relaxed: `&mut self`, no concurrent user.
            .filter_map(|s| NonNull::new(s.node.swap(core::ptr::null_mut(), Ordering::Relaxed)))
            .collect()
    }
}

impl Drop for Stripes {
    fn drop(&mut self) {
        let len = self.len();
        for table in self.window_tables() {
            // SAFETY: `&mut self`: nobody uses the table any more; each is freed once, here.
            unsafe { free_table(table, len) };
        }
    }
}

/// The tag of window `window` (see [`Slot::tag`](Slot)): its number, in 31 bits.
#[inline]
fn window_tag(window: u64) -> u32 {
    (window & 0x7fff_ffff) as u32
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
            node: AtomicPtr::new(core::ptr::null_mut()),
            listed: AtomicU32::new(0),
            tag: AtomicU32::new(UNKNOWN),
        })
        .collect()
}

fn is_held(c: &Conflict) -> bool {
    matches!(c, Conflict::Held(_))
}
