//! What a stripe-slot waiter pays before it parks: one process-wide barrier
//! (`membarrier2::heavy()`, Linux `membarrier(PRIVATE_EXPEDITED)`), the price of the
//! holders' plain-store release (`rangelock::skiplist`, `wait`, "Counted words").
//!
//! `cargo run --release -p rangelock --example membarrier_cost -- [calls]` times `calls`
//! barriers (default 20 000) twice: with this process's other threads idle, and with one
//! thread of ours spinning on another core (the barrier then interrupts that core).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Times `calls` heavy barriers; microseconds per barrier.
fn per_barrier(calls: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        membarrier2::heavy();
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
}

fn main() {
    let calls: u32 =
        std::env::args().nth(1).map_or(20_000, |a| a.parse().expect("calls: a number"));
    println!("process-wide barrier supported: {}", membarrier2::is_supported());
    println!("other threads idle: {:.2} us per barrier", per_barrier(calls));
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = 0u64;
            // Relaxed: a stop flag, nothing published through it.
            while !stop.load(Ordering::Relaxed) {
                x = black_box(x.wrapping_add(1));
            }
        });
        // Let the spinner reach its core before timing.
        std::thread::sleep(Duration::from_millis(50));
        println!("one thread spinning: {:.2} us per barrier", per_barrier(calls));
        stop.store(true, Ordering::Relaxed);
    });
}
