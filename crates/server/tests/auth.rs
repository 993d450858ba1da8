//! Authentication end to end: a server with an auth table refuses a hello without a token
//! or with a wrong one (or one of a bad length), answers `FORBIDDEN` to a `LOCK` or
//! `RECLAIM` outside the token's ranges and goes on, and never lets a token reach its log.
//! In every case a well-behaved session on the same server keeps its lock and goes on.
//!
//! Every test logs (at TRACE) into one buffer shared by the whole binary, and
//! [`no_secret_in_the_log`] checks that no secret any test used is in it.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use common::{lock, Raw};
use rangelock_client::{Client, ClientError, ConnectOptions, Endpoint, Mode, Wait};
use rangelock_server::ownership::{Fence, Ownership};
use rangelock_server::protocol::*;
use rangelock_server::{AuthTable, EngineKind, Server, ServerConfig};

/// May lock anything.
const FULL: &str = "full-secret-5b0f4c1e9a7d";
/// May lock `0..4096` and `0x100000..0x200000`, of the unnamed resource and of the names
/// that start with `db/`.
const INGEST: &str = "ingest-secret-77c3e0a2f1b9";
/// May lock `0..10`, `10..20` (so `0..20`) and `30..40`.
const SPLIT: &str = "split-secret-3e4d5c6b7a80";
/// Known to no server.
const WRONG: &str = "wrong-secret-0d9e8f7a6b5c";
/// Every secret a test sends or a table holds.
const SECRETS: [&str; 4] = [FULL, INGEST, SPLIT, WRONG];

const X: Mode = Mode::Exclusive;
const INGEST_END: u64 = 4096;
const HIGH: std::ops::Range<u64> = 0x100000..0x200000;

/// The engines every test runs on.
const ENGINES: [EngineKind; 2] = [EngineKind::Combiner, EngineKind::RangeLock];

/// The log of every server in this binary.
fn log() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = {
            let buf = buf.clone();
            move || Writer(buf.clone())
        };
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(writer)
            .init();
        buf
    })
}

struct Writer(Arc<Mutex<Vec<u8>>>);

impl Write for Writer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&log().lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
}

fn table() -> Arc<AuthTable> {
    let text = format!(
        r#"
        [[token]]
        name = "full"
        secret = "{FULL}"

        [[token]]
        name = "ingest"
        secret = "{INGEST}"
        ranges = ["0..{INGEST_END}", "0x100000..0x200000"]
        names = ["db/"]

        [[token]]
        name = "split"
        secret = "{SPLIT}"
        ranges = ["10..20", "0..10", "30..40"]
        "#
    );
    Arc::new(AuthTable::from_toml(Path::new("auth.toml"), &text).unwrap())
}

fn server(engine: EngineKind) -> Server {
    log();
    let config = ServerConfig { engine, auth: Some(table()), ..ServerConfig::ephemeral() };
    Server::start(config).unwrap()
}

fn with_token(srv: &Server, token: &str) -> Result<Client, ClientError> {
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    Client::connect_with(&ep, &ConnectOptions::new().token(token))
}

/// A hello's raw bytes: the head with `AUTH`, then `token_len` and `token`.
fn raw_hello(token_len: u16, token: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&hello_flags::AUTH.to_le_bytes());
    out.extend_from_slice(&token_len.to_le_bytes());
    out.extend_from_slice(token);
    out
}

/// Sends `bytes` as the hello and returns the server's answer, checking that the
/// server then closes the connection.
fn refused_hello(addr: SocketAddr, bytes: &[u8]) -> ServerHello {
    refused_hello_from(addr, bytes).0
}

/// [`refused_hello`], and the client's address (the peer the server logs).
fn refused_hello_from(addr: SocketAddr, bytes: &[u8]) -> (ServerHello, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let peer = s.local_addr().unwrap().to_string();
    s.write_all(bytes).unwrap();
    let mut buf = [0u8; SERVER_HELLO_LEN];
    s.read_exact(&mut buf).unwrap();
    let hello = ServerHello::decode(&buf).unwrap();
    let mut more = [0u8; 1];
    assert!(matches!(s.read(&mut more), Ok(0) | Err(_)), "the server closes after a refusal");
    (hello, peer)
}

/// The well-behaved session: holds `5000..6000` on `srv` (with the `full` token).
struct Bystander {
    client: Client,
    guard: rangelock_client::LockGuard,
}

impl Bystander {
    fn start(srv: &Server) -> Bystander {
        let client = with_token(srv, FULL).unwrap();
        let guard = client.lock(5000..6000, X, Wait::Try).unwrap();
        Bystander { client, guard }
    }

    /// Its lock is still held (another session finds it taken), and it can still lock
    /// and unlock.
    fn check_unaffected(self, srv: &Server) {
        let other = with_token(srv, FULL).unwrap();
        assert!(matches!(other.lock(5500..5501, X, Wait::Try), Err(ClientError::WouldBlock)));
        let st = self.client.stats(100).unwrap();
        assert!(st
            .entries
            .iter()
            .any(|e| e.session == self.client.session() && (e.start, e.end) == (5000, 6000)));
        assert_eq!(st.counters.released_by_close, 0, "no session lost a lock");
        let g = self.client.lock(7000..8000, X, Wait::Try).unwrap();
        g.unlock().unwrap();
        self.guard.unlock().unwrap();
        other.lock(5500..5501, X, Wait::Try).unwrap().unlock().unwrap();
    }
}

#[test]
fn a_missing_wrong_or_badly_sized_token_is_refused_and_a_holder_is_unaffected() {
    for engine in ENGINES {
        let srv = server(engine);
        let addr = srv.tcp_addr().unwrap();
        let by = Bystander::start(&srv);
        let ep = Endpoint::from(addr);

        let e = Client::connect(&ep).unwrap_err();
        assert!(matches!(e, ClientError::AuthRequired), "{engine:?}: {e}");
        assert_eq!(e.to_string(), "the server requires an authentication token and none was given");
        let e = with_token(&srv, WRONG).unwrap_err();
        assert!(matches!(e, ClientError::AuthFailed), "{engine:?}: {e}");
        assert_eq!(e.to_string(), "the server refused the authentication token");
        assert!(!format!("{e:?}").contains(WRONG));
        // A prefix or an extension of a known token is just as unknown.
        for t in [&FULL[..FULL.len() - 1], &format!("{FULL}x")] {
            assert!(matches!(with_token(&srv, t), Err(ClientError::AuthFailed)));
        }

        // Raw hellos: without a token; with a token of length 0; of length 1025 (the
        // server answers before the bytes, which it never reads); unknown.
        let mut none = Vec::new();
        ClientHello::new(VERSION).encode(&mut none);
        let cases = [
            (none, HelloStatus::AuthRequired),
            (raw_hello(0, b""), HelloStatus::AuthFailed),
            (raw_hello(MAX_TOKEN_LEN as u16 + 1, b""), HelloStatus::AuthFailed),
            (raw_hello(WRONG.len() as u16, WRONG.as_bytes()), HelloStatus::AuthFailed),
        ];
        for (bytes, status) in cases {
            let h = refused_hello(addr, &bytes);
            assert_eq!((h.status, h.session), (status, 0), "{engine:?}");
            assert_eq!(h.version, VERSION);
        }
        // The longest token a hello may carry is read and looked up like any other.
        let long = vec![b'k'; MAX_TOKEN_LEN];
        let h = refused_hello(addr, &raw_hello(MAX_TOKEN_LEN as u16, &long));
        assert_eq!(h.status, HelloStatus::AuthFailed);
        // A hello with a known token is accepted.
        let mut ok = Raw::connect_with_token(addr, FULL.as_bytes());
        assert_eq!(ok.call(1, lock(0, 1, X, Wait::Try)).status, Status::Ok);
        assert_eq!(ok.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
        drop(ok);

        by.check_unaffected(&srv);
        srv.shutdown();
    }
}

#[test]
fn a_lock_outside_the_tokens_ranges_is_forbidden_and_the_session_goes_on() {
    for engine in ENGINES {
        let srv = server(engine);
        let by = Bystander::start(&srv);
        let ingest = with_token(&srv, INGEST).unwrap();
        let outside = [
            (INGEST_END, INGEST_END + 1),     // just past the first range
            (INGEST_END - 1, INGEST_END + 1), // straddles its end
            (HIGH.start - 1, HIGH.start + 1), // straddles the second's start
            (HIGH.end - 1, HIGH.end + 1),     // straddles its end
            (0, HIGH.end),                    // covers both and the gap
            (5000, 6000),                     // the bystander's range
            (0, u64::MAX),                    // everything
        ];
        for (start, end) in outside {
            for wait in [Wait::Try, Wait::Timeout(Duration::from_secs(60)), Wait::Forever] {
                for mode in [Mode::Exclusive, Mode::Shared] {
                    let r = ingest.lock(start..end, mode, wait);
                    assert!(
                        matches!(r, Err(ClientError::Server(Status::Forbidden))),
                        "{engine:?} {start}..{end} {wait:?}: {r:?}"
                    );
                }
            }
        }
        let e = ingest.lock(INGEST_END..INGEST_END + 1, X, Wait::Try).unwrap_err();
        assert_eq!(e.to_string(), "server error: range outside what this session's token may lock");
        // Nothing changed: no holder or waiter was added; each refusal counts as an error.
        let st = by.client.stats(100).unwrap();
        assert_eq!((st.counters.holders, st.counters.waiters), (1, 0), "{engine:?}");
        assert!(st.counters.errors >= outside.len() as u64 * 6, "{engine:?}");
        // The same session locks inside its ranges, up to their edges.
        let a = ingest.lock(0..INGEST_END, X, Wait::Try).unwrap();
        let b = ingest.lock(HIGH, Mode::Shared, Wait::Forever).unwrap();
        let c = ingest.lock(HIGH.end - 1..HIGH.end, Mode::Shared, Wait::Try).unwrap();
        assert!(a.token() < b.token() && b.token() < c.token());
        for g in [a, b, c] {
            g.unlock().unwrap();
        }
        ingest.lock(INGEST_END - 1..INGEST_END, X, Wait::Try).unwrap().unlock().unwrap();

        // On the wire: op and id echoed, value 0.
        let mut raw = Raw::connect_with_token(srv.tcp_addr().unwrap(), INGEST.as_bytes());
        let r = raw.call(77, lock(INGEST_END, INGEST_END + 8, X, Wait::Forever));
        assert_eq!((r.op, r.id, r.status, r.value), (op::LOCK, 77, Status::Forbidden, 0));
        assert_eq!(raw.call(78, lock(0, 8, X, Wait::Try)).status, Status::Ok);
        assert_eq!(raw.call(79, Request::Keepalive).status, Status::Ok);
        assert_eq!(raw.call(80, Request::Unlock { target: 78 }).status, Status::Ok);
        drop(raw);

        by.check_unaffected(&srv);
        srv.shutdown();
    }
}

#[test]
fn ranges_that_touch_count_as_one() {
    for engine in ENGINES {
        let srv = server(engine);
        let split = with_token(&srv, SPLIT).unwrap();
        split.lock(5..15, X, Wait::Try).unwrap().unlock().unwrap();
        split.lock(0..20, X, Wait::Try).unwrap().unlock().unwrap();
        split.lock(30..40, X, Wait::Try).unwrap().unlock().unwrap();
        for (start, end) in [(15, 25), (19, 31), (0, 40), (20, 30)] {
            let r = split.lock(start..end, X, Wait::Try);
            assert!(matches!(r, Err(ClientError::Server(Status::Forbidden))), "{start}..{end}");
        }
        drop(split);
        srv.shutdown();
    }
}

/// A token locks the names its prefixes allow, within its ranges, and gets `FORBIDDEN`
/// for any other name (logged with the token's name); a token without `names` may lock no
/// name. The session goes on either way.
#[test]
fn a_token_locks_only_names_under_its_prefixes() {
    let named = |name: &'static [u8], start, end| Request::LockNamed {
        start,
        end,
        mode: X,
        wait: Wait::Try,
        name,
    };
    for engine in ENGINES {
        let srv = server(engine);
        let by = Bystander::start(&srv);
        let addr = srv.tcp_addr().unwrap();
        let mut ingest = Raw::connect_with_token(addr, INGEST.as_bytes());
        let r = ingest.call(1, named(b"db/t1", 0, 10));
        assert_eq!((r.op, r.id, r.status), (op::LOCK, 1, Status::Ok), "{engine:?}");
        let r = ingest.call(2, named(b"etc/passwd", 0, 10));
        assert_eq!((r.op, r.id, r.status), (op::LOCK, 2, Status::Forbidden), "{engine:?}");
        let r = ingest.call(3, named(b"db", 0, 10));
        assert_eq!(r.status, Status::Forbidden, "{engine:?}: a prefix of the prefix");
        let r = ingest.call(4, named(b"db/t2", INGEST_END - 1, INGEST_END + 1));
        assert_eq!(r.status, Status::Forbidden, "{engine:?}: the ranges apply to names");
        // The session goes on: the unnamed resource stays within its ranges.
        assert_eq!(ingest.call(5, lock(0, 10, X, Wait::Try)).status, Status::Ok, "{engine:?}");
        let r = ingest.call(6, named(b"db/t1", 5, 6));
        assert_eq!(r.status, Status::WouldBlock, "{engine:?}: db/t1 is held");
        let log = log_text();
        assert!(
            log.lines().any(|l| l.contains("the name matches none of the token's prefixes")
                && l.contains("token_name=ingest")
                && l.contains("etc/passwd")),
            "{engine:?}: the refusal is logged"
        );
        // A token without `names`, whatever its ranges: no name at all.
        let mut full = Raw::connect_with_token(addr, FULL.as_bytes());
        for name in [&b"db/t1"[..], b"etc/passwd"] {
            let r = full
                .call(7, Request::LockNamed { start: 0, end: 1, mode: X, wait: Wait::Try, name });
            assert_eq!((r.op, r.id, r.status), (op::LOCK, 7, Status::Forbidden), "{engine:?}");
        }
        assert_eq!(full.call(8, lock(0, 1, X, Wait::Try)).status, Status::WouldBlock);
        assert_eq!(full.call(9, lock(10, 11, X, Wait::Try)).status, Status::Ok, "{engine:?}");
        for target in [1, 5] {
            assert_eq!(ingest.call(10, Request::Unlock { target }).status, Status::Ok);
        }
        assert_eq!(full.call(10, Request::Unlock { target: 9 }).status, Status::Ok);
        drop((ingest, full));
        by.check_unaffected(&srv);
        srv.shutdown();
    }
}

#[test]
fn a_reclaim_outside_the_ranges_is_forbidden_before_not_clustered() {
    for engine in ENGINES {
        let srv = server(engine);
        let by = Bystander::start(&srv);
        let mut raw = Raw::connect_with_token(srv.tcp_addr().unwrap(), INGEST.as_bytes());
        let reclaim = |start, end| Request::Reclaim { start, end, mode: X, token: 9 };
        // Outside: FORBIDDEN first, although a single server answers every RECLAIM
        // NOT_CLUSTERED.
        let r = raw.call(5, reclaim(INGEST_END - 1, INGEST_END + 1));
        assert_eq!((r.op, r.id, r.status), (op::RECLAIM, 5, Status::Forbidden), "{engine:?}");
        // Inside: NOT_CLUSTERED, as without authentication.
        let r = raw.call(6, reclaim(0, INGEST_END));
        assert_eq!((r.op, r.id, r.status), (op::RECLAIM, 6, Status::NotClustered), "{engine:?}");
        // A session whose token has no ranges is never FORBIDDEN.
        let mut full = Raw::connect_with_token(srv.tcp_addr().unwrap(), FULL.as_bytes());
        assert_eq!(full.call(7, reclaim(0, u64::MAX)).status, Status::NotClustered);
        assert_eq!(raw.call(8, lock(0, 1, X, Wait::Try)).status, Status::Ok);
        assert_eq!(raw.call(9, Request::Unlock { target: 8 }).status, Status::Ok);
        drop((raw, full));
        by.check_unaffected(&srv);
        srv.shutdown();
    }
}

#[test]
fn on_a_cluster_node_forbidden_comes_before_ownership() {
    log();
    let own = Ownership::new(Partitioning::new(4).unwrap(), "a");
    own.fence().extend_until(Fence::now(), Duration::from_secs(600));
    let config =
        ServerConfig { cluster: Some(own), auth: Some(table()), ..ServerConfig::ephemeral() };
    let srv = Server::start(config).unwrap();
    let addr = srv.tcp_addr().unwrap();
    assert!(matches!(Client::connect(&Endpoint::from(addr)), Err(ClientError::AuthRequired)));
    let mut raw = Raw::connect_with_token(addr, INGEST.as_bytes());
    // The node owns nothing: inside the token's ranges it says NOT_OWNER; outside, the
    // token's ranges answer first.
    assert_eq!(raw.call(1, lock(0, 8, X, Wait::Try)).status, Status::NotOwner);
    assert_eq!(
        raw.call(2, lock(INGEST_END, INGEST_END + 8, X, Wait::Try)).status,
        Status::Forbidden
    );
    let reclaim = |start, end| Request::Reclaim { start, end, mode: X, token: 9 };
    assert_eq!(raw.call(3, reclaim(0, 8)).status, Status::NotOwner);
    assert_eq!(raw.call(4, reclaim(INGEST_END, INGEST_END + 8)).status, Status::Forbidden);
    drop(raw);
    srv.shutdown();
}

#[test]
fn without_an_auth_table_a_token_is_ignored() {
    log();
    let srv = Server::start(ServerConfig::ephemeral()).unwrap();
    let c = with_token(&srv, WRONG).unwrap();
    c.lock(0..u64::MAX, X, Wait::Try).unwrap().unlock().unwrap();
    // A token of a length no hello may carry is still refused.
    let h = refused_hello(srv.tcp_addr().unwrap(), &raw_hello(0, b""));
    assert_eq!(h.status, HelloStatus::AuthFailed);
    drop(c);
    srv.shutdown();
}

#[test]
fn no_secret_in_the_log() {
    log();
    let srv = server(EngineKind::Combiner);
    let addr = srv.tcp_addr().unwrap();
    // Refused (missing first: the first refusal of a server is logged at WARN), accepted
    // and forbidden, refused (wrong, bad length); and through the client.
    let mut none = Vec::new();
    ClientHello::new(VERSION).encode(&mut none);
    let (_, missing) = refused_hello_from(addr, &none);
    let mut ingest = Raw::connect_with_token(addr, INGEST.as_bytes());
    let accepted = ingest.s.local_addr().unwrap().to_string();
    assert_eq!(
        ingest.call(1, lock(INGEST_END, INGEST_END + 1, X, Wait::Try)).status,
        Status::Forbidden
    );
    let (_, wrong) = refused_hello_from(addr, &raw_hello(WRONG.len() as u16, WRONG.as_bytes()));
    let (_, empty) = refused_hello_from(addr, &raw_hello(0, b""));
    assert!(with_token(&srv, WRONG).is_err());
    let full = with_token(&srv, FULL).unwrap();
    full.lock(0..1, X, Wait::Try).unwrap().unlock().unwrap();
    let config = format!("{:?}", ServerConfig { auth: Some(table()), ..ServerConfig::default() });
    drop((ingest, full));
    srv.shutdown(); // every session has ended and logged
    let log = log_text();
    for s in SECRETS {
        assert!(!log.contains(s), "secret {s:?} in the log:\n{log}");
        assert!(!config.contains(s), "secret {s:?} in the config's Debug: {config}");
    }
    assert!(config.contains("ingest"), "{config}");
    let has = |peer: &str, level: &str, what: &[&str]| {
        let peer = format!("peer={peer}");
        log.lines()
            .any(|l| l.contains(&peer) && l.contains(level) && what.iter().all(|w| l.contains(w)))
    };
    assert!(has(&accepted, "DEBUG", &["session opened", "token_name=ingest"]), "{log}");
    assert!(has(&missing, "WARN", &["hello refused", "no authentication token"]), "{log}");
    assert!(has(&wrong, "DEBUG", &["hello refused", "unknown authentication token"]), "{log}");
    assert!(has(&empty, "DEBUG", &["hello refused", "token length 0"]), "{log}");
    assert!(log.contains("token_name=ingest") && log.contains("outside the token's ranges"));
    assert!(log.contains("sessions must authenticate"), "{log}");
}

#[test]
fn listening_beyond_loopback_without_auth_warns() {
    log();
    let any = SocketAddr::from(([0, 0, 0, 0], 0));
    let warned = |addr: SocketAddr| {
        let tcp = format!("tcp={addr}");
        log_text().lines().any(|l| {
            l.contains("WARN")
                && l.contains(&tcp)
                && l.contains("anyone who can reach the port can take any range")
        })
    };
    for (tcp, auth, warns) in [
        (any, None, true),
        (any, Some(table()), false),
        (SocketAddr::from(([127, 0, 0, 1], 0)), None, false),
        (SocketAddr::from(([127, 1, 2, 3], 0)), None, false),
    ] {
        let srv = Server::start(ServerConfig { tcp: Some(tcp), auth, ..ServerConfig::ephemeral() })
            .unwrap();
        let bound = SocketAddr::from((tcp.ip(), srv.tcp_addr().unwrap().port()));
        srv.shutdown();
        assert_eq!(warned(bound), warns, "{bound}");
    }
}
