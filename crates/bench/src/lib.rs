//! Benchmark harness and suites.

pub mod arrays;
pub mod peers;
