//! The report's glossary: what every column, parameter and mark of its tables means.
//!
//! [`ENTRIES`] is the data: one line per term, the tables' standard columns first, then
//! every extra field and parameter the suites record. The report lists the entries of the
//! terms it shows ([`Glossary::of`]), in that order. A test renders the committed records'
//! report and fails on any column or parameter it shows without an entry here, so a new
//! field cannot reach the report unexplained.

/// (term, what it means). Standard columns and marks first, then extra fields, then
/// parameters, each group in a reading order.
pub const ENTRIES: &[(&str, &str)] = &[
    // The columns every timed table has.
    ("variant", "the system measured; the section \"Seed names\" maps the seeds' names to ours"),
    (
        "threads",
        "worker threads (for the server and cluster suites: client threads, each with its own \
         connection)",
    ),
    (
        "*",
        "after a thread count: more threads than the machine has cores, a robustness row, never \
         a scaling claim",
    ),
    (
        "ops/s (min–max)",
        "operations per second of all threads together, the median over the rounds, with the \
         slowest and the fastest round in brackets (what one operation is: the suite's line)",
    ),
    (
        "p50 ns",
        "median latency of one operation in nanoseconds, over sampled operations (most suites \
         time one operation in 16, see the suite) pooled over all rounds",
    ),
    ("p99 ns", "99th percentile of the same sampled latencies, pooled over all rounds"),
    (
        "vs base",
        "the row's ops/s divided by that of the suite's baseline variant in the same params \
         and threads group (1.00x: the baseline itself; -: no baseline in the group)",
    ),
    // Extra fields of several suites.
    (
        "line_transfer_ns",
        "the price of moving one cache line between two cores, probed right after each case of \
         2+ threads (two pinned threads bounce one line; ns per one-way transfer), median over \
         the rounds: what every shared line cost while the case ran",
    ),
    ("line_transfer_min_ns", "the smallest probe of line_transfer_ns over the case's rounds"),
    (
        "line_transfer_max_ns",
        "the largest probe over the rounds; far above the smallest when the hypervisor placed \
         the two vCPUs differently between rounds",
    ),
    ("p50_ns_min", "the smallest p50 of a single round (of that round's own samples)"),
    ("p50_ns_max", "the largest p50 of a single round"),
    ("p99_ns_min", "the smallest p99 of a single round"),
    ("p99_ns_max", "the largest p99 of a single round"),
    // Server suites.
    (
        "round_trips_per_lock",
        "network round trips a client waited for per acquisition, polling included, averaged \
         over the measurement (none recorded for the local-memory references)",
    ),
    (
        "round_trips_per_unlock",
        "network round trips a client waited for per release, averaged over the measurement",
    ),
    (
        "server_cpu_ns_per_request",
        "CPU time of the server over the measurement (connecting the clients included) per \
         request (a lock or an unlock): rangelockd's server, handler and combiner threads, or \
         the redis-server process; none for the local-memory references",
    ),
    (
        "server_cpu_ns_per_op",
        "the server's CPU time per lock + unlock cycle, counted as server_cpu_ns_per_request",
    ),
    ("requests_per_sec", "requests (locks and unlocks) per second: the suite's ops/s"),
    ("cycles_per_sec", "lock + unlock cycles per second: half the requests per second"),
    (
        "shm_slot_answer_share",
        "combiner-shm-poll: the share of LOCKs whose answer the client read from its \
         shared-memory slot rather than from the response frame",
    ),
    ("seed_operation", "the seed's operation this row stands in for (Table 5)"),
    ("seed_p50_us", "the seed's p50 of that operation in µs, quoted from Table 5"),
    ("seed_p99_us", "the seed's p99 of that operation in µs, quoted from Table 5"),
    (
        "peer_moved_pct",
        "share of the measured operations that found a value the peer thread wrote since the \
         previous one (the line came from the other core); low when the peer was off the CPU",
    ),
    // Range-lock thesis suites.
    (
        "failed_tries_per_txn",
        "aliasing: candidate stretches of the area found taken (try_lock failed) per \
         transaction",
    ),
    ("transactions", "aliasing: transactions completed in one measurement"),
    (
        "instructions_per_txn",
        "instructions per transaction, counted by cachegrind (the difference of two runs over \
         the difference of their transaction counts)",
    ),
    (
        "l1d_misses_per_txn",
        "read and write misses of cachegrind's simulated L1 data cache (d1_cache) per \
         transaction",
    ),
    (
        "hardware_counters",
        "1 when the machine's hardware performance counters could be read, 0 when not",
    ),
    ("hardware_counters_reason", "why the hardware counters could not be read"),
    ("handler_threads", "server-threads: rangelockd's handler threads (the seed's server threads)"),
    ("combiner_busy", "server-threads: the combiner thread's CPU time over the wall time"),
    ("handlers_busy", "server-threads: the handler threads' CPU time, summed, over the wall time"),
    (
        "handler_busy_max",
        "server-threads: the busiest handler thread's CPU time over the wall time",
    ),
    ("listener_busy", "server-threads: the accepting thread's CPU time over the wall time"),
    ("clients_busy", "server-threads: the client threads' CPU time, summed, over the wall time"),
    ("process_busy", "server-threads: the whole bench process's CPU time over the wall time"),
    // EPVS suites.
    ("final_len", "epvs-array: the array's length at the end of a measurement"),
    ("checkpoints", "epvs-checkpoint: checkpoints taken in one measurement"),
    (
        "verified_cuts",
        "epvs-checkpoint: checkpoints verified afterwards as consistent cuts (a failed one fails \
         the measurement)",
    ),
    (
        "non_owner_ops",
        "epvs-ownership: operations executed on a shard that did not own their bucket (0 for \
         every validating variant)",
    ),
    ("transfers", "epvs-ownership: bucket ownership transfers made during the measurement"),
    ("redirects", "epvs-ownership: operations refused by a non-owner and re-routed (not ops)"),
    // memory.
    ("new_bytes", "memory: heap bytes right after building the lock"),
    ("inline_bytes", "memory: size of the lock value itself, wherever its owner puts it"),
    (
        "idle_bytes",
        "memory: heap bytes after one exclusive and one shared lock + unlock (lazily built \
         tables, epoch registration, pooled nodes)",
    ),
    ("held_bytes", "memory: heap growth while held_ranges ranges are held at once"),
    ("bytes_per_range", "memory: held_bytes / held_ranges"),
    ("released_bytes", "memory: what of that growth remains after releasing the ranges"),
    ("bytes_per_lock", "memory: inline plus heap bytes per lock, for many whole locks"),
    ("total_bytes", "memory: the bytes of all of those locks together"),
    // cluster-failover.
    ("lease_expiry_ms", "ms after the crash until the crashed node's etcd lease expired"),
    ("claim_ms", "ms after the crash until the surviving node owned every orphaned partition"),
    ("grace_end_ms", "ms after the crash until the claimed partitions' grace period ended"),
    ("first_grant_ms", "ms after the crash until a new lock was granted on an orphaned partition"),
    (
        "heap_bytes_per_held_lock",
        "server-names: the server's heap growth per held lock (glibc mallinfo2, 10 000 locks \
         held by one client that keeps no state)",
    ),
    (
        "heap_retained_share",
        "server-names: heap left in use by a second hold and release of 10 000 locks (on names \
         not used before) beyond where the first release ended, as a share of the first \
         hold's growth (0: back where it started)",
    ),
    (
        "node_shares",
        "cluster-3-names: each node's share of the cluster's grants during the run (its STATS \
         grants over the sum), in node order",
    ),
    ("max_node_share", "cluster-3-names: the largest of node_shares"),
    (
        "callbacks_per_cycle",
        "server-cached: CALLBACK notices the server sent, per lock+unlock cycle (its counters \
         over the measurement)",
    ),
    ("give_backs_per_cycle", "server-cached: GIVE_BACKs the server did, per lock+unlock cycle"),
    ("bar_ms", "our bar for first_grant_ms: TTL + grace + 1 s"),
    ("reclaimed", "of the crashed node's held locks, how many were reclaimed"),
    ("lost", "of the crashed node's held locks, how many their clients were told are lost"),
    // Parameters (a table column when they vary, else in the "Params" line).
    ("range_bytes", "bytes of one range, memset under the lock (W1, W2: 1 KiB)"),
    ("ranges", "disjoint ranges in the shuffled queue the threads share out"),
    ("batch", "W2: ranges locked, written and unlocked together as one batch"),
    ("height", "the skip list's maximum height"),
    (
        "workload",
        "height: the thesis's workload, W1 or W2; server-cached: local (each client in its own \
         granule), strided (clients interleave blocks of one granule, each block one \
         client's), pingpong (pairs on one block), or mix-P (the seed's micro mix, P % \
         exclusive)",
    ),
    ("domain_units", "the lock's domain: units ranges are drawn from"),
    ("max_len_units", "the longest range, in units"),
    ("unit_bytes", "contended: bytes of the shared region per unit"),
    ("exclusive_pct", "share of the locks taken exclusively (the rest shared), in %"),
    (
        "background",
        "none, or reader+wide: a background thread also holds one shared 1 Ki-unit range and \
         one exclusive 64 Mi-unit range elsewhere in the domain",
    ),
    ("held_per_thread", "held: ranges each thread keeps held while it runs W1"),
    ("held_ranges", "memory: ranges held at once"),
    ("range_units", "memory: units per held range; server-names: units of one lock"),
    ("held", "server-names: locks the heap probe holds at once"),
    ("stride_units", "memory: units from one held range's start to the next"),
    ("idle_locks", "memory: locks built and never used, kept in one Vec"),
    (
        "one_holder_ops",
        "memory: lock + unlock pairs by one holder at a time on one lock, counted after the \
         last release",
    ),
    ("area_bytes", "aliasing: the shared aliasing area"),
    ("blob_bytes", "aliasing: one BLOB, copied in and out per transaction"),
    ("extent_bytes", "aliasing: the extent candidates are aligned to"),
    ("d1_cache", "aliasing-counts: cachegrind's simulated L1d: bytes, ways, line bytes"),
    ("txns_small", "aliasing-counts: transactions of the smaller cachegrind run (N1)"),
    ("txns_large", "aliasing-counts: transactions of the larger cachegrind run (N2)"),
    ("push_pct", "epvs-array: share of pushes, in % (the rest split evenly: reads, writes)"),
    ("read_pct", "share of reads, in %"),
    ("write_pct", "share of writes (updates), in %"),
    ("initial_len", "epvs-array: elements in the array at the start"),
    ("initial_capacity", "epvs-array: the array's capacity at the start"),
    ("resize_delay_ms", "epvs-array: simulated slow resize, slept where a resize copies"),
    (
        "table_slots",
        "slots of the epoch table (EPVS, LightEpoch) or of BRAVO's visible-readers table",
    ),
    ("pin_refresh_every", "epvs-pinned: operations between two refreshes of the held guard"),
    ("p_change", "probability per operation that the thread makes an exclusive version change"),
    ("work_bytes", "bytes of thread-local data hashed per simulated operation"),
    (
        "work_iters_per_change",
        "epvs-phases: hash iterations of one version change, split over its phases",
    ),
    ("nesting", "epvs-nesting: protections held at once, acquired one after the other"),
    ("instances", "instances of the scheme the threads protect with"),
    (
        "sharing",
        "epvs-sharing: 8-instances (thread t uses instance t % 8) or shared (every thread uses \
         instance 0)",
    ),
    ("op", "epvs-ops: protect-release, or protected-read (one shared read inside)"),
    ("granularity", "epvs-checkpoint: fine (a refresh point every operation) or coarse"),
    ("ops_per_region", "epvs-checkpoint: operations between two refresh points"),
    ("keys", "records of the key-value store"),
    ("checkpoint_interval_ms", "epvs-checkpoint: pause between two checkpoints"),
    ("shards", "epvs-ownership: shards of the store"),
    ("buckets", "epvs-ownership: hash buckets whose ownership is validated"),
    ("transfers_per_sec", "epvs-ownership: bucket transfers per second by a separate thread"),
    ("units", "the server's lock space, in units"),
    ("granule", "server-cached: units of a cached client's desired range around each lock"),
    ("block", "server-cached: units of one lock in local, strided and pingpong"),
    ("max_range_units", "the longest range, in units (lengths uniform from 1)"),
    ("dslr_segment_units", "units per segment of the static-segmentation (DSLR) peers"),
    ("data_files", "server-oltp: data files the space is split into (plus one log file)"),
    ("file_units", "server-oltp: units per file"),
    ("data_units", "server-oltp: units of a reader's or writer's range"),
    ("log_units", "server-oltp: units of the log writer's range"),
    ("readers", "server-oltp: reader clients (shared locks)"),
    ("writers", "server-oltp: writer clients (exclusive locks, 100 per 1000 reads)"),
    ("log_writers", "server-oltp: log-writer clients (one lock per 3200 reads)"),
    ("word_bytes", "server-latency: the word read or updated"),
    ("partitions", "partitions of the cluster's lock space"),
    ("held_locks", "cluster-failover: exclusive locks the crashed node held"),
];

/// What `term` means, if the glossary has it.
pub fn lookup(term: &str) -> Option<&'static str> {
    ENTRIES.iter().find_map(|&(t, meaning)| (t == term).then_some(meaning))
}

/// The glossary of one report: the entries of the terms it shows, in [`ENTRIES`]' order,
/// and the terms it shows without one.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Glossary {
    /// (term, meaning).
    pub entries: Vec<(&'static str, &'static str)>,
    /// Terms shown without an entry (a test keeps this empty for the committed report).
    pub unexplained: Vec<String>,
}

impl Glossary {
    /// The glossary of a report whose tables show `terms` (columns, parameters, marks).
    pub fn of<'a>(terms: impl IntoIterator<Item = &'a str>) -> Glossary {
        let mut shown: Vec<&str> = terms.into_iter().collect();
        shown.sort_unstable();
        shown.dedup();
        let entries = ENTRIES.iter().copied().filter(|(t, _)| shown.contains(t)).collect();
        let unexplained =
            shown.into_iter().filter(|t| lookup(t).is_none()).map(str::to_owned).collect();
        Glossary { entries, unexplained }
    }

    /// The section in Markdown (heading included).
    pub fn markdown(&self) -> String {
        let mut s = String::from("## Glossary\n\n| term | meaning |\n|---|---|\n");
        for (term, meaning) in &self.entries {
            s.push_str(&format!("| `{}` | {} |\n", term, meaning.replace('|', "\\|")));
        }
        s
    }

    /// The section in HTML (heading included).
    pub fn html(&self) -> String {
        use html_escape::encode_text as text;
        let mut s = String::from(
            "<h2 id=\"glossary\">Glossary</h2>\n<table class=\"glossary\">\n\
             <tr><th>term</th><th>meaning</th></tr>\n",
        );
        for (term, meaning) in &self.entries {
            s.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td></tr>\n",
                text(term),
                text(meaning)
            ));
        }
        s.push_str("</table>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_listed_once_in_glossary_order_and_unknown_ones_are_named() {
        let g = Glossary::of(["vs base", "variant", "vs base", "no_such_field"]);
        let terms: Vec<&str> = g.entries.iter().map(|(t, _)| *t).collect();
        assert_eq!(terms, ["variant", "vs base"]);
        assert_eq!(g.unexplained, ["no_such_field"]);
        assert!(g.markdown().contains("| `vs base` | the row's ops/s divided by"));
        assert!(g.html().contains("<td><code>variant</code></td>"));
    }

    #[test]
    fn every_term_has_one_entry() {
        let mut terms: Vec<&str> = ENTRIES.iter().map(|(t, _)| *t).collect();
        terms.sort_unstable();
        let n = terms.len();
        terms.dedup();
        assert_eq!(terms.len(), n, "a term listed twice");
    }

    /// Every extra field and parameter of the committed records (`docs/results/*.json`) has
    /// an entry, whether or not today's tables show it.
    #[test]
    fn every_field_and_param_of_the_committed_records_is_explained() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
        let mut missing = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") || path.ends_with("not-run.json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let records: Vec<crate::harness::Record> = serde_json::from_str(&text).unwrap();
            for r in &records {
                for k in r.extra.keys().chain(r.params.keys()) {
                    if lookup(k).is_none() && k != crate::harness::SKIPPED {
                        missing.push(format!("{}: {k}", path.display()));
                    }
                }
            }
        }
        missing.sort();
        missing.dedup();
        assert!(missing.is_empty(), "no glossary entry: {missing:#?}");
    }
}
