//! Running a scenario (STUB: API only; the engine is being written).

use crate::report::Summary;
use crate::scenario::Scenario;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Record time series.
    pub series: bool,
    /// Links to capture to pcap, by name.
    pub pcap_links: Vec<String>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The summary.
    pub summary: Summary,
}

/// A scenario could not be built or run.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SimError {
    /// Field at fault.
    pub field: String,
    /// Problem.
    pub message: String,
}

/// Runs a scenario to its end.
pub fn run(_sc: &Scenario, _opts: &RunOptions) -> Result<RunOutput, SimError> {
    Err(SimError {
        field: String::new(),
        message: "engine not yet implemented".into(),
    })
}
