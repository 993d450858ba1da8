//! Benchmark harness, range-lock workloads and external peers for `rangelock`.
//!
//! - [`alloc`]: the counting global allocator the `memory` suite reads (installed by the
//!   `rangelock` binary).
//! - [`harness`]: the contract every suite is written against ([`harness::Suite`],
//!   [`harness::Case`], [`harness::run_threads`]) and the runner that interleaves cases,
//!   takes medians and writes the report (table on stdout, JSON and SVG under
//!   `target/rangelock-report/` by default).
//! - [`suites`]: the registered suites (`w1`, `w2`, `contended`, `height`, `held`, `mixed`,
//!   `memory`, `epvs-array`, `epvs-ops`, `epvs-freq`, `epvs-table`, ...).
//! - [`variants`]: the one registry of lock variants and peers the range-lock suites run.
//! - [`peers`]: locks from outside this workspace measured side by side (fcntl OFD locks,
//!   BRAVO).
//! - [`seeds`]: the claim registry of the three seeds and the one report (`report.md`,
//!   `report.html`) that sets our numbers beside them.
//! - [`arrays`]: the resizable-array variants of the `epvs-array` suite.
//! - [`faster`]: the FASTER case studies of the EPVS paper (ownership validation,
//!   checkpoints) driven by `epvs-ownership` and `epvs-checkpoint`.
//! - [`workload`]: the pieces the range-lock suites share (shared region, targets, RNG).

pub mod alloc;
pub mod arrays;
pub mod faster;
pub mod harness;
pub mod peers;
pub mod seeds;
pub mod suites;
pub mod tls_pki;
pub mod variants;
pub mod workload;
