//! A private `redis-server` and a small blocking RESP2 client: the remote memory of the
//! client-sided peers `dslr-redis` ([`super::dslr_redis`]) and `citron-redis`
//! ([`super::citron_redis`]).
//!
//! [`RedisServer`] starts a private `redis-server` on `127.0.0.1` and a free port, without
//! persistence (`--save '' --appendonly no`), and stops it on drop. When the binary is
//! missing the suites say how to install it (`bash ci/install-peers.sh`) and skip the
//! variants.
//!
//! [`RespConn`] counts its **round trips**: every time it writes and then waits for a
//! reply. Commands only queued or written ([`RespConn::send`], [`RespConn::flush`]) cost
//! none until a later call reads their replies together with its own. On RDMA each
//! one-sided operation of these peers would be one round trip; over Redis a batch of them
//! in one write is one.
//!
//! # Why our own RESP client
//!
//! The peers need a handful of commands and four reply types over one blocking connection
//! per client. RESP2 for that is the ~150 lines below (unit-tested on byte buffers), with
//! no new dependency and no async runtime between the client thread and its socket; the
//! `redis` crate would add a dependency tree (and its own connection layer) to measure.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    /// `*2\r\n...`: the replies of a script or of `MGET`, `BITFIELD`.
    Array(Vec<Reply>),
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

/// An `InvalidData` error: a reply outside what was expected.
pub(super) fn bad(what: impl Into<String>) -> io::Error {
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
        b'*' => {
            let len = int(body)?;
            // A nil array (`*-1`) is not sent by the commands used here.
            let len = usize::try_from(len).map_err(|_| bad("nil RESP array"))?;
            (0..len).map(|_| read_reply(r)).collect::<io::Result<_>>().map(Reply::Array)
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
    /// Round trips so far (see the module docs).
    round_trips: u64,
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
        Ok(RespConn { reader, writer: s, buf: Vec::new(), unread: 0, round_trips: 0 })
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
        if self.unread > 0 {
            self.round_trips += 1;
        }
        self.flush()?;
        self.read_unread()
    }

    /// Round trips so far: writes followed by a wait for a reply.
    pub fn round_trips(&self) -> u64 {
        self.round_trips
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
        self.round_trips += 1;
        self.flush()?;
        let queued = self.read_unread();
        let r = read_reply(&mut self.reader)?;
        queued?;
        match r {
            Reply::Error(e) => Err(io::Error::other(format!("redis: {e}"))),
            r => Ok(r),
        }
    }

    /// [`RespConn::call`] for an integer reply.
    ///
    /// # Errors
    ///
    /// As `call`, and when the reply is not an integer.
    pub fn int(&mut self, args: &[&[u8]]) -> io::Result<i64> {
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

    /// Starts `redis-server` for the test `test`; when it is not installed, says so loudly
    /// on stderr with the install command and returns `None` — except in CI (`CI` set),
    /// where the peers are installed by `.ci/run` and a missing server is a failure.
    ///
    /// # Panics
    ///
    /// In CI without `redis-server`, and whenever an installed server does not start.
    pub fn start_or_skip(test: &str) -> Option<RedisServer> {
        match RedisServer::start("redis-server") {
            Ok(server) => Some(server),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !in_ci() => {
                eprintln!(
                    "\n************************************************************\n\
                     SKIPPED {test}: {INSTALL_HINT}\n\
                     ************************************************************\n"
                );
                None
            }
            Err(e) => panic!("{test}: cannot start redis-server ({e}); {INSTALL_HINT}"),
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

/// Whether this runs in CI (`CI` set, not `false` or `0`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `utime + stime` of a `/proc/.../stat` line, in nanoseconds.
pub fn proc_stat_cpu_ns(stat: &str) -> Option<u64> {
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
        let mut input: &[u8] = b"+PONG\r\n:-7\r\n$3\r\n1\r\n\r\n$-1\r\n-ERR no\r\n%1\r\n";
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Simple("PONG".into()));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Int(-7));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Bulk(Some(b"1\r\n".to_vec())));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Bulk(None));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Error("ERR no".into()));
        assert_eq!(read_reply(&mut input).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(read_reply(&mut input).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let mut array: &[u8] = b"*3\r\n:1\r\n$0\r\n\r\n$-1\r\n";
        let expected = vec![Reply::Int(1), Reply::Bulk(Some(Vec::new())), Reply::Bulk(None)];
        assert_eq!(read_reply(&mut array).unwrap(), Reply::Array(expected));
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
