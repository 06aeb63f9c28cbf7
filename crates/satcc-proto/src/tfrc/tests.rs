//! Tests of the TFRC sender and receiver, alone and in a closed loop.

use std::collections::VecDeque;

use super::*;
use crate::equation::{tfrc_loss_rate_for, tfrc_rate};
use crate::rng::Rng;
use crate::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at_ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}
fn rel(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}
fn fb(ts_echo: Instant, t_delay: Duration, x_recv: f64, p: f64) -> TfrcFeedback {
    TfrcFeedback {
        ts_echo,
        t_delay,
        x_recv,
        p,
    }
}

// ---------------------------------------------------------------- sender

#[test]
fn sender_starts_at_one_packet_per_second() {
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    assert_eq!(s.poll_transmit(Instant::ZERO), None, "nothing queued yet");
    s.set_unlimited();
    let d = s.poll_transmit(Instant::ZERO).unwrap();
    assert_eq!((d.seq, d.len, d.ts, d.rtt), (0, 1000, Instant::ZERO, None));
    assert_eq!(s.poll_transmit(Instant::ZERO), None);
    // §4.2: X = s per second; no-feedback timer 2 s.
    assert_eq!(s.stats().x, 1000.0);
    assert_eq!(s.poll_timeout(), Some(at_ms(1000)));
    assert_eq!(s.nofeedback_deadline(), at_ms(2000));
    assert_eq!(s.poll_transmit(at_ms(999)), None);
    assert_eq!(s.poll_transmit(at_ms(1000)).unwrap().seq, 1);
}

/// The endpoint's mean RTT is the mean of the samples (400 and 200 ms:
/// 300 ms), not the smoothed R at the end (400 · 0.9 + 200 · 0.1 = 380 ms),
/// which perf and summary.json reported as "mean RTT" before (issue 33).
#[test]
fn mean_rtt_is_the_mean_of_the_samples_not_the_last_estimate() {
    use crate::endpoint::Endpoint;
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(500), &fb(Instant::ZERO, ms(100), 0.0, 0.0));
    s.handle_input(at_ms(1300), &fb(at_ms(1000), ms(100), 1000.0, 0.0));
    let st = Endpoint::stats(&s);
    assert_eq!(st.rtt_samples, 2);
    assert_eq!(st.srtt, Some(ms(380)));
    assert!(
        rel(st.mean_rtt_s().unwrap(), 0.3) < 1e-12,
        "{:?}",
        st.mean_rtt_s()
    );
    // A malformed report is no sample.
    s.handle_input(at_ms(1400), &fb(at_ms(1500), ms(0), 1000.0, 0.0));
    assert_eq!(Endpoint::stats(&s).rtt_samples, 2);
}

/// RFC 5348 §4.3 step 2 with the filter constant as a parameter: 0.9 by
/// default (400 ms then a 500 ms sample: 410 ms), 0.5 halves the way
/// (450 ms), 0 takes the sample (500 ms), 1 keeps the first (400 ms).
#[test]
fn rtt_filter_constant_weighs_the_old_estimate() {
    for (q, want) in [
        (None, 410),
        (Some(500), 450),
        (Some(0), 500),
        (Some(1000), 400),
    ] {
        let mut cfg = SenderConfig::default();
        if let Some(q) = q {
            cfg.rtt_q_milli = q;
        }
        let mut s = TfrcSender::new(cfg, Instant::ZERO);
        s.set_unlimited();
        s.poll_transmit(Instant::ZERO).unwrap();
        s.handle_input(at_ms(500), &fb(Instant::ZERO, ms(100), 0.0, 0.0));
        assert_eq!(s.stats().rtt, Some(ms(400)));
        drain(&mut s, at_ms(500));
        s.handle_input(at_ms(1000), &fb(at_ms(500), Duration::ZERO, 3000.0, 0.0));
        assert_eq!(s.stats().rtt, Some(ms(want)), "q {q:?}");
    }
}

#[test]
fn sender_first_feedback_sets_initial_rate_and_rtt_ewma() {
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    // R_sample = 500 - 0 - 100 = 400 ms.
    s.handle_input(at_ms(500), &fb(Instant::ZERO, ms(100), 0.0, 0.0));
    assert_eq!(s.stats().rtt, Some(ms(400)));
    // §4.2: W_init = min(4*1000, max(2*1000, 4380)) = 4000; X = 4000/0.4.
    assert!(rel(s.x(), 10_000.0) < 1e-12);
    // No-feedback timer max(4R, 2s/X) = max(1.6 s, 0.2 s).
    assert_eq!(s.nofeedback_deadline(), at_ms(500 + 1600));
    // Next packet goes out one new t_ipi (100 ms) after the last send.
    assert_eq!(s.poll_timeout(), Some(at_ms(100)));
    // The sender sends (rate-limited, more waiting) before each feedback
    // echoes that time, so no interval it covers is data-limited (§8.2.1).
    drain(&mut s, at_ms(500));
    // §4.3 (2): R = 0.9*400 + 0.1*500 = 410 ms.
    s.handle_input(at_ms(1000), &fb(at_ms(500), Duration::ZERO, 3000.0, 0.0));
    assert_eq!(s.stats().rtt, Some(ms(410)));
    // Slow start: R since tld (set at 500 ms) has passed; X_recv_set still
    // holds Infinity (stamped at the first RTT measurement, younger than
    // 2R), so recv_limit = Infinity and X = max(min(2X, inf), 9756) = 20000.
    assert!(rel(s.x(), 20_000.0) < 1e-12, "{}", s.x());
    // Now Infinity is older than 2R = 820 ms and gone:
    // x_recv = 9000 and >= R since tld: X = max(min(2X, 18000), 9756) = 18000.
    drain(&mut s, at_ms(1090));
    s.handle_input(at_ms(1500), &fb(at_ms(1090), Duration::ZERO, 9000.0, 0.0));
    assert!(rel(s.x(), 18_000.0) < 1e-12, "{}", s.x());
    // A feedback less than R after the last doubling does not double.
    s.handle_input(at_ms(1600), &fb(at_ms(1190), Duration::ZERO, 90_000.0, 0.0));
    assert!(rel(s.x(), 18_000.0) < 1e-12, "{}", s.x());
    // Next one, R later: doubles to 36000 (recv_limit 180000).
    drain(&mut s, at_ms(1600));
    s.handle_input(at_ms(2010), &fb(at_ms(1600), Duration::ZERO, 90_000.0, 0.0));
    assert!(rel(s.x(), 36_000.0) < 1e-12, "{}", s.x());
    // X_recv collapses to 1000 and the 90000 entry is older than 2R:
    // recv_limit = 2000 < 2X, but X never drops below initial_rate:
    // X = max(min(72000, 2000), 4000/0.41) = 9756.
    drain(&mut s, at_ms(2590));
    s.handle_input(at_ms(3000), &fb(at_ms(2590), Duration::ZERO, 1000.0, 0.0));
    assert!(rel(s.x(), 4000.0 / 0.41) < 1e-9, "{}", s.x());
    assert!(rel(s.recv_limit(), 2000.0) < 1e-12);
}

#[test]
fn sender_congestion_avoidance_uses_equation_and_recv_limit() {
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(400), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    // p = 1 %, R = 0.4 s: X_Bps = tfrc_rate(1000, 0.4, 0.01, 1, 1.6) ~ 28 kB/s.
    let x_bps = tfrc_rate(1000.0, 0.4, 0.01, 1.0, 1.6);
    drain(&mut s, at_ms(400));
    s.handle_input(at_ms(800), &fb(at_ms(400), Duration::ZERO, 1e6, 0.01));
    assert!(rel(s.x(), x_bps) < 1e-12);
    assert_eq!(s.stats().x_calc, Some(x_bps));
    // recv_limit binds: entries newer than 2R are {1e6 @0.8, 5000 @1.2}...
    // the max is still 1e6. After 2R only the small ones remain.
    drain(&mut s, at_ms(800));
    s.handle_input(at_ms(1200), &fb(at_ms(800), Duration::ZERO, 5000.0, 0.01));
    assert!(rel(s.x(), x_bps) < 1e-12);
    drain(&mut s, at_ms(1300));
    s.handle_input(at_ms(1700), &fb(at_ms(1300), Duration::ZERO, 5000.0, 0.01));
    assert!(rel(s.x(), 10_000.0) < 1e-12, "{}", s.x());
    // Floor s/t_mbi: a huge p and tiny X_recv.
    drain(&mut s, at_ms(2200));
    s.handle_input(at_ms(2600), &fb(at_ms(2200), Duration::ZERO, 0.0, 1.0));
    assert!(rel(s.x(), 1000.0 / 64.0) < 1e-12, "{}", s.x());
}

/// A sender after one feedback with R = 400 ms reporting (x_recv, p).
fn sender_after(x_recv: f64, p: f64) -> TfrcSender {
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(400), &fb(Instant::ZERO, Duration::ZERO, x_recv, p));
    s
}

/// Send whatever is due up to `t` (so the sender is not idle).
fn drain(s: &mut TfrcSender, t: Instant) {
    while s.poll_transmit(t).is_some() {}
}

/// `Endpoint::rate`, which the simulator asks after every event, is
/// `stats().rate` under both profiles, before and after feedback, in slow
/// start and with a loss event rate.
#[test]
fn rate_is_the_rate_of_the_statistics_view() {
    use crate::endpoint::Endpoint;
    for profile in [Profile::Rfc5348, Profile::Ns2] {
        let cfg = SenderConfig {
            profile,
            ..SenderConfig::default()
        };
        let mut s = TfrcSender::new(cfg, Instant::ZERO);
        s.set_unlimited();
        let check = |s: &TfrcSender| {
            let want = Endpoint::stats(s).rate;
            assert!(want.is_some());
            assert_eq!(Endpoint::rate(s), want, "{profile:?}");
        };
        check(&s);
        drain(&mut s, Instant::ZERO);
        let mut seen = Vec::new();
        for (i, p) in [0.0, 0.0, 0.01, 0.02, 0.02, 0.005].into_iter().enumerate() {
            let t = at_ms(400 * (i as u64 + 1));
            s.handle_input(
                t,
                &fb(
                    at_ms(400 * i as u64),
                    ms(10),
                    20_000.0 * (i as f64 + 1.0),
                    p,
                ),
            );
            drain(&mut s, t);
            check(&s);
            seen.push(Endpoint::rate(&s).unwrap());
        }
        // The values moved, so the comparison is not between two constants.
        assert!(
            seen.windows(2).any(|w| w[0].x_bps != w[1].x_bps),
            "{profile:?}"
        );
        assert!(seen.windows(2).any(|w| w[0].p != w[1].p), "{profile:?}");
    }
}

/// A sender in congestion avoidance: the first feedback at 400 ms (R =
/// 400 ms) and a second at 1300 ms, both reporting (x_recv, p). By then
/// the initial Infinity of X_recv_set is older than 2R and gone (§4.3,
/// Update X_recv_set), so max(X_recv_set) = x_recv.
fn sender_in_ca(x_recv: f64, p: f64) -> TfrcSender {
    let mut s = sender_after(x_recv, p);
    drain(&mut s, at_ms(900));
    s.handle_input(at_ms(1300), &fb(at_ms(900), Duration::ZERO, x_recv, p));
    s
}

#[test]
fn nofeedback_before_any_feedback_halves_x_unless_idle() {
    // Sent a packet, never heard back: X = s/2 at 2 s (§4.4 first case).
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.poll_transmit(at_ms(1000)).unwrap();
    s.handle_timeout(at_ms(2000));
    assert_eq!(s.x(), 500.0);
    assert_eq!(s.stats().nofeedback_expiries, 1);
    // Restarted after 2s/X = 4 s (no R yet).
    assert_eq!(s.nofeedback_deadline(), at_ms(6000));
    // Never sent anything: idle, no change.
    let mut idle = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    idle.handle_timeout(at_ms(2000));
    assert_eq!(idle.x(), 1000.0);
    assert_eq!(idle.stats().nofeedback_expiries, 1);
    // Down to the floor s/t_mbi, never below.
    for k in 0..20 {
        let t = s.nofeedback_deadline();
        drain(&mut s, t);
        s.handle_timeout(t);
        assert!(s.x() >= 1000.0 / 64.0, "{k}");
    }
    assert_eq!(s.x(), 1000.0 / 64.0);
}

#[test]
fn nofeedback_in_slow_start_halves_x() {
    let mut s = sender_after(0.0, 0.0);
    assert!(rel(s.x(), 10_000.0) < 1e-12);
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    assert!(rel(s.x(), 5_000.0) < 1e-12);
    // Timer: max(4R = 1.6 s, 2s/X = 0.4 s).
    assert_eq!(s.nofeedback_deadline(), t + ms(1600));
}

#[test]
fn nofeedback_when_recv_limit_bound_halves_x_recv() {
    // p = 1 %, R = 0.4: X_calc = 28083 > 2*X_recv = 10000.
    let mut s = sender_in_ca(5000.0, 0.01);
    let x_calc = s.stats().x_calc.unwrap();
    assert!(x_calc > 10_000.0);
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    // Update_Limits(X_recv): X_recv_set = {2500}, X = min(X_calc, 5000).
    assert!(rel(s.stats().x_recv, 2500.0) < 1e-12);
    assert!(rel(s.x(), 5000.0) < 1e-12, "{}", s.x());
    // Again: X_calc > 2*2500 -> X_recv 1250, X 2500.
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    assert!(rel(s.stats().x_recv, 1250.0) < 1e-12);
    assert!(rel(s.x(), 2500.0) < 1e-12);
}

#[test]
fn nofeedback_when_equation_bound_halves_x_calc() {
    // X_calc = 28083 <= 2*X_recv = 40000: X_recv = X_calc/4, X = X_calc/2.
    let mut s = sender_after(20_000.0, 0.01);
    let x_calc = s.stats().x_calc.unwrap();
    assert!(rel(s.x(), x_calc) < 1e-12);
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    assert!(rel(s.stats().x_recv, x_calc / 4.0) < 1e-12);
    assert!(rel(s.x(), x_calc / 2.0) < 1e-12);
}

#[test]
fn nofeedback_while_idle_below_recover_rate_keeps_x() {
    // p > 0 and X_recv = 5000 < recover_rate = 4000/0.4 = 10000, and the
    // sender sent nothing since the timer was set: no change.
    let mut s = sender_in_ca(5000.0, 0.01);
    let x = s.x();
    let t = s.nofeedback_deadline();
    s.handle_timeout(t);
    assert_eq!(s.x(), x);
    assert_eq!(s.stats().nofeedback_expiries, 1);
    // Not idle: it halves.
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    assert!(s.x() < x);
}

#[test]
fn pacing_is_exact_in_the_long_run() {
    // s = 1460: W_init = min(5840, max(2920, 4380)) = 4380, R = 100 ms:
    // X = 43800 B/s, t_ipi = 1460/43800 s = 33.333.. ms (not a whole ns).
    let cfg = SenderConfig {
        s: 1460,
        ..SenderConfig::default()
    };
    let mut s = TfrcSender::new(cfg, Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(100), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    assert!(rel(s.x(), 43_800.0) < 1e-12);
    // Drive on send times only (the no-feedback timer is left alone).
    let end = at_ms(100) + Duration::from_secs(1000);
    let mut t = at_ms(100);
    let mut n = 0u64;
    let mut last = Instant::ZERO;
    loop {
        while let Some(d) = s.poll_transmit(t) {
            assert!(d.ts >= last);
            last = d.ts;
            n += 1;
        }
        let next = s.poll_timeout().unwrap();
        let next = if next <= t {
            // The no-feedback deadline has passed: poll every 1 ms (a
            // packet late by less than t_ipi keeps its nominal schedule).
            t + ms(1)
        } else {
            next
        };
        if next > end {
            break;
        }
        t = next;
    }
    // 1000 s at 30 packets/s (sent from t = 0 ms on: first at 0, next at
    // 33.3 ms ...): 30_000 packets after the first, give or take one.
    assert!((n as i64 - 30_000).abs() <= 1, "sent {n}");
}

#[test]
fn t_gran_lets_packets_leave_early_but_not_faster() {
    let cfg = SenderConfig {
        t_gran: ms(10),
        ..SenderConfig::default()
    };
    let mut s = TfrcSender::new(cfg, Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(400), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    // X = 10000 B/s, t_ipi = 100 ms, t_delta = min(50, 5) ms.
    assert_eq!(s.poll_timeout(), Some(at_ms(95)));
    assert!(s.poll_transmit(at_ms(94)).is_none());
    assert!(s.poll_transmit(at_ms(95)).is_some());
    assert!(s.poll_transmit(at_ms(100)).is_none());
    assert_eq!(s.poll_timeout(), Some(at_ms(195)));
}

#[test]
fn oscillation_damping_slows_pacing_when_rtt_rises() {
    let cfg = SenderConfig {
        oscillation_damping: true,
        ..SenderConfig::default()
    };
    let mut s = TfrcSender::new(cfg, Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(100), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    assert!(rel(s.x_inst(), s.x()) < 1e-12);
    // R_sample = 400 ms vs R_sqmean ~ sqrt(0.1): X_inst = X*R_sqmean/sqrt(R_sample).
    s.handle_input(at_ms(600), &fb(at_ms(200), Duration::ZERO, 1e9, 0.0));
    let sqmean = 0.9 * 0.1f64.sqrt() + 0.1 * 0.4f64.sqrt();
    assert!(rel(s.x_inst(), s.x() * sqmean / 0.4f64.sqrt()) < 1e-9);
    assert!(s.x_inst() < s.x());
}

/// Issue 34: on a path whose base RTT (0.1 ms) is tiny against its
/// queueing delay (120 ms), one RTT sample on the empty queue makes §4.5's
/// X_inst = X * R_sqmean / sqrt(R_sample) about 30 X. The default bound
/// holds it at 2 X; `damping_max_gain = inf` is the RFC's formula.
#[test]
fn oscillation_damping_gain_is_bounded() {
    let run = |gain: f64| {
        let cfg = SenderConfig {
            damping_max_gain: gain,
            ..SenderConfig::default()
        };
        let mut s = TfrcSender::new(cfg, Instant::ZERO);
        s.set_unlimited();
        s.poll_transmit(Instant::ZERO).unwrap();
        // Twenty samples of 120 ms (a full queue), one each 120 ms, p > 0
        // so that X is the equation's; then one sample of 0.1 ms.
        let mut t = 0;
        for _ in 0..20 {
            t += 120;
            s.handle_input(at_ms(t), &fb(at_ms(t - 120), Duration::ZERO, 1.25e6, 0.001));
        }
        let now = at_ms(t + 1);
        let echo = Instant(now.as_nanos() - 100_000);
        s.handle_input(now, &fb(echo, Duration::ZERO, 1.25e6, 0.001));
        s.x_inst() / s.x()
    };
    let unbounded = run(f64::INFINITY);
    // sqrt(~0.12 s) / sqrt(0.1 ms), R_sqmean barely moved by the one sample.
    assert!(unbounded > 25.0, "RFC formula: X_inst/X = {unbounded}");
    let bounded = run(DEFAULT_DAMPING_MAX_GAIN);
    assert!(
        (bounded - 2.0).abs() < 1e-12,
        "bounded: X_inst/X = {bounded}"
    );
    // Below 1 is read as 1, NaN as the default.
    assert!((run(0.5) - 1.0).abs() < 1e-12);
    assert!((run(f64::NAN) - 2.0).abs() < 1e-12);
}

#[test]
fn sender_ignores_malformed_feedback() {
    let mut s = sender_after(0.0, 0.0);
    let x = s.x();
    s.handle_input(at_ms(900), &fb(at_ms(500), Duration::ZERO, f64::NAN, 0.0));
    s.handle_input(at_ms(900), &fb(at_ms(500), Duration::ZERO, 1.0, f64::NAN));
    assert_eq!(s.x(), x);
    assert_eq!(s.stats().feedback_ignored, 2);
    // An echo from the future is ignored too.
    s.handle_input(at_ms(900), &fb(at_ms(5000), Duration::ZERO, 1.0, 0.0));
    assert_eq!(s.x(), x);
    assert_eq!(s.stats().feedback_ignored, 3);
    // A huge t_delay, infinite X_recv, p > 1: RTT clamps, no panic.
    s.handle_input(
        at_ms(900),
        &fb(at_ms(500), Duration::MAX, f64::INFINITY, 7.0),
    );
    assert!(s.stats().rtt.unwrap() >= MIN_RTT);
    assert!(s.x().is_finite() && s.x() > 0.0);
    assert_eq!(s.stats().p, 1.0);
}

#[test]
fn finite_data_is_sent_in_segments() {
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.push_data(2500);
    assert_eq!(s.poll_transmit(Instant::ZERO).unwrap().len, 1000);
    assert_eq!(s.poll_transmit(at_ms(1000)).unwrap().len, 1000);
    assert_eq!(s.poll_transmit(at_ms(2000)).unwrap().len, 500);
    assert_eq!(s.queued_bytes(), 0);
    assert!(s.poll_transmit(at_ms(3000)).is_none());
}

// -------------------------------------------------------------- receiver

fn data(seq: u64, ts: Instant, rtt_ms: u64) -> TfrcData {
    TfrcData {
        seq,
        len: 1000,
        ts,
        rtt: Some(ms(rtt_ms)),
        t_rto: None,
    }
}

#[test]
fn nfb_bounds() {
    let dynamic = FeedbackPolicy::Dynamic { rtt_ref: ms(100) };
    // RTT 1 s, RTTref 100 ms: round(10) = 10 unless X_recv*RTT/s is smaller.
    assert_eq!(dynamic.nfb(ms(1000), 1e6, 1000), 10);
    assert_eq!(dynamic.nfb(ms(1000), 4_700.0, 1000), 4); // floor(4.7)
    assert_eq!(dynamic.interval(ms(1000), 1e6, 1000), ms(100));
    assert_eq!(dynamic.interval(ms(1000), 4_700.0, 1000), ms(250));
    // Tiny RTT -> 1; no rate yet -> 1.
    assert_eq!(dynamic.nfb(ms(20), 1e9, 1000), 1);
    assert_eq!(dynamic.nfb(ms(1000), 0.0, 1000), 1);
    assert_eq!(dynamic.nfb(ms(1000), f64::NAN, 1000), 1);
    // Rounding: 1.25 -> 1, 1.5 -> 2, 1.2 s / 100 ms -> 12.
    assert_eq!(dynamic.nfb(ms(125), 1e9, 1000), 1);
    assert_eq!(dynamic.nfb(ms(150), 1e9, 1000), 2);
    assert_eq!(dynamic.nfb(ms(1200), 1e9, 1000), 12);
    assert_eq!(FeedbackPolicy::Standard.nfb(ms(1000), 1e9, 1000), 1);
    assert_eq!(
        FeedbackPolicy::Standard.interval(ms(1000), 1e9, 1000),
        ms(1000)
    );
    let zero_ref = FeedbackPolicy::Dynamic {
        rtt_ref: Duration::ZERO,
    };
    assert!(zero_ref.interval(ms(1000), 1e9, 1000) >= MIN_RTT);
}

#[test]
fn receiver_feedback_first_packet_then_every_rtt() {
    let mut r = TfrcReceiver::new(ReceiverConfig::default());
    assert_eq!(r.poll_timeout(), None);
    // 100 packets/s, R = 200 ms.
    let mut sent = Vec::new();
    for i in 0..100u64 {
        let t = at_ms(10 * i);
        r.handle_input(t, &data(i, t, 200));
        if let Some(f) = r.poll_transmit(t) {
            sent.push((t, f));
        }
        while let Some(w) = r.poll_timeout() {
            if w > t {
                break;
            }
            r.handle_timeout(w);
            if let Some(f) = r.poll_transmit(w) {
                sent.push((w, f));
            }
        }
    }
    // First at 0 (§6.3), then every 200 ms.
    let times: Vec<Instant> = sent.iter().map(|x| x.0).collect();
    assert_eq!(times[0], Instant::ZERO);
    assert_eq!(sent[0].1.x_recv, 0.0);
    for w in times.windows(2) {
        assert_eq!(w[1] - w[0], ms(200));
    }
    assert_eq!(r.stats().feedback_sent, sent.len() as u64);
    // X_recv: 20 packets per 200 ms = 100 kB/s; p = 0.
    for (_, f) in &sent[1..] {
        assert!(rel(f.x_recv, 100_000.0) < 1e-9, "{}", f.x_recv);
        assert_eq!(f.p, 0.0);
    }
    // The next tick reports the last 19 packets (810..990 ms; the one at
    // 800 ms went into the 800 ms report): 19 kB / 200 ms ...
    let w = r.poll_timeout().unwrap();
    assert_eq!(w, at_ms(1000));
    r.handle_timeout(w);
    assert!(rel(r.poll_transmit(w).unwrap().x_recv, 95_000.0) < 1e-9);
    // ... then silence: the timer fires with nothing to say, and sleeps.
    let w = r.poll_timeout().unwrap();
    r.handle_timeout(w);
    assert!(r.poll_transmit(w).is_none());
    assert_eq!(r.poll_timeout(), None);
    // Data again: the timer is re-armed one interval later.
    r.handle_input(at_ms(5000), &data(100, at_ms(5000), 200));
    assert_eq!(r.poll_timeout(), Some(at_ms(5200)));
}

#[test]
fn dynamic_policy_reports_nfb_times_per_rtt() {
    let mut r = TfrcReceiver::new(ReceiverConfig {
        policy: FeedbackPolicy::Dynamic { rtt_ref: ms(100) },
        ..ReceiverConfig::default()
    });
    // RTT 1 s, 100 packets/s: NFb = min(10, 100) = 10 -> O = 100 ms.
    let mut n_fb = 0;
    for i in 0..500u64 {
        let t = at_ms(10 * i);
        while let Some(w) = r.poll_timeout() {
            if w > t {
                break;
            }
            r.handle_timeout(w);
            n_fb += r.poll_transmit(w).is_some() as u32;
        }
        r.handle_input(t, &data(i, t, 1000));
        n_fb += r.poll_transmit(t).is_some() as u32;
    }
    assert_eq!(r.observation_interval(), ms(100));
    // The first report (at the first packet, §6.3) has no X_recv yet, so
    // NFb = 1 until the second, at 1 s; from then on every 100 ms:
    // 0, 1000, 1100, ..., 4900 ms = 41 reports (standard: 5).
    assert_eq!(n_fb, 41);
}

#[test]
fn receiver_loss_triggers_immediate_feedback_and_synthesises_first_interval() {
    let mut r = TfrcReceiver::new(ReceiverConfig::default());
    let mut last_fb = None;
    // 100 packets/s, R = 100 ms, packet 250 lost.
    for i in 0..300u64 {
        let t = at_ms(10 * i);
        while let Some(w) = r.poll_timeout() {
            if w > t {
                break;
            }
            r.handle_timeout(w);
            if let Some(f) = r.poll_transmit(w) {
                last_fb = Some((w, f));
            }
        }
        if i == 250 {
            continue;
        }
        r.handle_input(t, &data(i, t, 100));
        if let Some(f) = r.poll_transmit(t) {
            last_fb = Some((t, f));
            if i == 253 {
                // Detected at the third later arrival: feedback at once.
                assert!(f.p > 0.0);
                // §6.3.1: p equals the inverse of the equation at X_recv.
                let want = tfrc_loss_rate_for(1000.0, 0.1, f.x_recv, 1.0, 0.4);
                assert!(rel(f.p, want) < 0.01, "p {} want {}", f.p, want);
                assert!(rel(f.x_recv, 100_000.0) < 0.02, "{}", f.x_recv);
            }
        }
    }
    let st = r.stats();
    assert_eq!((st.packets_lost, st.loss_events), (1, 1));
    assert_eq!(r.loss_intervals().closed().len(), 1);
    // Later reports: p falls as I_0 grows past I_1... I_1 = 1/p ~ 7800
    // packets here, so it stays at 1/I_1.
    let (_, f) = last_fb.unwrap();
    assert!(f.p > 0.0 && f.p <= st.p + 1e-15);
}

#[test]
fn receiver_handles_duplicates_reordering_and_garbage() {
    let mut r = TfrcReceiver::new(ReceiverConfig::default());
    let t = at_ms(10);
    r.handle_input(t, &data(0, t, 100));
    r.handle_input(t, &data(0, t, 100));
    r.handle_input(at_ms(20), &data(2, at_ms(20), 100));
    r.handle_input(at_ms(21), &data(1, at_ms(19), 100)); // reordered
    r.handle_input(at_ms(22), &data(1, at_ms(19), 100)); // duplicate
    let st = r.stats();
    assert_eq!((st.packets_received, st.delivered_bytes), (3, 3000));
    assert_eq!(st.duplicates, 2);
    assert_eq!(st.packets_lost, 0);
    // Far future, timestamps going backwards, zero and absent RTTs.
    r.handle_input(at_ms(30), &data(u64::MAX, Instant::ZERO, 0));
    r.handle_input(
        at_ms(31),
        &TfrcData {
            seq: 3,
            len: 0,
            ts: Instant::ZERO,
            rtt: None,
            t_rto: None,
        },
    );
    r.handle_input(at_ms(32), &data(4, Instant::MAX, 0));
    assert_eq!(r.stats().packets_ignored, 1);
    assert_eq!(r.stats().packets_received, 5);
    while r.poll_transmit(at_ms(33)).is_some() {}
    let w = r.poll_timeout().unwrap();
    assert!(w > at_ms(32));
}

// ----------------------------------------------------------- closed loop

/// A one-way path: optional bottleneck (rate, unbounded FIFO), fixed
/// propagation delay, Bernoulli loss.
struct Path<T> {
    delay: Duration,
    loss: f64,
    rate_bps: Option<u64>,
    free_at: Instant,
    q: VecDeque<(Instant, T)>,
}

impl<T> Path<T> {
    fn new(delay: Duration, loss: f64, rate_bps: Option<u64>) -> Self {
        Path {
            delay,
            loss,
            rate_bps,
            free_at: Instant::ZERO,
            q: VecDeque::new(),
        }
    }
    fn send(&mut self, now: Instant, bytes: u64, x: T, rng: &mut Rng) {
        if rng.chance(self.loss) {
            return;
        }
        let depart = match self.rate_bps {
            Some(c) => {
                let d = self.free_at.max(now) + Duration::transmission(bytes, c);
                self.free_at = d;
                d
            }
            None => now,
        };
        self.q.push_back((depart + self.delay, x));
    }
    fn next(&self) -> Option<Instant> {
        self.q.front().map(|e| e.0)
    }
}

struct Loop {
    s: TfrcSender,
    r: TfrcReceiver,
    fwd: Path<TfrcData>,
    rev: Path<TfrcFeedback>,
    rng: Rng,
    now: Instant,
    /// Time-weighted integral of X (bytes) since `avg_from`.
    x_area: f64,
    avg_from: Instant,
    /// (time, X) after each feedback the sender processed.
    x_trace: Vec<(Instant, f64)>,
}

impl Loop {
    fn new(
        scfg: SenderConfig,
        rcfg: ReceiverConfig,
        one_way: Duration,
        loss: f64,
        rate_bps: Option<u64>,
        seed: u64,
    ) -> Self {
        let mut s = TfrcSender::new(scfg, Instant::ZERO);
        s.set_unlimited();
        Loop {
            s,
            r: TfrcReceiver::new(rcfg),
            fwd: Path::new(one_way, loss, rate_bps),
            rev: Path::new(one_way, 0.0, None),
            rng: Rng::new(seed),
            now: Instant::ZERO,
            x_area: 0.0,
            avg_from: Instant::MAX,
            x_trace: Vec::new(),
        }
    }

    fn run_until(&mut self, end: Instant) {
        let mut steps = 0u64;
        while self.now < end {
            steps += 1;
            assert!(steps < 50_000_000, "runaway loop");
            let t = self.now;
            while self.fwd.next().is_some_and(|a| a <= t) {
                let (_, d) = self.fwd.q.pop_front().unwrap();
                self.r.handle_input(t, &d);
            }
            while self.rev.next().is_some_and(|a| a <= t) {
                let (_, f) = self.rev.q.pop_front().unwrap();
                self.s.handle_input(t, &f);
                self.x_trace.push((t, self.s.x()));
            }
            if self.r.poll_timeout().is_some_and(|w| w <= t) {
                self.r.handle_timeout(t);
            }
            if self.s.poll_timeout().is_some_and(|w| w <= t) {
                self.s.handle_timeout(t);
            }
            while let Some(d) = self.s.poll_transmit(t) {
                self.fwd.send(t, u64::from(d.len) + 40, d, &mut self.rng);
            }
            while let Some(f) = self.r.poll_transmit(t) {
                self.rev.send(t, 40, f, &mut self.rng);
            }
            let next = [
                self.s.poll_timeout(),
                self.r.poll_timeout(),
                self.fwd.next(),
                self.rev.next(),
                Some(end),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
            assert!(next > t, "no progress at {t}");
            if t >= self.avg_from {
                self.x_area += self.s.x() * (next - t).as_secs_f64();
            }
            self.now = next;
        }
    }

    fn avg_x(&self) -> f64 {
        self.x_area / (self.now - self.avg_from).as_secs_f64()
    }
}

fn closed_loop_rate(policy: FeedbackPolicy, seed: u64) -> (f64, f64, TfrcReceiverStats) {
    // RTT 200 ms, Bernoulli loss 1 %, no bottleneck.
    let mut l = Loop::new(
        SenderConfig::default(),
        ReceiverConfig {
            policy,
            ..ReceiverConfig::default()
        },
        ms(100),
        0.01,
        None,
        seed,
    );
    l.run_until(Instant(100_000_000_000));
    l.avg_from = l.now;
    l.run_until(Instant(600_000_000_000));
    let want = tfrc_rate(1000.0, 0.2, 0.01, 1.0, 0.8);
    (l.avg_x(), want, l.r.stats())
}

#[test]
fn closed_loop_converges_to_equation_rate_standard() {
    let (x, want, st) = closed_loop_rate(FeedbackPolicy::Standard, 1);
    assert!(rel(x, want) < 0.25, "avg X {x:.0} vs equation {want:.0}");
    assert!(rel(st.p, 0.01) < 0.5, "p {}", st.p);
    assert!(st.loss_events > 100);
}

#[test]
fn closed_loop_converges_to_equation_rate_dynamic() {
    let (x, want, st) = closed_loop_rate(FeedbackPolicy::Dynamic { rtt_ref: ms(100) }, 2);
    assert!(rel(x, want) < 0.25, "avg X {x:.0} vs equation {want:.0}");
    assert!(st.loss_events > 100);
}

/// Slow start over a 2 Mbit/s bottleneck (250 kB/s incl. 40 B headers),
/// RTT 600 ms, no loss: returns the loop after `secs` seconds.
fn slow_start(policy: FeedbackPolicy, secs: u64) -> Loop {
    let mut l = Loop::new(
        SenderConfig::default(),
        ReceiverConfig {
            policy,
            ..ReceiverConfig::default()
        },
        ms(300),
        0.0,
        Some(2_000_000),
        3,
    );
    l.run_until(Instant(secs * 1_000_000_000));
    l
}

#[test]
fn slow_start_without_loss_doubles_until_recv_limit() {
    let l = slow_start(FeedbackPolicy::Standard, 30);
    // Each feedback at most doubles X (§4.3: min(2X, recv_limit)).
    for w in l.x_trace.windows(2) {
        assert!(w[1].1 <= 2.0 * w[0].1 * (1.0 + 1e-12), "{:?}", w);
    }
    // Below the pipe rate, X doubles at least every two feedbacks (one per
    // RTT): X_recv is measured over the previous RTT, so recv_limit =
    // 2*X_recv lags one doubling behind and lets every other feedback
    // double — paper 001 eq. 5, X_t = s*2^(t/(2 RTT)) for standard feedback.
    let pipe = 2_000_000.0 / 8.0 * 1000.0 / 1040.0; // payload bytes/s
    let xs: Vec<f64> = l.x_trace.iter().map(|e| e.1).collect();
    let below: Vec<f64> = xs.iter().copied().take_while(|&x| x < pipe / 2.0).collect();
    assert!(below.len() >= 6, "{below:?}");
    for w in below.windows(3) {
        assert!(w[2] >= 2.0 * w[0] * (1.0 - 1e-9), "{w:?}");
    }
    // The first feedback sets initial_rate = W_init/R, the second doubles.
    assert!(rel(xs[1], 2.0 * xs[0]) < 1e-9, "{xs:?}");
    // Pipe reached within 2*log2(pipe/initial) + 2 RTTs of feedback.
    let n_reach = xs.iter().position(|&x| x >= pipe).unwrap();
    let bound = 2.0 * (pipe / xs[0]).log2() + 2.0;
    assert!((n_reach as f64) <= bound, "{n_reach} > {bound}");
    // And it reaches the pipe rate: X settles at recv_limit = 2*X_recv,
    // X_recv at the bottleneck rate.
    let x_end = l.s.x();
    let x_recv = l.s.stats().x_recv;
    assert!(
        rel(x_recv, pipe) < 0.05,
        "X_recv {x_recv:.0} pipe {pipe:.0}"
    );
    assert!(rel(x_end, 2.0 * x_recv) < 0.05, "X {x_end:.0}");
    assert_eq!(l.r.stats().packets_lost, 0);
}

#[test]
fn dynamic_feedback_reaches_pipe_rate_sooner() {
    // Paper 001 §V-A: more feedback per RTT speeds slow start on long RTTs.
    let pipe = 2_000_000.0 / 8.0 * 1000.0 / 1040.0;
    let reach = |policy| {
        let l = slow_start(policy, 30);
        l.x_trace
            .iter()
            .find(|e| e.1 >= pipe)
            .map(|e| e.0)
            .expect("never reached the pipe rate")
    };
    let std = reach(FeedbackPolicy::Standard);
    let dynm = reach(FeedbackPolicy::Dynamic { rtt_ref: ms(100) });
    assert!(dynm < std, "dynamic {dynm} standard {std}");
}

#[test]
fn closed_loop_is_deterministic() {
    let a = closed_loop_rate(FeedbackPolicy::Standard, 9);
    let b = closed_loop_rate(FeedbackPolicy::Standard, 9);
    assert_eq!(a.0.to_bits(), b.0.to_bits());
    assert_eq!(a.2.feedback_sent, b.2.feedback_sent);
}

// ------------------------------------------- RFC 5348, sentence by sentence

/// Feeds one data packet and returns the feedback it triggered, if any.
fn rx_at(r: &mut TfrcReceiver, t: Instant, d: TfrcData) -> Option<TfrcFeedback> {
    r.handle_input(t, &d);
    r.poll_transmit(t)
}

/// Runs the receiver's feedback timer up to `t`, returning the reports.
fn rx_tick(r: &mut TfrcReceiver, t: Instant) -> Vec<TfrcFeedback> {
    let mut out = Vec::new();
    while let Some(w) = r.poll_timeout() {
        if w > t {
            break;
        }
        r.handle_timeout(w);
        out.extend(r.poll_transmit(w));
    }
    out
}

#[test]
fn rfc5348_6_3_1_first_interval_from_the_maximum_x_recv_so_far() {
    // "TFRC approximates this target rate, X_target, by the maximum value
    // of X_recv so far." A receiver in slow start: 50 packets per 100 ms
    // RTT (500 kB/s) for 1 s, then the rate doubles to 1 MB/s for 150 ms
    // and a packet is lost. The reports so far said at most 500 kB/s (the
    // doubled rate has not been reported yet), so the first interval must
    // give the equation rate 500 kB/s, not the 1 MB/s the current window
    // sees.
    let mut r = TfrcReceiver::new(ReceiverConfig::default());
    let mut seq = 0u64;
    let mut max_reported: f64 = 0.0;
    for i in 0..500u64 {
        let t = Instant(i * 2_000_000);
        for f in rx_tick(&mut r, t) {
            max_reported = max_reported.max(f.x_recv);
        }
        if let Some(f) = rx_at(&mut r, t, data(seq, t, 100)) {
            max_reported = max_reported.max(f.x_recv);
        }
        seq += 1;
    }
    assert!(rel(max_reported, 500_000.0) < 0.01, "{max_reported}");
    // 1 MB/s: a packet every 1 ms; seq 550 (50 ms in) is lost.
    for i in 0..150u64 {
        let t = Instant(1_000_000_000 + i * 1_000_000);
        for f in rx_tick(&mut r, t) {
            // The timer reports the faster rate only from here on; stop
            // before it does (150 ms > R = 100 ms would report it).
            max_reported = max_reported.max(f.x_recv);
        }
        if seq != 550 {
            rx_at(&mut r, t, data(seq, t, 100));
        }
        seq += 1;
        if r.loss_detector().loss_events() > 0 {
            break;
        }
    }
    assert_eq!(r.loss_detector().loss_events(), 1);
    let i1 = r.loss_intervals().closed()[0];
    // The synthetic interval is 1/p for the p at which the equation gives
    // X_target = max X_recv so far (t_RTO = 4R, b = 1).
    let want = 1.0 / tfrc_loss_rate_for(1000.0, 0.1, max_reported, 1.0, 0.4);
    assert!(rel(i1, want) < 1e-6, "I_1 {i1} want {want}");
    // The window's own rate (about 1 MB/s) would give a much longer one.
    let too_long = 1.0 / tfrc_loss_rate_for(1000.0, 0.1, 1_000_000.0, 1.0, 0.4);
    assert!(i1 < 0.5 * too_long, "{i1} vs {too_long}");
}

#[test]
fn rfc5348_6_3_1_first_interval_floor_is_half_a_packet_per_rtt() {
    // "The TFRC receiver uses 0.5/R packets per second as the minimum
    // value for X_target when initializing the first loss interval."
    assert!(rel(receiver::first_loss_target(0.0, 1000, ms(200)), 2500.0) < 1e-12);
    assert!(rel(receiver::first_loss_target(100.0, 1000, ms(200)), 2500.0) < 1e-12);
    assert!(rel(receiver::first_loss_target(9000.0, 1000, ms(200)), 9000.0) < 1e-12);
    assert!(rel(receiver::first_loss_target(f64::NAN, 1000, ms(200)), 2500.0) < 1e-12);
    // A loss detected before any report measured a rate (the first
    // report says X_recv = 0, §6.3): X_target is the floor, 2.5 kB/s for
    // s = 1000 and R = 200 ms. Seq 1 is lost, seq 2..4 reveal it at 40 ms.
    let mut r = TfrcReceiver::new(ReceiverConfig::default());
    for seq in [0u64, 2, 3, 4] {
        let t = at_ms(10 * seq);
        rx_at(&mut r, t, data(seq, t, 200));
    }
    assert_eq!(r.loss_detector().loss_events(), 1);
    let i1 = r.loss_intervals().closed()[0];
    let want = 1.0 / tfrc_loss_rate_for(1000.0, 0.2, 2500.0, 1.0, 0.8);
    assert!(rel(i1, want) < 1e-6, "I_1 {i1} want {want}");
}

#[test]
fn rfc5348_6_1_data_after_idle_is_answered_at_once_over_one_rtt() {
    // §6.1 (4): "If p <= p_prev and no feedback packet was sent when the
    // feedback timer last expired, cause the feedback timer to expire and
    // perform the actions described in Section 6.2." §6.2: "the feedback
    // timer is restarted to expire after R_m seconds", so with
    // XRecvInterval::Rtt X_recv covers about one R_m, never the whole
    // idle time.
    let mut r = TfrcReceiver::new(ReceiverConfig {
        x_recv_interval: XRecvInterval::Rtt,
        ..ReceiverConfig::default()
    });
    for i in 0..50u64 {
        let t = at_ms(10 * i);
        rx_tick(&mut r, t);
        rx_at(&mut r, t, data(i, t, 200));
    }
    // Silence for 10 s: the timer fires empty and sleeps.
    let reports = rx_tick(&mut r, at_ms(10_490));
    assert!(reports.len() <= 2);
    assert_eq!(r.poll_timeout(), None);
    let before = r.stats().feedback_sent;
    // One packet at 10.5 s: feedback at once (the old receiver waited an
    // interval and divided 1000 bytes by the 10 s of silence).
    let f = rx_at(&mut r, at_ms(10_500), data(50, at_ms(10_500), 200))
        .expect("feedback at the first packet after idle");
    assert_eq!(r.stats().feedback_sent, before + 1);
    // One packet over between R_m and 2 R_m: 2500..5000 B/s.
    assert!(
        (2500.0..=5000.0).contains(&f.x_recv),
        "X_recv {} after idle",
        f.x_recv
    );
    assert_eq!(r.poll_timeout(), Some(at_ms(10_700)));
}

/// Issue 34: packets that arrive less often than one per R_m (here one per
/// 0.83 ms, 1.2 MB/s, with R_m the 0.1 ms a packet carried from before the
/// queue built up). Each arrives after an empty expiry and is answered at
/// once (§6.1 step 4); with XRecvInterval::Rtt the report is about s/R_m
/// (5-10 MB/s, the 77 Mb/s of the tbf path), with the default,
/// everything since the last report, it is the arrival rate.
#[test]
fn sparse_arrivals_report_their_rate_since_the_last_report() {
    let run = |interval: XRecvInterval| {
        let mut r = TfrcReceiver::new(ReceiverConfig {
            x_recv_interval: interval,
            ..ReceiverConfig::default()
        });
        let gap = Duration::from_micros(833);
        let mut last = None;
        for i in 0..60u64 {
            let t = Instant(gap.as_nanos() * i);
            rx_tick(&mut r, t);
            let d = TfrcData {
                seq: i,
                len: 1000,
                ts: t,
                rtt: Some(Duration::from_micros(100)),
                t_rto: None,
            };
            if let Some(f) = rx_at(&mut r, t, d) {
                last = Some(f.x_recv);
            }
        }
        last.expect("reports")
    };
    let arrival_rate = 1000.0 / 833e-6;
    let since = run(XRecvInterval::SinceFeedback);
    assert!(
        rel(since, arrival_rate) < 0.01,
        "since the last report: {since} B/s, arrivals {arrival_rate} B/s"
    );
    let one_rtt = run(XRecvInterval::Rtt);
    assert!(
        one_rtt > 4.0 * arrival_rate,
        "one R_m: {one_rtt} B/s, arrivals {arrival_rate} B/s"
    );
}

#[test]
fn rfc5348_6_3_without_rtt_every_packet_is_answered() {
    // "If the first data packet does not contain an estimate R_i of the
    // round-trip time, then the receiver sends a feedback packet for every
    // arriving data packet until a data packet arrives containing an
    // estimate of the round-trip time."
    let mut r = TfrcReceiver::new(ReceiverConfig::default());
    let no_rtt = |seq: u64, t: Instant| TfrcData {
        seq,
        len: 1000,
        ts: t,
        rtt: None,
        t_rto: None,
    };
    for seq in 0..3u64 {
        let t = at_ms(300 * seq);
        assert!(rx_at(&mut r, t, no_rtt(seq, t)).is_some(), "packet {seq}");
    }
    // With an RTT, the next packet shortly after is not answered.
    assert!(rx_at(&mut r, at_ms(700), data(3, at_ms(700), 200)).is_none());
    assert!(rx_at(&mut r, at_ms(710), data(4, at_ms(710), 200)).is_none());
}

#[test]
fn rfc5348_4_4_nofeedback_uses_max_x_recv_set_infinity_at_first() {
    // §4.4: "X_recv = max (X_recv_set);" and §4.3: "recv_limit is set to
    // Infinity for the first two round-trip times". In the first two RTTs
    // max(X_recv_set) is Infinity, so X_Bps > 2*X_recv is false and the
    // rate limited by X_Bps is halved: Update_Limits(X_Bps/2), whatever
    // the last report said.
    let mut s = sender_after(5000.0, 0.01);
    let x_calc = s.stats().x_calc.unwrap();
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    // Update_Limits(X_Bps/2): X_recv_set = {X_Bps/4}; X = min(X_Bps, X_Bps/2).
    assert!(
        rel(s.x(), x_calc / 2.0) < 1e-12,
        "{} vs {}",
        s.x(),
        x_calc / 2.0
    );
    // Once Infinity has aged out, the same report binds through X_recv.
    let mut s = sender_in_ca(5000.0, 0.01);
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    assert!(rel(s.x(), 5000.0) < 1e-12, "{}", s.x());
}

#[test]
fn rfc5348_4_4_idle_in_slow_start_below_twice_recover_rate_keeps_x() {
    // "Else if (((p>0 && X_recv < recover_rate) or (p==0 && X < 2 *
    // recover_rate)), and sender has been idle ever since nofeedback timer
    // was set) { Do nothing; }" -- the p = 0 branch.
    let mut s = sender_after(0.0, 0.0);
    // X = initial_rate = 10 kB/s < 2 * recover_rate = 20 kB/s.
    let x = s.x();
    let t = s.nofeedback_deadline();
    s.handle_timeout(t);
    assert_eq!(s.x(), x, "idle: not halved");
    // Not idle: "Else if (p==0) { X = max(X/2, s/t_mbi); }".
    let t = s.nofeedback_deadline();
    drain(&mut s, t);
    s.handle_timeout(t);
    assert!(rel(s.x(), x / 2.0) < 1e-12);
}

#[test]
fn rfc5348_4_3_data_limited_interval_rules() {
    // §4.3 (4): "If (the entire interval covered by the feedback packet
    // was a data-limited interval) { If (the feedback packet reports a new
    // loss event or an increase in the loss event rate p) { Halve entries
    // in X_recv_set; X_recv = 0.85 * X_recv; Maximize X_recv_set();
    // recv_limit = max (X_recv_set); } Else { Maximize X_recv_set();
    // recv_limit = 2 * max (X_recv_set); } }"
    let run = |p2: f64| {
        let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
        // An application that offers one packet at a time: every send
        // empties the queue, so the sender is data-limited (§8.2.1).
        s.push_data(1000);
        s.poll_transmit(Instant::ZERO).unwrap();
        s.handle_input(at_ms(400), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.01));
        for k in 1..=4u64 {
            s.push_data(1000);
            let t = at_ms(400 * k);
            assert!(s.poll_transmit(t).is_some());
        }
        // A report covering (1200, 1600]: nothing sent with data waiting.
        s.handle_input(at_ms(2000), &fb(at_ms(1600), Duration::ZERO, 8000.0, p2));
        s
    };
    // p rose: recv_limit = max(X_recv_set) = 0.85 * 8000 (the halved
    // Infinity is dropped by Maximize).
    let s = run(0.02);
    assert!(
        rel(s.recv_limit() / 2.0, 0.85 * 8000.0) < 1e-12,
        "{}",
        s.recv_limit()
    );
    let x_bps = tfrc_rate(1000.0, 0.4, 0.02, 1.0, 1.6);
    assert!(rel(s.x(), x_bps.min(0.85 * 8000.0)) < 1e-12, "{}", s.x());
    // p unchanged: recv_limit = 2 * max(X_recv_set) = 16000.
    let s = run(0.01);
    assert!(rel(s.recv_limit(), 16_000.0) < 1e-12, "{}", s.recv_limit());
    // A bulk sender on the same reports is not data-limited: typical
    // branch, X_recv_set keeps Infinity for two RTTs.
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(400), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.01));
    drain(&mut s, at_ms(600));
    s.handle_input(at_ms(1000), &fb(at_ms(600), Duration::ZERO, 8000.0, 0.02));
    assert!(s.recv_limit().is_infinite());
}

#[test]
fn rfc5348_8_2_2_x_recv_set_keeps_two_rtts() {
    // "Delete from X_recv_set values older than two round-trip times."
    let mut s = sender_in_ca(50_000.0, 0.0001);
    // R = 400 ms. A smaller report 500 ms later keeps the larger one
    // (younger than 2R); 2R after the larger one, it is gone.
    drain(&mut s, at_ms(1400));
    s.handle_input(
        at_ms(1800),
        &fb(at_ms(1400), Duration::ZERO, 10_000.0, 0.0001),
    );
    assert!(rel(s.recv_limit(), 100_000.0) < 1e-12);
    drain(&mut s, at_ms(1800));
    s.handle_input(
        at_ms(2200),
        &fb(at_ms(1800), Duration::ZERO, 10_000.0, 0.0001),
    );
    assert!(rel(s.recv_limit(), 20_000.0) < 1e-12, "{}", s.recv_limit());
}

#[test]
fn rfc5348_4_5_damping_is_on_by_default_and_x_inst_has_a_floor() {
    // §4.5: "this modification SHOULD be implemented".
    assert!(SenderConfig::default().oscillation_damping);
    // "If (X_inst < s/t_mbi) X_inst = s/t_mbi;" -- a sender at the floor
    // whose RTT jumps does not pace below one packet per t_mbi.
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(100), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    drain(&mut s, at_ms(100));
    // p = 1: X = X_Bps, about 41 B/s; then an RTT sample 100x larger
    // drives X_Bps below s/t_mbi and the damping factor to about 0.2.
    s.handle_input(at_ms(200), &fb(at_ms(100), Duration::ZERO, 0.0, 1.0));
    assert!(s.x() < 50.0);
    drain(&mut s, at_ms(200));
    s.handle_input(at_ms(10_300), &fb(at_ms(200), Duration::ZERO, 0.0, 1.0));
    assert!(s.x_inst() >= 1000.0 / 64.0 - 1e-9, "{}", s.x_inst());
}

#[test]
fn rfc5348_4_3_rto_of_step_3_uses_x_before_the_update() {
    // Step 3 "RTO = max(4*R, 2*s/X)" comes before step 4 changes X, and
    // step 6 "Reset the nofeedback timer to expire after RTO seconds".
    // R = 100 ms; X = X_Bps(p = 1), about 41 B/s: the next report finds
    // 2s/X of about 48 s > 4R, even though it raises X.
    let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(100), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    drain(&mut s, at_ms(100));
    s.handle_input(at_ms(200), &fb(at_ms(100), Duration::ZERO, 0.0, 1.0));
    let x_old = tfrc_rate(1000.0, 0.1, 1.0, 1.0, 0.4);
    assert!(rel(s.x(), x_old) < 1e-12);
    drain(&mut s, at_ms(200));
    s.handle_input(at_ms(300), &fb(at_ms(200), Duration::ZERO, 1e6, 0.001));
    assert!(s.x() > 100_000.0);
    let rto = Duration::from_secs_f64(2000.0 / x_old);
    assert_eq!(s.nofeedback_deadline(), at_ms(300) + rto);
}

#[test]
fn rfc5348_8_3_t_delta_never_exceeds_half_an_rtt() {
    // §8.3: "t_delta = min(t_ipi, t_gran, rtt)/2". A coarse 1 s timer
    // granularity over a 10 ms RTT may send at most 5 ms early.
    let cfg = SenderConfig {
        t_gran: Duration::from_secs(1),
        ..SenderConfig::default()
    };
    let mut s = TfrcSender::new(cfg, Instant::ZERO);
    s.set_unlimited();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(10), &fb(Instant::ZERO, Duration::ZERO, 0.0, 0.0));
    // X = 4000 B/s / 0.01 s... initial_rate = 4000/0.01 = 400 kB/s,
    // t_ipi = 2.5 ms: t_delta = min(2.5, 1000, 10)/2 = 1.25 ms.
    drain(&mut s, at_ms(10));
    let due = s.poll_timeout().unwrap();
    assert!(due >= at_ms(10) + Duration::from_micros(1250), "{due:?}");
}
