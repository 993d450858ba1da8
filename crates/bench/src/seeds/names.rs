//! The seeds' names for the systems they measure, and which of our variants stands for
//! each ([`NAMES`]), with what ours does differently; [`table`] is the report's section.
//!
//! Each seed name is spelled as its seed spells it (a test checks it in the seed's text
//! where the text is at hand); a row without one ("beyond the seed") is a variant of ours
//! the seed has no counterpart for, shown so that a reader can place every row of the
//! tables. Our variants are re-implementations in Rust throughout (the seeds' were C++ and
//! C#), so a row says only what differs beyond that.

use super::claims::Seed;

/// One seed system and our variants for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name {
    /// The seed.
    pub seed: Seed,
    /// The seed's name for it, as its text spells it; empty: no counterpart in the seed.
    pub theirs: &'static str,
    /// Our variants.
    pub ours: &'static [&'static str],
    /// How ours differ from the seed's, in one line (empty: as the seed describes it).
    pub differs: &'static str,
}

const fn row(
    seed: Seed,
    theirs: &'static str,
    ours: &'static [&'static str],
    differs: &'static str,
) -> Name {
    Name { seed, theirs, ours, differs }
}

use Seed::{Epvs, RangeThesis, ServerThesis};

/// Every seed system with our variants, seed by seed.
pub const NAMES: &[Name] = &[
    // Concurrent Range Locking (§5.1, §5.4.2).
    row(
        RangeThesis,
        "Our",
        &["rangelock-list"],
        "the thesis's lock-free skip-list algorithm: our RangeLock with the stripe table off; \
         maximum height 12 by default (the thesis chose 10; the height suite varies it)",
    ),
    row(
        RangeThesis,
        "",
        &["rangelock"],
        "beyond the seed: our product, the same skip list plus a table of stripe claims that \
         takes small aligned ranges without touching the list (W1's and W2's 1 KiB ranges go \
         there); judged as its own row",
    ),
    row(
        RangeThesis,
        "Scalable RL",
        &["kogan-list"],
        "Kogan et al.'s lock-free list; ours has the reader-writer variant too (the thesis \
         implemented the exclusive-access one; W1 and W2 lock exclusively)",
    ),
    row(RangeThesis, "Song RL", &["song-skiplist"], "a sequential skip list under one spinlock"),
    row(
        RangeThesis,
        "Bitmap",
        &["segments"],
        "one reader-writer counter word per 64 KiB extent (a 1 MiB blob takes 16 CASes), not a \
         bit per block",
    ),
    row(
        RangeThesis,
        "range tree accompanied by a spin lock",
        &["kernel-tree"],
        "the Linux kernel's range lock (§2.1.1): an interval tree of holders and waiters under \
         one spinlock; related work, not in the thesis's evaluation",
    ),
    row(
        RangeThesis,
        "",
        &["fcntl-ofd", "global-mutex", "unlocked"],
        "beyond the seed: the kernel's open-file-description byte-range locks; one mutex around \
         a list of held ranges (the floor); the workload without a lock (the ceiling)",
    ),
    // EPVS (§6).
    row(Epvs, "simple-EPVS", &["epvs"], "one protected region (enter + leave) per operation"),
    row(
        Epvs,
        "EPVS-pinned",
        &["epvs-pinned"],
        "a held guard refreshed every pin_refresh_every operations (epvs-array) or every \
         operation (epvs-table, epvs-ops)",
    ),
    row(Epvs, "2-phase-EPVS", &["epvs-2phase"], ""),
    row(
        Epvs,
        "latch-free-mock",
        &["latch-free-mock"],
        "a preallocated array with no resize protection: an upper bound, not a competitor",
    ),
    row(
        Epvs,
        "latched",
        &["rwlock-std", "rwlock-parking-lot"],
        "the resizable array's shared/exclusive latch baseline: std's and parking_lot's \
         reader-writer locks in place of C#'s",
    ),
    row(
        Epvs,
        "BRAVO",
        &["bravo"],
        "hashes (thread, lock) into its visible-readers table, the fix the paper suggests; the \
         paper's hashes the thread alone, so any nesting collides (epvs-nesting shows both \
         cases)",
    ),
    row(
        Epvs,
        "one without any validation",
        &["no-validation"],
        "Fig. 15; the routes are private and may be stale",
    ),
    row(Epvs, "validation protected by a reader–writer latch", &["rwlock-validation"], "Fig. 15"),
    row(Epvs, "one with EPVS", &["epvs-validation"], "Fig. 15"),
    row(
        Epvs,
        "",
        &["check-only"],
        "beyond the seed: the ownership check without synchronisation, the floor of any \
         validation",
    ),
    row(
        Epvs,
        "original FASTER CPR implementation",
        &["cpr-epoch"],
        "FASTER's CPR phases with per-thread markers over our in-place array store, not FASTER \
         itself",
    ),
    row(
        Epvs,
        "latch-free",
        &["latch-free"],
        "Fig. 17: no protection; a version change is an atomic increment nobody waits for",
    ),
    row(
        Epvs,
        "latched",
        &["latched"],
        "Fig. 17: parking_lot's reader-writer lock, shared per operation, exclusive per change",
    ),
    row(
        Epvs,
        "",
        &["epvs-asym", "epvs-fenced"],
        "beyond the seed: EPVS held to one announce mode (asymmetric, fenced); epvs adapts \
         between them",
    ),
    row(
        Epvs,
        "number of phases",
        &["epvs-1-phase", "epvs-2-phases", "epvs-4-phases", "epvs-8-phases"],
        "Fig. 19: one version change split over 1, 2, 4, 8 phases",
    ),
    row(Epvs, "C# reader-writer latch", &["rwlock"], "Fig. 21: parking_lot's reader-writer lock"),
    row(
        Epvs,
        "",
        &[
            "lightepoch",
            "lightepoch-pinned",
            "crossbeam-pin",
            "epvs-4-instances",
            "epvs-16-instances",
        ],
        "beyond the seed: the epoch framework alone (FASTER's LightEpoch, crossbeam's pin) and \
         EPVS over several instances, for the cost of one protection",
    ),
    // Server-sided Range Locking (§5.1, Tables 5 and 6).
    row(
        ServerThesis,
        "Combiner eRPC",
        &["combiner-poll"],
        "over TCP loopback; a lock that must wait is answered PENDING and the client polls \
         (the seed's client polls at least once even for a free range); handler threads: one \
         per core less the combiner's (the seed: 18 server threads)",
    ),
    row(
        ServerThesis,
        "Combiner RDMA",
        &["combiner-shm-poll"],
        "clients read their answers from shared-memory slots of this host (the seed: RDMA \
         reads of the server's memory)",
    ),
    row(
        ServerThesis,
        "Interval tree",
        &["tree-single-poll", "tree-mutex"],
        "a treap, not a red-black tree; tree-single-poll runs every connection and the tree on \
         one thread (the seed's best, one server thread), and its waiting clients poll; \
         tree-mutex shares the tree between the handler threads under a mutex (the \
         server-threads suite's interval tree)",
    ),
    row(
        ServerThesis,
        "Static segmentation",
        &["dslr-redis"],
        "DSLR with its segment words in a redis-server over TCP loopback: each one-sided RDMA \
         operation of the seed is one Redis round trip",
    ),
    row(
        ServerThesis,
        "Citron",
        &["citron-redis"],
        "rebuilt from Citron's description (a fan-out-4 tree with 64-unit bitmap leaves), with \
         the bit-precise leaves the seed's version lacked (it locked whole nodes); its words \
         in Redis over TCP loopback, a request's tickets in one round trip",
    ),
    row(
        ServerThesis,
        "",
        &["dslr-shm", "citron-like"],
        "local-memory references: the same client-sided locks on a shared mapping of this \
         host, no network; never the seed's comparator",
    ),
    row(
        ServerThesis,
        "eRPC",
        &["echo"],
        "Table 5: one request/response round trip to rangelockd over TCP loopback; in the \
         throughput figures the ceiling (two pings per lock + unlock cycle)",
    ),
    row(ServerThesis, "RDMA read", &["redis-get"], "Table 5: a Redis GET over TCP loopback"),
    row(
        ServerThesis,
        "RDMA atomic",
        &["redis-cas", "redis-faa"],
        "Table 5: a compare-and-swap script / an INCRBY in Redis over TCP loopback",
    ),
    row(
        ServerThesis,
        "",
        &["shm-read", "shm-cas", "shm-faa", "timer"],
        "Table 5's local-memory references (a load, CAS, FAA on a word another core keeps \
         writing) and the clock's own cost",
    ),
    row(
        ServerThesis,
        "",
        &["combiner", "tree-single", "rangelock", "combiner-auth", "combiner-tls-auth"],
        "beyond the seed: rangelockd as it ships, grants pushed to the waiting client (no \
         polls): the combiner, the single-thread tree, the lock-free skip-list engine, and the \
         combiner with token authentication over TCP and over TLS",
    ),
];

/// The report's section as a table: its header and one row per entry of [`NAMES`] (seed,
/// the seed's name, our variants, how ours differ), the seed named by `seed_name`.
pub fn table(seed_name: impl Fn(Seed) -> &'static str) -> ([&'static str; 4], Vec<[String; 4]>) {
    let rows = NAMES
        .iter()
        .map(|n| {
            let theirs = if n.theirs.is_empty() { "—".to_owned() } else { n.theirs.to_owned() };
            let ours: Vec<String> = n.ours.iter().map(|v| format!("`{v}`")).collect();
            let differs = if n.differs.is_empty() { "as the seed describes it" } else { n.differs };
            [seed_name(n.seed).to_owned(), theirs, ours.join(", "), differs.to_owned()]
        })
        .collect();
    (["seed", "seed's name", "our variants", "how ours differ"], rows)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The variant names of the committed records (`docs/results/*.json`).
    fn recorded_variants() -> BTreeSet<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
        let mut names = BTreeSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") || path.ends_with("not-run.json") {
                continue;
            }
            let records: Vec<crate::harness::Record> =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            names.extend(records.into_iter().map(|r| r.variant));
        }
        names
    }

    /// Every variant the table names is one the suites measure: in the committed records,
    /// or (for a variant newer than them) among a registered suite's quick cases.
    #[test]
    fn every_mapped_variant_is_a_variant_of_the_suites() {
        let mut known = recorded_variants();
        let all: Vec<&str> = NAMES.iter().flat_map(|n| n.ours.iter().copied()).collect();
        if all.iter().any(|v| !known.contains(*v)) {
            let opts = crate::harness::Options::quick();
            for suite in crate::suites::all() {
                known.extend(suite.cases(&opts).into_iter().map(|c| c.variant));
            }
        }
        let unknown: Vec<&str> = all.into_iter().filter(|v| !known.contains(*v)).collect();
        assert!(unknown.is_empty(), "not a variant of any suite: {unknown:?}");
    }

    /// Each seed has a row for every name its figures' claims are judged on, and the seeds'
    /// names are not repeated within a seed (but for one used by two figures).
    #[test]
    fn the_seeds_systems_each_have_a_row() {
        let of = |seed: Seed| -> Vec<&str> {
            NAMES.iter().filter(|n| n.seed == seed).flat_map(|n| n.ours.iter().copied()).collect()
        };
        for v in ["rangelock-list", "rangelock", "kogan-list", "song-skiplist", "segments"] {
            assert!(of(RangeThesis).contains(&v), "{v}");
        }
        for v in ["epvs", "epvs-2phase", "epvs-pinned", "bravo", "latch-free-mock", "cpr-epoch"] {
            assert!(of(Epvs).contains(&v), "{v}");
        }
        for v in
            ["combiner-poll", "combiner-shm-poll", "tree-single-poll", "dslr-redis", "citron-redis"]
        {
            assert!(of(ServerThesis).contains(&v), "{v}");
        }
        for v in ["echo", "redis-get", "redis-cas", "redis-faa"] {
            assert!(of(ServerThesis).contains(&v), "{v}");
        }
        let (header, rows) = table(|_| "s");
        assert_eq!(rows.len(), NAMES.len());
        assert_eq!(header.len(), rows[0].len());
        assert!(rows.iter().any(|r| r[1] == "Scalable RL" && r[2] == "`kogan-list`"));
    }
}
