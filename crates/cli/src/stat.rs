//! `rangelock stat`: a server's counters, holders and waiters.
//!
//! `sessions open` leaves out `stat`'s own session. Exit status: 0, or 69 when the server
//! cannot be reached (connection or handshake failed, connection lost), 70 for other
//! errors (see [`crate::exit`]).

use rangelock_client::{Client, Endpoint, EntryState, Mode};

use crate::exit::Failure;
use crate::lock::connect_failure;

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
pub fn run(args: StatArgs) -> Result<(), Failure> {
    let client = Client::connect(&args.server).map_err(|e| connect_failure(e, &args.server))?;
    let st = client
        .stats(args.max)
        .map_err(|e| Failure::client(e).context(format!("asking {} for stats", args.server)))?;
    let c = st.counters;
    println!("server            {}", args.server);
    // The server counts this very connection; leave it out.
    println!("sessions open     {} (not counting this one)", c.sessions_open.saturating_sub(1));
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
