//! Prometheus metrics: what the server counts, and the HTTP endpoint that shows it.
//!
//! With [`ServerConfig::metrics`](crate::ServerConfig::metrics) set (`rangelock serve
//! --metrics ADDR`), the server listens on that address too and answers `GET /metrics`
//! with the OpenMetrics text exposition when the `Accept` header asks for it (Prometheus
//! does; `prometheus-client` encodes it), else with the same series in the Prometheus
//! text format 0.0.4 (`exposition::Format`); any other request gets 404. The listener runs in the server's
//! runtime and stops with the server. It serves one request per connection and at most 64
//! connections; a connection that has not sent its request head within 1 s is closed, and
//! the oldest such one gives way to a new connection (see the `http` module). [`Server::metrics_addr`](crate::Server::metrics_addr)
//! gives the bound address.
//!
//! # What is exposed
//!
//! Every `rangelock_*` series has the constant label `engine` (`combiner`, `tree-mutex`,
//! `tree-single` or `rangelock`). Counters count since the server started. Every series
//! is there from the first scrape (at 0).
//!
//! | metric | type | meaning |
//! | --- | --- | --- |
//! | `rangelock_grants_total` | counter | locks granted, at once or after waiting |
//! | `rangelock_releases_total` | counter | held locks released by `UNLOCK` |
//! | `rangelock_session_end_releases_total` | counter | held locks released because their session ended (closed, lease expired, output limit, shutdown) |
//! | `rangelock_timeouts_total` | counter | waiting requests whose timeout passed |
//! | `rangelock_cancels_total` | counter | waiting requests withdrawn (`CANCEL`, or `UNLOCK` of a waiting lock) |
//! | `rangelock_would_block_total` | counter | try-locks refused `WOULD_BLOCK` |
//! | `rangelock_errors_total{status}` | counter | error responses, one series per error status of the protocol (`status="NOT_HELD"`) |
//! | `rangelock_sessions_open` | gauge | sessions open now |
//! | `rangelock_sessions_total` | counter | sessions opened |
//! | `rangelock_sessions_ended_total{reason}` | counter | sessions ended, by reason (`closed`, `lease_expired`, `shutdown`, `not_reading`, `output_limit`, `bad_framing`, `io_error`, `other`) |
//! | `rangelock_locks_held` | gauge | locks held now |
//! | `rangelock_locks_queued` | gauge | lock requests waiting now |
//! | `rangelock_wait_seconds` | histogram | a `LOCK`'s arrival (the handler decoded it) to its grant, for every grant, immediate ones included (in poll grant mode the client learns of a queued grant at its next `POLL`, later) |
//! | `rangelock_hold_seconds` | histogram | a grant to its release, by `UNLOCK` or session end |
//! | `rangelock_build_info{version}` | gauge | 1 |
//! | `process_*` | | open and maximum fds, resident and virtual memory, CPU seconds, start time (`process` module; no `engine` label) |
//! | `rangelock_cluster_partitions_owned`, `…_in_grace` | gauge | a cluster node's partitions, and those in a grace period |
//! | `rangelock_cluster_reclaims_total` | counter | locks reclaimed at this node ([`ClusterStats`](crate::ownership::ClusterStats)) |
//! | `rangelock_cluster_fenced_requests_total` | counter | requests refused `FENCED` |
//! | `rangelock_cluster_etcd_errors_total`, `rangelock_cluster_etcd_request_seconds` | counter, histogram | the node manager's etcd requests |
//!
//! Histogram buckets: 10 µs to 10 s in 1-2.5-5 steps ([`BOUNDS_NS`]), and `+Inf`. The
//! wait histogram's count equals `grants_total`; the hold histogram's count equals
//! `releases_total + session_end_releases_total` (on a cluster node also holders dropped
//! when it gives a partition up, which `releases_total` counts, and reclaimed locks' holds
//! from their reclaim).
//!
//! The counters are the engines' own, the ones `STATS` reports ([`Counters`]): a scrape
//! asks the engine for an [`EngineSnapshot`] (a command like any other, so on the table
//! engines one consistent picture between two commands) and adds the session ends, which
//! the session loops count. Errors were one total; they are now counted per status
//! ([`ErrorTally`] in the table, [`ErrorCounts`] in the rangelock engine and in the request
//! handlers, which answer malformed frames and refused admissions themselves), and
//! `STATS` reports their sum as before.
//!
//! ## Per engine
//!
//! The same metrics mean the same on every engine, with one difference the help text
//! states: the `rangelock` engine has no FIFO queue. Its `locks_queued` counts registered
//! waiters, which are retried when an overlapping range is released and may be overtaken
//! by a new request; and a try-lock is refused only by a conflicting *holder*, not by an
//! earlier waiter. Its counters are read one by one (not one atomic picture).
//!
//! # Cost
//!
//! * **Metrics off** (the default): no clock read and no new atomic anywhere on a
//!   request's path. A handler decoding a `LOCK` tests an `Option` once; the table
//!   engines test one once per command, grant and release, the rangelock engine once per
//!   grant and release. Every lock entry carries an 8-byte timestamp (written as 0), and
//!   `Command::Lock` an 8-byte arrival time, which makes a `Command` 56 bytes instead of
//!   48 (the combiner's queue moves 8 more bytes per command). Errors are counted per
//!   status instead of in one total: the same one add (plain in the table, relaxed atomic
//!   elsewhere), to another address.
//! * **Metrics on**: one clock read (`Instant::now`, some 20 ns through the vDSO) when a
//!   handler decodes a `LOCK`. The table engines read the clock at most once per command
//!   (`Timings`: an `UNLOCK` that releases one lock and grants three waiters reads it
//!   once) and record into plain histograms owned by the table's thread: no atomics;
//!   they are copied out when a scrape asks. The rangelock engine reads the clock once per
//!   grant and once per release and records with two relaxed atomic adds each
//!   (`AtomicTimings`). A session end costs one relaxed atomic add. A scrape costs the
//!   engine one command (copying ~600 bytes of counters), plus the encoding on a handler
//!   thread.

mod clock;
mod errors;
pub(crate) mod exposition;
mod histogram;
pub(crate) mod http;
mod process;
mod sessions;
mod snapshot;
mod timings;

#[cfg(doc)]
use crate::protocol::Counters;
pub(crate) use clock::Clock;
pub use errors::{ErrorCounts, ErrorTally};
pub use histogram::{Histogram, BOUNDS_NS};
pub(crate) use sessions::SessionEnds;
pub use snapshot::{CacheCounts, EngineSnapshot};
pub(crate) use timings::{AtomicTimings, Timings};

use crate::ownership::Phase;
use crate::session::Shared;

/// The server-wide part of the metrics (present only when metrics are on).
#[derive(Debug)]
pub(crate) struct ServerMetrics {
    /// The clock of arrivals, grants and releases.
    pub(crate) clock: Clock,
    /// Sessions ended, per reason.
    pub(crate) session_ends: SessionEnds,
}

impl ServerMetrics {
    pub(crate) fn new(clock: Clock) -> ServerMetrics {
        ServerMetrics { clock, session_ends: SessionEnds::default() }
    }
}

/// One scrape's text in `format`, or `None` if the engine has stopped.
pub(crate) async fn scrape(shared: &Shared, format: exposition::Format) -> Option<String> {
    let snapshot = shared.engine.snapshot().await?;
    let ends = shared.metrics.as_ref().map(|m| m.session_ends.snapshot()).unwrap_or_default();
    let cluster = shared.config.cluster.as_ref().map(|own| {
        let owned = own.owned();
        let in_grace = owned.iter().filter(|(_, ph)| matches!(ph, Phase::Grace { .. })).count();
        exposition::ClusterScrape {
            owned: owned.len() as u64,
            in_grace: in_grace as u64,
            stats: own.stats().snapshot(),
        }
    });
    Some(exposition::render(shared.config.engine, snapshot, ends, cluster, format))
}
