//! Built on first need: the lock's *state word*, which holds either the one *solo* hold of a
//! lock that has never had two holds at once, or the pointer to its core (list, stripe
//! tables, reader table, intents, epoch and node pools).
//!
//! A lock costs its options and four words until two holds overlap in time (the same
//! thread's included). Until then every acquisition is a solo hold, and nothing is
//! allocated, so a lock used by one holder at a time (a file written by one process, a
//! table one thread owns) stays at `size_of::<RangeLock>()` bytes:
//!
//! - a *compact* range (starting below 2^40, at most 2^20 units long) is written into the
//!   word itself: one CAS `FREE → HELD(range, mode)` takes it, one CAS back to `FREE`
//!   releases it;
//! - any other range claims the word (`FREE → CLAIMING`), takes the next *generation*
//!   (a counter only claimers write, while they own the word), writes its range into two
//!   words beside it, and marks the word held with a second CAS (`CLAIMING →
//!   HELD(generation, mode)`); its release is a third CAS (`HELD → FREE`).
//!
//! The first acquisition that finds the word not `FREE` (another hold is on, or being
//! claimed) *builds the core* instead (`core`):
//!
//! 1. it builds a core, private to it;
//! 2. it reads the state word; if a solo hold is `HELD`, it reads the hold's range and
//!    *adopts* it: it acquires that range, in the hold's mode, on its private core (which
//!    holds nothing else, so the acquisition succeeds at once on whatever path the range
//!    takes: stripe slot, claim, coarse claim, list node or reader announcement) and
//!    records the token in the core (`Core::adopted`);
//! 3. it replaces the word it read with the core's address by one CAS. If the CAS fails
//!    (the solo hold ended, another began, a claim finished, or another thread published a
//!    core), it gives the adopted hold back and goes to 2 with the word the CAS read; if
//!    that word is a core, it frees its own and uses that one.
//!
//! A solo holder whose second CAS (`CLAIMING → HELD`) fails finds a core in the word: the
//! builder read `CLAIMING` and adopted nothing, so the claim never held, and it acquires
//! on the core. A solo holder whose release CAS fails finds a core too: the builder read
//! its `HELD` word and adopted its range, and the release releases the adopted token.
//!
//! # Why no hold is missed
//!
//! Every change of the state word is an RMW on the one word, so its modification order
//! orders them all. Before the core is published the only hold there can be is the solo
//! hold named by the word (a claim is `CLAIMING`, which holds nothing). The publishing CAS
//! replaces a word `w` that its builder read. If `w` is a compact `HELD`, the word itself
//! is the range and mode the builder adopted: whichever hold has that word when the CAS
//! lands (the one the builder saw, or a later one of exactly the same range and mode) is
//! held by the core from then on, and its release finds the core. If `w` is a `HELD` with a
//! generation, that word occurs once in the modification order (generations only grow), so
//! nothing came between the read and the CAS: the hold was on throughout, its range words
//! were written before it became `HELD` (Release) and are read after (Acquire) and not
//! rewritten until it ends (after the CAS), so the adopted range is exactly the hold's.
//! After the CAS no solo hold can begin (a claim needs a `FREE` word) or end as solo (its
//! CAS fails). So at the instant of publication the
//! core already holds every hold there is, acquired on the core before any other party
//! could reach it, and every later party reaches the core through an Acquire load of the
//! word that read the publishing CAS (Release): to every party the core looks as if the
//! adopted hold had been its first acquisition. Nothing else of the core's protocol
//! changes: a list writer never runs before the stripe tables exist and no stripe holder
//! runs without them, because both run only on a published core, which has all its tables.
//!
//! Happens-before: a solo release is a Release RMW, and the next solo claim (Acquire) or
//! the publishing CAS (AcqRel) reads it or a later value of the word; a core party's
//! Acquire load reads the publishing CAS; an adopted hold is released through the core.
//!
//! Progress: a claim and a release never wait. The builder waits for nobody either; its
//! CAS fails only when the word changed since it read it, which each time means a solo
//! hold ended or another thread's step completed.

use core::ops::Range;

use super::Core;
use crate::primitive::{AtomicU64, Ordering};
use crate::range::Mode;

/// State word: a solo state (else the word is the core's address, which is even).
const SOLO: u64 = 1;
/// State word, solo: the phase's bits.
const PHASE: u64 = 0b110;
/// The word with no solo hold (and no core).
const FREE: u64 = SOLO;
/// Phase: a solo hold is being claimed (its range words are being written).
const CLAIMING: u64 = 0b010;
/// Phase: an exclusive solo hold.
const HELD_EXCLUSIVE: u64 = 0b100;
/// Phase: a shared solo hold.
const HELD_SHARED: u64 = 0b110;
/// State word, held: the range is in the word (bits 4..44 its start, 44..64 its length
/// minus one); else bits 4.. are the hold's generation and the range is in the range words.
const COMPACT: u64 = 0b1000;
/// Where a compact word's start, or a generation, begins.
const START_SHIFT: u32 = 4;
/// Where a compact word's length minus one begins.
const LEN_SHIFT: u32 = 44;

// The core's address leaves the `SOLO` bit clear, and fits the word.
const _: () = assert!(align_of::<Core>() > SOLO as usize && size_of::<usize>() <= 8);

/// The state word of one lock and the range of its solo hold (module docs).
pub(super) struct State {
    word: AtomicU64,
    /// The last generation taken: written by claimers of non-compact ranges while
    /// `CLAIMING`.
    generation: AtomicU64,
    /// The solo hold's range when it is not compact: written by its claimer while
    /// `CLAIMING`.
    start: AtomicU64,
    end: AtomicU64,
}

/// What a solo release or downgrade found instead of its `HELD` word: the core, which
/// adopted the hold.
pub(super) struct Adopted<'a>(pub(super) &'a Core);

impl State {
    /// A lock that has never been used: no hold, no core.
    #[cfg(not(loom))]
    pub(super) const fn new() -> Self {
        State {
            word: AtomicU64::new(FREE),
            generation: AtomicU64::new(0),
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
        }
    }

    /// The state of a lock nobody has used (loom's atomics are not `const`).
    #[cfg(loom)]
    pub(super) fn new() -> Self {
        State {
            word: AtomicU64::new(FREE),
            generation: AtomicU64::new(0),
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
        }
    }

    /// The core, if it has been built.
    #[inline]
    pub(super) fn built(&self) -> Option<&Core> {
        // Acquire: pairs with the Release of the publishing CAS in `publish`: the core's
        // construction and adoption happen before our use of it.
        core_of(self.word.load(Ordering::Acquire))
    }

    /// Claims a solo hold of `range` in `mode`, if the lock has no core and no hold: its
    /// token (the `HELD` word), or `None` (then the caller builds or uses the core).
    #[inline]
    pub(super) fn claim(&self, range: &Range<u64>, mode: Mode) -> Option<u64> {
        let phase = match mode {
            Mode::Exclusive => HELD_EXCLUSIVE,
            Mode::Shared => HELD_SHARED,
        };
        if let Some(packed) = compact(range) {
            let held = SOLO | phase | COMPACT | packed;
            // Acquire: reads the Release of the previous solo release (or of nothing), so
            // its holder's critical section happens before ours.
            let claimed =
                self.word.compare_exchange(FREE, held, Ordering::Acquire, Ordering::Relaxed);
            return claimed.is_ok().then_some(held);
        }
        self.claim_slow(range, phase)
    }

    /// [`claim`](Self::claim) of a range that is not compact: through `CLAIMING`.
    #[cold]
    #[inline(never)]
    fn claim_slow(&self, range: &Range<u64>, phase: u64) -> Option<u64> {
        // Acquire: as in `claim`.
        if self
            .word
            .compare_exchange(FREE, CLAIMING | SOLO, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // Relaxed (all four): ours while `CLAIMING`; the previous claimer's writes happen
        // before (its release, our Acquire); published by the Release CAS below.
        let generation = self.generation.load(Ordering::Relaxed).wrapping_add(1);
        self.generation.store(generation, Ordering::Relaxed);
        self.start.store(range.start, Ordering::Relaxed);
        self.end.store(range.end, Ordering::Relaxed);
        let held = SOLO | phase | (generation << START_SHIFT);
        // Release: the range words, to a builder that reads `held` (Acquire) and adopts.
        // Fails only if a builder published a core over our claim (adopting nothing).
        self.word
            .compare_exchange(CLAIMING | SOLO, held, Ordering::Release, Ordering::Relaxed)
            .is_ok()
            .then_some(held)
    }

    /// Ends the solo hold `held` (from [`claim`](Self::claim)), or says which core adopted
    /// it (then the caller releases the adopted token).
    #[inline]
    pub(super) fn release(&self, held: u64) -> Result<(), Adopted<'_>> {
        // Release: our critical section, to the next claim or builder. Acquire on failure:
        // the word is then the core (only a builder replaces a `HELD` word), whose
        // publication we must see.
        match self.word.compare_exchange(held, FREE, Ordering::Release, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(now) => Err(Adopted(core_of(now).expect("only a core replaces a held word"))),
        }
    }

    /// Makes the exclusive solo hold `held` a shared one: its new token, or the core that
    /// adopted it.
    pub(super) fn downgrade(&self, held: u64) -> Result<u64, Adopted<'_>> {
        debug_assert_eq!(held & PHASE, HELD_EXCLUSIVE);
        let shared = held | HELD_SHARED;
        // Release: as in `release` (a builder that adopts us reads the new mode). Acquire on
        // failure: as in `release`.
        match self.word.compare_exchange(held, shared, Ordering::Release, Ordering::Acquire) {
            Ok(_) => Ok(shared),
            Err(now) => Err(Adopted(core_of(now).expect("only a core replaces a held word"))),
        }
    }

    /// The core: the published one, or one built with `build`, adopting the solo hold if
    /// there is one, and published (module docs). Never waits.
    #[cold]
    #[inline(never)]
    pub(super) fn core(&self, build: impl FnOnce() -> Core) -> &Core {
        // Acquire: as in `built`, and to read a `HELD` word's range words.
        let mut word = self.word.load(Ordering::Acquire);
        let mut build = Some(build);
        let mut fresh: Option<Box<Core>> = None;
        loop {
            if let Some(core) = core_of(word) {
                if let Some(mut ours) = fresh {
                    ours.give_back_adopted();
                }
                return core;
            }
            let ours = fresh.get_or_insert_with(|| Box::new(build.take().expect("built once")()));
            ours.give_back_adopted();
            let mode = match word & PHASE {
                HELD_EXCLUSIVE => Some(Mode::Exclusive),
                HELD_SHARED => Some(Mode::Shared),
                _ => None,
            };
            if let Some(mode) = mode {
                let range = match word & COMPACT {
                    0 => {
                        // Relaxed: made visible by the Acquire load (or failed CAS) that
                        // read `word`, whose claimer wrote them before its Release CAS.
                        self.start.load(Ordering::Relaxed)..self.end.load(Ordering::Relaxed)
                    }
                    _ => uncompact(word),
                };
                if range.start >= range.end {
                    // Torn by a later claim: `word` is stale, so the CAS below would fail.
                    // An RMW reads the latest word (a load might return `word` again).
                    // Acquire: as in the first load.
                    word = self.word.fetch_or(0, Ordering::Acquire);
                    continue;
                }
                ours.adopt(&range, mode);
            }
            let address = core::ptr::from_ref::<Core>(ours).expose_provenance() as u64;
            // AcqRel: Release publishes the core (built, with its adopted hold) to every
            // Acquire load of the word; Acquire reads the solo release we replace. On
            // failure, Acquire as in the first load.
            match self.word.compare_exchange(word, address, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    let published = Box::into_raw(fresh.take().expect("built above"));
                    // SAFETY: just published; freed only when the lock drops.
                    return unsafe { &*published };
                }
                Err(now) => word = now,
            }
        }
    }

    /// The published core's address, for the lock's drop (`&mut` access: no concurrent
    /// user).
    pub(super) fn take(&mut self) -> Option<Box<Core>> {
        // Relaxed: no concurrent user.
        let word = self.word.load(Ordering::Relaxed);
        // SAFETY: a core word is a `Box<Core>` published by `core` (`into_raw`), taken
        // once: `&mut self`, and the word is reset.
        let core = core_of(word)
            .map(|core| unsafe { Box::from_raw(core::ptr::from_ref(core).cast_mut()) });
        self.word.store(FREE, Ordering::Relaxed);
        core
    }
}

/// The core a state word names, if it names one.
#[inline]
fn core_of<'a>(word: u64) -> Option<&'a Core> {
    if word & SOLO != 0 {
        return None;
    }
    // SAFETY: a word without `SOLO` is the address of a `Box<Core>` published by
    // `State::core` (an address fits the word) and freed only when the lock drops, which
    // outlives every borrow of it.
    Some(unsafe { &*core::ptr::with_exposed_provenance::<Core>(word as usize) })
}

/// `range` packed into a compact held word's bits, if it starts below 2^40 and is at most
/// 2^20 units long.
#[inline]
fn compact(range: &Range<u64>) -> Option<u64> {
    let len = range.end - range.start - 1;
    ((range.start >> (LEN_SHIFT - START_SHIFT)) | (len >> (64 - LEN_SHIFT)) == 0)
        .then_some((range.start << START_SHIFT) | (len << LEN_SHIFT))
}

/// The range of a compact held word.
fn uncompact(word: u64) -> Range<u64> {
    let start = (word >> START_SHIFT) & ((1 << (LEN_SHIFT - START_SHIFT)) - 1);
    start..start + (word >> LEN_SHIFT) + 1
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn compact_words_keep_their_range_exactly_and_only_short_low_ranges_fit() {
        let max_start = (1 << 40) - 1;
        for range in [0..1, 0..1 << 20, max_start..max_start + 1, max_start..max_start + (1 << 20)]
        {
            let packed = compact(&range).unwrap_or_else(|| panic!("{range:?} fits"));
            assert_eq!(packed & 0b1111, 0, "{range:?}");
            for phase in [HELD_EXCLUSIVE, HELD_SHARED] {
                assert_eq!(uncompact(SOLO | phase | COMPACT | packed), range);
            }
        }
        for range in [1 << 40..(1 << 40) + 1, 0..(1 << 20) + 1, 0..u64::MAX, u64::MAX - 1..u64::MAX]
        {
            assert_eq!(compact(&range), None, "{range:?}");
        }
    }
}
