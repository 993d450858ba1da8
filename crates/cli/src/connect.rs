//! How `lock` and `stat` connect: to which server or cluster (flags or the environment),
//! with which authentication token, and TLS (`--tls-ca` turns it on).

use std::path::PathBuf;

use anyhow::Context;
use rangelock_client::{ConnectOptions, Endpoint, TlsOptions};

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

/// The environment variable that may give `--server`.
pub(crate) const SERVER_ENV: &str = "RANGELOCK_SERVER";
/// The environment variable that may give `--cluster`.
pub(crate) const CLUSTER_ENV: &str = "RANGELOCK_CLUSTER";

/// Where `lock` and `stat` go: one server (`--server`, `$RANGELOCK_SERVER`) or a cluster
/// (`--cluster`, `$RANGELOCK_CLUSTER`). A flag beats both variables; with no flag, one
/// variable set picks its kind, and both set is a usage error (which did you mean?).
#[derive(Debug, clap::Args)]
pub(crate) struct TargetArgs {
    /// Server address: `host:port` or `unix:/path` [default: 127.0.0.1:7878].
    #[arg(long, env = SERVER_ENV, value_name = "ADDR")]
    server: Option<Endpoint>,
    /// A cluster: its etcd endpoints (`http://host:port`, comma-separated; the live nodes
    /// are read from etcd) or the addresses of one or more of its nodes (`host:port`).
    #[arg(long, env = CLUSTER_ENV, value_name = "ETCD|NODES", value_delimiter = ',')]
    cluster: Option<Vec<String>>,
    /// The cluster's name, when the cluster is given by its etcd endpoints.
    #[arg(long, default_value = "default")]
    cluster_name: String,
    /// Where `server` and `cluster` came from (set by [`TargetArgs::note_sources`]).
    #[arg(skip)]
    given: Given,
}

/// Which of `--server` and `--cluster` were given as flags.
#[derive(Debug, Default, Clone, Copy)]
struct Given {
    server: bool,
    cluster: bool,
    cluster_name: bool,
}

/// A resolved [`TargetArgs`].
#[derive(Debug)]
pub(crate) enum Target {
    /// One server.
    Server(Endpoint),
    /// A cluster: etcd endpoints or node addresses, and the cluster's name.
    Cluster {
        /// What was given.
        given: Vec<String>,
        /// `--cluster-name`.
        name: String,
    },
}

impl TargetArgs {
    /// Records which values came from the command line rather than the environment
    /// (`matches` are the subcommand's); [`TargetArgs::target`] needs it.
    pub(crate) fn note_sources(&mut self, matches: &clap::ArgMatches) {
        let flag = |id| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        self.given = Given {
            server: flag("server"),
            cluster: flag("cluster"),
            cluster_name: flag("cluster_name"),
        };
    }

    /// The server or cluster to use (the rule of the type's docs); a conflict is
    /// [`exit::USAGE`].
    pub(crate) fn target(&self) -> Result<Target, Failure> {
        let usage = |m: String| Failure::new(exit::USAGE, anyhow::anyhow!(m));
        let server = || Target::Server(self.server.clone().unwrap_or_default());
        let cluster = |given: &Vec<String>| Target::Cluster {
            given: given.clone(),
            name: self.cluster_name.clone(),
        };
        match (self.given, &self.server, &self.cluster) {
            (Given { server: true, cluster: true, .. }, ..) => {
                Err(usage("--server and --cluster cannot be used together".into()))
            }
            (Given { cluster_name: true, .. }, _, None) => {
                Err(usage(format!("--cluster-name needs --cluster (or ${CLUSTER_ENV})")))
            }
            (Given { server: true, .. }, ..) => Ok(server()),
            (Given { cluster: true, .. }, _, Some(c)) => Ok(cluster(c)),
            (_, Some(_), Some(_)) => Err(usage(format!(
                "both ${SERVER_ENV} and ${CLUSTER_ENV} are set: say which with --server or \
                 --cluster, or unset one"
            ))),
            (_, None, Some(c)) => Ok(cluster(c)),
            _ => Ok(server()),
        }
    }
}
