//! TCP-Peach (paper 002) against scripted paths: the start-up of Fig. 3 and
//! the two Rapid Recovery cases of §IV (Figs. 7 and 9), fallback against a
//! receiver that does not echo dummies, and the Rapid Recovery expiry.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::*;
use crate::time::{Duration, Instant};

const RTT_MS: u64 = 640;

fn ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}

/// What the scripted path does with a data or dummy segment.
type Filter<'a> = dyn FnMut(Instant, &TcpData) -> bool + 'a;

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Msg {
    Data(u64, u32, u64, bool, bool),
    Ack(u64),
}

/// A path of fixed RTT and unbounded rate between a sender and a receiver;
/// `drop` decides the fate of every segment sent. Records cwnd after every
/// event.
struct Path<'a> {
    s: TcpSender,
    r: TcpReceiver,
    now: Instant,
    heap: BinaryHeap<Reverse<(Instant, u64, Msg)>>,
    acks: Vec<TcpAck>,
    n: u64,
    drop: Box<Filter<'a>>,
    trace: Vec<(Instant, f64)>,
}

impl<'a> Path<'a> {
    fn new(cfg: SenderConfig, echo: bool, drop: Box<Filter<'a>>) -> Self {
        let mut s = TcpSender::new(cfg, Instant::ZERO);
        s.set_unlimited();
        let r = TcpReceiver::new(ReceiverConfig {
            rwnd: 1000,
            sack: false,
            echo_dummy: echo,
            delayed_ack: false,
            ..ReceiverConfig::default()
        });
        Path {
            s,
            r,
            now: Instant::ZERO,
            heap: BinaryHeap::new(),
            acks: Vec::new(),
            n: 0,
            drop,
            trace: Vec::new(),
        }
    }

    fn half() -> Duration {
        Duration::from_millis(RTT_MS / 2)
    }

    fn transmit(&mut self) {
        while let Some(d) = self.s.poll_transmit(self.now) {
            if (self.drop)(self.now, &d) {
                continue;
            }
            self.n += 1;
            let m = Msg::Data(d.seq, d.len, d.ts.0, d.retransmit, d.dummy);
            self.heap
                .push(Reverse((self.now + Self::half(), self.n, m)));
        }
        while let Some(a) = self.r.poll_transmit(self.now) {
            self.n += 1;
            self.acks.push(a);
            let i = self.acks.len() as u64 - 1;
            self.heap
                .push(Reverse((self.now + Self::half(), self.n, Msg::Ack(i))));
        }
    }

    /// Run until `end`.
    fn run(&mut self, end: Instant) {
        self.transmit();
        loop {
            let next_msg = self.heap.peek().map(|Reverse((t, _, _))| *t);
            let timers = [next_msg, self.s.poll_timeout(), self.r.poll_timeout()];
            let Some(t) = timers.into_iter().flatten().min() else {
                break;
            };
            if t > end {
                break;
            }
            self.now = t;
            if next_msg == Some(t) {
                let Reverse((_, _, m)) = self.heap.pop().unwrap();
                match m {
                    Msg::Data(seq, len, ts, retransmit, dummy) => {
                        let d = TcpData {
                            seq,
                            len,
                            ts: Instant(ts),
                            retransmit,
                            dummy,
                        };
                        self.r.handle_input(t, &d);
                    }
                    Msg::Ack(i) => {
                        let a = self.acks[i as usize];
                        self.s.handle_input(t, &a);
                    }
                }
            }
            if self.s.poll_timeout().is_some_and(|x| x <= t) {
                self.s.handle_timeout(t);
            }
            if self.r.poll_timeout().is_some_and(|x| x <= t) {
                self.r.handle_timeout(t);
            }
            self.transmit();
            self.trace.push((t, self.s.stats().cwnd));
        }
        self.now = end;
    }

    /// cwnd at time `t` (the last value recorded at or before it).
    fn cwnd_at(&self, t: Instant) -> f64 {
        self.trace
            .iter()
            .take_while(|(x, _)| *x <= t)
            .last()
            .map_or(0.0, |(_, c)| *c)
    }

    /// First time cwnd reached `w`.
    fn reached(&self, w: f64) -> Option<Instant> {
        self.trace.iter().find(|(_, c)| *c >= w).map(|(t, _)| *t)
    }
}

fn peach_cfg(rwnd: u32) -> SenderConfig {
    SenderConfig {
        variant: Variant::NewReno,
        initial_rwnd: rwnd,
        limited_transmit: false,
        min_rto: Duration::from_secs(1),
        peach: Some(PeachConfig {
            initial_rtt: Duration::from_millis(RTT_MS),
            ..PeachConfig::default()
        }),
        ..SenderConfig::default()
    }
}

fn pass_all() -> Box<Filter<'static>> {
    Box::new(|_, _| false)
}

#[test]
fn sudden_start_spreads_rwnd_minus_one_dummies_over_one_rtt() {
    let mut s = TcpSender::new(peach_cfg(64), Instant::ZERO);
    s.set_unlimited();
    let first: Vec<_> = std::iter::from_fn(|| s.poll_transmit(ms(0))).collect();
    assert_eq!(
        first.len(),
        1,
        "cwnd = 1: one data segment opens Sudden Start"
    );
    assert!(!first[0].dummy);
    // Paper 002 eq. (2): tau = RTT / rwnd = 640 ms / 64 = 10 ms.
    let mut dummies = Vec::new();
    while let Some(t) = s.poll_timeout().filter(|t| *t < ms(RTT_MS)) {
        s.handle_timeout(t);
        while let Some(d) = s.poll_transmit(t) {
            assert!(d.dummy, "no second data segment before an ACK");
            assert_eq!((d.seq, d.len), (0, 1000), "a dummy copies the last segment");
            dummies.push(t);
        }
    }
    assert_eq!(dummies.len(), 63);
    assert_eq!(dummies[0], ms(10));
    assert_eq!(dummies[62], ms(630));
    let st = s.stats();
    assert_eq!((st.dummies_sent, st.segments_sent), (63, 1));
}

#[test]
fn sudden_start_reaches_rwnd_in_about_one_rtt_where_slow_start_takes_six() {
    // Paper 002 Fig. 3: rwnd = 64, both start from cwnd = 1.
    let t4 = ms(4 * RTT_MS);
    let mut peach = Path::new(peach_cfg(64), true, pass_all());
    peach.run(t4);
    let peach_4 = peach.r.rcv_nxt();
    peach.run(ms(12 * RTT_MS));
    let reno_cfg = SenderConfig {
        initial_window: 1,
        peach: None,
        ..peach_cfg(64)
    };
    let mut reno = Path::new(reno_cfg, true, pass_all());
    reno.run(t4);
    let reno_4 = reno.r.rcv_nxt();
    reno.run(ms(12 * RTT_MS));
    let tp = peach.reached(64.0).expect("Peach reaches rwnd");
    let tr = reno.reached(64.0).expect("slow start reaches rwnd");
    let rtts = |t: Instant| t.as_secs_f64() / (RTT_MS as f64 / 1000.0);
    // The data ACK comes back after one RTT; the dummy ACKs follow within
    // the next RTT, one every tau.
    assert!(rtts(tp) <= 2.0, "Peach at rwnd after {:.2} RTTs", rtts(tp));
    // Slow start doubles per RTT from 1: 2^6 = 64 after six RTTs.
    assert!(
        rtts(tr) >= 6.0,
        "slow start at rwnd after {:.2} RTTs",
        rtts(tr)
    );
    // The bottom plot: Sudden Start delivers more in the first 4 RTTs
    // (Peach: 1 + 2 x 64 by then; slow start: 1 + 2 + 4 + ... < 16).
    assert!(
        peach_4 > 4 * reno_4,
        "segments delivered in 4 RTTs: Peach {peach_4}, slow start {reno_4}"
    );
    assert_eq!(peach.s.stats().dummy_acks, 63);
    assert!(!peach.s.stats().peach_fallback);
}

/// A Peach sender in Congestion Avoidance at cwnd 30: Sudden Start with 28
/// dummies gives 1 + 1 (the data ACK) + 28.
fn peach_at_30() -> SenderConfig {
    let mut c = peach_cfg(1000);
    c.peach.as_mut().unwrap().max_sudden_dummies = 28;
    c
}

/// The sequence number sent at `t_loss` or just after, dropped once.
fn drop_one_after(t_loss: Instant) -> impl FnMut(Instant, &TcpData) -> bool {
    let mut victim: Option<u64> = None;
    move |t, d| {
        if d.dummy || d.retransmit || t < t_loss {
            return false;
        }
        match victim {
            None => {
                victim = Some(d.seq);
                true
            }
            Some(_) => false,
        }
    }
}

/// The window W when the loss was detected, the halved window, and when
/// the halving happened.
fn halving(p: &Path, t_loss: Instant) -> (f64, f64, Instant) {
    let i = (1..p.trace.len())
        .find(|&i| p.trace[i].0 > t_loss && p.trace[i].1 < p.trace[i - 1].1 - 1.0)
        .expect("a window reduction after the loss");
    (p.trace[i - 1].1.floor(), p.trace[i].1, p.trace[i].0)
}

#[test]
fn link_error_loss_halves_cwnd_then_dummies_restore_it() {
    // Paper 002 §IV case 1 (Fig. 7): a link error, the network is not
    // congested, every dummy comes back.
    let t_loss = ms(2 * RTT_MS);
    let mut p = Path::new(peach_at_30(), true, Box::new(drop_one_after(t_loss)));
    p.run(ms(12 * RTT_MS));
    let (w, low, t_cut) = halving(&p, t_loss);
    assert_eq!(w, 30.0, "cwnd before the loss");
    let st = p.s.stats();
    assert_eq!(st.rapid_recoveries, 1);
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 0);
    // Halved (no inflation by the three duplicate ACKs).
    assert_eq!(low, 15.0, "cwnd = W/2 on entering Rapid Recovery");
    // W dummies go out, 2 per duplicate ACK while cwnd <= unacked.
    assert_eq!(st.dummies_sent, 28 + 30);
    // Two RTTs after the halving every dummy ACK is in: W/2 absorbed by
    // wdsn, W/2 restore the window (plus the Congestion Avoidance growth
    // of the data ACKs, under one segment per RTT).
    let after = p.cwnd_at(t_cut + Duration::from_millis(2 * RTT_MS));
    assert!(
        (w..w + 2.0).contains(&after),
        "cwnd {after} two RTTs after the halving, W was {w}"
    );
    assert_eq!(st.wdsn, 0);

    // NewReno from the same state stays near W/2.
    let nr = SenderConfig {
        initial_window: 30,
        initial_ssthresh: 30,
        peach: None,
        ..peach_at_30()
    };
    let mut n = Path::new(nr, true, Box::new(drop_one_after(t_loss)));
    n.run(ms(12 * RTT_MS));
    let (nw, nlow, nt) = halving(&n, t_loss);
    let nafter = n.cwnd_at(nt + Duration::from_millis(2 * RTT_MS));
    assert!(
        nafter < nw / 2.0 + 3.0,
        "NewReno cwnd {nafter} (W {nw}, cut to {nlow})"
    );
}

#[test]
fn congestion_loss_with_dummies_dropped_behaves_as_newreno() {
    // Paper 002 §IV case 2 (Fig. 9): the bottleneck is congested and drops
    // every low-priority segment after the loss.
    let t_loss = ms(2 * RTT_MS);
    let run = |cfg: SenderConfig| {
        let mut lose = drop_one_after(t_loss);
        let mut p = Path::new(
            cfg,
            true,
            Box::new(move |t, d: &TcpData| (d.dummy && t >= t_loss) || lose(t, d)),
        );
        p.run(ms(14 * RTT_MS));
        p
    };
    let peach = run(peach_at_30());
    let nr = run(SenderConfig {
        initial_window: 30,
        initial_ssthresh: 30,
        peach: None,
        ..peach_at_30()
    });
    let sp = peach.s.stats();
    assert_eq!(sp.dummy_acks, 28, "no Rapid Recovery dummy came back");
    assert_eq!(sp.timeouts + sp.rapid_recovery_expiries, 0);
    // The same halving, then the same Congestion Avoidance growth from
    // W/2, RTT by RTT.
    let (pw, _, pt) = halving(&peach, t_loss);
    let (nw, _, nt) = halving(&nr, t_loss);
    assert_eq!(sp.ssthresh, (pw / 2.0).floor());
    assert_eq!(nr.s.stats().ssthresh, (nw / 2.0).floor());
    // The samples fall at a different phase of each sender's ACK clock, so
    // the two curves may sit up to a segment apart; their slopes must not
    // differ.
    let grow = |p: &Path, t0: Instant, ss: f64, k: u64| {
        p.cwnd_at(t0 + Duration::from_millis(k * RTT_MS)) - ss
    };
    let nss = nr.s.stats().ssthresh;
    for k in 2..9 {
        let (a, b) = (grow(&peach, pt, sp.ssthresh, k), grow(&nr, nt, nss, k));
        assert!(
            (a - b).abs() < 1.0,
            "{k} RTTs after the halving: Peach +{a:.2}, NewReno +{b:.2}"
        );
        let da = a - grow(&peach, pt, sp.ssthresh, k - 1);
        let db = b - grow(&nr, nt, nss, k - 1);
        assert!(
            (da - db).abs() < 0.1,
            "growth in RTT {k}: Peach {da:.2}, NewReno {db:.2}"
        );
    }
}

#[test]
fn congestion_loss_with_half_the_dummies_carried_keeps_cwnd_at_half() {
    // §III-C: a congested router still carries about W/2 dummies; wdsn
    // absorbs exactly those, so cwnd stays at W/2 as Reno's would.
    let t_loss = ms(2 * RTT_MS);
    let mut lose = drop_one_after(t_loss);
    let mut carried = 0;
    let filter = move |t: Instant, d: &TcpData| {
        if d.dummy && t >= t_loss {
            carried += 1;
            return carried > 15;
        }
        lose(t, d)
    };
    let mut p = Path::new(peach_at_30(), true, Box::new(filter));
    p.run(ms(9 * RTT_MS));
    let st = p.s.stats();
    assert_eq!(st.dummy_acks, 28 + 15);
    let (w, _, t_cut) = halving(&p, t_loss);
    let after = p.cwnd_at(t_cut + Duration::from_millis(2 * RTT_MS));
    assert!(
        (w / 2.0..w / 2.0 + 2.0).contains(&after),
        "cwnd {after}, W {w}"
    );
}

#[test]
fn plain_receiver_makes_peach_fall_back_without_spurious_recovery() {
    // A data loss well after the fallback: the base variant recovers it,
    // and no dummy goes out any more.
    let t_loss = ms(8 * RTT_MS);
    let mut p = Path::new(peach_cfg(64), false, Box::new(drop_one_after(t_loss)));
    p.run(ms(20 * RTT_MS));
    let st = p.s.stats();
    assert!(st.peach_fallback);
    assert_eq!(st.dummy_acks, 0);
    assert_eq!(st.timeouts, 0);
    // The one loss, and no recovery set off by the dummies' duplicate
    // ACKs.
    assert_eq!(st.fast_retransmits, 1, "dummy dupACKs are not loss signals");
    assert_eq!(st.rapid_recoveries, 0, "the base variant recovers");
    // All 63 opening dummies leave before the first answer can return;
    // after the fallback none follows, not even in loss recovery.
    assert_eq!(st.dummies_sent, 63);
    // After fallback the window opens by slow start, to rwnd.
    assert!(p.reached(64.0).is_some());
    let nr = SenderConfig {
        initial_window: 1,
        peach: None,
        ..peach_cfg(64)
    };
    let mut n = Path::new(nr, false, Box::new(drop_one_after(t_loss)));
    n.run(ms(20 * RTT_MS));
    // One RTT of Sudden Start, then NewReno: the same data within a few
    // percent over 20 RTTs.
    let (a, b) = (p.r.rcv_nxt() as f64, n.r.rcv_nxt() as f64);
    assert!((a - b).abs() / b < 0.1, "Peach {a} vs NewReno {b} segments");
}

#[test]
fn lost_retransmission_ends_rapid_recovery_in_sudden_start() {
    let t_loss = ms(2 * RTT_MS);
    let mut lose = drop_one_after(t_loss);
    let mut victim = None;
    let mut dropped_rexmit = false;
    let filter = move |t: Instant, d: &TcpData| {
        if !d.dummy && !d.retransmit && t >= t_loss && victim.is_none() {
            victim = Some(d.seq);
        }
        if d.retransmit && Some(d.seq) == victim && !dropped_rexmit {
            dropped_rexmit = true;
            return true;
        }
        lose(t, d)
    };
    let mut p = Path::new(peach_at_30(), true, Box::new(filter));
    p.run(ms(9 * RTT_MS));
    let st = p.s.stats();
    assert_eq!(st.rapid_recoveries, 1);
    assert_eq!(st.rapid_recovery_expiries, 1);
    assert_eq!(st.sudden_starts, 2);
    assert_eq!(st.timeouts, 0, "Sudden Start came before the RTO");
    assert!(st.snd_una > 200, "the transfer went on: una {}", st.snd_una);
}

#[test]
fn timeout_restarts_with_sudden_start() {
    let mut s = TcpSender::new(peach_cfg(64), Instant::ZERO);
    s.set_unlimited();
    assert!(s.poll_transmit(ms(0)).is_some());
    // Nothing ever comes back: the dummies go out, then the RTO fires.
    let mut t = ms(0);
    while s.stats().timeouts == 0 {
        t = s.poll_timeout().unwrap();
        s.handle_timeout(t);
        while s.poll_transmit(t).is_some() {}
    }
    let st = s.stats();
    assert_eq!(st.sudden_starts, 2);
    assert_eq!(st.cwnd, 1.0);
    // The second Sudden Start spaces its dummies again (by the handshake
    // RTT, no sample yet).
    let next = s.poll_timeout().unwrap();
    assert_eq!(next, t + Duration::from_millis(RTT_MS / 64));
}

#[test]
fn lost_dummies_and_a_data_loss_do_not_look_like_a_plain_receiver() {
    // A congested start: every Sudden Start dummy is dropped, then a data
    // segment is lost. The duplicate ACKs come from data, not dummies, so
    // the sender keeps Peach and recovers by Fast Retransmit.
    let mut dropped = false;
    let filter = move |t: Instant, d: &TcpData| {
        if d.dummy && t < ms(RTT_MS) {
            return true;
        }
        if !d.dummy && !d.retransmit && d.seq == 6 && !dropped {
            dropped = true;
            return true;
        }
        false
    };
    let cfg = SenderConfig {
        limited_transmit: true,
        ..peach_cfg(64)
    };
    let mut p = Path::new(cfg, true, Box::new(filter));
    p.run(ms(10 * RTT_MS));
    let st = p.s.stats();
    assert!(
        !st.peach_fallback,
        "dropped dummies are not a plain receiver"
    );
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.fast_retransmits, 1);
    // No echo has verified the receiver, so Rapid Recovery sends it no
    // dummies (each could draw a duplicate ACK from a plain receiver).
    assert_eq!(st.dummy_acks, 0);
    assert_eq!(st.dummies_sent, 63);
}

/// Drops the first new data segments sent at or after `t_loss` whose
/// sequence numbers are `k` apart (`n` of them), once each.
fn drop_n_after(t_loss: Instant, n: usize, k: u64) -> impl FnMut(Instant, &TcpData) -> bool {
    let mut first: Option<u64> = None;
    let mut done = 0;
    move |t, d| {
        if d.dummy || d.retransmit || t < t_loss || done == n {
            return false;
        }
        let f = *first.get_or_insert(d.seq);
        if d.seq == f + k * done as u64 {
            done += 1;
            return true;
        }
        false
    }
}

#[test]
fn two_link_error_losses_in_one_window_still_restore_the_window() {
    // §IV case 1 with a second link-error loss five segments on: NewReno's
    // partial ACK ends Rapid Recovery, the dummy ACKs arrive while NewReno
    // is still recovering, and its full ACK must not wipe their credit.
    let t_loss = ms(2 * RTT_MS);
    let mut p = Path::new(peach_at_30(), true, Box::new(drop_n_after(t_loss, 2, 5)));
    p.run(ms(12 * RTT_MS));
    let (w, low, t_cut) = halving(&p, t_loss);
    assert_eq!((w, low), (30.0, 15.0));
    let st = p.s.stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    let after = p.cwnd_at(t_cut + Duration::from_millis(3 * RTT_MS));
    assert!((w - 1.0..w + 3.0).contains(&after), "cwnd {after}, W {w}");
}

#[test]
fn sack_base_sends_adsn_dummies_and_restores_the_window() {
    // Over SACK recovery the blocked test still counts the paper's
    // inflation (W/2 + one per data ACK), not RFC 6675's pipe.
    let mut cfg = peach_at_30();
    cfg.variant = Variant::Sack;
    let t_loss = ms(2 * RTT_MS);
    let mut p = Path::new(cfg, true, Box::new(drop_one_after(t_loss)));
    p.r = TcpReceiver::new(ReceiverConfig {
        rwnd: 1000,
        sack: true,
        echo_dummy: true,
        delayed_ack: false,
        ..ReceiverConfig::default()
    });
    p.run(ms(12 * RTT_MS));
    let (w, _, t_cut) = halving(&p, t_loss);
    let st = p.s.stats();
    assert_eq!(st.dummies_sent, 28 + w as u64, "adsn = W dummies");
    let after = p.cwnd_at(t_cut + Duration::from_millis(2 * RTT_MS));
    assert!((w - 1.0..w + 2.0).contains(&after), "cwnd {after}, W {w}");
}
