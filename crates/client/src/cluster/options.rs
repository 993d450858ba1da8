//! [`ClusterOptions`]: the client's bounds on redirects, reclaims and connects, and how it
//! connects to each node.

use std::time::Duration;

use crate::options::ConnectOptions;

/// How a [`ClusterClient`](super::ClusterClient) routes, reclaims and connects.
///
/// ```
/// use std::time::Duration;
/// use rangelock_client::cluster::ClusterOptions;
/// let options = ClusterOptions { reclaim_window: Duration::from_secs(10), ..Default::default() };
/// assert_eq!(options.max_redirects, 16);
/// ```
///
/// A cluster whose nodes run with an auth file needs a token (the same on every node):
///
/// ```
/// use rangelock_client::{cluster::ClusterOptions, ConnectOptions};
/// let options = ClusterOptions {
///     connect: ConnectOptions::new().token("0123456789abcdef"),
///     ..Default::default()
/// };
/// assert!(options.connect.has_token());
/// ```
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// The most `NOT_OWNER` (and `CROSSES_PARTITION`) answers one piece of a lock may
    /// get before the lock fails with
    /// [`ClusterError::TooManyRedirects`](super::ClusterError::TooManyRedirects).
    /// Default 16.
    pub max_redirects: u32,
    /// How long after a piece's node failed (or gave its partition up) the client keeps
    /// trying to reclaim the piece at the partition's new owner; after it, the guard is
    /// lost ([`LostCause::WindowMissed`](super::LostCause::WindowMissed)). Make it longer
    /// than the cluster's etcd TTL plus a manager round: the new owner claims the
    /// partition only after the old owner's lease expired. Default 30 s.
    pub reclaim_window: Duration,
    /// The longest a connection to a node (connect and handshake) may take, and the
    /// longest the client waits for a `MAP` or `RECLAIM` answer. Default 2 s.
    pub connect_timeout: Duration,
    /// How long [`ClusterClient::connect`](super::ClusterClient::connect) keeps asking the
    /// seeds while those that answer have no map yet: a node publishes its map once it has
    /// registered in etcd and read the cluster's keys, and has none while it is fenced.
    /// Seeds that cannot be reached at all fail the connect at once. Default 10 s.
    pub map_wait: Duration,
    /// How to connect to every node: the authentication token (default: none). A node
    /// that refuses it fails the lock at once
    /// ([`ClusterError::Client`](super::ClusterError::Client) with
    /// [`ClientError::AuthFailed`](crate::ClientError::AuthFailed) or
    /// [`ClientError::AuthRequired`](crate::ClientError::AuthRequired)) instead of being
    /// retried as unreachable.
    pub connect: ConnectOptions,
    /// The first pause before a retry while the cluster converges (no owner known yet,
    /// a node unreachable, a grace period): the pauses start here and double up to
    /// [`ClusterOptions::backoff_max`]. Default 10 ms. A pause ends early when a node the
    /// client is connected to pushes a map change (`MAP_CHANGED`), so the backoff is the
    /// fallback for nodes that push nothing.
    pub backoff_first: Duration,
    /// The longest pause between retries. Default 200 ms.
    pub backoff_max: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            max_redirects: 16,
            reclaim_window: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(2),
            map_wait: Duration::from_secs(10),
            connect: ConnectOptions::default(),
            backoff_first: Duration::from_millis(10),
            backoff_max: Duration::from_millis(200),
        }
    }
}
