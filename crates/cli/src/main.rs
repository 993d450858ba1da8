//! The `rangelock` command.

use clap::Parser;

mod lock;
mod serve;
mod stat;

/// rangelock: range locks and the epoch framework, with their benchmarks.
#[derive(Debug, Parser)]
#[command(version, about)]
enum Cli {
    /// Run a benchmark suite.
    Bench {
        /// Suite name.
        suite: String,
    },
    /// Run the range-lock server.
    Serve(serve::ServeArgs),
    /// Run a command while holding a range lock (flock(1) style).
    Lock(lock::LockArgs),
    /// Show a server's counters, holders and waiters.
    Stat(stat::StatArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::Bench { suite } => anyhow::bail!("no suite named {suite:?} yet"),
        Cli::Serve(args) => serve::run(args),
        Cli::Lock(args) => lock::run(args),
        Cli::Stat(args) => stat::run(args),
    }
}
