//! Unit tests of the STFRC controller, and closed-loop tests against a toy
//! Saratoga transfer over a deterministic link model.

use std::collections::VecDeque;

use super::*;
use crate::equation::tfrc_rate;
use crate::rng::Rng;

const S: u32 = 1000;

fn ms(x: u64) -> Instant {
    Instant(x * 1_000_000)
}

fn cfg() -> StfrcConfig {
    StfrcConfig {
        segment_size: S,
        ..StfrcConfig::default()
    }
}

fn status(irt: u64, holes: &[(u64, u64)]) -> StatusInfo<'_> {
    StatusInfo {
        progress: holes.iter().map(|h| h.0).min().unwrap_or(0),
        in_response_to: irt,
        holes,
        holes_incomplete: false,
        voluntary: false,
        echoed_timestamp: None,
    }
}

/// Sends packets `from..to` (offsets `k*S`) at 1 ms spacing starting at
/// `t0` ms; the listed indices request a STATUS.
fn send_run(c: &mut StfrcController, t0: u64, from: u64, to: u64, req: &[u64]) {
    for (i, k) in (from..to).enumerate() {
        c.on_data_sent(ms(t0 + i as u64), k * u64::from(S), S, req.contains(&k));
    }
}

#[test]
fn dummy_numbers_per_transmission_and_history_bounded() {
    let mut c = StfrcController::new(cfg(), ms(0));
    for k in 0..10u64 {
        let d = c.on_data_sent(ms(k), k * 1000, S, k == 0 || k == 9);
        assert_eq!(d, k);
    }
    // A retransmission of offset 3000 gets a new number.
    assert_eq!(c.on_data_sent(ms(10), 3000, S, false), 10);
    assert_eq!(c.stats().history_len, 11);
    // The first request's STATUS closes the cycle [0, 0].
    assert!(c.on_status(ms(100), &status(0, &[])));
    assert_eq!(c.last_cycle().map(|r| (r.first, r.last)), Some((0, 0)));
    assert_eq!(c.stats().history_len, 10);
    // The second closes [1, 9]; only the retransmission is left.
    assert!(c.on_status(ms(110), &status(9000, &[])));
    assert_eq!(c.last_cycle().map(|r| (r.first, r.last)), Some((1, 9)));
    assert_eq!(c.stats().history_len, 1);

    // Without any STATUS the history stops at its cap.
    let mut c = StfrcController::new(
        StfrcConfig {
            max_history: 16,
            ..cfg()
        },
        ms(0),
    );
    c.on_data_sent(ms(0), 0, S, true);
    for k in 1..100u64 {
        c.on_data_sent(ms(k), k * 1000, S, false);
    }
    assert_eq!(c.stats().history_len, 16);
    assert_eq!(c.stats().history_dropped, 84);
    // The request went with the forgotten packets: its STATUS is unmatched.
    assert!(!c.on_status(ms(200), &status(0, &[])));
    assert_eq!(c.stats().status_unmatched, 1);
}

#[test]
fn a_cycle_covers_the_packets_up_to_the_answered_request() {
    let mut c = StfrcController::new(cfg(), ms(0));
    send_run(&mut c, 0, 0, 20, &[9]);
    // Packets 10..20 were sent after the request: not in this cycle, even
    // if their bytes are reported missing (they may simply not have
    // arrived yet).
    assert!(c.on_status(ms(100), &status(9000, &[(4000, 5000), (15_000, 16_000)])));
    let r = c.last_cycle().unwrap().clone();
    assert_eq!((r.first, r.last, r.periods, r.packets), (0, 9, 1, 10));
    assert_eq!(r.lost, vec![4]);
    assert_eq!(r.bytes_received, 9000);
    assert_eq!(c.stats().history_len, 10);
}

#[test]
fn lost_request_merges_periods() {
    let mut c = StfrcController::new(cfg(), ms(0));
    // Requests on 4, 9 and 14; the DATA carrying the second is lost, so
    // the receiver never answers it and reports its bytes as a hole.
    send_run(&mut c, 0, 0, 20, &[4, 9, 14]);
    assert!(c.on_status(ms(100), &status(4000, &[])));
    assert!(c.on_status(ms(114), &status(14_000, &[(9000, 10_000)])));
    let r = c.last_cycle().unwrap();
    assert_eq!((r.first, r.last, r.periods), (5, 14, 2));
    assert_eq!(r.lost, vec![9]);
    assert_eq!(c.stats().periods_merged, 1);
    assert_eq!(c.stats().cycles, 2);
}

#[test]
fn lost_status_merges_periods_and_late_status_is_ignored() {
    let mut c = StfrcController::new(cfg(), ms(0));
    send_run(&mut c, 0, 0, 20, &[4, 9, 14]);
    assert!(c.on_status(ms(100), &status(4000, &[])));
    // The request on 9 arrived but its STATUS (reporting packet 7 lost)
    // was lost; the next STATUS reports 7 again and 12 too.
    let holes = [(7000, 8000), (12_000, 13_000)];
    assert!(c.on_status(ms(114), &status(14_000, &holes)));
    let r = c.last_cycle().unwrap().clone();
    assert_eq!((r.first, r.last, r.periods), (5, 14, 2));
    assert_eq!(r.lost, vec![7, 12]);
    // The STATUS for 9 turns up late: its period is already merged.
    assert!(!c.on_status(ms(120), &status(9000, &[(7000, 8000)])));
    assert_eq!(c.stats().status_unmatched, 1);
    assert_eq!(c.last_cycle().unwrap(), &r);
    assert_eq!(c.stats().packets_lost, 2);
}

#[test]
fn echoed_timestamp_identifies_the_request_when_offsets_repeat() {
    let mut c = StfrcController::new(cfg(), ms(0));
    // Offset 0 is sent twice, both times with a request.
    c.on_data_sent(ms(0), 0, S, true); // d0
    c.on_data_sent(ms(1), 1000, S, false); // d1
    c.on_data_sent(ms(2), 0, S, true); // d2
    c.on_data_sent(ms(3), 2000, S, false); // d3
                                           // The first request's STATUS was lost; this one answers the second.
    let st = StatusInfo {
        echoed_timestamp: Some(ms(2)),
        ..status(0, &[])
    };
    assert!(c.on_status(ms(102), &st));
    let r = c.last_cycle().unwrap();
    assert_eq!((r.first, r.last, r.periods), (0, 2, 2));
    assert_eq!(r.rtt_sample, Duration::from_millis(100));
    // Without the timestamp the oldest match is taken (never claim more).
    let mut c = StfrcController::new(cfg(), ms(0));
    c.on_data_sent(ms(0), 0, S, true);
    c.on_data_sent(ms(1), 1000, S, false);
    c.on_data_sent(ms(2), 0, S, true);
    assert!(c.on_status(ms(102), &status(0, &[])));
    assert_eq!(c.last_cycle().map(|r| (r.first, r.last)), Some((0, 0)));
    // in_response_to at the end of the requesting frame is accepted too.
    assert!(c.on_status(ms(103), &status(1000, &[])));
    assert_eq!(c.last_cycle().map(|r| (r.first, r.last)), Some((1, 2)));
}

#[test]
fn holes_map_to_the_transmissions_of_the_cycle() {
    let mut c = StfrcController::new(cfg(), ms(0));
    send_run(&mut c, 0, 0, 10, &[9]);
    // One hole over the tail of packet 1, all of 2 and the head of 3.
    assert!(c.on_status(ms(100), &status(9000, &[(1500, 3100)])));
    assert_eq!(c.last_cycle().unwrap().lost, vec![1, 2, 3]);
    // Saratoga resends offsets 1000..4000 (d 10..12), then new data
    // (d 13..17, request on the last).
    c.on_data_sent(ms(101), 1000, S, false);
    c.on_data_sent(ms(102), 2000, S, false);
    c.on_data_sent(ms(103), 3000, S, false);
    for k in 0..5u64 {
        c.on_data_sent(ms(104 + k), 10_000 + k * 1000, S, k == 4);
    }
    // The copy of 2000 was lost again: the same hole is reported, but
    // only the copy (d 11) is a loss of this cycle; packet 2 is not
    // counted twice.
    assert!(c.on_status(ms(210), &status(14_000, &[(2000, 3000)])));
    let r = c.last_cycle().unwrap();
    assert_eq!((r.first, r.last), (10, 17));
    assert_eq!(r.lost, vec![11]);
    assert_eq!(c.stats().packets_lost, 4);
}

#[test]
fn receive_time_is_send_time_plus_symmetry_ratio_rtt() {
    let mut c = StfrcController::new(cfg(), ms(0));
    c.on_data_sent(ms(10), 0, S, true);
    assert!(c.on_status(ms(110), &status(0, &[])));
    // R = 100 ms (first sample); 10 ms + 0.75 * 100 ms = 85 ms.
    let r = c.last_cycle().unwrap();
    assert_eq!(r.rtt, Duration::from_millis(100));
    assert_eq!(r.rx_end, ms(85));
    assert_eq!(c.predicted_receive_time(ms(1000)), Some(ms(1075)));
    // Nine packets 20..=100 ms, the last requesting; STATUS at 230 ms:
    // sample 130 ms, R = 0.9*100 + 0.1*130 = 103 ms, forward delay
    // 0.75 * 103 = 77.25 ms, so the request is received at 177.25 ms.
    for k in 0..9u64 {
        c.on_data_sent(ms(20 + 10 * k), (k + 1) * 1000, S, k == 8);
    }
    assert!(c.on_status(ms(230), &status(9000, &[])));
    let r = c.last_cycle().unwrap();
    assert_eq!(r.rtt_sample, Duration::from_millis(130));
    assert_eq!(r.rtt, Duration::from_millis(103));
    assert_eq!(r.rx_end, Instant(177_250_000));
    // X_recv: 9000 bytes over the predicted receive times from the end of
    // the previous cycle (85 ms) to this one's (177.25 ms).
    assert_eq!(r.rx_start, ms(85));
    assert!((r.x_recv - 9000.0 / 0.09225).abs() < 1e-6);
    // RED's ratio shifts the prediction.
    let mut c = StfrcController::new(
        StfrcConfig {
            symmetry_ratio: SYMMETRY_RATIO_RED,
            ..cfg()
        },
        ms(0),
    );
    c.on_data_sent(ms(10), 0, S, true);
    c.on_status(ms(110), &status(0, &[]));
    assert_eq!(c.last_cycle().unwrap().rx_end, ms(75));
}

#[test]
fn losses_within_one_rtt_form_one_loss_event() {
    let mut c = StfrcController::new(cfg(), ms(0));
    // A first cycle to get R = 100 ms.
    c.on_data_sent(ms(0), 0, S, true);
    assert!(c.on_status(ms(100), &status(0, &[])));
    // 400 packets at 1 ms spacing (d 1..=400), request on the last.
    send_run(&mut c, 100, 1, 401, &[400]);
    // Losses at d 10 and 50 (40 ms apart: one event) and 250 (150 ms
    // after the event's start: a new one).
    let holes = [(10_000, 11_000), (50_000, 51_000), (250_000, 251_000)];
    assert!(c.on_status(ms(600), &status(400_000, &holes)));
    let r = c.last_cycle().unwrap();
    assert_eq!(r.lost, vec![10, 50, 250]);
    let det = c.loss_detector();
    assert_eq!(det.packets_lost(), 3);
    assert_eq!(det.loss_events(), 2);
    // The closed interval runs from one event's start to the next: 240
    // packets (RFC 5348 §5.3).
    assert_eq!(det.intervals().closed()[0], 240.0);
    assert!(r.p > 0.0 && r.p < 1.0 / 100.0);
    assert_eq!(c.stats().p, r.p);
}

/// The highest of the last three X_recv values (the reports of the last
/// two RTTs and the current one).
fn r_x_recv(h: &[f64]) -> f64 {
    h.iter().rev().take(3).fold(0.0f64, |a, &b| a.max(b))
}

#[test]
fn slow_start_doubles_within_twice_x_recv_then_the_equation_sets_x() {
    let mut c = StfrcController::new(cfg(), ms(0));
    // RFC 5348 §4.2: one packet per second before the first RTT sample.
    assert_eq!(c.rate_bytes_per_s(), f64::from(S));
    let mut t = 0u64; // ms
    let mut off = 0u64;
    let mut prev_x = None;
    let mut x_recv_hist: Vec<f64> = Vec::new();
    // Ten RTTs of 100 ms without loss: send at the allowed rate, request
    // once per RTT, STATUS 100 ms after each request.
    for round in 0..10 {
        let x = c.rate_bytes_per_s();
        let n = ((x * 0.1) / f64::from(S)).floor().max(1.0) as u64;
        let gap = 100 / n.max(1);
        let mut req_off = 0;
        for i in 0..n {
            let want = i + 1 == n;
            c.on_data_sent(ms(t + i * gap), off, S, want);
            if want {
                req_off = off;
            }
            off += u64::from(S);
        }
        let t_req = t + (n - 1) * gap;
        t += 100;
        assert!(c.on_status(ms(t_req + 100), &status(req_off, &[])));
        let r = c.last_cycle().unwrap();
        x_recv_hist.push(r.x_recv);
        let x_new = c.rate_bytes_per_s();
        if round == 0 {
            // §4.2: W_init/R = min(4s, max(2s, 4380))/R = 4000 B / 0.1 s.
            assert!((x_new - 40_000.0).abs() < 1e-6, "{x_new}");
        } else if let Some(px) = prev_x {
            // Never more than double; once the initial X_recv_set =
            // {Infinity} has aged out (two RTTs, RFC 5348 §4.3), never
            // above twice the highest X_recv of the last two RTTs.
            assert!(x_new <= 2.0 * px + 1e-6, "round {round}: {x_new} > 2*{px}");
            if round >= 3 {
                let lim = 2.0 * r_x_recv(&x_recv_hist);
                assert!(x_new <= lim + 1e-6, "round {round}: {x_new} > {lim}");
            }
        }
        prev_x = Some(x_new);
    }
    let x_ss = c.rate_bytes_per_s();
    assert!(x_ss > 8.0 * 40_000.0, "slow start stalled at {x_ss}");
    assert_eq!(c.stats().p, 0.0);
    // Now a loss: the rate follows the equation, bounded by 2*X_recv.
    let n = ((x_ss * 0.1) / f64::from(S)) as u64;
    let base = off;
    for i in 0..n {
        c.on_data_sent(ms(t + i * 100 / n), off, S, i + 1 == n);
        off += u64::from(S);
    }
    let req_off = off - u64::from(S);
    let hole = [(base + 5000, base + 6000)];
    assert!(c.on_status(ms(t + 200), &status(req_off, &hole)));
    let st = c.stats();
    assert!(st.p > 0.0);
    let r = st.rtt.unwrap().as_secs_f64();
    let x_eq = tfrc_rate(f64::from(S), r, st.p, 1.0, 4.0 * r);
    assert_eq!(st.x_calc, Some(x_eq));
    let x_recv = c.last_cycle().unwrap().x_recv;
    assert!(st.x <= x_eq + 1e-6);
    assert!(st.x <= 2.0 * x_recv.max(x_recv_hist[9]) + 1e-6);
    assert!(st.x < x_ss, "a loss must not raise the rate");
}

#[test]
fn one_status_request_per_rtt() {
    let mut c = StfrcController::new(cfg(), ms(0));
    // Before any RTT sample: the first packet asks, then once per
    // initial_rtt (1 s).
    assert!(c.want_status_request(ms(0)));
    c.on_data_sent(ms(0), 0, S, true);
    assert!(!c.want_status_request(ms(999)));
    assert!(c.want_status_request(ms(1000)));
    c.on_data_sent(ms(1000), 1000, S, true);
    assert!(c.on_status(ms(1200), &status(1000, &[])));
    // R = 200 ms now.
    assert!(!c.want_status_request(ms(1199)));
    assert!(c.want_status_request(ms(1200)));
    // A request still unanswered holds the next one back (a round trip
    // has not happened yet), until its answer or 4 R.
    c.on_data_sent(ms(1200), 2000, S, true);
    assert!(
        !c.want_status_request(ms(1400)),
        "the 1200 ms request is out"
    );
    assert!(!c.want_status_request(ms(1999)));
    assert!(c.want_status_request(ms(2000)), "taken as lost after 4 R");
    assert!(c.on_status(ms(1500), &status(2000, &[])));
    assert!(c.want_status_request(ms(1500)), "answered: due again");
    // Off: by the interval alone.
    let mut c = StfrcController::new(
        StfrcConfig {
            request_timeout_rtts: 0.0,
            ..cfg()
        },
        ms(0),
    );
    c.on_data_sent(ms(0), 0, S, true);
    assert!(c.on_status(ms(200), &status(0, &[])));
    c.on_data_sent(ms(200), 1000, S, true);
    assert!(c.want_status_request(ms(400)));
    // Four per RTT (the §5 experiment): every 50 ms.
    let mut c = StfrcController::new(
        StfrcConfig {
            status_per_rtt: 4.0,
            ..cfg()
        },
        ms(0),
    );
    c.on_data_sent(ms(0), 0, S, true);
    assert!(c.on_status(ms(200), &status(0, &[])));
    c.on_data_sent(ms(200), 1000, S, true);
    assert!(!c.want_status_request(ms(249)));
    assert!(c.want_status_request(ms(250)));
    assert_eq!(c.request_interval(), Duration::from_millis(50));
    // Nonsense is taken as one per RTT.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let c = StfrcController::new(
            StfrcConfig {
                status_per_rtt: bad,
                ..cfg()
            },
            ms(0),
        );
        assert_eq!(c.request_interval(), Duration::from_secs(1));
    }
}

#[test]
fn no_feedback_timer_halves_the_rate() {
    let mut c = StfrcController::new(cfg(), ms(0));
    c.on_data_sent(ms(0), 0, S, true);
    assert!(c.on_status(ms(100), &status(0, &[])));
    let x0 = c.rate_bytes_per_s();
    // Keep sending, no STATUS comes back.
    let deadline = c.poll_timeout().unwrap();
    assert!(deadline > ms(100));
    let mut k = 1u64;
    let mut t = 100u64;
    while ms(t) < deadline {
        c.on_data_sent(ms(t), k * 1000, S, false);
        k += 1;
        t += 25;
    }
    c.handle_timeout(deadline);
    assert_eq!(c.stats().nofeedback_expiries, 1);
    assert!(c.rate_bytes_per_s() <= x0 / 2.0 + 1e-9);
    // Disabled: no timer at all.
    let c = StfrcController::new(
        StfrcConfig {
            nofeedback_timer: false,
            ..cfg()
        },
        ms(0),
    );
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn odd_input_is_ignored_and_counted() {
    let mut c = StfrcController::new(
        StfrcConfig {
            symmetry_ratio: f64::NAN,
            b: -3.0,
            segment_size: 0,
            max_history: 0,
            ..cfg()
        },
        ms(0),
    );
    // STATUS before anything was sent.
    assert!(!c.on_status(ms(0), &status(0, &[(0, 10)])));
    // A voluntary STATUS.
    c.on_data_sent(ms(0), 0, 1000, true);
    let vol = StatusInfo {
        voluntary: true,
        ..status(0, &[])
    };
    assert!(!c.on_status(ms(5), &vol));
    assert_eq!(c.stats().status_voluntary, 1);
    // Holes inverted, empty, past everything sent, below progress.
    let holes = [
        (50, 10),
        (7, 7),
        (1 << 40, (1 << 40) + 5),
        (u64::MAX - 1, u64::MAX),
    ];
    let st = StatusInfo {
        progress: 0,
        ..status(0, &holes)
    };
    assert!(c.on_status(ms(10), &st));
    assert_eq!(c.stats().holes_ignored, 4);
    assert!(c.last_cycle().unwrap().lost.is_empty());
    // An echoed timestamp from the future and an unknown offset.
    c.on_data_sent(ms(20), 1000, 1000, true);
    let fut = StatusInfo {
        echoed_timestamp: Some(ms(1_000_000)),
        ..status(77_777, &[])
    };
    assert!(!c.on_status(ms(30), &fut));
    // Offsets and lengths at the edge of u64.
    c.on_data_sent(ms(40), u64::MAX - 10, u32::MAX, true);
    c.on_data_sent(ms(41), u64::MAX, 0, true);
    assert!(c.on_status(ms(50), &status(u64::MAX, &[(u64::MAX - 5, u64::MAX)])));
    // Time going backwards.
    c.on_data_sent(ms(45), 5000, 1000, true);
    c.handle_timeout(ms(0));
    assert!(c.rate_bytes_per_s().is_finite() && c.rate_bytes_per_s() > 0.0);
    let mut rng = Rng::new(9);
    let mut c = StfrcController::new(cfg(), ms(0));
    let mut holes = Vec::new();
    for i in 0..20_000u64 {
        let now = Instant(i * 100_000 + rng.below(50_000));
        let off = rng.below(1 << 20) * 1000;
        c.on_data_sent(now, off, rng.below(2000) as u32, rng.chance(0.05));
        if rng.chance(0.03) {
            holes.clear();
            for _ in 0..rng.below(8) {
                let a = rng.below(1 << 30);
                holes.push((a, a.wrapping_add(rng.below(1 << 20)).wrapping_sub(1 << 19)));
            }
            let st = StatusInfo {
                progress: rng.below(1 << 29),
                in_response_to: if rng.chance(0.5) { off } else { rng.next_u64() },
                holes: &holes,
                holes_incomplete: rng.chance(0.3),
                voluntary: rng.chance(0.1),
                echoed_timestamp: rng.chance(0.5).then(|| Instant(rng.below(i * 100_000 + 1))),
            };
            c.on_status(now, &st);
        }
        if rng.chance(0.01) {
            c.handle_timeout(now);
        }
        let x = c.rate_bytes_per_s();
        assert!(x.is_finite() && x > 0.0);
        assert!(c.stats().history_len <= c.config().max_history);
    }
    assert!(c.stats().cycles > 0);
}

#[test]
fn incomplete_hole_list_counts_unknown_fates() {
    let mut c = StfrcController::new(cfg(), ms(0));
    send_run(&mut c, 0, 0, 10, &[9]);
    let st = StatusInfo {
        holes_incomplete: true,
        ..status(9000, &[(2000, 3000)])
    };
    assert!(c.on_status(ms(100), &st));
    // Packets 3..=9 start at or past the end of the last listed hole.
    assert_eq!(c.stats().unknown_fate, 7);
    assert_eq!(c.last_cycle().unwrap().lost, vec![2]);
}

// ---------------------------------------------------------------------
// Closed loop: a toy Saratoga transfer over a deterministic link.
// ---------------------------------------------------------------------

/// How the toy Saratoga sender answers holes.
#[derive(Clone, Copy, PartialEq)]
enum Resend {
    /// Resend a hole's data only if its last copy was sent no later than
    /// the request the STATUS answers (no duplicate retransmissions).
    Careful,
    /// Resend every hole of every STATUS (plain Saratoga: duplicates when
    /// several STATUS frames report a hole before its copy arrives).
    Every,
}

struct LinkModel {
    /// Bottleneck rate, bits/s.
    rate_bps: u64,
    /// Bottleneck buffer, packets.
    queue_limit: usize,
    /// One-way delays after the bottleneck and on the return path.
    fwd: Duration,
    back: Duration,
    /// Per-packet random loss after the bottleneck.
    loss: f64,
}

struct Outcome {
    /// Allowed rate samples (time s, X) every 100 ms.
    rates: Vec<(f64, f64)>,
    /// Bytes delivered (new data) per second of the second half.
    goodput: f64,
    /// STFRC's p at the end.
    p: f64,
    /// p of an RFC 5348 receiver seeing the same packets (with the dummy
    /// sequence numbers as sequence numbers and true arrival times).
    p_receiver: f64,
    /// Fraction of transmissions dropped.
    loss_fraction: f64,
    /// The controller's RTT at the end.
    rtt: Duration,
    stats: StfrcStats,
}

/// A STATUS on its way back: (arrival, in-response-to, holes, progress,
/// echoed timestamp).
type PendingStatus = (Instant, u64, Vec<(u64, u64)>, u64, Instant);

struct InFlight {
    arrive: Instant,
    d: u64,
    chunk: u64,
    request: bool,
    sent: Instant,
    rtt: Duration,
}

#[allow(clippy::too_many_lines)]
fn run_transfer(
    cfg: StfrcConfig,
    link: &LinkModel,
    resend: Resend,
    secs: u64,
    seed: u64,
) -> Outcome {
    let s = u64::from(cfg.segment_size);
    let mut rng = Rng::new(seed);
    let mut c = StfrcController::new(cfg, Instant::ZERO);
    let end = Instant(secs * 1_000_000_000);
    let tx = Duration::transmission(s, link.rate_bps);
    let mut queue: VecDeque<Instant> = VecDeque::new(); // departure times
    let mut inflight: VecDeque<InFlight> = VecDeque::new();
    let mut statuses: VecDeque<PendingStatus> = VecDeque::new();
    // Receiver state.
    let mut got: Vec<bool> = Vec::new();
    let mut rcv_det = LossDetector::new(3, true);
    // Sender state.
    let mut next_chunk = 0u64;
    let mut last_sent: Vec<Instant> = Vec::new();
    let mut resend_q: VecDeque<u64> = VecDeque::new();
    let mut queued: Vec<bool> = Vec::new();
    let mut next_send = Instant::ZERO;
    let mut next_sample = Instant::ZERO;
    let mut rates = Vec::new();
    let (mut sent_n, mut dropped_n) = (0u64, 0u64);
    let half = Instant(end.as_nanos() / 2);
    let mut new_bytes_second_half = 0u64;
    loop {
        let t_status = statuses.front().map_or(Instant::MAX, |x| x.0);
        let t_arrive = inflight.front().map_or(Instant::MAX, |x| x.arrive);
        let t_timer = c.poll_timeout().unwrap_or(Instant::MAX);
        let now = next_send
            .min(t_status)
            .min(t_arrive)
            .min(t_timer)
            .min(next_sample);
        if now >= end {
            break;
        }
        if now == next_sample {
            rates.push((now.as_secs_f64(), c.rate_bytes_per_s()));
            next_sample = now + Duration::from_millis(100);
        } else if now == t_arrive {
            // The receiver: record, answer a request at once.
            let p = inflight.pop_front().unwrap();
            let ch = p.chunk as usize;
            if got.len() <= ch {
                got.resize(ch + 1, false);
            }
            if !got[ch] && p.arrive >= half {
                new_bytes_second_half += s;
            }
            got[ch] = true;
            // An RFC 5348 receiver learns the sender's RTT from the data.
            rcv_det.on_packet(p.d, p.arrive, p.rtt, &mut |n| n as f64);
            if p.request {
                let progress = got.iter().position(|&g| !g).unwrap_or(got.len()) as u64;
                let mut holes = Vec::new();
                let mut k = progress as usize;
                while k < got.len() {
                    if !got[k] {
                        let a = k;
                        while k < got.len() && !got[k] {
                            k += 1;
                        }
                        holes.push((a as u64 * s, k as u64 * s));
                    }
                    k += 1;
                }
                statuses.push_back((now + link.back, p.chunk * s, holes, progress * s, p.sent));
            }
        } else if now == t_status {
            let (_, irt, holes, progress, ts) = statuses.pop_front().unwrap();
            let st = StatusInfo {
                progress,
                in_response_to: irt,
                holes: &holes,
                holes_incomplete: false,
                voluntary: false,
                echoed_timestamp: Some(ts),
            };
            c.on_status(now, &st);
            // Saratoga's own job (Algorithm 2 step 7): queue the holes.
            for &(a, b) in &holes {
                for ch in a / s..b / s {
                    let ch_u = ch as usize;
                    let fresh = match resend {
                        Resend::Careful => last_sent[ch_u] <= ts,
                        Resend::Every => true,
                    };
                    if fresh && !queued[ch_u] {
                        queued[ch_u] = true;
                        resend_q.push_back(ch);
                    }
                }
            }
        } else if now == next_send {
            let ch = match resend_q.pop_front() {
                Some(ch) => {
                    queued[ch as usize] = false;
                    ch
                }
                None => {
                    next_chunk += 1;
                    last_sent.push(Instant::ZERO);
                    queued.push(false);
                    next_chunk - 1
                }
            };
            let request = c.want_status_request(now);
            let d = c.on_data_sent(now, ch * s, s as u32, request);
            last_sent[ch as usize] = now;
            sent_n += 1;
            // The bottleneck: FIFO, drop-tail.
            while queue.front().is_some_and(|&dep| dep <= now) {
                queue.pop_front();
            }
            if queue.len() >= link.queue_limit {
                dropped_n += 1;
            } else {
                let dep = queue.back().map_or(now, |&b| b.max(now)) + tx;
                queue.push_back(dep);
                if rng.chance(link.loss) {
                    dropped_n += 1;
                } else {
                    inflight.push_back(InFlight {
                        arrive: dep + link.fwd,
                        d,
                        chunk: ch,
                        request,
                        sent: now,
                        rtt: c.stats().rtt.unwrap_or(link.fwd + link.back),
                    });
                }
            }
            let x = c.rate_bytes_per_s();
            next_send = now + Duration::from_secs_f64(s as f64 / x);
        } else {
            c.handle_timeout(now);
        }
    }
    let st = c.stats();
    Outcome {
        rates,
        goodput: new_bytes_second_half as f64 / (end.as_secs_f64() / 2.0),
        p: st.p,
        p_receiver: rcv_det.p(),
        loss_fraction: dropped_n as f64 / sent_n.max(1) as f64,
        rtt: st.rtt.unwrap_or(Duration::ZERO),
        stats: st,
    }
}

fn mean_rate_after(o: &Outcome, t: f64) -> f64 {
    let v: Vec<f64> = o.rates.iter().filter(|r| r.0 >= t).map(|r| r.1).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

#[test]
fn random_loss_channel_gives_p_near_the_loss_rate_and_the_equation_rate() {
    // 100 Mbit/s, no queueing to speak of, RTT 60 + 40 = 100 ms (true
    // symmetry ratio 0.6), 1 % random loss.
    let link = LinkModel {
        rate_bps: 100_000_000,
        queue_limit: 100_000,
        fwd: Duration::from_millis(60),
        back: Duration::from_millis(40),
        loss: 0.01,
    };
    let o = run_transfer(cfg(), &link, Resend::Careful, 300, 1);
    println!(
        "p {} p_rcv {} loss {} rtt {} x {} stats {:?}",
        o.p,
        o.p_receiver,
        o.loss_fraction,
        o.rtt,
        mean_rate_after(&o, 150.0),
        o.stats
    );
    // Loss events merge losses within an RTT, so p is at most the packet
    // loss rate and close to it when losses are sparse per RTT.
    assert!(
        (o.loss_fraction - 0.01).abs() < 0.002,
        "{}",
        o.loss_fraction
    );
    assert!(o.p > 0.6 * 0.01 && o.p < 1.1 * 0.01, "p = {}", o.p);
    // The receiver-based RFC 5348 estimate on the same packets agrees.
    assert!(
        (o.p / o.p_receiver - 1.0).abs() < 0.25,
        "{} vs {}",
        o.p,
        o.p_receiver
    );
    // The RTT is the path's.
    let r = o.rtt.as_secs_f64();
    assert!((r - 0.1).abs() < 0.005, "rtt {r}");
    // The rate settles near the equation's rate for the true loss rate.
    let x_eq = tfrc_rate(f64::from(S), 0.1, 0.01, 1.0, 0.4);
    let x = mean_rate_after(&o, 150.0);
    assert!((x / x_eq - 1.0).abs() < 0.35, "x {x} vs equation {x_eq}");
}

#[test]
fn drop_tail_bottleneck_converges_near_the_equation_rate() {
    // 2 Mbit/s bottleneck (250 packets/s), 25-packet buffer, RTT 100 ms
    // plus queueing.
    let link = LinkModel {
        rate_bps: 2_000_000,
        queue_limit: 25,
        fwd: Duration::from_millis(50),
        back: Duration::from_millis(50),
        loss: 0.0,
    };
    let o = run_transfer(cfg(), &link, Resend::Careful, 120, 2);
    let x = mean_rate_after(&o, 60.0);
    println!(
        "p {} p_rcv {} loss {} rtt {} x {} goodput {} stats {:?}",
        o.p, o.p_receiver, o.loss_fraction, o.rtt, x, o.goodput, o.stats
    );
    let cap = 250_000.0;
    // Losses come only from the queue overflowing.
    assert!(o.p > 0.0 && o.loss_fraction > 0.0 && o.loss_fraction < 0.1);
    // A single flow fills most of the bottleneck, never more than all.
    assert!(
        o.goodput > 0.6 * cap && o.goodput <= cap * 1.001,
        "goodput {}",
        o.goodput
    );
    // RTT between the propagation delay and that plus a full buffer.
    let r = o.rtt.as_secs_f64();
    assert!((0.1..=0.1 + 25.0 * 0.004 + 0.01).contains(&r), "rtt {r}");
    // The mean allowed rate is near the equation's for the loss event
    // rate an RFC 5348 receiver measures on the same packets.
    let x_eq = tfrc_rate(f64::from(S), r, o.p_receiver, 1.0, 4.0 * r);
    assert!((x / x_eq - 1.0).abs() < 0.5, "x {x} vs equation {x_eq}");
    // And the rate is smooth in steady state (TFRC's point).
    let v: Vec<f64> = o
        .rates
        .iter()
        .filter(|r| r.0 >= 60.0)
        .map(|r| r.1)
        .collect();
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let sd = (v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / v.len() as f64).sqrt();
    assert!(sd / m < 0.5, "CoV {}", sd / m);
}

#[test]
fn more_than_one_status_per_rtt_underestimates_p() {
    // Paper 000 §5: several STATUS per RTT make Saratoga resend the same
    // hole several times; lost duplicates are never reported, so p comes
    // out lower than the loss event rate a receiver sees on the same
    // packets, and the flow takes more than its share. One STATUS per RTT
    // with no duplicate retransmissions estimates p as the receiver would.
    let link = LinkModel {
        rate_bps: 100_000_000,
        queue_limit: 100_000,
        fwd: Duration::from_millis(100),
        back: Duration::from_millis(100),
        loss: 0.05,
    };
    let four_cfg = StfrcConfig {
        status_per_rtt: 4.0,
        ..cfg()
    };
    let (mut r_one, mut r_four, mut r_careful) = (0.0, 0.0, 0.0);
    let seeds = 1..=4u64;
    let n = seeds.clone().count() as f64;
    for seed in seeds {
        let one = run_transfer(cfg(), &link, Resend::Every, 300, seed);
        let four = run_transfer(four_cfg.clone(), &link, Resend::Every, 300, seed);
        let careful = run_transfer(cfg(), &link, Resend::Careful, 300, seed);
        assert!(four.stats.requests_sent > 3 * one.stats.requests_sent);
        // Under-estimated p: a higher rate than with one STATUS per RTT.
        let (x1, x4) = (mean_rate_after(&one, 150.0), mean_rate_after(&four, 150.0));
        assert!(x4 > x1, "seed {seed}: {x4} <= {x1}");
        r_one += one.p / one.p_receiver / n;
        r_four += four.p / four.p_receiver / n;
        r_careful += careful.p / careful.p_receiver / n;
    }
    // (With the RFC 5348 receiver rules of this tree the gap is about 6 %:
    // 0.92 against 0.98 of the receiver's p over these seeds.)
    assert!(r_four < 0.97 * r_one, "{r_four} vs {r_one}");
    assert!((r_careful - 1.0).abs() < 0.1, "{r_careful}");
}

#[test]
fn heavy_loss_keeps_the_rate_above_one_packet_per_t_mbi() {
    let mut c = StfrcController::new(cfg(), ms(0));
    let mut t = 0u64;
    let mut off = 0u64;
    // Twenty cycles 110 ms apart (RTT 100 ms, so each cycle's losses are
    // more than one RTT after the previous cycle's: RFC 5348 §5.2, "If
    // T_old + R >= T_new, then S_new is part of the existing loss
    // event") in which 9 of every 10 packets are lost (only the
    // requesting one arrives).
    for _ in 0..20 {
        let first = off;
        for i in 0..10u64 {
            c.on_data_sent(ms(t + i), off, S, i == 9);
            off += u64::from(S);
        }
        let hole = [(first, off - u64::from(S))];
        let st = StatusInfo {
            progress: first,
            ..status(off - u64::from(S), &hole)
        };
        assert!(c.on_status(ms(t + 109), &st));
        t += 110;
        let s = c.stats();
        // X = max(min(X_calc, 2 X_recv), s/t_mbi) (RFC 5348 §4.3).
        assert!(s.x >= f64::from(S) / 64.0 - 1e-9);
        if let Some(xc) = s.x_calc {
            assert!(s.x <= xc.max(f64::from(S) / 64.0) + 1e-6);
        }
    }
    let s = c.stats();
    assert_eq!(s.packets_lost, 180);
    // The nine losses of a cycle fall within one RTT: one loss event per
    // cycle, so loss intervals of 10 packets and p = 1/10, although 90 %
    // of the packets are lost (RFC 5348 §5.2). The first cycle's losses
    // come before the first packet received and, as at an RFC 5348
    // receiver, open no loss event.
    assert_eq!(s.loss_events, 19);
    assert!((s.p - 0.1).abs() < 0.01, "p {}", s.p);
}

#[test]
fn closed_loop_is_deterministic() {
    let link = LinkModel {
        rate_bps: 2_000_000,
        queue_limit: 25,
        fwd: Duration::from_millis(50),
        back: Duration::from_millis(50),
        loss: 0.01,
    };
    let a = run_transfer(cfg(), &link, Resend::Careful, 20, 11);
    let b = run_transfer(cfg(), &link, Resend::Careful, 20, 11);
    assert_eq!(a.rates, b.rates);
    assert_eq!(a.stats, b.stats);
}

/// Two cycles of 10 packets sent 1 ms apart; the second STATUS comes
/// `gap` ms after the first (a bottleneck spreads the packets out).
fn two_cycles(rr: ReceiveRate, gap: u64) -> f64 {
    let mut c = StfrcController::new(
        StfrcConfig {
            receive_rate: rr,
            ..cfg()
        },
        ms(0),
    );
    send_run(&mut c, 0, 0, 10, &[9]);
    assert!(c.on_status(ms(50), &status(9000, &[])));
    send_run(&mut c, 50, 10, 20, &[19]);
    assert!(c.on_status(ms(50 + gap), &status(19_000, &[])));
    c.last_cycle().unwrap().x_recv
}

#[test]
fn delivery_receive_rate_is_bounded_by_the_status_spacing() {
    // Paper 000: 10 packets over the span of the two requests' predicted
    // receive times (50 ms apart, plus 0.75 of R's growth: 53.75 ms),
    // whatever the STATUS frames' spacing.
    let paper = two_cycles(ReceiveRate::Predicted, 100);
    assert!((paper - 10_000.0 / 0.05375).abs() < 1.0, "{paper}");
    // Delivery: over the 100 ms between the STATUS frames.
    let delivered = two_cycles(ReceiveRate::Delivery, 100);
    assert!((delivered - 1e5).abs() < 1e-6, "{delivered}");
    // STATUS frames closer than the requests were sent (compressed on the
    // way back) do not raise it above the send-time estimate.
    let close = two_cycles(ReceiveRate::Delivery, 20);
    assert_eq!(close, two_cycles(ReceiveRate::Predicted, 20));
}

/// Cycles of 10 packets; cycle `k` loses its packet 5 if `lose[k]` and its
/// STATUS comes `rtt[k]` ms after its request. Returns p after each.
fn spike_run(f: LossFilter, rtt: &[u64], lose: &[bool]) -> (Vec<f64>, u64) {
    let mut c = StfrcController::new(
        StfrcConfig {
            loss_filter: f,
            ..cfg()
        },
        ms(0),
    );
    let mut t = 0;
    let mut ps = Vec::new();
    for (k, (&r, &l)) in rtt.iter().zip(lose).enumerate() {
        let k = k as u64;
        send_run(&mut c, t, 10 * k, 10 * k + 10, &[10 * k + 9]);
        let hole = (10 * k + 5) * u64::from(S);
        let holes = if l {
            vec![(hole, hole + u64::from(S))]
        } else {
            vec![]
        };
        let st = StatusInfo {
            progress: 10 * k * u64::from(S),
            ..status((10 * k + 9) * u64::from(S), &holes)
        };
        assert!(c.on_status(ms(t + 9 + r), &st));
        ps.push(c.stats().p);
        t += 9 + r + 1;
    }
    (ps, c.stats().losses_ignored)
}

#[test]
fn spike_counts_only_losses_while_the_rtt_says_the_path_queues() {
    let rtt = [30, 30, 30, 80, 30];
    let lose = [false, true, false, true, true];
    // RFC 5348: the loss at the base RTT is a loss event.
    let (all, ignored) = spike_run(LossFilter::All, &rtt, &lose);
    assert!(all[1] > 0.0, "{all:?}");
    assert_eq!(ignored, 0);
    // Spike: RTT_min 30 ms and no spread yet (5 ms floor): 30 ms is not a
    // queue, the loss is a link error; at 80 ms (above 30 + 50/2) the
    // path is in the spike state and the loss counts; back at 30 ms
    // (below 30 + 50/3) it has left it again.
    let (spike, ignored) = spike_run(LossFilter::SPIKE, &rtt, &lose);
    assert_eq!(spike[1], 0.0, "{spike:?}");
    assert_eq!(spike[2], 0.0, "{spike:?}");
    assert!(spike[3] > 0.0, "{spike:?}");
    assert_eq!(ignored, 2);
}

#[test]
fn hole_delay_is_the_least_excess_per_hole_over_a_hole_less_status() {
    let mut on = StfrcController::new(
        StfrcConfig {
            exclude_hole_delay: true,
            ..cfg()
        },
        ms(0),
    );
    let mut off = StfrcController::new(cfg(), ms(0));
    let d = |x: u64| Duration::from_millis(x);
    for c in [&mut on, &mut off] {
        // Nothing to compare with before a STATUS without holes.
        assert_eq!(c.hole_delay(d(500), 10), Duration::ZERO);
        assert_eq!(c.hole_delay(d(30), 0), Duration::ZERO);
    }
    // 10 holes, 100 ms above the base: 10 ms per hole.
    assert_eq!(on.hole_delay(d(130), 10), d(100));
    // A quicker one lowers the cost per hole (queues only add)...
    assert_eq!(on.hole_delay(d(90), 10), d(60));
    // ...which a slower one does not raise again: the rest is queueing.
    assert_eq!(on.hole_delay(d(200), 10), d(60));
    // Never more than the excess over the base.
    assert_eq!(on.hole_delay(d(40), 5), d(10));
    // Off (paper 000): the whole sample, though the cost is learnt.
    assert_eq!(off.hole_delay(d(130), 10), Duration::ZERO);
    assert_eq!(off.per_hole, Some(0.01));
}

#[test]
fn without_hole_delay_the_nofeedback_timer_still_waits_four_whole_rtts() {
    let mut c = StfrcController::new(
        StfrcConfig {
            exclude_hole_delay: true,
            ..cfg()
        },
        ms(0),
    );
    send_run(&mut c, 0, 0, 10, &[9]);
    assert!(c.on_status(ms(39), &status(9000, &[])));
    send_run(&mut c, 40, 10, 20, &[19]);
    // 64 holes' worth of delay: R_sample 200 ms, the equation's 30 ms.
    let holes: Vec<(u64, u64)> = (0..10).map(|k| (k * 100 + 10, k * 100 + 20)).collect();
    let st = StatusInfo {
        progress: 0,
        ..status(19_000, &holes)
    };
    assert!(c.on_status(ms(249), &st));
    let r = c.stats().rtt.unwrap();
    assert!(r > Duration::from_millis(45), "{r}");
    let t = c.poll_timeout().unwrap();
    assert!(t >= ms(249) + r.saturating_mul(4), "{t} vs R {r}");
    // Before it, nothing happens to the rate.
    let x = c.rate_bytes_per_s();
    c.handle_timeout(Instant(t.as_nanos() - 1_000_000));
    assert_eq!(c.rate_bytes_per_s(), x);
    assert_eq!(c.stats().nofeedback_expiries, 0);
}
