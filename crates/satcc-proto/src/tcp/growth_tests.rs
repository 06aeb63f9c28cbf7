//! CUBIC (RFC 9438) and Hybla (Caini & Firrincieli 2004) window growth
//! against their documents' formulas, then through a whole sender.

use super::growth::{hybla_rho, AckInfo, CubicState, GrowthState, HyblaState};
use super::*;
use crate::time::{Duration, Instant};

fn at(ms: u64) -> Instant {
    Instant(ms * 1_000_000)
}

fn info(now: Instant, srtt_ms: u64) -> AckInfo {
    AckInfo {
        now,
        acked: 1,
        srtt: Some(Duration::from_millis(srtt_ms)),
        rtt: Some(Duration::from_millis(srtt_ms)),
        snd_una: 0,
        snd_nxt: 0,
        mss: 1000,
        open: true,
    }
}

fn cubic(cfg: CubicConfig) -> GrowthState {
    GrowthState::new(Growth::Cubic(cfg))
}

fn cubic_state(g: &GrowthState) -> &CubicState {
    match g {
        GrowthState::Cubic(s) => s,
        _ => unreachable!(),
    }
}

/// Drive congestion avoidance with one ACK per segment of cwnd per RTT
/// (`rtt_ms` apart) for `rtts` round trips; returns cwnd after each.
fn ca_rounds(g: &mut GrowthState, mut cwnd: f64, t0: u64, rtt_ms: u64, rtts: u64) -> Vec<f64> {
    let mut out = Vec::new();
    for r in 0..rtts {
        let n = cwnd.floor() as u64;
        for i in 0..n {
            // The ACKs of one round spread over the RTT.
            let now = at(t0 + r * rtt_ms + i * rtt_ms / n.max(1));
            cwnd = g.on_ack(cwnd, 0.0, false, info(now, rtt_ms));
        }
        out.push(cwnd);
    }
    out
}

#[test]
fn cubic_reduction_and_k_follow_rfc9438() {
    let mut g = cubic(CubicConfig::default());
    // RFC 9438 §4.6: ssthresh = flight_size · β_cubic (0.7, §4.6).
    let ss = g.on_congestion(100, 100.0).unwrap();
    assert!((ss - 70.0).abs() < 1e-9, "ssthresh {ss}");
    // §4.6: W_max = cwnd before the reduction (first loss: no fast
    // convergence).
    assert_eq!(cubic_state(&g).w_max, Some(100.0));
    assert_eq!(cubic_state(&g).cwnd_prior, 100.0);
    // The first ACK of congestion avoidance opens the epoch.
    let c = g.on_ack(70.0, 70.0, false, info(at(1000), 100));
    let s = cubic_state(&g);
    // §4.2 eq. 2: K = cbrt((W_max − cwnd_epoch)/C) = cbrt(W_max(1−β)/C)
    // = cbrt(30/0.4).
    let k = (100.0f64 * 0.3 / 0.4).cbrt();
    assert!((s.k - k).abs() < 1e-9, "K {} vs {k}", s.k);
    // §4.2 eq. 1: W_cubic(K) = W_max, W_cubic(0) = cwnd_epoch.
    assert!((s.w_cubic(k, 100.0) - 100.0).abs() < 1e-9);
    assert!((s.w_cubic(0.0, 100.0) - 70.0).abs() < 1e-9);
    // §4.3: W_est starts at cwnd_epoch.
    assert!(c > 70.0 && c < 71.0, "one ACK opens by less than one: {c}");
}

#[test]
fn ssthresh_is_at_least_two_segments() {
    // RFC 9438 §4.6: "ssthresh = max(ssthresh, 2)".
    let mut g = cubic(CubicConfig::default());
    assert_eq!(g.on_congestion(2, 2.0), Some(2.0));
}

#[test]
fn cubic_window_tracks_w_cubic_of_t_plus_rtt() {
    // Reno-friendly region off, so cwnd follows §4.2's curve alone.
    let cfg = CubicConfig {
        reno_friendly: false,
        ..CubicConfig::default()
    };
    let mut g = cubic(cfg);
    let ss = g.on_congestion(200, 200.0).unwrap();
    let rtt = 100;
    let rounds = ca_rounds(&mut g, ss, 0, rtt, 120);
    let s = cubic_state(&g);
    let k = s.k;
    // §4.2: each ACK moves cwnd (target − cwnd)/cwnd towards target =
    // W_cubic(t + RTT): after a round cwnd is within a little of the
    // curve one RTT ahead of the round's start.
    for (r, &w) in rounds.iter().enumerate().skip(1) {
        let t = (r as f64) * 0.1;
        let want = s.w_cubic(t + 0.1, 200.0).clamp(140.0, f64::MAX);
        assert!(
            (w - want).abs() / want < 0.05,
            "round {r}: cwnd {w:.2}, W_cubic(t+RTT) {want:.2}"
        );
    }
    // Concave up to W_max at K, then convex beyond it (§4.4, §4.5): the
    // window is near W_max around t = K and well above it 3 s later.
    let at_k = rounds[(k * 10.0) as usize];
    assert!((at_k - 200.0).abs() < 3.0, "cwnd at K {at_k}");
    assert!(rounds[119] > 210.0, "convex region {}", rounds[119]);
}

#[test]
fn cubic_target_is_capped_at_one_and_a_half_cwnd() {
    // RFC 9438 §4.2: target ≤ 1.5·cwnd, so one ACK adds at most 0.5.
    let cfg = CubicConfig {
        reno_friendly: false,
        ..CubicConfig::default()
    };
    let mut g = cubic(cfg);
    g.on_congestion(10, 10.0);
    let c0 = g.on_ack(7.0, 7.0, false, info(at(0), 100));
    // 100 s later W_cubic is enormous; the step is still bounded.
    let c1 = g.on_ack(c0, 7.0, false, info(at(100_000), 100));
    assert!((c1 - c0 - 0.5 * c0 / c0).abs() < 1e-9, "{c0} -> {c1}");
}

#[test]
fn fast_convergence_lowers_w_max() {
    // RFC 9438 §4.7: a loss below the previous W_max sets
    // W_max = cwnd·(1 + β)/2.
    let mut g = cubic(CubicConfig::default());
    g.on_congestion(100, 100.0);
    g.on_congestion(80, 80.0);
    assert!((cubic_state(&g).w_max.unwrap() - 80.0 * 1.7 / 2.0).abs() < 1e-9);
    // Without it, W_max = cwnd.
    let mut g = cubic(CubicConfig {
        fast_convergence: false,
        ..CubicConfig::default()
    });
    g.on_congestion(100, 100.0);
    g.on_congestion(80, 80.0);
    assert_eq!(cubic_state(&g).w_max, Some(80.0));
}

#[test]
fn reno_friendly_region_grows_by_alpha_per_rtt() {
    // Small W_max, short RTT: the cubic curve is flat near W_max for K
    // seconds, many RTTs, so Reno's estimate overtakes it (§4.3).
    let mut g = cubic(CubicConfig::default());
    g.on_congestion(20, 20.0);
    let rtt = 10;
    let rounds = ca_rounds(&mut g, 14.0, 0, rtt, 10);
    let s = cubic_state(&g);
    // §4.3 eq. 4: α_cubic = 3(1 − β)/(1 + β) ≈ 0.529 segments per RTT
    // (while W_est < cwnd_prior = 20).
    let alpha = 3.0 * 0.3 / 1.7;
    // W_est after 10 rounds of ~cwnd ACKs: about 14 + 10·α.
    let want = 14.0 + 10.0 * alpha;
    assert!((s.w_est - want).abs() < 0.6, "W_est {} vs {want}", s.w_est);
    // §4.3: in the region cwnd = W_est.
    assert!((rounds[9] - s.w_est).abs() < 1e-9);
    // And the cubic curve alone would be lower: W_cubic(t) < W_est.
    assert!(s.w_cubic(0.1, 20.0) < s.w_est);
}

#[test]
fn alpha_becomes_one_past_cwnd_prior() {
    // RFC 9438 §4.3: once W_est ≥ cwnd_prior, α_cubic = 1.
    let mut g = cubic(CubicConfig::default());
    g.on_congestion(10, 10.0);
    let rounds = ca_rounds(&mut g, 7.0, 0, 1, 40);
    // From 7 to 10 at α ≈ 0.53 (≈ 6 rounds), then one per round.
    let last = rounds[39];
    let before = rounds[29];
    assert!(
        (last - before - 10.0).abs() < 1.0,
        "10 rounds at α = 1 added {}",
        last - before
    );
}

#[test]
fn rto_restarts_the_curve_with_k_zero() {
    // RFC 9438 §4.8: after a timeout, ssthresh uses β_cubic (§4.6), and
    // the first congestion avoidance stage uses K = 0 and W_max = the
    // window at its start.
    let mut g = cubic(CubicConfig::default());
    let ss = g.on_rto(100, 100.0).unwrap();
    assert!((ss - 70.0).abs() < 1e-9);
    // Slow start (cwnd < ssthresh) is RFC 5681's: +1 per ACK.
    assert_eq!(g.on_ack(5.0, ss, false, info(at(0), 100)), 6.0);
    // Congestion avoidance begins at cwnd 70.
    g.on_ack(70.0, 70.0, false, info(at(5000), 100));
    let s = cubic_state(&g);
    assert_eq!(s.k, 0.0);
    assert_eq!(s.w_max, Some(70.0));
}

#[test]
fn hybla_rho_is_rtt_over_rtt0_at_least_one() {
    let rtt0 = Duration::from_millis(25);
    // Paper §3: ρ = RTT/RTT0; a shorter RTT than RTT0 is Reno (ρ = 1).
    assert_eq!(hybla_rho(Some(Duration::from_millis(10)), rtt0), 1.0);
    assert_eq!(hybla_rho(Some(Duration::from_millis(100)), rtt0), 4.0);
    assert_eq!(hybla_rho(Some(Duration::from_millis(600)), rtt0), 24.0);
    // Before any RTT sample: Reno.
    assert_eq!(hybla_rho(None, rtt0), 1.0);
}

#[test]
fn hybla_increments_follow_the_paper() {
    let mut g = GrowthState::new(Growth::Hybla(HyblaConfig::default()));
    // RTT 100 ms, ρ = 4. Paper §3 eq. (6), slow start: +2^ρ − 1 = 15.
    assert_eq!(g.on_ack(10.0, 1000.0, false, info(at(0), 100)), 25.0);
    // Congestion avoidance: +ρ²/W = 16/32.
    assert_eq!(g.on_ack(32.0, 10.0, false, info(at(1), 100)), 32.5);
    // Slow start stops at ssthresh (Linux tcp_hybla.c's clamp).
    assert_eq!(g.on_ack(10.0, 20.0, false, info(at(1), 100)), 20.0);
    let mut open = GrowthState::new(Growth::Hybla(HyblaConfig {
        clamp_slow_start: false,
        ..HyblaConfig::default()
    }));
    assert_eq!(open.on_ack(10.0, 20.0, false, info(at(1), 100)), 25.0);
    // ρ follows the smallest SRTT seen (Linux tcp_hybla.c minrtt_us):
    // queueing that inflates SRTT to 200 ms does not raise it.
    assert_eq!(g.on_ack(32.0, 10.0, false, info(at(2), 200)), 32.5);
    // RTT 25 ms or less: Reno's own increments.
    let mut g = GrowthState::new(Growth::Hybla(HyblaConfig::default()));
    assert_eq!(g.on_ack(10.0, 1000.0, false, info(at(0), 20)), 11.0);
    assert_eq!(g.on_ack(10.0, 5.0, false, info(at(1), 20)), 10.1);
}

#[test]
fn hybla_slow_start_exponent_is_capped() {
    // RTT 600 ms: ρ = 24, but the slow-start exponent stops at 16
    // (Linux `1 << min(rho, 16)`), a parameter.
    let mut g = GrowthState::new(Growth::Hybla(HyblaConfig::default()));
    assert_eq!(
        g.on_ack(1.0, f64::MAX, false, info(at(0), 600)),
        1.0 + 65536.0 - 1.0
    );
    let mut g = GrowthState::new(Growth::Hybla(HyblaConfig {
        max_ss_exponent: 30.0,
        ..HyblaConfig::default()
    }));
    assert_eq!(
        g.on_ack(1.0, f64::MAX, false, info(at(0), 600)),
        (24.0f64).exp2()
    );
    // Congestion avoidance has no cap: ρ² = 576.
    let h = HyblaState {
        cfg: HyblaConfig::default(),
        min_srtt: None,
        linux: None,
    };
    let mut g = GrowthState::Hybla(h);
    assert_eq!(g.on_ack(576.0, 1.0, false, info(at(0), 600)), 577.0);
}

/// A whole sender: window 40, segment 0 lost, SACK recovery. CUBIC cuts
/// ssthresh to 0.7·FlightSize (RFC 9438 §4.6), Reno and Hybla to half
/// (RFC 5681 eq. 4).
#[test]
fn sender_cuts_by_beta_cubic_with_sack_recovery() {
    for (growth, want) in [
        (Growth::Reno, 20.0),
        (Growth::Hybla(HyblaConfig::default()), 20.0),
        (Growth::Cubic(CubicConfig::default()), 28.0),
    ] {
        let cfg = SenderConfig {
            variant: Variant::Sack,
            initial_window: 40,
            limited_transmit: false,
            growth,
            ..SenderConfig::default()
        };
        let mut s = TcpSender::new(cfg, at(0));
        s.push_data(10_000_000);
        let mut sent = 0;
        while s.poll_transmit(at(0)).is_some() {
            sent += 1;
        }
        assert_eq!(sent, 40);
        for k in 1..=3u64 {
            let mut a = TcpAck {
                ack: 0,
                wnd: 10_000,
                ts_echo: at(0),
                sack: [SackBlock::default(); MAX_SACK_BLOCKS],
                sack_len: 1,
                dummy_echo: false,
            };
            a.sack[0] = SackBlock {
                start: 1,
                end: 1 + k,
            };
            s.handle_input(at(500), &a);
        }
        let st = s.stats();
        assert!(st.in_recovery, "{growth:?}");
        assert_eq!(st.ssthresh, want, "{growth:?}");
        assert_eq!(st.cwnd, want, "{growth:?}: RFC 6675 (4.2) cwnd = ssthresh");
    }
}

#[test]
fn cubic_ssthresh_from_flight_size_or_from_cwnd_as_linux() {
    // RFC 9438 §4.6: ssthresh = flight_size·β_cubic. Linux's
    // cubictcp_recalc_ssthresh(): max(cwnd·β, 2). They differ when more is
    // outstanding than cwnd, as after a RACK recovery that marked many
    // segments lost (satcc's `geo` PER 1e-2 seed 116: cwnd 286 with 556
    // outstanding, ssthresh 389 by the RFC's rule: the window grew at
    // every congestion event).
    let mut rfc = cubic(CubicConfig::default());
    let ss = rfc.on_congestion(556, 286.0).unwrap();
    assert!((ss - 556.0 * 0.7).abs() < 1e-9, "RFC 9438: {ss}");
    let mut linux = cubic(CubicConfig {
        ssthresh_from_cwnd: true,
        ..CubicConfig::default()
    });
    let ss = linux.on_congestion(556, 286.0).unwrap();
    assert!((ss - 286.0 * 0.7).abs() < 1e-9, "Linux: {ss}");
    // The same on a timeout (tcp_enter_loss() asks the same hook).
    let ss = linux.on_rto(556, 286.0).unwrap();
    assert!((ss - 286.0 * 0.7).abs() < 1e-9, "Linux, RTO: {ss}");
    // W_max is cwnd either way (tcp_cubic.c last_max_cwnd).
    assert_eq!(cubic_state(&linux).w_max, Some(286.0));
}
