//! CUBIC v2.1 (`cubic_variant = "linux-2.6.22"`) against ns-2 2.35's
//! `tcp/linux/src/tcp_cubic.c` (and TCP Hybla against its
//! `tcp_hybla.c`) under its `Agent/TCP/Linux` shim
//! (`tcp/tcp-linux.cc`), function by function.

use super::growth::{AckInfo, GrowthState};
use super::*;
use crate::time::{Duration, Instant};

fn at(ms: u64) -> Instant {
    Instant(ms * 1_000_000)
}

fn ack(now: Instant, rtt_ms: u64, acked: u64, open: bool) -> AckInfo {
    AckInfo {
        now,
        acked,
        srtt: Some(Duration::from_millis(rtt_ms)),
        rtt: Some(Duration::from_millis(rtt_ms)),
        snd_una: 0,
        snd_nxt: 0,
        mss: 1000,
        open,
    }
}

fn v21() -> GrowthState {
    GrowthState::new(Growth::Cubic(CubicConfig::linux_2_6_22()))
}

fn state(g: &GrowthState) -> &super::cubic_v21::V21State {
    match g {
        GrowthState::Cubic(s) => s.v21.as_ref().expect("v2.1 state"),
        _ => unreachable!(),
    }
}

#[test]
fn v21_ssthresh_scales_cwnd_by_819_over_1024_with_fast_convergence() {
    let mut g = v21();
    // bictcp_recalc_ssthresh(): max(snd_cwnd * beta / 1024, 2) of cwnd,
    // not of FlightSize (RFC 9438 §4.6 would give 0.7 · 50 = 35).
    assert_eq!(g.on_congestion(50, 100.0), Some(79.0));
    assert_eq!(state(&g).last_max_cwnd, 100);
    assert_eq!(state(&g).loss_cwnd, 100);
    // Fast convergence: a loss below last_max_cwnd sets it to
    // cwnd · (1024 + 819) / 2048 (integer division: 90 · 1843 / 2048 = 80).
    assert_eq!(g.on_congestion(90, 90.0), Some(71.0));
    assert_eq!(state(&g).last_max_cwnd, 80);
    // The floor of two segments.
    assert_eq!(g.on_congestion(1, 2.0), Some(2.0));
    // A timeout: ssthresh(), then bictcp_reset() (TCP_CA_Loss): the
    // "before any loss" state again.
    assert_eq!(g.on_rto(10, 50.0), Some(39.0));
    assert_eq!((state(&g).last_max_cwnd, state(&g).loss_cwnd), (0, 0));
    assert_eq!(state(&g).delayed_ack, 32);
}

#[test]
fn v21_ack_ratio_sticks_at_31_sixteenths_with_an_ack_per_segment() {
    let mut g = v21();
    assert_eq!(
        state(&g).delayed_ack,
        2 << 4,
        "bictcp_reset(): 2 << ACK_RATIO_SHIFT"
    );
    let mut cwnd = 100.0;
    for i in 0..200 {
        cwnd = g.on_ack(cwnd, 50.0, false, ack(at(2000 + i), 100, 1, true));
        // bictcp_acked(): cnt -= ratio >> 4; ratio += cnt. 32 + (1 − 2) =
        // 31, then 31 + (1 − 1): the estimate never reaches 1 (16).
        assert_eq!(state(&g).delayed_ack, 31, "after ACK {i}");
    }
    // Only in TCP_CA_Open.
    g.on_ack(cwnd, 50.0, false, ack(at(3000), 100, 5, false));
    assert_eq!(state(&g).delayed_ack, 31);
    // A cumulative ACK of 5 segments in Open: 31 + (5 − 1) = 35.
    g.on_ack(cwnd, 50.0, false, ack(at(3001), 100, 5, true));
    assert_eq!(state(&g).delayed_ack, 35);
}

#[test]
fn v21_grows_a_segment_per_26_acks_before_the_first_loss() {
    // bictcp_update(): `if (ca->loss_cwnd == 0) ca->cnt = 50;` then
    // cnt = (50 << 4) / 31 = 25, and bictcp_cong_avoid() adds a segment
    // when snd_cwnd_cnt (counting from 0) reaches it: every 26 ACKs.
    let mut g = v21();
    let mut cwnd = 100.0;
    let mut grew_at = Vec::new();
    for i in 0..78u64 {
        let c = g.on_ack(cwnd, 50.0, false, ack(at(2000 + i), 100, 1, true));
        if c > cwnd {
            grew_at.push(i + 1);
        }
        cwnd = c;
    }
    assert_eq!(state(&g).cnt, 25);
    assert_eq!(grew_at, vec![26, 52, 78]);
    assert_eq!(cwnd, 103.0);
}

#[test]
fn v21_slow_start_is_one_segment_per_ack_up_to_and_at_ssthresh() {
    // ns-2's tcp_cong.c tcp_slow_start() while snd_cwnd <= snd_ssthresh
    // (`<=`: one more segment than RFC 5681's `<`).
    let mut g = v21();
    let mut cwnd = 10.0;
    for i in 0..10 {
        cwnd = g.on_ack(cwnd, 20.0, false, ack(at(10 + i), 100, 1, true));
    }
    assert_eq!(cwnd, 20.0);
    cwnd = g.on_ack(cwnd, 20.0, false, ack(at(30), 100, 1, true));
    assert_eq!(cwnd, 21.0);
    cwnd = g.on_ack(cwnd, 20.0, false, ack(at(31), 100, 1, true));
    assert_eq!(cwnd, 21.0, "above ssthresh: congestion avoidance");
}

/// ACK-per-segment rounds of `rtt_ms` from `t0_ms`; cwnd after each round.
fn rounds(g: &mut GrowthState, mut cwnd: f64, t0_ms: u64, rtt_ms: u64, n: u64) -> Vec<f64> {
    let mut out = Vec::new();
    for r in 0..n {
        let k = cwnd as u64;
        for i in 0..k {
            let now = at(t0_ms + r * rtt_ms + i * rtt_ms / k);
            cwnd = g.on_ack(cwnd, 1.0, false, ack(now, rtt_ms, 1, true));
        }
        out.push(cwnd);
    }
    out
}

#[test]
fn v21_returns_to_w_max_near_k_and_plateaus_there() {
    // A loss at 100 segments: cwnd 79, K = cbrt(21 / 0.4004) = 3.74 s
    // (cube_factor = 2^40 / 410, K in 1/1024 s). t counts from the
    // epoch's first ACK plus delay_min (100 ms here), so the curve passes
    // the origin 3.64 s into the epoch.
    let mut g = v21();
    let ss = g.on_congestion(100, 100.0).unwrap();
    assert_eq!(ss, 79.0);
    let w = rounds(&mut g, ss, 10_000, 100, 60);
    // 3.6 s in (round 36): within 3 % below W_max; cwnd tracks the
    // concave curve, never far above it while t < K.
    let at_k = w[35];
    assert!((97.0..=101.0).contains(&at_k), "cwnd at K {at_k}; {w:?}");
    // Half-way (1.8 s), the curve is at 100 − 0.4·1.9³ ≈ 97: already
    // close (concave), well above the 79 it started from.
    assert!(w[17] > 93.0 && w[17] < 100.0, "{w:?}");
    // Around K it plateaus: less than 3 segments in the 0.5 s after it.
    assert!(w[40] - w[35] < 3.0, "{w:?}");
}

#[test]
fn v21_caps_growth_far_above_the_origin_by_max_increment() {
    // Far above W_max the cubic target runs away; `min_cnt = cwnd·HZ·8 /
    // (10·max_increment·delay_min)` holds growth to 16 segments per
    // 100 ms, i.e. 16 per RTT of 100 ms, times the 31/16 of the ACK
    // ratio: ≈ 31 segments per round. The curve's own slope, 3·C·(t−K)²,
    // passes that 16 s beyond K; at 28 s (rounds 280-300) it would be
    // ≈ 94 segments per round.
    let mut g = v21();
    let ss = g.on_congestion(20, 20.0).unwrap();
    let w = rounds(&mut g, ss, 10_000, 100, 300);
    let late: Vec<f64> = w.windows(2).skip(280).map(|p| p[1] - p[0]).collect();
    for d in &late {
        assert!((28.0..=34.0).contains(d), "growth per round {d}; {late:?}");
    }
}

// TCP Hybla as ns-2 2.35 runs it (`hybla_variant = "linux-2.6.22"`):
// `tcp/linux/src/tcp_hybla.c` under tcp-linux.cc.

fn hybla_linux() -> GrowthState {
    GrowthState::new(Growth::Hybla(HyblaConfig {
        variant: HyblaVariant::Linux2622,
        ..HyblaConfig::default()
    }))
}

#[test]
fn hybla_linux_slow_start_in_eighths_of_rho_from_cwnd_rho() {
    // SRTT 45 ms: rho_3ls = (45 << 3) / 25 = 14 (ρ = 1.75, truncated
    // from 1.8); rho = 1, fraction 6: 2^ρ − 1 = (2 · 215 − 128)/128 =
    // 2 + 46/128 per ACK. hybla_init() on the first ACK sets cwnd = rho.
    let mut g = hybla_linux();
    let mut cwnd = 10.0;
    let mut seen = Vec::new();
    for i in 0..4 {
        cwnd = g.on_ack(cwnd, 100.0, false, ack(at(100 + i), 45, 1, true));
        seen.push(cwnd);
    }
    // 1 + 2 (+46), 5 (+92), 7 (+138 → 8, +10), 10 (+56).
    assert_eq!(seen, vec![3.0, 5.0, 8.0, 10.0]);
    // Clamped at ssthresh.
    assert_eq!(g.on_ack(cwnd, 11.0, false, ack(at(200), 45, 1, true)), 11.0);
}

#[test]
fn hybla_linux_congestion_avoidance_in_128ths_and_reno_outside_open() {
    let mut g = hybla_linux();
    // Initialise at 45 ms (cwnd becomes rho = 1), then stand at 60.
    g.on_ack(1.0, 1.0, false, ack(at(100), 45, 1, true));
    // INC = rho2_7ls / W = (14² << 1) / 60 = 392 / 60 = 6/128 per ACK: 60
    // ACKs give 360/128, two segments (the paper's ρ² = 3.24 would give
    // three).
    let mut cwnd = 60.0;
    for i in 0..60 {
        cwnd = g.on_ack(cwnd, 2.0, false, ack(at(200 + i), 45, 1, true));
    }
    assert_eq!(cwnd, 62.0);
    // Outside TCP_CA_Open (after a timeout, hybla_state() clears
    // hybla_en): tcp_reno_cong_avoid(), a segment when snd_cwnd_cnt
    // reaches cwnd. The counter is shared: Hybla's own ACKs below 1/128
    // counted it up since its last whole segment (ACKs 43-60 above: 18),
    // so the first Reno segment comes after 62 − 18 + 1 = 45 ACKs.
    let mut n = 0;
    while cwnd == 62.0 {
        cwnd = g.on_ack(cwnd, 2.0, false, ack(at(300 + n), 45, 1, false));
        n += 1;
        assert!(n < 200);
    }
    assert_eq!((cwnd, n), (63.0, 45));
    // tcp_reno_ssthresh(): half of cwnd, not of FlightSize.
    assert_eq!(g.on_congestion(10, 63.0), Some(31.0));
    // The default Hybla keeps the sender's own rules.
    let mut d = GrowthState::new(Growth::Hybla(HyblaConfig::default()));
    assert_eq!(d.on_congestion(10, 63.0), None);
}
