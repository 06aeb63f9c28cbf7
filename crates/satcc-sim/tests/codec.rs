//! The wire codecs against the typed messages on the GEO link of
//! docs/validation.md "Simulated against real traffic" (10 Mb/s, 250 ms,
//! 625 KB DropTail, PER 1e-3, 30 s): TFRCP's compact header carries every
//! field its endpoints use, so encoding and decoding every packet on every
//! hop leaves the run byte-identical; the DCCP/CCID3 encoding of TFRC
//! carries less (a window counter instead of the RTT, coarser times), and
//! the printed goodputs are the figures the doc quotes:
//!
//!   cargo test --release -p satcc-sim --test codec -- --nocapture | grep CODEC

use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions};

const GEO: &str = r#"
name = "geo-codec"
duration = "30s"
[topology]
kind = "graph"
nodes = [{ name = "a" }, { name = "b" }]
[[topology.links]]
from = "a"
to = "b"
name = "geo"
rate = "10Mbps"
delay = "250ms"
queue = { kind = "droptail", limit_bytes = "625KB" }
error = { kind = "uniform", per = 0.001 }
[[flows]]
protocol = "PROTO"
src = "a"
dst = "b"
mss = 1000
"#;

fn summaries(proto: &str, seed: u64) -> (String, String, f64, f64) {
    let text = GEO.replace("PROTO", proto);
    let sc = Scenario::from_toml_str(&text, "geo.toml", &[format!("seed={seed}")]).unwrap();
    let mut typed = run(&sc, &RunOptions::default()).unwrap().summary;
    let mut wire = run(
        &sc,
        &RunOptions {
            wire_round_trip: true,
            ..RunOptions::default()
        },
    )
    .unwrap()
    .summary;
    let hook_drops: u64 = wire.links.iter().map(|l| l.drops_hook).sum();
    assert_eq!(
        hook_drops, 0,
        "{proto}: a packet failed to encode or decode"
    );
    // The round trip is a hook on every link, so no link schedules its
    // departures at enqueue (`Link::eager`): other event counts (and
    // TFRC over DCCP's wire format changes the run itself).
    (typed.events, wire.events) = (0, 0);
    (
        serde_json::to_string(&typed).unwrap(),
        serde_json::to_string(&wire).unwrap(),
        typed.flows[0].goodput_bps,
        wire.flows[0].goodput_bps,
    )
}

#[test]
fn tfrcp_is_transparent_and_tfrc_over_dccp_is_not() {
    for seed in 1..=3 {
        let (t, w, _, _) = summaries("tfrcp", seed);
        assert_eq!(t, w, "TFRCP seed {seed}: the codec changed the run");
        let (_, _, gt, gw) = summaries("tfrc", seed);
        println!(
            "CODEC tfrc seed {seed}: typed {:.3} Mb/s, through DCCP {:.3} Mb/s ({:+.1} %)",
            gt / 1e6,
            gw / 1e6,
            (gw / gt - 1.0) * 100.0
        );
        assert!(gw > 0.0 && gt > 0.0);
    }
}
