//! Shared-memory answer slots (`docs/PROTOCOL.md` §9): the body of a successful
//! `SHM_ATTACH` answer, and the layout and seqlock of one slot.
//!
//! A server started with shared-memory slots keeps a file of `slots` × [`SLOT_BYTES`]
//! bytes. A session on the same host asks for a slot with `SHM_ATTACH`; the answer's
//! `value` is the slot's index and its body ([`ShmAttached`]) names the file. From then
//! on, whenever the server answers one of the session's `LOCK`s (a grant, or any other
//! outcome), it first publishes that answer in the slot and then sends the answer frame as
//! usual. A client may learn the outcome of a `LOCK` by reading the slot (the one-host
//! analog of the seed's "combiner polling with RDMA": a one-sided read of a ready flag in
//! the server's memory) or simply read the frame; both say the same.
//!
//! # Slot layout
//!
//! One slot is one 64-byte cache line of eight little-endian `u64` words, always accessed
//! as 64-bit atomics by both sides:
//!
//! | word | field | meaning |
//! |---:|---|---|
//! | 0 | `seq` | even: stable; odd: the server is writing; `+2` per publication |
//! | 1 | `session` | the session holding the slot, `0` while free |
//! | 2 | `answers` | `LOCK` answers published since the slot was attached |
//! | 3 | `id` | request id of the last answered `LOCK` |
//! | 4 | `status` | its status code (low byte) |
//! | 5 | `value` | its value (the fencing token of a grant) |
//! | 6, 7 | — | reserved, `0` |
//!
//! # Seqlock
//!
//! One writer at a time (the server serializes publications per slot) does
//! [`publish`]: `seq` to odd, the fields, `seq` to the next even value. A reader
//! ([`read_slot`]) reads `seq`, the fields, then `seq` again, and keeps the snapshot only
//! when both reads are the same even value. `seq` never goes back, also not when a slot
//! passes to another session, so a snapshot is never a mix of two publications.

use core::sync::atomic::{fence, AtomicU64, Ordering};

use super::codec::{Cursor, Put};
use super::error::DecodeError;

/// Bytes of one slot: one cache line.
pub const SLOT_BYTES: usize = 64;
/// `u64` words of one slot.
pub const SLOT_WORDS: usize = SLOT_BYTES / 8;
/// The longest mapping path an `SHM_ATTACH` answer may carry, in bytes.
pub const MAX_SHM_PATH: usize = 4096;

/// Word indices of a slot (see the module docs).
pub mod word {
    /// Sequence number: odd while the server writes.
    pub const SEQ: usize = 0;
    /// The session holding the slot (`0`: free).
    pub const SESSION: usize = 1;
    /// `LOCK` answers published since the slot was attached.
    pub const ANSWERS: usize = 2;
    /// Request id of the last answered `LOCK`.
    pub const ID: usize = 3;
    /// Its status code.
    pub const STATUS: usize = 4;
    /// Its value.
    pub const VALUE: usize = 5;
}

/// The body of an `SHM_ATTACH` answer with status `OK` (the slot index is the answer's
/// `value`): `slot_bytes u16 | slots u32 | path_len u16 | path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShmAttached {
    /// Slots in the file (the file is at least `slots * SLOT_BYTES` bytes long).
    pub slots: u32,
    /// Absolute path of the file to map (read-only suffices), UTF-8.
    pub path: String,
}

impl ShmAttached {
    /// Appends the body.
    ///
    /// # Panics
    ///
    /// If the path is longer than [`MAX_SHM_PATH`] bytes (the server checks its path when
    /// it starts).
    pub fn encode(&self, out: &mut Vec<u8>) {
        assert!(self.path.len() <= MAX_SHM_PATH, "shm path longer than MAX_SHM_PATH");
        out.put_u16(SLOT_BYTES as u16);
        out.put_u32(self.slots);
        out.put_u16(self.path.len() as u16);
        out.extend_from_slice(self.path.as_bytes());
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self, DecodeError> {
        let slot_bytes = c.u16()?;
        if usize::from(slot_bytes) != SLOT_BYTES {
            return Err(DecodeError::BadField(slot_bytes.into(), "shm.slot_bytes"));
        }
        let slots = c.u32()?;
        let len = c.u16()?;
        if usize::from(len) > MAX_SHM_PATH {
            return Err(DecodeError::BadField(len.into(), "shm.path_len"));
        }
        let path = core::str::from_utf8(c.take(len.into())?)
            .map_err(|_| DecodeError::BadUtf8("shm.path"))?
            .to_owned();
        Ok(ShmAttached { slots, path })
    }
}

/// A consistent snapshot of a slot's fields (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotState {
    /// The session holding the slot (`0`: free).
    pub session: u64,
    /// `LOCK` answers published since the slot was attached.
    pub answers: u64,
    /// Request id of the last answered `LOCK`.
    pub id: u64,
    /// Its status code (a [`Status`](crate::Status) code).
    pub status: u8,
    /// Its value (the fencing token of a grant).
    pub value: u64,
}

/// One slot's words, as both sides access them.
pub type SlotWords = [AtomicU64; SLOT_WORDS];

/// Reads a consistent snapshot of `slot`, or `None` if the server was writing it (try
/// again).
#[inline]
pub fn read_slot(slot: &SlotWords) -> Option<SlotState> {
    // Acquire: pairs with the Release store of the even `seq` in `publish`, so the fields
    // read below are at least those of that publication.
    let s1 = slot[word::SEQ].load(Ordering::Acquire);
    if s1 & 1 == 1 {
        return None;
    }
    let state = SlotState {
        session: slot[word::SESSION].load(Ordering::Relaxed),
        answers: slot[word::ANSWERS].load(Ordering::Relaxed),
        id: slot[word::ID].load(Ordering::Relaxed),
        status: slot[word::STATUS].load(Ordering::Relaxed) as u8,
        value: slot[word::VALUE].load(Ordering::Relaxed),
    };
    // Acquire fence: orders the field loads above before the second `seq` load; pairs with
    // the Release fence after the odd `seq` store in `publish` (a field written by a later
    // publication implies the second load sees that publication's odd or later `seq`).
    fence(Ordering::Acquire);
    (slot[word::SEQ].load(Ordering::Relaxed) == s1).then_some(state)
}

/// Publishes `state` in `slot`. Publications of one slot must not run concurrently (the
/// server holds a per-slot mutex); readers never block it.
#[inline]
pub fn publish(slot: &SlotWords, state: &SlotState) {
    let s = slot[word::SEQ].load(Ordering::Relaxed);
    debug_assert!(s & 1 == 0, "concurrent publications of one slot");
    slot[word::SEQ].store(s.wrapping_add(1), Ordering::Relaxed);
    // Release fence: the odd `seq` above is ordered before the field stores below; pairs
    // with the Acquire fence in `read_slot` (a reader that sees a new field sees odd/new seq).
    fence(Ordering::Release);
    slot[word::SESSION].store(state.session, Ordering::Relaxed);
    slot[word::ANSWERS].store(state.answers, Ordering::Relaxed);
    slot[word::ID].store(state.id, Ordering::Relaxed);
    slot[word::STATUS].store(state.status.into(), Ordering::Relaxed);
    slot[word::VALUE].store(state.value, Ordering::Relaxed);
    // Release: makes the fields visible with the even `seq`; pairs with the Acquire load
    // of `seq` in `read_slot`.
    slot[word::SEQ].store(s.wrapping_add(2), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_then_read() {
        let slot: SlotWords = Default::default();
        assert_eq!(read_slot(&slot), Some(SlotState::default()));
        let st = SlotState { session: 3, answers: 1, id: 9, status: 0, value: 42 };
        publish(&slot, &st);
        assert_eq!(read_slot(&slot), Some(st));
        assert_eq!(slot[word::SEQ].load(Ordering::Relaxed), 2);
        // A writer in progress (odd seq) is not read.
        slot[word::SEQ].store(3, Ordering::Relaxed);
        assert_eq!(read_slot(&slot), None);
    }

    #[test]
    fn concurrent_reader_never_sees_a_torn_snapshot() {
        let slot: SlotWords = Default::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..=20_000u64 {
                    let st = SlotState { session: i, answers: i, id: i, status: 0, value: i };
                    publish(&slot, &st);
                }
            });
            let mut last = 0;
            while last < 20_000 {
                if let Some(st) = read_slot(&slot) {
                    assert!(st.session == st.answers && st.id == st.value && st.id == st.session);
                    assert!(st.id >= last, "snapshots go forward");
                    last = st.id;
                }
            }
        });
    }

    #[test]
    fn body_round_trip_and_checks() {
        let b = ShmAttached { slots: 4, path: "/tmp/x.slots".into() };
        let mut out = Vec::new();
        b.encode(&mut out);
        let mut c = Cursor::new(&out);
        assert_eq!(ShmAttached::decode(&mut c).unwrap(), b);
        assert_eq!(c.remaining(), 0);
        let mut bad = out.clone();
        bad[0] = 32;
        assert_eq!(
            ShmAttached::decode(&mut Cursor::new(&bad)),
            Err(DecodeError::BadField(32, "shm.slot_bytes"))
        );
        let mut bad = out;
        let n = bad.len();
        bad[n - 1] = 0xff;
        assert_eq!(
            ShmAttached::decode(&mut Cursor::new(&bad)),
            Err(DecodeError::BadUtf8("shm.path"))
        );
    }
}
