//! `rangelock stat`: a server's counters, holders and waiters.

use anyhow::Context;
use rangelock_client::{Client, Endpoint, EntryState, Mode};

/// Arguments of `rangelock stat`.
#[derive(Debug, clap::Args)]
pub struct StatArgs {
    /// Server address: `host:port` or `unix:/path`.
    #[arg(long, default_value_t = Endpoint::default())]
    server: Endpoint,
    /// List at most this many holders and waiters.
    #[arg(long, default_value_t = 100)]
    max: u32,
}

/// Prints the counters and the list.
pub fn run(args: StatArgs) -> anyhow::Result<()> {
    let client =
        Client::connect(&args.server).with_context(|| format!("connecting to {}", args.server))?;
    let st = client.stats(args.max).context("asking for stats")?;
    let c = st.counters;
    println!("server            {}", args.server);
    println!("sessions open     {}", c.sessions_open);
    println!("sessions total    {}", c.sessions_total);
    println!("holders           {}", c.holders);
    println!("waiters           {}", c.waiters);
    println!("grants            {}", c.grants);
    println!("releases          {}", c.releases);
    println!("released by close {}", c.released_by_close);
    println!("would block       {}", c.would_block);
    println!("timeouts          {}", c.timeouts);
    println!("cancels           {}", c.cancels);
    println!("errors            {}", c.errors);
    if !st.entries.is_empty() {
        println!();
        println!(
            "{:<8} {:>8} {:>8} {:<9} {:<7} {:>20} {:>20}",
            "state", "session", "id", "mode", "token", "start", "end"
        );
        for e in &st.entries {
            println!(
                "{:<8} {:>8} {:>8} {:<9} {:<7} {:>20} {:>20}",
                match e.state {
                    EntryState::Held => "held",
                    EntryState::Waiting => "waiting",
                },
                e.session,
                e.id,
                match e.mode {
                    Mode::Exclusive => "exclusive",
                    Mode::Shared => "shared",
                },
                e.token,
                e.start,
                e.end
            );
        }
        let total = c.holders + c.waiters;
        if total > st.entries.len() as u64 {
            println!("… {} more", total - st.entries.len() as u64);
        }
    }
    Ok(())
}
