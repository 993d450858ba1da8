//! Where a server listens.

use std::path::PathBuf;

use rangelock_proto::DEFAULT_PORT;

/// A server address: `host:port` for TCP or `unix:/path` for a Unix socket.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// TCP, `host:port` (resolved on connect).
    Tcp(String),
    /// Unix socket path.
    Unix(PathBuf),
}

impl Default for Endpoint {
    /// `127.0.0.1:7878`, the server's default.
    fn default() -> Self {
        Endpoint::Tcp(format!("127.0.0.1:{DEFAULT_PORT}"))
    }
}

impl core::str::FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err("empty unix socket path".into());
            }
            Ok(Endpoint::Unix(p.into()))
        } else if s.contains(':') {
            Ok(Endpoint::Tcp(s.to_owned()))
        } else {
            Err(format!("{s:?} is neither host:port nor unix:/path"))
        }
    }
}

impl core::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Endpoint::Tcp(a) => f.write_str(a),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl From<std::net::SocketAddr> for Endpoint {
    fn from(a: std::net::SocketAddr) -> Self {
        Endpoint::Tcp(a.to_string())
    }
}
