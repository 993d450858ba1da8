//! `dslr-redis`: the DSLR algorithm of [`super::dslr_shm`] over a real `redis-server`, each
//! segment's ticket word one Redis integer key.
//!
//! The one-sided operations map onto Redis commands: fetch-and-add is `INCRBY` (which
//! returns the new value; the snapshot is the new value minus the delta), the undo of a
//! bogus ticket `DECRBY`, a re-read `GET` (a missing key reads 0) and the reset
//! compare-and-swap a three-line Lua script run by `EVAL` (atomic in Redis). The packed
//! word never sets bit 63 (see [`super::dslr_shm`]), so it is a valid Redis integer.
//!
//! [`RedisServer`] starts a private `redis-server` on `127.0.0.1` and a free port, without
//! persistence (`--save '' --appendonly no`), and stops it on drop. When the binary is
//! missing the suites say how to install it (`bash ci/install-peers.sh`) and skip the
//! variant.
//!
//! # Why our own RESP client
//!
//! The peer needs five commands and three reply types over one blocking connection per
//! client. RESP2 for that is the ~100 lines below (unit-tested on byte buffers), with no new
//! dependency and no async runtime between the client thread and its socket; the `redis`
//! crate would add a dependency tree (and its own connection layer) to measure.
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

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::dslr_shm::TicketWords;

/// The hint printed when `redis-server` is missing.
pub const INSTALL_HINT: &str = "redis-server not found; install it with `bash ci/install-peers.sh`";

/// A reply of the RESP2 subset the peer uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Int(i64),
    /// `$3\r\nfoo` or the nil bulk `$-1`.
    Bulk(Option<Vec<u8>>),
}

/// Encodes a command as a RESP array of bulk strings.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Reads one reply.
///
/// # Errors
///
/// On I/O errors, end of stream, or a reply outside the subset.
pub fn read_reply(r: &mut impl BufRead) -> io::Result<Reply> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\r\n") {
        return Err(if line.is_empty() {
            io::Error::new(io::ErrorKind::UnexpectedEof, "redis closed the connection")
        } else {
            bad("unterminated RESP line")
        });
    }
    let body = std::str::from_utf8(&line[1..line.len() - 2]).map_err(|_| bad("non-UTF-8"))?;
    let int = |s: &str| s.parse::<i64>().map_err(|_| bad(format!("bad RESP integer {s:?}")));
    match line[0] {
        b'+' => Ok(Reply::Simple(body.to_owned())),
        b'-' => Ok(Reply::Error(body.to_owned())),
        b':' => Ok(Reply::Int(int(body)?)),
        b'$' => {
            let len = int(body)?;
            if len < 0 {
                return Ok(Reply::Bulk(None));
            }
            let mut data = vec![0; len as usize + 2];
            r.read_exact(&mut data)?;
            if !data.ends_with(b"\r\n") {
                return Err(bad("unterminated bulk string"));
            }
            data.truncate(len as usize);
            Ok(Reply::Bulk(Some(data)))
        }
        other => Err(bad(format!("unsupported RESP type {:?}", other as char))),
    }
}

/// One blocking connection to Redis.
///
/// Commands sent with [`RespConn::send`] are pipelined: their replies are read (and an
/// error reply among them reported) by the next [`RespConn::call`].
#[derive(Debug)]
pub struct RespConn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    buf: Vec<u8>,
    /// Replies of sent commands nobody has read yet.
    unread: usize,
}

impl RespConn {
    /// Connects (with `TCP_NODELAY`).
    ///
    /// # Errors
    ///
    /// When the connection fails.
    pub fn connect(addr: SocketAddr) -> io::Result<Self> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        let reader = BufReader::new(s.try_clone()?);
        Ok(RespConn { reader, writer: s, buf: Vec::new(), unread: 0 })
    }

    /// Queues one command without waiting for its reply; [`RespConn::flush`] sends the
    /// queue, the next [`RespConn::call`] sends it too and checks the replies.
    pub fn send(&mut self, args: &[&[u8]]) {
        encode(&mut self.buf, args);
        self.unread += 1;
    }

    /// Writes the queued commands.
    ///
    /// # Errors
    ///
    /// On I/O errors.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.writer.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes the queued commands and reads their replies (one round trip).
    ///
    /// # Errors
    ///
    /// On I/O errors or an error reply to a queued command.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.read_unread()
    }

    /// Reads the replies of the commands sent before; the first error reply among them
    /// becomes the error.
    fn read_unread(&mut self) -> io::Result<()> {
        let mut queued_error = None;
        while self.unread > 0 {
            if let Reply::Error(e) = read_reply(&mut self.reader)? {
                queued_error.get_or_insert(e);
            }
            self.unread -= 1;
        }
        match queued_error {
            Some(e) => Err(io::Error::other(format!("redis (pipelined command): {e}"))),
            None => Ok(()),
        }
    }

    /// Sends one command (after the queued ones, in the same write) and reads its reply;
    /// a Redis error reply — to it or to a queued command — becomes an `io::Error`.
    ///
    /// # Errors
    ///
    /// On I/O errors or an error reply.
    pub fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        encode(&mut self.buf, args);
        self.flush()?;
        let queued = self.read_unread();
        let r = read_reply(&mut self.reader)?;
        queued?;
        match r {
            Reply::Error(e) => Err(io::Error::other(format!("redis: {e}"))),
            r => Ok(r),
        }
    }

    fn int(&mut self, args: &[&[u8]]) -> io::Result<i64> {
        match self.call(args)? {
            Reply::Int(i) => Ok(i),
            r => Err(bad(format!("expected an integer reply, got {r:?}"))),
        }
    }
}

impl Drop for RespConn {
    fn drop(&mut self) {
        // Queued commands (coalesced releases) must not be lost: another client may wait
        // for them.
        let _ = self.flush();
    }
}

const CAS_SCRIPT: &[u8] = b"local v = tonumber(redis.call('GET', KEYS[1]) or '0') \
if v == tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0";

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

/// A private `redis-server` on `127.0.0.1`, killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    addr: SocketAddr,
}

impl RedisServer {
    /// Starts `binary` (normally `"redis-server"`) on a free port without persistence and
    /// waits until it answers `PING`.
    ///
    /// # Errors
    ///
    /// `NotFound` when the binary is missing; other errors when it does not come up
    /// within 5 s.
    pub fn start(binary: &str) -> io::Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut server = RedisServer { child, addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)) };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let ping = RespConn::connect(server.addr).and_then(|mut c| c.call(&[b"PING"]));
            if let Ok(Reply::Simple(s)) = &ping {
                if s == "PONG" {
                    return Ok(server);
                }
            }
            if let Some(status) = server.child.try_wait()? {
                return Err(io::Error::other(format!("redis-server exited: {status}")));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("redis-server not ready: {ping:?}")));
            }
            // Polling a child process for readiness; not test synchronisation.
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Whether `binary` can be run (`--version`).
    pub fn available(binary: &str) -> bool {
        Command::new(binary)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// CPU time (user + system) the server process used so far, in nanoseconds, from
    /// `/proc/<pid>/stat` (clock-tick resolution).
    pub fn cpu_ns(&self) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        proc_stat_cpu_ns(&stat)
    }
}

/// `utime + stime` of a `/proc/.../stat` line, in nanoseconds.
pub(crate) fn proc_stat_cpu_ns(stat: &str) -> Option<u64> {
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_ascii_whitespace().skip(11);
    let ticks = f.next()?.parse::<u64>().ok()? + f.next()?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some(ticks * (1_000_000_000 / hz))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_commands() {
        let mut out = Vec::new();
        encode(&mut out, &[b"INCRBY", b"dslr:1", b"42"]);
        assert_eq!(out, b"*3\r\n$6\r\nINCRBY\r\n$6\r\ndslr:1\r\n$2\r\n42\r\n");
    }

    #[test]
    fn parses_replies() {
        let mut input: &[u8] = b"+PONG\r\n:-7\r\n$3\r\n1\r\n\r\n$-1\r\n-ERR no\r\n*1\r\n";
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Simple("PONG".into()));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Int(-7));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Bulk(Some(b"1\r\n".to_vec())));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Bulk(None));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Error("ERR no".into()));
        assert_eq!(read_reply(&mut input).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(read_reply(&mut input).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let mut cut: &[u8] = b"$5\r\nab";
        assert!(read_reply(&mut cut).is_err());
    }

    #[test]
    fn reads_cpu_from_proc_stat() {
        let line = "42 (redis (x) y) S 1 2 3 4 5 6 7 8 9 10 300 200 0 0";
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let hz = 1_000_000_000 / u64::try_from(hz).unwrap();
        assert_eq!(proc_stat_cpu_ns(line), Some(500 * hz));
    }

    #[test]
    fn missing_binary_is_not_found() {
        let err = RedisServer::start("rangelock-no-such-redis-server").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!RedisServer::available("rangelock-no-such-redis-server"));
    }
}
