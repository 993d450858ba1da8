//! How large an answer can be, in bytes on the wire (length prefix included).
//!
//! A server holds at most `--max-output-bytes` of a session's answers that the socket has
//! not taken, and never sends a response frame over [`MAX_RESPONSE_FRAME`]. These are the
//! sizes it checks both limits against. Most answers have a size fixed by their kind: a
//! plain answer is [`ANSWER_LEN`] bytes, a `NOT_OWNER` answer or an `SHM_ATTACH` answer at
//! most [`MAX_NOT_OWNER_ANSWER`] or [`MAX_SHM_ATTACH_ANSWER`]. Two grow with the server's
//! state:
//!
//! * a `STATS` answer, by [`STATS_ENTRY_LEN`] per entry from [`STATS_ANSWER_BASE`]. The
//!   server cuts the list to what fits ([`stats_entries_within`]) and says how many
//!   entries it left out (the answer's `value`); no list is longer than
//!   [`MAX_STATS_ENTRIES`], what one frame can carry;
//! * a `STATS_NAMED` answer, by [`STATS_NAMED_ENTRY_LEN`](crate::STATS_NAMED_ENTRY_LEN) plus the name per entry from
//!   [`STATS_NAMED_ANSWER_BASE`]; the server cuts its list by bytes
//!   ([`stats_named_entries_within`]); a `STATS_CACHED` answer likewise from
//!   [`STATS_CACHED_ANSWER_BASE`] ([`stats_cached_entries_within`]);
//! * a `MAP` answer, with the cluster's nodes and partitions: at most
//!   [`max_map_answer`] for a partition count.

use crate::frame::MAX_RESPONSE_FRAME;
use crate::map::{MAX_NAME_LEN, MAX_NODES, OWNER_ENTRY_LEN};
use crate::shm::MAX_SHM_PATH;
use crate::stats::{StatsEntry, STATS_ENTRY_LEN};

/// Bytes of an answer without a body: the length prefix (4), then op, id, status and value
/// (18).
pub const ANSWER_LEN: usize = 4 + 18;

/// Bytes of a `STATS` answer without entries: [`ANSWER_LEN`], the eleven counters (88)
/// and the entry count (4).
pub const STATS_ANSWER_BASE: usize = ANSWER_LEN + 11 * 8 + 4;

/// The most entries one `STATS` answer can carry: 399 454 (with one more its length
/// prefix would pass [`MAX_RESPONSE_FRAME`]).
pub const MAX_STATS_ENTRIES: u32 = stats_entries_within(MAX_RESPONSE_FRAME as usize + 4);

/// The most entries of a `STATS` answer that is at most `bytes` long (length prefix
/// included), and at most [`MAX_STATS_ENTRIES`]; 0 when even the counters do not fit.
pub const fn stats_entries_within(bytes: usize) -> u32 {
    let frame_max = MAX_RESPONSE_FRAME as usize + 4;
    let bytes = if bytes < frame_max { bytes } else { frame_max };
    if bytes < STATS_ANSWER_BASE {
        return 0;
    }
    ((bytes - STATS_ANSWER_BASE) / STATS_ENTRY_LEN) as u32
}

/// Bytes of a `STATS_NAMED` answer without entries: [`STATS_ANSWER_BASE`] and the two
/// counters of names (16).
pub const STATS_NAMED_ANSWER_BASE: usize = STATS_ANSWER_BASE + 2 * 8;

/// Bytes of a `STATS_CACHED` answer without entries: [`STATS_NAMED_ANSWER_BASE`] and the
/// four counters of cached locks (32). The largest answer a server must be able to send
/// whole.
pub const STATS_CACHED_ANSWER_BASE: usize = STATS_NAMED_ANSWER_BASE + 4 * 8;

/// How many of `entries`, from the first, a `STATS_NAMED` answer at most `bytes` long
/// (length prefix included, and never over [`MAX_RESPONSE_FRAME`]) can carry.
pub fn stats_named_entries_within<'a>(
    bytes: usize,
    entries: impl IntoIterator<Item = &'a StatsEntry>,
) -> usize {
    named_entries_within(STATS_NAMED_ANSWER_BASE, bytes, entries)
}

/// How many of `entries`, from the first, a `STATS_CACHED` answer at most `bytes` long
/// (length prefix included, and never over [`MAX_RESPONSE_FRAME`]) can carry: its entries
/// are those of `STATS_NAMED`, after four more counters.
pub fn stats_cached_entries_within<'a>(
    bytes: usize,
    entries: impl IntoIterator<Item = &'a StatsEntry>,
) -> usize {
    named_entries_within(STATS_CACHED_ANSWER_BASE, bytes, entries)
}

/// How many of `entries` with names fit after `base` bytes in `bytes`.
fn named_entries_within<'a>(
    base: usize,
    bytes: usize,
    entries: impl IntoIterator<Item = &'a StatsEntry>,
) -> usize {
    let bytes = bytes.min(MAX_RESPONSE_FRAME as usize + 4);
    let Some(mut room) = bytes.checked_sub(base) else { return 0 };
    let mut n = 0;
    for e in entries {
        match room.checked_sub(e.named_len()) {
            Some(r) => room = r,
            None => break,
        }
        n += 1;
    }
    n
}

/// The longest answer `NOT_OWNER` with its owner hint: two names of [`MAX_NAME_LEN`] bytes,
/// each after its length byte.
pub const MAX_NOT_OWNER_ANSWER: usize = ANSWER_LEN + 2 * (1 + MAX_NAME_LEN);

/// The longest `SHM_ATTACH` answer `OK`: `slot_bytes u16`, `slots u32`, `path_len u16` and
/// a path of [`MAX_SHM_PATH`] bytes.
pub const MAX_SHM_ATTACH_ANSWER: usize = ANSWER_LEN + 2 + 4 + 2 + MAX_SHM_PATH;

/// The longest `MAP` answer `OK` of a cluster of `partitions` partitions: revision,
/// partition count and node count (14 bytes), [`MAX_NODES`] nodes whose id and address
/// are [`MAX_NAME_LEN`] bytes each, and one owner entry per partition.
pub const fn max_map_answer(partitions: u32) -> usize {
    ANSWER_LEN
        + 14
        + MAX_NODES as usize * 2 * (1 + MAX_NAME_LEN)
        + OWNER_ENTRY_LEN * partitions as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        op, ClusterMap, Counters, EntryState, Mode, NodeInfo, OwnerHint, PartitionOwner,
        PartitionState, Partitioning, ResponseFrame, ShmAttached, StatsBody, StatsEntry, Status,
        STATS_NAMED_ENTRY_LEN,
    };

    fn len(r: &ResponseFrame) -> usize {
        let mut out = Vec::new();
        r.encode(&mut out);
        out.len()
    }

    fn stats(n: usize) -> ResponseFrame {
        let e = StatsEntry {
            session: 1,
            id: 2,
            start: 3,
            end: 4,
            mode: Mode::Shared,
            state: EntryState::Held,
            token: 5,
            name: None,
            kept: false,
        };
        let body = StatsBody { counters: Counters::default(), entries: vec![e; n], omitted: 0 };
        ResponseFrame::stats(7, body)
    }

    /// A `STATS_NAMED` answer, or with `cached` a `STATS_CACHED` one, whose entries carry
    /// names of these lengths (0: unnamed).
    fn stats_named(names: &[usize], cached: bool) -> ResponseFrame {
        let entries = names
            .iter()
            .map(|&n| StatsEntry {
                session: 1,
                id: 2,
                start: 3,
                end: 4,
                mode: Mode::Exclusive,
                state: if cached { EntryState::Held } else { EntryState::Waiting },
                token: 0,
                name: (n > 0).then(|| vec![b'x'; n].into()),
                kept: cached,
            })
            .collect();
        let body = StatsBody { entries, ..StatsBody::default() };
        match cached {
            true => ResponseFrame::stats_cached(7, body),
            false => ResponseFrame::stats_named(7, body),
        }
    }

    #[test]
    fn named_answers_are_cut_by_bytes_to_what_fits() {
        type Within = fn(usize, &[StatsEntry]) -> usize;
        let named: Within = |b, e| stats_named_entries_within(b, e);
        let cached: Within = |b, e| stats_cached_entries_within(b, e);
        for (is_cached, base, within) in
            [(false, STATS_NAMED_ANSWER_BASE, named), (true, STATS_CACHED_ANSWER_BASE, cached)]
        {
            let answer = |names: &[usize]| stats_named(names, is_cached);
            assert_eq!(len(&answer(&[])), base);
            let names = [0, 1, 1024, 7];
            let whole = len(&answer(&names));
            assert_eq!(whole, base + 4 * STATS_NAMED_ENTRY_LEN + 1032);
            let body = answer(&names).stats.unwrap();
            for bytes in [0, base - 1, base, whole - 1, whole] {
                let n = within(bytes, &body.entries);
                assert!(bytes < base || len(&answer(&names[..n])) <= bytes);
                if n < names.len() {
                    // One more would not fit.
                    assert!(len(&answer(&names[..n + 1])) > bytes, "{bytes}: {n}");
                }
            }
            assert_eq!(within(whole, &body.entries), 4);
            assert_eq!(within(whole - 1, &body.entries), 3);
        }
    }

    #[test]
    fn the_sizes_are_those_of_encoded_answers() {
        assert_eq!(len(&ResponseFrame::new(op::LOCK, 1, Status::Ok, 9)), ANSWER_LEN);
        assert_eq!(len(&stats(0)), STATS_ANSWER_BASE);
        assert_eq!(len(&stats(3)), STATS_ANSWER_BASE + 3 * STATS_ENTRY_LEN);
        let long = "n".repeat(MAX_NAME_LEN);
        let hint = OwnerHint::new(&long, &long).unwrap();
        assert_eq!(len(&ResponseFrame::not_owner(op::LOCK, 1, 2, hint)), MAX_NOT_OWNER_ANSWER);
        let path = format!("/{}", "p".repeat(MAX_SHM_PATH - 1));
        let shm = ResponseFrame::shm_attached(1, 0, ShmAttached { slots: 1, path });
        assert_eq!(len(&shm), MAX_SHM_ATTACH_ANSWER);
        for partitions in [1u32, 64, 4096] {
            let nodes: Vec<NodeInfo> = (0..MAX_NODES)
                .map(|i| {
                    let id = format!("{i:0>width$}", width = MAX_NAME_LEN);
                    NodeInfo::new(&id, &long).unwrap()
                })
                .collect();
            let owner = PartitionOwner { node: Some(0), state: PartitionState::Serving, epoch: 1 };
            let owners = vec![owner; partitions as usize];
            let parts = Partitioning::new(partitions).unwrap();
            let map = ClusterMap::new(1, parts, nodes, owners).unwrap();
            assert_eq!(len(&ResponseFrame::map(1, map)), max_map_answer(partitions));
        }
    }

    #[test]
    fn a_stats_answer_of_the_most_entries_is_the_largest_frame_allowed() {
        assert_eq!(MAX_STATS_ENTRIES, 399_454);
        let frame = |n: u32| STATS_ANSWER_BASE - 4 + n as usize * STATS_ENTRY_LEN;
        assert!(frame(MAX_STATS_ENTRIES) <= MAX_RESPONSE_FRAME as usize);
        assert!(frame(MAX_STATS_ENTRIES + 1) > MAX_RESPONSE_FRAME as usize);
        assert_eq!(stats_entries_within(usize::MAX), MAX_STATS_ENTRIES);
        assert_eq!(stats_entries_within(STATS_ANSWER_BASE - 1), 0);
        assert_eq!(stats_entries_within(STATS_ANSWER_BASE), 0);
        assert_eq!(stats_entries_within(STATS_ANSWER_BASE + STATS_ENTRY_LEN - 1), 0);
        assert_eq!(stats_entries_within(STATS_ANSWER_BASE + STATS_ENTRY_LEN), 1);
        // The default output limit, 1 MiB.
        assert_eq!(stats_entries_within(1 << 20), 24_963);
    }
}
