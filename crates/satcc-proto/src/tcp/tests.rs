//! Scripted and closed-loop tests of the sender and receiver together.

use std::collections::VecDeque;

use super::*;
use crate::rng::Rng;
use crate::time::{Duration, Instant};

pub(super) fn ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}

pub(super) fn ack(n: u64, ts: Instant, sack: &[(u64, u64)]) -> TcpAck {
    let mut a = TcpAck {
        ack: n,
        wnd: 10_000,
        ts_echo: ts,
        sack: [SackBlock::default(); MAX_SACK_BLOCKS],
        sack_len: sack.len() as u8,
        dummy_echo: false,
    };
    for (i, &(start, end)) in sack.iter().enumerate() {
        a.sack[i] = SackBlock { start, end };
    }
    a
}

pub(super) fn drain(s: &mut TcpSender, now: Instant) -> Vec<TcpData> {
    let mut v = Vec::new();
    while let Some(d) = s.poll_transmit(now) {
        v.push(d);
        assert!(v.len() < 100_000, "poll_transmit never ends");
    }
    v
}

pub(super) fn seqs(v: &[TcpData]) -> Vec<(u64, bool)> {
    v.iter().map(|d| (d.seq, d.retransmit)).collect()
}

fn sender(variant: Variant, iw: u32) -> TcpSender {
    let cfg = SenderConfig {
        variant,
        initial_window: iw,
        limited_transmit: false,
        ..SenderConfig::default()
    };
    let mut s = TcpSender::new(cfg, ms(0));
    s.push_data(1_000_000);
    s
}

/// Window of 10 at t=0, segments 2 and 5 lost, RTT 100 ms. Returns the
/// sender after the third duplicate ACK (fast retransmit of 2 done).
fn script_to_fast_retransmit(variant: Variant) -> TcpSender {
    let mut s = sender(variant, 10);
    let sent = drain(&mut s, ms(0));
    assert_eq!(sent.len(), 10);
    let sk = variant == Variant::Sack;
    // Segments 0 and 1 arrive: two new ACKs, slow start sends 10..13.
    s.handle_input(ms(100), &ack(1, ms(0), &[]));
    s.handle_input(ms(100), &ack(2, ms(0), &[]));
    assert_eq!(
        seqs(&drain(&mut s, ms(100))),
        vec![(10, false), (11, false), (12, false), (13, false)]
    );
    assert_eq!(s.stats().cwnd, 12.0);
    // 3, 4, 6 arrive: three duplicate ACKs.
    let blocks: [&[(u64, u64)]; 3] = [&[(3, 4)], &[(3, 5)], &[(6, 7), (3, 5)]];
    for (i, b) in blocks.iter().enumerate() {
        s.handle_input(ms(101), &ack(2, ms(0), if sk { b } else { &[] }));
        let out = drain(&mut s, ms(101));
        if i < 2 {
            assert!(out.is_empty(), "no limited transmit configured");
            assert!(!s.stats().in_recovery);
        } else {
            assert_eq!(seqs(&out)[0], (2, true), "fast retransmit of 2");
        }
    }
    let st = s.stats();
    assert!(st.in_recovery);
    assert_eq!(st.fast_retransmits, 1);
    // RFC 5681 eq. (4): FlightSize 12 (2..14) / 2.
    assert_eq!(st.ssthresh, 6.0);
    s
}

#[test]
fn newreno_partial_ack_retransmits_next_hole() {
    let mut s = script_to_fast_retransmit(Variant::NewReno);
    // RFC 5681 §3.2 step 3: cwnd = ssthresh + 3.
    assert_eq!(s.stats().cwnd, 9.0);
    // 7, 8, 9, 10, 11, 12, 13 arrive: seven more duplicate ACKs inflate
    // cwnd to 16, letting 14 and 15 out (una 2 + 16 = 18 > 14, 15, ... ).
    let mut new = Vec::new();
    for _ in 0..7 {
        s.handle_input(ms(102), &ack(2, ms(0), &[]));
        new.extend(drain(&mut s, ms(102)));
    }
    assert_eq!(s.stats().cwnd, 16.0);
    assert_eq!(
        seqs(&new),
        vec![(14, false), (15, false), (16, false), (17, false)]
    );
    // The retransmitted 2 arrives at 201: partial ACK up to the hole at 5.
    s.handle_input(ms(201), &ack(5, ms(101), &[]));
    let out = drain(&mut s, ms(201));
    assert_eq!(
        seqs(&out)[0],
        (5, true),
        "partial ACK retransmits the next hole at once"
    );
    let st = s.stats();
    assert!(
        st.in_recovery,
        "a partial ACK does not end NewReno recovery"
    );
    // RFC 6582 step 6: deflate by 3 acknowledged, add back one: 16 - 3 + 1.
    assert_eq!(st.cwnd, 14.0);
    // The retransmitted 5 arrives: everything up to 18 (= recover + 4) is
    // acknowledged: a full ACK.
    s.handle_input(ms(301), &ack(18, ms(201), &[]));
    let st = s.stats();
    assert!(!st.in_recovery);
    // RFC 6582 §3.2 step 5 option (2).
    assert_eq!(st.cwnd, st.ssthresh);
    assert_eq!(st.cwnd, 6.0);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.retransmits, 2);
}

#[test]
fn reno_leaves_recovery_on_partial_ack() {
    let mut s = script_to_fast_retransmit(Variant::Reno);
    assert_eq!(s.stats().cwnd, 9.0);
    s.handle_input(ms(201), &ack(5, ms(101), &[]));
    let st = s.stats();
    assert!(!st.in_recovery, "Reno exits on the first new ACK");
    assert_eq!(st.cwnd, 6.0);
    let out = drain(&mut s, ms(201));
    assert!(
        out.iter().all(|d| !d.retransmit),
        "Reno does not retransmit on a partial ACK"
    );
}

#[test]
fn sack_recovers_all_holes_in_one_rtt() {
    let mut s = script_to_fast_retransmit(Variant::Sack);
    let st = s.stats();
    // RFC 6675 (4.2): cwnd = ssthresh = 6. Pipe: 2..14 is 12 segments,
    // 3 SACKed; IsLost(2) (3 SACKed above). 5 is not yet lost (only 6 is
    // SACKed above it). Not lost, unSACKed: 5, 7..14 = 8; retransmitted 2
    // counts once: pipe = 9.
    assert_eq!(st.cwnd, 6.0);
    assert_eq!(st.pipe, 9);
    // 7 and 8 arrive: 5 becomes lost (6, 7, 8 SACKed above it) and the
    // pipe falls to 6 (8 -> 7 -> 6: 7 SACKed, then 8 SACKed and 5 lost).
    s.handle_input(ms(102), &ack(2, ms(0), &[(6, 8), (3, 5)]));
    assert!(drain(&mut s, ms(102)).is_empty());
    s.handle_input(ms(102), &ack(2, ms(0), &[(6, 9), (3, 5)]));
    assert_eq!(s.stats().pipe, 6);
    assert!(drain(&mut s, ms(102)).is_empty());
    // 9 arrives: pipe 5 < cwnd 6, NextSeg rule (1) gives the hole at 5
    // in the same RTT, without waiting for a partial ACK.
    s.handle_input(ms(102), &ack(2, ms(0), &[(6, 10), (3, 5)]));
    assert_eq!(seqs(&drain(&mut s, ms(102))), vec![(5, true)]);
    // 10 arrives: rule (2), new data.
    s.handle_input(ms(102), &ack(2, ms(0), &[(6, 11), (3, 5)]));
    assert_eq!(seqs(&drain(&mut s, ms(102))), vec![(14, false)]);
    // Out-of-range blocks are ignored (no panic, no new SACK).
    s.handle_input(
        ms(103),
        &ack(2, ms(0), &[(50, 60), (0, 1), (u64::MAX - 1, u64::MAX)]),
    );
    assert!(drain(&mut s, ms(103)).is_empty());
    assert_eq!(s.stats().dupacks, 7);
    // Both retransmissions arrive: everything below 15 is acknowledged.
    s.handle_input(ms(202), &ack(15, ms(102), &[]));
    let st = s.stats();
    assert!(!st.in_recovery);
    assert_eq!(
        (st.timeouts, st.retransmits, st.fast_retransmits),
        (0, 2, 1)
    );
}

#[test]
fn bogus_acks_are_ignored() {
    let mut s = sender(Variant::Sack, 4);
    drain(&mut s, ms(0));
    s.handle_input(ms(10), &ack(1_000, ms(0), &[(0, 1_000)]));
    s.handle_input(ms(10), &ack(u64::MAX, ms(0), &[]));
    assert_eq!(s.stats().acks_ignored, 2);
    assert_eq!(s.stats().snd_una, 0);
    // A future echo gives a zero sample, not a panic.
    s.handle_input(ms(10), &ack(1, ms(99), &[(3, 2), (2, 1_000_000)]));
    assert_eq!(s.stats().snd_una, 1);
}

#[test]
fn dummy_echoes_are_not_dupacks() {
    let mut s = sender(Variant::NewReno, 10);
    drain(&mut s, ms(0));
    for _ in 0..5 {
        let mut a = ack(0, ms(0), &[]);
        a.dummy_echo = true;
        s.handle_input(ms(50), &a);
    }
    assert_eq!(s.stats().dupacks, 0);
    assert!(!s.stats().in_recovery);
}

#[test]
fn timeout_collapses_window_and_backs_off() {
    let mut s = sender(Variant::NewReno, 4);
    assert_eq!(drain(&mut s, ms(0)).len(), 4);
    assert_eq!(s.poll_timeout(), Some(ms(1000)));
    // A spurious wake-up does nothing.
    s.handle_timeout(ms(999));
    assert_eq!(s.stats().timeouts, 0);
    assert!(drain(&mut s, ms(999)).is_empty());
    s.handle_timeout(ms(1000));
    let st = s.stats();
    assert_eq!((st.timeouts, st.cwnd, st.ssthresh), (1, 1.0, 2.0));
    assert_eq!(st.rto, Duration::from_secs(2));
    assert_eq!(seqs(&drain(&mut s, ms(1000))), vec![(0, true)]);
    assert_eq!(s.poll_timeout(), Some(ms(3000)));
    s.handle_timeout(ms(3000));
    assert_eq!(s.stats().rto, Duration::from_secs(4));
    assert_eq!(s.stats().ssthresh, 2.0);
    assert_eq!(seqs(&drain(&mut s, ms(3000))), vec![(0, true)]);
    assert_eq!(s.poll_timeout(), Some(ms(7000)));
    // The retransmission is finally acknowledged: a new sample ends the
    // backoff and go-back-N resends 1 (slow start: cwnd 2).
    s.handle_input(ms(7100), &ack(1, ms(7000), &[]));
    let st = s.stats();
    assert_eq!(st.cwnd, 2.0);
    assert_eq!(st.rto, Duration::from_secs(1));
    assert_eq!(seqs(&drain(&mut s, ms(7100))), vec![(1, true), (2, true)]);
}

/// Karn timing (ns-2's): the ACK of a retransmission gives no sample, so
/// the backoff survives it; only a segment sent once and timed ends it.
/// With timestamps the same ACK ends it (previous test).
#[test]
fn karn_timing_keeps_backoff_until_a_fresh_segment_is_acked() {
    let cfg = SenderConfig {
        variant: Variant::NewReno,
        initial_window: 4,
        limited_transmit: false,
        rtt_timing: RttTiming::Karn,
        ..SenderConfig::default()
    };
    let mut s = TcpSender::new(cfg, ms(0));
    s.push_data(1_000_000);
    assert_eq!(drain(&mut s, ms(0)).len(), 4);
    // Segment 0 is timed; its ACK at 300 ms is the first sample.
    s.handle_input(ms(300), &ack(1, ms(0), &[]));
    assert_eq!(s.stats().srtt, Some(Duration::from_millis(300)));
    // Segments 1..3 are ACKed without a sample: only one is timed at a
    // time (the next timed one is 4, sent at 300 ms).
    let sent = drain(&mut s, ms(300));
    assert_eq!(sent[0].seq, 4);
    s.handle_input(ms(350), &ack(4, ms(10), &[]));
    assert_eq!(s.stats().srtt, Some(Duration::from_millis(300)));
    // 4 is acknowledged 500 ms after it left: a sample of 500 ms.
    s.handle_input(ms(800), &ack(5, ms(300), &[]));
    let srtt = s.stats().srtt.unwrap();
    assert_eq!(srtt, Duration::from_micros(325_000), "7/8*300 + 1/8*500");
    // Everything outstanding is lost: two timeouts back the timer off 4x.
    let out = drain(&mut s, ms(800));
    assert!(!out.is_empty());
    let t1 = s.poll_timeout().unwrap();
    s.handle_timeout(t1);
    assert_eq!(seqs(&drain(&mut s, t1))[0], (5, true));
    let t2 = s.poll_timeout().unwrap();
    s.handle_timeout(t2);
    let backed_off = s.stats().rto;
    assert_eq!(s.stats().timeouts, 2);
    drain(&mut s, t2);
    // The retransmission of 5 is acknowledged: no sample (Karn), the
    // backoff stays, the RTO is unchanged.
    s.handle_input(t2 + Duration::from_millis(300), &ack(6, t2, &[]));
    assert_eq!(s.stats().srtt, Some(srtt));
    assert_eq!(s.stats().rto, backed_off);
    // Go-back-N resends what is left (retransmissions, not timed); once
    // new data goes out and is acknowledged, the sample ends the backoff.
    let mut now = t2 + Duration::from_millis(300);
    let mut next_ack = 6;
    loop {
        let out = drain(&mut s, now);
        assert!(!out.is_empty());
        let fresh = out.iter().find(|d| !d.retransmit).map(|d| d.seq);
        now += Duration::from_millis(300);
        next_ack = out.iter().map(|d| d.seq + 1).max().unwrap().max(next_ack);
        s.handle_input(now, &ack(next_ack, now, &[]));
        if fresh.is_some() {
            break;
        }
        assert_eq!(s.stats().rto, backed_off, "no sample from a retransmission");
    }
    assert!(
        s.stats().rto < backed_off,
        "a fresh sample ends the backoff"
    );
    assert_eq!(s.stats().rto, Duration::from_secs(1));
}

#[test]
fn all_acked_once_per_push_with_short_last_segment() {
    let mut s2 = TcpSender::new(SenderConfig::default(), ms(0));
    s2.push_data(2_500);
    let out = drain(&mut s2, ms(0));
    assert_eq!(
        out.iter().map(|d| d.len).collect::<Vec<_>>(),
        vec![1000, 1000, 500]
    );
    s2.handle_input(ms(10), &ack(3, ms(0), &[]));
    assert_eq!(s2.stats().acked_bytes, 2_500);
    assert_eq!(s2.poll_event(), Some(SenderEvent::AllAcked));
    assert_eq!(s2.poll_event(), None);
    assert_eq!(s2.poll_timeout(), None);
    s2.push_data(1_000);
    assert_eq!(seqs(&drain(&mut s2, ms(20))), vec![(3, false)]);
    s2.handle_input(ms(30), &ack(4, ms(20), &[]));
    assert_eq!(s2.poll_event(), Some(SenderEvent::AllAcked));
    assert_eq!(s2.stats().acked_bytes, 3_500);
}

// ---------------------------------------------------------------------
// Closed loop.

struct Link<T> {
    delay: Duration,
    /// Serialisation time per packet (zero: infinitely fast).
    per_pkt: Duration,
    busy_until: Instant,
    q: VecDeque<(Instant, T)>,
}

impl<T> Link<T> {
    fn new(delay: Duration, per_pkt: Duration) -> Self {
        Link {
            delay,
            per_pkt,
            busy_until: Instant::ZERO,
            q: VecDeque::new(),
        }
    }
    fn send(&mut self, now: Instant, t: T) {
        let start = self.busy_until.max(now);
        self.busy_until = start + self.per_pkt;
        self.q.push_back((self.busy_until + self.delay, t));
    }
    fn next(&self) -> Option<Instant> {
        self.q.front().map(|x| x.0)
    }
}

pub(super) struct Outcome {
    pub(super) s: TcpSender,
    pub(super) r: TcpReceiver,
    pub(super) all_acked: u32,
    pub(super) end: Instant,
    max_steps_per_ack: u64,
    max_flight: u64,
}

/// Run a sender and receiver over a fixed-delay link until `until` or until
/// the finite transfer is acknowledged. `lose` sees each data transmission.
pub(super) fn run(
    scfg: SenderConfig,
    rcfg: ReceiverConfig,
    data: Option<u64>,
    per_pkt: Duration,
    until: Instant,
    mut lose: impl FnMut(&TcpData) -> bool,
) -> Outcome {
    let delay = Duration::from_millis(250);
    let mut s = TcpSender::new(scfg, Instant::ZERO);
    match data {
        Some(b) => s.push_data(b),
        None => s.set_unlimited(),
    }
    let mut r = TcpReceiver::new(rcfg);
    let mut fwd: Link<TcpData> = Link::new(delay, per_pkt);
    let mut rev: Link<TcpAck> = Link::new(delay, Duration::ZERO);
    let mut now = Instant::ZERO;
    let mut all_acked = 0;
    let mut max_steps = 0;
    let mut max_flight = 0;
    let mut flush = |s: &mut TcpSender, now: Instant, fwd: &mut Link<TcpData>, all: &mut u32| {
        while let Some(d) = s.poll_transmit(now) {
            assert!(d.len as u64 <= s.config().mss as u64);
            if !lose(&d) {
                fwd.send(now, d);
            }
        }
        while let Some(SenderEvent::AllAcked) = s.poll_event() {
            *all += 1;
        }
    };
    flush(&mut s, now, &mut fwd, &mut all_acked);
    loop {
        let next = [fwd.next(), rev.next(), s.poll_timeout(), r.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next else { break };
        if next > until {
            break;
        }
        assert!(next >= now, "time went backwards");
        now = next;
        while fwd.next().is_some_and(|t| t <= now) {
            let (_, d) = fwd.q.pop_front().unwrap();
            r.handle_input(now, &d);
            while let Some(a) = r.poll_transmit(now) {
                rev.send(now, a);
            }
        }
        while rev.next().is_some_and(|t| t <= now) {
            let (_, a) = rev.q.pop_front().unwrap();
            let before = s.scoreboard_steps();
            s.handle_input(now, &a);
            flush(&mut s, now, &mut fwd, &mut all_acked);
            max_steps = max_steps.max(s.scoreboard_steps() - before);
            let st = s.stats();
            max_flight = max_flight.max(st.snd_max - st.snd_una);
        }
        if s.poll_timeout().is_some_and(|t| t <= now) {
            s.handle_timeout(now);
            flush(&mut s, now, &mut fwd, &mut all_acked);
        }
        if r.poll_timeout().is_some_and(|t| t <= now) {
            r.handle_timeout(now);
            while let Some(a) = r.poll_transmit(now) {
                rev.send(now, a);
            }
        }
        if data.is_some() && s.is_idle() && fwd.q.is_empty() && rev.q.is_empty() {
            break;
        }
    }
    Outcome {
        s,
        r,
        all_acked,
        end: now,
        max_steps_per_ack: max_steps,
        max_flight,
    }
}

const VARIANTS: [Variant; 3] = [Variant::Reno, Variant::NewReno, Variant::Sack];

fn scfg(variant: Variant) -> SenderConfig {
    SenderConfig {
        variant,
        ..SenderConfig::default()
    }
}

#[test]
fn finite_transfer_delivers_every_byte_under_loss() {
    let bytes = 1_234_567;
    for variant in VARIANTS {
        for delayed_ack in [false, true] {
            for pattern in 0..4u64 {
                let mut n = 0u64;
                let mut rng = Rng::new(pattern);
                let lose = |d: &TcpData| {
                    n += 1;
                    match pattern {
                        0 => false,
                        // Every 37th transmission, retransmissions included.
                        1 => n.is_multiple_of(37),
                        // Bursts: three consecutive first transmissions.
                        2 => !d.retransmit && d.seq % 100 < 3 && d.seq > 10,
                        _ => rng.chance(0.02),
                    }
                };
                let rcfg = ReceiverConfig {
                    delayed_ack,
                    ..ReceiverConfig::default()
                };
                let o = run(
                    scfg(variant),
                    rcfg,
                    Some(bytes),
                    Duration::from_micros(800),
                    Instant(3_600_000_000_000),
                    lose,
                );
                let what = format!("{variant:?} delack={delayed_ack} pattern={pattern}");
                assert_eq!(o.r.stats().delivered_bytes, bytes, "{what}");
                assert_eq!(o.s.stats().acked_bytes, bytes, "{what}");
                assert_eq!(o.all_acked, 1, "{what}");
                assert!(o.s.is_idle(), "{what}");
                assert_eq!(o.s.poll_timeout(), None, "{what}");
                if pattern == 0 {
                    assert_eq!(o.s.stats().retransmits, 0, "{what}");
                }
            }
        }
    }
}

#[test]
fn sack_beats_newreno_with_many_losses_per_window() {
    // Six first-transmission losses in one window: NewReno needs six RTTs
    // (or a timeout), SACK repairs them in about one.
    let lost = [40u64, 45, 50, 55, 60, 65];
    let mut ends = Vec::new();
    for variant in [Variant::NewReno, Variant::Sack] {
        let o = run(
            scfg(variant),
            ReceiverConfig::default(),
            Some(200_000),
            Duration::from_micros(800),
            Instant(600_000_000_000),
            |d: &TcpData| !d.retransmit && lost.contains(&d.seq),
        );
        assert_eq!(o.r.stats().delivered_bytes, 200_000);
        ends.push((o.end, o.s.stats()));
    }
    let (nr_end, nr) = ends[0];
    let (sk_end, sk) = ends[1];
    assert_eq!(sk.timeouts, 0);
    assert_eq!(sk.fast_retransmits, 1);
    assert_eq!(sk.retransmits, 6);
    assert!(
        sk_end < nr_end,
        "SACK {sk_end} vs NewReno {nr_end} ({nr:?})"
    );
}

#[test]
fn unlimited_long_run_large_window_is_o1_per_ack() {
    for variant in VARIANTS {
        let mut rng = Rng::new(7);
        let o = run(
            SenderConfig {
                variant,
                max_window: 10_000,
                initial_ssthresh: 10_000,
                min_rto: Duration::from_millis(200),
                ..SenderConfig::default()
            },
            ReceiverConfig {
                rwnd: 20_000,
                ..ReceiverConfig::default()
            },
            None,
            // 100 Mb/s: a 10,000-segment window fits in the pipe.
            Duration::from_micros(80),
            Instant(120_000_000_000),
            |_| rng.chance(2e-5),
        );
        let st = o.s.stats();
        let what = format!("{variant:?} max flight {} {st:?}", o.max_flight);
        assert!(o.r.stats().delivered_bytes > 100_000_000, "{what}");
        assert!(o.max_flight > 5_000, "{what}");
        assert!(st.fast_retransmits > 5, "{what}");
        assert_eq!(o.all_acked, 0);
        assert!(st.rtt_samples > 0 && st.sum_rtt >= Duration::from_millis(500));
        if variant == Variant::Sack {
            // Amortised O(1): total scoreboard work per ACK stays a small
            // constant although the window reaches 10,000 segments. (One
            // ACK may skip HighRxt over a long SACKed run, once per
            // recovery, so the maximum is bounded by the window only.)
            let per_ack = o.s.scoreboard_steps() as f64 / st.acks_received as f64;
            assert!(per_ack < 4.0, "{per_ack} steps per ACK; {what}");
            assert!(o.max_steps_per_ack <= 2 * o.max_flight, "{what}");
        }
    }
}

// ---- SACK recovery: RFC 6675 against ns-2 Sack1 (issue #18) ----

fn sack_sender(recovery: SackRecovery, iw: u32, lt: bool) -> TcpSender {
    let cfg = SenderConfig {
        variant: Variant::Sack,
        initial_window: iw,
        limited_transmit: lt,
        sack_recovery: recovery,
        ..SenderConfig::default()
    };
    let mut s = TcpSender::new(cfg, ms(0));
    s.push_data(1_000_000);
    s
}

/// 0..3 sent, 0 arrives (slow start: cwnd 5, 4 and 5 sent), 1 and 3 lost,
/// 2, 4 and 5 SACKed: fast retransmit of 1 with FlightSize 5. Then the
/// retransmission of 1 arrives: a partial ACK for 3, with only two
/// segments (4, 5) SACKed above the new hole at 3.
fn partial_ack_with_hole_at_una(recovery: SackRecovery) -> (TcpSender, Vec<TcpData>) {
    let mut s = sack_sender(recovery, 4, false);
    assert_eq!(drain(&mut s, ms(0)).len(), 4);
    s.handle_input(ms(100), &ack(1, ms(0), &[]));
    assert_eq!(seqs(&drain(&mut s, ms(100))), vec![(4, false), (5, false)]);
    s.handle_input(ms(101), &ack(1, ms(0), &[(2, 3)]));
    s.handle_input(ms(102), &ack(1, ms(0), &[(4, 5), (2, 3)]));
    assert!(drain(&mut s, ms(102)).is_empty());
    s.handle_input(ms(103), &ack(1, ms(0), &[(4, 6), (2, 3)]));
    // The third duplicate ACK: fast retransmit of 1 only.
    assert_eq!(seqs(&drain(&mut s, ms(103))), vec![(1, true)]);
    let st = s.stats();
    assert!(st.in_recovery);
    match recovery {
        SackRecovery::Rfc6675 => {
            // RFC 6675 (4.2): cwnd = ssthresh = max(FlightSize / 2, 2) =
            // 2. SetPipe: 1 (lost, retransmitted) counts once, 3 (not lost:
            // two SACKed above) once: pipe 2 = cwnd.
            assert_eq!((st.cwnd, st.ssthresh, st.pipe), (2.0, 2.0, 2));
        }
        SackRecovery::Ns2 | SackRecovery::Ns2Linux => {
            // slowdown(): halfwin = cwnd 5 / 2 = 2.5; ssthresh int(2.5) =
            // 2; pipe_ = maxseq_ - highest_ack_ - numdupacks_ = 5 - 3.
            assert_eq!((st.cwnd, st.ssthresh, st.pipe), (2.5, 2.0, 2));
        }
    }
    s.handle_input(ms(203), &ack(3, ms(103), &[(4, 6)]));
    let out = drain(&mut s, ms(203));
    (s, out)
}

/// The mechanism of issue #18, RFC 6675 side: after the partial ACK the
/// hole at snd_una has two SACKed segments above it, so IsLost() is false,
/// NextSeg() rule (2) sends new data, and pipe still counts the hole. If
/// that new segment is lost too, nothing more goes out: the
/// retransmission timer fires with snd_una never retransmitted.
#[test]
fn rfc6675_partial_ack_sends_new_data_before_the_unlost_hole() {
    let (mut s, out) = partial_ack_with_hole_at_una(SackRecovery::Rfc6675);
    assert_eq!(seqs(&out), vec![(6, false)], "rule (2): new data, not 3");
    let st = s.stats();
    assert!(st.in_recovery);
    // pipe: 3 (not lost) + 6 = 2 = cwnd.
    assert_eq!((st.pipe, st.cwnd), (2, 2.0));
    // Segment 6 is lost: no ACK comes back, the timer fires.
    let rto = s.poll_timeout().expect("timer running");
    assert!(drain(&mut s, Instant(rto.0 - 1_000_000)).is_empty());
    s.handle_timeout(rto);
    assert_eq!(s.stats().timeouts, 1);
    assert_eq!(seqs(&drain(&mut s, rto))[0], (3, true));
}

/// ns-2 Sack1 on the same events: the partial ACK takes pipe_ down twice
/// (once per ACK, once more for a partial ACK), and GetNextRetran() gives
/// the hole at 3 (SACKed data above it) before new data.
#[test]
fn ns2_sack1_partial_ack_retransmits_the_hole_first() {
    let (s, out) = partial_ack_with_hole_at_una(SackRecovery::Ns2);
    // pipe_ 2 - 1 - 1 = 0 < int(cwnd_) = 2: two segments, hole first.
    assert_eq!(seqs(&out), vec![(3, true), (6, false)]);
    let st = s.stats();
    assert!(st.in_recovery);
    assert_eq!((st.pipe, st.timeouts), (2, 0));
}

/// ns-2 Sack1 halves the window with a floor of 1 segment (tcp.cc
/// slowdown()); RFC 6675 sets cwnd = ssthresh >= 2. Limited Transmit lets
/// recovery start at a window of 2.
#[test]
fn ns2_sack1_cwnd_floor_is_one_segment() {
    for (recovery, cwnd) in [(SackRecovery::Rfc6675, 2.0), (SackRecovery::Ns2, 1.0)] {
        let mut s = sack_sender(recovery, 2, true);
        assert_eq!(drain(&mut s, ms(0)).len(), 2);
        // 0 lost; 1, 2, 3 arrive. The first two duplicate ACKs each send a
        // new segment (Limited Transmit), the third starts recovery.
        s.handle_input(ms(100), &ack(0, ms(0), &[(1, 2)]));
        assert_eq!(seqs(&drain(&mut s, ms(100))), vec![(2, false)]);
        s.handle_input(ms(101), &ack(0, ms(0), &[(1, 3)]));
        assert_eq!(seqs(&drain(&mut s, ms(101))), vec![(3, false)]);
        s.handle_input(ms(200), &ack(0, ms(0), &[(1, 4)]));
        let out = drain(&mut s, ms(200));
        let st = s.stats();
        assert!(st.in_recovery, "{recovery:?}");
        assert_eq!((st.cwnd, st.ssthresh), (cwnd, 2.0), "{recovery:?}");
        // RFC: pipe = 1 (the retransmission) < cwnd 2, one new segment.
        // ns-2: pipe_ = 4 - 0 - 3 = 1, not below int(cwnd_) = 1.
        let want: Vec<(u64, bool)> = match recovery {
            SackRecovery::Rfc6675 => vec![(0, true), (4, false)],
            SackRecovery::Ns2 | SackRecovery::Ns2Linux => vec![(0, true)],
        };
        assert_eq!(seqs(&out), want, "{recovery:?}");
    }
}

/// RFC 6675 §5 (4.3) sets RescueRxt to the retransmitted segment on entry,
/// so NextSeg() rule (4) may not send the rescue until HighACK passes it
/// (a partial ACK beyond the first retransmission); then exactly once per
/// recovery (RescueRxt = RecoveryPoint).
#[test]
fn rescue_retransmission_waits_for_highack_beyond_rescuerxt() {
    let cfg = SenderConfig {
        variant: Variant::Sack,
        initial_window: 6,
        limited_transmit: false,
        ..SenderConfig::default()
    };
    let mut s = TcpSender::new(cfg, ms(0));
    // Six segments and no more data: rule (2) never applies.
    s.push_data(6_000);
    assert_eq!(drain(&mut s, ms(0)).len(), 6);
    // 0 and 5 lost; 1, 2, 3 arrive: recovery, cwnd = ssthresh = 3.
    s.handle_input(ms(100), &ack(0, ms(0), &[(1, 2)]));
    s.handle_input(ms(101), &ack(0, ms(0), &[(1, 3)]));
    s.handle_input(ms(102), &ack(0, ms(0), &[(1, 4)]));
    // Pipe: 0 retransmitted (1), 4 and 5 not lost (2) = 3 = cwnd. 4
    // arrives: pipe 2, room for one, rules (1)-(3) find nothing; HighACK
    // is below RescueRxt (segment 0): no rescue yet.
    assert_eq!(seqs(&drain(&mut s, ms(102))), vec![(0, true)]);
    assert_eq!(s.stats().cwnd, 3.0);
    s.handle_input(ms(103), &ack(0, ms(0), &[(1, 5)]));
    assert!(
        drain(&mut s, ms(103)).is_empty(),
        "no rescue before HighACK > RescueRxt"
    );
    // The retransmission of 0 arrives: partial ACK for 5 (RecoveryPoint
    // is 6). HighACK is now beyond RescueRxt: one rescue of 5.
    s.handle_input(ms(202), &ack(5, ms(102), &[]));
    assert_eq!(seqs(&drain(&mut s, ms(202))), vec![(5, true)]);
    assert!(s.stats().in_recovery);
    // A further duplicate ACK: RescueRxt is RecoveryPoint now, no second
    // rescue.
    s.handle_input(ms(203), &ack(5, ms(102), &[]));
    assert!(drain(&mut s, ms(203)).is_empty());
    assert_eq!(s.stats().retransmits, 2);
}

/// In a closed loop with random and burst losses (retransmissions
/// included), ns-2 recovery delivers every byte and ends idle.
#[test]
fn ns2_sack1_recovery_delivers_under_loss() {
    let bytes = 1_234_567;
    for pattern in 0..3u64 {
        let mut cfg = scfg(Variant::Sack);
        cfg.sack_recovery = SackRecovery::Ns2;
        let mut n = 0u64;
        let mut rng = Rng::new(pattern);
        let lose = |d: &TcpData| {
            n += 1;
            match pattern {
                0 => n.is_multiple_of(37),
                1 => !d.retransmit && d.seq % 100 < 3 && d.seq > 10,
                _ => rng.chance(0.05),
            }
        };
        let o = run(
            cfg,
            ReceiverConfig::default(),
            Some(bytes),
            Duration::from_micros(800),
            Instant(3_600_000_000_000),
            lose,
        );
        assert_eq!(o.r.stats().delivered_bytes, bytes, "pattern {pattern}");
        assert_eq!(o.all_acked, 1, "pattern {pattern}");
        assert!(o.s.is_idle() && o.s.poll_timeout().is_none());
        assert!(o.s.stats().fast_retransmits > 0, "pattern {pattern}");
    }
}

/// An RTO during RFC 6675 recovery keeps the ssthresh recovery set: RFC
/// 5681 §3.1 eq. (4) is an upper bound ("no more than"), and FlightSize
/// then counts the new data recovery sent while pipe < cwnd. Before, the
/// timeout raised ssthresh to half of everything sent since the loss
/// (here 5 → 21), and on a fast path every slow start after a timeout
/// overshot into the next recovery and timeout (docs/validation.md, "64
/// Mb/s: a trap of the TCP flow").
#[test]
fn rto_in_rfc6675_recovery_does_not_raise_ssthresh() {
    let run = |rto_ssthresh: RtoSsthresh| {
        let cfg = SenderConfig {
            variant: Variant::Sack,
            initial_window: 10,
            limited_transmit: false,
            rto_ssthresh,
            ..SenderConfig::default()
        };
        let mut s = TcpSender::new(cfg, ms(0));
        s.push_data(1_000_000);
        assert_eq!(drain(&mut s, ms(0)).len(), 10);
        // 0 lost, 1-3 arrive: recovery with FlightSize 10, ssthresh 5.
        for (i, hi) in [2u64, 3, 4].into_iter().enumerate() {
            s.handle_input(ms(100 + i as u64), &ack(0, ms(0), &[(1, hi)]));
        }
        assert_eq!(seqs(&drain(&mut s, ms(102)))[0], (0, true));
        assert!(s.stats().in_recovery);
        assert_eq!(s.stats().ssthresh, 5.0);
        // The retransmission of 0 is lost too; everything else arrives, and
        // each SACK lets recovery send new data (pipe: the retransmission).
        let mut t = 103;
        while s.snd_max() < 41 {
            s.handle_input(ms(t), &ack(0, ms(0), &[(1, s.snd_max())]));
            drain(&mut s, ms(t));
            t += 1;
        }
        assert!(
            s.stats().in_recovery,
            "RFC 6675 cannot see the lost retransmission"
        );
        let deadline = s.poll_timeout().expect("RTO armed");
        s.handle_timeout(deadline);
        let st = s.stats();
        assert_eq!(st.timeouts, 1);
        assert_eq!(st.cwnd, 1.0);
        (st.ssthresh, s.snd_max())
    };
    let (ss, max) = run(RtoSsthresh::FlightSize);
    assert!(max >= 41, "recovery sent new data up to {max}");
    // FlightSize / 2 would be 20 or more: the recovery's 5 stays.
    assert_eq!(ss, 5.0, "ssthresh after the RTO (HighData {max})");
    // ns-2's halving of the window is unchanged: min(cwnd, ssthresh) / 2.
    assert_eq!(run(RtoSsthresh::Window).0, 2.0);
}

// ---- The `blocked` cache of poll_transmit (issue 28) ----

/// Random runs of every variant, with and without Limited Transmit and
/// delayed ACKs, a receiver window that sometimes limits, random losses
/// and blackouts (timeouts), finite transfers topped up at random times
/// (also while the cache is set) or unlimited, and a close: every answer
/// the `blocked` cache gives is checked against the full decision
/// (`TcpSender::check_blocked`, run by `poll_transmit` in tests), and the
/// runs use the cache often enough to mean something. A mutator that
/// forgets to clear the cache fails here (checked by removing the clear
/// from `handle_timeout`, `handle_input` and `push_data` in turn).
#[test]
fn blocked_cache_agrees_with_the_full_decision() {
    let mut total_hits = 0;
    let mut rng = Rng::new(28);
    for variant in VARIANTS {
        for lt in [false, true] {
            for delayed_ack in [false, true] {
                for unlimited in [false, true] {
                    let rwnd = [8, 30, 10_000][rng.below(3) as usize];
                    let cfg = SenderConfig {
                        variant,
                        limited_transmit: lt,
                        min_rto: Duration::from_millis(200),
                        ..SenderConfig::default()
                    };
                    let mut s = TcpSender::new(cfg, Instant::ZERO);
                    let mut r = TcpReceiver::new(ReceiverConfig {
                        rwnd,
                        delayed_ack,
                        ..ReceiverConfig::default()
                    });
                    let delay = Duration::from_millis(20);
                    let mut fwd: Link<TcpData> = Link::new(delay, Duration::ZERO);
                    let mut rev: Link<TcpAck> = Link::new(delay, Duration::ZERO);
                    let mut now = Instant::ZERO;
                    if unlimited {
                        s.set_unlimited();
                    } else {
                        s.push_data(50_000);
                    }
                    let mut blackout = 0;
                    for step in 0..30_000u32 {
                        // Drain after every step, as a driver does.
                        while let Some(d) = s.poll_transmit(now) {
                            if blackout > 0 {
                                blackout -= 1;
                            } else if rng.chance(0.003) {
                                // Everything lost for a while: a timeout.
                                blackout = 40;
                            } else if !rng.chance(0.02) {
                                let jitter = Duration::from_micros(rng.below(3000));
                                fwd.send(now + jitter, d);
                            }
                        }
                        if step == 25_000 {
                            s.close();
                            continue;
                        }
                        if !unlimited && rng.chance(0.01) {
                            s.push_data(1 + rng.below(30_000));
                            continue;
                        }
                        let next = [fwd.next(), rev.next(), s.poll_timeout(), r.poll_timeout()]
                            .into_iter()
                            .flatten()
                            .min();
                        let Some(next) = next else {
                            continue;
                        };
                        now = now.max(next);
                        if fwd.next().is_some_and(|t| t <= now) {
                            let (_, d) = fwd.q.pop_front().unwrap();
                            r.handle_input(now, &d);
                            while let Some(a) = r.poll_transmit(now) {
                                rev.send(now, a);
                            }
                        } else if rev.next().is_some_and(|t| t <= now) {
                            let (_, a) = rev.q.pop_front().unwrap();
                            s.handle_input(now, &a);
                        } else if s.poll_timeout().is_some_and(|t| t <= now) {
                            s.handle_timeout(now);
                        } else {
                            r.handle_timeout(now);
                            while let Some(a) = r.poll_transmit(now) {
                                rev.send(now, a);
                            }
                        }
                    }
                    total_hits += s.blocked_hits;
                    let st = s.stats();
                    let what = format!(
                        "{variant:?} lt={lt} delack={delayed_ack} unlimited={unlimited} \
                         rwnd={rwnd} timeouts={}",
                        st.timeouts
                    );
                    assert!(s.blocked_hits > 100, "{} hits; {what}", s.blocked_hits);
                    assert!(st.timeouts > 0, "{what}");
                }
            }
        }
    }
    assert!(total_hits > 10_000, "{total_hits} hits");
}
