//! A reference **fencing store**: a resource that checks fencing tokens the way
//! `docs/CLUSTER.md` §2 asks ("the fencing contract"), used by the nemesis test and by
//! `rangelock cluster fencing-store`.
//!
//! The store owns a file and an interval map of the unit space: each unit remembers the
//! token and the writer of the last write accepted for it. Writes are appended to the
//! file, one line each, in the format of the `W` request below; a store started on an
//! existing file replays it first.
//!
//! # The rule
//!
//! A write of `[start, end)` with token `t` is accepted only if `t` is **not lower** than
//! the token of every earlier accepted write that overlaps the range (every overlapping
//! segment is looked at, not only the newest or the first). An equal token is accepted:
//! a holder writes several times with its guard's token, and a reclaimed lock keeps its
//! token at the new owner. Tokens are compared per partition because a guard writes
//! **piece by piece**: each piece lies inside one partition and carries that partition's
//! token, so every segment the store holds lies inside one partition too, and a write
//! only ever meets tokens of its own partition. (The store does not know the
//! partitioning: a client that sends a write spanning partitions breaks the contract.)
//!
//! Tokens are unique per grant, so an overlapping earlier accepted write with the
//! **same** token from a **different** writer means two holders had one grant: that is a
//! **violation** of mutual exclusion. The store cannot undo it; it accepts the write,
//! counts the violation and logs it (`tracing` at `error`).
//!
//! # Protocol
//!
//! TCP, one request per line, one answer line per request, in order; fields are
//! separated by single spaces; numbers are decimal `u64`; a writer id is 1 to 64 bytes
//! without whitespace.
//!
//! | request | answer |
//! |---|---|
//! | `W <start> <end> <token> <writer>` | `OK`, or `STALE <highest overlapping token>` (the write is not applied) |
//! | `V <start> <end> <writer>` | `OK` if every unit of the range was last written by `writer`, else `BAD <other writer>` (`BAD -` for a unit never written) |
//! | `S` | `accepted <n> stale <n> violations <n>` |
//!
//! A request that does not parse gets `ERR <reason>` and the connection stays open.
//! `start < end` is required.
//!
//! ```no_run
//! # async fn demo() -> Result<(), rangelock_cluster::fencing::FencingError> {
//! use rangelock_cluster::fencing::{FencingClient, FencingStore, Write};
//!
//! let store = FencingStore::bind("127.0.0.1:0", "/tmp/fenced.log").await?;
//! let addr = store.local_addr();
//! tokio::spawn(store.serve(std::future::pending()));
//! let mut c = FencingClient::connect(addr).await?;
//! assert_eq!(c.write(0..10, 7, "w1").await?, Write::Accepted);
//! assert_eq!(c.write(5..6, 6, "w2").await?, Write::Stale { highest: 7 });
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};

/// The longest writer id, in bytes.
pub const MAX_WRITER_LEN: usize = 64;

/// The longest request or answer line the store and the client accept, in bytes.
const MAX_LINE: usize = 256;

/// Why a fencing-store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FencingError {
    /// Binding, connecting or talking to the store failed.
    #[error("fencing store {what}: {source}")]
    Io {
        /// What was being done (e.g. `connect to 127.0.0.1:7000`).
        what: String,
        /// The error.
        source: io::Error,
    },
    /// The store's file could not be opened, read or written.
    #[error("fencing store file {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A line of the store's file does not parse.
    #[error("fencing store file {}, line {line}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line number (from 1).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The store closed the connection.
    #[error("the fencing store closed the connection")]
    Closed,
    /// The store answered something this client does not understand (or `ERR`).
    #[error("unexpected answer from the fencing store: {0:?}")]
    Protocol(String),
    /// A request this client refuses to send (empty range, bad writer id).
    #[error("invalid fencing request: {0}")]
    Invalid(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> FencingError {
    let what = what.into();
    move |source| FencingError::Io { what, source }
}

/// The answer to a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Applied (`OK`).
    Accepted,
    /// Refused: an overlapping range was already written with a higher token
    /// (`STALE <highest>`).
    Stale {
        /// The highest token of the overlapping segments.
        highest: u64,
    },
}

/// The answer to a verification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Every unit of the range was last written by the writer asked about.
    Ok,
    /// Some unit was last written by `other` (`None`: never written).
    Bad {
        /// The other writer.
        other: Option<String>,
    },
}

/// The store's counters (`S`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Writes applied.
    pub accepted: u64,
    /// Writes refused as stale.
    pub stale: u64,
    /// Writes that met an earlier write with the same token from another writer.
    pub violations: u64,
}

impl fmt::Display for StoreStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "accepted {} stale {} violations {}", self.accepted, self.stale, self.violations)
    }
}

impl std::str::FromStr for StoreStats {
    type Err = String;

    fn from_str(s: &str) -> Result<StoreStats, String> {
        let f: Vec<&str> = s.split(' ').collect();
        match f.as_slice() {
            ["accepted", a, "stale", st, "violations", v] => {
                let n = |x: &str| x.parse::<u64>().map_err(|e| format!("{x:?}: {e}"));
                Ok(StoreStats { accepted: n(a)?, stale: n(st)?, violations: n(v)? })
            }
            _ => Err(format!("not a stats line: {s:?}")),
        }
    }
}

/// A segment of the map: `[start, end)` last written with `token` by `writer`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Segment {
    end: u64,
    token: u64,
    writer: Arc<str>,
}

/// The result of [`FencingMap::write`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Whether the write was applied.
    pub write: Write,
    /// Writers other than this one that wrote an overlapping range with the same token
    /// (each one is a violation; the write is still applied).
    pub same_token_writers: Vec<String>,
}

/// The store's state without the I/O: an interval map of disjoint segments, each with
/// the token and writer of the last write accepted for it, and the rules of the module
/// docs.
#[derive(Debug, Default)]
pub struct FencingMap {
    /// Disjoint segments by start.
    segments: BTreeMap<u64, Segment>,
    stats: StoreStats,
}

impl FencingMap {
    /// An empty map.
    pub fn new() -> FencingMap {
        FencingMap::default()
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// Starts of the segments that overlap `[start, end)`, in order.
    fn overlapping(&self, start: u64, end: u64) -> Vec<u64> {
        let mut out = Vec::new();
        // The segment that begins before `start` may reach into the range.
        if let Some((&s, seg)) = self.segments.range(..start).next_back() {
            if seg.end > start {
                out.push(s);
            }
        }
        out.extend(self.segments.range(start..end).map(|(&s, _)| s));
        out
    }

    /// Applies the rule to a write of `range` with `token` by `writer` (see the module
    /// docs); `range` must be non-empty.
    pub fn write(&mut self, range: Range<u64>, token: u64, writer: &str) -> WriteOutcome {
        debug_assert!(range.start < range.end);
        let (start, end) = (range.start, range.end);
        let over = self.overlapping(start, end);
        let highest = over.iter().map(|s| self.segments[s].token).max();
        if let Some(highest) = highest.filter(|&h| h > token) {
            self.stats.stale += 1;
            return WriteOutcome { write: Write::Stale { highest }, same_token_writers: vec![] };
        }
        let mut same = Vec::new();
        for s in &over {
            let seg = &self.segments[s];
            if seg.token == token
                && &*seg.writer != writer
                && !same.iter().any(|w| w == &*seg.writer)
            {
                same.push(seg.writer.to_string());
            }
        }
        if !same.is_empty() {
            self.stats.violations += 1;
        }
        self.stats.accepted += 1;
        // Cut the overlapped segments: keep what lies left of `start` and right of `end`.
        for s in over {
            let seg = self.segments.remove(&s).expect("listed");
            if s < start {
                self.segments.insert(s, Segment { end: start, ..seg.clone() });
            }
            if seg.end > end {
                self.segments.insert(end, Segment { end: seg.end, ..seg });
            }
        }
        self.segments.insert(start, Segment { end, token, writer: writer.into() });
        WriteOutcome { write: Write::Accepted, same_token_writers: same }
    }

    /// Whether every unit of `range` was last written by `writer`.
    pub fn verify(&self, range: Range<u64>, writer: &str) -> Verify {
        let mut at = range.start;
        for s in self.overlapping(range.start, range.end) {
            let seg = &self.segments[&s];
            if s > at {
                return Verify::Bad { other: None }; // a gap: never written
            }
            if &*seg.writer != writer {
                return Verify::Bad { other: Some(seg.writer.to_string()) };
            }
            at = seg.end;
        }
        if at < range.end {
            Verify::Bad { other: None }
        } else {
            Verify::Ok
        }
    }

    /// The segments, in order: `(range, token, writer)` (for tests and debugging).
    pub fn segments(&self) -> Vec<(Range<u64>, u64, String)> {
        self.segments.iter().map(|(&s, g)| (s..g.end, g.token, g.writer.to_string())).collect()
    }
}

/// A parsed request line.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Request {
    Write { range: Range<u64>, token: u64, writer: String },
    Verify { range: Range<u64>, writer: String },
    Stats,
}

fn check_writer(w: &str) -> Result<(), String> {
    if w.is_empty() || w.len() > MAX_WRITER_LEN || w.chars().any(char::is_whitespace) {
        return Err(format!(
            "writer id {w:?} must be 1 to {MAX_WRITER_LEN} bytes without whitespace"
        ));
    }
    Ok(())
}

fn check_range(start: u64, end: u64) -> Result<Range<u64>, String> {
    if start < end {
        Ok(start..end)
    } else {
        Err(format!("empty range {start}..{end} (start < end is required)"))
    }
}

fn parse_request(line: &str) -> Result<Request, String> {
    let f: Vec<&str> = line.split(' ').collect();
    let n = |x: &str| x.parse::<u64>().map_err(|e| format!("{x:?} is not a number: {e}"));
    match f.as_slice() {
        ["W", s, e, t, w] => {
            check_writer(w)?;
            Ok(Request::Write {
                range: check_range(n(s)?, n(e)?)?,
                token: n(t)?,
                writer: (*w).into(),
            })
        }
        ["V", s, e, w] => {
            check_writer(w)?;
            Ok(Request::Verify { range: check_range(n(s)?, n(e)?)?, writer: (*w).into() })
        }
        ["S"] => Ok(Request::Stats),
        _ => Err("expected W <start> <end> <token> <writer>, V <start> <end> <writer> or S".into()),
    }
}

/// The map and the file, behind one lock.
#[derive(Debug)]
struct State {
    map: FencingMap,
    file: std::fs::File,
    path: PathBuf,
}

impl State {
    fn handle(&mut self, line: &str) -> String {
        let req = match parse_request(line) {
            Ok(r) => r,
            Err(e) => return format!("ERR {e}"),
        };
        match req {
            Request::Write { range, token, writer } => {
                let out = self.map.write(range.clone(), token, &writer);
                match out.write {
                    Write::Accepted => {
                        for other in &out.same_token_writers {
                            tracing::error!(
                                start = range.start,
                                end = range.end,
                                token,
                                writer,
                                other,
                                "VIOLATION: two writers hold one token (one grant)"
                            );
                        }
                        use std::io::Write as _;
                        let rec = format!("W {} {} {token} {writer}\n", range.start, range.end);
                        if let Err(e) = self.file.write_all(rec.as_bytes()) {
                            tracing::error!(path = %self.path.display(), error = %e, "cannot append");
                            return format!("ERR cannot append to the file: {e}");
                        }
                        "OK".into()
                    }
                    Write::Stale { highest } => format!("STALE {highest}"),
                }
            }
            Request::Verify { range, writer } => match self.map.verify(range, &writer) {
                Verify::Ok => "OK".into(),
                Verify::Bad { other } => format!("BAD {}", other.as_deref().unwrap_or("-")),
            },
            Request::Stats => self.map.stats().to_string(),
        }
    }
}

/// The fencing store server (see the module docs). [`FencingStore::bind`] opens the file
/// and the listener; [`FencingStore::serve`] answers clients until a shutdown future
/// completes.
#[derive(Debug)]
pub struct FencingStore {
    listener: TcpListener,
    state: Arc<Mutex<State>>,
}

impl FencingStore {
    /// Opens (or creates) `file`, replays the writes it holds, and listens on `listen`.
    pub async fn bind(
        listen: impl ToSocketAddrs + fmt::Debug,
        file: impl AsRef<Path>,
    ) -> Result<FencingStore, FencingError> {
        let path = file.as_ref().to_owned();
        let map = replay(&path)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| FencingError::File { path: path.clone(), source })?;
        let what = format!("listen on {listen:?}");
        let listener = TcpListener::bind(listen).await.map_err(io_err(what))?;
        Ok(FencingStore { listener, state: Arc::new(Mutex::new(State { map, file, path })) })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).map.stats()
    }

    /// Answers clients until `shutdown` completes; each connection runs as a task of its
    /// own, and they end with it.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let mut tasks = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let state = self.state.clone();
                        tasks.spawn(async move {
                            if let Err(e) = session(stream, state).await {
                                tracing::debug!(%peer, error = %e, "fencing store session ended");
                            }
                        });
                    }
                    Err(e) => tracing::warn!(error = %e, "accept failed"),
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        tasks.shutdown().await;
    }
}

async fn session(stream: TcpStream, state: Arc<Mutex<State>>) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut line = String::new();
    loop {
        line.clear();
        if read_line_bounded(&mut r, &mut line).await? == 0 {
            return Ok(());
        }
        let req = line.trim_end_matches(['\n', '\r']);
        let mut answer = if line.len() > MAX_LINE {
            format!("ERR line longer than {MAX_LINE} bytes")
        } else {
            state.lock().unwrap_or_else(PoisonError::into_inner).handle(req)
        };
        answer.push('\n');
        w.write_all(answer.as_bytes()).await?;
    }
}

/// Reads one line, keeping at most a little more than [`MAX_LINE`] bytes of it (a longer
/// line is read to its end and refused by the caller).
async fn read_line_bounded(
    r: &mut BufReader<OwnedReadHalf>,
    line: &mut String,
) -> io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if line.len() <= MAX_LINE {
            line.push_str(&String::from_utf8_lossy(chunk));
        }
        r.consume(n);
        total += n;
        if done {
            return Ok(total);
        }
    }
}

/// Rebuilds the map from the writes a file holds (none if it does not exist).
fn replay(path: &Path) -> Result<FencingMap, FencingError> {
    let mut map = FencingMap::new();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(map),
        Err(source) => return Err(FencingError::File { path: path.to_owned(), source }),
    };
    for (i, line) in text.lines().enumerate() {
        let corrupt =
            |reason: String| FencingError::Corrupt { path: path.to_owned(), line: i + 1, reason };
        match parse_request(line).map_err(corrupt)? {
            Request::Write { range, token, writer } => {
                map.write(range, token, &writer);
            }
            _ => return Err(corrupt("not a write".into())),
        }
    }
    // Replayed writes are history, not this run's traffic.
    map.stats = StoreStats::default();
    Ok(map)
}

/// A client of the fencing store: one connection, one request at a time.
#[derive(Debug)]
pub struct FencingClient {
    addr: String,
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    line: String,
}

impl FencingClient {
    /// Connects to the store at `addr`.
    pub async fn connect(
        addr: impl ToSocketAddrs + fmt::Display,
    ) -> Result<FencingClient, FencingError> {
        let name = addr.to_string();
        let stream =
            TcpStream::connect(addr).await.map_err(io_err(format!("connect to {name}")))?;
        let _ = stream.set_nodelay(true);
        let (r, w) = stream.into_split();
        Ok(FencingClient { addr: name, r: BufReader::new(r), w, line: String::new() })
    }

    async fn call(&mut self, req: String) -> Result<&str, FencingError> {
        let what = || format!("request to {}", self.addr);
        self.w.write_all(req.as_bytes()).await.map_err(io_err(what()))?;
        self.line.clear();
        let n = read_line_bounded(&mut self.r, &mut self.line).await.map_err(io_err(what()))?;
        if n == 0 || !self.line.ends_with('\n') {
            return Err(FencingError::Closed);
        }
        Ok(self.line.trim_end_matches(['\n', '\r']))
    }

    /// `W`: writes `range` with `token` as `writer`.
    pub async fn write(
        &mut self,
        range: Range<u64>,
        token: u64,
        writer: &str,
    ) -> Result<Write, FencingError> {
        check_writer(writer).map_err(FencingError::Invalid)?;
        let range = check_range(range.start, range.end).map_err(FencingError::Invalid)?;
        let a = self.call(format!("W {} {} {token} {writer}\n", range.start, range.end)).await?;
        if a == "OK" {
            return Ok(Write::Accepted);
        }
        match a.strip_prefix("STALE ").map(str::parse) {
            Some(Ok(highest)) => Ok(Write::Stale { highest }),
            _ => Err(FencingError::Protocol(a.to_owned())),
        }
    }

    /// `V`: whether every unit of `range` was last written by `writer`.
    pub async fn verify(
        &mut self,
        range: Range<u64>,
        writer: &str,
    ) -> Result<Verify, FencingError> {
        check_writer(writer).map_err(FencingError::Invalid)?;
        let range = check_range(range.start, range.end).map_err(FencingError::Invalid)?;
        let a = self.call(format!("V {} {} {writer}\n", range.start, range.end)).await?;
        if a == "OK" {
            return Ok(Verify::Ok);
        }
        match a.strip_prefix("BAD ") {
            Some("-") => Ok(Verify::Bad { other: None }),
            Some(w) if !w.is_empty() => Ok(Verify::Bad { other: Some(w.to_owned()) }),
            _ => Err(FencingError::Protocol(a.to_owned())),
        }
    }

    /// `S`: the store's counters.
    pub async fn stats(&mut self) -> Result<StoreStats, FencingError> {
        let a = self.call("S\n".into()).await?;
        a.parse().map_err(|_| FencingError::Protocol(a.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(m: &mut FencingMap, r: Range<u64>, t: u64, w: &str) {
        let out = m.write(r.clone(), t, w);
        assert_eq!(out.write, Write::Accepted, "write {r:?} token {t} by {w}");
    }

    #[test]
    fn the_map_splits_segments_on_overlap() {
        let mut m = FencingMap::new();
        ok(&mut m, 0..100, 5, "a");
        ok(&mut m, 20..30, 6, "b");
        assert_eq!(
            m.segments(),
            vec![(0..20, 5, "a".into()), (20..30, 6, "b".into()), (30..100, 5, "a".into())]
        );
        // Covering several segments replaces them; the edges are cut.
        ok(&mut m, 10..40, 7, "c");
        assert_eq!(
            m.segments(),
            vec![(0..10, 5, "a".into()), (10..40, 7, "c".into()), (40..100, 5, "a".into())]
        );
        // Exactly one segment, and one touching but not overlapping.
        ok(&mut m, 10..40, 7, "c");
        ok(&mut m, 100..110, 1, "d");
        assert_eq!(m.segments().len(), 4);
        // Across the whole space, including u64::MAX - 1.
        ok(&mut m, 0..u64::MAX, 9, "e");
        assert_eq!(m.segments(), vec![(0..u64::MAX, 9, "e".into())]);
        assert_eq!(m.stats(), StoreStats { accepted: 6, stale: 0, violations: 0 });
    }

    #[test]
    fn an_equal_token_is_accepted_and_a_lower_one_rejected() {
        let mut m = FencingMap::new();
        ok(&mut m, 10..20, 100, "a");
        ok(&mut m, 10..20, 100, "a");
        ok(&mut m, 12..15, 100, "a");
        assert_eq!(m.write(10..20, 99, "b").write, Write::Stale { highest: 100 });
        assert_eq!(m.write(19..25, 99, "b").write, Write::Stale { highest: 100 });
        // A rejected write changes nothing.
        assert_eq!(m.verify(10..20, "a"), Verify::Ok);
        assert_eq!(m.stats(), StoreStats { accepted: 3, stale: 2, violations: 0 });
    }

    #[test]
    fn rejection_looks_at_every_overlapping_segment() {
        let mut m = FencingMap::new();
        ok(&mut m, 0..10, 1, "a");
        ok(&mut m, 10..20, 50, "b"); // the middle one is the highest
        ok(&mut m, 20..30, 2, "c");
        ok(&mut m, 30..40, 3, "d");
        // The first and the last overlapping segments are lower, the middle one is not.
        assert_eq!(m.write(5..35, 4, "e").write, Write::Stale { highest: 50 });
        assert_eq!(m.write(19..21, 49, "e").write, Write::Stale { highest: 50 });
        // The highest is the one reported.
        ok(&mut m, 35..36, 60, "f");
        assert_eq!(m.write(0..40, 55, "e").write, Write::Stale { highest: 60 });
        ok(&mut m, 0..40, 60, "f");
    }

    #[test]
    fn non_overlapping_ranges_are_independent() {
        let mut m = FencingMap::new();
        ok(&mut m, 100..200, 1_000, "a");
        // Touching on either side is not overlapping ([start, end)).
        ok(&mut m, 0..100, 1, "b");
        ok(&mut m, 200..300, 2, "c");
        ok(&mut m, u64::MAX - 1..u64::MAX, 0, "d");
        assert_eq!(m.verify(0..100, "b"), Verify::Ok);
        assert_eq!(m.verify(100..200, "a"), Verify::Ok);
        assert_eq!(m.verify(200..300, "c"), Verify::Ok);
    }

    #[test]
    fn the_same_token_from_another_writer_is_a_violation_but_applied() {
        let mut m = FencingMap::new();
        ok(&mut m, 0..10, 7, "a");
        let out = m.write(5..15, 7, "b");
        assert_eq!(out.write, Write::Accepted);
        assert_eq!(out.same_token_writers, vec!["a".to_owned()]);
        assert_eq!(m.stats().violations, 1);
        // The same writer again is not one; a higher token is not one.
        assert!(m.write(5..15, 7, "b").same_token_writers.is_empty());
        assert!(m.write(0..15, 8, "c").same_token_writers.is_empty());
        assert_eq!(m.stats(), StoreStats { accepted: 4, stale: 0, violations: 1 });
    }

    #[test]
    fn verify_names_the_other_writer_or_a_gap() {
        let mut m = FencingMap::new();
        ok(&mut m, 0..10, 1, "a");
        ok(&mut m, 10..20, 1, "a");
        ok(&mut m, 30..40, 1, "a");
        assert_eq!(m.verify(0..20, "a"), Verify::Ok);
        assert_eq!(m.verify(5..15, "a"), Verify::Ok);
        assert_eq!(m.verify(5..15, "b"), Verify::Bad { other: Some("a".into()) });
        assert_eq!(m.verify(15..35, "a"), Verify::Bad { other: None });
        assert_eq!(m.verify(35..45, "a"), Verify::Bad { other: None });
        assert_eq!(m.verify(50..60, "a"), Verify::Bad { other: None });
        ok(&mut m, 12..13, 2, "b");
        assert_eq!(m.verify(0..20, "a"), Verify::Bad { other: Some("b".into()) });
    }

    #[test]
    fn requests_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse_request("W 1 2 3 w").unwrap(),
            Request::Write { range: 1..2, token: 3, writer: "w".into() }
        );
        assert_eq!(
            parse_request("V 1 2 w").unwrap(),
            Request::Verify { range: 1..2, writer: "w".into() }
        );
        assert_eq!(parse_request("S").unwrap(), Request::Stats);
        for bad in
            ["", "W 1 2 3", "W 2 2 3 w", "W 3 2 3 w", "W x 2 3 w", "V 1 2", "S 1", "W  1 2 3 w"]
        {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
        assert!(parse_request(&format!("V 1 2 {}", "w".repeat(65))).is_err());
        let s = StoreStats { accepted: 3, stale: 2, violations: 1 };
        assert_eq!(s.to_string().parse::<StoreStats>().unwrap(), s);
    }

    #[tokio::test]
    async fn the_server_answers_the_protocol_and_replays_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.log");
        let store = FencingStore::bind("127.0.0.1:0", &path).await.unwrap();
        let addr = store.local_addr();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(store.serve(async move {
            let _ = stop_rx.await;
        }));
        let mut c = FencingClient::connect(addr).await.unwrap();
        assert_eq!(c.write(0..10, 7, "w1").await.unwrap(), Write::Accepted);
        assert_eq!(c.write(5..6, 6, "w2").await.unwrap(), Write::Stale { highest: 7 });
        assert_eq!(c.verify(0..10, "w1").await.unwrap(), Verify::Ok);
        assert_eq!(c.verify(0..11, "w1").await.unwrap(), Verify::Bad { other: None });
        assert_eq!(c.write(9..12, 7, "w3").await.unwrap(), Write::Accepted); // a violation
        assert_eq!(c.verify(0..10, "w1").await.unwrap(), Verify::Bad { other: Some("w3".into()) });
        assert_eq!(c.stats().await.unwrap(), StoreStats { accepted: 2, stale: 1, violations: 1 });
        // A bad line is answered and the connection stays usable.
        assert!(matches!(c.call("W 1\n".into()).await.unwrap(), a if a.starts_with("ERR ")));
        let long = format!("V 1 2 {}\n", "x".repeat(1000));
        assert!(c.call(long).await.unwrap().starts_with("ERR line longer"));
        assert!(matches!(c.write(1..1, 1, "w").await, Err(FencingError::Invalid(_))));
        assert_eq!(c.stats().await.unwrap().accepted, 2);
        stop_tx.send(()).unwrap();
        server.await.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "W 0 10 7 w1\nW 9 12 7 w3\n");

        // A new store on the same file knows the old writes.
        let store = FencingStore::bind("127.0.0.1:0", &path).await.unwrap();
        let addr = store.local_addr();
        tokio::spawn(store.serve(std::future::pending()));
        let mut c = FencingClient::connect(addr).await.unwrap();
        assert_eq!(c.write(0..1, 6, "w4").await.unwrap(), Write::Stale { highest: 7 });
        assert_eq!(c.verify(9..12, "w3").await.unwrap(), Verify::Ok);
        assert_eq!(c.stats().await.unwrap(), StoreStats { accepted: 0, stale: 1, violations: 0 });
    }
}
