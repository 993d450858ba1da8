//! How long blocking `lock_many` calls wait beside async tasks on the same lock.
//!
//! `cargo run --release -p rangelock --example many_starvation -- [threads] [tasks]
//! [seconds] [domain]`: `threads` OS threads (default 16) each loop over `lock_many` of 2
//! to 4 disjoint random ranges of up to 4 units in `0..domain` (default 8), in random
//! modes, and `tasks` tokio tasks (default 32, on a runtime of 2 workers) each loop over
//! `lock_mode_async` of one random range of up to 4 units, for `seconds` (default 5). Each
//! holder keeps its ranges for a `yield` (the threads) or a `yield_now().await` (the
//! tasks). Prints the waits of the `lock_many` calls and of the tasks' acquisitions: the
//! worst, the p99, the median, and how many took over 1 s.
//!
//! On the 2-core development machine while other builds kept both cores busy, 10 s runs,
//! 3 each (`lock_many`'s worst wait, p99, waits over 1 s): `16 0 10 8` 12-32 ms,
//! 5.4-5.5 ms, 0; `16 32 10 8` 143-228 ms, 29-48 ms, 0; `2 64 10 8` 59-96 ms, 20-36 ms,
//! 0. Without the fair path (`lock_many`'s steps 1 to 3 alone) the same runs gave
//! 153-219 ms, 8.8-9.3 ms, 0; 7.4-8.5 s, 0.6-1.2 s, 34-45; and 1.7-4.6 s, 0.3-2.6 s, 3-8.
//! On the idle machine, one run each with the fair path: 5.7 ms, 0.9 ms, 0; 61.6 ms,
//! 16.3 ms, 0; 15.3 ms, 6.3 ms, 0.

#[path = "common/rng.rs"]
mod rng;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rangelock::{Mode, RangeLock};
use rng::Rng;

fn arg(i: usize, default: u64) -> u64 {
    std::env::args().nth(i).map_or(default, |a| a.parse().expect("a number"))
}

fn pick(rng: &mut Rng, domain: u64) -> (std::ops::Range<u64>, Mode) {
    let start = rng.below(domain - 1);
    let len = 1 + rng.below((domain - start).min(4));
    (start..start + len, if rng.below(2) == 0 { Mode::Shared } else { Mode::Exclusive })
}

fn request(rng: &mut Rng, domain: u64) -> Vec<(std::ops::Range<u64>, Mode)> {
    loop {
        let mut picked: Vec<_> = (0..2 + rng.below(3)).map(|_| pick(rng, domain)).collect();
        picked.sort_by_key(|(r, _)| r.start);
        picked.dedup_by(|b, a| a.0.end > b.0.start);
        if picked.len() >= 2 {
            return picked;
        }
    }
}

fn summary(what: &str, mut waits: Vec<Duration>) {
    waits.sort();
    let n = waits.len();
    if n == 0 {
        println!("{what}: no calls");
        return;
    }
    let at = |q: f64| waits.get(((n as f64 * q) as usize).min(n.saturating_sub(1))).copied();
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    let over = waits.iter().filter(|w| **w > Duration::from_secs(1)).count();
    println!(
        "{what}: {n} calls, worst {:.1} ms, p99 {:.1} ms, median {:.3} ms, {over} over 1 s",
        ms(waits.last().copied()),
        ms(at(0.99)),
        ms(at(0.5)),
    );
}

fn main() {
    let (threads, tasks, seconds, domain) = (arg(1, 16), arg(2, 32), arg(3, 5), arg(4, 8));
    let lock = Arc::new(RangeLock::new());
    let stop = Arc::new(AtomicBool::new(false));
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let task_handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (lock, stop) = (lock.clone(), stop.clone());
            rt.spawn(async move {
                let mut rng = Rng(0xA5A5 + t);
                let mut waits = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let (range, mode) = pick(&mut rng, domain);
                    let begin = Instant::now();
                    let guard = lock.lock_mode_async(range, mode).await;
                    waits.push(begin.elapsed());
                    tokio::task::yield_now().await;
                    drop(guard);
                }
                waits
            })
        })
        .collect();
    let thread_handles: Vec<_> = (0..threads)
        .map(|t| {
            let (lock, stop) = (lock.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0xB10C + t);
                let mut waits = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let request = request(&mut rng, domain);
                    let begin = Instant::now();
                    let guard = lock.lock_many(request);
                    waits.push(begin.elapsed());
                    std::thread::yield_now();
                    drop(guard);
                }
                waits
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let many = thread_handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let single = rt.block_on(async {
        let mut all = Vec::new();
        for h in task_handles {
            all.extend(h.await.unwrap());
        }
        all
    });
    println!("{threads} threads of lock_many, {tasks} async tasks, {seconds} s, domain {domain}");
    summary("lock_many (threads)", many);
    summary("lock_mode_async (tasks)", single);
}
