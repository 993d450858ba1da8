//! TLS on the TCP listener (`docs/PROTOCOL.md` §1.2): loading the certificate files,
//! telling a plain-text client from a TLS one, the handshake, and the session's
//! transport — a read half and a [`DirectWrite`] half over one rustls connection, so that
//! responses are still written by whoever produced them (see the `reply` module).
//!
//! # Loading
//!
//! [`TlsSettings`] names PEM files: the certificate chain, its private key and optionally
//! a CA whose certificates clients must present. [`Server::start`](crate::Server::start)
//! reads them once, before it binds anything; every [`TlsError`] names the file (missing
//! or unreadable, no certificate or key in it, a key that is not the certificate's, a
//! CA file that is not a CA). [`Server::reload`](crate::Server::reload) reads them
//! again and swaps the acceptor of new handshakes (the `reload` module). TLS 1.2 and 1.3 with rustls's `ring` provider; no session tickets
//! (clients do not resume sessions).
//!
//! # Accepting
//!
//! On a TLS listener the session task first peeks at the connection's first byte:
//!
//! * `0x16` (a TLS handshake record): the TLS handshake, within one lease, then the
//!   session (`session::run`) over [`TlsTransport`];
//! * `R` (the first byte of the hello magic `RLCK`): a plain-text client. Its hello is
//!   read and answered, in plain text, with [`HelloStatus::TlsRequired`]; then the
//!   connection closes;
//! * anything else: the connection closes.
//!
//! A failed or late handshake (unknown CA, expired or missing client certificate,
//! garbage) is logged through the rate-limited end log and touches nothing: no session
//! exists before the handshake is done.
//!
//! # The transport, and why it keeps the direct write
//!
//! A rustls connection is one state machine for both directions: decrypting and
//! encrypting both need `&mut` access. Two parties use it at once: the session task,
//! which reads frames ([`TlsRead`]), and whoever writes responses through
//! [`DirectWrite::try_write`] — the combiner or a handler thread flushing the session's
//! `SocketSink`, or the sink's writer task when the socket was full. `tokio::io::split`
//! would serialize them with its lock held for whole `poll_write` calls and would need a
//! task to drive the writes; instead [`TlsIo`] keeps the rustls connection under a mutex
//! and the TCP socket *outside* it (tokio's `TcpStream` reads and writes without blocking
//! through `&self`):
//!
//! * **Reading** receives ciphertext with a non-blocking `recv` into the read half's own
//!   buffer *without* the lock, then takes the lock to hand it to rustls, decrypt it and
//!   copy the plaintext out. The reader never holds the lock while it waits for the
//!   socket, so it never keeps a response from being written.
//! * **`try_write`**, under the lock: (1) sends the records rustls still holds from
//!   earlier — if they do not all fit, it returns `WouldBlock` having taken nothing;
//!   (2) encrypts the plaintext (at most rustls's 64 KiB buffer limit); (3) sends as
//!   much as the socket takes, without blocking, and returns `Ok(n)` for the plaintext
//!   taken. The `send` happens under the lock because records must reach the socket in
//!   the order rustls sealed them (their sequence numbers are in the MAC): taking bytes
//!   from rustls's queue and sending them must be one step.
//! * **`try_flush`** is step (1) alone.
//!
//! Nothing taken is stranded: `try_write` may return `Ok(n)` with records still queued
//! in rustls (the socket filled up in step 3). The `SocketSink` asks `try_flush` after
//! the last `try_write` of a flush and, if anything is held back, wakes its writer task
//! as for a short write; the writer's `write_chunk` ends with a `try_flush` loop that waits
//! for writability, and the writer flushes before it sleeps and before it ends (so the
//! end of a session sends what is queued, then `close_notify`). Order: the sink lets one
//! party at a time feed plaintext, in buffer order (its mutex, or `writer_busy`); rustls
//! seals in feed order into a FIFO queue; every send takes from the queue's front under
//! the lock. So responses reach the client in order, whoever sends them. Memory: rustls
//! holds at most one `try_write`'s records (step 1 refuses new plaintext while older
//! records wait), so the sink's output bound still holds within 64 KiB.
//!
//! Output of the read side: decrypting can queue records of its own (the answer to a TLS
//! 1.3 `KeyUpdate`, an alert). The reader sends them at once, without blocking; whatever
//! does not fit stays at the queue's front, where the next `try_write` or `try_flush`
//! sends it first, and the reader retries it on its next poll, registered for
//! writability.
//!
//! Cost: one uncontended mutex acquisition per read and per flush. The lock is held for
//! the crypto of one batch and a non-blocking `send`, never across a wait. No thread
//! hop is added: the producer of a response still writes the socket itself.

use std::fmt;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConnection};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;

use crate::protocol::{HelloStatus, MAGIC};
use crate::reply::DirectWrite;
use crate::session::{self, HelloRead, Shared, Transport};

/// The content type of a TLS handshake record: the first byte a TLS client sends.
const TLS_HANDSHAKE: u8 = 0x16;

/// Ciphertext bytes the read half receives per `recv` (one full TLS record and more).
const READ_CHUNK: usize = 18 * 1024;

/// The TLS files of a server ([`ServerConfig::tls`](crate::ServerConfig::tls)), read
/// when it starts and on every [`Server::reload`](crate::Server::reload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server's certificate chain (PEM, the server's own certificate first).
    pub cert: PathBuf,
    /// The private key of that certificate (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// With a CA file (PEM), every client must present a certificate signed by one of
    /// its certificates; without, clients present none.
    pub client_ca: Option<PathBuf>,
}

impl TlsSettings {
    /// TLS with the certificate chain in `cert` and its key in `key`; no client
    /// certificates.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        TlsSettings { cert: cert.into(), key: key.into(), client_ca: None }
    }

    /// Requires client certificates signed by a CA in the PEM file `path`.
    pub fn client_ca(mut self, path: impl Into<PathBuf>) -> Self {
        self.client_ca = Some(path.into());
        self
    }
}

/// Why the TLS files of [`TlsSettings`] cannot be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read.
    #[error("cannot read the TLS {what} file {}: {error}", path.display())]
    Read {
        /// Which file: `certificate`, `key` or `client CA`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// A file is not well-formed PEM.
    #[error("the TLS {what} file {} is not valid PEM: {reason}", path.display())]
    Pem {
        /// Which file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A certificate or CA file holds no certificate.
    #[error(
        "the TLS {what} file {} holds no certificate (expected a -----BEGIN CERTIFICATE----- block)",
        path.display()
    )]
    NoCertificate {
        /// Which file.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// A certificate cannot be used.
    #[error("the TLS {what} file {} holds a certificate that cannot be used: {reason}", path.display())]
    BadCertificate {
        /// Which file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What rustls said.
        reason: String,
    },
    /// The key file holds no private key.
    #[error(
        "the TLS key file {} holds no private key (expected a -----BEGIN PRIVATE KEY-----, \
         RSA PRIVATE KEY or EC PRIVATE KEY block)",
        path.display()
    )]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key cannot be used.
    #[error("the TLS key file {} holds a key that cannot be used: {reason}", path.display())]
    BadKey {
        /// The file.
        path: PathBuf,
        /// What rustls said.
        reason: String,
    },
    /// The key is not the certificate's.
    #[error(
        "the TLS key file {} does not hold the private key of the certificate in {}",
        key.display(),
        cert.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

impl From<TlsError> for io::Error {
    fn from(e: TlsError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, e)
    }
}

fn read_file(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read { what, path: path.to_owned(), error })
}

/// Every certificate in the PEM file `path` (at least one).
fn read_certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_file(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem { what, path: path.to_owned(), reason: e.to_string() })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { what, path: path.to_owned() });
    }
    Ok(certs)
}

/// The first private key in the PEM file `path`.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read_file("key", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::NoKey { path: path.to_owned() },
        e => TlsError::Pem { what: "key", path: path.to_owned(), reason: e.to_string() },
    })
}

/// Reads the files of `settings` and builds the acceptor every TLS session uses.
pub(crate) fn acceptor(settings: &TlsSettings) -> Result<TlsAcceptor, TlsError> {
    let certs = read_certs("certificate", &settings.cert)?;
    let key = read_key(&settings.key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .expect("the ring provider supports TLS 1.2 and 1.3");
    let builder = match &settings.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let what = "client CA";
            let mut roots = RootCertStore::empty();
            for c in read_certs(what, path)? {
                roots.add(c).map_err(|e| TlsError::BadCertificate {
                    what,
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::BadCertificate {
                    what,
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
            TlsError::KeyMismatch { cert: settings.cert.clone(), key: settings.key.clone() }
        }
        rustls::Error::InvalidCertificate(e) => TlsError::BadCertificate {
            what: "certificate",
            path: settings.cert.clone(),
            reason: e.to_string(),
        },
        e => TlsError::BadKey { path: settings.key.clone(), reason: e.to_string() },
    })?;
    // Clients connect once per session and never resume: tickets would be wasted bytes.
    config.send_tls13_tickets = 0;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Runs one connection of a TLS listener: see the module docs.
pub(crate) async fn run(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    peer: String,
    local: bool,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
) {
    let lease = shared.config.lease;
    let mut first = [0u8; 1];
    let peeked = tokio::select! {
        r = tokio::time::timeout(lease, stream.peek(&mut first)) => r,
        _ = shutdown.changed() => return,
    };
    match peeked {
        Ok(Ok(1)) => {}
        Ok(_) => return shared.end_log.bad_end(&peer, 0, "closed before its TLS handshake"),
        Err(_) => return shared.end_log.bad_end(&peer, 0, "no TLS handshake within the lease"),
    }
    if first[0] != TLS_HANDSHAKE {
        return refuse_plain(stream, first[0], &peer, &shared).await;
    }
    let handshake = tokio::select! {
        r = tokio::time::timeout(lease, acceptor.accept(stream)) => r,
        _ = shutdown.changed() => return,
    };
    let tls = match handshake {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            let reason = format!("TLS handshake failed: {e}");
            return shared.end_log.bad_end(&peer, 0, &reason);
        }
        Err(_) => return shared.end_log.bad_end(&peer, 0, "no TLS handshake within the lease"),
    };
    let (tcp, conn) = tls.into_inner();
    session::run(TlsTransport { tcp, conn }, peer, local, shared, shutdown, alive).await
}

/// Answers a plain-text hello on the TLS listener with a plain-text
/// [`HelloStatus::TlsRequired`], then closes.
async fn refuse_plain(mut stream: TcpStream, first: u8, peer: &str, shared: &Shared) {
    let end = |reason: &str| shared.end_log.bad_end(peer, 0, reason);
    if first != MAGIC[0] {
        return end("neither a TLS handshake nor a rangelock hello on the TLS listener");
    }
    // Read the whole hello (token included) first: closing with unread bytes would
    // reset the connection, and the client might lose the answer.
    match tokio::time::timeout(shared.config.lease, session::read_hello(&mut stream)).await {
        Ok(Ok(HelloRead::NotHello(_))) => {
            return end("neither a TLS handshake nor a rangelock hello on the TLS listener")
        }
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return end("closed before or during its hello"),
        Err(_) => return end("no hello within the lease"),
    }
    end("plain-text hello on the TLS listener (TLS required)");
    let (_, wr) = stream.into_split();
    session::refuse_hello(&wr, shared.server_hello(HelloStatus::TlsRequired, 0)).await;
}

/// A TCP connection after its TLS handshake; see the module docs.
pub(crate) struct TlsTransport {
    tcp: TcpStream,
    conn: ServerConnection,
}

impl Transport for TlsTransport {
    type Read = TlsRead;
    type Write = TlsWrite;
    fn into_halves(self) -> (TlsRead, TlsWrite) {
        let io = Arc::new(TlsIo { tcp: self.tcp, conn: Mutex::new(self.conn) });
        let read = TlsRead {
            io: io.clone(),
            raw: vec![0; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            owes_output: false,
        };
        (read, TlsWrite { io })
    }
    fn socket_fd(read: &TlsRead) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&read.io.tcp)
    }
}

/// The rustls connection under its lock and the socket beside it; see the module docs.
struct TlsIo {
    tcp: TcpStream,
    conn: Mutex<ServerConnection>,
}

impl fmt::Debug for TlsIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIo").field("tcp", &self.tcp).finish_non_exhaustive()
    }
}

impl TlsIo {
    fn lock(&self) -> MutexGuard<'_, ServerConnection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends the records rustls holds, without blocking: `Ok` once none are left,
    /// `WouldBlock` when the socket is full. Called under the lock (`conn`).
    fn send_queued(&self, conn: &mut ServerConnection) -> io::Result<()> {
        while conn.wants_write() {
            match conn.write_tls(&mut Sock(&self.tcp)) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Non-blocking writes to the socket, for `write_tls`.
struct Sock<'a>(&'a TcpStream);

impl io::Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The read half of a TLS session; see the module docs.
pub(crate) struct TlsRead {
    io: Arc<TlsIo>,
    /// Ciphertext received but not yet handed to rustls: `raw[start..end]`.
    raw: Box<[u8]>,
    start: usize,
    end: usize,
    /// Decrypting queued records that did not fit into the socket (see the module docs).
    owes_output: bool,
}

impl fmt::Debug for TlsRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsRead").field("buffered", &(self.end - self.start)).finish()
    }
}

impl AsyncRead for TlsRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            {
                let mut conn = this.io.lock();
                match io::Read::read(&mut conn.reader(), buf.initialize_unfilled()) {
                    Ok(n) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    // TCP closed without `close_notify`: an end like any other (a frame
                    // cut short still shows as one to the frame reader).
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
                if this.start < this.end {
                    // Hand rustls what was received, and decrypt it.
                    let mut rd = &this.raw[this.start..this.end];
                    let fed = conn.read_tls(&mut rd);
                    this.start = this.end - rd.len();
                    let processed = fed.and_then(|_| {
                        conn.process_new_packets()
                            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
                    });
                    if conn.wants_write() {
                        // Records of the read side (an alert, a key update's answer).
                        let sent = this.io.send_queued(&mut conn);
                        this.owes_output =
                            matches!(&sent, Err(e) if e.kind() == io::ErrorKind::WouldBlock);
                    }
                    if let Err(e) = processed {
                        return Poll::Ready(Err(e));
                    }
                    continue;
                }
                if this.owes_output {
                    match this.io.send_queued(&mut conn) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            // Woken when the socket can take them; nothing else to do then.
                            drop(conn);
                            if this.io.tcp.poll_write_ready(cx).is_ready() {
                                continue;
                            }
                        }
                        _ => this.owes_output = false,
                    }
                }
            }
            // Receive more ciphertext, without the lock.
            match this.io.tcp.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match this.io.tcp.try_read(&mut this.raw) {
                Ok(0) => {
                    // EOF: rustls learns of it from an empty read.
                    let mut conn = this.io.lock();
                    conn.read_tls(&mut io::empty())?;
                }
                Ok(n) => (this.start, this.end) = (0, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// The write half of a TLS session: a [`DirectWrite`] usable from any thread; see the
/// module docs. Dropping it sends `close_notify` (if the socket takes it) and shuts the
/// socket's write side down.
pub(crate) struct TlsWrite {
    io: Arc<TlsIo>,
}

impl fmt::Debug for TlsWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsWrite").field("io", &self.io).finish()
    }
}

impl DirectWrite for TlsWrite {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let mut conn = self.io.lock();
        // (1) Earlier records first; while they wait, take nothing new.
        self.io.send_queued(&mut conn)?;
        // (2) Encrypt (bounded by rustls's buffer limit).
        let n = conn.writer().write(buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        // (3) Send what the socket takes; the rest is `try_flush`'s.
        match self.io.send_queued(&mut conn) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(n),
        }
    }

    fn try_flush(&self) -> io::Result<()> {
        let mut conn = self.io.lock();
        self.io.send_queued(&mut conn)
    }

    fn writable(&self) -> impl std::future::Future<Output = io::Result<()>> + Send {
        self.io.tcp.writable()
    }
}

impl Drop for TlsWrite {
    fn drop(&mut self) {
        {
            let mut conn = self.io.lock();
            conn.send_close_notify();
            let _ = self.io.send_queued(&mut conn);
        }
        // The read half shares the socket: shut the write side down explicitly, as
        // dropping a plain session's `OwnedWriteHalf` does.
        let _ = socket_shutdown_write(&self.io.tcp);
    }
}

/// `shutdown(fd, SHUT_WR)`.
fn socket_shutdown_write(tcp: &TcpStream) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: shutdown(2) on the descriptor of a socket this process owns and keeps open
    // (`tcp` is borrowed for the call); it changes no memory.
    let r = unsafe { libc::shutdown(tcp.as_raw_fd(), libc::SHUT_WR) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A server-side [`TlsTransport`] and a tokio-rustls client connected to it.
    async fn pair() -> (TlsTransport, tokio_rustls::client::TlsStream<TcpStream>) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(cert.cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connect = async {
            let tcp = TcpStream::connect(addr).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, tcp).await.unwrap()
        };
        let accept = async {
            let (tcp, _) = listener.accept().await.unwrap();
            TlsAcceptor::from(Arc::new(server)).accept(tcp).await.unwrap()
        };
        let (client, server) = tokio::join!(connect, accept);
        let (tcp, conn) = server.into_inner();
        (TlsTransport { tcp, conn }, client)
    }

    fn pattern(i: usize) -> u8 {
        (i % 251) as u8
    }

    /// `try_write` takes plaintext whose records the full socket cannot take yet;
    /// `try_flush` reports them held back and sends them once there is room: the peer
    /// reads every taken byte, in order, then a clean end (`close_notify`).
    #[tokio::test]
    async fn records_held_back_by_a_full_socket_are_flushed_in_order() {
        let (transport, mut client) = pair().await;
        let (_rd, wr) = transport.into_halves();
        let data: Vec<u8> = (0..64 << 20).map(pattern).collect();
        let (mut taken, mut held_back_seen) = (0, false);
        loop {
            match wr.try_write(&data[taken..]) {
                Ok(n) => {
                    taken += n;
                    if wr.try_flush().is_err() {
                        held_back_seen = true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
            assert!(taken < data.len(), "the socket never filled up");
        }
        assert!(held_back_seen, "some records were taken and held back");
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.map(|_| got)
        });
        crate::reply::flush(&wr).await.unwrap();
        drop(wr);
        let got = reader.await.unwrap().expect("a clean end: close_notify, then EOF");
        assert_eq!(got.len(), taken);
        assert!(got.iter().enumerate().all(|(i, &b)| b == pattern(i)), "in order");
    }
}
