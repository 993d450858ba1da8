//! Loom models of the `citron-like` protocol (`peers::citron_shm`): an internal node's
//! occupant against a descendant's leaf bits ("notify ancestors, wait for descendants"),
//! a shared leaf occupant against exclusive bits, two-leaf requests, and readers that
//! share a node.
//!
//! The models run the real `CitronClient` over loom atomics through the same
//! `AtomicWords` trait (and so the same code and memory orderings) the shared-memory peer
//! uses. The tree has 256 units: four leaves of 64 units under one root (9 words); a
//! range over three or more leaves locks the root, one over two leaves the bits of each.
//! Each holder touches a loom `UnsafeCell` per *probe* unit inside its range (the units
//! where the model's ranges overlap), writing when exclusive and reading when shared:
//! loom reports any two accesses not ordered by happens-before, so a broken exclusion or
//! a too-weak ordering fails the model. `loom_citron_without_ancestor_notify_races` runs the
//! broken protocol and must fail; with the waiting re-read `Relaxed` instead of `Acquire`,
//! the three models with a waiting occupant or registrant fail (tried by hand). Preemption bound 2; they run in the ordinary
//! `cargo test` (the protocol touches atomics only through the trait).

use std::ops::Range;
use std::sync::atomic::Ordering;

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU64;
use loom::sync::Arc;
use rangelock::Mode;
use rangelock_baselines::peers::citron_shm::{CitronClient, CitronLayout, Fault};

mod loom_words;

use loom_words::{LoomWords, Shared, Word};

const UNITS: u64 = 256;
/// The node words of that tree (four leaves and the root); the leaves' bitmaps follow.
const NODE_WORDS: usize = 5;

type Client = (Range<u64>, Mode, u32);

/// Locks `range` in `mode` `rounds` times; each time touches the probes inside it.
fn client(shared: Arc<Shared>, probes: &[u64], c: &Client, fault: Option<Fault>) {
    let (range, mode, rounds) = c;
    let mut citron = CitronClient::new(LoomWords(Arc::clone(&shared)), CitronLayout::new(UNITS));
    if let Some(fault) = fault {
        citron = citron.with_fault(fault);
    }
    for _ in 0..*rounds {
        let held = citron.lock(range.clone(), *mode);
        for (i, p) in probes.iter().enumerate() {
            if !range.contains(p) {
                continue;
            }
            match mode {
                // SAFETY: the probe is held exclusively; loom checks that claim.
                Mode::Exclusive => shared.data[i].with_mut(|d| unsafe { *d += 1 }),
                Mode::Shared => {
                    // SAFETY: the probe is held shared: no exclusive holder writes it now.
                    shared.data[i].with(|d| unsafe { d.read() });
                }
            }
        }
        citron.unlock(held);
    }
}

/// Runs one thread per client (the first on the model's main thread), then checks that
/// every exclusive write happened and every word is idle again.
fn model(probes: &'static [u64], clients: &'static [Client], fault: Option<Fault>) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let layout = CitronLayout::new(UNITS);
        let shared = Arc::new(Shared {
            words: (0..layout.words()).map(|_| Word(AtomicU64::new(0))).collect(),
            data: probes.iter().map(|_| UnsafeCell::new(0)).collect(),
        });
        let threads: Vec<_> = clients[1..]
            .iter()
            .map(|c| {
                let shared = Arc::clone(&shared);
                loom::thread::spawn(move || client(shared, probes, c, fault))
            })
            .collect();
        client(Arc::clone(&shared), probes, &clients[0], fault);
        for t in threads {
            t.join().unwrap();
        }
        for (i, p) in probes.iter().enumerate() {
            let writes: u32 = clients
                .iter()
                .filter(|(r, m, _)| *m == Mode::Exclusive && r.contains(p))
                .map(|(_, _, rounds)| rounds)
                .sum();
            // SAFETY: every client joined.
            assert_eq!(shared.data[i].with(|d| unsafe { *d }), u64::from(writes));
        }
        for (i, w) in shared.words.iter().enumerate() {
            let v = w.0.load(Ordering::Relaxed);
            if i < NODE_WORDS {
                // Node words idle: taken == done in every class.
                let fields: Vec<u64> = (0..8).map(|k| v >> (8 * k) & 0xFF).collect();
                assert!(fields.chunks(2).all(|c| c[0] == c[1]), "word {i} left at {v:#x}");
            } else {
                assert_eq!(v, 0, "bitmap {i} left set");
            }
        }
    });
}

#[test]
fn loom_citron_root_occupant_meets_leaf_bits() {
    // The root, exclusive, against bits of leaf 0: the root's word decides the order.
    model(&[12], &[(0..256, Mode::Exclusive, 1), (10..20, Mode::Exclusive, 2)], None);
}

#[test]
fn loom_citron_shared_leaf_occupant_meets_exclusive_bits() {
    model(&[7], &[(0..10, Mode::Shared, 2), (5..15, Mode::Exclusive, 1)], None);
}

#[test]
fn loom_citron_two_leaf_requests_exclude() {
    // Bits of leaves 0 and 1 against bits of leaf 0, and against bits of both leaves.
    model(&[62, 65], &[(60..70, Mode::Exclusive, 1), (62..66, Mode::Exclusive, 2)], None);
}

#[test]
fn loom_citron_shared_root_meets_exclusive_bits() {
    model(&[50, 63], &[(0..256, Mode::Shared, 2), (40..64, Mode::Exclusive, 1)], None);
}

#[test]
fn loom_citron_readers_share_a_two_leaf_range_under_a_shared_root() {
    // Both shared: neither waits, and the reads race with nothing.
    model(&[63, 64], &[(0..256, Mode::Shared, 1), (60..70, Mode::Shared, 2)], None);
}

#[test]
#[should_panic]
fn loom_citron_without_ancestor_notify_races() {
    model(
        &[12],
        &[(0..256, Mode::Exclusive, 1), (10..20, Mode::Exclusive, 1)],
        Some(Fault::NoAncestorNotify),
    );
}
