//! `rangelock stat`: a server's counters, holders and waiters.
//!
//! `sessions open` leaves out `stat`'s own session. The cache's counters (`cached
//! extents` to `grants expanded`) and the state `kept` (a held lock that is a kept extent
//! of a caching session) come from a server of protocol version 6; an older one shows 0
//! and no `kept`, as it shows 0 names. Exit status: 0, or 66 when a
//! `--token-file` or `--tls-*` file cannot be read, 69 when the server cannot be reached
//! (connection, handshake or TLS handshake failed, connection lost), 77 when it refused
//! the authentication token, 70 for other errors (see [`crate::exit`]).

use rangelock_client::{Client, ConnectOptions, EntryState, Mode};

use crate::connect::Target;
use crate::name_arg::NameArg;

use crate::exit::{self, Failure};
use crate::lock::connect_failure;

/// Arguments of `rangelock stat`.
#[derive(Debug, clap::Args)]
pub struct StatArgs {
    // The server, or with --cluster every node of a cluster: the cluster map, then each
    // node's counters and list.
    #[command(flatten)]
    pub(crate) target: crate::connect::TargetArgs,
    #[command(flatten)]
    connect: crate::connect::ConnectArgs,
    /// List at most this many holders and waiters. The server may list fewer (its
    /// --max-stats-entries, and what fits in its --max-output-bytes); the last line then
    /// says how many it left out.
    #[arg(long, default_value_t = 100)]
    max: u32,
}

/// Prints the counters and the list.
pub fn run(args: StatArgs) -> Result<(), Failure> {
    let server = match args.target.target()? {
        Target::Cluster { given, name } => {
            return run_cluster(&given, &name, args.max, args.connect.options()?)
        }
        Target::Server(server) => server,
    };
    let options = args.connect.options()?;
    let client =
        Client::connect_with(&server, &options).map_err(|e| connect_failure(e, &server))?;
    let st = client
        .stats(args.max)
        .map_err(|e| Failure::client(e).context(format!("asking {server} for stats")))?;
    println!("server            {server}");
    print_stats(&st, args.max);
    Ok(())
}

/// `--cluster`: the map, then every node's stats.
fn run_cluster(
    given: &[String],
    cluster_name: &str,
    max: u32,
    connect: ConnectOptions,
) -> Result<(), Failure> {
    use rangelock_client::cluster::{ClusterClient, ClusterOptions};
    crate::cluster::is_etcd(given).map_err(|e| Failure::new(exit::USAGE, anyhow::anyhow!(e)))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::SOFTWARE, e))?;
    rt.block_on(async {
        let nodes = crate::cluster::seeds(given, cluster_name).await.map_err(|e| {
            Failure::new(exit::UNAVAILABLE, e).context("finding the cluster's nodes")
        })?;
        let options = ClusterOptions { connect, ..ClusterOptions::default() };
        let client = ClusterClient::connect(&nodes, options).await.map_err(|e| {
            Failure::cluster(e, exit::UNAVAILABLE)
                .context(format!("connecting to the cluster at {}", nodes.join(",")))
        })?;
        let map = client.map();
        println!("cluster map (etcd revision {}): {} partitions", map.revision, map.partitions);
        for (p, o) in map.owners.iter().enumerate() {
            let node = o.node.and_then(|i| map.nodes.get(usize::from(i)));
            let node = node.map_or("-".to_owned(), |n| format!("{} ({})", n.id, n.addr));
            println!(
                "  partition {p:>4}  {:<8} epoch {:<8} {node}",
                format!("{:?}", o.state),
                o.epoch
            );
        }
        let all = client
            .stats_all(max)
            .await
            .map_err(|e| Failure::new(exit::SOFTWARE, e).context("asking the nodes for stats"))?;
        for (node, st) in all {
            println!();
            println!("node              {} ({})", node.id, node.addr);
            print_stats(&st, max);
        }
        Ok(())
    })
}

/// The counters, then the list; `asked` is the `--max` the list was asked with.
fn print_stats(st: &rangelock_client::StatsBody, asked: u32) {
    let c = st.counters;
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
    println!("names live        {}", c.names_live);
    println!("named holders     {}", c.named_holders);
    println!("cached extents    {}", c.cached_extents);
    println!("callbacks         {}", c.callbacks);
    println!("give backs        {}", c.give_backs);
    println!("grants expanded   {}", c.cache_expanded);
    if !st.entries.is_empty() {
        println!();
        println!(
            "{:<8} {:>8} {:>8} {:<9} {:<7} {:>20} {:>20}  name",
            "state", "session", "id", "mode", "token", "start", "end"
        );
        // By resource (the unnamed one first, then names in byte order), in arrival
        // order within each.
        let mut entries: Vec<&rangelock_client::StatsEntry> = st.entries.iter().collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            println!(
                "{:<8} {:>8} {:>8} {:<9} {:<7} {:>20} {:>20}  {}",
                match e.state {
                    EntryState::Held if e.kept => "kept",
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
                e.end,
                e.name.as_deref().map_or("-".to_owned(), |n| NameArg::shown(n).to_string())
            );
        }
    }
    // The server says how many entries it left out: beyond --max, or beyond its own
    // limits (then fewer than --max are listed).
    if st.omitted > 0 && asked > 0 {
        let why = if (st.entries.len() as u64) < u64::from(asked) {
            " (the server lists at most this many: its --max-stats-entries, cut to fit its \
             --max-output-bytes)"
        } else {
            ""
        };
        println!("… {} more{why}", st.omitted);
    }
}
