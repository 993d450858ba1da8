//! The `rangelock` command: a thin dispatcher; each subcommand lives in its own module.

mod bench;
mod cluster;
mod connect;
mod duration;
mod exit;
mod lock;
mod lock_cluster;
mod logging;
mod name_arg;
mod range_arg;
mod serve;
mod signals;
mod stat;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Counts each thread's heap bytes for the `memory` suite (one thread-local add per
/// allocation; see `rangelock_bench::alloc`).
#[global_allocator]
static GLOBAL: rangelock_bench::alloc::CountingAlloc = rangelock_bench::alloc::CountingAlloc;

/// rangelock: range locks and the epoch framework, with their benchmarks.
#[derive(Debug, Parser)]
#[command(version, about, after_help = exit::table_help())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a benchmark suite (`list` shows them, `quick` runs all in quick mode).
    Bench(bench::BenchArgs),
    /// Run the range-lock server.
    Serve(Box<serve::ServeArgs>),
    /// Run a command while holding a range lock, of a named resource with NAME (flock(1)
    /// style, but a lapsed lease ends the lock: the command is then signalled).
    Lock(lock::LockArgs),
    /// Show a server's counters, holders and waiters.
    Stat(stat::StatArgs),
    /// Inspect and operate a cluster (status, planned moves, balancer, reset).
    #[command(subcommand, after_help = exit::table_help_for("cluster"))]
    Cluster(cluster::ClusterCommand),
}

/// Runs the subcommand; an error is printed once, as `rangelock: what: why`, and mapped
/// to its exit code (see the `exit` module). `main` does not return a `Result`: that
/// would print the error's `Debug` form, with a backtrace under `RUST_BACKTRACE=1`.
fn main() {
    // Usage errors exit 2, help 0. `serve --help` shows the defaults of its settings from
    // the one place they are kept.
    let mut cmd = Cli::command().mut_subcommand("serve", serve::ServeSettings::document_defaults);
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let lock = argv.get(1).is_some_and(|a| a == "lock");
    // `lock [NAME] RANGE`: a NAME argument is taken out before clap reads the rest (the
    // `name_arg` module's rule).
    let name = if lock {
        let sub = cmd.find_subcommand("lock").expect("the lock subcommand");
        name_arg::split_name(sub, &mut argv)
            .unwrap_or_else(|r| lock::usage_error(&mut cmd, &r).exit())
    } else {
        None
    };
    let matches = cmd.try_get_matches_from_mut(argv).unwrap_or_else(|e| {
        // `lock`'s command starts at the first argument after RANGE that is no option; one
        // that starts with `-` needs `--` (the `lock` module's rule), so say so.
        if lock { lock::with_dashdash_hint(e) } else { e }.exit()
    });
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Command::Lock(args) = &mut cli.command {
        if let Err(r) = args.settle_name(name) {
            lock::usage_error(&mut cmd, &r).exit();
        }
    }
    // `--server` and `--cluster` beat the environment: say which were flags.
    if let Some((name, sub)) = matches.subcommand() {
        match &mut cli.command {
            Command::Lock(args) if name == "lock" => args.target.note_sources(sub),
            Command::Stat(args) if name == "stat" => args.target.note_sources(sub),
            _ => {}
        }
    }
    let any =
        |r: anyhow::Result<()>| r.map(|()| 0).map_err(|e| exit::Failure::new(exit::FAILURE, e));
    let result = match cli.command {
        Command::Bench(args) => any(bench::run(args)),
        Command::Serve(args) => {
            serve::run(*args).map(|()| 0).map_err(|e| exit::Failure::new(exit::serve_code(&e), e))
        }
        Command::Lock(args) => lock::run(args),
        Command::Stat(args) => stat::run(args).map(|()| 0),
        Command::Cluster(cmd) => cluster::run(cmd).map(|()| 0),
    };
    let code = match result {
        Ok(code) => code,
        Err(f) => {
            if !f.quiet {
                eprintln!("rangelock: {:#}", f.error);
            }
            f.code
        }
    };
    std::process::exit(code);
}
