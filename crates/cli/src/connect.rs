//! How `lock` and `stat` connect to a server: the authentication token and TLS
//! (`--tls-ca` turns it on).

use std::path::PathBuf;

use anyhow::Context;
use rangelock_client::{ConnectOptions, TlsOptions};

use crate::exit::{self, Failure};

/// The environment variable that may carry the authentication token (a file given with
/// `--token-file` wins). Not `RANGELOCK_TOKEN`: that is the fencing token `lock` hands
/// to its command.
pub(crate) const TOKEN_ENV: &str = "RANGELOCK_AUTH_TOKEN";

/// Connection options shared by the client subcommands.
#[derive(Debug, clap::Args)]
pub(crate) struct ConnectArgs {
    /// Authenticate with the token in this file (its first line, without surrounding
    /// white space); else with `$RANGELOCK_AUTH_TOKEN` if set. Never pass a token as an
    /// argument: other users can read command lines.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// Connect with TLS, trusting the CA certificates in this PEM file (the server's
    /// certificate must be signed by one of them).
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// Present this client certificate chain (PEM) when the server asks for one; needs
    /// --tls-key.
    #[arg(long, value_name = "PEM", requires_all = ["tls_ca", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires_all = ["tls_ca", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// Check the server's certificate for this name [default: the host part of
    /// --server].
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    tls_server_name: Option<String>,
}

impl ConnectArgs {
    /// The client options these arguments ask for; a file that cannot be read or holds
    /// no token (no certificate, no key) is [`exit::NOINPUT`].
    pub(crate) fn options(&self) -> Result<ConnectOptions, Failure> {
        self.read().map_err(|e| Failure::new(exit::NOINPUT, e))
    }

    fn read(&self) -> anyhow::Result<ConnectOptions> {
        let mut options = ConnectOptions::new();
        let token = match &self.token_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the token file {}", path.display()))?;
                let line = text.lines().next().unwrap_or("").trim().to_owned();
                anyhow::ensure!(!line.is_empty(), "the token file {} is empty", path.display());
                Some(line)
            }
            None => std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        };
        if let Some(t) = token {
            options = options.token(t);
        }
        if let Some(ca) = &self.tls_ca {
            let mut tls = TlsOptions::from_ca_file(ca)?;
            if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
                tls = tls.client_cert_files(cert, key)?;
            }
            if let Some(name) = &self.tls_server_name {
                tls = tls.server_name(name.clone());
            }
            options = options.tls(tls);
        }
        Ok(options)
    }
}
