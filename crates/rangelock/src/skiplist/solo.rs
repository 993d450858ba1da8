//! Built on first need: the lock's *state word*, which holds either the one *solo* hold of a
//! lock that has never had two holds at once, or the pointer to its core (list, stripe
//! tables, reader table, intents, epoch and node pools).
//!
//! A lock costs its options and three words until two holds overlap in time (the same
//! thread's included). Until then every acquisition is a solo hold: the holder claims the
//! state word with a CAS (`FREE → CLAIMING`), writes its range into two words beside it,
//! and marks the word held with a second CAS (`CLAIMING → HELD`); its release is a third
//! CAS (`HELD → FREE`, one generation later). Nothing is allocated, so a lock used by one
//! holder at a time (a file written by one process, a table one thread owns) stays at
//! `size_of::<RangeLock>()` bytes.
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
//! orders them all, and a `HELD` word with its generation occurs in it once. Before the
//! core is published the only hold there can be is the solo hold named by the word (a
//! claim is `CLAIMING`, which holds nothing). The publishing CAS replaces a word `w` that
//! its builder read, with nothing between the read and the CAS: if `w` is `HELD`, that
//! hold was on throughout, its range words were written before it became `HELD` (Release)
//! and are read after (Acquire) and not rewritten until it ends (after the CAS), so the
//! adopted range is exactly the hold's; and after the CAS no solo hold can begin (a claim
//! needs a `FREE` word) or end as solo (its CAS fails). So at the instant of publication the
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
use crate::primitive::{AtomicU64, AtomicUsize, Ordering};
use crate::range::Mode;

/// State word: a solo state (else the word is the core's address, which is even).
const SOLO: usize = 1;
/// State word, solo: the phase's bits.
const PHASE: usize = 0b110;
/// Phase: no solo hold.
const FREE: usize = 0b000;
/// Phase: a solo hold is being claimed (its range words are being written).
const CLAIMING: usize = 0b010;
/// Phase: an exclusive solo hold.
const HELD_EXCLUSIVE: usize = 0b100;
/// Phase: a shared solo hold.
const HELD_SHARED: usize = 0b110;
/// State word, solo: one generation (bits 3 and up); every solo release adds one.
const GENERATION: usize = 0b1000;

// The core's address leaves the `SOLO` bit clear.
const _: () = assert!(align_of::<Core>() > SOLO);

/// The state word of one lock and the range of its solo hold (module docs).
pub(super) struct State {
    word: AtomicUsize,
    /// The solo hold's range: written by its claimer while `CLAIMING`.
    start: AtomicU64,
    end: AtomicU64,
}

/// What a solo release or downgrade found instead of its `HELD` word: the core, which
/// adopted the hold.
pub(super) struct Adopted<'a>(pub(super) &'a Core);

impl State {
    /// A lock that has never been used: no hold, no core.
    pub(super) fn new() -> Self {
        State {
            word: AtomicUsize::new(SOLO | FREE),
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
    pub(super) fn claim(&self, range: &Range<u64>, mode: Mode) -> Option<usize> {
        // Relaxed: only the CAS's expected value; the CAS reads the latest.
        let free = self.word.load(Ordering::Relaxed);
        if free & (SOLO | PHASE) != SOLO | FREE {
            return None;
        }
        let claiming = free | CLAIMING;
        // Acquire: reads the Release of the previous solo release (or of nothing), so its
        // holder's critical section happens before ours.
        if self.word.compare_exchange(free, claiming, Ordering::Acquire, Ordering::Relaxed).is_err()
        {
            return None;
        }
        // Relaxed: published by the Release CAS below.
        self.start.store(range.start, Ordering::Relaxed);
        self.end.store(range.end, Ordering::Relaxed);
        let held = free
            | match mode {
                Mode::Exclusive => HELD_EXCLUSIVE,
                Mode::Shared => HELD_SHARED,
            };
        // Release: the range words, to a builder that reads `held` (Acquire) and adopts.
        // Fails only if a builder published a core over our claim (adopting nothing).
        self.word
            .compare_exchange(claiming, held, Ordering::Release, Ordering::Relaxed)
            .is_ok()
            .then_some(held)
    }

    /// Ends the solo hold `held` (from [`claim`](Self::claim)), or says which core adopted
    /// it (then the caller releases the adopted token).
    #[inline]
    pub(super) fn release(&self, held: usize) -> Result<(), Adopted<'_>> {
        let free = ((held & !(SOLO | PHASE)).wrapping_add(GENERATION)) | SOLO | FREE;
        // Release: our critical section, to the next claim or builder. Acquire on failure:
        // the word is then the core (only a builder replaces a `HELD` word), whose
        // publication we must see.
        match self.word.compare_exchange(held, free, Ordering::Release, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(now) => Err(Adopted(core_of(now).expect("only a core replaces a held word"))),
        }
    }

    /// Makes the exclusive solo hold `held` a shared one: its new token, or the core that
    /// adopted it.
    pub(super) fn downgrade(&self, held: usize) -> Result<usize, Adopted<'_>> {
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
                // Relaxed: made visible by the Acquire load (or failed CAS) that read
                // `word`, whose claimer wrote them before its Release CAS.
                let range = self.start.load(Ordering::Relaxed)..self.end.load(Ordering::Relaxed);
                if range.start >= range.end {
                    // Torn by a later claim: `word` is stale, so the CAS below would fail.
                    // An RMW reads the latest word (a load might return `word` again).
                    // Acquire: as in the first load.
                    word = self.word.fetch_or(0, Ordering::Acquire);
                    continue;
                }
                ours.adopt(&range, mode);
            }
            let address = core::ptr::from_ref::<Core>(ours).expose_provenance();
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
        self.word.store(SOLO | FREE, Ordering::Relaxed);
        core
    }
}

/// The core a state word names, if it names one.
#[inline]
fn core_of<'a>(word: usize) -> Option<&'a Core> {
    if word & SOLO != 0 {
        return None;
    }
    // SAFETY: a word without `SOLO` is the address of a `Box<Core>` published by
    // `State::core` and freed only when the lock drops, which outlives every borrow of it.
    Some(unsafe { &*core::ptr::with_exposed_provenance::<Core>(word) })
}
