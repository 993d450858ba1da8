//! The `rangelock` command.

use clap::Parser;

/// rangelock: range locks and the epoch framework, with their benchmarks.
#[derive(Debug, Parser)]
#[command(version, about)]
enum Cli {
    /// Run a benchmark suite.
    Bench {
        /// Suite name.
        suite: String,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::Bench { suite } => anyhow::bail!("no suite named {suite:?} yet"),
    }
}
