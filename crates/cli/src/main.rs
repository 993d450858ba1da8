//! The `rangelock` command: a thin dispatcher; each subcommand lives in its own module.

mod bench;
mod lock;
mod serve;
mod stat;

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
    /// Run the range-lock server.
    Serve(serve::ServeArgs),
    /// Run a command while holding a range lock (flock(1) style).
    Lock(lock::LockArgs),
    /// Show a server's counters, holders and waiters.
    Stat(stat::StatArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench(args) => bench::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Lock(args) => lock::run(args),
        Command::Stat(args) => stat::run(args),
    }
}
