//! The simulator's own tests: packet conservation on every shipped
//! scenario, and flows of different protocols driven side by side through
//! the one generic flow driver.

use std::path::PathBuf;

use satcc_proto::{Duration, Instant};

use super::Sim;
use crate::scenario::Scenario;
use crate::RunOptions;

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "test.toml", &[]).expect("valid scenario")
}

#[test]
fn every_shipped_scenario_conserves_packets() {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    entries.sort();
    for path in entries {
        // Short runs: conservation is checked at several instants, with
        // packets queued, on wires and held back by send jitter.
        let sc = Scenario::load(&path, &["duration=\"12s\"".into()]).expect("loads");
        let mut sim = Sim::new(&sc, &RunOptions::default()).expect("builds");
        for k in 1..=4u64 {
            sim.run_until(Instant::ZERO + Duration::from_secs(3 * k));
            assert_eq!(
                sim.conservation_error(),
                None,
                "{} at {} s",
                path.display(),
                3 * k
            );
        }
        let s = sim.finish(None).summary;
        assert!(s.packets.conserved(), "{}: {:?}", path.display(), s.packets);
        assert_eq!(s.packets.dropped, s.packets.drop_reasons.total());
        assert!(s.packets.sent > 0, "{}", path.display());
        n += 1;
    }
    assert!(n >= 20, "only {n} scenarios found");
}

/// A broken count is caught: the check is not vacuous.
#[test]
fn conservation_check_sees_a_lost_packet() {
    let sc = load(MIXED);
    let mut sim = Sim::new(&sc, &RunOptions::default()).expect("builds");
    sim.run_until(Instant::ZERO + Duration::from_secs(2));
    assert_eq!(sim.conservation_error(), None);
    sim.totals.sent += 1;
    let e = sim.conservation_error().expect("detected");
    assert!(e.contains("sent"), "{e}");
    sim.totals.sent -= 1;
    sim.totals.dropped += 1;
    assert!(sim.conservation_error().is_some());
}

/// One dumbbell, four protocol families, one event loop: every flow gets
/// through, each reports what its family has (a window, a rate, feedback).
const MIXED: &str = r#"
name = "mixed"
duration = "30s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "8Mbps", delay = "100ms", queue = { kind = "droptail", limit = 100 } }
[[flows]]
protocol = "sack"
[[flows]]
protocol = "peach"
rwnd = 64
[[flows]]
protocol = "tfrc"
[[flows]]
protocol = "tfrcp"
[[flows]]
protocol = "cbr"
rate = "500kbps"
"#;

#[test]
fn different_protocols_share_one_driver() {
    let out = crate::run(
        &load(MIXED),
        &RunOptions {
            series: true,
            ..RunOptions::default()
        },
    )
    .expect("runs");
    let s = &out.summary;
    for f in &s.flows {
        assert!(
            f.goodput_bps > 100_000.0,
            "{} got {} b/s",
            f.protocol,
            f.goodput_bps
        );
    }
    let by = |name: &str| {
        s.flows
            .iter()
            .find(|f| f.protocol.name() == name)
            .expect("flow")
    };
    assert!(by("sack").retransmits + by("sack").timeouts < by("sack").packets_sent);
    assert!(by("peach").dummy.is_some() && by("sack").dummy.is_none());
    assert!(by("tfrc").feedback_packets.unwrap_or(0) > 0);
    assert!(by("tfrcp").feedback_packets.is_none());
    // CBR: 500 kb/s of 1028-byte datagrams, unresponsive: what it
    // delivers is what it sent less what the full queue dropped.
    let cbr = by("cbr");
    let nominal = 500_000.0 * 1000.0 / 1028.0;
    let sent = cbr.packets_sent as f64;
    let kept = (sent - cbr.drops as f64) / sent;
    assert!(
        (cbr.goodput_bps - nominal * kept).abs() < 0.01 * nominal,
        "{} vs {} x {kept}",
        cbr.goodput_bps,
        nominal
    );
    // The series see each family's own state.
    let series = out.series.expect("series");
    let col = |name: &str| {
        series
            .flows
            .iter()
            .find(|f| f.protocol == name)
            .expect("flow series")
    };
    assert!(col("sack").cwnd.iter().any(|c| c.is_finite()));
    assert!(col("tfrc").cwnd.iter().all(|c| c.is_nan()));
    assert!(col("tfrc").rate_bps.iter().any(|x| *x > 0.0));
    assert!(col("tfrcp").rate_bps.iter().any(|x| *x > 0.0));
    assert!(col("cbr").rtt_s.iter().all(|x| x.is_nan()));
}

/// Same scenario and seed, same summary: the generic driver keeps the run
/// deterministic.
#[test]
fn mixed_run_is_deterministic() {
    let a = crate::run(&load(MIXED), &RunOptions::default()).expect("runs");
    let b = crate::run(&load(MIXED), &RunOptions::default()).expect("runs");
    assert_eq!(a.summary, b.summary);
}
