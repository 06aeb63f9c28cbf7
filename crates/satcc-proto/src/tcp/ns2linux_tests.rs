//! `sack_recovery = "ns2-linux"` against the rules of ns-2 2.35's
//! tcp/scoreboard1.cc and tcp/tcp-linux.cc, function by function.

use super::ns2linux::{Mark, ShimBoard};
use super::tests::{ack, drain, ms, seqs};
use super::*;
use crate::time::Instant;

fn shim_sender(iw: u32, growth: Growth) -> TcpSender {
    let cfg = SenderConfig {
        variant: Variant::Sack,
        initial_window: iw,
        limited_transmit: false,
        sack_recovery: SackRecovery::Ns2Linux,
        growth,
        ..SenderConfig::default()
    };
    let mut s = TcpSender::new(cfg, ms(0));
    s.push_data(10_000_000);
    s
}

/// UpdateScoreBoard(): `lost_seq_threshold = fack_ - (dupack_threshold +
/// 1)`: a segment is lost once the highest SACKed segment is 4 above it
/// (the fourth duplicate ACK of a single loss), not 3.
#[test]
fn board_marks_lost_four_below_fack() {
    let mut b = ShimBoard::default();
    let n = b.update(0, &[(1, 4)]);
    assert!(n.sacked && !n.lost, "fack 3: 0 is not yet lost");
    assert_eq!(b.mark(0), Some(Mark::InFlight));
    let n = b.update(0, &[(1, 5)]);
    assert!(n.lost, "fack 4: 0 <= 4 - 4");
    assert_eq!(b.mark(0), Some(Mark::Lost));
    assert_eq!((b.fack_out(), b.sack_out()), (1, 4));
    // packets_in_flight(0, 5) = 5 - fack_out 1 - sack_out 4.
    assert_eq!(b.in_flight(0, 5), 0);
    // Two holes, 0 and 1, below SACKed 2..=4: only 0 is 4 below fack.
    let mut b = ShimBoard::default();
    assert!(b.update(0, &[(2, 5)]).lost);
    assert_eq!(
        (b.mark(0), b.mark(1)),
        (Some(Mark::Lost), Some(Mark::InFlight))
    );
    assert_eq!(b.next_retran(), Some(0));
}

/// A retransmission is lost again once a segment sent after it (at or
/// above the snd_nxt recorded by MarkRetran()) is SACKed: found without
/// the timer, and GetNextRetran() offers it again.
#[test]
fn board_finds_a_lost_retransmission() {
    let mut b = ShimBoard::default();
    assert!(b.update(0, &[(1, 5)]).lost);
    assert_eq!(b.next_retran(), Some(0));
    b.mark_retran(0, 10);
    assert_eq!(b.mark(0), Some(Mark::Retransmitted));
    assert_eq!(b.next_retran(), None, "nothing else lost");
    // SACKs up to 9: 0's retransmission left when 10 was next.
    let n = b.update(0, &[(1, 10)]);
    assert!(!n.lost);
    assert_eq!(b.mark(0), Some(Mark::Retransmitted));
    let n = b.update(0, &[(1, 11)]);
    assert!(n.lost, "10 was sent after the retransmission and arrived");
    assert_eq!(b.mark(0), Some(Mark::Lost));
    assert_eq!(b.next_retran(), Some(0));
}

/// MarkLoss() at a timeout: every segment not SACKed up to snd_nxt is
/// lost, SACK marks stay; the cumulative ACK cleans the board.
#[test]
fn board_mark_loss_keeps_sacked() {
    let mut b = ShimBoard::default();
    b.update(0, &[(2, 4)]);
    b.mark_loss(0, 10);
    for (seq, m) in [
        (0, Mark::Lost),
        (1, Mark::Lost),
        (2, Mark::Sacked),
        (3, Mark::Sacked),
        (4, Mark::Lost),
        (9, Mark::Lost),
    ] {
        assert_eq!(b.mark(seq), Some(m), "{seq}");
    }
    assert_eq!((b.fack_out(), b.sack_out()), (8, 2));
    assert_eq!(b.in_flight(0, 10), 0);
    assert_eq!(b.next_retran(), Some(0));
    b.mark_retran(0, 10);
    assert_eq!(b.next_retran(), Some(1));
    b.mark_retran(1, 10);
    assert_eq!(b.next_retran(), Some(4), "SACKed 2 and 3 are skipped");
    // The cumulative ACK for 0..=3 removes them from the counts.
    b.update(4, &[]);
    assert_eq!((b.fack_out(), b.sack_out()), (6, 0));
    assert_eq!(b.in_flight(4, 10), 0);
}

/// tcp_fastretrans_alert() on entry, with Reno's module: ssthresh =
/// tcp_reno_ssthresh() = cwnd/2, cwnd = tcp_reno_min_cwnd() = ssthresh/2,
/// and send_much()'s rate halving (next_pkts_in_flight_ from the old cwnd)
/// sends one segment per two ACKs while the pipe falls. Before recovery,
/// each SACK frees a place in the window (packets_in_flight() leaves
/// SACKed segments out) and new data goes out.
#[test]
fn entry_sets_min_cwnd_and_halves_the_rate() {
    let mut s = shim_sender(20, Growth::Reno);
    assert_eq!(drain(&mut s, ms(0)).len(), 20);
    // Segment 0 is lost, 1, 2, 3 arrive: one new segment per SACK.
    for k in 1..=3u64 {
        s.handle_input(ms(100 + k), &ack(0, ms(0), &[(1, 1 + k)]));
        assert_eq!(seqs(&drain(&mut s, ms(100 + k))), vec![(19 + k, false)]);
        assert!(!s.stats().in_recovery);
    }
    // Segment 4 arrives: 0 is 4 below fack_, lost: recovery.
    s.handle_input(ms(104), &ack(0, ms(0), &[(1, 5)]));
    let st = s.stats();
    assert!(st.in_recovery);
    assert_eq!((st.ssthresh, st.cwnd), (10.0, 5.0));
    assert_eq!(st.fast_retransmits, 1);
    // next_pkts_in_flight_ = min(20, 18 + 1): the retransmission only.
    assert_eq!(seqs(&drain(&mut s, ms(104))), vec![(0, true)]);
    // Then one new segment every second ACK.
    let mut sent = Vec::new();
    for k in 5..=14u64 {
        s.handle_input(ms(100 + k), &ack(0, ms(0), &[(1, 1 + k)]));
        sent.push(drain(&mut s, ms(100 + k)).len());
    }
    assert_eq!(sent, vec![0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(s.stats().snd_max, 28);
    // The retransmission arrives: 0..=22 acknowledged, recover_ (23)
    // reached. cwnd 5 < ssthresh 10: cwnd = min(ssthresh, in flight
    // (28 - 23) + tcp_max_burst 3) = 8, and no growth on that ACK.
    s.handle_input(ms(200), &ack(23, ms(104), &[]));
    let st = s.stats();
    assert!(!st.in_recovery);
    assert_eq!((st.cwnd, st.ssthresh), (8.0, 10.0));
}

/// CUBIC's tcp_cubic.c has no min_cwnd(): the shim sets cwnd = ssthresh.
#[test]
fn entry_without_min_cwnd_sets_ssthresh() {
    let mut s = shim_sender(20, Growth::Cubic(CubicConfig::linux_2_6_22()));
    assert_eq!(drain(&mut s, ms(0)).len(), 20);
    for k in 1..=4u64 {
        s.handle_input(ms(100 + k), &ack(0, ms(0), &[(1, 1 + k)]));
        drain(&mut s, ms(100 + k));
    }
    let st = s.stats();
    assert!(st.in_recovery);
    // bictcp_recalc_ssthresh(): cwnd · 819/1024 = 15 (of 20).
    assert_eq!((st.ssthresh, st.cwnd), (15.0, 15.0));
}

/// `renew_timer` in time_processing(): every ACK, a duplicate too,
/// restarts the retransmission timer. RFC 6298 §5.3 restarts it only on
/// an ACK of new data.
#[test]
fn every_ack_restarts_the_timer() {
    for rec in [SackRecovery::Ns2Linux, SackRecovery::Rfc6675] {
        let cfg = SenderConfig {
            variant: Variant::Sack,
            initial_window: 10,
            sack_recovery: rec,
            ..SenderConfig::default()
        };
        let mut s = TcpSender::new(cfg, ms(0));
        s.push_data(1_000_000);
        drain(&mut s, ms(0));
        let before = s.poll_timeout().expect("timer running");
        s.handle_input(ms(300), &ack(0, ms(0), &[(1, 2)]));
        let after = s.poll_timeout().expect("timer running");
        match rec {
            SackRecovery::Ns2Linux => assert!(after > before, "{after:?} {before:?}"),
            _ => assert_eq!(after, before),
        }
    }
}

/// LinuxTcpAgent::timeout(): counted (`nrexmit_`), enter_loss() (cwnd 1,
/// ssthresh from the module), MarkLoss() and no go-back-N: what is resent
/// is the lost segments lowest first, SACKed ones skipped, growing by
/// slow start in TCP_CA_Loss.
#[test]
fn timeout_marks_loss_without_go_back_n() {
    let mut s = shim_sender(10, Growth::Reno);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    // 0 and 1 lost, 2 and 3 arrive, the rest is lost too.
    s.handle_input(ms(100), &ack(0, ms(0), &[(2, 3)]));
    s.handle_input(ms(101), &ack(0, ms(0), &[(2, 4)]));
    // Two SACKs freed two places: 10 and 11 went out (and are lost).
    let t = s.poll_timeout().expect("timer running");
    drain(&mut s, ms(101));
    s.handle_timeout(t);
    let st = s.stats();
    assert_eq!((st.timeouts, st.cwnd, st.ssthresh), (1, 1.0, 5.0));
    assert!(!st.in_recovery);
    assert_eq!(seqs(&drain(&mut s, t)), vec![(0, true)]);
    // 0's retransmission arrives: slow start to 2, then 1 and 4 (not the
    // SACKed 2 and 3).
    let t2 = Instant(t.0 + 500_000_000);
    s.handle_input(t2, &ack(1, t, &[(2, 4)]));
    assert_eq!(s.stats().cwnd, 2.0);
    assert_eq!(seqs(&drain(&mut s, t2)), vec![(1, true), (4, true)]);
}

/// tcp.cc output() times only new segments (`seqno > maxseq_`) and
/// reset_rtx_timer() abandons the timed one at a timeout: after a timeout
/// the backoff lasts through the ACKs of retransmissions, until a new
/// segment sent after it is acknowledged (time_processing(): `rtt_active_
/// && seqno >= rtt_seq_` sets `t_backoff_ = 1`), though every ACK feeds
/// SRTT.
#[test]
fn backoff_ends_with_a_new_segment_acknowledged() {
    let sec = crate::time::Duration(1_000_000_000);
    let cfg = SenderConfig {
        variant: Variant::Sack,
        initial_window: 2,
        limited_transmit: false,
        sack_recovery: SackRecovery::Ns2Linux,
        min_rto: sec,
        initial_rto: sec,
        ..SenderConfig::default()
    };
    let mut s = TcpSender::new(cfg, ms(0));
    s.push_data(10_000_000);
    assert_eq!(drain(&mut s, ms(0)).len(), 2);
    s.handle_input(ms(100), &ack(1, ms(0), &[]));
    assert_eq!(seqs(&drain(&mut s, ms(100))), vec![(2, false), (3, false)]);
    // 1, 2 and 3 are lost: the timer fires, RTO doubled.
    let t = s.poll_timeout().expect("timer running");
    s.handle_timeout(t);
    assert_eq!(s.stats().rto, sec.saturating_mul(2));
    assert_eq!(seqs(&drain(&mut s, t)), vec![(1, true)]);
    // The retransmission's ACK: no new segment timed, backoff kept.
    let t1 = Instant(t.0 + 100_000_000);
    s.handle_input(t1, &ack(2, t, &[]));
    assert_eq!(s.stats().rto, sec.saturating_mul(2));
    assert_eq!(seqs(&drain(&mut s, t1)), vec![(2, true), (3, true)]);
    let t2 = Instant(t1.0 + 100_000_000);
    s.handle_input(t2, &ack(4, t1, &[]));
    assert_eq!(s.stats().rto, sec.saturating_mul(2));
    // Loss state ended (4 >= recover_): new segments, the first timed.
    let out = drain(&mut s, t2);
    assert_eq!(
        out[0],
        TcpData {
            seq: 4,
            len: out[0].len,
            ts: t2,
            retransmit: false,
            dummy: false
        }
    );
    let t3 = Instant(t2.0 + 100_000_000);
    s.handle_input(t3, &ack(5, t2, &[]));
    assert_eq!(s.stats().rto, sec, "4 acknowledged: backoff over");
}

/// Malformed SACK blocks (empty, or past what was sent) are dropped: they
/// neither panic nor make the sender resend segments it never sent.
#[test]
fn malformed_sack_blocks_are_dropped() {
    let mut s = shim_sender(10, Growth::Reno);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    for (i, b) in [
        [(5u64, 1000u64)],
        [(7, 7)],
        [(9, 3)],
        [(u64::MAX - 1, u64::MAX)],
    ]
    .iter()
    .enumerate()
    {
        s.handle_input(ms(100 + i as u64), &ack(0, ms(0), b));
        for d in drain(&mut s, ms(100 + i as u64)) {
            assert!(!d.retransmit, "{d:?}");
        }
    }
    let st = s.stats();
    assert!(!st.in_recovery);
    // Only new data went out, none of it beyond the window.
    assert_eq!(st.retransmits, 0);
    assert_eq!(st.snd_max, 10);
}
