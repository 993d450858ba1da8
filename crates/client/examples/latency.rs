//! Single-client lock+unlock latency of the blocking Rust client, uncontended, one range:
//! the same loop as `clients/python/bench_latency.py`, so the two can be compared against
//! one server.
//!
//! ```sh
//! target/release/rangelock serve --addr 127.0.0.1:7878 &
//! cargo run --release -p rangelock-client --example latency -- 127.0.0.1:7878 20000
//! python3 clients/python/bench_latency.py 127.0.0.1:7878 --n 20000
//! ```
//!
//! Each sample is one `lock(0..4096)` (exclusive, wait forever) plus `unlock()`, which
//! waits for the server's answer: two round trips. Prints the median, p99 and mean in
//! microseconds.

use std::time::Instant;

use rangelock_client::{Client, Endpoint};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let endpoint: Endpoint = args.next().unwrap_or_else(|| "127.0.0.1:7878".into()).parse()?;
    let n: usize = args.next().map_or(Ok(20_000), |s| s.parse())?;
    let client = Client::connect(&endpoint)?;
    for _ in 0..n / 10 {
        client.lock_exclusive(0..4096)?.unlock()?;
    }
    let mut ns = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client.lock_exclusive(0..4096)?.unlock()?;
        ns.push(t.elapsed().as_nanos() as f64);
    }
    ns.sort_by(f64::total_cmp);
    let us = |v: f64| v / 1000.0;
    let median = if n % 2 == 1 { ns[n / 2] } else { (ns[n / 2 - 1] + ns[n / 2]) / 2.0 };
    let p99 = ns[(n * 99 / 100).min(n - 1)];
    let mean = ns.iter().sum::<f64>() / n as f64;
    println!(
        "rust client lock+unlock, {endpoint}, n={n}: median {:.1} us, p99 {:.1} us, mean {:.1} us",
        us(median),
        us(p99),
        us(mean)
    );
    Ok(())
}
