//! Running a scenario from start to end.

use crate::scenario::Scenario;
use crate::sim::Sim;

pub use crate::error::SimError;
pub use crate::sim::{RunOptions, RunOutput};

/// Runs a scenario to its end. The summary carries no wall time, so it is a
/// pure function of the scenario.
pub fn run(sc: &Scenario, opts: &RunOptions) -> Result<RunOutput, SimError> {
    let sim = Sim::new(sc, opts)?;
    Ok(sim.finish(None))
}
