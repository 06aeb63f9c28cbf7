//! TFRC and CCID3 end to end: TCP-friendliness, and paper 001's dynamic
//! feedback against the standard policy on the shipped scenarios.

use std::path::Path;

use satcc_sim::report::Summary;
use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions};

fn scenario(file: &str, sets: &[String]) -> Scenario {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    Scenario::load(&p, sets).unwrap_or_else(|e| panic!("{e}"))
}

fn summary(file: &str, sets: &[String]) -> Summary {
    let out = run(&scenario(file, sets), &RunOptions::default()).expect("runs");
    assert!(out.summary.packets.conserved(), "{:?}", out.summary.packets);
    out.summary
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Normalized TCP throughput stays in [0.7, 1.3] where TCP's window is
/// more than a few packets (docs/validation.md has the whole sweep, and
/// shows TCP taking more than its share only below ~1.5 packets per RTT).
#[test]
fn tfrc_is_tcp_friendly_where_windows_are_a_few_packets() {
    for (rate, n) in [("4Mbps", 4), ("16Mbps", 16), ("64Mbps", 16)] {
        let s = summary(
            "tfrc-friendliness.toml",
            &[
                format!("topology.bottleneck.rate={rate}"),
                format!("flows.0.count={n}"),
                format!("flows.1.count={n}"),
                "duration=80s".into(),
            ],
        );
        let nt = s
            .normalized_tcp_throughput
            .expect("TCP and TFRC side by side");
        assert!(
            (0.7..=1.3).contains(&nt),
            "{rate} {n}+{n}: normalized TCP throughput {nt}"
        );
        let util = s.links[0].utilization;
        assert!(util > 0.9, "{rate}: bottleneck utilization {util}");
    }
}

struct Policy {
    goodput: f64,
    slow_start_exit: f64,
    feedback_per_s: f64,
}

fn policy(file: &str, feedback: &str, seeds: u64) -> Policy {
    let (mut g, mut ss, mut fb) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=seeds {
        let s = summary(
            file,
            &[
                format!("flows.0.feedback={feedback}"),
                format!("seed={seed}"),
            ],
        );
        let f = &s.flows[0];
        g.push(f.goodput_bps);
        ss.push(f.slow_start_exit_s.expect("the flow leaves slow start"));
        fb.push(f.feedback_packets.expect("feedback counted") as f64 / s.duration_s);
    }
    Policy {
        goodput: mean(&g),
        slow_start_exit: mean(&ss),
        feedback_per_s: mean(&fb),
    }
}

/// Paper 001: with dynamic feedback slow start ends earlier and the mean
/// throughput is higher, on both scenarios, at the cost of ~RTT/RTTref
/// times the feedback. (The size of the gains is compared with the paper
/// in docs/validation.md.)
#[test]
fn dynamic_feedback_leaves_slow_start_earlier_and_goes_faster() {
    for (file, rtt) in [("ccid3-slowstart.toml", 1.0), ("ccid3-ipstar.toml", 1.2)] {
        let std = policy(file, "standard", 6);
        let dynm = policy(file, "dynamic", 6);
        assert!(
            dynm.slow_start_exit < std.slow_start_exit,
            "{file}: slow start left at {} s (dynamic) vs {} s",
            dynm.slow_start_exit,
            std.slow_start_exit
        );
        assert!(
            dynm.goodput > std.goodput,
            "{file}: goodput {} (dynamic) vs {}",
            dynm.goodput,
            std.goodput
        );
        // Standard: about one report per RTT. Dynamic: NFb = RTT/100 ms
        // reports per RTT (10 or 12), when X_recv allows.
        assert!(
            (std.feedback_per_s * rtt - 1.0).abs() < 0.25,
            "{file}: standard sends {} reports/s",
            std.feedback_per_s
        );
        let ratio = dynm.feedback_per_s / std.feedback_per_s;
        assert!(
            ratio > 7.0 && ratio < 13.0,
            "{file}: dynamic/standard feedback ratio {ratio}"
        );
    }
}

/// Paper 001: where the dynamic policy's goodput gain comes from. On the
/// nominal link with a buffer of two BDP (250 packets) each loss event
/// follows a queue that adds up to 2 s to the RTT; the sender's RTT filter
/// (RFC 5348 §4.3 step 2, R = 0.9 R + 0.1 R_sample per feedback) forgets
/// it ten times faster with ten reports per RTT, and X ~ 1/R meanwhile.
/// Give the standard policy the memory of ten such updates per report
/// (q = 0.9^10 = 0.349) and most of the gain goes (docs/validation.md,
/// 10 seeds: +51.8 % against +6.8 %).
#[test]
fn dynamic_feedback_gain_is_mostly_the_rtt_filter_forgetting_the_queue() {
    let goodput = |feedback: &str, q: &str| {
        let g: Vec<f64> = (1..=6)
            .map(|seed| {
                summary(
                    "ccid3-slowstart.toml",
                    &[
                        "topology.downlink.queue.limit=250".into(),
                        format!("flows.0.feedback={feedback}"),
                        format!("flows.0.rtt_filter_q={q}"),
                        format!("seed={seed}"),
                    ],
                )
                .flows[0]
                    .goodput_bps
            })
            .collect();
        mean(&g)
    };
    let dynamic = goodput("dynamic", "0.9");
    let gain = dynamic / goodput("standard", "0.9") - 1.0;
    let gain_fast_filter = dynamic / goodput("standard", "0.349") - 1.0;
    assert!(gain > 0.25, "gain {gain}");
    assert!(
        gain_fast_filter < gain / 3.0,
        "gain {gain}, against a standard policy with q = 0.349: {gain_fast_filter}"
    );
}

/// Paper 001 on the bursty (Gilbert-Elliott) IPSTAR channel: the same mean
/// PER as ccid3-ipstar.toml in bursts gives a far lower loss event rate,
/// far more goodput, and the dynamic policy's gain over the standard one
/// grows (docs/validation.md: +6.8 % uniform, +15.6 % GE over 10 seeds).
/// The loss-recovery summary is there, consistent and deterministic.
#[test]
fn bursty_ipstar_channel_and_loss_recovery() {
    let seeds = 4;
    let (mut uni, mut ge_std, mut ge_dyn) = (0.0, 0.0, 0.0);
    for seed in 1..=seeds {
        let set = |fb: &str| vec![format!("flows.0.feedback={fb}"), format!("seed={seed}")];
        let u = summary("ccid3-ipstar.toml", &set("standard"));
        let g = summary("ccid3-ipstar-ge.toml", &set("standard"));
        let d = summary("ccid3-ipstar-ge.toml", &set("dynamic"));
        assert!(
            g.flows[0].loss_event_rate.unwrap() < 0.5 * u.flows[0].loss_event_rate.unwrap(),
            "seed {seed}: p {:?} (GE) vs {:?} (uniform)",
            g.flows[0].loss_event_rate,
            u.flows[0].loss_event_rate
        );
        for s in [&u, &g, &d] {
            let r = s.flows[0].loss_recovery.as_ref().expect("loss events seen");
            assert!(r.events >= 1 && r.recovered <= r.events, "{r:?}");
            assert_eq!(r.mean_s.is_some(), r.recovered > 0, "{r:?}");
            if let Some(m) = r.mean_s {
                assert!(m >= 0.0 && m <= s.duration_s, "{r:?}");
            }
        }
        uni += u.flows[0].goodput_bps;
        ge_std += g.flows[0].goodput_bps;
        ge_dyn += d.flows[0].goodput_bps;
    }
    assert!(ge_std > 2.0 * uni, "GE {ge_std} vs uniform {uni}");
    assert!(
        ge_dyn > 1.05 * ge_std,
        "dynamic {ge_dyn} vs standard {ge_std}"
    );
    // Same scenario, same seed: the same recovery figures.
    let a = summary("ccid3-ipstar-ge.toml", &["seed=2".into()]);
    let b = summary("ccid3-ipstar-ge.toml", &["seed=2".into()]);
    assert_eq!(a.flows[0].loss_recovery, b.flows[0].loss_recovery);
}

/// Issue 34 in the simulator: `scenarios/tbf-veth.toml` (a sub-ms path
/// behind a 10 Mb/s token bucket with a 16 KiB burst and 150 KiB of
/// queue). With RFC 5348 §4.5's unbounded X_inst (`damping_max_gain =
/// inf`, what satcc did before) the flow offers several times the link
/// rate and the shaper drops most of it; with the default bound it stays
/// within 10 % of the link with no drops, once slow start is over. The
/// window [1 s, 6 s] is the difference of a 6 s and a 1 s run (the
/// simulation is deterministic, so the shorter run is the longer one's
/// prefix).
#[test]
fn token_bucket_path_overloads_only_with_unbounded_damping() {
    let window = |gain: &str| {
        let at = |d: &str| {
            let s = summary(
                "tbf-veth.toml",
                &[
                    format!("duration={d}"),
                    format!("flows.0.damping_max_gain={gain}"),
                ],
            );
            let (f, l) = (&s.flows[0], &s.links[0]);
            assert_eq!(l.name, "veth");
            (f.data_bytes_sent, l.arrivals, l.drops_queue)
        };
        let (b1, a1, d1) = at("1s");
        let (b6, a6, d6) = at("6s");
        let offered_bps = (b6 - b1) as f64 * 8.0 / 5.0;
        let drop_frac = (d6 - d1) as f64 / (a6 - a1) as f64;
        (offered_bps, drop_frac)
    };
    let (old_bps, old_drops) = window("inf");
    assert!(
        old_bps > 2.0 * 10e6 && old_drops > 0.5,
        "unbounded: {old_bps} b/s offered, {old_drops} dropped"
    );
    let (new_bps, new_drops) = window("2");
    assert!(
        (0.8 * 10e6..=1.1 * 10e6).contains(&new_bps) && new_drops <= 0.05,
        "bounded: {new_bps} b/s offered, {new_drops} dropped"
    );
}

/// Issue 34's second point in the simulator: slow start on the same path.
/// The packets that queue behind the flow's own slow start carry the RTT
/// of the empty path (0.1 ms) and arrive one per 0.83 ms; measured over
/// "the last R_m" (`x_recv_interval = "rtt"`) each lone packet reported
/// about s/R_m, 77 Mb/s, and slow start (X = min(2X, 2 X_recv)) offered
/// 153 Mb/s for the 120 ms before the first loss was seen. Measured since
/// the last report (the default) the receiver reports the link's rate and
/// slow start loses about one queue's worth (150 KiB, 147 datagrams), as
/// a TCP slow start would. Without host jitter: the default 20 µs is a
/// fifth of this path's RTT and makes slow start overshoot further
/// (2026-11-26: 1 099 of 2 934 dropped with "since_feedback", 2 195 of
/// 4 707 with "rtt"; the real path drops 1-37 % of a 15 s run's
/// datagrams, all in slow start: docs/validation.md, "A token-bucket
/// path"), which is not what this test is about.
#[test]
fn token_bucket_slow_start_loses_about_one_queue() {
    let drops = |interval: &str| {
        let s = summary(
            "tbf-veth.toml",
            &[
                "duration=2s".into(),
                format!("flows.0.x_recv_interval={interval}"),
                "flows.0.host_jitter=none".into(),
            ],
        );
        let l = &s.links[0];
        assert_eq!(l.name, "veth");
        (l.drops_queue, l.arrivals)
    };
    let (old, old_arrivals) = drops("rtt");
    assert!(
        old > 1000,
        "one R_m: {old} of {old_arrivals} dropped (1 935 when measured)"
    );
    let (new, new_arrivals) = drops("since_feedback");
    assert!(
        new <= 2 * 147,
        "since the last report: {new} of {new_arrivals} dropped"
    );
}
