//! Shared by the integration tests.

use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions, RunOutput};

/// Runs scenario text with time series on and checks packet conservation,
/// which every test scenario must satisfy.
pub fn sim(text: &str) -> RunOutput {
    let sc = Scenario::from_toml_str(text, "test.toml", &[]).expect("valid scenario");
    let out = run(
        &sc,
        &RunOptions {
            series: true,
            ..Default::default()
        },
    )
    .expect("runs");
    assert!(
        out.summary.packets.conserved(),
        "conservation: {:?}",
        out.summary.packets
    );
    out
}
