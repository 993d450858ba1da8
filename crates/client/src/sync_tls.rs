//! TLS for the blocking client: a reader and a writer over one rustls connection, for the
//! leader/follower structure of the `sync_core` module.
//!
//! # Why not one lock around a `rustls::StreamOwned`
//!
//! The blocking client's reader (the leader) waits in `read` for as long as the server
//! takes to answer — a lock wait can last seconds. Were the rustls connection locked for
//! that long, no other thread could write: a thread holding the range the reader's
//! `LOCK` waits for could not send its `UNLOCK`, and the two would wait for each other
//! forever. So the socket stays outside the lock, as in the server's TLS transport:
//!
//! * [`TlsReader::read`] receives ciphertext with a blocking `read` *without* the lock,
//!   then locks the connection to hand it to rustls, decrypt and copy plaintext out.
//! * [`TlsWriter::send`] locks `send` (which orders sends), then the connection to
//!   encrypt and take every queued record, unlocks the connection and writes the records
//!   with a blocking `write` under `send` only. Records reach the socket in the order
//!   rustls sealed them because every taker of records holds `send` while it takes them
//!   and until it has written them.
//! * Records the read side queues (the answer to a TLS 1.3 `KeyUpdate`) are sent by the
//!   reader if `send` is free (`try_lock`: the reader never waits for a writer, so a
//!   writer blocked on a full socket cannot stall the reader that would drain it), else
//!   they go out with the next request (a keepalive at the latest).
//!
//! Lock order: `send`, then `conn`; the reader takes `conn` alone, or `send` with
//! `try_lock`.
//!
//! The plain-TCP path does not come through here: it keeps its own reader and writer
//! sockets, without a lock of its own beyond those of `sync_core`.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

/// Ciphertext bytes read per `read` (one full TLS record and more).
const READ_CHUNK: usize = 18 * 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the reader and the writer share; see the module docs.
#[derive(Debug)]
struct Shared {
    conn: Mutex<ClientConnection>,
    send: Mutex<Sender>,
}

/// The sending side: the socket and a buffer of records taken from rustls.
#[derive(Debug)]
struct Sender {
    sock: TcpStream,
    out: Vec<u8>,
}

impl Shared {
    /// Takes every queued record and writes it (the caller holds `send`).
    fn send_queued(&self, s: &mut Sender) -> io::Result<()> {
        {
            let mut conn = lock(&self.conn);
            while conn.wants_write() {
                conn.write_tls(&mut s.out)?;
            }
        }
        let r = s.sock.write_all(&s.out);
        s.out.clear();
        r
    }
}

/// Performs the TLS handshake on `tcp` (blocking) and splits the connection.
pub(crate) fn connect(
    tcp: TcpStream,
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
) -> io::Result<(TlsReader, TlsWriter)> {
    let mut conn = ClientConnection::new(config, name).map_err(io::Error::other)?;
    // No limit on rustls's output buffer: `send` takes everything it encrypts at once.
    conn.set_buffer_limit(None);
    while conn.is_handshaking() {
        conn.complete_io(&mut &tcp)?;
    }
    let shared = Arc::new(Shared {
        conn: Mutex::new(conn),
        send: Mutex::new(Sender { sock: tcp.try_clone()?, out: Vec::with_capacity(256) }),
    });
    let reader = TlsReader {
        shared: shared.clone(),
        sock: tcp,
        raw: vec![0; READ_CHUNK].into_boxed_slice(),
        start: 0,
        end: 0,
    };
    Ok((reader, TlsWriter { shared }))
}

/// The reading side (used by one thread at a time: the leader).
#[derive(Debug)]
pub(crate) struct TlsReader {
    shared: Arc<Shared>,
    sock: TcpStream,
    /// Ciphertext read but not yet handed to rustls: `raw[start..end]`.
    raw: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Read for TlsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            {
                let mut conn = lock(&self.shared.conn);
                match conn.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    // The server closed TCP without `close_notify` (it crashed, or
                    // ended the session): an end like any other.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if self.start < self.end {
                    let mut rd = &self.raw[self.start..self.end];
                    let fed = conn.read_tls(&mut rd);
                    self.start = self.end - rd.len();
                    let processed = fed.and_then(|_| {
                        conn.process_new_packets()
                            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
                    });
                    let owes = conn.wants_write();
                    drop(conn);
                    if owes {
                        if let Ok(mut s) = self.shared.send.try_lock() {
                            let _ = self.shared.send_queued(&mut s);
                        }
                    }
                    processed?;
                    continue;
                }
            }
            // Wait for ciphertext without the lock.
            match self.sock.read(&mut self.raw) {
                Ok(0) => {
                    lock(&self.shared.conn).read_tls(&mut io::empty())?;
                }
                Ok(n) => (self.start, self.end) = (0, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The writing side.
#[derive(Debug)]
pub(crate) struct TlsWriter {
    shared: Arc<Shared>,
}

impl TlsWriter {
    /// Encrypts `plain` and writes it (blocking); see the module docs.
    pub(crate) fn send(&self, plain: &[u8]) -> io::Result<()> {
        let mut s = lock(&self.shared.send);
        lock(&self.shared.conn).writer().write_all(plain)?;
        self.shared.send_queued(&mut s)
    }

    /// Sends `close_notify` if the socket takes it at once (the connection is closing).
    pub(crate) fn close(&self) {
        let mut s = lock(&self.shared.send);
        lock(&self.shared.conn).send_close_notify();
        if s.sock.set_nonblocking(true).is_ok() {
            let _ = self.shared.send_queued(&mut s);
        }
    }
}
