//! Where a server listens unless told otherwise.

/// The TCP port the server listens on by default (`127.0.0.1:7878`), and the port a client
/// connects to by default.
pub const DEFAULT_PORT: u16 = 7878;
