//! The JSON record of one case.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::run_info::RunInfo;

/// One case's result, as written to `<out>/<suite>.json` (an array of these).
///
/// Field names are part of the report format: `suite`, `variant`, `threads`,
/// `oversubscribed`, `params`, `ops_per_sec`, `ops_per_sec_min`, `ops_per_sec_max`,
/// `ns_per_op`, `p50_ns`, `p99_ns`, `p999_ns`, `p50_ns_min`, `p50_ns_max`, `p99_ns_min`,
/// `p99_ns_max`, `latency_samples`, `rounds`, `duration_ms`, `ratio_vs_baseline`,
/// `ratio_vs_best_other`, `machine`, followed by the case's extra fields at the top level.
/// The fields added later (`ops_per_sec_min`, `ops_per_sec_max`, the per-round percentile
/// extremes, `machine`) default to `None`, so older JSON still loads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Suite name.
    pub suite: String,
    /// Variant name.
    pub variant: String,
    /// Worker threads.
    pub threads: usize,
    /// More threads than cores: a robustness row, not a scaling claim.
    pub oversubscribed: bool,
    /// Workload parameters.
    pub params: Map<String, Value>,
    /// Median over rounds of operations per second (all threads together).
    pub ops_per_sec: f64,
    /// Smallest ops/s of one round (`None` in records older than the field).
    #[serde(default)]
    pub ops_per_sec_min: Option<f64>,
    /// Largest ops/s of one round (`None` in records older than the field).
    #[serde(default)]
    pub ops_per_sec_max: Option<f64>,
    /// `1e9 / ops_per_sec`: inverse aggregate throughput, not a per-thread latency; null
    /// when nothing completed.
    pub ns_per_op: Option<f64>,
    /// Median sampled latency (null without samples).
    pub p50_ns: Option<u64>,
    /// 99th percentile sampled latency (null without samples).
    pub p99_ns: Option<u64>,
    /// 99.9th percentile (null with fewer than 1000 samples).
    pub p999_ns: Option<u64>,
    /// The smallest median latency of one round: each round's p50 is taken from that
    /// round's samples alone (`p50_ns` pools every round's). With `p50_ns_max`, the spread a
    /// latency verdict must hold across. Null without samples, and in older records.
    #[serde(default)]
    pub p50_ns_min: Option<u64>,
    /// The largest median latency of one round (see `p50_ns_min`).
    #[serde(default)]
    pub p50_ns_max: Option<u64>,
    /// The smallest 99th percentile of one round, from that round's samples alone (see
    /// `p50_ns_min`).
    #[serde(default)]
    pub p99_ns_min: Option<u64>,
    /// The largest 99th percentile of one round (see `p99_ns_min`).
    #[serde(default)]
    pub p99_ns_max: Option<u64>,
    /// Latency samples pooled over rounds.
    pub latency_samples: usize,
    /// Rounds measured.
    pub rounds: usize,
    /// Duration of one measurement in milliseconds.
    pub duration_ms: u64,
    /// `ops_per_sec / baseline's ops_per_sec` in the same (params, threads) group; null when
    /// the baseline is absent from the group.
    pub ratio_vs_baseline: Option<f64>,
    /// `ops_per_sec / best other variant's ops_per_sec` in the same group; null when the
    /// group has no other variant.
    pub ratio_vs_best_other: Option<f64>,
    /// What the run ran on and was built from (`None` in records older than the field).
    #[serde(default)]
    pub machine: Option<RunInfo>,
    /// Extra numeric fields of the suite (median over rounds).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Record {
    /// The key of the group ratios are computed in: (params, threads).
    pub fn group_key(&self) -> (String, usize) {
        (Value::Object(self.params.clone()).to_string(), self.threads)
    }

    /// A record of suite `s` with only a variant, a thread count (oversubscribed above 2)
    /// and a rate, for the tests of what reads records.
    #[cfg(test)]
    pub(crate) fn for_test(variant: &str, threads: usize, ops_per_sec: f64) -> Record {
        Record {
            suite: "s".into(),
            variant: variant.into(),
            threads,
            oversubscribed: threads > 2,
            params: Map::new(),
            ops_per_sec,
            ops_per_sec_min: None,
            ops_per_sec_max: None,
            ns_per_op: None,
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
            p50_ns_min: None,
            p50_ns_max: None,
            p99_ns_min: None,
            p99_ns_max: None,
            latency_samples: 0,
            rounds: 1,
            duration_ms: 1,
            ratio_vs_baseline: None,
            ratio_vs_best_other: None,
            machine: None,
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_without_ops_round_trips_with_nulls() {
        let mut extra = Map::new();
        extra.insert("held".to_owned(), Value::from(3));
        let r = Record { duration_ms: 5, extra, ..Record::for_test("v", 2, 0.0) };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"ns_per_op\":null") && text.contains("\"held\":3"), "{text}");
        assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), r);
    }

    /// JSON written before the spread and the machine block existed still loads, with
    /// `None` for them (and nothing of theirs among the extra fields).
    #[test]
    fn an_older_record_loads_without_spread_or_machine() {
        let mut r = Record::for_test("v", 1, 5.0);
        r.ops_per_sec_min = Some(4.0);
        r.ops_per_sec_max = Some(6.0);
        (r.p50_ns_min, r.p50_ns_max, r.p99_ns_min, r.p99_ns_max) =
            (Some(10), Some(12), Some(30), Some(40));
        r.machine = Some(crate::harness::RunInfo::current());
        let mut value = serde_json::to_value(&r).unwrap();
        let object = value.as_object_mut().unwrap();
        assert!(object["machine"]["cores"].as_u64().is_some(), "{object:?}");
        assert_eq!(object["p99_ns_max"], 40, "{object:?}");
        let added = ["p50_ns_min", "p50_ns_max", "p99_ns_min", "p99_ns_max"];
        for k in ["ops_per_sec_min", "ops_per_sec_max", "machine"].into_iter().chain(added) {
            object.remove(k);
        }
        let old: Record = serde_json::from_value(value).unwrap();
        assert!(old.extra.is_empty(), "{old:?}");
        assert_eq!(
            old,
            Record {
                ops_per_sec_min: None,
                ops_per_sec_max: None,
                p50_ns_min: None,
                p50_ns_max: None,
                p99_ns_min: None,
                p99_ns_max: None,
                machine: None,
                ..r
            }
        );
    }
}
