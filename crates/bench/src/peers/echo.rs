//! `echo`: the ceiling of the server benchmarks — the real `rangelockd` with the same
//! framing and TCP transport, answering each request immediately.
//!
//! A request is one `KEEPALIVE` frame, which a session handler answers itself without
//! touching the lock table or the combiner (the server's ping path). One echo **cycle** is
//! two round trips, the request count of a lock + unlock cycle, so `echo`'s requests/s is
//! directly the bound for the engines' requests/s.

use std::io;

use rangelock_client::{Client, ClientError, Endpoint};
use rangelock_server::{EngineKind, Server, ServerConfig};

/// The report name of the peer.
pub const NAME: &str = "echo";

/// Starts a server for echo clients on `127.0.0.1` and a free port (the combiner engine;
/// pings never reach it).
///
/// # Errors
///
/// When the server cannot bind.
pub fn start_server() -> io::Result<Server> {
    Server::start(ServerConfig { engine: EngineKind::Combiner, ..ServerConfig::ephemeral() })
}

/// One echo cycle: two request/response round trips.
///
/// # Errors
///
/// When the connection fails.
#[inline]
pub fn cycle(client: &Client) -> Result<(), ClientError> {
    client.ping()?;
    client.ping()
}

/// Connects an echo client to `server`.
///
/// # Errors
///
/// When the connection or handshake fails.
pub fn connect(server: &Server) -> Result<Client, ClientError> {
    let addr = server.tcp_addr().ok_or_else(|| io::Error::other("server has no TCP listener"))?;
    Client::connect(&Endpoint::from(addr))
}
