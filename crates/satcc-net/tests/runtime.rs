//! The UDP runtime over loopback: pacing, refused datagrams, a vanished
//! peer.

use std::net::UdpSocket;
use std::time::Duration as StdDuration;

use satcc_net::{Clock, Conn, ConnConfig, NetError};
use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::tfrc::{SenderConfig, TfrcSender};
use satcc_proto::wire::{self, WireProtocol};
use satcc_proto::{Duration, Message, Sender};

fn datagram_cfg() -> ConnConfig {
    ConnConfig {
        protocol: WireProtocol::Datagram,
        peer_timeout: None,
        burst: satcc_net::DEFAULT_BURST,
    }
}

/// A 10 Mb/s constant-bit-rate source for 1 s: the receiver measures
/// (n - 1) datagrams over the span of their arrivals within 2 % of the
/// rate. (The full 100 kb/s - 200 Mb/s range is the `pacing` example.)
#[test]
fn cbr_pacing_holds_at_10mbps() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let rx_addr = rx.local_addr().unwrap();
    rx.set_read_timeout(Some(StdDuration::from_millis(300)))
        .unwrap();
    let clock = Clock::new();
    let receiver = std::thread::spawn(move || {
        let mut buf = vec![0u8; 2048];
        let (mut first, mut last, mut n) = (None, clock.now(), 0u64);
        while rx.recv_from(&mut buf).is_ok() {
            let now = clock.now();
            first.get_or_insert(now);
            last = now;
            n += 1;
        }
        (n, (last - first.unwrap()).as_secs_f64())
    });
    let rate = 10_000_000u64;
    let size = 1000u32;
    let mut src = CbrSource::new(CbrConfig::new(size - 12, size, rate, false), clock.now());
    let mut conn = Conn::new(tx, rx_addr, clock, datagram_cfg());
    let start = clock.now();
    src.set_unlimited(start);
    conn.drive(&mut src, start + Duration::from_secs(1))
        .unwrap();
    let (n, span) = receiver.join().unwrap();
    let achieved = (n - 1) as f64 * f64::from(size) * 8.0 / span;
    let err = achieved / rate as f64 - 1.0;
    assert!(
        err.abs() < 0.02,
        "achieved {achieved:.0} b/s, {:+.2} %",
        err * 100.0
    );
    assert_eq!(conn.counters().sent, n, "loopback lost datagrams");
}

/// Garbage from the peer is counted as malformed, datagrams from a
/// stranger as unknown_peer; valid ones still reach the endpoint.
#[test]
fn malformed_and_unknown_datagrams_are_counted_not_fatal() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let rx_addr = rx.local_addr().unwrap();
    let clock = Clock::new();
    let mut conn = Conn::new(rx, peer.local_addr().unwrap(), clock, datagram_cfg());
    let driver = std::thread::spawn(move || {
        let mut sink = Sink::new();
        conn.drive(&mut sink, clock.now() + Duration::from_millis(700))
            .unwrap();
        (
            conn.counters(),
            satcc_proto::Endpoint::stats(&sink).delivered_bytes,
        )
    });
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 256];
    // Batches small enough for the socket buffer: 10 x (50 junk from the
    // peer, 10 from a stranger, 1 valid).
    for seq in 0..10 {
        for i in 0..50u32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = (rng % 300) as usize;
            let junk: Vec<u8> = (0..len).map(|k| (rng >> (k % 56)) as u8).collect();
            peer.send_to(&junk, rx_addr).unwrap();
            if i % 5 == 0 {
                stranger.send_to(&junk, rx_addr).unwrap();
            }
        }
        let n = wire::encode(&Message::Datagram { seq, len: 100 }, &mut buf).unwrap();
        peer.send_to(&buf[..n], rx_addr).unwrap();
        std::thread::sleep(StdDuration::from_millis(20));
    }
    let (c, delivered) = driver.join().unwrap();
    assert_eq!(c.received, 10);
    assert_eq!(c.unknown_peer, 100);
    // A random buffer passes the header checksum with probability about
    // 2^-16 at most; 500 of them all fail.
    assert_eq!(c.malformed, 500);
    assert_eq!(delivered, 1000);
}

/// A TFRC sender whose receiver never answers ends with PeerSilent after
/// the configured timeout instead of hanging.
#[test]
fn vanished_peer_ends_the_flow() {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    // A bound socket nobody reads: datagrams vanish without an ICMP error.
    let hole = UdpSocket::bind("127.0.0.1:0").unwrap();
    let clock = Clock::new();
    let cfg = ConnConfig {
        protocol: WireProtocol::Dccp,
        peer_timeout: Some(Duration::from_millis(300)),
        burst: satcc_net::DEFAULT_BURST,
    };
    let mut conn = Conn::new(tx, hole.local_addr().unwrap(), clock, cfg);
    let mut s = TfrcSender::new(SenderConfig::default(), clock.now());
    Sender::set_unlimited(&mut s, clock.now());
    let t0 = std::time::Instant::now();
    let r = conn.drive(&mut s, clock.now() + Duration::from_secs(5));
    let took = t0.elapsed();
    match r {
        Err(NetError::PeerSilent { silent, .. }) => {
            assert!(silent >= Duration::from_millis(300));
        }
        other => panic!("expected PeerSilent, got {other:?}"),
    }
    assert!(took < StdDuration::from_millis(800), "took {took:?}");
    assert!(conn.counters().sent >= 1);
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("silent"), "{msg}");
}
