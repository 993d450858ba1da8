//! Which plots each figure of the report gets ([`spec`]): what their y axis shows and which
//! variants they leave off their axes. A plain table keyed by the registry's suite and
//! figure; a figure without an entry gets one plot of its suite's measure with every variant
//! ([`PlotSpec::DEFAULT`]).
//!
//! - The seed's latency tables get latency plots (p50 and p99): Table 5 (`server-latency`)
//!   only that, Table 6 (`server-oltp`) its throughput and its latencies.
//! - The plots of the server thesis's network comparisons (`server-micro` Figs. 5–8,
//!   `server-oltp`, `server-latency`) leave the local-memory references
//!   ([`claims::LOCAL_MEMORY`]) off their axes: they pay no network round trip, so their
//!   rates are orders of magnitude above the networked systems' and would flatten them
//!   against the axis. A note under the plot names them; their numbers stay in the table.
//!   Table 5 leaves `timer` (the clock's own cost) off too.

use super::claims;
use crate::harness::report::svg::{LeaveOut, PlotSpec, Y};

/// The server suites' client-sided locks in local shared memory ([`claims::LOCAL_MEMORY`]).
pub const LOCAL_MEMORY: LeaveOut =
    LeaveOut { what: "local-memory references", variants: claims::LOCAL_MEMORY, why: "no network" };

/// `server-latency`'s `timer`: the clock's own cost, in every row.
const TIMER: LeaveOut =
    LeaveOut { what: "the clock's own cost", variants: &["timer"], why: "no operation" };

/// The plots of figure `figure` (as the registry names it: `Fig. 5`, `Table 6`, `-`) of
/// `suite`.
pub fn spec(suite: &str, figure: &str) -> PlotSpec {
    match (suite, figure) {
        ("server-micro", _) => PlotSpec { plots: &[Y::Measure], leave_out: &[LOCAL_MEMORY] },
        ("server-oltp", _) => {
            PlotSpec { plots: &[Y::Measure, Y::Latency], leave_out: &[LOCAL_MEMORY] }
        }
        ("server-latency", _) => {
            PlotSpec { plots: &[Y::Latency], leave_out: &[LOCAL_MEMORY, TIMER] }
        }
        _ => PlotSpec::DEFAULT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure of the server thesis that compares over the network leaves every
    /// local-memory reference off; the latency tables get latency plots.
    #[test]
    fn network_figures_leave_local_memory_off_and_tables_plot_latency() {
        // `server-threads` runs rangelockd's engines and echo only: nothing to leave off.
        let server: Vec<&claims::Figure> = claims::figures()
            .iter()
            .filter(|f| f.seed == claims::Seed::ServerThesis && f.suite != "server-threads")
            .collect();
        assert!(server.len() >= 6);
        for f in server {
            let spec = spec(f.suite, f.figure);
            for v in claims::LOCAL_MEMORY {
                assert!(spec.leaves_out(v), "{} {}: {v}", f.suite, f.figure);
            }
        }
        assert_eq!(spec("server-latency", "Table 5").plots, &[Y::Latency]);
        assert_eq!(spec("server-oltp", "Table 6").plots, &[Y::Measure, Y::Latency]);
        assert_eq!(spec("w1", "Fig. 5.2"), PlotSpec::DEFAULT);
    }
}
