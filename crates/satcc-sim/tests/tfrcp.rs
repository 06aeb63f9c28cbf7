//! TFRCP end to end on paper 004's C.1 scenario.

use std::path::Path;

use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions};

fn c1(sets: &[&str]) -> satcc_sim::report::Summary {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tfrcp-c1.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load(&p, &sets).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&sc, &RunOptions::default()).expect("runs");
    assert!(out.summary.packets.conserved(), "{:?}", out.summary.packets);
    out.summary
}

/// Paper 004 Fig. 2(a)/(c): S1 and S3 keep the friendliness ratio near 1
/// with 10-30 flows on a T1 (docs/validation.md has the whole grid).
#[test]
fn s1_and_s3_are_tcp_friendly_on_a_t1() {
    for n in ["5", "15"] {
        for strategy in [
            vec!["flows.1.m=3s"],
            vec![
                "flows.1.strategy=s3",
                "flows.1.m_base=1.5s",
                "flows.1.m_spread=3s",
            ],
        ] {
            let mut sets = Vec::new();
            sets.push(format!("flows.0.count={n}"));
            sets.push(format!("flows.1.count={n}"));
            sets.extend(strategy.iter().map(|s| s.to_string()));
            let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
            let s = c1(&refs);
            let fr = s.friendliness.expect("TCP and TFRCP side by side");
            assert!(
                (0.7..=1.4).contains(&fr.f),
                "{n}+{n} {strategy:?}: F = {}",
                fr.f
            );
            let fc = fr.fc.expect("no TFRCP flow starved");
            assert!(fc < 2.0, "{n}+{n} {strategy:?}: FC = {fc}");
            assert!(s.links[0].utilization > 0.9);
        }
    }
}

#[test]
fn burst_pacing_loses_more_than_even_pacing() {
    let even = c1(&["duration=200s", "flows.1.pacing=\"even\""]);
    let burst = c1(&["duration=200s", "flows.1.pacing=\"burst\""]);
    let tfrcp = |s: &satcc_sim::report::Summary| {
        s.classes
            .iter()
            .find(|c| c.protocol == "tfrcp")
            .unwrap()
            .goodput_bps
    };
    // A round's worth of packets sent back to back each RTT overflows the
    // 50-packet drop-tail queue more often than the same rate spread out:
    // burst pacing loses more and gets less (as the paper's §IV notes
    // about its implementation's bursts).
    assert!(tfrcp(&burst) > 0.0);
    assert!(
        tfrcp(&burst) < 0.8 * tfrcp(&even),
        "{} vs {}",
        tfrcp(&burst),
        tfrcp(&even)
    );
    assert_eq!(
        tfrcp(&even),
        tfrcp(&c1(&["duration=200s", "flows.1.pacing=\"even\""]))
    );
}
