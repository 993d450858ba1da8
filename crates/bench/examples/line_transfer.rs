//! What one cache line costs to move between two cores of this machine, now: the probe the
//! harness runs after every case of two threads or more (`harness::machine`).
//!
//! `cargo run --release -p rangelock-bench --example line_transfer -- [probes]` prints one
//! probe a second (default 10): on the 2-vCPU development VM, about 30-60 ns one way when
//! the hypervisor has the vCPUs close, over 200 ns when it has moved them apart (which
//! sustained load on both brings about within seconds).

use rangelock_bench::harness::machine;

fn main() {
    let probes: u32 = std::env::args().nth(1).map_or(10, |a| a.parse().expect("probes: a number"));
    for _ in 0..probes {
        match machine::line_transfer_ns(machine::PROBE_ROUND_TRIPS) {
            Some(ns) => println!("{ns:.1} ns per one-way line transfer"),
            None => {
                println!("fewer than two CPUs to pin the probe's threads to");
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}
