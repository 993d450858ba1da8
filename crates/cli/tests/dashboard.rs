//! The metrics operators alert on are there: a live scrape of a real cluster node holds
//! every series docs/OPERATIONS.md lists (the `process_*` series, build info, every
//! `errors_total` status from the start, the cluster series), and every metric that the
//! Grafana dashboard (docs/grafana-rangelockd.json) and the PromQL examples of
//! OPERATIONS.md query.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{rangelock, tempdir};
use rangelock_cluster::etcd::local_etcd_or_skip;

const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs");

/// `GET /metrics` as curl sends it (text format 0.0.4).
fn scrape(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// The sample names of a scrape (`rangelock_wait_seconds_bucket`, …).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_owned())
        .collect()
}

/// The value of the one sample whose series (name and labels, as written) starts with
/// `series`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(series))?.rsplit_once(' ')?.1.parse().ok()
}

/// The metric names a PromQL text uses: identifiers that start with `rangelock_` or
/// `process_` (label values are quoted and never do).
fn metric_names(promql: &str) -> BTreeSet<String> {
    // Quoted label values go first.
    let unquoted: String = promql.split('"').step_by(2).collect::<Vec<_>>().join(" ");
    let mut out = BTreeSet::new();
    let mut rest = unquoted.as_str();
    while let Some(i) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
        rest = &rest[i..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        let (word, tail) = rest.split_at(end.unwrap_or(rest.len()));
        if word.starts_with("rangelock_") || word.starts_with("process_") {
            out.insert(word.to_owned());
        }
        rest = tail;
    }
    out
}

/// Every PromQL query of the dashboard (`expr` of each target, and the variables').
fn dashboard_queries() -> Vec<String> {
    let text = std::fs::read_to_string(format!("{DOCS}/grafana-rangelockd.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut out = Vec::new();
    for p in json["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().expect("targets") {
            out.push(t["expr"].as_str().expect("expr").to_owned());
        }
    }
    for v in json["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"].as_str() {
            out.push(q.to_owned());
        }
    }
    out
}

/// The ```promql blocks of OPERATIONS.md.
fn operations_queries() -> Vec<String> {
    let text = std::fs::read_to_string(format!("{DOCS}/OPERATIONS.md")).unwrap();
    text.split("```promql\n").skip(1).map(|b| b.split("```").next().unwrap().to_owned()).collect()
}

#[test]
fn the_extractor_finds_names_and_skips_functions_and_labels() {
    let q = r#"histogram_quantile(0.99, sum by (instance, le) (rate(rangelock_wait_seconds_bucket{status="process_x"}[5m]))) / process_max_fds"#;
    let names: Vec<String> = metric_names(q).into_iter().collect();
    assert_eq!(names, ["process_max_fds", "rangelock_wait_seconds_bucket"]);
}

#[test]
fn a_live_scrape_has_every_series_the_docs_and_the_dashboard_use() {
    let Some(etcd) =
        local_etcd_or_skip("a_live_scrape_has_every_series_the_docs_and_the_dashboard_use")
    else {
        return;
    };
    let dir = tempdir("dashboard");
    let mut node = rangelock()
        .args(["serve", "--addr", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
        .args(["--cluster", &etcd.endpoint(), "--node-id", "a", "--partitions", "4"])
        .env("RUST_LOG", "warn")
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(node.stdout.take().unwrap());
    let mut metrics = None;
    for _ in 0..4 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        if let Some(url) = line.trim().strip_prefix("metrics on http://") {
            metrics = Some(url.trim_end_matches("/metrics").to_owned());
            break;
        }
    }
    let addr = metrics.expect("a cluster node prints `metrics on URL`");
    // Until the node owns its partitions (a claim is an etcd request, so the etcd
    // histogram has counts too).
    let end = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = scrape(&addr);
        if value(&text, "rangelock_cluster_partitions_owned") == Some(4.0) {
            break text;
        }
        assert!(Instant::now() < end, "the node did not claim its partitions:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = node.kill();
    let _ = node.wait();

    let names = sample_names(&text);
    let listed = [
        "process_open_fds",
        "process_max_fds",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_cpu_seconds_total",
        "process_start_time_seconds",
        "rangelock_build_info",
        "rangelock_cluster_partitions_owned",
        "rangelock_cluster_partitions_in_grace",
        "rangelock_cluster_reclaims_total",
        "rangelock_cluster_fenced_requests_total",
        "rangelock_cluster_etcd_errors_total",
        "rangelock_cluster_etcd_request_seconds_bucket",
        "rangelock_cluster_etcd_request_seconds_count",
    ];
    for n in listed {
        assert!(names.contains(n), "{n} is not in the scrape:\n{text}");
    }
    assert!(value(&text, "rangelock_cluster_etcd_request_seconds_count").unwrap() > 0.0);
    assert_eq!(value(&text, "rangelock_cluster_partitions_in_grace"), Some(0.0), "{text}");
    // Every error status, at 0, before any error.
    for status in ["NOT_HELD", "FORBIDDEN", "FENCED", "NOT_OWNER", "IN_GRACE", "MALFORMED"] {
        let series = format!("rangelock_errors_total{{engine=\"combiner\",status=\"{status}\"}}");
        assert_eq!(value(&text, &series), Some(0.0), "{series}:\n{text}");
    }

    let mut used = BTreeSet::new();
    for q in dashboard_queries().iter().chain(&operations_queries()) {
        used.extend(metric_names(q));
    }
    assert!(used.len() >= 20, "the queries name too few metrics: {used:?}");
    let missing: Vec<&String> = used.iter().filter(|n| !names.contains(*n)).collect();
    assert!(missing.is_empty(), "queried but not in a live scrape: {missing:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
