//! The text a scrape returns: an [`EngineSnapshot`] and the session ends, encoded by
//! `prometheus-client` in the OpenMetrics text format.
//!
//! Every scrape builds a small registry (prefix `rangelock`, constant label `engine`)
//! around one collector that holds the snapshot; nothing is registered or updated between
//! scrapes, the engines' own counters are the source.

use std::borrow::Cow;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::errors::status_name;
use super::snapshot::EngineSnapshot;
use crate::config::EngineKind;

/// The `Content-Type` of the exposition.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Renders one scrape; see the module docs.
pub(crate) fn render(
    engine: EngineKind,
    snapshot: EngineSnapshot,
    session_ends: Vec<(&'static str, u64)>,
) -> String {
    let label = [(Cow::Borrowed("engine"), Cow::Borrowed(engine.name()))];
    let mut registry = Registry::with_prefix_and_labels("rangelock", label.into_iter());
    registry.register_collector(Box::new(Scrape { engine, snapshot, session_ends }));
    let mut out = String::with_capacity(8 * 1024);
    prometheus_client::encoding::text::encode(&mut out, &registry)
        .expect("writing to a String cannot fail");
    out
}

/// One scrape's data.
#[derive(Debug)]
struct Scrape {
    engine: EngineKind,
    snapshot: EngineSnapshot,
    session_ends: Vec<(&'static str, u64)>,
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
            let help = "Requests answered with an error status, by status (a series appears \
                        once its status has occurred)";
            let mut m = e.encode_descriptor("errors", help, None, MetricType::Counter)?;
            for (status, n) in self.snapshot.errors.nonzero() {
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
        ] {
            let mut m =
                e.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
            m.encode_histogram::<NoLabelSet>(h.sum_seconds(), h.count(), &h.buckets(), None)?;
        }
        Ok(())
    }
}
