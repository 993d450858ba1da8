//! The `rangelock` command: a thin dispatcher; each subcommand lives in its own module.

mod bench;

use clap::{Parser, Subcommand};

/// rangelock: range locks and the epoch framework, with their benchmarks.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a benchmark suite (`list` shows them, `quick` runs all in quick mode).
    Bench(bench::BenchArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench(args) => bench::run(args),
    }
}
