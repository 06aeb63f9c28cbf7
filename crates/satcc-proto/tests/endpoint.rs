//! Every endpoint driven through the endpoint interface alone.
//!
//! `Path::run` below is one generic driver — a bottleneck of fixed rate
//! and buffer, a fixed one-way delay, and a deterministic loss pattern — and
//! it knows no protocol: TCP (NewReno, SACK, Peach), TFRC, TFRCP, Saratoga
//! (fixed rate and STFRC) and CBR all go through the same code, as they do
//! in the simulator and will in the UDP runtime.

use std::collections::VecDeque;

use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::endpoint::{Endpoint, Event, Message, Sender, Stats};
use satcc_proto::saratoga::{SaratogaConfig, SaratogaReceiver, SaratogaSender};
use satcc_proto::stfrc::{StfrcConfig, StfrcController};
use satcc_proto::tcp::{self, PeachConfig, TcpReceiver, TcpSender, Variant};
use satcc_proto::tfrc::{self, TfrcReceiver, TfrcSender};
use satcc_proto::tfrcp::{self, TfrcpReceiver, TfrcpSender};
use satcc_proto::{Duration, Instant};

/// A one-hop path: the forward direction has a rate and a drop-tail buffer,
/// the reverse direction only the delay.
struct Path {
    rate_bps: u64,
    delay: Duration,
    buffer: usize,
    header: u32,
    /// Drop the forward packets whose index (from 0) is in this list.
    drop: Vec<u64>,
    /// Close the sender at this time.
    close_at: Option<Instant>,
}

/// What a run saw.
#[derive(Debug, Default)]
struct Outcome {
    events: Vec<(Instant, Event)>,
    sent: u64,
    overhead_sent: u64,
    low_priority_sent: u64,
    dropped: u64,
    /// Forward packets still on the path when the run ended.
    in_flight: u64,
    feedback: u64,
    /// New data (not retransmissions, not overhead) sent after the close.
    new_after_close: u64,
    sender: Stats,
    receiver: Stats,
}

impl Path {
    fn geo() -> Path {
        Path {
            rate_bps: 2_000_000,
            delay: Duration::from_millis(275),
            buffer: 50,
            header: 40,
            drop: Vec::new(),
            close_at: None,
        }
    }

    /// Runs `s` and `r` for `secs` seconds after `start` set the sender
    /// going. Bounded: at most 2 million steps.
    fn run(
        &self,
        s: &mut dyn Sender,
        r: &mut dyn Endpoint,
        secs: u64,
        start: impl FnOnce(&mut dyn Sender),
    ) -> Outcome {
        let end = Instant::ZERO + Duration::from_secs(secs);
        let mut out = Outcome::default();
        // (arrival time, message) in flight each way; the forward link's
        // queue drains at `rate_bps`.
        let mut fwd: VecDeque<(Instant, Message)> = VecDeque::new();
        let mut rev: VecDeque<(Instant, Message)> = VecDeque::new();
        let mut link_free = Instant::ZERO;
        let mut now = Instant::ZERO;
        start(s);
        let mut closed = false;
        for _ in 0..2_000_000 {
            if !closed && self.close_at.is_some_and(|c| now >= c) {
                s.close(now);
                closed = true;
            }
            while let Some(t) = s.poll_transmit(now) {
                let retransmit = matches!(t.message, Message::TcpData(d) if d.retransmit);
                if closed && !retransmit && !t.overhead {
                    out.new_after_close += 1;
                }
                let idx = out.sent + out.overhead_sent;
                if t.overhead {
                    out.overhead_sent += 1;
                } else {
                    out.sent += 1;
                }
                out.low_priority_sent += u64::from(t.low_priority);
                // Queue length at `now`: packets not yet serialised.
                let queued = fwd.iter().filter(|(at, _)| *at > now + self.delay).count();
                if self.drop.contains(&idx) || queued >= self.buffer {
                    out.dropped += 1;
                    continue;
                }
                let bytes = u64::from(t.payload_len + self.header);
                let tx = Duration::transmission(bytes, self.rate_bps);
                link_free = link_free.max(now) + tx;
                fwd.push_back((link_free + self.delay, t.message));
            }
            while let Some(e) = s.poll_event() {
                out.events.push((now, e));
            }
            while let Some(t) = r.poll_transmit(now) {
                out.feedback += 1;
                rev.push_back((now + self.delay, t.message));
            }
            let next = [
                self.close_at.filter(|_| !closed),
                s.poll_timeout(),
                r.poll_timeout(),
                fwd.front().map(|x| x.0),
                rev.front().map(|x| x.0),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|&t| t <= end) else {
                break;
            };
            assert!(next >= now, "time went backwards: {next:?} < {now:?}");
            now = next;
            while fwd.front().is_some_and(|x| x.0 <= now) {
                let (_, m) = fwd.pop_front().expect("front");
                r.handle_input(now, &m);
            }
            while rev.front().is_some_and(|x| x.0 <= now) {
                let (_, m) = rev.pop_front().expect("front");
                s.handle_input(now, &m);
            }
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            if r.poll_timeout().is_some_and(|t| t <= now) {
                r.handle_timeout(now);
            }
        }
        while let Some(e) = s.poll_event() {
            out.events.push((now, e));
        }
        out.in_flight = fwd.len() as u64;
        out.sender = s.stats();
        out.receiver = r.stats();
        out
    }
}

fn acked_sum(o: &Outcome) -> u64 {
    o.events
        .iter()
        .map(|(_, e)| match e {
            Event::Acked(n) => *n,
            _ => 0,
        })
        .sum()
}

fn count(o: &Outcome, want: Event) -> usize {
    o.events.iter().filter(|(_, e)| *e == want).count()
}

fn tcp_pair(variant: Variant, peach: bool) -> (TcpSender, TcpReceiver) {
    let cfg = tcp::SenderConfig {
        variant,
        mss: 1000,
        peach: peach.then(|| PeachConfig {
            initial_rtt: Duration::from_millis(550),
            ..PeachConfig::default()
        }),
        ..tcp::SenderConfig::default()
    };
    let rcfg = tcp::ReceiverConfig {
        sack: variant == Variant::Sack,
        ..tcp::ReceiverConfig::default()
    };
    (TcpSender::new(cfg, Instant::ZERO), TcpReceiver::new(rcfg))
}

#[test]
fn tcp_file_is_acknowledged_through_events() {
    for variant in [Variant::Reno, Variant::NewReno, Variant::Sack] {
        let (mut s, mut r) = tcp_pair(variant, false);
        let path = Path {
            drop: vec![20, 21, 60],
            ..Path::geo()
        };
        let o = path.run(&mut s, &mut r, 60, |s| s.offer(Instant::ZERO, 200_000));
        assert_eq!(o.receiver.delivered_bytes, 200_000, "{variant:?}");
        assert_eq!(acked_sum(&o), 200_000, "{variant:?}: Acked events add up");
        assert_eq!(o.sender.acked_bytes, 200_000);
        assert_eq!(count(&o, Event::AllAcked), 1, "{variant:?}");
        assert!(count(&o, Event::LossEvent) >= 1, "{variant:?}: drops seen");
        assert!(o.sender.retransmits >= 3, "{variant:?}: {:?}", o.sender);
        assert!(o.sender.cwnd.is_some() && o.sender.rate.is_none());
        // The last event is the whole file acknowledged.
        assert_eq!(o.events.last().map(|e| e.1), Some(Event::AllAcked));
    }
}

#[test]
fn tcp_peach_sends_low_priority_dummies() {
    let (mut s, mut r) = tcp_pair(Variant::NewReno, true);
    let o = Path::geo().run(&mut s, &mut r, 20, |s| s.set_unlimited(Instant::ZERO));
    assert!(o.overhead_sent > 0, "Sudden Start sends dummies");
    assert_eq!(o.low_priority_sent, o.overhead_sent);
    let d = o.sender.dummy.expect("Peach reports dummy counters");
    assert!(d.acks > 0 && !d.fallback, "{d:?}");
    // Dummies carry no new data: what arrived is what data packets carried.
    assert!(o.receiver.delivered_bytes <= o.sent * 1000);
    assert!(o.receiver.delivered_bytes > 1_000_000);
    // Plain NewReno reports no dummies.
    let (mut s, mut r) = tcp_pair(Variant::NewReno, false);
    let o = Path::geo().run(&mut s, &mut r, 5, |s| s.set_unlimited(Instant::ZERO));
    assert!(o.sender.dummy.is_none() && o.overhead_sent == 0);
}

#[test]
fn tfrc_reports_slow_start_exit_and_rate() {
    let mut s = TfrcSender::new(
        tfrc::SenderConfig {
            s: 1000,
            ..tfrc::SenderConfig::default()
        },
        Instant::ZERO,
    );
    let mut r = TfrcReceiver::new(tfrc::ReceiverConfig {
        s: 1000,
        ..tfrc::ReceiverConfig::default()
    });
    let path = Path {
        drop: vec![200],
        ..Path::geo()
    };
    let o = path.run(&mut s, &mut r, 60, |s| s.set_unlimited(Instant::ZERO));
    let exits: Vec<Instant> = o
        .events
        .iter()
        .filter(|e| e.1 == Event::SlowStartExit)
        .map(|e| e.0)
        .collect();
    assert_eq!(exits.len(), 1, "{:?}", o.events);
    // The loss of packet 200 is reported about one RTT after it was sent,
    // well after the start and well before the end.
    assert!(
        exits[0] > Instant::ZERO + Duration::from_secs(2),
        "{exits:?}"
    );
    let rate = o.sender.rate.expect("TFRC is rate-based");
    assert!(rate.p > 0.0 && rate.x_bps > 100_000.0, "{rate:?}");
    assert!(o.receiver.feedback_sent.unwrap_or(0) > 10);
    assert!(o.receiver.loss_event_rate.is_some_and(|p| p > 0.0));
    assert!(o.receiver.delivered_bytes > 1_000_000);
    // An unreliable sender acknowledges nothing and reports no window loss.
    assert!(o
        .events
        .iter()
        .all(|(_, e)| matches!(e, Event::SlowStartExit)));
}

#[test]
fn tfrcp_runs_its_rounds() {
    let mut s = TfrcpSender::new(tfrcp::SenderConfig::default(), Instant::ZERO, 7);
    let mut r = TfrcpReceiver::new(tfrcp::ReceiverConfig::default());
    let path = Path {
        drop: (0..40).map(|k| 50 + 97 * k).collect(),
        ..Path::geo()
    };
    let o = path.run(&mut s, &mut r, 60, |s| s.set_unlimited(Instant::ZERO));
    let rate = o.sender.rate.expect("TFRCP is rate-based");
    assert!(rate.x_bps > 0.0 && rate.x_recv_bps.is_nan(), "{rate:?}");
    assert!(o.sender.srtt.is_some());
    // One ACK per data packet that arrived.
    assert_eq!(o.feedback, o.sent - o.dropped - o.in_flight);
    assert!(o.receiver.delivered_bytes > 500_000, "{:?}", o.receiver);
}

/// A Saratoga PUT at a fixed rate (`None`) or under STFRC.
fn saratoga_pair(fixed_bps: Option<u64>) -> (SaratogaSender, SaratogaReceiver) {
    let cfg = SaratogaConfig::default();
    let s = match fixed_bps {
        Some(bps) => SaratogaSender::new(cfg.clone(), bps, Instant::ZERO),
        None => SaratogaSender::with_rate_controller(
            cfg.clone(),
            Box::new(StfrcController::new(StfrcConfig::default(), Instant::ZERO)),
            Instant::ZERO,
        ),
    };
    (s, SaratogaReceiver::new(cfg, Instant::ZERO))
}

#[test]
fn saratoga_file_is_acknowledged_through_events() {
    // A 200 kB file with three DATA frames lost: the hole list repairs
    // them, and the sender learns it through events alone.
    let path = Path {
        drop: vec![20, 21, 60],
        ..Path::geo()
    };
    for fixed in [Some(1_000_000), None] {
        let (mut s, mut r) = saratoga_pair(fixed);
        let o = path.run(&mut s, &mut r, 60, |s| s.offer(Instant::ZERO, 200_000));
        assert_eq!(o.dropped, 3, "{fixed:?}");
        assert_eq!(acked_sum(&o), 200_000, "{fixed:?}: {:?}", o.events);
        assert_eq!(count(&o, Event::AllAcked), 1, "{fixed:?}");
        assert_eq!(o.sender.acked_bytes, 200_000);
        assert_eq!(o.receiver.delivered_bytes, 200_000);
        assert!(o.sender.retransmits >= 3, "{:?}", o.sender);
        assert!(o.feedback > 0);
        assert_eq!(o.receiver.foreign + o.sender.foreign, 0);
    }
}

#[test]
fn cbr_ignores_the_path() {
    let cfg = CbrConfig::new(972, 1000, 1_000_000, true);
    let mut s = CbrSource::new(cfg, Instant::ZERO);
    let mut r = Sink::new();
    let o = Path::geo().run(&mut s, &mut r, 10, |s| s.set_unlimited(Instant::ZERO));
    // 1 Mb/s of 1000-byte datagrams, one every 8 ms from 0 s to 10 s
    // inclusive: 1251 sent, all low priority.
    assert_eq!(o.sent, 1251);
    assert_eq!(o.low_priority_sent, 1251);
    assert_eq!(o.feedback, 0);
    assert!(o.receiver.delivered_bytes >= 972 * 1200);
}

#[test]
fn the_same_driver_runs_any_protocol() {
    // One list of boxed endpoints of different protocols, one code path.
    let mut pairs: Vec<(Box<dyn Sender>, Box<dyn Endpoint>)> = vec![
        {
            let (s, r) = tcp_pair(Variant::Sack, false);
            (Box::new(s), Box::new(r))
        },
        (
            Box::new(TfrcSender::new(
                tfrc::SenderConfig::default(),
                Instant::ZERO,
            )),
            Box::new(TfrcReceiver::new(tfrc::ReceiverConfig::default())),
        ),
        (
            Box::new(TfrcpSender::new(
                tfrcp::SenderConfig::default(),
                Instant::ZERO,
                1,
            )),
            Box::new(TfrcpReceiver::new(tfrcp::ReceiverConfig::default())),
        ),
        {
            let (s, r) = saratoga_pair(Some(1_000_000));
            (Box::new(s), Box::new(r))
        },
        {
            let (s, r) = saratoga_pair(None);
            (Box::new(s), Box::new(r))
        },
    ];
    for (s, r) in &mut pairs {
        let o = Path::geo().run(s.as_mut(), r.as_mut(), 30, |s| {
            s.set_unlimited(Instant::ZERO)
        });
        assert!(
            o.receiver.delivered_bytes > 200_000,
            "{:?}: {:?}",
            s,
            o.receiver
        );
        assert_eq!(o.receiver.foreign + o.sender.foreign, 0);
    }
}

#[test]
fn foreign_messages_are_counted_not_obeyed() {
    let (mut s, mut r) = tcp_pair(Variant::NewReno, false);
    let fb = Message::TfrcFeedback(tfrc::TfrcFeedback {
        ts_echo: Instant::ZERO,
        t_delay: Duration::ZERO,
        x_recv: 1e9,
        p: 0.5,
    });
    let data = Message::Datagram { seq: 0, len: 100 };
    Sender::set_unlimited(&mut s, Instant::ZERO);
    Endpoint::handle_input(&mut s, Instant::ZERO, &fb);
    Endpoint::handle_input(&mut s, Instant::ZERO, &data);
    Endpoint::handle_input(&mut r, Instant::ZERO, &fb);
    assert_eq!(Endpoint::stats(&s).foreign, 2);
    assert_eq!(Endpoint::stats(&r).foreign, 1);
    assert_eq!(Endpoint::stats(&r).delivered_bytes, 0);
    // Still sends its initial window as if nothing had happened.
    let mut n = 0;
    while Endpoint::poll_transmit(&mut s, Instant::ZERO).is_some() {
        n += 1;
    }
    assert_eq!(n, tcp::rfc3390_initial_window(1000));
}

/// A sender, its receiver, and whether the sender retransmits what it sent.
type Pair = (Box<dyn Sender>, Box<dyn Endpoint>, bool);

/// After `close`, a sender sends no new data: TCP still delivers what it
/// had sent and reports `AllAcked` when it has; TFRC and TFRCP fall silent.
#[test]
fn close_stops_new_data() {
    let close_at = Instant::ZERO + Duration::from_secs(5);
    let path = Path {
        close_at: Some(close_at),
        // Losses just before the close: TCP must repair them after it.
        drop: vec![300, 301, 302],
        ..Path::geo()
    };
    let mut pairs: Vec<Pair> = vec![
        {
            let (s, r) = tcp_pair(Variant::Sack, false);
            (Box::new(s), Box::new(r), true)
        },
        {
            let (s, r) = tcp_pair(Variant::NewReno, true);
            (Box::new(s), Box::new(r), true)
        },
        (
            Box::new(TfrcSender::new(
                tfrc::SenderConfig::default(),
                Instant::ZERO,
            )),
            Box::new(TfrcReceiver::new(tfrc::ReceiverConfig::default())),
            false,
        ),
        (
            Box::new(TfrcpSender::new(
                tfrcp::SenderConfig::default(),
                Instant::ZERO,
                3,
            )),
            Box::new(TfrcpReceiver::new(tfrcp::ReceiverConfig::default())),
            false,
        ),
    ];
    for (s, r, reliable) in &mut pairs {
        let o = path.run(s.as_mut(), r.as_mut(), 30, |s| {
            s.set_unlimited(Instant::ZERO)
        });
        assert_eq!(o.new_after_close, 0, "{s:?}");
        assert!(o.sent > 100, "{s:?} sent {} before the close", o.sent);
        if *reliable {
            // Everything sent before the close arrives, and the sender says so.
            assert_eq!(count(&o, Event::AllAcked), 1, "{:?}", o.sender);
            assert_eq!(o.sender.acked_bytes, o.receiver.delivered_bytes);
            assert!(o
                .events
                .iter()
                .any(|&(t, e)| e == Event::AllAcked && t > close_at));
        }
    }
}
