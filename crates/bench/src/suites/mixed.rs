//! `mixed`: ranges of every size at random places of a huge domain, a share of them
//! exclusive — the range lock as a general-purpose lock rather than W1's best case.
//!
//! Each operation locks one range of log-uniform length, 1 to 2^20 - 1 units (an octave
//! `2^b`, `b` uniform in `0..20`, then uniform within it), at a
//! uniformly random position of a 2^40-unit domain, exclusively with probability
//! `exclusive_pct` % ∈ {0, 20, 100} (shared otherwise), runs a small fixed critical section
//! and unlocks. The critical section writes (exclusive) or reads (shared) a 256-byte
//! (four cache lines) buffer of the thread's own: 2^40 units cannot be backed with memory,
//! so nothing shared is touched under the lock and the harness checks no exclusion here
//! (the lock tests do). Random ranges of this size rarely overlap, so the suite measures
//! the cost of acquiring and releasing arbitrary ranges, with occasional real conflicts.
//!
//! Variants: every in-process lock of the registry, except that `segments` (the registry's
//! configuration covers only 2^32 units; larger units would all clamp to its last segment)
//! is replaced by [`SEGMENTS_NAME`]: the same 16 MiB budget of 4-byte counters over 2^40
//! units, i.e. 2^22 segments of 2^18 units (256 Ki). A range locks every segment it
//! touches: up to 5 for the longest ranges. Beside `rangelock` runs [`CLAIM1_NAME`], the
//! same lock with claims of one stripe only (ranges over several stripes take the list).
//! Six ceilings bound them (without background holders): `unlocked`, the loop with no
//! lock; `rmw-floor` ([`RmwFloor`]), the loop with the one atomic RMW per acquisition that
//! no lock can do without, on a line of the thread's own — a floor under every lock's cost
//! (so a ratio over `segments` that the floor does not reach, no lock reaches on that
//! machine); `shared-floor` ([`SharedFloor`]), the same RMW on a slot of one table all
//! threads share, picked by the range's position — the floor of a lock whose threads meet
//! in a table, which pays the line transfers sharing costs; `claim-floor`
//! ([`ClaimFloor`]), the RMWs, stores and loads of `rangelock`'s stripe protocol with none
//! of its decisions — the floor of that protocol, so `rangelock` under it is the cost of
//! its code and `claim-floor` under `shared-floor` the cost of its protocol's lines;
//! `announce-floor` ([`AnnounceFloor`]), the same for writers with readers that announce on
//! a line of their own thread instead of joining stripe slots — the floor of a protocol
//! whose readers write no shared line; and [`UNSHARED_NAME`], each thread on a `rangelock`
//! of its own — the lock's cost without the cost of sharing one lock between cores, which
//! no shared lock can beat. (All six are sound here only because the critical sections
//! touch per-thread buffers.)
//!
//! Parameter `background`: `none`, or (full runs only) `reader+wide`: a background thread
//! holds one shared range of 1 Ki units and one exclusive range of 64 Mi units in the top
//! 2^27 units of the domain, which the measured ranges never touch (they lie in the rest).

use std::marker::PhantomData;

use rangelock::internals::{Lock, RawRangeLock, SkipList};
use rangelock::RangeLock;
use rangelock_baselines::Segments;

use super::common;
use crate::harness::{Case, Ceiling, Options, Suite, NO_LOCK};
use crate::variants::{Registered, VariantSet, VariantVisitor};
use crate::workload::loops::{self, Background, Mixed as Shape, BACKGROUND_UNITS};
use crate::workload::{AnnounceFloor, ClaimFloor, RangeTarget, RmwFloor, SharedFloor, Unshared};

/// Domain size in units: 2^40.
pub const DOMAIN: u64 = 1 << 40;
/// Ranges are shorter than `2^LEN_LOG2` units (1 Mi).
pub const LEN_LOG2: u32 = 20;
/// Where the measured ranges lie: `[0, SPAN)`; the background holders use the rest.
pub const SPAN: u64 = DOMAIN - BACKGROUND_UNITS;
/// The exclusive percentages of a full run.
pub const EXCLUSIVE_PCT: [u64; 3] = [0, 20, 100];
/// The exclusive percentages of a quick run.
pub const QUICK_EXCLUSIVE_PCT: [u64; 1] = [20];
/// Memory budget of the suite's `segments`: 16 MiB of counters, as the registry's.
pub const SEGMENTS_BUDGET_BYTES: u64 = 16 << 20;
/// Units per segment of the suite's `segments`: the domain over `budget / 4 bytes`
/// segments, 2^40 / 2^22 = 2^18 (256 Ki).
pub const SEGMENT_UNITS: u64 = DOMAIN / (SEGMENTS_BUDGET_BYTES / 4);
/// Report name of the suite's `segments` configuration.
pub const SEGMENTS_NAME: &str = "segments-256Ki";

/// Report name of `rangelock` with claims of one stripe only (`claim_stripes(1)`): ranges
/// over two stripes or more take the skip list (or the reader table), as before
/// multi-stripe claims.
pub const CLAIM1_NAME: &str = "rangelock-claim1";
/// The variant [`CLAIM1_NAME`] and [`UNSHARED_NAME`] are run beside.
const CLAIM1_OF: &str = "rangelock";

/// Report name of the unshared ceiling: each thread on a `rangelock` of its own, so the
/// lock's cost without what sharing one lock costs (lines both cores write).
pub const UNSHARED_NAME: &str = "rangelock-unshared";

/// The suite's ceilings: no lock, the one RMW every lock pays, that RMW on a table the
/// threads share, the memory traffic of `rangelock`'s protocol and of one whose readers
/// write no shared line, and a lock per thread.
const CEILINGS: [Ceiling; 6] = [
    NO_LOCK,
    Ceiling {
        name: RmwFloor::NAME,
        leaves_out: "no lock, one atomic RMW per acquisition on a line of the thread's own: the \
                     least any lock pays (Attiya et al. 2011)",
    },
    Ceiling {
        name: SharedFloor::NAME,
        leaves_out: "no lock, one atomic RMW per acquisition on the slot of the range's first \
                     stripe in one 32 KiB table all threads share: the least a lock whose \
                     threads meet in a table pays",
    },
    Ceiling {
        name: ClaimFloor::NAME,
        leaves_out: "no lock, the RMWs, stores and loads of rangelock's stripe protocol on its \
                     tables (slot by slot up to 8 stripes, 4 shared; else counts, coarse slots \
                     and a scan of the stripes' slots), with none of its decisions: the least \
                     that protocol pays",
    },
    Ceiling {
        name: AnnounceFloor::NAME,
        leaves_out: "no lock, claim-floor's traffic for writers plus a load of every reader's \
                     seat, and for readers a store on a line of their own thread and loads of \
                     their stripes' slots: the least a protocol whose readers write no shared \
                     line pays",
    },
    Ceiling { name: UNSHARED_NAME, leaves_out: "rangelock with a lock per thread (no sharing)" },
];

/// `segments` configured for this suite's domain: 2^22 segments of 256 Ki units (16 MiB).
pub fn segments() -> Lock<Segments> {
    Lock::from_raw(Segments::new(DOMAIN, SEGMENT_UNITS))
}

/// The background holders of a `reader+wide` case: the top [`BACKGROUND_UNITS`] units.
pub fn background() -> Background {
    Background::at(SPAN)
}

/// The `mixed` suite over the variants of `S`.
#[derive(Debug)]
pub struct Mixed<S: VariantSet = Registered>(PhantomData<S>);

impl<S: VariantSet> Default for Mixed<S> {
    fn default() -> Self {
        Mixed(PhantomData)
    }
}

impl<S: VariantSet> Suite for Mixed<S> {
    fn name(&self) -> &'static str {
        "mixed"
    }

    fn quantity(&self) -> String {
        "lock, access, unlock of ranges of mixed lengths per second".to_owned()
    }

    fn about(&self) -> &'static str {
        "one range of log-uniform length (1 unit to 1 Mi) at a uniform position of a 2^40-unit \
         domain, exclusive with probability exclusive_pct (else shared); critical section: \
         write (exclusive) or read (shared) 256 B of a per-thread buffer; segments replaced by \
         segments-256Ki (16 MiB of counters: 2^22 segments of 256 Ki units); \
         background=reader+wide (full runs) holds a shared 1 Ki-unit and an exclusive \
         64 Mi-unit range in the domain's top 2^27 units, untouched by the measured ranges"
    }

    fn baseline(&self) -> &'static str {
        "rangelock"
    }

    fn oversubscribe(&self) -> bool {
        true
    }

    fn ceilings(&self) -> &'static [Ceiling] {
        &CEILINGS
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let pcts: &'static [u64] = if opts.quick { &QUICK_EXCLUSIVE_PCT } else { &EXCLUSIVE_PCT };
        let mut backgrounds = vec![None];
        if !opts.quick {
            backgrounds.push(Some(background()));
        }
        let mut b = Builder { opts, pcts, backgrounds, cases: Vec::new() };
        S::locks(&mut b);
        S::ceiling(&mut b);
        b.cases
    }
}

struct Builder<'a> {
    opts: &'a Options,
    pcts: &'static [u64],
    backgrounds: Vec<Option<Background>>,
    cases: Vec<Case>,
}

impl VariantVisitor for Builder<'_> {
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: &dyn Fn() -> std::io::Result<T>) {
        if name == Segments::NAME {
            eprintln!(
                "mixed: running {SEGMENTS_NAME} instead of {name} (the registry's covers 2^32 \
                 units; this domain has 2^40)"
            );
            self.named_lock(SEGMENTS_NAME, segments);
            return;
        }
        if name == CLAIM1_OF {
            // The product lock without multi-stripe claims, beside it in the same run.
            self.named_lock(CLAIM1_NAME, || RangeLock::builder().claim_stripes(1).build());
            // The same lock, unshared: the bound sharing it leaves.
            self.visit(UNSHARED_NAME, &|| Ok(Unshared::new(|| Lock::from_raw(SkipList::new()))));
            // The one RMW a lock cannot do without: the bound for every lock here.
            self.visit(RmwFloor::NAME, &|| Ok(RmwFloor));
            // That RMW where threads meet: the bound for a lock that shares a table.
            self.visit(SharedFloor::NAME, &|| Ok(SharedFloor::new()));
            // Everything rangelock's protocol writes and reads, and nothing it decides.
            self.visit(ClaimFloor::NAME, &|| Ok(ClaimFloor::new()));
            // The same for writers, with readers that write no line another thread writes.
            self.visit(AnnounceFloor::NAME, &|| Ok(AnnounceFloor::new()));
        }
        let Some(target) = common::target("mixed", name, make) else { return };
        // A ceiling beside background holders would bound nothing (an unshared lock's
        // holders hold a lock of their own): ceilings run without them.
        let ceiling = CEILINGS.iter().any(|c| c.name == name);
        for background in self.backgrounds.iter().filter(|b| b.is_none() || !ceiling) {
            // The holders must leave the measured span free (a coarse lock would not).
            let measured = [SPAN - 1..SPAN, 0..1];
            if !common::background_fits("mixed", name, &*target, background.as_ref(), measured) {
                continue;
            }
            let bg_name = background.as_ref().map_or(Background::NONE, |_| Background::NAME);
            for &pct in self.pcts {
                let shape = Shape { span: SPAN, len_log2: LEN_LOG2, exclusive_pct: pct };
                for (threads, oversubscribed) in self.opts.threads_for(true) {
                    let (target, background) = (target.clone(), background.clone());
                    self.cases.push(Case {
                        variant: name.to_owned(),
                        threads,
                        params: common::params([
                            ("exclusive_pct", pct.into()),
                            ("background", bg_name.into()),
                            ("domain_units", DOMAIN.into()),
                            ("max_len_units", ((1u64 << LEN_LOG2) - 1).into()),
                        ]),
                        oversubscribed,
                        run: Box::new(move |d| {
                            loops::with_background(&*target, background.as_ref(), || {
                                loops::mixed(&*target, shape, threads, d)
                            })
                        }),
                    });
                }
            }
        }
    }
}
