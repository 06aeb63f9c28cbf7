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

/// One flow alone on the GEO link of docs/validation.md ("Simulated against
/// real traffic") and `scripts/linux-validation.py`'s `geo`: 10 Mb/s, 250 ms
/// one way, 625 KB DropTail, 30 s, from node `a` to node `b`. `link` is
/// written into the link's table (e.g. an error model: `, error = {...}`)
/// and `flow` into the flow's (its protocol and keys).
#[allow(dead_code)] // not every test binary that includes `common` uses it
pub fn geo_one_flow(seed: u64, link: &str, flow: &str) -> String {
    format!(
        r#"
duration = "30s"
seed = {seed}
[topology]
kind = "graph"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
links = [{{ from = "a", to = "b", rate = "10Mbps", delay = "250ms", queue = {{ kind = "droptail", limit_bytes = "625KB" }}{link} }}]
[[flows]]
src = "a"
dst = "b"
{flow}
"#
    )
}
