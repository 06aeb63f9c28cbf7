//! Does a TFRC sender driven by the runtime send at the rate it computes?
//!
//! A TFRC flow runs through an emulated link (default 10 Mb/s, 20 ms
//! one-way, DropTail 50) to a perf server; a wrapper around the sender
//! integrates its allowed rate X over time (X is piecewise constant
//! between the runtime's calls) and counts the payload it actually sent.
//! The ratio sent / integral of X_inst (X after RFC 5348 §4.5 damping) is the pacing accuracy against the
//! computed rate, whatever X does.
//!
//! ```text
//! [SPIN_US=250] [BURST_US=2000] cargo run --release -p satcc-net --example tfrc_pacing -- [SECS] [LINK_TOML]
//! ```

use std::net::UdpSocket;

use satcc_net::emu::{LinkConfig, Relay, RelayConfig};
use satcc_net::perf::receiver_factory;
use satcc_net::{Clock, Conn, ConnConfig, Server, ServerConfig};
use satcc_proto::endpoint::{Endpoint, Event, Message, Sender, Stats, Transmit};
use satcc_proto::tfrc::{SenderConfig, TfrcSender};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};

#[derive(Debug)]
struct Metered {
    inner: TfrcSender,
    last: Option<(Instant, f64)>,
    integral_bits: f64,
    sent_bits: f64,
}

impl Metered {
    fn tick(&mut self, now: Instant) {
        if let Some((t, x)) = self.last {
            self.integral_bits += x * (now - t).as_secs_f64();
        }
        // The pacing rate X_inst (RFC 5348 §4.6), X after oscillation
        // damping (§4.5, on by default).
        let x = self.inner.x_inst() * 8.0;
        self.last = Some((now, x));
    }
}

impl Endpoint for Metered {
    fn handle_input(&mut self, now: Instant, m: &Message) {
        self.tick(now);
        Endpoint::handle_input(&mut self.inner, now, m);
        self.tick(now);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.tick(now);
        Endpoint::handle_timeout(&mut self.inner, now);
        self.tick(now);
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.tick(now);
        let t = Endpoint::poll_transmit(&mut self.inner, now);
        if let Some(t) = &t {
            self.sent_bits += f64::from(t.payload_len) * 8.0;
        }
        self.tick(now);
        t
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Endpoint::poll_timeout(&self.inner)
    }
    fn poll_event(&mut self) -> Option<Event> {
        Endpoint::poll_event(&mut self.inner)
    }
    fn stats(&self) -> Stats {
        Endpoint::stats(&self.inner)
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().map_or(10, |s| s.parse().expect("SECS"));
    let link = args.next().unwrap_or_else(|| {
        "rate = \"10Mbps\"\ndelay = \"20ms\"\nqueue = { kind = \"droptail\", limit = 50 }".into()
    });
    let link = LinkConfig::from_toml_str(&link, "link").expect("link");
    let ssock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let saddr = ssock.local_addr().unwrap();
    let clock = Clock::new();
    let mut srv = Server::new(
        ssock,
        clock,
        ServerConfig::default(),
        receiver_factory("standard").unwrap(),
    );
    let end = clock.now() + Duration::from_secs(secs + 1);
    let h = std::thread::spawn(move || srv.drive(end).unwrap());
    let relay = Relay::start(RelayConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        saddr,
        link,
    ))
    .unwrap();
    let mut conn = Conn::new(
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        relay.local_addr(),
        clock,
        ConnConfig {
            protocol: WireProtocol::Dccp,
            peer_timeout: Some(Duration::from_secs(3)),
            burst: std::env::var("BURST_US")
                .ok()
                .and_then(|s| s.parse().ok())
                .map_or(satcc_net::DEFAULT_BURST, Duration::from_micros),
        },
    );
    if let Some(us) = std::env::var("SPIN_US").ok().and_then(|s| s.parse().ok()) {
        conn.set_spin(Duration::from_micros(us));
    }
    let mut m = Metered {
        inner: TfrcSender::new(SenderConfig::default(), clock.now()),
        last: None,
        integral_bits: 0.0,
        sent_bits: 0.0,
    };
    Sender::set_unlimited(&mut m.inner, clock.now());
    println!(
        "{:>6} {:>12} {:>12} {:>8}",
        "t_s", "sent_bps", "X_bps", "ratio"
    );
    let start = clock.now();
    let (mut pi, mut ps) = (0.0, 0.0);
    for k in 1..=secs {
        conn.drive(&mut m, start + Duration::from_secs(k)).unwrap();
        m.tick(clock.now());
        let (di, ds) = (m.integral_bits - pi, m.sent_bits - ps);
        println!("{:>6} {:>12.0} {:>12.0} {:>8.4}", k, ds, di, ds / di);
        (pi, ps) = (m.integral_bits, m.sent_bits);
    }
    println!(
        "whole run: sent {:.0} bits, integral of X_inst {:.0} bits, ratio {:.4}; {} sent on burst credit",
        m.sent_bits,
        m.integral_bits,
        m.sent_bits / m.integral_bits,
        conn.caught_up()
    );
    let w = conn.wake_stats();
    println!(
        "timed wake-ups: {}, over 1 ms late: {}, latest {:.1} ms",
        w.wakeups,
        w.late_1ms,
        w.max_late.as_secs_f64() * 1e3
    );
    drop(relay);
    h.join().unwrap();
}
