//! Client errors, and how a connection was lost.

use std::time::{Duration, Instant};

use rangelock_proto::{DecodeError, EndReason, Status, MIN_VERSION};

use crate::endpoint::Endpoint;

/// The longest [`Wait::Timeout`](crate::Wait::Timeout) the protocol can carry: its
/// `timeout_ms` field is a `u32` of milliseconds (about 49.7 days). A longer timeout is
/// refused with [`ClientError::TimeoutTooLong`]; use [`Wait::Forever`](crate::Wait::Forever)
/// to wait without a limit.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(u32::MAX as u64);

/// Why a client operation failed.
///
/// Each message says what failed and why in one line, and no variant also exposes its
/// cause as [`source`](std::error::Error::source): wrapping one (e.g. with
/// `anyhow::Context`) never prints the cause twice.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Opening the connection or the handshake's I/O failed.
    #[error("cannot connect to {endpoint}: {}", brief_io(.error))]
    Connect {
        /// Where the client tried to connect.
        endpoint: Endpoint,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// Some other I/O failed.
    #[error("i/o error: {}", brief_io(.0))]
    Io(std::io::Error),
    /// The peer is not a rangelock server.
    #[error("handshake failed: {0}")]
    Handshake(DecodeError),
    /// The server speaks another protocol version, and none this client speaks
    /// ([`MIN_VERSION`] to `client`).
    #[error(
        "server speaks protocol version {server}, this client speaks versions {min} to {client}",
        min = MIN_VERSION
    )]
    UnsupportedVersion {
        /// The server's version.
        server: u16,
        /// The newest version this client speaks (the one it offered first).
        client: u16,
    },
    /// The server needs an authentication token and the client sent none.
    #[error("the server requires an authentication token and none was given")]
    AuthRequired,
    /// The server does not know the client's token.
    #[error("the server refused the authentication token")]
    AuthFailed,
    /// TLS could not be set up: a certificate or key file, or the handshake (an unknown
    /// issuer, an expired certificate, a name mismatch, a refused or missing client
    /// certificate, a server that does not speak TLS on the address, TLS asked for on a
    /// Unix socket). The message says which.
    #[error("TLS: {0}")]
    Tls(String),
    /// A plain-text client reached a TLS listener.
    #[error("the server requires TLS on this address; connect with TLS")]
    TlsRequired,
    /// The connection is gone; the server has released every lock of this session.
    #[error("connection to the server lost (its locks are released)")]
    ConnectionLost,
    /// A `try` lock found the range taken.
    #[error("range is locked")]
    WouldBlock,
    /// The wait's timeout passed.
    #[error("timed out waiting for the lock")]
    TimedOut,
    /// The waiting lock was cancelled.
    #[error("lock request cancelled")]
    Cancelled,
    /// An empty or inverted range (checked before sending).
    #[error("invalid range {start}..{end}: a range must be non-empty (start < end)")]
    InvalidRange {
        /// First unit.
        start: u64,
        /// One past the last unit.
        end: u64,
    },
    /// A [`Wait::Timeout`](crate::Wait::Timeout) longer than the protocol can carry
    /// (checked before sending; see [`MAX_TIMEOUT`]).
    #[error("timeout {timeout:?} is longer than the protocol's maximum of {max:?}; wait forever instead")]
    TimeoutTooLong {
        /// The timeout asked for.
        timeout: Duration,
        /// The longest timeout the protocol carries ([`MAX_TIMEOUT`]).
        max: Duration,
    },
    /// A resource name of `len` bytes: names are 1 to
    /// [`MAX_RESOURCE_NAME_LEN`](rangelock_proto::MAX_RESOURCE_NAME_LEN) bytes (checked
    /// before sending).
    #[error("a resource name of {len} bytes: names are 1 to {max} bytes", max = rangelock_proto::MAX_RESOURCE_NAME_LEN)]
    InvalidName {
        /// The name's length.
        len: usize,
    },
    /// The session speaks a protocol version before 5, which has no named resources (the
    /// server is older, or refused version 5 and the client fell back).
    #[error("the session speaks protocol version {version}: named resources need version 5")]
    NamesUnsupported {
        /// The session's version.
        version: u16,
    },
    /// The server answered with an error status.
    #[error("server error: {0}")]
    Server(Status),
    /// A pipelined unlock (sent without waiting for its answer) of lock `lock` failed
    /// with `status`; reported by a later call of the same client.
    #[error("pipelined unlock of lock {lock} failed: {status}")]
    DeferredUnlock {
        /// The lock's request id.
        lock: u64,
        /// The server's answer.
        status: Status,
    },
    /// The server sent something this client cannot decode.
    #[error("protocol error: {0}")]
    Protocol(DecodeError),
    /// The server refused `SHM_ATTACH` ([`Client::attach_shm`](crate::Client::attach_shm)):
    /// `SHM_UNAVAILABLE` (no slots on this server, poll grants, or not a connection from
    /// its host), `SHM_FULL`, `SHM_ALREADY_ATTACHED`, or `UNKNOWN_OP` (a server older than
    /// the shared-memory slots).
    #[error("cannot attach a shared-memory slot: {}", shm_reason(*.0))]
    ShmRefused(Status),
    /// The slot file the server named could not be mapped (or does not show this
    /// session's slot).
    #[error("cannot map the shared-memory slot file {path}: {}", brief_io(.error))]
    ShmMap {
        /// The path the server sent.
        path: String,
        /// What went wrong.
        error: std::io::Error,
    },
}

/// Why `SHM_ATTACH` was refused, in words.
fn shm_reason(s: Status) -> String {
    match s {
        Status::UnknownOp => "the server does not know SHM_ATTACH (it predates it)".into(),
        Status::ShmUnavailable => "the server has no shared-memory slots for this connection \
                                   (started without --shm-slots, poll grants, or the \
                                   connection is not from the server's host)"
            .into(),
        other => other.to_string(),
    }
}

impl From<std::io::Error> for ClientError {
    fn from(e: std::io::Error) -> Self {
        ClientError::Io(e)
    }
}

impl ClientError {
    /// Maps a non-success status of a `LOCK`/`POLL` response.
    pub(crate) fn from_status(s: Status) -> Self {
        match s {
            Status::WouldBlock => ClientError::WouldBlock,
            Status::TimedOut => ClientError::TimedOut,
            Status::Cancelled => ClientError::Cancelled,
            other => ClientError::Server(other),
        }
    }

    /// Checks a server hello: `Ok` if it accepted the session, else the refusal as an
    /// error.
    pub(crate) fn check_hello(hello: &rangelock_proto::ServerHello) -> Result<(), ClientError> {
        use rangelock_proto::{HelloStatus, VERSION};
        match hello.status {
            HelloStatus::Accepted => Ok(()),
            HelloStatus::UnsupportedVersion => {
                Err(ClientError::UnsupportedVersion { server: hello.version, client: VERSION })
            }
            HelloStatus::AuthRequired => Err(ClientError::AuthRequired),
            HelloStatus::AuthFailed => Err(ClientError::AuthFailed),
            HelloStatus::TlsRequired => Err(ClientError::TlsRequired),
        }
    }

    /// Wraps a failure of connecting to `endpoint` (socket or handshake I/O).
    pub(crate) fn connect(endpoint: &Endpoint, error: std::io::Error) -> Self {
        ClientError::Connect { endpoint: endpoint.clone(), error }
    }
}

/// The version to offer on a new connection after `e` refused a hello of version `offered`:
/// the server's, if it is older and this client speaks it (`docs/PROTOCOL.md` §1).
pub(crate) fn fallback_version(e: &ClientError, offered: u16) -> Option<u16> {
    match *e {
        ClientError::UnsupportedVersion { server, .. }
            if (MIN_VERSION..offered).contains(&server) =>
        {
            Some(server)
        }
        _ => None,
    }
}

/// Refuses a wait the protocol cannot carry (see [`MAX_TIMEOUT`]).
pub(crate) fn check_wait(wait: crate::Wait) -> Result<(), ClientError> {
    match wait {
        crate::Wait::Timeout(timeout) if timeout > MAX_TIMEOUT => {
            Err(ClientError::TimeoutTooLong { timeout, max: MAX_TIMEOUT })
        }
        _ => Ok(()),
    }
}

/// A resource name a session of protocol `version` can send (`docs/PROTOCOL.md` §2.2),
/// as the clients keep it; refused before anything is sent otherwise.
pub(crate) fn check_name(name: &[u8], version: u16) -> Result<std::sync::Arc<[u8]>, ClientError> {
    if name.is_empty() || name.len() > rangelock_proto::MAX_RESOURCE_NAME_LEN {
        return Err(ClientError::InvalidName { len: name.len() });
    }
    if version < 5 {
        return Err(ClientError::NamesUnsupported { version });
    }
    Ok(name.into())
}

/// An I/O error as a short lower-case phrase: `connection refused` rather than
/// `Connection refused (os error 111)`.
pub(crate) fn brief_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = match (e.raw_os_error(), s.rfind(" (os error ")) {
        (Some(_), Some(at)) => &s[..at],
        _ => &s[..],
    };
    let mut chars = s.chars();
    match chars.next() {
        // Only lower an initial capital that starts an ordinary word ("Connection"), not
        // an acronym ("TLS").
        Some(c) if c.is_uppercase() && chars.clone().next().is_some_and(char::is_lowercase) => {
            c.to_lowercase().chain(chars).collect()
        }
        _ => s.to_owned(),
    }
}

/// How a connection was found lost: returned by
/// [`Client::wait_lost`](crate::Client::wait_lost) and
/// [`AsyncClient::loss`](crate::AsyncClient::loss).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLoss {
    /// What the client saw.
    pub cause: LossCause,
    /// How long before the loss was noticed the client had sent the last keepalive the
    /// server answered (or the handshake): [`alive_at`](Self::alive_at) until the loss.
    pub silent_for: Duration,
    /// The server's lease.
    pub lease: Duration,
    /// When the last keepalive the server answered was sent (or the handshake): the
    /// session, and every lock in it, was still there at that instant. A server that ends
    /// the session because its lease lapsed does so no earlier than a lease after it.
    pub alive_at: Instant,
    /// The longest time this client went without sending a keepalive, after
    /// [`alive_at`](Self::alive_at) and up to the loss. Its keepalive task sends one every
    /// third of the lease, so half a lease or more means this process was stopped or
    /// starved; the server answering nothing is not counted. (The blocking client waits
    /// for each keepalive's answer before the next; for it this is
    /// [`silent_for`](Self::silent_for).)
    pub quiet_for: Duration,
}

impl ConnectionLoss {
    /// Whether the session ended because its lease lapsed. A version 4 server says so
    /// ([`LossCause::SessionEnded`] with [`EndReason::LeaseExpired`]). With a version 3
    /// server it is a guess: the server closed the connection, no keepalive of this client
    /// was answered for a lease, and this client itself went quiet for half a lease or
    /// more (it was stopped or starved). A server that closes the connection after it was
    /// itself stopped (its clients' keepalives unanswered meanwhile), or that is killed,
    /// ended no lapsed session.
    pub fn lease_lapsed(&self) -> bool {
        match self.cause {
            LossCause::SessionEnded(reason) => reason == EndReason::LeaseExpired,
            cause => {
                cause == LossCause::ClosedByServer
                    && self.silent_for >= self.lease
                    && self.quiet_for >= self.lease / 2
            }
        }
    }
}

impl core::fmt::Display for ConnectionLoss {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.lease_lapsed() {
            return write!(
                f,
                "session ended by the server: lease lapsed (this client was silent for {:.1?}, \
                 the lease is {:?})",
                self.silent_for, self.lease
            );
        }
        match self.cause {
            LossCause::ClosedByServer => f.write_str("the server closed the connection"),
            LossCause::Io(kind) => write!(f, "connection failed: {kind}"),
            LossCause::Protocol => f.write_str("the server sent a frame this client cannot read"),
            LossCause::Unresponsive => write!(
                f,
                "the server answered no keepalive for a lease ({:?}): it is stopped or \
                 unreachable",
                self.lease
            ),
            LossCause::SessionEnded(reason) => write!(f, "session ended by the server: {reason}"),
        }
    }
}

/// What ended a connection (see [`ConnectionLoss`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossCause {
    /// The server closed (or reset) the connection: it ended the session.
    ClosedByServer,
    /// Reading or writing the socket failed otherwise.
    Io(std::io::ErrorKind),
    /// The server sent a frame this client cannot decode (the client closed the
    /// connection).
    Protocol,
    /// The connection stayed open but the server answered no `KEEPALIVE` for a whole
    /// lease: it is stopped (`SIGSTOP`, a suspended machine) or the network drops
    /// everything. The client closed the connection. Only the async client finds this;
    /// the blocking client's keepalive thread waits for its answer without a limit.
    Unresponsive,
    /// The server ended the session and said why before it closed the connection (a
    /// `SESSION_ENDED` notice: protocol version 4, `docs/PROTOCOL.md` §2.1).
    SessionEnded(EndReason),
}

impl LossCause {
    /// Classifies the error that ended a connection.
    pub(crate) fn of(e: &ClientError) -> LossCause {
        use std::io::ErrorKind as K;
        match e {
            ClientError::Io(e) | ClientError::Connect { error: e, .. } => match e.kind() {
                K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
                    LossCause::ClosedByServer
                }
                k => LossCause::Io(k),
            },
            _ => LossCause::Protocol,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use std::io;

    #[test]
    #[cfg(target_os = "linux")]
    fn connect_errors_say_once_what_failed_and_why() {
        let e = ClientError::connect(
            &"127.0.0.1:7878".parse().unwrap(),
            io::Error::from_raw_os_error(111), // ECONNREFUSED on Linux
        );
        assert_eq!(e.to_string(), "cannot connect to 127.0.0.1:7878: connection refused");
        assert!(e.source().is_none(), "the cause is in the message, not repeated as a source");
        let e = ClientError::from(io::Error::other("TLS is not spoken here"));
        assert_eq!(e.to_string(), "i/o error: TLS is not spoken here");
        assert!(e.source().is_none());
    }

    #[test]
    fn timeouts_beyond_the_protocol_field_are_refused() {
        use crate::Wait;
        assert!(check_wait(Wait::Timeout(MAX_TIMEOUT)).is_ok());
        assert!(check_wait(Wait::Forever).is_ok());
        let long = MAX_TIMEOUT + Duration::from_millis(1);
        match check_wait(Wait::Timeout(long)) {
            Err(ClientError::TimeoutTooLong { timeout, max }) => {
                assert_eq!((timeout, max), (long, MAX_TIMEOUT))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_loss_after_more_than_a_lease_of_silence_is_a_lapsed_lease() {
        let lease = Duration::from_millis(300);
        let lapsed = ConnectionLoss {
            cause: LossCause::ClosedByServer,
            silent_for: Duration::from_secs(2),
            lease,
            alive_at: Instant::now(),
            quiet_for: Duration::from_secs(2),
        };
        assert!(lapsed.lease_lapsed());
        assert!(lapsed.to_string().contains("lease lapsed"), "{lapsed}");
        let closed = ConnectionLoss { silent_for: Duration::from_millis(50), ..lapsed.clone() };
        assert!(!closed.lease_lapsed());
        assert_eq!(closed.to_string(), "the server closed the connection");
        // Unanswered for two seconds, but this client kept sending: the server stopped
        // (and then closed the connection, or died). No lapse of ours.
        let server_stopped = ConnectionLoss { quiet_for: Duration::from_millis(100), ..lapsed };
        assert!(!server_stopped.lease_lapsed());
    }
}
