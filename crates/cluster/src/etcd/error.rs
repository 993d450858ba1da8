//! [`EtcdError`]: what a request to etcd can fail with.

use std::time::Duration;

/// A failed etcd request.
///
/// Only [`EtcdError::Unreachable`] guarantees that nothing reached etcd. After
/// [`EtcdError::Timeout`] or [`EtcdError::Transport`] the request may or may not
/// have been applied.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// No endpoint accepted a connection (nothing was sent), or an endpoint is malformed.
    #[error("etcd unreachable at {endpoints}: {reason}")]
    Unreachable {
        /// The endpoints tried, comma separated.
        endpoints: String,
        /// Why the last one failed.
        reason: String,
    },
    /// No answer within the request timeout (e.g. etcd is paused or overloaded).
    #[error("etcd request {path} to {endpoint} timed out after {after:?}")]
    Timeout {
        /// The endpoint the request was waiting on.
        endpoint: String,
        /// The gateway path, e.g. `/v3/kv/put`.
        path: &'static str,
        /// The request timeout.
        after: Duration,
    },
    /// The connection failed after the request was (possibly) sent.
    #[error("etcd request {path} to {endpoint} failed: {reason}")]
    Transport {
        /// The endpoint.
        endpoint: String,
        /// The gateway path.
        path: &'static str,
        /// The error chain.
        reason: String,
    },
    /// etcd refused the request with a gRPC status (e.g. 5 = not found, 9 = lease
    /// already exists, 14 = unavailable), sent by the gateway as
    /// `{"error":..,"code":..,"message":..}`.
    #[error("etcd error {code}: {message}")]
    Status {
        /// The gRPC status code.
        code: i32,
        /// etcd's message, e.g. `etcdserver: requested lease not found`.
        message: String,
    },
    /// An HTTP error without a gRPC status body (e.g. 404 for a path the gateway does not serve).
    #[error("etcd gateway answered HTTP {status}: {body}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// A response that is not the JSON expected.
    #[error("undecodable etcd response: {0}")]
    Decode(String),
}

impl EtcdError {
    /// The gRPC code of a [`EtcdError::Status`].
    pub fn code(&self) -> Option<i32> {
        match self {
            EtcdError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// gRPC `NOT_FOUND`, e.g. `etcdserver: requested lease not found`.
pub(crate) const GRPC_NOT_FOUND: i32 = 5;

/// What went wrong under a reqwest error: its sources joined by `: `, without
/// reqwest's own message (it repeats the URL) and hyper's `client error (..)` layer.
pub(crate) fn cause(err: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut source = err.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !s.starts_with("client error (") {
            parts.push(s);
        }
        source = e.source();
    }
    if parts.is_empty() {
        err.to_string()
    } else {
        parts.join(": ")
    }
}
