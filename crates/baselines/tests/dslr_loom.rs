//! Loom models of the DSLR ticket protocol (`peers::dslr_shm`): the bakery exclusion, the
//! counter reset with bogus tickets, and the descending reset order across segments.
//!
//! The models run the real `DslrClient` over loom atomics through the same
//! `AtomicWords` implementation of `TicketWords` (and so the same memory orderings) that
//! the shared-memory peer uses. Each holder touches a loom `UnsafeCell` per segment it
//! holds, written by exclusive holders and read by shared ones: loom reports any two
//! accesses that are not ordered by happens-before, so a broken exclusion or a too-weak
//! ordering fails the model. `count_max` is 2, the smallest the protocol allows, so every
//! second ticket of a word is the epoch's last and a third one is bogus.
//!
//! They run in the ordinary `cargo test` (loom needs no `--cfg loom` here: the protocol
//! touches atomics only through the trait), with a preemption bound of 2; all four take
//! well under a second. Each can fail: with the exclusive entry test reduced to the
//! writers' bakery, `loom_dslr_reader_and_writer_exclude_across_a_reset` reports the data
//! race; with the waiting load `Relaxed` instead of `Acquire`, both one-segment models
//! do; with the resets done in ascending order, `loom_dslr_readers_reset_highest_first`
//! fails on the endless wait.

use std::ops::Range;

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU64;
use loom::sync::Arc;
use rangelock::Mode;
use rangelock_baselines::peers::dslr_shm::{DslrClient, DslrLayout};
use std::sync::atomic::Ordering;

mod loom_words;

use loom_words::{LoomWords, Shared, Word};

fn layout(segments: u64) -> DslrLayout {
    DslrLayout { units: segments * 4, segment_units: 4, count_max: 2 }
}

/// Locks `range` in `mode` `rounds` times; each time touches the data of every held
/// segment (a write when exclusive, a read when shared).
fn client(shared: &Arc<Shared>, layout: DslrLayout, range: Range<u64>, mode: Mode, rounds: u32) {
    let mut dslr = DslrClient::new(LoomWords(Arc::clone(shared)), layout);
    for _ in 0..rounds {
        let held = dslr.lock(range.clone(), mode).unwrap();
        for seg in layout.segments_of(&range) {
            match mode {
                // SAFETY: `seg` is held exclusively; loom checks that claim.
                Mode::Exclusive => shared.data[seg].with_mut(|d| unsafe { *d += 1 }),
                Mode::Shared => {
                    // SAFETY: `seg` is held shared: no exclusive holder writes it now.
                    shared.data[seg].with(|d| unsafe { d.read() });
                }
            }
        }
        dslr.unlock(held).unwrap();
    }
}

/// Runs one client per `(range, mode, rounds)` over `segments` segments, then checks that
/// every word is back at a valid state and the exclusive writes all happened.
fn model(segments: u64, clients: &'static [(Range<u64>, Mode, u32)]) {
    model_from(&[], segments, clients);
}

/// [`model`] with the first words starting at `initial` instead of 0 (an epoch some
/// earlier clients already used).
fn model_from(initial: &'static [u64], segments: u64, clients: &'static [(Range<u64>, Mode, u32)]) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let layout = layout(segments);
        let n = layout.segments();
        let shared = Arc::new(Shared {
            words: (0..n)
                .map(|i| Word(AtomicU64::new(initial.get(i).copied().unwrap_or(0))))
                .collect(),
            data: (0..n).map(|_| UnsafeCell::new(0)).collect(),
        });
        let threads: Vec<_> = clients[1..]
            .iter()
            .map(|(range, mode, rounds)| {
                let shared = Arc::clone(&shared);
                loom::thread::spawn(move || client(&shared, layout, range.clone(), *mode, *rounds))
            })
            .collect();
        let (range, mode, rounds) = &clients[0];
        client(&shared, layout, range.clone(), *mode, *rounds);
        for t in threads {
            t.join().unwrap();
        }
        for seg in 0..n {
            let writes: u32 = clients
                .iter()
                .filter(|(r, m, _)| *m == Mode::Exclusive && layout.segments_of(r).contains(&seg))
                .map(|(_, _, rounds)| rounds)
                .sum();
            // SAFETY: every client joined.
            assert_eq!(shared.data[seg].with(|d| unsafe { *d }), u64::from(writes));
            let word = shared.words[seg].0.load(Ordering::Relaxed);
            // Every ticket served, every bogus increment undone: (n, n, n, n) in each bakery,
            // or 0 after a reset.
            let (n_s, n_x, max_s, max_x) =
                (word & 0xFFFF, word >> 16 & 0xFFFF, word >> 32 & 0xFFFF, word >> 48);
            assert_eq!((n_s, n_x), (max_s, max_x), "word {word:#x} of segment {seg}");
            assert!(max_s < 2 && max_x < 2, "segment {seg} was not reset: {word:#x}");
        }
    });
}

#[test]
fn loom_dslr_writers_exclude_each_other_across_a_reset() {
    // Three tickets on one word: the second is the epoch's last, the third waits for its
    // holder's reset (or is bogus and backs off).
    model(1, &[(0..4, Mode::Exclusive, 2), (0..4, Mode::Exclusive, 1)]);
}

#[test]
fn loom_dslr_reader_and_writer_exclude_across_a_reset() {
    model(1, &[(0..4, Mode::Shared, 2), (0..4, Mode::Exclusive, 1)]);
}

#[test]
fn loom_dslr_writers_of_two_segment_ranges_exclude_across_resets() {
    // Both clients lock both segments, ticket after ticket in ascending order, so one of
    // them takes the last ticket of both words and resets both after its unlock.
    model(2, &[(0..8, Mode::Exclusive, 1), (2..6, Mode::Exclusive, 2)]);
}

#[test]
fn loom_dslr_readers_reset_highest_first() {
    // Segment 1 starts with one reader ticket taken and served, so the next reader ticket
    // on each word is the epoch's last. Two readers share segment 0; the one that takes the
    // last ticket of both words may leave the other inside segment 0, holding a bogus
    // ticket on segment 1 and waiting for its reset. Resetting segment 0 first would wait
    // for that reader: a deadlock (loom reports the endless wait).
    const SERVED_ONE_READER: u64 = 1 | 1 << 32;
    model_from(&[0, SERVED_ONE_READER], 2, &[(0..8, Mode::Shared, 1), (0..8, Mode::Shared, 1)]);
}
