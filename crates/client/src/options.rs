//! How to connect: the authentication token and, on TCP, TLS ([`TlsOptions`]).
//!
//! ```no_run
//! use rangelock_client::{Client, ConnectOptions, Endpoint};
//! let options = ConnectOptions::new().token("s3cret");
//! let client = Client::connect_with(&"10.0.0.5:7878".parse().unwrap(), &options).unwrap();
//! ```
//!
//! The token is a secret: [`ConnectOptions`]'s `Debug` never shows it, and neither the
//! client nor the server logs it. Off the host, use TLS so that it does not cross the
//! network in plain text (`docs/PROTOCOL.md` §1.1–§1.2).

use rangelock_proto::ClientHello;

use crate::tls::TlsOptions;

/// Options of [`Client::connect_with`](crate::Client::connect_with) and
/// [`AsyncClient::connect_with`](crate::AsyncClient::connect_with);
/// [`ConnectOptions::default`] is what [`Client::connect`](crate::Client::connect) uses.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    token: Option<String>,
    tls: Option<TlsOptions>,
}

impl core::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let token = self.token.as_ref().map(|_| "<redacted>");
        f.debug_struct("ConnectOptions")
            .field("token", &token)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl ConnectOptions {
    /// No token, no TLS.
    pub fn new() -> Self {
        Self::default()
    }

    /// Authenticates with `token` (a server with an auth file refuses a session without
    /// a token it knows: [`ClientError::AuthRequired`](crate::ClientError::AuthRequired),
    /// [`ClientError::AuthFailed`](crate::ClientError::AuthFailed)).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Speaks TLS as `tls` says (TCP endpoints only: on a `unix:` endpoint connecting
    /// fails with [`ClientError::Tls`](crate::ClientError::Tls)).
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The TLS options, if TLS is on.
    pub fn tls_options(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// Whether a token is set.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The client hello of protocol `version` these options send.
    pub(crate) fn hello(&self, version: u16) -> ClientHello {
        ClientHello { version, ..ClientHello::with_token(self.token.as_deref().map(str::as_bytes)) }
    }
}
