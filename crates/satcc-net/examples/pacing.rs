//! Pacing benchmark: a constant-bit-rate source driven by [`Conn`] over
//! loopback into a counting receiver, at each rate given (bits per second
//! of UDP payload, header included), printing the achieved rate measured at
//! the receiver.
//!
//! ```text
//! cargo run --release -p satcc-net --example pacing -- 100e3 1e6 10e6 100e6 200e6
//! ```
//! Options: `--secs S` (default 3), `--size BYTES` (UDP payload, default
//! 1000), `--spin US` (default 0: no spin before deadlines).

use std::net::UdpSocket;

use satcc_net::{Clock, Conn, ConnConfig};
use satcc_proto::cbr::{CbrConfig, CbrSource};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Sender};

fn main() {
    let mut secs = 3.0;
    let mut size: u32 = 1000;
    let mut spin = 0u64;
    let mut rates = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--secs" => secs = args.next().and_then(|s| s.parse().ok()).expect("--secs S"),
            "--size" => {
                size = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--size BYTES")
            }
            "--spin" => spin = args.next().and_then(|s| s.parse().ok()).expect("--spin US"),
            r => rates.push(r.parse::<f64>().expect("a rate in b/s, e.g. 10e6")),
        }
    }
    if rates.is_empty() {
        rates = vec![100e3, 1e6, 10e6, 100e6, 200e6];
    }
    println!(
        "{:>12} {:>12} {:>8} {:>10} {:>10}",
        "target_bps", "achieved_bps", "err_%", "sent", "received"
    );
    for r in rates {
        let (a, s, rx) = satcc_net_bench(r as u64, size, secs, Duration::from_micros(spin));
        println!(
            "{:>12.0} {:>12.0} {:>+8.3} {:>10} {:>10}",
            r,
            a,
            (a / r - 1.0) * 100.0,
            s,
            rx
        );
    }
}

/// Returns (achieved b/s at the receiver, sent, received). The achieved
/// rate is (received - 1) datagrams over the span from the first arrival
/// to the last: n datagrams paced at interval T span (n - 1) T.
fn satcc_net_bench(rate: u64, size: u32, secs: f64, spin: Duration) -> (f64, u64, u64) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let rx_addr = rx.local_addr().unwrap();
    satcc_net::grow_buffers(&rx, 4 << 20);
    satcc_net::grow_buffers(&tx, 4 << 20);
    let clock = Clock::new();
    let cfg = ConnConfig {
        protocol: WireProtocol::Datagram,
        peer_timeout: None,
        burst: satcc_net::DEFAULT_BURST,
    };
    let run = Duration::from_secs_f64(secs);
    rx.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let receiver = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let (mut first, mut last, mut n, mut bytes) = (None, clock.now(), 0u64, 0u64);
        while let Ok((len, _)) = rx.recv_from(&mut buf) {
            let now = clock.now();
            first.get_or_insert(now);
            last = now;
            n += 1;
            bytes += len as u64;
        }
        let span = (last - first.unwrap_or(last)).as_secs_f64();
        let per = bytes as f64 / n.max(1) as f64;
        ((n.saturating_sub(1)) as f64 * per * 8.0 / span, n)
    });
    // The compact Datagram header is 12 bytes: the source's interval is
    // the UDP payload size over the rate.
    let mut src = CbrSource::new(CbrConfig::new(size - 12, size, rate, false), clock.now());
    let mut conn = Conn::new(tx, rx_addr, clock, cfg);
    conn.set_spin(spin);
    let start = clock.now();
    src.set_unlimited(start);
    conn.drive(&mut src, start + run).unwrap();
    let sent = conn.counters().sent;
    let (achieved, got) = receiver.join().unwrap();
    (achieved, sent, got)
}
