//! Client for `rangelockd` (the `rangelock-server` crate): blocking ([`Client`]) and async
//! ([`AsyncClient`]) APIs over TCP or Unix sockets.
//!
//! ```no_run
//! use rangelock_client::{Client, Endpoint};
//! let client = Client::connect(&Endpoint::default()).unwrap();
//! let guard = client.lock_exclusive(0..4096).unwrap();
//! println!("holding 0..4096 with fencing token {}", guard.token());
//! drop(guard); // releases
//! ```
//!
//! Guards release on drop. A session's locks live as long as its connection; there is no
//! automatic reconnect (see [`AsyncClient`] for the exact semantics).

mod blocking;
mod connection;
mod endpoint;
mod error;
mod guard;

pub use blocking::{Client, LockGuard};
pub use connection::AsyncClient;
pub use endpoint::Endpoint;
pub use error::ClientError;
pub use guard::AsyncLockGuard;
pub use rangelock_server::protocol::{
    Counters, EntryState, GrantMode, Mode, StatsBody, StatsEntry, Status, Wait,
};
