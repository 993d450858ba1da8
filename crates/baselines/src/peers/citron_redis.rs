//! `citron-redis`: the tree of [`super::citron_shm`] (same layout, same node words, same
//! ticket classes and leaf bitmaps, same plan of steps) with every tree word a Redis key,
//! over loopback: the client-sided lock *Server-sided Range Locking* compares with,
//! paying a network round trip where the study's Citron pays an RDMA one.
//!
//! # The operations
//!
//! A word is a Redis string of (up to) 8 bytes read as a big-endian `u64`, so the field at
//! bit `s` of the word (counting from the least significant bit) is `BITFIELD`'s field at
//! offset `56 - s`:
//!
//! - **Masked fetch-and-add** (Citron's Ext-FAA) is Redis's own `BITFIELD key OVERFLOW WRAP
//!   INCRBY u8 <offset> 1`: it adds to one 8-bit field and wraps inside it, never carrying
//!   into the next, which is what the shared-memory peer emulates with a CAS loop. A Lua
//!   script wraps it only to return the word *before* the add (the ticket's snapshot).
//! - **Masked compare-and-swap** on a leaf bitmap (Ext-CAS: "if `w & mask == 0` then
//!   `w | mask`") is a Lua script over the word's two 32-bit halves (Lua's numbers are
//!   doubles: a 64-bit mask would round).
//! - **Polling** re-reads the waiting words with one `MGET`; releases are `BITFIELD`
//!   adds (a `done` field; the held bits subtracted, as the shared-memory peer does).
//!
//! # Batching, as far as Redis allows
//!
//! The study batches Citron's independent RDMA operations and gets a lock down to two
//! round trips. Here:
//!
//! 1. **All tickets of a request in one round trip**, by one script that takes them in
//!    plan order. Redis runs a script atomically, so the batch also keeps one arrival
//!    order at every word — which the protocol needs once tickets are no longer taken one
//!    at a time: with tickets taken in separate, interleaved batches, `R` could be ahead of
//!    `S` at one word and behind it at the next, each waiting for the other. (A pipeline
//!    of separate commands costs the same round trip but gives no such guarantee.)
//! 2. **Waiting** polls every ticket that must still wait with one `MGET` per round until
//!    each sees the earlier conflicting tickets done (a condition that stays true once
//!    met); the round trip is the back-off, as in `dslr-redis`.
//! 3. **Leaf bits last**, after every ticket is entered, all of a request's (one or two
//!    leaves) in one script that sets them only if all are clear, retried until it does.
//!
//! So an uncontended lock costs one round trip, two with leaf bits; an unlock writes all
//! its releases at once and costs one (none when pipelined: [`CitronRedis::set_pipelined_releases`]).
//!
//! *No deadlock with this order.* A ticket waits only for tickets taken by earlier batches
//! (one order, from the atomic batch), and a request sets bits only after all its tickets
//! are entered, all at once, so a bits holder waits for nothing. Chains of waits thus go
//! to strictly earlier batches and end at a request that is either entered everywhere or
//! retrying its bits against holders that wait for nothing. *Exclusion* is the
//! shared-memory peer's argument unchanged: conflicting requests meet at a word in
//! conflicting classes, or at the bits of a leaf.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;

use rangelock::Mode;

use super::citron_shm::{CitronHeld, CitronLayout, Class, Fault, NodeWord, Step};
use super::redis::{bad, Reply, RespConn};

/// The report name of the peer.
pub const NAME: &str = "citron-redis";

/// Takes one ticket per key (`KEYS[i]`, field at bit offset `ARGV[i]`), in order, and
/// returns every word as it was before its add (nil as the empty string).
const TAKE_SCRIPT: &[u8] = b"local out = {} \
for i, key in ipairs(KEYS) do \
  out[i] = redis.call('GET', key) or '' \
  redis.call('BITFIELD', key, 'OVERFLOW', 'WRAP', 'INCRBY', 'u8', ARGV[i], 1) \
end \
return out";

/// Sets the bits (`ARGV[2i-1]`: high 32 bits, `ARGV[2i]`: low 32 bits) of every leaf
/// bitmap `KEYS[i]` if all of them are clear (returns 1), else changes nothing (returns 0).
const SET_BITS_SCRIPT: &[u8] = b"for i, key in ipairs(KEYS) do \
  local w = redis.call('BITFIELD', key, 'GET', 'u32', 0, 'GET', 'u32', 32) \
  if bit.band(w[1], tonumber(ARGV[2*i-1])) ~= 0 or bit.band(w[2], tonumber(ARGV[2*i])) ~= 0 \
  then return 0 end \
end \
for i, key in ipairs(KEYS) do \
  redis.call('BITFIELD', key, 'OVERFLOW', 'WRAP', 'INCRBY', 'u32', 0, ARGV[2*i-1], \
    'INCRBY', 'u32', 32, ARGV[2*i]) \
end \
return 1";

/// One client of a `citron-redis` tree: its own connection to the server holding the
/// words (keys `citron:<word>`).
#[derive(Debug)]
pub struct CitronRedis {
    conn: RespConn,
    layout: CitronLayout,
    keys: Vec<Vec<u8>>,
    take_sha: Vec<u8>,
    set_bits_sha: Vec<u8>,
    /// Whether an unlock returns without reading the replies of its releases.
    pipelined_releases: bool,
    /// Tickets still waiting during a lock: (word, classes waited for, snapshot).
    waiting: Vec<(usize, u8, NodeWord)>,
    fault: Option<Fault>,
}

/// `BITFIELD`'s bit offset of the 8-bit field at bit `shift` (a multiple of 8) of a
/// big-endian word: `56 - shift`, as the command's argument.
fn offset(shift: u32) -> &'static str {
    const OFFSETS: [&str; 8] = ["56", "48", "40", "32", "24", "16", "8", "0"];
    OFFSETS[(shift / 8) as usize]
}

/// A word from its Redis string: big-endian, missing trailing bytes zero (`BITFIELD`
/// grows a string only as far as the fields it wrote).
fn word_of(bytes: &[u8]) -> io::Result<u64> {
    if bytes.len() > 8 {
        return Err(bad(format!("a tree word of {} bytes", bytes.len())));
    }
    let mut be = [0u8; 8];
    be[..bytes.len()].copy_from_slice(bytes);
    Ok(u64::from_be_bytes(be))
}

/// The words of a reply that is an array of strings (nil: a word never written, 0).
fn words_of(reply: Reply, expected: usize) -> io::Result<Vec<u64>> {
    let Reply::Array(items) = reply else {
        return Err(bad(format!("expected an array reply, got {reply:?}")));
    };
    if items.len() != expected {
        return Err(bad(format!("{} words for {expected} keys", items.len())));
    }
    items
        .into_iter()
        .map(|item| match item {
            Reply::Bulk(Some(b)) => word_of(&b),
            Reply::Bulk(None) => Ok(0),
            r => Err(bad(format!("expected a string, got {r:?}"))),
        })
        .collect()
}

/// The `(high, low)` 32-bit halves of a leaf mask, as command arguments.
fn halves(mask: u64) -> (String, String) {
    ((mask >> 32).to_string(), (mask & 0xFFFF_FFFF).to_string())
}

impl CitronRedis {
    /// Connects to the server at `addr` for a tree of `layout` and loads the scripts.
    ///
    /// # Errors
    ///
    /// When the connection or a `SCRIPT LOAD` fails.
    pub fn connect(addr: SocketAddr, layout: CitronLayout) -> io::Result<Self> {
        let mut conn = RespConn::connect(addr)?;
        let mut load = |script: &[u8]| match conn.call(&[b"SCRIPT", b"LOAD", script])? {
            Reply::Bulk(Some(sha)) => Ok(sha),
            r => Err(bad(format!("SCRIPT LOAD answered {r:?}"))),
        };
        let take_sha = load(TAKE_SCRIPT)?;
        let set_bits_sha = load(SET_BITS_SCRIPT)?;
        let keys = (0..layout.words()).map(|w| format!("citron:{w}").into_bytes()).collect();
        Ok(CitronRedis {
            conn,
            layout,
            keys,
            take_sha,
            set_bits_sha,
            pipelined_releases: false,
            waiting: Vec::new(),
            fault: None,
        })
    }

    /// This client with a broken protocol (negative controls of the checkers only).
    #[doc(hidden)]
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// Whether an unlock writes its releases (one write) and returns without reading
    /// their replies — the client's next command reads them and reports an error among
    /// them — instead of reading them at once (one round trip). Off by default.
    pub fn set_pipelined_releases(&mut self, on: bool) {
        self.pipelined_releases = on;
    }

    /// Round trips of this client's connection so far.
    pub fn round_trips(&self) -> u64 {
        self.conn.round_trips()
    }

    /// Locks `range` in `mode`, waiting as long as it takes (see "Batching" in the module
    /// docs).
    ///
    /// # Errors
    ///
    /// On I/O errors or an unexpected reply; the tickets taken so far stay taken (the
    /// tree is the suite's, thrown away with the server).
    pub fn lock(&mut self, range: Range<u64>, mode: Mode) -> io::Result<CitronHeld> {
        let plan = self.layout.plan(&range, mode, self.fault);
        self.take_tickets(plan.steps())?;
        while !self.waiting.is_empty() {
            self.poll_waiting()?;
        }
        self.set_bits(plan.steps())?;
        Ok(CitronHeld { range, mode })
    }

    /// Unlocks a range taken by [`lock`](Self::lock): every release in one write.
    ///
    /// # Errors
    ///
    /// On I/O errors or an error reply.
    pub fn unlock(&mut self, held: CitronHeld) -> io::Result<()> {
        let plan = self.layout.plan(&held.range, held.mode, self.fault);
        for &step in plan.steps().iter().rev() {
            match step {
                Step::Ticket { word, class } => {
                    self.conn.send(&[
                        b"BITFIELD",
                        &self.keys[word],
                        b"OVERFLOW",
                        b"WRAP",
                        b"INCRBY",
                        b"u8",
                        offset(class.done_shift()).as_bytes(),
                        b"1",
                    ]);
                }
                Step::Bits { word, mask } => {
                    // The bits are set (we hold them): subtracting clears exactly them,
                    // half by half without a borrow between the halves. (A zero half is
                    // left out: Redis does not parse "-0" as an integer.)
                    let key = &self.keys[word];
                    let neg = [(mask >> 32, "0"), (mask & 0xFFFF_FFFF, "32")]
                        .map(|(half, at)| (half != 0).then(|| (format!("-{half}"), at)));
                    let mut cmd: Vec<&[u8]> = vec![b"BITFIELD", key, b"OVERFLOW", b"WRAP"];
                    for (by, at) in neg.iter().flatten() {
                        cmd.extend([&b"INCRBY"[..], b"u32", at.as_bytes(), by.as_bytes()]);
                    }
                    self.conn.send(&cmd);
                }
            }
        }
        if self.pipelined_releases {
            self.conn.flush()
        } else {
            self.conn.sync()
        }
    }

    /// Takes every ticket of `steps` in one script; the ones that must wait go to
    /// `self.waiting`.
    fn take_tickets(&mut self, steps: &[Step]) -> io::Result<()> {
        let tickets: Vec<(usize, Class)> = steps
            .iter()
            .filter_map(|s| match *s {
                Step::Ticket { word, class } => Some((word, class)),
                Step::Bits { .. } => None,
            })
            .collect();
        if tickets.is_empty() {
            return Ok(());
        }
        let count = tickets.len().to_string();
        let mut args: Vec<&[u8]> = vec![b"EVALSHA", &self.take_sha, count.as_bytes()];
        args.extend(tickets.iter().map(|&(w, _)| self.keys[w].as_slice()));
        args.extend(tickets.iter().map(|(_, c)| offset(c.taken_shift()).as_bytes()));
        let reply = self.conn.call(&args)?;
        let snapshots = words_of(reply, tickets.len())?;
        self.waiting.clear();
        for (&(word, class), snap) in tickets.iter().zip(snapshots) {
            let (waits_for, snap) = (class.waits_for(), NodeWord(snap));
            // The add's own snapshot tells whether the way is free.
            if !snap.may_enter(waits_for, snap) {
                self.waiting.push((word, waits_for, snap));
            }
        }
        Ok(())
    }

    /// Re-reads every waiting word (one `MGET`) and keeps the tickets that still wait.
    #[cold]
    fn poll_waiting(&mut self) -> io::Result<()> {
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(self.waiting.iter().map(|&(w, ..)| self.keys[w].as_slice()));
        let reply = self.conn.call(&args)?;
        let now = words_of(reply, self.waiting.len())?;
        let mut now = now.into_iter();
        self.waiting.retain(|&(_, waits_for, snap)| {
            let now = NodeWord(now.next().unwrap_or_default());
            !snap.may_enter(waits_for, now)
        });
        Ok(())
    }

    /// Sets the leaf bits of `steps` (none, one or two leaves) all at once, retrying until
    /// they are all clear.
    fn set_bits(&mut self, steps: &[Step]) -> io::Result<()> {
        let bits: Vec<(usize, (String, String))> = steps
            .iter()
            .filter_map(|s| match *s {
                Step::Bits { word, mask } => Some((word, halves(mask))),
                Step::Ticket { .. } => None,
            })
            .collect();
        if bits.is_empty() {
            return Ok(());
        }
        let count = bits.len().to_string();
        let mut args: Vec<&[u8]> = vec![b"EVALSHA", &self.set_bits_sha, count.as_bytes()];
        args.extend(bits.iter().map(|(w, _)| self.keys[*w].as_slice()));
        for (_, (hi, lo)) in &bits {
            args.push(hi.as_bytes());
            args.push(lo.as_bytes());
        }
        // The round trip is the back-off.
        while self.conn.int(&args)? != 1 {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_big_endian_and_padded() {
        assert_eq!(word_of(&[]).unwrap(), 0);
        // `BITFIELD ... INCRBY u8 0 1` writes one byte: the word's top field.
        assert_eq!(word_of(&[1]).unwrap(), 1 << 56);
        assert_eq!(word_of(&[0, 0, 0, 0, 0, 0, 0, 2]).unwrap(), 2);
        assert!(word_of(&[0; 9]).is_err());
        // The field at bit 0 is the last byte: offset 56.
        assert_eq!(offset(0), "56");
        assert_eq!(offset(56), "0");
        assert_eq!(halves(0xF << 60 | 0b11), ("4026531840".into(), "3".into()));
    }

    #[test]
    fn snapshots_read_from_an_array_of_strings() {
        let reply =
            Reply::Array(vec![Reply::Bulk(Some(vec![0, 0, 0, 0, 0, 0, 1, 0])), Reply::Bulk(None)]);
        assert_eq!(words_of(reply, 2).unwrap(), [256, 0]);
        assert!(words_of(Reply::Array(vec![]), 1).is_err());
        assert!(words_of(Reply::Int(3), 1).is_err());
    }
}
