//! Engines: who executes the commands of the handlers on the lock table.
//!
//! * **combiner** — handlers push [`Command`]s on a multi-producer queue (`std::sync::mpsc`,
//!   a lock-free linked queue like the seed's `tail.exchange` list); one dedicated thread
//!   pops them in order and owns the [`LockTable`] outright. Handlers never wait for the
//!   table. The combiner drains the queue in batches and writes each touched session's
//!   responses to its socket with one non-blocking write per batch (see the `reply`
//!   module); only a full socket hands them to the session's writer task.
//! * **tree-mutex** — every handler locks one mutex and runs the command itself.
//! * **tree-single** — the same table under an (uncontended) mutex, driven by a
//!   single-threaded runtime that also runs every connection (see [`crate::Server`]).
//! * **rangelock** — no table: handlers drive the lock-free skip-list range lock (see the
//!   `rangelock_engine` module).
//!
//! The first three run the same [`LockTable`], so they differ only in who executes it; the
//! table's invariants (see its docs) hold because each command runs to completion before
//! the next one starts — on one thread (combiner, tree-single) or under the mutex.
//!
//! # Trade-offs
//!
//! The combiner keeps the table hot in one core's cache and never makes a handler wait
//! for another handler, at the price of a queue hop per request and one thread spent on
//! the table. tree-mutex saves the hop but bounces the table and the mutex between cores
//! under load; tree-single has no cross-thread traffic at all but one core for all I/O —
//! the seed found it best at low client counts. The rangelock engine has no
//! serialization point for uncontended grants, but no FIFO order (a new request may overtake
//! a registered waiter).

use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::config::{EngineKind, ServerConfig};
use crate::metrics::{Clock, EngineSnapshot, ErrorCounts};
use crate::rangelock_engine::RangeLockEngine;
use crate::table::{Command, LockTable, TableLimits, TablePartitions};

/// Commands the combiner executes after the first one of a batch before it writes the
/// batch's responses.
const COMBINER_BATCH: usize = 256;

/// A cheap, cloneable way for handlers to submit commands.
#[derive(Clone, Debug)]
pub(crate) enum Engine {
    Combiner(mpsc::Sender<Command>),
    Table(Arc<Mutex<LockTable>>),
    RangeLock(Arc<RangeLockEngine>),
}

impl Engine {
    /// Builds the table and, for the combiner, starts its thread (ends when every
    /// [`Engine`] clone is dropped). With `clock` (metrics on) the engine keeps the wait
    /// and hold histograms.
    pub(crate) fn start(
        config: &ServerConfig,
        handler_errors: Arc<ErrorCounts>,
        clock: Option<Clock>,
    ) -> std::io::Result<(Engine, Option<JoinHandle<()>>)> {
        let limits = TableLimits {
            max_locks_per_session: config.max_locks_per_session,
            max_stats_entries: config.stats_entries_cap(),
            max_stats_bytes: config.max_output_bytes,
            max_names: config.max_names,
        };
        if config.engine == EngineKind::RangeLock {
            let e = RangeLockEngine::new(config.grant, limits, handler_errors, clock);
            return Ok((Engine::RangeLock(Arc::new(e)), None));
        }
        let mut table = LockTable::new(config.grant, limits, handler_errors);
        table.set_cache(config.cache);
        if let Some(clock) = clock {
            table.set_metrics(clock);
        }
        if let Some(own) = &config.cluster {
            table.set_partitions(TablePartitions::new(
                own.partitioning(),
                own.fence_arc(),
                own.epoch_requests(),
                own.grace_done_arc(),
                own.stats().clone(),
            ));
        }
        match config.engine {
            EngineKind::Combiner => {
                let (tx, rx) = mpsc::channel::<Command>();
                let thread = std::thread::Builder::new().name("rangelock-combiner".into()).spawn(
                    move || {
                        while let Ok(cmd) = rx.recv() {
                            table.apply(cmd);
                            // Drain what else is queued, then write each touched
                            // session's responses at once (bounded, so the first
                            // responses of a long burst are not held back).
                            for _ in 0..COMBINER_BATCH {
                                match rx.try_recv() {
                                    Ok(cmd) => table.apply(cmd),
                                    Err(_) => break,
                                }
                            }
                            LockTable::flush_replies();
                        }
                        tracing::debug!("combiner stopped");
                    },
                )?;
                Ok((Engine::Combiner(tx), Some(thread)))
            }
            EngineKind::TreeMutex | EngineKind::TreeSingle | EngineKind::RangeLock => {
                Ok((Engine::Table(Arc::new(Mutex::new(table))), None))
            }
        }
    }

    /// Executes (or enqueues) one command.
    #[inline]
    pub(crate) fn submit(&self, cmd: Command) {
        match self {
            // The combiner outlives every sender, so this cannot fail while we hold one.
            Engine::Combiner(tx) => {
                let _ = tx.send(cmd);
            }
            // A poisoned table would mean a panic inside `apply`; the table stays
            // consistent between commands, so keep serving.
            Engine::Table(m) => {
                m.lock().unwrap_or_else(PoisonError::into_inner).apply(cmd);
                // Outside the mutex: the writes do not lengthen the critical section.
                LockTable::flush_replies();
            }
            Engine::RangeLock(e) => e.apply(cmd),
        }
    }

    /// The engine's counters and histograms, for a scrape (`None`: the engine stopped).
    pub(crate) async fn snapshot(&self) -> Option<EngineSnapshot> {
        let (report, rx) = tokio::sync::oneshot::channel();
        self.submit(Command::Metrics { report });
        rx.await.ok()
    }
}
