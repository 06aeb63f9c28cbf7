//! RACK-TLP (RFC 8985) in the SACK sender: scripted tests of the
//! reordering window, the lost-retransmission case and the tail loss
//! probe, and closed-loop runs against the RFC 6675 default.

use super::tests::{ack, drain, ms, run, seqs};
use super::*;
use crate::rng::Rng;
use crate::time::{Duration, Instant};

fn cfg(loss_detection: LossDetection, iw: u32) -> SenderConfig {
    SenderConfig {
        variant: Variant::Sack,
        initial_window: iw,
        limited_transmit: false,
        loss_detection,
        ..SenderConfig::default()
    }
}

const RACK: LossDetection = LossDetection::Rack { tlp: true };
const RACK_NO_TLP: LossDetection = LossDetection::Rack { tlp: false };

/// Ten segments out at t = 0, segment 0 ACKed at 100 ms (min_RTT = SRTT =
/// 100 ms; slow start sends 10 and 11), then segment 2 SACKed at 101 ms
/// with 1 missing.
fn one_sack_above_a_hole() -> TcpSender {
    let mut s = TcpSender::new(cfg(RACK, 10), ms(0));
    s.push_data(1_000_000);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    s.handle_input(ms(100), &ack(1, ms(0), &[]));
    assert_eq!(
        seqs(&drain(&mut s, ms(100))),
        vec![(10, false), (11, false)]
    );
    s.handle_input(ms(101), &ack(1, ms(0), &[(2, 3)]));
    s
}

/// RFC 8985 §6.2 step 4: with no reordering seen and fewer than DupThresh
/// segments SACKed, RACK.reo_wnd = min_RTT/4, so a segment sent before a
/// delivered one is lost only RACK.rtt + min_RTT/4 after it was sent;
/// step 5 arms the reordering timer for that moment, and its expiry marks
/// the segment lost and starts recovery (no third duplicate ACK needed).
#[test]
fn reordering_window_is_a_quarter_min_rtt_then_the_timer_marks_the_loss() {
    let mut s = one_sack_above_a_hole();
    // Segment 2 was sent at 0 and delivered at 101: RACK.rtt = 101 ms.
    // Segment 1 (sent at 0, lower sequence: "sent before") is lost at
    // 0 + 101 + 25 = 126 ms, not before.
    assert!(drain(&mut s, ms(101)).is_empty());
    assert!(!s.stats().in_recovery);
    assert_eq!(s.poll_timeout(), Some(ms(126)), "the RACK reordering timer");
    s.handle_timeout(ms(125));
    assert!(!s.stats().in_recovery);
    s.handle_timeout(ms(126));
    let st = s.stats();
    assert!(st.in_recovery);
    assert_eq!(st.rack_marked_lost, 1);
    assert_eq!(seqs(&drain(&mut s, ms(126)))[0], (1, true));
}

/// RFC 8985 §6.2 step 4: once DupThresh segments are SACKed (no
/// reordering seen) the window is 0, so the third SACK marks the hole
/// lost at once, as RFC 6675's DupThresh rule would.
#[test]
fn reordering_window_is_zero_with_dupthresh_sacked() {
    let mut s = one_sack_above_a_hole();
    s.handle_input(ms(102), &ack(1, ms(0), &[(2, 4)]));
    assert!(!s.stats().in_recovery, "two SACKed: window still min_RTT/4");
    s.handle_input(ms(103), &ack(1, ms(0), &[(2, 5)]));
    assert!(s.stats().in_recovery, "three SACKed: window 0");
    assert_eq!(seqs(&drain(&mut s, ms(103)))[0], (1, true));
}

/// RFC 8985 §6.2 step 3: a segment sent once and delivered below the
/// highest delivered one was reordered; from then on the window stays
/// min_RTT/4 even with DupThresh SACKed (step 4).
#[test]
fn reordering_seen_keeps_the_window_open() {
    let mut s = one_sack_above_a_hole();
    // Segment 1 arrives after 2: reordering, not loss.
    s.handle_input(ms(102), &ack(3, ms(0), &[]));
    assert!(!s.stats().in_recovery);
    // Now 3 is missing and 4, 5, 6 are SACKed: three, but the window is
    // min_RTT/4 = 25 ms, so nothing is lost before 0 + 104 + 25.
    s.handle_input(ms(104), &ack(3, ms(0), &[(4, 7)]));
    assert!(!s.stats().in_recovery);
    assert_eq!(s.poll_timeout(), Some(ms(129)));
    s.handle_timeout(ms(129));
    assert!(s.stats().in_recovery);
}

/// RFC 8985 §3.1 / §6.2: RACK sees a lost retransmission. Segment 40 is
/// lost, and so is its first retransmission; segments sent after that
/// retransmission are SACKed, so RACK marks it lost again one RACK.rtt
/// after it left, and the third transmission repairs the hole with no
/// timeout. RFC 6675's IsLost() cannot see it: the same losses cost a
/// retransmission timeout.
#[test]
fn lost_retransmission_is_detected_without_rto() {
    let mut outcomes = Vec::new();
    for ld in [LossDetection::Rfc6675, RACK_NO_TLP, RACK] {
        let mut tx40 = 0;
        let o = run(
            cfg(ld, 4),
            ReceiverConfig::default(),
            Some(300_000),
            Duration::from_millis(1),
            Instant(600_000_000_000),
            |d: &TcpData| {
                if d.seq == 40 {
                    tx40 += 1;
                    return tx40 <= 2;
                }
                false
            },
        );
        assert_eq!(o.r.stats().delivered_bytes, 300_000, "{ld:?}");
        let st = o.s.stats();
        outcomes.push((ld, st.timeouts, st.lost_retransmits, o.end));
    }
    let (_, rfc_timeouts, _, rfc_end) = outcomes[0];
    assert_eq!(
        rfc_timeouts, 1,
        "RFC 6675 waits for the timer: {outcomes:?}"
    );
    for &(ld, timeouts, lost_rx, end) in &outcomes[1..] {
        assert_eq!((timeouts, lost_rx), (0, 1), "{ld:?}: {outcomes:?}");
        assert!(end < rfc_end, "{ld:?} finishes first: {outcomes:?}");
    }
}

/// RFC 8985 §7.2-§7.3: with the last two segments of a transfer lost no
/// ACK comes back to start recovery. The probe timer fires 2·SRTT after
/// the last ACK (two segments in flight: no WCDelAckT), the probe
/// retransmits the highest segment (no new data to send), its SACK lets
/// RACK mark the other lost (§7.4.1), and recovery repairs it, with no
/// RTO. Without TLP the timer is the RTO.
#[test]
fn tlp_probes_after_two_srtt_and_repairs_a_tail_loss() {
    for ld in [RACK_NO_TLP, RACK] {
        let mut s = TcpSender::new(cfg(ld, 10), ms(0));
        s.push_data(10_000);
        assert_eq!(drain(&mut s, ms(0)).len(), 10);
        // 0..7 arrive; 8 and 9 are lost. SRTT = 100 ms (first sample).
        s.handle_input(ms(100), &ack(8, ms(0), &[]));
        assert!(drain(&mut s, ms(100)).is_empty());
        assert_eq!(s.stats().srtt, Some(Duration::from_millis(100)));
        let rto = ms(100) + s.stats().rto;
        if ld == RACK_NO_TLP {
            assert_eq!(s.poll_timeout(), Some(rto), "no TLP: the RTO");
            continue;
        }
        assert_eq!(s.poll_timeout(), Some(ms(300)), "PTO = 2·SRTT");
        s.handle_timeout(ms(300));
        assert_eq!(seqs(&drain(&mut s, ms(300))), vec![(9, true)]);
        assert_eq!(s.stats().tlp_probes, 1);
        // The probe arrives: its SACK delivers a segment sent at 300 ms,
        // after 8 (sent at 0), so 8 is lost (0 + 100 + 25 <= 400).
        s.handle_input(ms(400), &ack(8, ms(0), &[(9, 10)]));
        let st = s.stats();
        assert!(st.in_recovery);
        assert_eq!(seqs(&drain(&mut s, ms(400))), vec![(8, true)]);
        s.handle_input(ms(500), &ack(10, ms(400), &[]));
        let st = s.stats();
        assert_eq!((st.timeouts, st.acked_bytes), (0, 10_000));
        assert!(!st.in_recovery);
        assert_eq!(s.poll_timeout(), None);
    }
}

/// RFC 8985 §7.2: one segment in flight adds WCDelAckT (200 ms) to the
/// PTO, for a receiver that may delay its ACK; and the PTO never falls
/// after the RTO.
#[test]
fn pto_adds_delayed_ack_allowance_for_one_segment_and_never_passes_rto() {
    let mut s = TcpSender::new(cfg(RACK, 1), ms(0));
    s.push_data(2_000);
    assert_eq!(drain(&mut s, ms(0)).len(), 1);
    // No RTT sample yet: PTO 1 s, capped by the 1 s initial RTO.
    assert_eq!(s.poll_timeout(), Some(ms(1000)));
    s.handle_input(ms(100), &ack(1, ms(0), &[]));
    // cwnd 2 but one segment left to send: one in flight.
    assert_eq!(drain(&mut s, ms(100)).len(), 1);
    assert_eq!(s.poll_timeout(), Some(ms(100 + 200 + 200)));
}

/// Closed loop: every byte arrives under random, burst and
/// retransmission losses with RACK-TLP, as with RFC 6675, and a
/// bounded amount of work per ACK.
#[test]
fn rack_finite_transfer_delivers_every_byte_under_loss() {
    let bytes = 1_234_567;
    for ld in [RACK, RACK_NO_TLP] {
        for delayed_ack in [false, true] {
            for pattern in 0..4u64 {
                let mut n = 0u64;
                let mut rng = Rng::new(pattern);
                let lose = |d: &TcpData| {
                    n += 1;
                    match pattern {
                        0 => false,
                        1 => n.is_multiple_of(37),
                        2 => !d.retransmit && d.seq % 100 < 3 && d.seq > 10,
                        _ => rng.chance(0.02),
                    }
                };
                let rcfg = ReceiverConfig {
                    delayed_ack,
                    ..ReceiverConfig::default()
                };
                let o = run(
                    cfg(ld, 4),
                    rcfg,
                    Some(bytes),
                    Duration::from_micros(800),
                    Instant(3_600_000_000_000),
                    lose,
                );
                let what = format!("{ld:?} delack={delayed_ack} pattern={pattern}");
                assert_eq!(o.r.stats().delivered_bytes, bytes, "{what}");
                assert_eq!(o.s.stats().acked_bytes, bytes, "{what}");
                assert_eq!(o.all_acked, 1, "{what}");
                assert!(o.s.is_idle(), "{what}");
                assert_eq!(o.s.poll_timeout(), None, "{what}");
                let st = o.s.stats();
                if pattern == 0 {
                    assert_eq!(st.retransmits, 0, "{what}");
                }
                assert_eq!(st.pipe, 0, "{what}");
            }
        }
    }
}

/// At 2 % random loss RACK-TLP needs fewer timeouts than RFC 6675 over
/// the same loss pattern (a lost retransmission costs RFC 6675 an RTO).
#[test]
fn rack_has_fewer_timeouts_than_rfc6675_at_two_percent_loss() {
    let mut timeouts = Vec::new();
    for ld in [LossDetection::Rfc6675, RACK] {
        let mut rng = Rng::new(7);
        let o = run(
            cfg(ld, 10),
            ReceiverConfig::default(),
            None,
            Duration::from_millis(1),
            Instant(300_000_000_000),
            |_: &TcpData| rng.chance(0.02),
        );
        timeouts.push((o.s.stats().timeouts, o.s.stats().lost_retransmits));
    }
    assert!(timeouts[1].0 < timeouts[0].0, "{timeouts:?}");
    assert!(timeouts[1].1 > 0, "{timeouts:?}");
}

/// RFC 6937 §3.1 (PRR) against RFC 6675 §5 (4.2): 20 segments out,
/// segment 0 lost, then one SACK per ACK for 1..19 (RTT 100 ms). Entry:
/// ssthresh = 10, RecoverFS = 20. While pipe > ssthresh PRR sends
/// ceil(prr_delivered · 10 / 20) − prr_out: about one segment for every
/// two delivered, from the first ACKs on. RFC 6675 sets cwnd = 10 at
/// once and sends nothing until pipe falls below it, then one per ACK.
#[test]
fn prr_spreads_the_reduction_over_the_recovery() {
    let mut sent_after = Vec::new();
    let mut end_pipe = Vec::new();
    for prr in [false, true] {
        let mut s = TcpSender::new(
            SenderConfig {
                prr,
                ..cfg(LossDetection::Rfc6675, 20)
            },
            ms(0),
        );
        s.push_data(1_000_000);
        assert_eq!(drain(&mut s, ms(0)).len(), 20);
        let mut counts = Vec::new();
        let mut total = 0;
        for k in 1..20u64 {
            s.handle_input(ms(100 + k), &ack(0, ms(0), &[(1, 1 + k)]));
            total += drain(&mut s, ms(100 + k)).len();
            counts.push(total);
        }
        assert!(s.stats().in_recovery);
        assert_eq!(s.stats().ssthresh, 10.0);
        sent_after.push(counts);
        end_pipe.push(s.stats().pipe);
    }
    let (rfc, prr) = (&sent_after[0], &sent_after[1]);
    // DupThresh: recovery from the third SACK (k = 3). RFC 6675: the fast
    // retransmission, then nothing while pipe >= cwnd = 10.
    assert_eq!(rfc[2], 1, "{rfc:?}");
    assert_eq!(rfc[9], 1, "{rfc:?}");
    // PRR: after the k-th ACK (recovery from k = 3, one segment
    // delivered per ACK), while pipe > ssthresh (pipe = 19 - k + sent: through k = 14),
    // sent = ceil(prr_delivered · 10 / 20), prr_delivered = k - 2.
    for (i, &n) in prr.iter().enumerate().take(14).skip(2) {
        let delivered = i as u64 - 1;
        let want = (delivered * 10).div_ceil(20) as usize;
        assert_eq!(n, want, "after ACK {}: {prr:?}", i + 1);
    }
    assert_eq!(prr[9], 4, "{prr:?}");
    // Then the reduction bound takes pipe to ssthresh, where RFC 6675 is.
    assert_eq!(end_pipe, [10, 10]);
}
