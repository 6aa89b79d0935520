//! The simulator's own words, besides the judge's (`leasesim_judge::vocab`:
//! processes, clocks, servers' reports, task rows), which the world, the
//! hosts and the workloads also speak:
//!
//! - [`ProcMap`]: per-process state in vectors, for the world's lookups;
//! - [`ProcAddr`], [`proc_of_addr`]: each process's madsim address.

mod addr;
mod proc_map;

pub use addr::{proc_of_addr, ProcAddr, PORT};
pub use proc_map::ProcMap;
