//! Reloading the auth file and the TLS files while the server runs
//! ([`Server::reload`](crate::Server::reload); `rangelock serve` calls it on SIGHUP).
//!
//! A reload reads every file the server was started with (the auth file of
//! [`ServerConfig::auth`](crate::ServerConfig::auth); the certificate, key and client CA of
//! [`ServerConfig::tls`](crate::ServerConfig::tls)) and checks them exactly as a start
//! does. Only when all of them are good does it put the new material in force, all of it
//! at once; a bad file (missing, unparsable, a key that is not the certificate's) refuses
//! the whole reload with the file's error, and the old material stays in force.
//!
//! Sessions and their locks stay. A TLS session keeps the keys of its handshake; the new
//! certificate serves the handshakes that start after the reload. An authenticated
//! session goes on while the new auth file holds its token with the same name, ranges and
//! name prefixes ([`AuthTable::revoked_by`]); otherwise it is ended with the `SESSION_ENDED` notice
//! reason `TOKEN_REVOKED` (`docs/PROTOCOL.md` §2.1), which releases its locks.
//!
//! # Why a `watch` channel
//!
//! The material lives in two `tokio::sync::watch` channels. A channel is a pointer
//! swapped under a short lock (a reader clones an `Arc` or a `TlsAcceptor`, itself an
//! `Arc`, once per connection) that also wakes whoever waits for a change: each
//! authenticated session waits on the auth channel to learn that its token was revoked.
//! `arc-swap` would save that short lock on a path taken once per connection and would
//! still need a notification for the sessions. A `ResolvesServerCert` that reads the
//! current certificate would cover the certificate and key only, not the client CA (its
//! verifier is part of the rustls `ServerConfig`): swapping the whole acceptor covers
//! all three.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::auth::{AuthFileError, AuthTable};
use crate::tls::{self, TlsError, TlsSettings};

/// The auth table and the TLS acceptor in force; see the module docs.
pub(crate) struct Live {
    /// The tokens sessions must present (`None`: no authentication).
    pub(crate) auth: watch::Sender<Option<Arc<AuthTable>>>,
    /// The acceptor of new TLS handshakes, with the files it came from (`None`: plain
    /// TCP).
    tls: Option<(TlsSettings, watch::Sender<TlsAcceptor>)>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("auth", &*self.auth.borrow())
            .field("tls", &self.tls.as_ref().map(|(s, _)| s))
            .finish()
    }
}

impl Live {
    /// The material a server starts with.
    pub(crate) fn new(
        auth: Option<Arc<AuthTable>>,
        tls: Option<(TlsSettings, TlsAcceptor)>,
    ) -> Live {
        Live {
            auth: watch::Sender::new(auth),
            tls: tls.map(|(settings, acceptor)| (settings, watch::Sender::new(acceptor))),
        }
    }

    /// The acceptor for a TLS handshake starting now (`None`: plain TCP).
    pub(crate) fn acceptor(&self) -> Option<TlsAcceptor> {
        self.tls.as_ref().map(|(_, tx)| tx.borrow().clone())
    }

    /// Reads every file again and, if all are good, puts them in force.
    pub(crate) fn reload(&self) -> Result<Reloaded, ReloadError> {
        let old_auth = self.auth.borrow().clone();
        let auth = old_auth.as_deref().map(|t| AuthTable::load(t.path())).transpose()?;
        let tls = self.tls.as_ref().map(|(s, _)| tls::acceptor(s)).transpose()?;
        // Every file is good: nothing can fail from here on.
        let revoked = match (&old_auth, &auth) {
            (Some(old), Some(new)) => old.revoked_by(new),
            _ => Vec::new(),
        };
        let tokens = auth.as_ref().map(AuthTable::len);
        if let (Some((_, tx)), Some(acceptor)) = (&self.tls, tls) {
            tx.send_replace(acceptor);
        }
        if let Some(new) = auth {
            // Wakes every authenticated session, which checks its own token.
            self.auth.send_replace(Some(Arc::new(new)));
        }
        Ok(Reloaded { tokens, tls: self.tls.is_some(), revoked })
    }
}

/// What a successful [`Server::reload`](crate::Server::reload) put in force.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Tokens in the new auth file (`None`: the server has no auth file).
    pub tokens: Option<usize>,
    /// Whether the certificate, key and client CA were read again (the server uses TLS).
    pub tls: bool,
    /// Names of the tokens whose sessions end: removed from the auth file, or their name
    /// or ranges changed.
    pub revoked: Vec<String>,
}

/// Why a reload was refused; the old material stays in force.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The auth file cannot be used.
    #[error(transparent)]
    Auth(#[from] AuthFileError),
    /// A TLS file cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}
