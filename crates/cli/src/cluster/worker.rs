//! `rangelock cluster worker`: a checking client of a cluster and a fencing store (the
//! workload of the nemesis test, `docs/CLUSTER.md` §6).
//!
//! It locks random ranges, one operation at a time, and writes under every exclusive
//! guard through the fencing store (`rangelock cluster fencing-store`), piece by piece
//! with each piece's token, as the fencing contract asks:
//!
//! 1. pick a range that usually crosses a partition boundary (a boundary of the cluster
//!    map, an offset within ±64 units, a length of 1 to 128), a mode (3 in 4 exclusive)
//!    and a wait (a 2 s timeout, 1 in 5 a try). With `--names N`, every other operation
//!    locks one of `N` named resources (`nemesis-0` ...) instead, on a range that
//!    usually crosses a stripe boundary (the boundary of stripe 1 to 16, ±64, 1 to 128
//!    units), and writes each piece at the store under a unit range of its own for the
//!    name: `(i + 1) << 40` plus the unit, clear of the unnamed ranges (near partition
//!    boundaries, at least `2^52`) and of the other names;
//! 2. on a grant, if exclusive: hold a few milliseconds (the work under the lock), `W
//!    piece.range token writer` for each piece, hold a few milliseconds, then `V` each
//!    piece, then unlock; if shared: hold briefly, unlock. The guard is checked
//!    before each write (a lost guard does not write).
//!
//! With `--cached`, the worker is a cached cluster client (`CachedClusterClient`,
//! `docs/CACHING.md`, "In a cluster"): its locks inside kept extents take no round trip
//! (`kept` counts the grants served wholly so), and its pieces' tokens are the highest its
//! session with each node was granted in the piece's partition.
//!
//! It counts what happened and writes the counts as JSON to `--report`, every half second
//! and at the end (so a killed or stopped worker leaves a report behind). Two counts are
//! **violations**:
//!
//! * `lost_untold`: a write was refused as `STALE`, or a verification found another
//!   writer, and the guard did not become lost within 10 s after. Someone else was
//!   granted the range while this guard still claimed it, and nobody told this client;
//! * `unanswered`: a step (lock, store request, unlock) took longer than 60 s.
//!
//! The other counts: `ops`, `granted` (`named_granted` of them on names), `exclusive`,
//! `shared`, `would_block`,
//! `timed_out`, `errors` by kind, `writes` (accepted), `stale_rejected`, `verify_bad`,
//! `lost_told` (guards that became lost and said so: `is_lost`, `lost()` or `unlock`).
//! The worker exits 0 after `--ops` operations or `--seconds`, whichever comes first,
//! and on SIGTERM or SIGINT (after writing the report).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rangelock_bench::harness::SplitMix64;
use rangelock_client::cluster::{
    CachedClusterClient, CachedClusterGuard, ClusterClient, ClusterError, ClusterGuard, ClusterMap,
    ClusterOptions, GuardPiece, LostReason,
};
use rangelock_client::{CacheOptions, Mode, Wait};
use rangelock_cluster::fencing::{FencingClient, FencingError, Verify, Write};
use rangelock_server::protocol::{Partitioning, NAME_STRIPE_SHIFT};

/// How long a guard has to become lost after a refused write or a bad verification.
const TOLD_WITHIN: Duration = Duration::from_secs(10);
/// A step that takes longer than this is `unanswered`.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);
/// How long the worker keeps trying to reach the cluster and the store at start.
const CONNECT_WITHIN: Duration = Duration::from_secs(30);

/// Arguments of `rangelock cluster worker`.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Cluster node addresses to read the map from, comma-separated (`host:port`).
    #[arg(long, value_name = "ADDRS", value_delimiter = ',', required = true)]
    seeds: Vec<String>,
    /// The fencing store's address (`rangelock cluster fencing-store`).
    #[arg(long, value_name = "HOST:PORT")]
    store: String,
    /// This worker's writer id at the store (unique among the workers).
    #[arg(long)]
    writer: String,
    /// Operations to run.
    #[arg(long)]
    ops: u64,
    /// Stop after this many seconds even if --ops are not done.
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the counts (JSON).
    #[arg(long, value_name = "FILE")]
    report: PathBuf,
    /// The cluster client's reclaim window in milliseconds (how long it tries to reclaim
    /// a guard's pieces after their node failed; then the guard is lost). Keep it well
    /// below 10 s, the time a guard has to be told it is lost, and above the cluster's
    /// etcd TTL plus its grace period.
    #[arg(long, default_value_t = 5000)]
    reclaim_window_ms: u64,
    /// Lock named resources too: every other operation locks one of this many names
    /// (at most 1000; 0: only the unnamed resource).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1000))]
    names: u64,
    /// Be a cached cluster client: keep the extents the nodes grant, and lock inside them
    /// without a round trip.
    #[arg(long)]
    cached: bool,
}

/// The counts of the report.
#[derive(Debug, Default)]
struct Counts {
    ops: u64,
    granted: u64,
    /// Grants of named resources (`--names`), among `granted`.
    named_granted: u64,
    /// Grants served wholly inside kept extents (`--cached`), among `granted`.
    kept: u64,
    exclusive: u64,
    shared: u64,
    would_block: u64,
    timed_out: u64,
    errors: BTreeMap<String, u64>,
    writes: u64,
    stale_rejected: u64,
    verify_bad: u64,
    lost_told: u64,
    lost_untold: u64,
    unanswered: u64,
}

impl Counts {
    fn error(&mut self, kind: impl Into<String>) {
        *self.errors.entry(kind.into()).or_default() += 1;
    }

    fn json(&self, writer: &str, elapsed: Duration, finished: bool) -> String {
        let j = serde_json::json!({
            "writer": writer,
            "finished": finished,
            "elapsed_ms": elapsed.as_millis() as u64,
            "ops": self.ops,
            "granted": self.granted,
            "named_granted": self.named_granted,
            "kept": self.kept,
            "exclusive": self.exclusive,
            "shared": self.shared,
            "would_block": self.would_block,
            "timed_out": self.timed_out,
            "errors": self.errors,
            "errors_total": self.errors.values().sum::<u64>(),
            "writes": self.writes,
            "stale_rejected": self.stale_rejected,
            "verify_bad": self.verify_bad,
            "lost_told": self.lost_told,
            "lost_untold": self.lost_untold,
            "unanswered": self.unanswered,
        });
        let mut s = serde_json::to_string_pretty(&j).expect("serializable");
        s.push('\n');
        s
    }
}

/// A range near a partition boundary: the boundary, an offset within ±64, a length of 1
/// to 128. With one partition, anywhere in the first 2^20 units.
fn pick_range(parts: Partitioning, rng: &mut SplitMix64) -> Range<u64> {
    let len = 1 + rng.below(128);
    let start = if parts.count() > 1 {
        let b = parts.start(1 + rng.below(u64::from(parts.count() - 1)) as u32);
        b - 64 + rng.below(129)
    } else {
        rng.below(1 << 20)
    };
    start..start + len
}

/// A named range near a stripe boundary: the boundary of stripe 1 to 16, an offset within
/// ±64, a length of 1 to 128 (below `2^40`, so that [`store_range`] keeps names apart).
fn pick_named_range(rng: &mut SplitMix64) -> Range<u64> {
    let len = 1 + rng.below(128);
    let b = (1 + rng.below(16)) << NAME_STRIPE_SHIFT;
    let start = b - 64 + rng.below(129);
    start..start + len
}

/// Where the store keeps `range` of name `name` (`None`: the unnamed resource, as is):
/// `(name + 1) << 40` plus the unit. A name's unit always lies in the same partition, so
/// the store compares tokens of one partition at each of its units, as the fencing
/// contract asks.
fn store_range(name: Option<u64>, range: Range<u64>) -> Range<u64> {
    match name {
        None => range,
        Some(i) => {
            let base = (i + 1) << 40;
            base + range.start..base + range.end
        }
    }
}

/// The kind of a lock or unlock error, for the report.
fn kind(e: &ClusterError) -> String {
    match e {
        ClusterError::NoNode(_) => "no_node".into(),
        ClusterError::TooManyRedirects { .. } => "too_many_redirects".into(),
        ClusterError::WouldBlock => "would_block".into(),
        ClusterError::TimedOut => "timed_out".into(),
        ClusterError::Unavailable { .. } => "unavailable".into(),
        ClusterError::Lost(_) => "lost".into(),
        ClusterError::Server(s) => format!("server: {s}"),
        ClusterError::Client(c) => format!("client: {}", client_kind(c)),
        ClusterError::BadMap(_) => "bad_map".into(),
        _ => "other".into(),
    }
}

fn client_kind(c: &rangelock_client::ClientError) -> &'static str {
    use rangelock_client::ClientError as C;
    match c {
        C::Connect { .. } => "connect",
        C::Io(_) => "io",
        C::ConnectionLost => "connection_lost",
        C::Server(_) => "server",
        _ => "other",
    }
}

/// A worker's client: plain or cached (`--cached`).
#[derive(Clone)]
enum AnyClient {
    Plain(ClusterClient),
    Cached(CachedClusterClient),
}

/// A guard of either client.
enum AnyGuard {
    Plain(ClusterGuard),
    Cached(CachedClusterGuard),
}

impl AnyClient {
    fn map(&self) -> Arc<ClusterMap> {
        match self {
            AnyClient::Plain(c) => c.map(),
            AnyClient::Cached(c) => c.as_cluster().map(),
        }
    }

    /// Locks `range` of the unnamed resource, or of `nemesis-{i}`.
    async fn lock(
        &self,
        name: Option<u64>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<AnyGuard, ClusterError> {
        Ok(match (self, name) {
            (AnyClient::Plain(c), None) => AnyGuard::Plain(c.lock(range, mode, wait).await?),
            (AnyClient::Plain(c), Some(i)) => {
                AnyGuard::Plain(c.resource(format!("nemesis-{i}"))?.lock(range, mode, wait).await?)
            }
            (AnyClient::Cached(c), None) => AnyGuard::Cached(c.lock(range, mode, wait).await?),
            (AnyClient::Cached(c), Some(i)) => {
                AnyGuard::Cached(c.resource(format!("nemesis-{i}"))?.lock(range, mode, wait).await?)
            }
        })
    }
}

impl AnyGuard {
    fn pieces(&self) -> Vec<GuardPiece> {
        match self {
            AnyGuard::Plain(g) => g.pieces(),
            AnyGuard::Cached(g) => g.pieces(),
        }
    }

    fn range(&self) -> Range<u64> {
        match self {
            AnyGuard::Plain(g) => g.range(),
            AnyGuard::Cached(g) => g.range(),
        }
    }

    fn check(&self) -> Result<(), ClusterError> {
        match self {
            AnyGuard::Plain(g) => g.check(),
            AnyGuard::Cached(g) => g.check(),
        }
    }

    async fn lost(&self) -> LostReason {
        match self {
            AnyGuard::Plain(g) => g.lost().await,
            AnyGuard::Cached(g) => g.lost().await,
        }
    }

    /// Served wholly inside kept extents.
    fn kept(&self) -> bool {
        match self {
            AnyGuard::Plain(_) => false,
            AnyGuard::Cached(g) => g.guards().all(|(_, g)| g.is_kept()),
        }
    }

    async fn unlock(self) -> Result<(), ClusterError> {
        match self {
            AnyGuard::Plain(g) => g.unlock().await,
            AnyGuard::Cached(g) => g.unlock(),
        }
    }
}

struct Worker {
    args: WorkerArgs,
    client: AnyClient,
    store: Option<FencingClient>,
    counts: Arc<Mutex<Counts>>,
    rng: SplitMix64,
}

/// Runs a step, bounded by [`ANSWER_WITHIN`]; counts it `unanswered` if it takes longer.
async fn bounded<T>(
    counts: &Mutex<Counts>,
    what: &str,
    f: impl std::future::Future<Output = T>,
) -> Step<T> {
    match tokio::time::timeout(ANSWER_WITHIN, f).await {
        Ok(v) => Step::Done(v),
        Err(_) => {
            tracing::error!(what, "VIOLATION: no answer within {ANSWER_WITHIN:?}");
            counts.lock().unwrap_or_else(PoisonError::into_inner).unanswered += 1;
            Step::Unanswered
        }
    }
}

/// What bounding a step found.
enum Step<T> {
    Done(T),
    /// It took longer than [`ANSWER_WITHIN`] (counted).
    Unanswered,
}

impl Worker {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn store(&mut self) -> Option<&mut FencingClient> {
        if self.store.is_none() {
            match FencingClient::connect(self.args.store.as_str()).await {
                Ok(c) => self.store = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reach the fencing store");
                    self.counts().error("store");
                    return None;
                }
            }
        }
        self.store.as_mut()
    }

    fn store_failed(&mut self, e: &FencingError) {
        tracing::warn!(error = %e, "fencing store request failed");
        self.counts().error("store");
        self.store = None;
    }

    async fn op(&mut self) {
        let parts = match self.client.map().partitioning() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "unusable map");
                self.counts().error("bad_map");
                return;
            }
        };
        let name = (self.args.names > 0 && self.rng.below(2) == 0)
            .then(|| self.rng.below(self.args.names));
        let range = match name {
            None => pick_range(parts, &mut self.rng),
            Some(_) => pick_named_range(&mut self.rng),
        };
        let mode = if self.rng.below(4) < 3 { Mode::Exclusive } else { Mode::Shared };
        let wait =
            if self.rng.below(5) == 0 { Wait::Try } else { Wait::Timeout(Duration::from_secs(2)) };
        self.counts().ops += 1;
        let client = self.client.clone();
        let lock = client.lock(name, range.clone(), mode, wait);
        let Step::Done(r) = bounded(&self.counts.clone(), "lock", lock).await else {
            return;
        };
        let guard = match r {
            Ok(g) => g,
            Err(ClusterError::WouldBlock) => return self.counts().would_block += 1,
            Err(ClusterError::TimedOut) => return self.counts().timed_out += 1,
            Err(e) => {
                tracing::debug!(?range, error = %e, "lock failed");
                return self.counts().error(kind(&e));
            }
        };
        {
            let mut c = self.counts();
            c.granted += 1;
            c.named_granted += u64::from(name.is_some());
            c.kept += u64::from(guard.kept());
            match mode {
                Mode::Exclusive => c.exclusive += 1,
                Mode::Shared => c.shared += 1,
            }
        }
        if mode == Mode::Exclusive {
            if !self.write_and_verify(&guard, name).await {
                return; // counted; the guard is dropped (released if still held)
            }
        } else {
            tokio::time::sleep(Duration::from_millis(self.rng.below(20))).await;
        }
        let Step::Done(r) = bounded(&self.counts.clone(), "unlock", guard.unlock()).await else {
            return;
        };
        match r {
            Ok(()) => {}
            Err(ClusterError::Lost(reason)) => {
                tracing::info!(?range, %reason, "guard lost (told by unlock)");
                self.counts().lost_told += 1;
            }
            Err(e) => self.counts().error(format!("unlock {}", kind(&e))),
        }
    }

    /// Writes and verifies each piece (of the name `name`, see [`store_range`]); `false`
    /// if the guard is done with (lost, or a store failure), everything counted.
    async fn write_and_verify(&mut self, guard: &AnyGuard, name: Option<u64>) -> bool {
        let writer = self.args.writer.clone();
        let counts = self.counts.clone();
        let pieces = guard.pieces();
        let mut suspect = Vec::new();
        // The work under the lock takes a moment before it writes.
        tokio::time::sleep(Duration::from_millis(self.rng.below(15))).await;
        for p in &pieces {
            if guard.check().is_err() {
                self.counts().lost_told += 1;
                return false;
            }
            let Some(store) = self.store().await else { return false };
            let Step::Done(r) = bounded(
                &counts,
                "write",
                store.write(store_range(name, p.range.clone()), p.token, &writer),
            )
            .await
            else {
                return false;
            };
            match r {
                Ok(Write::Accepted) => self.counts().writes += 1,
                Ok(Write::Stale { highest }) => {
                    self.counts().stale_rejected += 1;
                    suspect.push(format!(
                        "W {:?} token {:#x} STALE (highest {highest:#x})",
                        p.range, p.token
                    ));
                }
                Err(e) => {
                    self.store_failed(&e);
                    return false;
                }
            }
        }
        // So does the work between writing and reading back.
        tokio::time::sleep(Duration::from_millis(self.rng.below(10))).await;
        for p in &pieces {
            let Some(store) = self.store().await else { return false };
            let Step::Done(r) = bounded(
                &counts,
                "verify",
                store.verify(store_range(name, p.range.clone()), &writer),
            )
            .await
            else {
                return false;
            };
            match r {
                Ok(Verify::Ok) => {}
                Ok(Verify::Bad { other }) => {
                    self.counts().verify_bad += 1;
                    suspect.push(format!(
                        "V {:?} token {:#x} BAD (last written by {})",
                        p.range,
                        p.token,
                        other.as_deref().unwrap_or("nobody")
                    ));
                }
                Err(e) => {
                    self.store_failed(&e);
                    return false;
                }
            }
        }
        if suspect.is_empty() {
            return true;
        }
        // Someone else wrote with a higher token: this guard must learn it is lost.
        let t0 = Instant::now();
        match tokio::time::timeout(TOLD_WITHIN, guard.lost()).await {
            Ok(reason) => {
                tracing::info!(
                    writer,
                    %reason,
                    after_ms = t0.elapsed().as_millis() as u64,
                    "fenced out, and the guard was told it is lost: {}",
                    suspect.join("; ")
                );
                self.counts().lost_told += 1;
            }
            Err(_) => {
                tracing::error!(
                    writer,
                    range = ?guard.range(),
                    pieces = ?guard.pieces(),
                    "VIOLATION: fenced out, but the guard was not lost within {TOLD_WITHIN:?}: {}",
                    suspect.join("; ")
                );
                self.counts().lost_untold += 1;
            }
        }
        false
    }
}

/// Writes the report atomically (a temporary file, renamed).
fn write_report(path: &Path, json: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}

/// Runs the worker.
pub fn run(args: WorkerArgs) -> anyhow::Result<()> {
    crate::logging::init(crate::logging::LogFormat::Text);
    anyhow::ensure!(
        !args.writer.is_empty() && !args.writer.contains(char::is_whitespace),
        "--writer must be non-empty and without whitespace"
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let started = Instant::now();
        let counts = Arc::new(Mutex::new(Counts::default()));
        let (report, writer) = (args.report.clone(), args.writer.clone());
        let me = args.writer.clone();
        let save = {
            let counts = counts.clone();
            move |finished: bool| {
                let json = counts.lock().unwrap_or_else(PoisonError::into_inner).json(
                    &writer,
                    started.elapsed(),
                    finished,
                );
                write_report(&report, &json)
                    .with_context(|| format!("cannot write the report {}", report.display()))
            }
        };
        save(false)?;
        let options = ClusterOptions {
            reclaim_window: Duration::from_millis(args.reclaim_window_ms),
            ..ClusterOptions::default()
        };
        let client = connect(&args.seeds, options, args.cached).await?;
        let seconds = args.seconds.map(Duration::from_secs_f64);
        let mut worker = Worker {
            rng: SplitMix64::new(args.seed ^ 0x5eed),
            args,
            client,
            store: None,
            counts: counts.clone(),
        };
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        let work = async {
            for _ in 0..worker.args.ops {
                if seconds.is_some_and(|s| started.elapsed() >= s) {
                    break;
                }
                worker.op().await;
            }
        };
        tokio::pin!(work);
        let how = loop {
            tokio::select! {
                () = &mut work => break "done",
                _ = term.recv() => break "SIGTERM",
                _ = int.recv() => break "SIGINT",
                _ = tick.tick() => save(false)?,
            }
        };
        save(true)?;
        let c = counts.lock().unwrap_or_else(PoisonError::into_inner);
        println!(
            "worker {} ({how}): ops {} granted {} writes {} stale_rejected {} lost_told {} \
             lost_untold {} unanswered {} errors {}",
            me,
            c.ops,
            c.granted,
            c.writes,
            c.stale_rejected,
            c.lost_told,
            c.lost_untold,
            c.unanswered,
            c.errors.values().sum::<u64>()
        );
        Ok(())
    })
}

/// Connects to the cluster, retrying for [`CONNECT_WITHIN`].
async fn connect(
    seeds: &[String],
    options: ClusterOptions,
    cached: bool,
) -> anyhow::Result<AnyClient> {
    let deadline = Instant::now() + CONNECT_WITHIN;
    loop {
        let client = match cached {
            false => ClusterClient::connect(seeds, options.clone()).await.map(AnyClient::Plain),
            true => CachedClusterClient::connect(seeds, options.clone(), CacheOptions::default())
                .await
                .map(AnyClient::Cached),
        };
        match client {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => {
                return Err(e).context(format!("cannot reach the cluster at {}", seeds.join(",")))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot reach the cluster yet");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lie_near_boundaries_and_often_cross_them() {
        let parts = Partitioning::new(8).unwrap();
        let mut rng = SplitMix64::new(7);
        let mut crossing = 0;
        for _ in 0..1000 {
            let r = pick_range(parts, &mut rng);
            assert!(r.start < r.end && r.end - r.start <= 128, "{r:?}");
            let (a, b) = (parts.of(r.start), parts.of(r.end - 1));
            assert!(b == a || b == a + 1, "{r:?}");
            let boundary = parts.start(if b > a { b } else { parts.of(r.start + 64) });
            assert!(r.start.abs_diff(boundary) <= 64 || b > a, "{r:?}");
            crossing += usize::from(b > a);
        }
        assert!((300..700).contains(&crossing), "{crossing} of 1000 cross a boundary");
        let one = Partitioning::new(1).unwrap();
        assert!(pick_range(one, &mut rng).end <= (1 << 20) + 128);
    }

    #[test]
    fn named_ranges_cross_stripes_and_keep_apart_at_the_store() {
        let mut rng = SplitMix64::new(9);
        let s = 1u64 << NAME_STRIPE_SHIFT;
        let mut crossing = 0;
        for _ in 0..1000 {
            let r = pick_named_range(&mut rng);
            assert!(r.start < r.end && r.end - r.start <= 128 && r.end < 17 * s + 128, "{r:?}");
            crossing += usize::from(r.start / s != (r.end - 1) / s);
            let (a, b) = (store_range(Some(0), r.clone()), store_range(Some(999), r.clone()));
            assert!(a.end <= 2 << 40 && b.start >= 1000 << 40 && b.end < 1 << 52, "{a:?} {b:?}");
        }
        assert!((300..700).contains(&crossing), "{crossing} of 1000 cross a stripe");
        assert_eq!(store_range(None, 5..9), 5..9);
    }

    #[test]
    fn the_report_is_json() {
        let mut c = Counts { ops: 3, lost_untold: 1, ..Counts::default() };
        c.error("store");
        c.error("server: x");
        let j = c.json("w\"1", Duration::from_millis(1500), true);
        assert!(j.contains("\"ops\": 3") && j.contains("\"lost_untold\": 1"), "{j}");
        assert!(j.contains("\"errors_total\": 2") && j.contains("\"store\": 1"), "{j}");
        assert!(j.contains("\"writer\": \"w\\\"1\""), "{j}");
    }
}
