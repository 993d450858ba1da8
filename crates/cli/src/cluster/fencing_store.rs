//! `rangelock cluster fencing-store --listen ADDR --file PATH`: the reference fencing
//! store of `rangelock_cluster::fencing` as a process. It prints `listening on ADDR` once
//! bound and runs until SIGTERM or SIGINT; violations are logged on stderr.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use rangelock_cluster::fencing::FencingStore;

/// Arguments of `rangelock cluster fencing-store`.
#[derive(Debug, clap::Args)]
pub struct FencingStoreArgs {
    /// Address to listen on, `HOST:PORT` (port 0 picks a free port).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    listen: String,
    /// The file the store appends accepted writes to (replayed if it exists).
    #[arg(long, value_name = "PATH")]
    file: PathBuf,
}

/// Runs the store until a signal.
pub fn run(a: FencingStoreArgs) -> anyhow::Result<()> {
    crate::logging::init(crate::logging::LogFormat::Text);
    super::runtime()?.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        // Handlers first: a supervisor that sends SIGTERM as soon as it reads
        // "listening on" gets a clean exit.
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let store = FencingStore::bind(a.listen.as_str(), &a.file)
            .await
            .with_context(|| format!("cannot start the fencing store on {}", a.listen))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", store.local_addr())?;
        out.flush()?;
        drop(out);
        store
            .serve(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            })
            .await;
        Ok(())
    })
}
