//! Tests of the `ns2` profile (ns-2 2.35's Agent/TFRC and Agent/TFRCSink
//! defaults, tcp/tfrc.cc and tcp/tfrc-sink.cc).

use super::*;
use crate::equation::ns2::{b_to_p, p_to_b};
use crate::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at_ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}
fn ns2_sender() -> TfrcSender {
    let mut s = TfrcSender::new(
        SenderConfig {
            profile: Profile::Ns2,
            ..SenderConfig::default()
        },
        Instant::ZERO,
    );
    s.set_unlimited();
    s
}
fn report(ts_echo: Instant, x_recv: f64, p: f64) -> TfrcFeedback {
    TfrcFeedback {
        ts_echo,
        t_delay: Duration::ZERO,
        x_recv,
        p,
    }
}

#[test]
fn rfc5348_stays_the_default() {
    assert_eq!(SenderConfig::default().profile, Profile::Rfc5348);
    assert_eq!(ReceiverConfig::default().profile, Profile::Rfc5348);
    let d = Ns2Params::default();
    // tcl/lib/ns-default.tcl, Agent/TFRC.
    assert_eq!(
        (
            d.init_rate,
            d.tcp_tick,
            d.min_rto,
            d.df,
            d.ssmult,
            d.slow_increase
        ),
        (300.0, 0.1, 0.0, 0.95, 2.0, true)
    );
}

#[test]
fn starts_at_init_rate_300_bytes_per_second() {
    // TfrcAgent::start(): rate_ = InitRate_, a packet now, the next
    // size_/rate_ = 3.33 s later, the no-feedback timer at 2 size_/rate_.
    let mut s = ns2_sender();
    let d = s.poll_transmit(Instant::ZERO).unwrap();
    assert_eq!((d.seq, d.rtt, d.t_rto), (0, None, None));
    assert_eq!(s.stats().x, 300.0);
    assert_eq!(s.poll_transmit(at_ms(3333)), None);
    assert_eq!(s.poll_timeout(), Some(Instant(3_333_333_333)));
    assert_eq!(s.nofeedback_deadline(), Instant(6_666_666_667));
    assert_eq!(s.poll_transmit(Instant(3_333_333_333)).unwrap().seq, 1);
}

#[test]
fn first_report_sets_rfc3390_rate_sends_at_once_and_t_rto_from_ticks() {
    let mut s = ns2_sender();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(500), &report(Instant::ZERO, 0.0, 0.0));
    // slowstart(), round_id 1: rate_ = initial_rate() x size_/rtt_ =
    // 4 x 1000 / 0.5.
    assert_eq!(s.stats().x, 8000.0);
    assert_eq!(s.stats().rtt, Some(ms(500)));
    // nextpkt(): a packet at once, carrying rtt_ and tzero_.
    let d = s.poll_transmit(at_ms(500)).expect("nextpkt sends at once");
    assert_eq!(d.rtt, Some(ms(500)));
    // update_rtt with tcp_tick_ 0.1: t_rtt_ = 5 ticks, t_srtt_ = 5 << 3,
    // t_rttvar_ = 5 << 1, t_rtxcur_ = ((10 << 3) + 40) >> 3 = 15 ticks.
    let t_rto = d.t_rto.unwrap().as_secs_f64();
    assert!((t_rto - 1.5).abs() < 1e-9, "tzero_ {t_rto}");
    // The next packet s/rate later (damping factor 1 on the first sample).
    assert_eq!(s.poll_transmit(at_ms(624)), None);
    assert!(s.poll_transmit(at_ms(625)).is_some());
    // The no-feedback timer: max(2 rtt_, 2 size_/rate_) with the rate
    // before the report (300 B/s): 6.67 s.
    assert_eq!(
        s.nofeedback_deadline(),
        Instant(500_000_000 + 6_666_666_667)
    );
}

/// A sender out of slow start at 1 s with p = 0.01 (rate_ = rcvrate).
fn in_ca() -> TfrcSender {
    let mut s = ns2_sender();
    s.poll_transmit(Instant::ZERO).unwrap();
    s.handle_input(at_ms(500), &report(Instant::ZERO, 0.0, 0.0));
    s.handle_input(at_ms(1000), &report(at_ms(500), 8000.0, 0.01));
    s
}

#[test]
fn loss_ends_slow_start_at_the_equation_rate_without_the_2x_recv_cap() {
    let s = in_ca();
    // rtt_ = 0.95 x 0.5 + 0.05 x 0.5; tzero_ from the ticks (second
    // sample equal to the first: srtt 5 ticks, rttvar decays to 10 - 2).
    let x = s.stats().x;
    let expect = p_to_b(
        0.01,
        0.5,
        s.stats().x_calc.map(|_| 0.0).unwrap(),
        1000.0,
        1.0,
    );
    assert!(x > 2.0 * 8000.0, "X {x} is not capped at 2 X_recv");
    // The equation with this tzero_ lies between t_RTO = 0 and 4R.
    assert!(
        x < expect && x > p_to_b(0.01, 0.5, 2.0, 1000.0, 1.0),
        "X {x}"
    );
}

#[test]
fn congestion_avoidance_adds_at_most_two_packets_per_rtt_per_report() {
    let mut s = in_ca();
    let x0 = s.stats().x;
    // p falls: the equation allows far more, and X_recv does not limit
    // (maxrate_ = 2 X_recv is large). increase_rate(): rate_ += size_/rtt_
    // x min(2, elapsed/rtt_), the elapsed time since the last change
    // (last_change_ was set by slowstart() at 0.5 s: leaving slow start
    // does not set it).
    s.handle_input(at_ms(1500), &report(at_ms(1000), 1e6, 1e-5));
    let dx = s.stats().x - x0;
    assert!(
        (dx - 2.0 * 1000.0 / 0.5).abs() < 1e-6,
        "two RTTs: +2 s/R, got {dx}"
    );
    let x1 = s.stats().x;
    s.handle_input(at_ms(2000), &report(at_ms(1500), 1e6, 1e-5));
    let dx = s.stats().x - x1;
    assert!((dx - 1000.0 / 0.5).abs() < 1e-6, "one RTT: +s/R, got {dx}");
    let x2 = s.stats().x;
    s.handle_input(at_ms(4000), &report(at_ms(3500), 1e6, 1e-5));
    let dx = s.stats().x - x2;
    assert!(
        (dx - 2.0 * 1000.0 / 0.5).abs() < 1e-6,
        "capped at 2 s/R, got {dx}"
    );
    // ... and never above rcvrate: X_calc at p = 1e-5 is far above.
    assert!(s.stats().x < s.stats().x_calc.unwrap());
}

#[test]
fn higher_loss_goes_straight_to_the_equation_capped_at_2_x_recv() {
    let mut s = in_ca();
    // decrease_rate(): rate_ = rcvrate, capped at max(maxrate_, s/rtt_)
    // (maxHeavyRounds_ 0).
    s.handle_input(at_ms(1500), &report(at_ms(1000), 2000.0, 0.05));
    assert!(s.stats().x_calc.unwrap() > 4000.0);
    assert_eq!(s.stats().x, 4000.0);
    // The equation now above X: increase_rate(), +s/R one RTT later.
    s.handle_input(at_ms(2000), &report(at_ms(1500), 1e5, 0.05));
    assert_eq!(s.stats().x, 6000.0);
}

#[test]
fn no_feedback_halves_the_rate_and_sends_at_once() {
    let mut s = in_ca();
    while s.poll_transmit(at_ms(1000)).is_some() {}
    let x = s.stats().x;
    let t = s.nofeedback_deadline();
    // max(2 rtt_, 2 size_/rate_) after the last report.
    assert_eq!(t, at_ms(2000));
    // Send the paced packets up to the expiry.
    while let Some(w) = s.poll_timeout() {
        if w >= t {
            break;
        }
        s.handle_timeout(w);
        let _ = s.poll_transmit(w);
    }
    s.handle_timeout(t);
    assert_eq!(s.stats().x, x / 2.0);
    assert_eq!(s.stats().nofeedback_expiries, 1);
    assert!(s.poll_transmit(t).is_some(), "nextpkt() sends at once");
}

#[test]
fn formula_h_caps_and_b_to_p_is_within_five_percent() {
    assert_eq!(p_to_b(0.0, 0.5, 2.0, 1000.0, 1.0), 25e6);
    assert_eq!(p_to_b(1e-12, 1e-6, 0.0, 1000.0, 1.0), 25e6);
    // min(1, 3 sqrt(3p/8)) in the second term: at p = 0.5 it is 1.
    let x = p_to_b(0.5, 0.5, 2.0, 1000.0, 1.0);
    let den = 0.5 * (2.0f64 * 0.5 / 3.0).sqrt() + 2.0 * 0.5 * (1.0 + 32.0 * 0.25);
    assert!((x - 1000.0 / den).abs() < 1e-9);
    for b in [2e3, 5e4, 3e5, 1.2e6] {
        let p = b_to_p(b, 0.5, 0.6, 1000.0, 1.0);
        let back = p_to_b(p, 0.5, 0.6, 1000.0, 1.0);
        assert!(
            back > 0.95 * b && back < 1.05 * b,
            "b {b} p {p} back {back}"
        );
    }
}

#[test]
fn receiver_first_loss_interval_from_packets_in_the_last_rtt_and_senders_tzero() {
    let mut r = TfrcReceiver::new(ReceiverConfig {
        profile: Profile::Ns2,
        ndupack: 1,
        ..ReceiverConfig::default()
    });
    let tzero = Duration::from_millis(800);
    let data = |seq: u64, t: Instant| TfrcData {
        seq,
        len: 1000,
        ts: t,
        rtt: Some(ms(500)),
        t_rto: Some(tzero),
    };
    // 100 packets per second for 2 s, then seq 200 is lost.
    for seq in 0..200u64 {
        let t = at_ms(10 * seq);
        r.handle_input(t, &data(seq, t));
        let _ = r.poll_transmit(t);
        r.handle_timeout(t);
    }
    let t = at_ms(2010);
    r.handle_input(t, &data(201, t));
    // adjust_history(): est_thput() = packets received in the last R
    // (rtvec_ + rtt_ > last: 2010 ms back to 1520 ms, 50 packets) / R,
    // p = b_to_p(100 x 1000, 0.5, tzero_ 0.8, 1000, 1), interval (int)(1/p).
    let p = b_to_p(50.0 / 0.5 * 1000.0, 0.5, 0.8, 1000.0, 1.0);
    let samples = r.ns2_sink().samples().to_vec();
    assert_eq!(samples, [0, (1.0 / p).trunc() as i64], "{samples:?}");
    // The report sent at once carries that p itself (nextpkt(p)), not
    // 1/interval.
    let fb = r.poll_transmit(t).expect("a report at the first loss");
    assert_eq!(fb.p, p);
}

#[test]
fn receiver_reports_once_per_rtt_on_arrival_and_at_once_on_a_loss() {
    let mut r = TfrcReceiver::new(ReceiverConfig {
        profile: Profile::Ns2,
        ndupack: 1,
        ..ReceiverConfig::default()
    });
    let data = |seq: u64, t: Instant| TfrcData {
        seq,
        len: 1000,
        ts: t,
        rtt: Some(ms(100)),
        t_rto: Some(ms(400)),
    };
    let mut sent = Vec::new();
    for seq in 0..100u64 {
        if seq == 50 {
            continue; // lost
        }
        let t = at_ms(7 * seq);
        r.handle_timeout(t);
        if r.poll_transmit(t).is_some() {
            sent.push(7 * seq);
        }
        r.handle_input(t, &data(seq, t));
        if r.poll_transmit(t).is_some() {
            sent.push(7 * seq);
        }
    }
    // A report when a packet arrives R = 100 ms or more after the last
    // one (not at the first packet: it carries an RTT, so no UrgentFlag):
    // every 15th packet (105 ms), and at 357 ms at once on the loss of
    // packet 50 (seq 51 reveals it, numPkts_ 1).
    assert_eq!(sent[..6], [105, 210, 315, 357, 462, 567]);
    assert!(r.stats().p > 0.0);
}
