//! The sizes and limits `docs/PROTOCOL.md` states are the crate's own (§2, §5, §6).

use rangelock_proto::*;

const DOC: &str = include_str!("../../../docs/PROTOCOL.md");

/// `n` the way the document writes numbers: groups of three digits split by spaces.
fn spaced(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_answer_sizes_in_the_document_are_the_crates() {
    let stated = [
        (STATS_ANSWER_BASE, "a STATS answer without entries"),
        (STATS_NAMED_ANSWER_BASE, "a STATS_NAMED answer without entries"),
        (STATS_CACHED_ANSWER_BASE, "a STATS_CACHED answer without entries"),
        (STATS_ANSWER_BASE + 1000 * STATS_ENTRY_LEN, "a STATS answer with 1000 entries"),
        (MAX_STATS_ENTRIES as usize, "the most STATS entries in a frame"),
        (stats_entries_within(1 << 20) as usize, "STATS entries in 1 MiB"),
        (MAX_SHM_ATTACH_ANSWER, "the longest SHM_ATTACH answer"),
        (max_map_answer(64), "the longest MAP answer of 64 partitions"),
        (max_map_answer(4096) - 4, "the longest MAP answer's length prefix"),
        (max_map_answer(0) - ANSWER_LEN - 14, "the nodes of the longest MAP answer"),
    ];
    for (n, what) in stated {
        assert!(DOC.contains(&spaced(n)), "docs/PROTOCOL.md does not state {what}: {}", spaced(n));
    }
    assert!(DOC.contains("`114 + 42 × count` bytes"));
    assert!(DOC.contains("`36 + 524 288 + 11 × partitions` bytes"));
    assert_eq!(max_map_answer(0), 36 + 524_288);
    assert_eq!(STATS_ANSWER_BASE, 114);
    assert_eq!(STATS_NAMED_ANSWER_BASE, 130);
    assert_eq!(STATS_CACHED_ANSWER_BASE, 162);
    assert_eq!(STATS_NAMED_ENTRY_LEN, 44);
    assert_eq!(STATS_ENTRY_LEN, 42);
    assert_eq!(OWNER_ENTRY_LEN, 11);
}
