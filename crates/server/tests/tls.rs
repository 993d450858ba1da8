//! TLS on the TCP listener (`docs/PROTOCOL.md` §1.2), with certificates generated at run
//! time: sessions of the blocking and async clients (contention, pipelining, a backlog
//! of large STATS answers that overflows the socket so the writer task's fallback runs),
//! client certificates, and every refusal — unknown CA, expired certificate, name
//! mismatch, missing or foreign client certificate, a plain-text client on the TLS
//! listener (status 4 before any other refusal of its hello), a TLS client on a plain
//! one, garbage — each a clear error while a
//! well-behaved session on the same server keeps its lock. Also a stress run of TLS
//! clients under the holders' checker, and the startup errors of bad certificate files.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{Checker, Rng};
use rangelock_client::rustls::pki_types::{pem::PemObject, CertificateDer};
use rangelock_client::rustls::RootCertStore;
use rangelock_client::{
    AsyncClient, Client, ClientError, ConnectOptions, Endpoint, LockGuard, Mode, TlsOptions, Wait,
};
use rangelock_server::protocol::{
    op, ClientHello, HelloStatus, Request, RequestFrame, ResponseFrame, ServerHello, Status,
    SERVER_HELLO_LEN,
};
use rangelock_server::{Server, ServerConfig, TlsSettings};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// A directory of PEM files for one test, removed when dropped.
struct Pki {
    dir: PathBuf,
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

impl Pki {
    fn new() -> Pki {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("rangelock-tls-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A CA named `name`; its certificate in `NAME.pem`.
    fn ca(&self, name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        self.write(&format!("{name}.pem"), &ca.pem());
        ca
    }

    /// A certificate for `names` signed by `ca`, in `NAME.pem` and `NAME.key`; expired
    /// (valid in 2020 only) if `expired`.
    fn leaf(
        &self,
        ca: &CertifiedIssuer<'static, KeyPair>,
        name: &str,
        names: &[&str],
        expired: bool,
    ) -> (PathBuf, PathBuf) {
        let mut params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 12, 31);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, ca).unwrap();
        (
            self.write(&format!("{name}.pem"), &cert.pem()),
            self.write(&format!("{name}.key"), &key.serialize_pem()),
        )
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Names a server certificate carries: the client connects to 127.0.0.1.
const SERVER_NAMES: &[&str] = &["localhost", "127.0.0.1"];

/// A server on 127.0.0.1 and a Unix socket, with TLS from `settings`.
fn tls_server(pki: &Pki, settings: TlsSettings, config: ServerConfig) -> Server {
    Server::start(ServerConfig {
        tls: Some(settings),
        unix: Some(pki.path("server.sock")),
        ..config
    })
    .unwrap()
}

/// A CA `ca`, a server certificate it signed, and a TLS server with them.
fn standard(pki: &Pki, config: ServerConfig) -> (Server, Endpoint, ConnectOptions) {
    let ca = pki.ca("ca");
    let (cert, key) = pki.leaf(&ca, "server", SERVER_NAMES, false);
    let server = tls_server(pki, TlsSettings::new(cert, key), config);
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let options = ConnectOptions::new().tls(TlsOptions::from_ca_file(pki.path("ca.pem")).unwrap());
    (server, ep, options)
}

/// A well-behaved session holding a lock; [`Witness::check`] shows it unaffected.
struct Witness {
    client: Client,
    guard: Option<LockGuard>,
    range: std::ops::Range<u64>,
    ep: Endpoint,
    options: ConnectOptions,
}

impl Witness {
    fn new(ep: &Endpoint, options: &ConnectOptions) -> Witness {
        let client = Client::connect_with(ep, options).unwrap();
        let range = 1_000_000..1_000_100;
        let guard = client.lock_exclusive(range.clone()).unwrap();
        Witness { client, guard: Some(guard), range, ep: ep.clone(), options: options.clone() }
    }

    /// The session is alive, still holds its lock (another session cannot take it), and
    /// releases it.
    fn check(mut self) {
        self.client.ping().unwrap();
        let other = Client::connect_with(&self.ep, &self.options).unwrap();
        let r = other.lock(self.range.clone(), Mode::Exclusive, Wait::Try);
        assert!(matches!(r, Err(ClientError::WouldBlock)), "the lock is still held: {r:?}");
        self.guard.take().unwrap().unlock().unwrap();
        let g = other.lock(self.range.clone(), Mode::Exclusive, Wait::Try).unwrap();
        g.unlock().unwrap();
    }
}

fn tls_message(e: ClientError) -> String {
    match e {
        ClientError::Tls(m) => {
            eprintln!("TLS: {m}");
            m
        }
        other => panic!("expected ClientError::Tls, got {other:?} ({other})"),
    }
}

#[test]
fn blocking_tls_sessions_lock_unlock_and_contend() {
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let a = Client::connect_with(&ep, &options).unwrap();
    let b = Client::connect_with(&ep, &options).unwrap();
    let ga = a.lock_exclusive(0..100).unwrap();
    assert!(matches!(b.lock(50..150, Mode::Shared, Wait::Try), Err(ClientError::WouldBlock)));
    let token_a = ga.token();
    std::thread::scope(|s| {
        // B queues behind A; A's unlock grants it.
        let waiter = s.spawn(|| b.lock(50..150, Mode::Exclusive, Wait::Forever).unwrap());
        while a.stats(10).unwrap().counters.waiters == 0 {
            std::thread::yield_now();
        }
        ga.unlock().unwrap();
        let gb = waiter.join().unwrap();
        assert!(gb.token() > token_a, "fencing tokens increase");
        gb.unlock().unwrap();
    });
    let st = a.stats(10).unwrap();
    assert_eq!((st.counters.grants, st.counters.releases), (2, 2));
    drop((a, b));
    server.shutdown();
}

#[test]
fn async_tls_client_pipelines_many_requests() {
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    rt.unwrap().block_on(async {
        let c = AsyncClient::connect_with(&ep, &options).await.unwrap();
        // 500 locks in flight at once on one connection, then their unlocks.
        let locks = (0..500u64).map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                c.lock(i * 10..i * 10 + 10, Mode::Exclusive, Wait::Forever).await
            })
        });
        let mut guards = Vec::new();
        for h in locks {
            guards.push(h.await.unwrap().unwrap());
        }
        let mut tokens: Vec<u64> = guards.iter().map(|g| g.token()).collect();
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), 500, "every grant has its own fencing token");
        assert_eq!(c.stats(0).await.unwrap().counters.holders, 500);
        for g in guards {
            g.unlock().await.unwrap();
        }
        let st = c.stats(0).await.unwrap();
        assert_eq!((st.counters.holders, st.counters.releases), (0, 500));
    });
    server.shutdown();
}

/// A raw TLS connection: the test writes frames itself, without reading, so the server's
/// answers pile up beyond the socket buffers and the writer task's fallback (records
/// held back in rustls, `try_flush`) must deliver them, in order.
#[test]
fn a_backlog_of_large_stats_answers_arrives_whole_and_in_order() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::new();
    let config = ServerConfig {
        max_output_bytes: 256 << 20,
        max_stats_entries: 1000,
        ..ServerConfig::ephemeral()
    };
    let (server, ep, options) = standard(&pki, config);
    let witness = Witness::new(&ep, &options);
    let addr = server.tcp_addr().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (ids, bytes) = rt.block_on(async {
        let mut tls = raw_tls(addr, &pki.path("ca.pem")).await;
        // The hello, 900 held locks (so STATS lists 900 entries: ~38 KB an answer),
        // then 300 STATS: ~11 MB of answers, none read until everything is written.
        let mut out = Vec::new();
        ClientHello::with_token(None).encode(&mut out);
        let mut id = 0;
        for i in 0..900u64 {
            id += 1;
            let request = Request::Lock {
                start: i * 4,
                end: i * 4 + 2,
                mode: rangelock_server::protocol::Mode::Exclusive,
                wait: rangelock_server::protocol::Wait::Try,
            };
            RequestFrame { id, request }.encode(&mut out);
        }
        for _ in 0..300 {
            id += 1;
            RequestFrame { id, request: Request::Stats { max_entries: 1000 } }.encode(&mut out);
        }
        tls.write_all(&out).await.unwrap();
        tls.flush().await.unwrap();
        let mut hello = [0u8; SERVER_HELLO_LEN];
        tls.read_exact(&mut hello).await.unwrap();
        ServerHello::decode(&hello).unwrap();
        let (mut ids, mut bytes) = (Vec::new(), 0usize);
        while ids.len() < id as usize {
            let mut len = [0u8; 4];
            tls.read_exact(&mut len).await.unwrap();
            let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
            tls.read_exact(&mut body).await.unwrap();
            bytes += 4 + body.len();
            let r = ResponseFrame::decode(&body).unwrap();
            assert_eq!(r.status, Status::Ok, "answer to {}", r.id);
            if r.op == op::STATS {
                assert_eq!(r.stats.as_ref().unwrap().entries.len(), 901, "900 + the witness's");
            }
            ids.push(r.id);
        }
        (ids, bytes)
    });
    assert_eq!(ids, (1..=1200).collect::<Vec<u64>>(), "every answer, in request order");
    assert!(bytes > 10 << 20, "{bytes} bytes: more than the socket buffers hold");
    witness.check();
    server.shutdown();
}

/// A TLS connection of tokio-rustls to `addr`, trusting the CA in `ca`, with no client
/// of ours in between.
async fn raw_tls(
    addr: std::net::SocketAddr,
    ca: &Path,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots_of(ca))
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap()
}

fn roots_of(ca: &Path) -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    roots
}

#[test]
fn client_certificates_are_required_and_checked() {
    let pki = Pki::new();
    let ca = pki.ca("ca");
    let clients_ca = pki.ca("clients-ca");
    let other_ca = pki.ca("other-ca");
    let (cert, key) = pki.leaf(&ca, "server", SERVER_NAMES, false);
    let (good_cert, good_key) = pki.leaf(&clients_ca, "client", &["client"], false);
    let (bad_cert, bad_key) = pki.leaf(&other_ca, "stranger", &["stranger"], false);
    let settings = TlsSettings::new(cert, key).client_ca(pki.path("clients-ca.pem"));
    let server = tls_server(&pki, settings, ServerConfig::ephemeral());
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let trust = TlsOptions::from_ca_file(pki.path("ca.pem")).unwrap();
    let good =
        ConnectOptions::new().tls(trust.clone().client_cert_files(&good_cert, &good_key).unwrap());
    let witness = Witness::new(&ep, &good);

    let none = ConnectOptions::new().tls(trust.clone());
    let m = tls_message(Client::connect_with(&ep, &none).unwrap_err());
    assert!(m.contains("requires a client certificate"), "{m}");
    let stranger = ConnectOptions::new().tls(trust.client_cert_files(&bad_cert, &bad_key).unwrap());
    let m = tls_message(Client::connect_with(&ep, &stranger).unwrap_err());
    assert!(m.contains("refused this client's certificate"), "{m}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let m = tls_message(rt.block_on(AsyncClient::connect_with(&ep, &stranger)).unwrap_err());
    assert!(m.contains("refused this client's certificate"), "{m}");

    witness.check();
    server.shutdown();
}

#[test]
fn a_client_trusting_another_ca_or_another_name_is_refused_clearly() {
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let witness = Witness::new(&ep, &options);
    pki.ca("other-ca");
    let wrong =
        ConnectOptions::new().tls(TlsOptions::from_ca_file(pki.path("other-ca.pem")).unwrap());
    let m = tls_message(Client::connect_with(&ep, &wrong).unwrap_err());
    assert!(m.contains("unknown issuer"), "{m}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let m = tls_message(rt.block_on(AsyncClient::connect_with(&ep, &wrong)).unwrap_err());
    assert!(m.contains("unknown issuer"), "{m}");

    let renamed = ConnectOptions::new()
        .tls(TlsOptions::from_ca_file(pki.path("ca.pem")).unwrap().server_name("lock.example.com"));
    let m = tls_message(Client::connect_with(&ep, &renamed).unwrap_err());
    assert!(m.contains("name mismatch") && m.contains("lock.example.com"), "{m}");
    // The override works the other way too: `localhost` is in the certificate.
    let by_name = ConnectOptions::new()
        .tls(TlsOptions::from_ca_file(pki.path("ca.pem")).unwrap().server_name("localhost"));
    Client::connect_with(&ep, &by_name).unwrap().ping().unwrap();

    witness.check();
    server.shutdown();
}

#[test]
fn an_expired_server_certificate_is_refused_clearly() {
    let pki = Pki::new();
    let ca = pki.ca("ca");
    let (cert, key) = pki.leaf(&ca, "server", SERVER_NAMES, true);
    let server = tls_server(&pki, TlsSettings::new(cert, key), ServerConfig::ephemeral());
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    // No TLS client can use this server: the witness uses its Unix socket (plain).
    let unix = Endpoint::Unix(server.unix_path().unwrap().to_owned());
    let witness = Witness::new(&unix, &ConnectOptions::new());
    let options = ConnectOptions::new().tls(TlsOptions::from_ca_file(pki.path("ca.pem")).unwrap());
    let m = tls_message(Client::connect_with(&ep, &options).unwrap_err());
    assert!(m.contains("expired"), "{m}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let m = tls_message(rt.block_on(AsyncClient::connect_with(&ep, &options)).unwrap_err());
    assert!(m.contains("expired"), "{m}");
    witness.check();
    server.shutdown();
}

#[test]
fn a_plain_text_client_on_the_tls_listener_is_told_tls_is_required() {
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let witness = Witness::new(&ep, &options);
    let r = Client::connect(&ep);
    assert!(matches!(r, Err(ClientError::TlsRequired)), "{r:?}");
    // With a token too (the server reads it before answering).
    let r = Client::connect_with(&ep, &ConnectOptions::new().token("s3cret"));
    assert!(matches!(r, Err(ClientError::TlsRequired)), "{r:?}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let r = rt.block_on(AsyncClient::connect(&ep));
    assert!(matches!(r, Err(ClientError::TlsRequired)), "{r:?}");
    // The Unix socket of the same server stays plain.
    let unix = Endpoint::Unix(server.unix_path().unwrap().to_owned());
    Client::connect(&unix).unwrap().ping().unwrap();
    let e = Client::connect_with(&unix, &options).unwrap_err();
    assert!(tls_message(e).contains("Unix socket"));
    witness.check();
    server.shutdown();
}

/// On a TLS listener "TLS required" (status 4) wins over every other refusal of a
/// plain-text hello (`docs/PROTOCOL.md` §1.2): a foreign version, unknown flags, a bad
/// token length, a missing or unknown token (with an auth file) all get 4, and so does a
/// good token, unchecked. A wrong magic after the `R` is answered by closing.
#[test]
fn a_plain_text_hello_gets_tls_required_before_any_other_refusal() {
    use std::io::{Read, Write};
    let pki = Pki::new();
    let secret = "ops-secret-0123456789";
    let toml = format!("[[token]]\nname = \"ops\"\nsecret = \"{secret}\"\n");
    let auth = rangelock_server::AuthTable::from_toml(Path::new("auth.toml"), &toml).unwrap();
    let config = ServerConfig { auth: Some(Arc::new(auth)), ..ServerConfig::ephemeral() };
    let (server, ep, options) = standard(&pki, config);
    let witness = Witness::new(&ep, &options.token(secret));
    let addr = server.tcp_addr().unwrap();
    let head = |version: u16, flags: u16| {
        let mut h = b"RLCK".to_vec();
        h.extend(version.to_le_bytes());
        h.extend(flags.to_le_bytes());
        h
    };
    let with_token = |len: u16, token: &[u8]| {
        let mut h = head(3, 1);
        h.extend(len.to_le_bytes());
        h.extend(token);
        h
    };
    let cases = [
        ("version 2", head(2, 0)),
        ("unknown flag bits", head(3, 0x8002)),
        ("no token", head(3, 0)),
        ("token_len 0", with_token(0, b"")),
        ("token_len 1025", with_token(1025, b"")),
        ("an unknown token", with_token(5, b"wrong")),
        ("the right token", with_token(secret.len() as u16, secret.as_bytes())),
    ];
    for (what, hello) in cases {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(&hello).unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).unwrap();
        assert_eq!(reply.len(), SERVER_HELLO_LEN, "{what}: {reply:?}");
        let h = ServerHello::decode(&reply).unwrap();
        assert_eq!((h.status, h.session), (HelloStatus::TlsRequired, 0), "{what}");
    }
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"RXCK\x03\x00\x00\x00").unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    assert!(reply.is_empty(), "a wrong magic is not answered: {reply:?}");
    witness.check();
    server.shutdown();
}

#[test]
fn garbage_on_the_tls_listener_touches_nothing() {
    use std::io::{Read, Write};
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let witness = Witness::new(&ep, &options);
    let addr = server.tcp_addr().unwrap();
    // A TLS record header followed by junk, and bytes that are neither TLS nor a hello:
    // the server closes both.
    for junk in [&[0x16u8, 3, 1, 0, 5, 1, 2, 3, 4, 5, 6, 7, 8][..], b"GET / HTTP/1.0\r\n\r\n"] {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(junk).unwrap();
        let mut rest = Vec::new();
        // EOF or a reset: either way the server hung up (a TLS alert may come first).
        let _ = s.read_to_end(&mut rest);
        assert!(rest.len() < 64, "no answer beyond an alert: {rest:?}");
    }
    witness.check();
    server.shutdown();
}

#[test]
fn a_tls_client_on_a_plain_server_is_refused_clearly() {
    let pki = Pki::new();
    pki.ca("ca");
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let ep = Endpoint::from(server.tcp_addr().unwrap());
    let witness = Witness::new(&ep, &ConnectOptions::new());
    let options = ConnectOptions::new().tls(TlsOptions::from_ca_file(pki.path("ca.pem")).unwrap());
    let m = tls_message(Client::connect_with(&ep, &options).unwrap_err());
    assert!(m.contains("does not speak TLS"), "{m}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let m = tls_message(rt.block_on(AsyncClient::connect_with(&ep, &options)).unwrap_err());
    assert!(m.contains("does not speak TLS"), "{m}");
    witness.check();
    server.shutdown();
}

#[test]
fn bad_certificate_files_are_clear_startup_errors() {
    let pki = Pki::new();
    let ca = pki.ca("ca");
    let (cert, key) = pki.leaf(&ca, "server", SERVER_NAMES, false);
    let (_, other_key) = pki.leaf(&ca, "other", SERVER_NAMES, false);
    let missing = pki.path("missing.pem");
    let empty = pki.write("empty.pem", "no PEM here\n");
    let start = |settings: TlsSettings| {
        let e = Server::start(ServerConfig { tls: Some(settings), ..ServerConfig::ephemeral() })
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        e.to_string()
    };
    let show = |p: &Path| p.display().to_string();
    let m = start(TlsSettings::new(&missing, &key));
    assert!(
        m.contains("cannot read the TLS certificate file") && m.contains(&show(&missing)),
        "{m}"
    );
    let m = start(TlsSettings::new(&empty, &key));
    assert!(m.contains("holds no certificate") && m.contains(&show(&empty)), "{m}");
    let m = start(TlsSettings::new(&cert, &empty));
    assert!(m.contains("holds no private key") && m.contains(&show(&empty)), "{m}");
    let m = start(TlsSettings::new(&cert, &other_key));
    assert!(m.contains("does not hold the private key of the certificate"), "{m}");
    assert!(m.contains(&show(&other_key)) && m.contains(&show(&cert)), "{m}");
    let m = start(TlsSettings::new(&cert, &key).client_ca(&missing));
    assert!(m.contains("client CA file") && m.contains(&show(&missing)), "{m}");
    // And the good files start.
    Server::start(ServerConfig {
        tls: Some(TlsSettings::new(&cert, &key)),
        ..ServerConfig::ephemeral()
    })
    .unwrap()
    .shutdown();
}

/// Many TLS clients lock overlapping ranges; the checker sees no two conflicting holders
/// at once and increasing fencing tokens.
#[test]
fn tls_clients_under_contention_keep_mutual_exclusion() {
    const UNITS: u64 = 64;
    const THREADS: usize = 6;
    const OPS: usize = 120;
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let checker = Checker::new(UNITS as usize);
    let granted: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (ep, options, checker) = (&ep, &options, &checker);
                s.spawn(move || {
                    let client = Client::connect_with(ep, options).unwrap();
                    let mut rng = Rng(0x9E37_79B9 + t as u64 * 7919);
                    let mut granted = 0;
                    for _ in 0..OPS {
                        let start = rng.below(UNITS - 1);
                        let end = (start + 1 + rng.below(12)).min(UNITS);
                        let mode = if rng.below(10) < 3 { Mode::Shared } else { Mode::Exclusive };
                        let g = client.lock(start..end, mode, Wait::Forever).unwrap();
                        granted += 1;
                        match mode {
                            Mode::Exclusive => checker.exclusive(start, end, g.token()),
                            Mode::Shared => checker.shared(start, end),
                        }
                        if rng.below(2) == 0 {
                            g.unlock().unwrap();
                        } else {
                            g.unlock_pipelined().unwrap();
                        }
                    }
                    client.flush().unwrap();
                    granted
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let client = Client::connect_with(&ep, &options).unwrap();
    let st = client.stats(10).unwrap();
    assert_eq!(granted, (THREADS * OPS) as u64);
    assert_eq!((st.counters.grants, st.counters.releases), (granted, granted));
    assert_eq!((st.counters.holders, st.counters.waiters), (0, 0));
    drop(client);
    server.shutdown();
}

/// A session whose client drops the TCP connection without `close_notify` (a crash)
/// ends like a plain one: its locks are released.
#[test]
fn a_tls_session_cut_off_releases_its_locks() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::new();
    let (server, ep, options) = standard(&pki, ServerConfig::ephemeral());
    let observer = Client::connect_with(&ep, &options).unwrap();
    let addr = server.tcp_addr().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for _ in 0..3 {
        rt.block_on(async {
            let mut tls = raw_tls(addr, &pki.path("ca.pem")).await;
            let mut out = Vec::new();
            ClientHello::with_token(None).encode(&mut out);
            let request = Request::Lock {
                start: 0,
                end: 10,
                mode: rangelock_server::protocol::Mode::Exclusive,
                wait: rangelock_server::protocol::Wait::Forever,
            };
            RequestFrame { id: 1, request }.encode(&mut out);
            tls.write_all(&out).await.unwrap();
            tls.flush().await.unwrap();
            let mut answers = [0u8; SERVER_HELLO_LEN + 4 + 18];
            tls.read_exact(&mut answers).await.unwrap();
            let r = ResponseFrame::decode(&answers[SERVER_HELLO_LEN + 4..]).unwrap();
            assert_eq!((r.id, r.status), (1, Status::Ok));
            // Dropped without `shutdown`: TCP closes, no `close_notify`.
            drop(tls);
        });
        let g = observer.lock(0..10, Mode::Exclusive, Wait::Timeout(Duration::from_secs(10)));
        g.unwrap().unlock().unwrap();
    }
    drop(observer);
    server.shutdown();
}

/// Authentication inside TLS: the token goes in the hello, after the handshake.
#[test]
fn tokens_are_checked_inside_tls() {
    let pki = Pki::new();
    let toml = "[[token]]\nname = \"ingest\"\nsecret = \"ingest-secret-0123456789\"\nranges = [\"0..100\"]\n";
    let auth = rangelock_server::AuthTable::from_toml(Path::new("auth.toml"), toml).unwrap();
    let config = ServerConfig { auth: Some(Arc::new(auth)), ..ServerConfig::ephemeral() };
    let (server, ep, options) = standard(&pki, config);
    let with_token = options.clone().token("ingest-secret-0123456789");
    let c = Client::connect_with(&ep, &with_token).unwrap();
    c.lock_exclusive(0..10).unwrap().unlock().unwrap();
    let r = c.lock(200..210, Mode::Exclusive, Wait::Try);
    assert!(matches!(r, Err(ClientError::Server(Status::Forbidden))), "{r:?}");
    let r = Client::connect_with(&ep, &options);
    assert!(matches!(r, Err(ClientError::AuthRequired)), "{r:?}");
    let r = Client::connect_with(&ep, &options.token("not-the-secret-at-all"));
    assert!(matches!(r, Err(ClientError::AuthFailed)), "{r:?}");
    c.ping().unwrap();
    drop(c);
    server.shutdown();
}
