//! TFRCP end to end on paper 004's C.1 scenario.

use std::path::Path;

use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions};

fn c1(sets: &[&str]) -> satcc_sim::report::Summary {
    load_run("tfrcp-c1", sets)
}

fn load_run(name: &str, sets: &[&str]) -> satcc_sim::report::Summary {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/{name}.toml"));
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
            .find(|c| c.protocol.name() == "tfrcp")
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

/// Mean RTT of the TFRCP flows.
fn tfrcp_rtt(s: &satcc_sim::report::Summary) -> f64 {
    let r: Vec<f64> = s
        .flows
        .iter()
        .filter(|f| f.protocol.name() == "tfrcp")
        .filter_map(|f| f.mean_rtt_s)
        .collect();
    assert!(!r.is_empty());
    r.iter().sum::<f64>() / r.len() as f64
}

/// Why paper 004's S2 finding (§III-C.1, Fig. 2b) does not reproduce here
/// (docs/validation.md): the paper credits it to the RTT growing with the
/// load, so that M = K*RTT grows. On the C.1 drop-tail bottleneck the
/// queue is near full from 20 flows on, so the RTT is set by the buffer:
/// it barely grows from 20 to 50 flows, with the 50-packet buffer and
/// with a 200-packet one alike. If this ever fails, rerun the buffer
/// sweep in scenarios/tfrcp-c1.toml: the finding may then be testable.
#[test]
fn s2_rtt_is_set_by_the_buffer_not_the_load() {
    for buf in ["50", "200"] {
        let run = |n: &str| {
            c1(&[
                "duration=300s",
                "flows.1.strategy=s2",
                "flows.1.k=10",
                &format!("topology.bottleneck.queue.limit={buf}"),
                &format!("flows.0.count={n}"),
                &format!("flows.1.count={n}"),
            ])
        };
        let (light, heavy) = (run("10"), run("25"));
        let limit: f64 = buf.parse().unwrap();
        for s in [&light, &heavy] {
            assert!(
                s.links[0].mean_queue_pkts > 0.6 * limit,
                "buffer {buf}: mean queue {}",
                s.links[0].mean_queue_pkts
            );
        }
        let (r20, r50) = (tfrcp_rtt(&light), tfrcp_rtt(&heavy));
        // The queueing delay alone is up to limit x 5.3 ms; the RTT grows
        // by well under a quarter with 2.5 times the flows.
        assert!(
            r50 < 1.25 * r20 && r50 > 0.9 * r20,
            "buffer {buf}: RTT {r20:.3} s at 20 flows, {r50:.3} s at 50"
        );
    }
}

/// Paper 004 §III-C.3's background as scenarios/tfrcp-c3.toml builds it:
/// every file on a fresh connection, random idle times between files
/// (`gap_mean`), so that fewer transfers are active on average than there
/// are slots, and the number fluctuates. Deterministic per seed.
#[test]
fn c3_background_is_per_transfer_with_random_gaps() {
    let active = |s: &satcc_sim::report::Summary| {
        s.flows
            .iter()
            .filter(|f| f.name == "background")
            .map(|f| f.files_completed as f64 * f.mean_file_time_s.unwrap_or(0.0))
            .sum::<f64>()
            / s.duration_s
    };
    let a = load_run("tfrcp-c3", &["duration=300s"]);
    let files: u64 = a
        .flows
        .iter()
        .filter(|f| f.name == "background")
        .map(|f| f.files_completed)
        .sum();
    // 10 slots, each file (40 KB on average) plus a 4 s mean gap: several
    // hundred files in 300 s, each one a new connection.
    assert!(files > 200, "{files} files");
    // Little's law: with the gaps, well under the 10 slots are active.
    let n = active(&a);
    assert!((1.0..8.0).contains(&n), "mean active {n}");
    // Without the gaps every slot is always busy: close to 10 active.
    let busy = load_run(
        "tfrcp-c3",
        &[
            "duration=300s",
            r#"flows.2.app={ kind = "files", mode = "sequential", size = "1KB", size_max = "80KB", new_connection = true }"#,
        ],
    );
    assert!(
        active(&busy) > 8.0,
        "no gaps: mean active {}",
        active(&busy)
    );
    // The gaps come from each flow's own stream: same seed, same run;
    // another seed, another run.
    let mut again = load_run("tfrcp-c3", &["duration=300s"]);
    again.wall_s = a.wall_s;
    assert_eq!(a, again);
    let other = load_run("tfrcp-c3", &["duration=300s", "seed=2"]);
    assert_ne!(a.flows, other.flows);
}

/// Why F does not fall with M in paper 004 §III-C.4 here
/// (docs/validation.md): a short round is more often loss-free, so TFRCP
/// doubles its rate more often (§II-B), overflows the drop-tail queue and
/// loses more than TCP does, which the PFTK rate then punishes. With M =
/// 2 s the TFRCP flow loses a clearly larger fraction of its packets than
/// with M = 8 s, and than the TCP flow beside it.
#[test]
fn c4_short_rounds_double_into_more_loss() {
    let loss = |s: &satcc_sim::report::Summary, proto: &str| {
        let f = s.flows.iter().find(|f| f.protocol.name() == proto).unwrap();
        f.drops as f64 / f.packets_sent as f64
    };
    let short = load_run(
        "tfrcp-c4",
        &["duration=1000s", "flows.2.count=20", "flows.1.m=2s"],
    );
    let long = load_run(
        "tfrcp-c4",
        &["duration=1000s", "flows.2.count=20", "flows.1.m=8s"],
    );
    let (ps, pl) = (loss(&short, "tfrcp"), loss(&long, "tfrcp"));
    assert!(
        ps > 1.5 * pl,
        "TFRCP loss {ps:.4} (M = 2 s) vs {pl:.4} (8 s)"
    );
    let tcp = loss(&short, "reno");
    assert!(ps > 2.0 * tcp, "M = 2 s: TFRCP loss {ps:.4}, TCP {tcp:.4}");
}

/// Paper 004 §III-A's random processing time (`send_jitter`, one
/// bottleneck packet time, 5.5 ms, on every flow) tried on C.3 with the
/// 160 KB files of Fig. 5(b) (docs/validation.md): with 6 background slots
/// the median F over 8 seeds falls from M = 2 s to 8 s (0.86 to 0.74),
/// while the monitored pair alone does not fall (0.68 to 0.72), so the
/// fall comes from the background as §III-C.3 says. Without jitter both
/// fell alike (0.51 to 0.45 and 0.56 to 0.50): this is the part of the
/// finding that jitter brings back.
#[test]
fn c3_jitter_f_falls_with_m_because_of_the_background() {
    let median_f = |extra: &[&str], m: &str| {
        let f: Vec<f64> = (1..=8)
            .map(|seed| {
                let mut sets = vec![
                    "flows.0.send_jitter=5.5ms".to_string(),
                    "flows.1.send_jitter=5.5ms".into(),
                    "flows.2.send_jitter=5.5ms".into(),
                    "flows.2.app.size_max=160KB".into(),
                    format!("flows.1.m={m}"),
                    format!("seed={seed}"),
                ];
                sets.extend(extra.iter().map(|s| s.to_string()));
                let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
                load_run("tfrcp-c3", &sets).friendliness.unwrap().f
            })
            .collect();
        satcc_sim::report::metrics::median_siqr(&f).unwrap().0
    };
    let bg = ["flows.2.count=6"];
    let (b2, b8) = (median_f(&bg, "2s"), median_f(&bg, "8s"));
    assert!(
        b2 - b8 > 0.07,
        "6 slots: F {b2:.3} (M = 2 s), {b8:.3} (8 s)"
    );
    // The pair alone: the background starts after the run ends.
    let alone = [
        "flows.2.start=5000s",
        "flows.0.start_spread=1s",
        "flows.1.start_spread=1s",
    ];
    let (a2, a8) = (median_f(&alone, "2s"), median_f(&alone, "8s"));
    assert!(a8 > a2 - 0.02, "alone: F {a2:.3} (M = 2 s), {a8:.3} (8 s)");
}

/// Paper 004 Fig. 2(b): with S2 (M = K*RTT, K = 10) TFRCP grows more
/// aggressive than TCP as the load rises, from about fair at 10 flows to
/// clearly above at 30-40 (docs/validation.md: 1.05 -> 1.28-1.32 over 3
/// seeds; ns-2 with the independent OTcl TFRCP: 1.13 -> 1.32). Needs the
/// TCP flows timed as ns-2's Reno (`rtt_timing = "karn"`, the scenario's):
/// with timestamp sampling TCP times out more and F fell instead.
#[test]
fn s2_grows_more_aggressive_with_load() {
    let f = |n: &str, timing: &str| {
        let sets = [
            format!("flows.0.count={n}"),
            format!("flows.1.count={n}"),
            "flows.1.strategy=s2".to_string(),
            "flows.1.k=10".to_string(),
            format!("flows.0.rtt_timing={timing}"),
        ];
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        c1(&refs).friendliness.expect("F").f
    };
    let (light, heavy) = (f("5", "karn"), f("20", "karn"));
    assert!(light < 1.15, "5+5: F = {light}");
    assert!(heavy > 1.2 && heavy > light + 0.15, "{light} -> {heavy}");
    // The TCP timing is what decides it.
    let heavy_ts = f("20", "timestamps");
    assert!(
        heavy_ts < heavy - 0.15,
        "timestamps {heavy_ts} vs karn {heavy}"
    );
}
