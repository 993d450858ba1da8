//! Benchmark harness and suites.
