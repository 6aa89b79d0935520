//! How big a scenario is, in the terms a shrink reports: faults, the length
//! of the fault and settle phases, clients, servers and workloads. A chaos
//! scenario is measured in its explicit form for one seed, so "before" counts
//! the faults chaos drew.

use std::fmt;

use leasesim_scenario::Scenario;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub faults: usize,
    pub duration_ns: u64,
    pub settle_ns: u64,
    pub clients: u64,
    /// Voters and spares.
    pub servers: u64,
    pub workloads: usize,
}

impl Size {
    pub fn of(scenario: &Scenario) -> Size {
        Size {
            faults: scenario.faults.len(),
            duration_ns: scenario.duration_ns,
            settle_ns: scenario.settle_ns,
            clients: scenario.client_count(),
            servers: scenario.cluster.servers + scenario.cluster.spares,
            workloads: scenario.workloads.len(),
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} fault(s), {} + {} settle, {} client(s) in {} workload(s), {} server(s)",
            self.faults,
            leasesim_core::fmt_secs(self.duration_ns),
            leasesim_core::fmt_secs(self.settle_ns),
            self.clients,
            self.workloads,
            self.servers
        )
    }
}
