//! The text a scrape returns: an [`EngineSnapshot`], the session ends, a cluster node's
//! partitions and counters, the build and the `process_*` series, encoded by
//! `prometheus-client` in the OpenMetrics text format, or converted to the Prometheus
//! text format 0.0.4 ([`Format`]).
//!
//! Every scrape builds a small registry around two collectors that hold the data: the
//! `process_*` series at the root, and the rest under the prefix `rangelock` with the
//! constant label `engine`. Nothing is registered or updated between scrapes; the
//! engines' own counters are the source.

use std::borrow::Cow;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::errors::status_name;
use super::process::ProcessStats;
use super::snapshot::EngineSnapshot;
use crate::config::EngineKind;
use crate::ownership::ClusterStatsSnapshot;
use crate::protocol::Status;

/// The two text formats a scrape can get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// OpenMetrics 1.0, when the scraper's `Accept` asks for it (Prometheus does).
    OpenMetrics,
    /// The Prometheus text format 0.0.4: the default (`curl`, older scrapers).
    Text,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics if it names
    /// `application/openmetrics-text` (with a q above 0), else text 0.0.4.
    pub(crate) fn from_accept(accept: Option<&str>) -> Format {
        let asks = |range: &str| {
            let mut parts = range.split(';').map(str::trim);
            let q = |p: &str| p.strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok());
            parts.next() == Some("application/openmetrics-text")
                && !parts.any(|p| q(p).is_some_and(|q| q <= 0.0))
        };
        match accept {
            Some(a) if a.split(',').any(asks) => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    /// The `Content-Type` of a reply in this format.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// A cluster node's part of a scrape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClusterScrape {
    /// Partitions this node owns (serving or in grace).
    pub(crate) owned: u64,
    /// Of those, in a grace period.
    pub(crate) in_grace: u64,
    /// Reclaims and etcd requests.
    pub(crate) stats: ClusterStatsSnapshot,
}

/// Renders one scrape; see the module docs.
pub(crate) fn render(
    engine: EngineKind,
    snapshot: EngineSnapshot,
    session_ends: Vec<(&'static str, u64)>,
    cluster: Option<ClusterScrape>,
    format: Format,
) -> String {
    let mut registry = Registry::default();
    if let Some(process) = ProcessStats::read() {
        registry.register_collector(Box::new(Process(process)));
    }
    let label = (Cow::Borrowed("engine"), Cow::Borrowed(engine.name()));
    registry
        .sub_registry_with_prefix("rangelock")
        .sub_registry_with_label(label)
        .register_collector(Box::new(Scrape { engine, snapshot, session_ends, cluster }));
    let mut out = String::with_capacity(8 * 1024);
    prometheus_client::encoding::text::encode(&mut out, &registry)
        .expect("writing to a String cannot fail");
    match format {
        Format::OpenMetrics => out,
        Format::Text => to_text_004(&out),
    }
}

/// OpenMetrics text as the Prometheus text format 0.0.4: a counter's family takes its
/// sample name (`x_total`) in `# HELP` and `# TYPE`, `# UNIT` lines and `# EOF` go. The
/// rest (samples, labels, escaping, histogram series) is the same in both formats for
/// what we expose: no exemplars, no `_created` series, no info or state sets.
fn to_text_004(open_metrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = open_metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(open_metrics.len());
    for line in open_metrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.contains(name).then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// One scrape's data.
#[derive(Debug)]
struct Scrape {
    engine: EngineKind,
    snapshot: EngineSnapshot,
    session_ends: Vec<(&'static str, u64)>,
    cluster: Option<ClusterScrape>,
}

/// The `process_*` series.
#[derive(Debug)]
struct Process(ProcessStats);

impl Collector for Process {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> std::fmt::Result {
        let p = &self.0;
        let c = ConstCounter::new(p.cpu_seconds);
        let m = e.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            c.metric_type(),
        )?;
        c.encode(m)?;
        for (name, help, v) in [
            ("process_open_fds", "Number of open file descriptors", p.open_fds as f64),
            ("process_max_fds", "Maximum number of open file descriptors", p.max_fds as f64),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                p.virtual_memory_bytes as f64,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                p.resident_memory_bytes as f64,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                p.start_time_seconds,
            ),
        ] {
            let g = ConstGauge::new(v);
            g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        Ok(())
    }
}

fn counter(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let g = ConstGauge::new(v as i64);
    g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for Scrape {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> std::fmt::Result {
        let c = &self.snapshot.counters;
        let fifo = self.engine != EngineKind::RangeLock;
        counter(&mut e, "grants", "Locks granted, at once or after waiting", c.grants)?;
        counter(&mut e, "releases", "Held locks released by UNLOCK", c.releases)?;
        counter(
            &mut e,
            "session_end_releases",
            "Held locks released because their session ended (closed, lease expired, \
             server shutdown, output limit)",
            c.released_by_close,
        )?;
        counter(
            &mut e,
            "timeouts",
            "Waiting lock requests whose timeout passed before a grant",
            c.timeouts,
        )?;
        counter(
            &mut e,
            "cancels",
            "Waiting lock requests withdrawn by CANCEL or by UNLOCK of the waiting lock",
            c.cancels,
        )?;
        let would_block = if fifo {
            "Try-locks refused WOULD_BLOCK: a conflicting lock was held or queued earlier"
        } else {
            "Try-locks refused WOULD_BLOCK: a conflicting lock was held (this engine has no \
             FIFO queue: waiters do not block a try)"
        };
        counter(&mut e, "would_block", would_block, c.would_block)?;
        {
            let help = "Requests answered with an error status, by status (every error \
                        status of the protocol, from the start)";
            let mut m = e.encode_descriptor("errors", help, None, MetricType::Counter)?;
            // SESSION_ENDED, MAP_CHANGED and CALLBACK are notices, never a reply's status.
            let notice = |s: &Status| {
                matches!(s, Status::SessionEnded | Status::MapChanged | Status::Callback)
            };
            for (status, n) in self.snapshot.errors.all().filter(|(s, _)| !notice(s)) {
                let labels = [("status", status_name(status))];
                ConstCounter::new(n).encode(m.encode_family(&labels)?)?;
            }
        }
        gauge(&mut e, "sessions_open", "Sessions open now", c.sessions_open)?;
        counter(&mut e, "sessions", "Sessions opened since start", c.sessions_total)?;
        {
            let help = "Sessions ended, by reason (closed: by the client, lease_expired: no \
                        frame for a lease, shutdown, not_reading: the client stopped reading \
                        its answers, output_limit, bad_framing, io_error, other)";
            let mut m = e.encode_descriptor("sessions_ended", help, None, MetricType::Counter)?;
            for (reason, n) in &self.session_ends {
                ConstCounter::new(*n).encode(m.encode_family(&[("reason", *reason)])?)?;
            }
        }
        gauge(&mut e, "locks_held", "Locks held now", c.holders)?;
        let queued = if fifo {
            "Lock requests queued now (FIFO per overlapping range)"
        } else {
            "Lock requests waiting now: registered waiters, retried when an overlapping \
             range is released; no FIFO order (a new request may overtake them)"
        };
        gauge(&mut e, "locks_queued", queued, c.waiters)?;
        let help = "Named resources live now: something is held or queued on them";
        gauge(&mut e, "names_live", help, c.names_live)?;
        let help = "Locks held now on named resources (part of locks_held)";
        gauge(&mut e, "named_locks_held", help, c.named_holders)?;
        let k = &self.snapshot.cache;
        let help = "Cached extents kept now by clients that cache (part of locks_held)";
        gauge(&mut e, "cached_extents", help, k.kept)?;
        let help = "CALLBACK notices sent: another session needed part of a cached extent";
        counter(&mut e, "callbacks", help, k.callbacks)?;
        let help = "GIVE_BACKs done: parts of locks released or downgraded by their client";
        counter(&mut e, "give_backs", help, k.give_backs)?;
        let help = "LOCK_CACHED grants wider than asked";
        counter(&mut e, "cache_expanded", help, k.expanded)?;
        for (name, help, h) in [
            (
                "wait",
                "Time from a LOCK's arrival to its grant, for every granted lock (immediate \
                 grants included)",
                &self.snapshot.wait,
            ),
            (
                "hold",
                "Time from a grant to its release by UNLOCK or session end",
                &self.snapshot.hold,
            ),
            (
                "callback",
                "Time from a CALLBACK to the GIVE_BACK that answered it (a client that \
                 stops answering loses its session with its lease: sessions_ended \
                 reason lease_expired)",
                &self.snapshot.callback,
            ),
        ] {
            let mut m =
                e.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
            m.encode_histogram::<NoLabelSet>(h.sum_seconds(), h.count(), &h.buckets(), None)?;
        }
        {
            let help = "The server's version: a constant 1 with the version as a label";
            let mut m = e.encode_descriptor("build_info", help, None, MetricType::Gauge)?;
            let labels = [("version", env!("CARGO_PKG_VERSION"))];
            ConstGauge::new(1).encode(m.encode_family(&labels)?)?;
        }
        if let Some(c) = &self.cluster {
            self.encode_cluster(&mut e, c)?;
        }
        Ok(())
    }
}

impl Scrape {
    /// A cluster node's series (`rangelock_cluster_*`).
    fn encode_cluster(&self, e: &mut DescriptorEncoder<'_>, c: &ClusterScrape) -> std::fmt::Result {
        gauge(
            e,
            "cluster_partitions_owned",
            "Partitions this node owns now (serving or in grace)",
            c.owned,
        )?;
        gauge(
            e,
            "cluster_partitions_in_grace",
            "Partitions of this node in a grace period now (only reclaims are served)",
            c.in_grace,
        )?;
        counter(
            e,
            "cluster_reclaims",
            "Locks reclaimed at this node (RECLAIM granted) after a failover or a planned move",
            c.stats.reclaims,
        )?;
        let fenced = self.snapshot.errors.get(Status::Fenced);
        counter(e, "cluster_fenced_requests", "Requests refused FENCED: this node's lease may have lapsed, so it served nothing (also in errors_total)", fenced)?;
        counter(
            e,
            "cluster_etcd_errors",
            "etcd requests of the node's manager that failed (unreachable, timed out, refused)",
            c.stats.etcd_errors,
        )?;
        let h = &c.stats.etcd_latency;
        let mut m = e.encode_descriptor(
            "cluster_etcd_request",
            "Duration of the node's etcd requests (keepalives, reads, claims; failed ones included)",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        m.encode_histogram::<NoLabelSet>(h.sum_seconds(), h.count(), &h.buckets(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_header_chooses_the_format() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::from_accept(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
        assert_eq!(Format::from_accept(Some("text/plain;version=0.0.4")), Format::Text);
        assert_eq!(Format::from_accept(None), Format::Text);
        assert_eq!(Format::from_accept(Some("application/openmetrics-text; q=0")), Format::Text);
        assert_eq!(Format::from_accept(Some("application/openmetrics-text;q=0.0")), Format::Text);
        let half = Some("application/openmetrics-text;version=1.0.0;q=0.5");
        assert_eq!(Format::from_accept(half), Format::OpenMetrics);
    }

    #[test]
    fn text_0_0_4_names_counters_by_their_samples_and_drops_units_and_eof() {
        let om = "# HELP rangelock_grants Locks granted.\n# TYPE rangelock_grants counter\n\
                  rangelock_grants_total{engine=\"combiner\"} 3\n\
                  # HELP rangelock_wait_seconds Wait.\n# TYPE rangelock_wait_seconds histogram\n\
                  # UNIT rangelock_wait_seconds seconds\nrangelock_wait_seconds_count 1\n# EOF\n";
        let text = to_text_004(om);
        assert_eq!(
            text,
            "# HELP rangelock_grants_total Locks granted.\n# TYPE rangelock_grants_total counter\n\
             rangelock_grants_total{engine=\"combiner\"} 3\n\
             # HELP rangelock_wait_seconds Wait.\n# TYPE rangelock_wait_seconds histogram\n\
             rangelock_wait_seconds_count 1\n"
        );
    }
}
