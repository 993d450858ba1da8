//! The registered suites: one file each, one line each in [`all`].

pub mod aliasing;
pub mod aliasing_counts;
pub mod cluster;
mod common;
pub mod contended;
pub mod epvs_array;
pub mod epvs_checkpoint;
mod epvs_common;
pub mod epvs_freq;
pub mod epvs_nesting;
pub mod epvs_ops;
pub mod epvs_ownership;
pub mod epvs_phases;
mod epvs_protect;
pub mod epvs_sharing;
pub mod epvs_table;
mod epvs_version;
pub mod height;
pub mod held;
pub mod hw_counters;
pub mod memory;
pub mod mixed;
pub mod server_cached;
mod server_cpu;
pub mod server_latency;
pub mod server_micro;
pub mod server_names;
pub mod server_oltp;
pub mod server_threads;
pub mod w1;
pub mod w2;

use crate::harness::Suite;

/// Every registered suite, in the order `rangelock bench quick` runs them.
pub fn all() -> Vec<Box<dyn Suite>> {
    vec![
        Box::new(w1::W1::<crate::variants::Registered>::default()),
        Box::new(w2::W2::<crate::variants::Registered>::default()),
        Box::new(contended::Contended::<crate::variants::Registered>::default()),
        Box::new(height::Height::<crate::variants::Registered>::default()),
        Box::new(held::Held::<crate::variants::Registered>::default()),
        Box::new(mixed::Mixed::<crate::variants::Registered>::default()),
        Box::new(memory::Memory::<crate::variants::Registered>::default()),
        Box::new(aliasing::Aliasing),
        Box::new(aliasing_counts::AliasingCounts),
        Box::new(epvs_array::EpvsArray),
        Box::new(epvs_ops::EpvsOps),
        Box::new(epvs_freq::EpvsFreq),
        Box::new(epvs_table::EpvsTable),
        Box::new(epvs_ownership::EpvsOwnership),
        Box::new(epvs_checkpoint::EpvsCheckpoint),
        Box::new(epvs_phases::EpvsPhases),
        Box::new(epvs_nesting::EpvsNesting),
        Box::new(epvs_sharing::EpvsSharing),
        Box::new(server_micro::ServerMicro::default()),
        Box::new(server_oltp::ServerOltp::default()),
        Box::new(server_latency::ServerLatency),
        Box::new(server_threads::ServerThreads),
        Box::new(server_names::ServerNames),
        Box::new(server_cached::ServerCached),
        Box::new(cluster::ClusterSuite),
        Box::new(cluster::ClusterFailover),
    ]
}

/// The suite named `name`, if registered.
pub fn find(name: &str) -> Option<Box<dyn Suite>> {
    all().into_iter().find(|s| s.name() == name)
}
