//! leasesim-reports: turns leasesim results into pages a person can read in
//! a minute — a run's timeline (self-contained HTML with inline SVG, CSS and
//! JS; nothing fetched from the network) and a sweep's summary (Markdown and
//! HTML).
//!
//! Everything here is a pure function from plain data ([`model::RunView`],
//! [`results::RunResult`]) to a string, so the crate builds and is tested
//! without the simulator. [`observed`] builds a run's view from the judge's
//! observations, for the simulator's runs and for real ones alike; the
//! `leasesim` and `leasesim-real` binaries write the files.

pub mod escape;
pub mod model;
pub mod observed;
pub mod results;
pub mod run_page;
pub mod study_plots;
pub mod sweep;
pub mod sweep_html;
pub mod sweep_md;
pub mod timeline;
pub mod units;

pub use model::RunView;
pub use results::{parse_results, ResultsError, RunResult};
pub use run_page::run_page;
pub use sweep::{Expect, SweepSummary};
pub use timeline::timeline_svg;

/// The file name a run's report gets: `holder-pause-unfenced-seed3.html`.
pub fn run_report_name(scenario: &str, seed: u64) -> String {
    let safe: String = scenario.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("{safe}-seed{seed}.html")
}
