//! `server-threads`: does the server saturate, and which of its threads?
//!
//! *Server-sided range locking is better than client-sided locking* (§5.1) runs its
//! combiners with 18 server threads and its interval tree with one: "Out of 1,2,4,8 and 18
//! server processes, the best throughput was achieved consistently when the server had only
//! one server thread". It never shows whether the server was the bottleneck, and its
//! conclusion leaves it to future work: "future experiments should modify this number to
//! saturate the server with requests". This suite asks that question of `rangelockd`.
//!
//! **Workload**: [`server_micro`](super::server_micro)'s, at 20 % exclusive and at 0 %
//! (quick: 20 % only), with the most clients `server-micro` runs (64; quick: 16; `--threads`
//! overrides), each a thread of this process with its own connection.
//!
//! **Variants** (each at 1, 2 and 4 handler threads, param `handler_threads`; quick: 1 and
//! 2):
//! - `combiner`: handlers parse requests and queue them; one combiner thread owns the table;
//! - `tree-mutex`: every handler locks the one table itself, under a mutex (the seed's
//!   interval tree, which "all server threads can access" under a lock);
//! - `echo`: pings over the same transport, answered by a handler without the table (the
//!   ceiling: it decides nothing). Its server runs the combiner engine, whose thread idles.
//!
//! A row with more handler threads than cores is marked oversubscribed (4 here: 2 cores).
//! All rows share the 2 cores with their 64 clients, so none is a scaling claim.
//!
//! **How to read it.** Besides ops/s (requests: two per lock + unlock cycle) each record
//! has, over the timed window (the clients connect first, untimed):
//! - `combiner_busy`: the combiner thread's CPU time / wall time (1.0: one core all the time;
//!   absent for `tree-mutex`);
//! - `handlers_busy`: the handler threads' CPU time, summed, / wall time (at most
//!   `handler_threads`, and at most the cores), and `handler_busy_max`, the busiest one's;
//! - `listener_busy`: the `rangelock-server` thread (accepts connections; ~0 here);
//! - `clients_busy`: the rest of the process (the client threads) / wall time;
//! - `process_busy`: the whole process / wall time: near the core count (2), the machine is
//!   full and no server thread count can raise the throughput;
//! - `server_cpu_ns_per_request`: the server threads' CPU per request (unlike
//!   `server-micro`'s, without connecting the clients).
//!
//! A thread is the bottleneck when its busy share is near 1.0 while the process still has
//! cores to spare: a `combiner_busy` near 1.0 says one combiner thread cannot keep up, the
//! seed's question; `handlers_busy` near `handler_threads` says the handlers are. When
//! `process_busy` is near the core count instead, the clients and the server compete for
//! the same cores, and the throughput is this machine's, not the design's: more handler
//! threads then only move CPU from the clients to the server.

use std::io;
use std::sync::{Mutex, PoisonError};

use rangelock_server::{EngineKind, Server, ServerConfig};
use serde_json::Value;

use super::common;
use super::server_cpu::{process_cpu_ns, ThreadsCpu};
use super::server_micro::{
    add_rates, client_counts, micro_client, Backend, Conn, Variant, MAX_RANGE_UNITS, UNITS,
};
use crate::harness::{run_threads_with, Case, Ceiling, Options, Sample, Span, Suite, XAxis};
use crate::peers::dslr_shm::SEGMENT_UNITS;
use crate::peers::echo;

/// Clients of a full run: `server-micro`'s most.
pub const CLIENTS: usize = 64;
/// Clients of a quick run.
pub const QUICK_CLIENTS: usize = 16;
/// Handler threads of a full run.
pub const HANDLER_THREADS: [usize; 3] = [1, 2, 4];
/// Handler threads of a quick run.
pub const QUICK_HANDLER_THREADS: [usize; 2] = [1, 2];
/// Exclusive shares of a full run (percent).
pub const EXCLUSIVE_PCTS: [u64; 2] = [20, 0];
/// Exclusive shares of a quick run.
pub const QUICK_EXCLUSIVE_PCTS: [u64; 1] = [20];

/// The record fields this suite adds, in table order.
pub const FIELDS: [&str; 7] = [
    "combiner_busy",
    "handlers_busy",
    "handler_busy_max",
    "listener_busy",
    "clients_busy",
    "process_busy",
    "server_cpu_ns_per_request",
];

const CEILINGS: [Ceiling; 1] =
    [Ceiling { name: echo::NAME, leaves_out: "the lock: pings over the same transport" }];

/// The systems, in the order they run.
const VARIANTS: [Variant; 3] =
    [Variant::Engine(EngineKind::Combiner), Variant::Engine(EngineKind::TreeMutex), Variant::Echo];

/// The `server-threads` suite.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerThreads;

impl Suite for ServerThreads {
    fn name(&self) -> &'static str {
        "server-threads"
    }

    fn quantity(&self) -> String {
        "lock+unlock requests per second, by handler threads".to_owned()
    }

    fn about(&self) -> &'static str {
        "server-micro's workload at its most clients against combiner, tree-mutex and echo \
         with 1, 2 and 4 handler threads: ops/s and how busy each server thread is \
         (combiner_busy, handlers_busy: CPU time / wall time), to see which one saturates"
    }

    fn baseline(&self) -> &'static str {
        "combiner"
    }

    fn x_axis(&self) -> XAxis {
        XAxis::Param("handler_threads")
    }

    fn table_extras(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("combiner_busy", "comb busy"),
            ("handlers_busy", "hdl busy"),
            ("handler_busy_max", "hdl max"),
            ("clients_busy", "cli busy"),
            ("process_busy", "proc busy"),
            ("server_cpu_ns_per_request", "srv cpu ns"),
        ]
    }

    fn ceilings(&self) -> &'static [Ceiling] {
        &CEILINGS
    }

    fn cases(&self, opts: &Options) -> Vec<Case> {
        let (pcts, handlers): (&[u64], &[usize]) = if opts.quick {
            (&QUICK_EXCLUSIVE_PCTS, &QUICK_HANDLER_THREADS)
        } else {
            (&EXCLUSIVE_PCTS, &HANDLER_THREADS)
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let variants: Vec<Variant> =
            VARIANTS.into_iter().filter(|v| common::selected(v.name())).collect();
        let mut cases = Vec::new();
        for &pct in pcts {
            for (clients, _) in client_counts(opts, &[CLIENTS], &[QUICK_CLIENTS]) {
                for &threads in handlers {
                    for &variant in &variants {
                        cases.push(Case {
                            variant: variant.name().to_owned(),
                            threads: clients,
                            params: common::params([
                                ("units", UNITS.into()),
                                ("exclusive_pct", pct.into()),
                                ("max_range_units", MAX_RANGE_UNITS.into()),
                                ("dslr_segment_units", SEGMENT_UNITS.into()),
                                ("handler_threads", threads.into()),
                            ]),
                            oversubscribed: threads > cores,
                            run: Box::new(move |span| run(variant, threads, clients, pct, span)),
                        });
                    }
                }
            }
        }
        cases
    }
}

/// Starts `rangelockd` for `variant` with `handlers` handler threads.
fn start(variant: Variant, handlers: usize) -> io::Result<Backend> {
    let engine = match variant {
        Variant::Engine(engine) => engine,
        // Pings never reach the engine; the combiner is `echo::start_server`'s.
        Variant::Echo => EngineKind::Combiner,
        other => return Err(io::Error::other(format!("{} is not a variant here", other.name()))),
    };
    let config = ServerConfig { engine, handler_threads: handlers, ..ServerConfig::ephemeral() };
    Ok(Backend::Rangelockd(Server::start(config)?))
}

/// One measurement: start the server, connect every client (untimed), then run the
/// micro-benchmark's clients while snapshots of the server threads' and the process's CPU
/// time bracket the timed window.
fn run(variant: Variant, handlers: usize, clients: usize, pct: u64, span: Span) -> Sample {
    let backend = match start(variant, handlers) {
        Ok(b) => b,
        Err(e) => return Sample::skipped(format!("cannot start {}: {e}", variant.name())),
    };
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        match backend.connect(variant, false) {
            Ok(conn) => conns.push(Mutex::new(Some(conn))),
            Err(e) => {
                backend.stop();
                return Sample::skipped(format!("{}: connect: {e}", variant.name()));
            }
        }
    }
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let (threads0, process0) = (ThreadsCpu::now(), process_cpu_ns());
    let mut sample = run_threads_with(
        clients,
        span,
        |i| conns[i].lock().unwrap_or_else(PoisonError::into_inner).take(),
        |i, conn: Option<Conn>, ctl| {
            let mut conn = conn.expect("one connection per client");
            micro_client(i, &mut conn, ctl, pct).unwrap_or_else(|e| {
                failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
                Default::default()
            })
        },
    );
    let (threads1, process1) = (ThreadsCpu::now(), process_cpu_ns());
    drop(conns);
    backend.stop();
    if let Some(e) = failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Sample::skipped(format!("{} failed: {e}", variant.name()));
    }
    add_rates(&mut sample);
    let wall = sample.elapsed.as_nanos() as f64;
    let (Some(t0), Some(t1)) = (threads0, threads1) else { return sample };
    if wall <= 0.0 {
        return sample;
    }
    let cpu = t1.since(&t0);
    let busy = |ns: u64| Value::from(ns as f64 / wall);
    if variant != Variant::Engine(EngineKind::TreeMutex) {
        sample.extra.insert(FIELDS[0].into(), busy(cpu.combiner));
    }
    sample.extra.insert(FIELDS[1].into(), busy(cpu.handlers));
    sample.extra.insert(FIELDS[2].into(), busy(cpu.busiest_handler));
    sample.extra.insert(FIELDS[3].into(), busy(cpu.listener));
    if let (Some(p0), Some(p1)) = (process0, process1) {
        let process = p1.saturating_sub(p0);
        sample.extra.insert(FIELDS[4].into(), busy(process.saturating_sub(cpu.total())));
        sample.extra.insert(FIELDS[5].into(), busy(process));
    }
    if sample.ops > 0 {
        let per = cpu.total() as f64 / sample.ops as f64;
        sample.extra.insert(FIELDS[6].into(), Value::from(per));
    }
    sample
}
