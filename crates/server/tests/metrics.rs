//! The metrics endpoint (`ServerConfig::metrics`, `GET /metrics`) of every engine in both
//! grant modes, driven by the real async client: after each step (immediate grants, a
//! try-lock that would block, a timeout, a lock that waits for another session's
//! release, a cancel, errors, a session that ends holding locks) the scraped counters
//! equal exactly what the requests so far say, the histogram counts equal the grants and
//! the releases, and the gauges are back to 0 at the end. Also: a lease expiry is counted
//! with the locks it released, other paths answer 404,
//! garbage on the metrics port disturbs nothing, idle connections neither block a scrape
//! nor stay open past the header timeout, a server without `metrics` opens no
//! metrics port, and the endpoint stops with the server.
//!
//! Every wait is a poll of the scrape (or of the client) with a deadline, never a sleep.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rangelock_client::{AsyncClient, ClientError, Endpoint, Mode, Wait};
use rangelock_server::protocol::{GrantMode, Request, Status};
use rangelock_server::{EngineKind, Server, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Tests that count this process's listening sockets must not overlap with tests that
/// open some: every test here takes this lock.
static LISTENERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long a condition may take to show in the scrape.
const DEADLINE: Duration = Duration::from_secs(20);

/// The session-end reasons the endpoint always lists.
const REASONS: [&str; 9] = [
    "closed",
    "lease_expired",
    "shutdown",
    "not_reading",
    "output_limit",
    "bad_framing",
    "io_error",
    "token_revoked",
    "other",
];

/// The `status` labels of `errors_total`: every error status of PROTOCOL.md.
const ERRORS: [&str; 22] = [
    "MALFORMED",
    "UNKNOWN_OP",
    "INVALID_RANGE",
    "NOT_HELD",
    "DUPLICATE_ID",
    "TOO_MANY_LOCKS",
    "FRAME_TOO_LARGE",
    "NOT_WAITING",
    "SHUTTING_DOWN",
    "NOT_OWNER",
    "IN_GRACE",
    "CROSSES_PARTITION",
    "RECLAIM_REFUSED",
    "FENCED",
    "NOT_CLUSTERED",
    "SHM_UNAVAILABLE",
    "SHM_FULL",
    "SHM_ALREADY_ATTACHED",
    "FORBIDDEN",
    "BAD_NAME",
    "TOO_MANY_NAMES",
    "CACHE_UNAVAILABLE",
];

/// The `process_*` series (unlabelled) every scrape has on Linux.
const PROCESS: [&str; 6] = [
    "process_cpu_seconds_total",
    "process_open_fds",
    "process_max_fds",
    "process_virtual_memory_bytes",
    "process_resident_memory_bytes",
    "process_start_time_seconds",
];

/// The Prometheus text format 0.0.4: no `# EOF`, no `# UNIT`, and a counter's `# TYPE`
/// names its sample (`_total`).
fn check_text_004(body: &str) {
    assert!(!body.contains("# EOF") && !body.contains("# UNIT"), "{body}");
    for l in body.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let (name, kind) = l.split_once(' ').unwrap();
        assert!(kind != "counter" || name.ends_with("_total"), "{l}");
    }
    assert!(body.contains("# TYPE rangelock_grants_total counter"), "{body}");
}

/// An HTTP response, read until the server closed the connection.
#[derive(Debug)]
struct HttpResponse {
    status: u16,
    content_type: String,
    body: String,
}

/// Sends `head` (a request line and headers, without the blank line) plus
/// `Connection: close` and reads the whole response.
async fn http(addr: SocketAddr, head: &str) -> HttpResponse {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect to metrics");
    let req = format!("{head}\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    parse_http(&String::from_utf8(raw).expect("UTF-8 response"))
}

fn parse_http(raw: &str) -> HttpResponse {
    let (head, body) = raw.split_once("\r\n\r\n").expect("a complete response head");
    let mut lines = head.lines();
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    HttpResponse { status, content_type, body: body.to_owned() }
}

/// One scrape: every sample, keyed by its name without the `rangelock_` prefix and its
/// labels but `engine` (checked on every sample), e.g. `errors_total{status=NOT_HELD}`.
#[derive(Debug)]
struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    /// Scrapes as Prometheus does (asking for OpenMetrics), and as `curl` does (text
    /// 0.0.4, the default), checking each format; returns the OpenMetrics one.
    async fn take(addr: SocketAddr, engine: EngineKind) -> Scrape {
        let asks = "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,\
                    text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let r = http(addr, asks).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.content_type.starts_with("application/openmetrics-text"), "{r:?}");
        let text = http(addr, "GET /metrics HTTP/1.1").await;
        assert_eq!(text.content_type, "text/plain; version=0.0.4; charset=utf-8", "{text:?}");
        check_text_004(&text.body);
        Scrape::parse(&r.body, engine)
    }

    fn parse(text: &str, engine: EngineKind) -> Scrape {
        assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
        for p in PROCESS {
            assert!(text.lines().any(|l| l.starts_with(&format!("{p} "))), "{p} missing:\n{text}");
        }
        let mut out = BTreeMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("process_")) {
            let (series, value) = line.rsplit_once(' ').expect("`series value`");
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.strip_suffix('}').expect("closing brace")),
                None => (series, ""),
            };
            let name = name.strip_prefix("rangelock_").expect("every metric has the prefix");
            let mut rest = BTreeMap::new();
            let mut saw_engine = false;
            for kv in labels.split(',').filter(|kv| !kv.is_empty()) {
                let (k, v) = kv.split_once('=').unwrap();
                let v = v.trim_matches('"');
                if k == "engine" {
                    assert_eq!(v, engine.name(), "{line}");
                    saw_engine = true;
                } else {
                    rest.insert(k.to_owned(), v.to_owned());
                }
            }
            assert!(saw_engine, "no engine label: {line}");
            let key = if rest.is_empty() {
                name.to_owned()
            } else {
                let ls: Vec<String> = rest.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{name}{{{}}}", ls.join(","))
            };
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
            assert!(out.insert(key, value).is_none(), "one sample per series: {line}");
        }
        Scrape(out)
    }

    fn get(&self, key: &str) -> f64 {
        *self.0.get(key).unwrap_or_else(|| panic!("no {key} in {:#?}", self.0))
    }

    /// The samples [`Want`] describes: all but the histograms' buckets and sums.
    fn counted(&self) -> BTreeMap<String, f64> {
        let skip = |k: &str| k.contains("_bucket") || k.ends_with("_sum");
        self.0.iter().filter(|(k, _)| !skip(k)).map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// Buckets cumulative, `+Inf` equal to the count, a positive sum once something was
    /// observed.
    fn check_histogram(&self, name: &str) {
        let count = self.get(&format!("{name}_count"));
        let mut buckets: Vec<(f64, f64)> = self
            .0
            .iter()
            .filter_map(|(k, v)| {
                let le = k.strip_prefix(&format!("{name}_bucket{{le="))?.strip_suffix('}')?;
                let le = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() };
                Some((le, *v))
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(buckets.len(), 20, "{name}: 19 bounds and +Inf");
        assert_eq!(buckets[0].0, 0.00001, "{name}: the first bound is 10 µs");
        assert_eq!(buckets[18].0, 10.0, "{name}: the last bound is 10 s");
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{name}: cumulative");
        assert_eq!(buckets[19].1, count, "{name}: +Inf holds every observation");
        let sum = self.get(&format!("{name}_sum"));
        assert!(if count > 0.0 { sum > 0.0 } else { sum == 0.0 }, "{name}: sum {sum}");
    }
}

/// What the scrape must show: every counter and gauge, each error status that occurred,
/// each session-end reason, and the histogram counts (derived: waits = grants, holds =
/// releases by UNLOCK + by session end).
#[derive(Clone, Debug)]
struct Want(BTreeMap<String, f64>);

impl Want {
    fn zero() -> Want {
        let mut w = BTreeMap::new();
        for k in [
            "grants_total",
            "releases_total",
            "session_end_releases_total",
            "timeouts_total",
            "cancels_total",
            "would_block_total",
            "sessions_open",
            "sessions_total",
            "locks_held",
            "locks_queued",
            "names_live",
            "named_locks_held",
            "cached_extents",
            "callbacks_total",
            "give_backs_total",
            "cache_expanded_total",
            "callback_seconds_count",
        ] {
            w.insert(k.to_owned(), 0.0);
        }
        for r in REASONS {
            w.insert(format!("sessions_ended_total{{reason={r}}}"), 0.0);
        }
        // Every error status, from the start (SESSION_ENDED and MAP_CHANGED are notices).
        for status in ERRORS {
            w.insert(format!("errors_total{{status={status}}}"), 0.0);
        }
        w.insert(format!("build_info{{version={}}}", env!("CARGO_PKG_VERSION")), 1.0);
        Want(w).derive()
    }

    fn add(mut self, key: &str, n: i64) -> Want {
        *self.0.entry(key.to_owned()).or_insert(0.0) += n as f64;
        self.derive()
    }

    fn error(self, status: &str, n: i64) -> Want {
        self.add(&format!("errors_total{{status={status}}}"), n)
    }

    fn derive(mut self) -> Want {
        let g = |k: &str| self.0[k];
        let waits = g("grants_total");
        let holds = g("releases_total") + g("session_end_releases_total");
        self.0.insert("wait_seconds_count".into(), waits);
        self.0.insert("hold_seconds_count".into(), holds);
        self
    }

    /// Polls the scrape until it shows exactly this (or panics at the deadline with the
    /// difference), then checks the histograms.
    async fn shown(&self, addr: SocketAddr, engine: EngineKind, step: &str) -> Scrape {
        let start = Instant::now();
        loop {
            let s = Scrape::take(addr, engine).await;
            if s.counted() == self.0 {
                s.check_histogram("wait_seconds");
                s.check_histogram("hold_seconds");
                return s;
            }
            if start.elapsed() > DEADLINE {
                let got = s.counted();
                let keys: BTreeSet<&String> = got.keys().chain(self.0.keys()).collect();
                let diff: Vec<String> = keys
                    .into_iter()
                    .filter(|k| got.get(*k) != self.0.get(*k))
                    .map(|k| format!("{k}: got {:?}, want {:?}", got.get(k), self.0.get(k)))
                    .collect();
                panic!("{} after {step}: {diff:#?}", engine.name());
            }
            tokio::task::yield_now().await;
        }
    }
}

fn metrics_config(engine: EngineKind, grant: GrantMode) -> ServerConfig {
    ServerConfig {
        engine,
        grant,
        metrics: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..ServerConfig::ephemeral()
    }
}

fn lock(start: u64, end: u64, mode: Mode, wait: Wait) -> Request<'static> {
    Request::Lock { start, end, mode, wait }
}

/// Drives one server through every kind of request, checking the scrape after each step.
async fn every_request_counts(engine: EngineKind, grant: GrantMode) {
    let _serial = LISTENERS.lock().await;
    let server = Server::start(metrics_config(engine, grant)).unwrap();
    let m = server.metrics_addr().expect("metrics are on");
    assert_ne!(m.port(), 0, "the real port");
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let (x, s) = (Mode::Exclusive, Mode::Shared);

    let want = Want::zero();
    want.shown(m, engine, "start").await;

    let a = AsyncClient::connect(&ep).await.unwrap();
    let b = AsyncClient::connect(&ep).await.unwrap();
    let want = want.add("sessions_total", 2).add("sessions_open", 2);
    want.shown(m, engine, "two sessions").await;

    // Immediate grants.
    let a1 = a.lock(0..10, x, Wait::Forever).await.unwrap();
    let a2 = a.lock(20..30, s, Wait::Forever).await.unwrap();
    let want = want.add("grants_total", 2).add("locks_held", 2);
    want.shown(m, engine, "immediate grants").await;

    // A try that would block, and a wait that times out (the server's timer).
    let r = b.lock(0..10, x, Wait::Try).await;
    assert!(matches!(r, Err(ClientError::WouldBlock)), "{r:?}");
    let want = want.add("would_block_total", 1);
    want.shown(m, engine, "would-block").await;
    let r = b.lock(5..6, x, Wait::Timeout(Duration::from_millis(30))).await;
    assert!(matches!(r, Err(ClientError::TimedOut)), "{r:?}");
    let want = want.add("timeouts_total", 1);
    want.shown(m, engine, "timeout").await;

    // A lock that waits for another session's release.
    let waiter = tokio::spawn({
        let b = b.clone();
        async move { b.lock(0..10, x, Wait::Forever).await }
    });
    let want = want.add("locks_queued", 1);
    want.shown(m, engine, "a queued lock").await;
    a1.unlock().await.unwrap();
    let b1 = waiter.await.unwrap().unwrap();
    let want = want.add("releases_total", 1).add("grants_total", 1).add("locks_queued", -1);
    want.shown(m, engine, "the release and the waiter's grant").await;
    b1.unlock().await.unwrap();
    let want = want.add("releases_total", 1).add("locks_held", -1);
    want.shown(m, engine, "the waiter's release").await;

    // A cancel: the client withdraws a waiting lock whose future is dropped.
    let cancelled = tokio::spawn({
        let b = b.clone();
        async move { b.lock(25..26, x, Wait::Forever).await }
    });
    let want = want.add("locks_queued", 1);
    want.shown(m, engine, "a lock to cancel").await;
    cancelled.abort();
    assert!(cancelled.await.unwrap_err().is_cancelled());
    let want = want.add("cancels_total", 1).add("locks_queued", -1);
    want.shown(m, engine, "the cancel").await;

    // Errors: two UNLOCKs of locks never held (the table's or engine's), an empty range
    // (refused by the handler that decodes it).
    for target in [1 << 40, 1 << 41] {
        let r = b.raw(Request::Unlock { target }).await.unwrap();
        assert_eq!(r.status, Status::NotHeld);
    }
    let r = b.raw(lock(7, 7, x, Wait::Try)).await.unwrap();
    assert_eq!(r.status, Status::InvalidRange);
    let want = want.error("NOT_HELD", 2).error("INVALID_RANGE", 1);
    want.shown(m, engine, "errors").await;

    // Named locks: two on one name, one on another, each counted while held; released,
    // the names go.
    let want = {
        let orders = a.resource("db/orders").unwrap();
        let users = b.resource("db/users").unwrap();
        let n1 = orders.lock(0..10, x, Wait::Forever).await.unwrap();
        let n2 = orders.lock(20..30, s, Wait::Forever).await.unwrap();
        let n3 = users.lock(0..10, x, Wait::Forever).await.unwrap();
        let want = want.add("grants_total", 3).add("locks_held", 3);
        let want = want.add("names_live", 2).add("named_locks_held", 3);
        want.shown(m, engine, "named locks").await;
        for g in [n1, n2, n3] {
            g.unlock().await.unwrap();
        }
        let want = want.add("releases_total", 3).add("locks_held", -3);
        let want = want.add("names_live", -2).add("named_locks_held", -3);
        want.shown(m, engine, "named locks released").await;
        want
    };

    // A session that ends holding two locks (taken raw: no guard to release them).
    let c = AsyncClient::connect(&ep).await.unwrap();
    for (start, mode) in [(40, x), (60, s)] {
        let r = c.raw(lock(start, start + 10, mode, Wait::Forever)).await.unwrap();
        assert_eq!(r.status, Status::Ok, "granted at once: {r:?}");
    }
    let want = want
        .add("sessions_total", 1)
        .add("sessions_open", 1)
        .add("grants_total", 2)
        .add("locks_held", 2);
    want.shown(m, engine, "the third session's locks").await;
    drop(c);
    let want = want
        .add("sessions_open", -1)
        .add("session_end_releases_total", 2)
        .add("locks_held", -2)
        .add("sessions_ended_total{reason=closed}", 1);
    want.shown(m, engine, "the third session's end").await;

    a2.unlock().await.unwrap();
    drop((a, b));
    let want = want
        .add("releases_total", 1)
        .add("locks_held", -1)
        .add("sessions_open", -2)
        .add("sessions_ended_total{reason=closed}", 2);
    let end = want.shown(m, engine, "the end").await;
    for gauge in ["sessions_open", "locks_held", "locks_queued"] {
        assert_eq!(end.get(gauge), 0.0, "{gauge} is back to 0");
    }
    assert_eq!(end.get("wait_seconds_count"), 8.0);
    assert_eq!(end.get("hold_seconds_count"), 8.0);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn combiner_counts_every_request() {
    every_request_counts(EngineKind::Combiner, GrantMode::Push).await;
    every_request_counts(EngineKind::Combiner, GrantMode::Poll).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_mutex_counts_every_request() {
    every_request_counts(EngineKind::TreeMutex, GrantMode::Push).await;
    every_request_counts(EngineKind::TreeMutex, GrantMode::Poll).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_single_counts_every_request() {
    every_request_counts(EngineKind::TreeSingle, GrantMode::Push).await;
    every_request_counts(EngineKind::TreeSingle, GrantMode::Poll).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rangelock_counts_every_request() {
    every_request_counts(EngineKind::RangeLock, GrantMode::Push).await;
    every_request_counts(EngineKind::RangeLock, GrantMode::Poll).await;
}

/// Other methods and paths get 404; a request that is not HTTP gets an error and
/// disturbs neither the endpoint nor a lock session; the help text says what the
/// rangelock engine's queue is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_requests_get_404_and_garbage_disturbs_nothing() {
    let _serial = LISTENERS.lock().await;
    let server = Server::start(metrics_config(EngineKind::RangeLock, GrantMode::Push)).unwrap();
    let m = server.metrics_addr().unwrap();
    let client = AsyncClient::connect(&Endpoint::from(server.tcp_addr().unwrap())).await.unwrap();
    let held = client.lock_exclusive(0..8).await.unwrap();
    for head in ["GET / HTTP/1.1", "GET /metricsx HTTP/1.1", "POST /metrics HTTP/1.1"] {
        let r = http(m, head).await;
        assert_eq!(r.status, 404, "{head}: {r:?}");
        assert!(r.body.contains("GET /metrics"), "{head}: the 404 says where to look");
    }
    let mut s = tokio::net::TcpStream::connect(m).await.unwrap();
    s.write_all(b"\x00\x01 not http at all\r\n\r\n").await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let garbage = String::from_utf8_lossy(&raw);
    assert!(garbage.starts_with("HTTP/1.1 400"), "{garbage}");

    let r = http(m, "GET /metrics?x=1 HTTP/1.1\r\nAccept: application/openmetrics-text").await;
    assert_eq!(r.status, 200, "{r:?}");
    let scrape = Scrape::parse(&r.body, EngineKind::RangeLock);
    assert_eq!(scrape.get("locks_held"), 1.0, "the session's lock is untouched");
    assert!(r.body.contains("no FIFO order"), "the help text states the engine's queue");
    assert_eq!(held.token(), 1);
    held.unlock().await.unwrap();
    let again = client.lock_exclusive(0..8).await.unwrap();
    assert_eq!(again.token(), 2, "the lock session goes on");
    drop(again);
    server.shutdown();
}

/// A peer holding 100 idle connections (no request, or half a request head) does not
/// silence the endpoint: a scrape is answered at once (the oldest idle connection gives
/// way to it; 64 idle connections used to make every new one close unanswered), and the
/// server closes each idle connection after its 1 s header timeout (it used to keep them
/// 10 s), well within the 5 s this test allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_give_way_to_a_scrape_and_are_closed_after_a_second() {
    let _serial = LISTENERS.lock().await;
    let server = Server::start(metrics_config(EngineKind::Combiner, GrantMode::Push)).unwrap();
    let m = server.metrics_addr().unwrap();
    let mut idle = Vec::new();
    for i in 0..100 {
        let mut s = tokio::net::TcpStream::connect(m).await.unwrap();
        if i % 2 == 1 {
            s.write_all(b"GET /metr").await.unwrap();
        }
        idle.push((Instant::now(), s));
    }
    for round in 0..3 {
        let r = http(m, "GET /metrics HTTP/1.1").await;
        assert_eq!(r.status, 200, "scrape {round}: {r:?}");
        assert!(r.body.contains("rangelock_grants_total"), "scrape {round}");
    }
    for (i, (opened, mut s)) in idle.into_iter().enumerate() {
        let mut buf = [0u8; 256];
        let read = tokio::time::timeout(DEADLINE, s.read(&mut buf)).await;
        match read {
            // Closed (a reset if the server had not read all that was sent).
            Ok(Ok(0) | Err(_)) => {}
            Ok(Ok(n)) => panic!("idle connection {i} answered: {:?}", &buf[..n]),
            Err(_) => panic!("idle connection {i} still open after {DEADLINE:?}"),
        }
        let after = opened.elapsed();
        assert!(after < Duration::from_secs(5), "idle connection {i} closed after {after:?}");
    }
    server.shutdown();
}

/// A session that stops sending (no keepalive) ends when its lease expires: counted as
/// `lease_expired`, and its held lock as released by session end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_expiry_is_counted_with_the_locks_it_released() {
    let _serial = LISTENERS.lock().await;
    let config = ServerConfig {
        lease: rangelock_server::MIN_LEASE,
        ..metrics_config(EngineKind::Combiner, GrantMode::Push)
    };
    let server = Server::start(config).unwrap();
    let m = server.metrics_addr().unwrap();
    let tcp = server.tcp_addr().unwrap();
    // A raw connection: the real client would keep the lease alive.
    let mut silent = tokio::task::spawn_blocking(move || {
        let mut raw = common::Raw::connect(tcp);
        let r = raw.call(1, lock(0, 10, Mode::Exclusive, Wait::Try));
        assert_eq!(r.status, Status::Ok);
        raw
    })
    .await
    .unwrap();
    let want = Want::zero()
        .add("sessions_total", 1)
        .add("grants_total", 1)
        .add("session_end_releases_total", 1)
        .add("sessions_ended_total{reason=lease_expired}", 1);
    want.shown(m, EngineKind::Combiner, "the lease expiry").await;
    assert!(tokio::task::spawn_blocking(move || silent.closed_by_server()).await.unwrap());
    server.shutdown();
}

/// A server without `metrics` opens exactly its one listener; with it, two; once the
/// server has stopped, the metrics port refuses connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_port_only_when_asked_and_only_while_serving() {
    let _serial = LISTENERS.lock().await;
    let before = listening_ports();
    let plain = Server::start(ServerConfig::ephemeral()).unwrap();
    assert_eq!(plain.metrics_addr(), None);
    let opened: BTreeSet<u16> = listening_ports().difference(&before).copied().collect();
    assert_eq!(opened, BTreeSet::from([plain.tcp_addr().unwrap().port()]), "no metrics port");
    plain.shutdown();

    let before = listening_ports();
    let with = Server::start(metrics_config(EngineKind::Combiner, GrantMode::Push)).unwrap();
    let m = with.metrics_addr().unwrap();
    let opened: BTreeSet<u16> = listening_ports().difference(&before).copied().collect();
    assert_eq!(opened, BTreeSet::from([with.tcp_addr().unwrap().port(), m.port()]));
    assert_eq!(http(m, "GET /metrics HTTP/1.1").await.status, 200);
    with.shutdown();
    let e = tokio::net::TcpStream::connect(m).await.expect_err("the endpoint stopped");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
}

/// The ports of this process's listening TCP sockets (IPv4 and IPv6).
fn listening_ports() -> BTreeSet<u16> {
    let inodes: BTreeSet<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut ports = BTreeSet::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEX_IP:HEX_PORT; state 0A is LISTEN; field 9 the inode.
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                let port = f[1].rsplit_once(':').unwrap().1;
                ports.insert(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}
