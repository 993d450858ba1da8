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

#[test]
fn the_version_each_op_came_with_is_the_documents() {
    // The rows of §2's op table: "| `0x0c` | LOCK_NAMED | ... — version 5 (§2.2) | ...";
    // a row without a version is an op every session has.
    let table = DOC.split_once("| op     | name      | payload").expect("§2's op table").1;
    let mut rows = 0;
    for row in table.lines().skip(2).take_while(|l| l.starts_with("| `0x")) {
        let code = u8::from_str_radix(&row[5..7], 16).expect("an op byte");
        let note = row.split_once('—').map(|(_, note)| note);
        let stated = match note.and_then(|note| note.split_once("version ")) {
            Some((_, rest)) => rest[..1].parse().expect("a version digit"),
            None => MIN_VERSION,
        };
        assert_eq!(op::introduced_in(code), stated, "{row}");
        rows += 1;
    }
    assert!(rows >= 17, "only {rows} op rows found in §2's table");
}
