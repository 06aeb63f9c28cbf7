//! HyStart (Linux `net/ipv4/tcp_cubic.c`) and HyStart++ (RFC 9406) against
//! their sources, then through a whole sender.

use super::hystart::{SlowStartState, SsAck};
use super::*;
use crate::time::{Duration, Instant};

fn us(t: u64) -> Instant {
    Instant(t * 1_000)
}

/// One ACK at `now_us` acknowledging through `una`, `nxt` sent, RTT
/// sample `rtt_us`.
fn ack(now_us: u64, una: u64, nxt: u64, rtt_us: u64) -> SsAck {
    SsAck {
        now: us(now_us),
        rtt: Some(Duration::from_micros(rtt_us)),
        srtt: Some(Duration::from_micros(rtt_us)),
        snd_una: una,
        snd_nxt: nxt,
        mss: 1000,
    }
}

fn linux(cfg: HystartConfig) -> SlowStartState {
    SlowStartState::new(SlowStart::Hystart(cfg))
}

fn delay_only() -> HystartConfig {
    HystartConfig {
        ack_train: false,
        ..HystartConfig::default()
    }
}

fn train_only() -> HystartConfig {
    HystartConfig {
        delay: false,
        ..HystartConfig::default()
    }
}

#[test]
fn linux_delay_exit_needs_eight_samples_and_clamped_threshold() {
    // tcp_cubic.c hystart_update(), HYSTART_DELAY: after
    // HYSTART_MIN_SAMPLES (8) samples of a round, exit when the round's
    // smallest RTT exceeds delay_min + clamp(delay_min/8, 4 ms, 16 ms).
    // delay_min 100 ms: threshold 12.5 ms. ACKs 5 ms apart (no train).
    for (rtt_us, exits) in [(112_500, false), (112_501, true)] {
        let mut s = linux(delay_only());
        // Round 1 (snd_una 1 > end_seq 0): delay_min = 100 ms.
        assert_eq!(s.on_ack(20.0, ack(0, 1, 40, 100_000)), None);
        // Still round 1 (end_seq = 40): eight larger samples fill
        // sample_cnt; none may exit before the ninth.
        for i in 0..7 {
            assert_eq!(
                s.on_ack(20.0, ack(5_000 * (i + 1), 2 + i, 40, rtt_us)),
                None
            );
        }
        // The ninth sample of the round compares: curr_rtt is the
        // round's minimum, 100 ms, so no exit in round 1.
        assert_eq!(s.on_ack(20.0, ack(40_000, 9, 40, rtt_us)), None);
        // Round 2: snd_una 41 > 40; every sample is rtt_us.
        let mut exit = None;
        for i in 0..9 {
            exit = exit.or(s.on_ack(30.0, ack(200_000 + 5_000 * i, 41 + i, 80, rtt_us)));
            if i < 8 {
                assert_eq!(exit, None, "no exit before the ninth sample (i = {i})");
            }
        }
        // tp->snd_ssthresh = tcp_snd_cwnd(tp).
        assert_eq!(exit, exits.then_some(30.0), "rtt {rtt_us} us");
    }
}

#[test]
fn linux_delay_threshold_clamps_to_4_and_16_ms() {
    // HYSTART_DELAY_THRESH(delay_min >> 3) clamped to [4 ms, 16 ms]:
    // delay_min 10 ms -> 4 ms (not 1.25), 400 ms -> 16 ms (not 50).
    for (base, below, above) in [(10_000, 14_000, 14_001), (400_000, 416_000, 416_001)] {
        for (rtt, exits) in [(below, false), (above, true)] {
            let mut s = linux(delay_only());
            s.on_ack(20.0, ack(0, 1, 10, base));
            let mut exit = None;
            for i in 0..9 {
                exit = exit.or(s.on_ack(20.0, ack(1_000_000 + 5_000 * i, 11 + i, 50, rtt)));
            }
            assert_eq!(exit.is_some(), exits, "delay_min {base} rtt {rtt}");
        }
    }
}

#[test]
fn linux_ack_train_exit_after_half_delay_min() {
    // HYSTART_ACK_TRAIN: ACKs at most hystart_ack_delta_us (2 ms) apart
    // since the round began; exit once the train is longer than
    // (delay_min + hystart_ack_delay())/2 (not paced). ack_delay =
    // min(1 ms, 4·65536 B / (2·cwnd·mss/srtt)) = 1 ms here, so the
    // threshold is (100 + 1)/2 = 50.5 ms.
    let mut s = linux(train_only());
    assert_eq!(s.on_ack(20.0, ack(0, 1, 100, 100_000)), None);
    let mut exit_at = None;
    for i in 1..100u64 {
        if s.on_ack(20.0, ack(1_000 * i, 1 + i, 100, 100_000))
            .is_some()
        {
            exit_at = Some(i);
            break;
        }
    }
    assert_eq!(
        exit_at,
        Some(51),
        "first ACK more than 50.5 ms into the train"
    );
    // Paced (hystart's threshold not halved): the train must pass 101 ms.
    let mut s = linux(HystartConfig {
        paced: true,
        ..train_only()
    });
    s.on_ack(20.0, ack(0, 1, 200, 100_000));
    let exit_at = (1..200u64).find(|&i| {
        s.on_ack(20.0, ack(1_000 * i, 1 + i, 200, 100_000))
            .is_some()
    });
    assert_eq!(exit_at, Some(102));
}

#[test]
fn linux_ack_train_breaks_on_a_gap_and_waits_for_low_window() {
    // A gap of more than 2 ms ends the train for the round: last_ack is
    // no longer updated, every later ACK of the round fails the test.
    let mut s = linux(train_only());
    s.on_ack(20.0, ack(0, 1, 100, 100_000));
    for i in 1..=10u64 {
        s.on_ack(20.0, ack(1_000 * i, 1 + i, 100, 100_000));
    }
    for i in 0..80u64 {
        // 2.001 ms after the train's last ACK, then ACKs 1 ms apart.
        let t = 12_001 + 1_000 * i;
        assert_eq!(s.on_ack(20.0, ack(t, 12 + i, 100, 100_000)), None);
    }
    // hystart_low_window (16): below it, cubictcp_acked() never calls
    // hystart_update().
    let mut s = linux(train_only());
    s.on_ack(15.0, ack(0, 1, 100, 100_000));
    assert!((1..99u64).all(|i| s
        .on_ack(15.0, ack(1_000 * i, 1 + i, 100, 100_000))
        .is_none()));
}

/// Slow start of an ACK-per-segment flow through one bottleneck: base
/// RTT 500 ms, 1.2 ms a segment at the bottleneck (the `geo` preset's
/// 10 Mb/s for 1500-byte packets), no loss, initial window 10, cwnd + 1
/// per ACK. Each flight leaves the sender at twice the bottleneck rate, so
/// the RTT grows within a flight by 0.6 ms a segment and falls back to the
/// base at the next flight's first segment. Returns the cwnd at which
/// `cfg`'s HyStart ends slow start (None: not within 2000 segments).
fn geo_slow_start_exit(cfg: HystartConfig) -> Option<f64> {
    const BASE: u64 = 500_000_000;
    const TX: u64 = 1_200_000;
    let mut s = linux(cfg);
    let (mut sent, mut acked_at, mut rtt) = (Vec::new(), Vec::new(), Vec::new());
    let mut link_free = 0u64;
    let mut send = |now: u64, sent: &mut Vec<u64>, acked_at: &mut Vec<u64>, rtt: &mut Vec<u64>| {
        let out = now.max(link_free) + TX;
        link_free = out;
        sent.push(now);
        acked_at.push(out + BASE - TX);
        rtt.push(out + BASE - TX - now);
    };
    for _ in 0..10 {
        send(0, &mut sent, &mut acked_at, &mut rtt);
    }
    let mut cwnd = 10.0;
    let mut i = 0;
    while i < 2000 {
        let now = acked_at[i];
        let a = SsAck {
            now: Instant(now),
            rtt: Some(Duration(rtt[i])),
            srtt: Some(Duration(BASE)),
            snd_una: i as u64 + 1,
            snd_nxt: sent.len() as u64,
            mss: 1448,
        };
        if s.on_ack(cwnd, a).is_some() {
            return Some(cwnd);
        }
        cwnd += 1.0;
        while (sent.len() as f64) < i as f64 + 1.0 + cwnd {
            send(now, &mut sent, &mut acked_at, &mut rtt);
        }
        i += 1;
    }
    None
}

#[test]
fn linux_rounds_start_below_low_window_since_6_14() {
    // Linux commit 25c1a9ca53db ("tcp_cubic: fix incorrect HyStart round
    // start detection"): hystart_update() resets the round before it
    // tests hystart_low_window, so rounds follow the flights from the
    // first ACK and a round's first samples are a flight's first, at
    // the base RTT. The delay test then waits for a queue that outlasts
    // a flight: a flight longer than the 500 ms round trip at the
    // bottleneck, past 416 segments.
    // (The kernel, 6.18, through `satcc shell` on `geo`:
    // TCPHystartDelayCwnd 1289.)
    let exit = geo_slow_start_exit(delay_only()).expect("exits");
    assert!(
        (1200.0..1400.0).contains(&exit),
        "6.14+: delay exit at cwnd {exit}"
    );
    // Linux 5.16-6.13 (commit 4e1fddc98d25): the first round starts at
    // the ACK that brings cwnd to 16, mid-flight, and so does every
    // later one; its 8 first samples carry more than 16 ms of queue
    // (27 segments into a flight) well before the pipe is full. satcc
    // ran this until 2026-11-27 and left slow start at cwnd 136 on `geo`.
    let old = geo_slow_start_exit(HystartConfig {
        rounds_below_low_window: false,
        ..delay_only()
    })
    .expect("exits");
    assert!(
        (100.0..200.0).contains(&old),
        "5.16-6.13: delay exit at cwnd {old}"
    );
}

#[test]
fn linux_timeout_resets_found_and_delay_min() {
    // cubictcp_state(TCP_CA_Loss): bictcp_reset() clears found and
    // delay_min, so HyStart runs again in the slow start after a timeout;
    // a fast recovery leaves them.
    let mut s = linux(delay_only());
    s.on_ack(20.0, ack(0, 1, 10, 100_000));
    let mut exit = None;
    for i in 0..9 {
        exit = exit.or(s.on_ack(20.0, ack(200_000 + 5_000 * i, 11 + i, 50, 130_000)));
    }
    assert_eq!(exit, Some(20.0));
    // found: no second exit.
    s.on_congestion();
    assert!((0..20u64).all(|i| s
        .on_ack(20.0, ack(400_000 + 5_000 * i, 51 + i, 90, 200_000))
        .is_none()));
    s.on_rto();
    // delay_min is now the next sample (300 ms): 130 ms later samples
    // exit again, measured from it.
    s.on_ack(20.0, ack(1_000_000, 100, 110, 300_000));
    let mut exit = None;
    for i in 0..9 {
        exit = exit.or(s.on_ack(25.0, ack(2_000_000 + 5_000 * i, 111 + i, 150, 317_000)));
    }
    assert_eq!(exit, Some(25.0));
}

fn pp() -> SlowStartState {
    SlowStartState::new(SlowStart::HystartPp(HystartPpConfig::default()))
}

/// One round of `n` ACKs with RTT `rtt_us`, ending the previous round
/// (snd_una passes its windowEnd); returns any ssthresh set.
fn pp_round(
    s: &mut SlowStartState,
    round: u64,
    n: u64,
    rtt_us: u64,
    cwnd: &mut f64,
) -> Option<f64> {
    let mut out = None;
    for i in 0..n {
        // Round r sends segments [100 r, 100 r + 100): windowEnd = 100 r
        // + 100 (SND.NXT at the round's first ACK).
        let a = ack(
            round * 200_000 + i * 1_000,
            round * 100 + 1 + i,
            round * 100 + 100,
            rtt_us,
        );
        if let Some(ss) = s.on_ack(*cwnd, a) {
            out = Some(ss);
        }
        *cwnd += s.increase(1);
    }
    out
}

#[test]
fn hystart_pp_enters_css_on_delay_increase_and_ca_after_css_rounds() {
    let mut s = pp();
    let mut cwnd = 10.0;
    // RFC 9406 §4.2: round 1 sets lastRoundMinRTT (100 ms) for round 2.
    assert_eq!(pp_round(&mut s, 0, 10, 100_000, &mut cwnd), None);
    // RttThresh = max(4 ms, min(100/8, 16) ms) = 12.5 ms: 112.4 ms stays
    // in slow start (+1 per ACK).
    let c0 = cwnd;
    assert_eq!(pp_round(&mut s, 1, 10, 112_400, &mut cwnd), None);
    assert_eq!(cwnd - c0, 10.0);
    // currentRoundMinRTT >= lastRoundMinRTT + RttThresh (112.4 + 14.05):
    // CSS after N_RTT_SAMPLE (8) samples; the ACKs after it add
    // 1/CSS_GROWTH_DIVISOR.
    let c0 = cwnd;
    assert_eq!(pp_round(&mut s, 2, 10, 126_500, &mut cwnd), None);
    assert_eq!(cwnd - c0, 8.0 + 2.0 / 4.0);
    // CSS_ROUNDS (5): the fifth round ending in CSS sets ssthresh = cwnd.
    let mut exit = None;
    for r in 3..=7 {
        exit = exit.or(pp_round(&mut s, r, 10, 126_500, &mut cwnd));
        if r < 7 {
            assert_eq!(exit, None, "round {r}");
        }
    }
    assert!(exit.is_some(), "CSS ends after CSS_ROUNDS rounds");
}

#[test]
fn hystart_pp_spurious_exit_returns_to_slow_start() {
    let mut s = pp();
    let mut cwnd = 10.0;
    pp_round(&mut s, 0, 10, 100_000, &mut cwnd);
    pp_round(&mut s, 1, 10, 120_000, &mut cwnd);
    // In CSS now (baseline 120 ms): +0.25 per ACK.
    let c0 = cwnd;
    pp_round(&mut s, 2, 1, 120_000, &mut cwnd);
    assert_eq!(cwnd - c0, 0.25);
    // §4.2: currentRoundMinRTT < cssBaselineMinRtt after N_RTT_SAMPLE
    // samples: "the slow start exit was spurious", back to +1 per ACK.
    let mut cwnd2 = cwnd;
    pp_round(&mut s, 3, 10, 110_000, &mut cwnd2);
    let c0 = cwnd2;
    pp_round(&mut s, 3, 1, 110_000, &mut cwnd2);
    assert_eq!(cwnd2 - c0, 1.0);
}

#[test]
fn hystart_pp_limits_growth_to_l_and_ends_on_loss() {
    // §4.2: cwnd += min(N, L·SMSS), L = 8 unpaced.
    let s = pp();
    assert_eq!(s.increase(20), 8.0);
    assert_eq!(s.increase(3), 3.0);
    // §4.2/§4.3: a loss ends HyStart++; the later slow starts are
    // RFC 5681's (no CSS, no exit).
    let mut s = pp();
    let mut cwnd = 10.0;
    pp_round(&mut s, 0, 10, 100_000, &mut cwnd);
    s.on_congestion();
    assert_eq!(pp_round(&mut s, 1, 10, 200_000, &mut cwnd), None);
    assert_eq!(s.increase(1), 1.0);
    // RFC 5681's one segment per ACK, not L.
    assert_eq!(s.increase(20), 1.0);
}

/// A whole CUBIC sender over a 1000-segment/s bottleneck with an
/// unbounded queue and 100 ms of propagation (BDP 100 segments): no loss
/// ever ends slow start, so RFC 5681's runs until the cap, while HyStart
/// and HyStart++ set ssthresh from the queueing delay.
#[test]
fn sender_leaves_slow_start_near_the_bdp_with_hystart() {
    let run = |ss: SlowStart| -> (f64, f64) {
        let cfg = SenderConfig {
            variant: Variant::Sack,
            initial_window: 10,
            max_window: 100_000,
            initial_rwnd: 100_000,
            growth: Growth::Cubic(CubicConfig {
                slow_start: ss,
                ..CubicConfig::default()
            }),
            ..SenderConfig::default()
        };
        let mut s = TcpSender::new(cfg, us(0));
        s.set_unlimited();
        // (arrival of the ACK at the sender, ack number, echoed send time)
        let mut acks: std::collections::VecDeque<(u64, u64, Instant)> = Default::default();
        let mut link_free = 0u64; // µs
        let mut now = 0u64;
        let mut peak_ss = f64::INFINITY;
        while now < 6_000_000 {
            while let Some(seg) = s.poll_transmit(us(now)) {
                // 1 ms per segment at the bottleneck, 50 ms each way.
                let depart = link_free.max(now + 50_000) + 1_000;
                link_free = depart;
                acks.push_back((depart + 50_000, seg.seq + 1, seg.ts));
            }
            let Some(&(t, a, ts)) = acks.front() else {
                break;
            };
            acks.pop_front();
            now = t;
            let ack = TcpAck {
                ack: a,
                wnd: 100_000,
                ts_echo: ts,
                sack: [SackBlock::default(); MAX_SACK_BLOCKS],
                sack_len: 0,
                dummy_echo: false,
            };
            s.handle_input(us(now), &ack);
            peak_ss = peak_ss.min(s.stats().ssthresh);
        }
        assert_eq!(s.stats().retransmits, 0);
        (peak_ss, s.stats().cwnd)
    };
    let (ss, std_cwnd) = run(SlowStart::Standard);
    assert!(ss > 1e9, "standard: ssthresh {ss}");
    assert!(
        std_cwnd > 4000.0,
        "standard slow start ran on: cwnd {std_cwnd}"
    );
    // HyStart's ACK train: out of slow start within [BDP/2, 2 BDP].
    let (ss, cwnd) = run(SlowStart::Hystart(HystartConfig::default()));
    assert!((50.0..=200.0).contains(&ss), "hystart: ssthresh {ss}");
    assert!(cwnd < 300.0, "hystart: cwnd {cwnd}");
    // HyStart++: CSS once the round's minimum RTT rises (the queue
    // outlives a round: cwnd above the BDP), congestion avoidance after
    // CSS_ROUNDS rounds of it, each longer as the queue grows.
    let (ss, cwnd) = run(SlowStart::HystartPp(HystartPpConfig::default()));
    assert!((100.0..=1500.0).contains(&ss), "hystart++: ssthresh {ss}");
    assert!(cwnd < std_cwnd / 2.0, "hystart++: cwnd {cwnd}");
}

#[test]
fn linux_initial_growth_floors_cubic_at_one_twentieth_per_ack_before_a_loss() {
    use super::growth::{AckInfo, GrowthState};
    let info = |ms: u64| AckInfo {
        now: Instant(ms * 1_000_000),
        acked: 1,
        srtt: Some(Duration::from_millis(500)),
        rtt: Some(Duration::from_millis(500)),
        snd_una: 0,
        snd_nxt: 0,
        mss: 1000,
        open: true,
    };
    let cfg = |on: bool| {
        Growth::Cubic(CubicConfig {
            linux_initial_growth: on,
            reno_friendly: false,
            ..CubicConfig::default()
        })
    };
    // Congestion avoidance at cwnd 200 with no loss yet (ssthresh set by
    // HyStart): the epoch's first ACKs, K = 0, t ≈ 0, so RFC 9438's
    // target is cwnd + C·RTT³ ≈ +0.05 per RTT.
    let (mut rfc, mut linux) = (GrowthState::new(cfg(false)), GrowthState::new(cfg(true)));
    let (mut a, mut b) = (200.0, 200.0);
    for i in 0..200 {
        a = rfc.on_ack(a, 100.0, false, info(i));
        b = linux.on_ack(b, 100.0, false, info(i));
    }
    assert!(a - 200.0 < 0.5, "RFC 9438 from K = 0: {a}");
    // tcp_cubic.c: cnt <= 20 while last_max_cwnd == 0: +1/20 per ACK.
    assert!((b - 210.0).abs() < 0.01, "Linux: {b}");
    // After a fast recovery (last_max_cwnd set) the floor is gone: at
    // the plateau (cwnd = W_max, t = K) both grow by C·RTT³/cwnd alone.
    rfc.on_congestion(200, 210.0);
    linux.on_congestion(200, 210.0);
    let a = rfc.on_ack(210.0, 100.0, false, info(1_000));
    let b = linux.on_ack(210.0, 100.0, false, info(1_000));
    assert!(b - 210.0 < 1.0 / 20.0 && a == b, "{a} {b}");
    // A timeout resets it (cubictcp_state(TCP_CA_Loss)).
    linux.on_rto(10, 147.0);
    let c = linux.on_ack(10.0, 7.0, false, info(2_000));
    assert!((c - 10.05).abs() < 1e-9, "{c}");
}
