//! `dslr-redis`: the DSLR algorithm of [`super::dslr_shm`] over a real `redis-server`, each
//! segment's ticket word one Redis integer key.
//!
//! The one-sided operations map onto Redis commands: fetch-and-add is `INCRBY` (which
//! returns the new value; the snapshot is the new value minus the delta), the undo of a
//! bogus ticket `DECRBY`, a re-read `GET` (a missing key reads 0) and the reset
//! compare-and-swap a three-line Lua script run by `EVAL` (atomic in Redis). The packed
//! word never sets bit 63 (see [`super::dslr_shm`]), so it is a valid Redis integer.
//!
//! The server and the RESP client are [`super::redis`]'s.
//!
//! # Trade-offs
//!
//! Every ticket and re-read is one round trip (segments must be entered in order, so
//! lock steps cannot be pipelined). An unlock writes the `INCRBY`s of all its segments in
//! one write and reads their replies (one round trip, like the `rangelockd` client's
//! `UNLOCK`); with [`RedisWords::set_pipelined_releases`] it returns after the write, and
//! the client's next command reads their replies and reports an error among them — the
//! same allowance the `rangelockd` client gets in `server-oltp`
//! (`LockGuard::unlock_pipelined`). Waiting re-reads back to back — the round trip is
//! the back-off.

use std::io;
use std::net::SocketAddr;

use super::dslr_shm::TicketWords;
use super::redis::{bad, Reply, RespConn};

/// Compare-and-swap of one ticket word. The values are compared as the decimal strings
/// Redis and this client both print them in (canonical, no leading zeros): Lua's numbers
/// are doubles, and `tonumber` would round a word above 2^53 and let a CAS succeed on a
/// word whose low fields had changed.
const CAS_SCRIPT: &[u8] = b"if (redis.call('GET', KEYS[1]) or '0') == ARGV[1] then \
redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0";

/// The ticket words as Redis keys `dslr:<segment>`, over one client's connection.
#[derive(Debug)]
pub struct RedisWords {
    conn: RespConn,
    keys: Vec<Vec<u8>>,
    /// Whether an unlock returns without reading the replies of its releases.
    pipelined_releases: bool,
}

impl RedisWords {
    /// The report name of the peer.
    pub const NAME: &'static str = "dslr-redis";

    /// Connects to the server at `addr`, for `segments` words.
    ///
    /// # Errors
    ///
    /// When the connection fails.
    pub fn connect(addr: SocketAddr, segments: usize) -> io::Result<Self> {
        let conn = RespConn::connect(addr)?;
        let keys = (0..segments).map(|s| format!("dslr:{s}").into_bytes()).collect();
        Ok(RedisWords { conn, keys, pipelined_releases: false })
    }

    /// Round trips of this client's connection so far.
    pub fn round_trips(&self) -> u64 {
        self.conn.round_trips()
    }

    /// Whether an unlock writes its release `INCRBY`s (one write) and returns without
    /// reading their replies — the client's next command reads them and reports an error
    /// among them — instead of reading them at once (one round trip for all of them).
    /// Off by default.
    pub fn set_pipelined_releases(&mut self, on: bool) {
        self.pipelined_releases = on;
    }

    fn num(delta: u64) -> io::Result<i64> {
        i64::try_from(delta).map_err(|_| bad("delta beyond a Redis integer"))
    }
}

impl TicketWords for RedisWords {
    type Error = io::Error;

    fn fetch_add(&mut self, seg: usize, delta: u64) -> io::Result<u64> {
        let d = Self::num(delta)?.to_string();
        let new = self.conn.int(&[b"INCRBY", &self.keys[seg], d.as_bytes()])?;
        Ok((new as u64).wrapping_sub(delta))
    }

    fn fetch_sub(&mut self, seg: usize, delta: u64) -> io::Result<()> {
        let d = Self::num(delta)?.to_string();
        self.conn.int(&[b"DECRBY", &self.keys[seg], d.as_bytes()]).map(drop)
    }

    fn load(&mut self, seg: usize) -> io::Result<u64> {
        match self.conn.call(&[b"GET", &self.keys[seg]])? {
            Reply::Bulk(None) => Ok(0),
            Reply::Bulk(Some(v)) => std::str::from_utf8(&v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| bad("ticket word is not an integer")),
            r => Err(bad(format!("expected a bulk reply, got {r:?}"))),
        }
    }

    fn compare_exchange(&mut self, seg: usize, current: u64, new: u64) -> io::Result<bool> {
        let (c, n) = (Self::num(current)?.to_string(), Self::num(new)?.to_string());
        let args: [&[u8]; 6] =
            [b"EVAL", CAS_SCRIPT, b"1", &self.keys[seg], c.as_bytes(), n.as_bytes()];
        Ok(self.conn.int(&args)? == 1)
    }

    fn backoff(&mut self, _round: u32) {}

    fn release_add(&mut self, seg: usize, delta: u64) -> io::Result<()> {
        let d = Self::num(delta)?.to_string();
        self.conn.send(&[b"INCRBY", &self.keys[seg], d.as_bytes()]);
        Ok(())
    }

    fn end_unlock(&mut self) -> io::Result<()> {
        if self.pipelined_releases {
            self.conn.flush()
        } else {
            self.conn.sync()
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.conn.flush()
    }
}
