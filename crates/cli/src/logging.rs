//! Logging of the long-running subcommands (`serve`, `cluster fencing-store`, `cluster
//! worker`): `RUST_LOG`-style filtering (default `info`) to stderr, with colour only for a
//! person at a terminal, so log files and journals get plain text.

use std::io::IsTerminal;

/// Installs the subscriber; call once, first thing.
pub(crate) fn init() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
