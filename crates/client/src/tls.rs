//! TLS options of a connection ([`TlsOptions`]) and how TLS failures are reported.
//!
//! ```no_run
//! use rangelock_client::{Client, ConnectOptions, TlsOptions};
//! let tls = TlsOptions::from_ca_file("ca.pem")?
//!     .client_cert_files("client.pem", "client.key")?; // only if the server asks
//! let options = ConnectOptions::new().tls(tls);
//! let client = Client::connect_with(&"lock.example.com:7878".parse().unwrap(), &options)?;
//! # Ok::<(), rangelock_client::ClientError>(())
//! ```
//!
//! The server's certificate must be signed by one of the trusted CAs and be valid for
//! the name the client connects to: the host part of the `host:port` endpoint (an IP
//! address works too, and must then be in the certificate), or the name given with
//! [`TlsOptions::server_name`]. TLS 1.2 and 1.3, with rustls's `ring` provider.
//!
//! Failures come back as [`ClientError::Tls`] with a message that says what went wrong:
//! an unknown issuer, an expired certificate, a name mismatch, a refused or missing
//! client certificate, or a server that does not speak TLS on the address. A plain-text
//! client on a TLS listener gets [`ClientError::TlsRequired`] instead.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};

use crate::endpoint::Endpoint;
use crate::error::ClientError;

/// How a client speaks TLS: the CAs it trusts, its own certificate (when the server asks
/// for one) and the name the server's certificate must carry. See the module docs.
#[derive(Clone)]
pub struct TlsOptions {
    roots: Arc<RootCertStore>,
    client_cert: Option<(Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>)>,
    server_name: Option<String>,
}

impl core::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key.
        f.debug_struct("TlsOptions")
            .field("trusted_cas", &self.roots.len())
            .field("client_cert", &self.client_cert.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl TlsOptions {
    /// Trusts the CAs in `roots`.
    pub fn new(roots: RootCertStore) -> Self {
        TlsOptions { roots: Arc::new(roots), client_cert: None, server_name: None }
    }

    /// Trusts the CA certificates in the PEM file `path` (at least one).
    pub fn from_ca_file(path: impl AsRef<Path>) -> Result<Self, ClientError> {
        let path = path.as_ref();
        let mut roots = RootCertStore::empty();
        for cert in read_certs("CA", path)? {
            roots.add(cert).map_err(|e| {
                ClientError::Tls(format!(
                    "the CA file {} holds a certificate that cannot be used: {e}",
                    path.display()
                ))
            })?;
        }
        Ok(Self::new(roots))
    }

    /// Presents `chain` (this client's certificate first) with its private `key` when the
    /// server asks for a client certificate.
    pub fn client_cert(
        mut self,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Self {
        self.client_cert = Some((chain, Arc::new(key)));
        self
    }

    /// [`TlsOptions::client_cert`] from PEM files: the certificate chain in `cert`, its
    /// private key (PKCS#8, PKCS#1 or SEC1) in `key`.
    pub fn client_cert_files(
        self,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, ClientError> {
        let chain = read_certs("client certificate", cert.as_ref())?;
        let key = key.as_ref();
        let pem = read_file("client key", key)?;
        let der = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
            ClientError::Tls(match e {
                rustls::pki_types::pem::Error::NoItemsFound => format!(
                    "the client key file {} holds no private key (expected a -----BEGIN \
                     PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY block)",
                    key.display()
                ),
                e => format!("the client key file {} is not valid PEM: {e}", key.display()),
            })
        })?;
        Ok(self.client_cert(chain, der))
    }

    /// Checks the server's certificate against `name` instead of the endpoint's host
    /// (a DNS name or an IP address).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// The rustls configuration and the server name for connecting to `endpoint`.
    pub(crate) fn prepare(
        &self,
        endpoint: &Endpoint,
    ) -> Result<(Arc<ClientConfig>, ServerName<'static>), ClientError> {
        let host = match (&self.server_name, endpoint) {
            (Some(name), _) => name.clone(),
            (None, Endpoint::Tcp(addr)) => host_of(addr).to_owned(),
            (None, Endpoint::Unix(_)) => return Err(unix_refused(endpoint)),
        };
        let name = ServerName::try_from(host.clone()).map_err(|_| {
            ClientError::Tls(format!("{host:?} is neither a DNS name nor an IP address"))
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .expect("the ring provider supports TLS 1.2 and 1.3")
            .with_root_certificates(self.roots.clone());
        let config = match &self.client_cert {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                builder.with_client_auth_cert(chain.clone(), key.clone_key()).map_err(|e| {
                    ClientError::Tls(match e {
                        rustls::Error::InconsistentKeys(_) => {
                            "the client key is not the private key of the client certificate"
                                .to_owned()
                        }
                        e => format!("the client certificate or key cannot be used: {e}"),
                    })
                })?
            }
        };
        Ok((Arc::new(config), name))
    }
}

/// `TLS on a Unix socket`: refused before connecting.
pub(crate) fn unix_refused(endpoint: &Endpoint) -> ClientError {
    ClientError::Tls(format!(
        "TLS is for TCP endpoints; {endpoint} is a Unix socket, which the server serves \
         without TLS"
    ))
}

/// The host of `host:port` (`[v6]:port` too).
fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        if let Some((host, _)) = rest.split_once(']') {
            return host;
        }
    }
    addr.rsplit_once(':').map_or(addr, |(host, _)| host)
}

fn read_file(what: &str, path: &Path) -> Result<Vec<u8>, ClientError> {
    std::fs::read(path).map_err(|e| {
        ClientError::Tls(format!(
            "cannot read the {what} file {}: {}",
            path.display(),
            crate::error::brief_io(&e)
        ))
    })
}

fn read_certs(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let pem = read_file(what, path)?;
    let certs =
        CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| {
            ClientError::Tls(format!("the {what} file {} is not valid PEM: {e}", path.display()))
        })?;
    if certs.is_empty() {
        return Err(ClientError::Tls(format!(
            "the {what} file {} holds no certificate (expected a -----BEGIN CERTIFICATE----- \
             block)",
            path.display()
        )));
    }
    Ok(certs)
}

/// Maps an I/O error of a TLS connection (its handshake, or the hello exchange right
/// after it, where a TLS 1.3 server refuses a client certificate) to a clear
/// [`ClientError`]; any other error stays [`ClientError::Connect`].
pub(crate) fn io_error(endpoint: &Endpoint, handshaking: bool, e: io::Error) -> ClientError {
    if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        return ClientError::Tls(format!("handshake with {endpoint} failed: {}", describe(tls)));
    }
    use io::ErrorKind as K;
    if handshaking
        && matches!(
            e.kind(),
            K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
        )
    {
        return ClientError::Tls(format!(
            "the server at {endpoint} closed the connection during the TLS handshake: it does \
             not speak TLS on this address (a plain-text rangelock server?)"
        ));
    }
    ClientError::connect(endpoint, e)
}

/// A rustls error in words.
fn describe(e: &rustls::Error) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "the server's certificate is not signed by a CA \
                                                this client trusts (unknown issuer)"
                .to_owned(),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".to_owned()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet".to_owned()
            }
            CertificateError::NotValidForNameContext { expected, presented } => format!(
                "the server's certificate is not valid for the name {} (name mismatch: it \
                 names {}; connect by one of those or give one as the TLS server name)",
                expected.to_str(),
                presented.join(", ")
            ),
            CertificateError::NotValidForName => "the server's certificate is not valid for \
                                                  the name this client connected to (name \
                                                  mismatch)"
                .to_owned(),
            c => format!("the server's certificate is not acceptable: {c:?}"),
        },
        E::AlertReceived(a) => match a {
            AlertDescription::CertificateRequired => {
                "the server requires a client certificate and none was given".to_owned()
            }
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::AccessDenied => {
                format!("the server refused this client's certificate (TLS alert {a:?})")
            }
            a => format!("the server ended the TLS handshake (TLS alert {a:?})"),
        },
        E::InvalidMessage(_) => "the server's answer is not TLS: it does not speak TLS on this \
                                 address (a plain-text rangelock server?)"
            .to_owned(),
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_of_an_endpoint_names_the_server() {
        assert_eq!(host_of("lock.example.com:7878"), "lock.example.com");
        assert_eq!(host_of("127.0.0.1:7878"), "127.0.0.1");
        assert_eq!(host_of("[::1]:7878"), "::1");
    }

    #[test]
    fn tls_on_a_unix_socket_is_refused() {
        let ep: Endpoint = "unix:/tmp/x.sock".parse().unwrap();
        let e = TlsOptions::new(RootCertStore::empty()).prepare(&ep).unwrap_err();
        assert!(e.to_string().contains("Unix socket"), "{e}");
    }

    #[test]
    fn handshake_failures_say_what_went_wrong() {
        let ep: Endpoint = "127.0.0.1:1".parse().unwrap();
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let e = io_error(&ep, true, io::Error::new(io::ErrorKind::InvalidData, unknown));
        assert!(matches!(&e, ClientError::Tls(m) if m.contains("unknown issuer")), "{e}");
        let eof = io_error(&ep, true, io::ErrorKind::UnexpectedEof.into());
        assert!(eof.to_string().contains("does not speak TLS"), "{eof}");
        let refused = io_error(&ep, false, io::ErrorKind::ConnectionRefused.into());
        assert!(matches!(refused, ClientError::Connect { .. }), "{refused}");
    }
}
