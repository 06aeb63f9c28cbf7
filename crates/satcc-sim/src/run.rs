//! Running a scenario from start to end.

use std::path::PathBuf;

use crate::report::series::Series;
use crate::report::Summary;
use crate::scenario::Scenario;
use crate::sim::Sim;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Record time series.
    pub series: bool,
    /// Links to capture to pcap, by name.
    pub pcap_links: Vec<String>,
    /// Where pcap files go (`LINK.pcap`); default the current directory.
    pub pcap_dir: Option<PathBuf>,
    /// Encode every packet to its wire bytes and decode it back on every
    /// link it enters (links without a router hook), to check that the
    /// wire codecs carry what the protocols use: the results must not
    /// change.
    pub wire_round_trip: bool,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The summary.
    pub summary: Summary,
    /// Time series, if asked for.
    pub series: Option<Series>,
    /// Links whose pcap file could not be written completely, with why.
    pub capture_errors: Vec<String>,
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

/// Runs a scenario to its end. The summary carries no wall time, so it is a
/// pure function of the scenario.
pub fn run(sc: &Scenario, opts: &RunOptions) -> Result<RunOutput, SimError> {
    let sim = Sim::new(sc, opts)?;
    Ok(sim.finish(None))
}
