//! The link emulator measured alone, per direction (docs/real.md,
//! "Measured accuracy"): delay and loss at a packet rate, and the rate of
//! a saturated link.
//!
//! ```sh
//! cargo run --release -p satcc-net --example emu_accuracy -- [--pps 10000] [--secs 10]
//! ```
//!
//! - **Delay and loss**: 100 Mb/s each way, 50 ms, uniform loss 1 %; a
//!   sender on loopback sends `--pps` datagrams of 472 bytes (500 bytes
//!   with IPv4 and UDP: 40 Mb/s at 10 000/s) for `--secs`, each carrying
//!   its send time; the receiver subtracts the send time, the configured
//!   delay and the serialisation time. The loss count is set against the
//!   binomial 99 % interval.
//! - **Rate**: 10 Mb/s each way, no loss, fed at 15 Mb/s for `--secs`
//!   (1000-byte payloads); the least-squares slope of delivered bits
//!   against arrival time, set against the 10 Mb/s of IP packets the link
//!   carries (payload share 1000/1028).
//!
//! Each phase runs forward (client to server) and then reverse (server to
//! the client through the relay's upstream socket). Everything binds to
//! 127.0.0.1. The load average is printed: the tail of the delay is the
//! machine's scheduling when other processes compete for the cores.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration as StdDuration;

use satcc_net::emu::{LinkConfig, Relay, RelayConfig};
use satcc_net::Clock;
use satcc_proto::{Duration, Instant};

const OVERHEAD: u64 = 28;

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Sends `n` datagrams of `len` bytes from `from` to `to` at `pps`, each
/// stamped with its sequence number and send time.
fn send(from: &UdpSocket, to: SocketAddr, clock: Clock, pps: f64, n: u64, len: usize) {
    let gap = Duration::from_nanos((1e9 / pps) as u64);
    let start = clock.now();
    let mut buf = vec![0u8; len];
    for k in 0..n {
        let due = start + Duration::from_nanos(gap.as_nanos() * k);
        clock.sleep_until(due);
        buf[..8].copy_from_slice(&k.to_be_bytes());
        buf[8..16].copy_from_slice(&clock.now().as_nanos().to_be_bytes());
        let _ = from.send_to(&buf, to);
    }
}

/// Receives until `quiet` passes with nothing: (seq, send time, arrival).
fn receive(sock: &UdpSocket, clock: Clock, quiet: StdDuration) -> Vec<(u64, Instant, Instant)> {
    sock.set_read_timeout(Some(quiet)).unwrap();
    let mut buf = vec![0u8; 65_536];
    let mut out = Vec::new();
    while let Ok((n, _)) = sock.recv_from(&mut buf) {
        if n >= 16 {
            let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
            let ts = u64::from_be_bytes(buf[8..16].try_into().unwrap());
            out.push((seq, Instant(ts), clock.now()));
        }
    }
    out
}

fn big_buffers(s: &UdpSocket) {
    satcc_net::grow_buffers(s, 16 << 20);
}

/// One phase in one direction: the receiver's records and the relay's
/// counters for that direction.
fn phase(
    link: &str,
    reverse: bool,
    pps: f64,
    n: u64,
    len: usize,
) -> (Vec<(u64, Instant, Instant)>, satcc_net::emu::DirStats) {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    big_buffers(&server);
    big_buffers(&client);
    let mut cfg = RelayConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        server.local_addr().unwrap(),
        LinkConfig::from_toml_str(link, "emu_accuracy").unwrap(),
    );
    cfg.seed = 7;
    let relay = Relay::start(cfg).unwrap();
    let clock = relay.clock();
    let to = relay.local_addr();
    let quiet = StdDuration::from_millis(1500);
    let got = if !reverse {
        let rx = std::thread::spawn(move || receive(&server, clock, quiet));
        send(&client, to, clock, pps, n, len);
        rx.join().unwrap()
    } else {
        // The client opens the path; the server learns the relay's
        // upstream address from it and sends back through the reverse
        // direction.
        // Five, in case the 1 % loss takes one.
        for _ in 0..5 {
            client.send_to(&[0u8; 16], to).unwrap();
        }
        server
            .set_read_timeout(Some(StdDuration::from_secs(2)))
            .unwrap();
        let mut b = [0u8; 64];
        let (_, upstream) = server.recv_from(&mut b).unwrap();
        let rx = std::thread::spawn(move || receive(&client, clock, quiet));
        send(&server, upstream, clock, pps, n, len);
        rx.join().unwrap()
    };
    let stats = relay.stop()[usize::from(reverse)];
    (got, stats)
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn fitted_rate(got: &[(u64, Instant, Instant)], len: usize) -> f64 {
    let t0 = got[0].2;
    let pts: Vec<(f64, f64)> = got
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.2 - t0).as_secs_f64(), (i * len * 8) as f64))
        .collect();
    let k = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / k;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / k;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

fn main() {
    let pps = arg("--pps", 10_000.0);
    let secs = arg("--secs", 10.0);
    println!("load average before: {}", load());
    let n = (pps * secs) as u64;
    let len = 472usize;
    let delay_link = r#"rate = "100Mbps"
delay = "50ms"
queue = { kind = "droptail", limit = 100000 }
error = { kind = "uniform", per = 0.01 }
reverse_error = { kind = "uniform", per = 0.01 }"#;
    let tx_ns = ((len as u64 + OVERHEAD) * 8 * 1_000_000_000) / 100_000_000;
    println!("delay and loss: 100 Mb/s, 50 ms, uniform 1 %, {n} datagrams of {len} B at {pps} /s");
    println!("  (extra delay: arrival minus when an ideal link would deliver it, the datagram's");
    println!("   send time queued behind the ones before it, plus serialisation and 50 ms)");
    println!("  direction   received  link losses  99% interval  other losses   extra delay p50 / p99 / max (ms)");
    for reverse in [false, true] {
        let (got, st) = phase(delay_link, reverse, pps, n, len);
        // The ideal link: datagram k starts when it arrives or when the
        // one before it has been sent, whichever is later (a datagram the
        // error model takes still occupies the transmitter), and arrives
        // 50 ms after its transmission ends.
        let mut sent_at = vec![None; n as usize];
        for &(seq, ts, at) in &got {
            if let Some(slot) = sent_at.get_mut(seq as usize) {
                *slot = Some((ts, at));
            }
        }
        let gap = 1e9 / pps;
        let mut free = 0u64;
        let mut extra = Vec::with_capacity(got.len());
        for (k, slot) in sent_at.iter().enumerate() {
            // A lost datagram's send time is not known: its due time.
            let ts = slot.map_or((k as f64 * gap) as u64, |(ts, _)| ts.as_nanos());
            let start = ts.max(free);
            free = start + tx_ns;
            if let Some((_, at)) = slot {
                extra.push((at.as_nanos() as f64 - (free as f64 + 50e6)) / 1e6);
            }
        }
        let lost = st.drops_error;
        let other = n - got.len() as u64 - lost;
        let (m, sd) = (n as f64 * 0.01, (n as f64 * 0.01 * 0.99).sqrt());
        let (lo, hi) = (m - 2.576 * sd, m + 2.576 * sd);
        println!(
            "  {:9} {:10} {:8} {:>4} [{:.0}, {:.0}]  {:8} (queue {}, send errors {})   {:.3} / {:.3} / {:.3}",
            if reverse { "reverse" } else { "forward" },
            got.len(),
            lost,
            if (lo..=hi).contains(&(lost as f64)) { "in" } else { "OUT" },
            lo,
            hi,
            other,
            st.drops_queue,
            st.send_errors,
            pct(&mut extra, 0.5),
            pct(&mut extra, 0.99),
            pct(&mut extra, 1.0),
        );
    }
    let rate_link = r#"rate = "10Mbps"
delay = "10ms"
queue = { kind = "droptail", limit = 100000 }"#;
    let plen = 1000usize;
    let feed_pps = 15e6 / ((plen as f64 + OVERHEAD as f64) * 8.0);
    let m = (feed_pps * secs) as u64;
    println!("rate: 10 Mb/s, fed at 15 Mb/s for {secs} s ({m} datagrams of {plen} B)");
    println!("  direction   delivered   fitted payload rate   expected   error");
    for reverse in [false, true] {
        let (mut got, _) = phase(rate_link, reverse, feed_pps, m, plen);
        got.sort_by_key(|r| r.2);
        let r = fitted_rate(&got, plen);
        let expected = 10e6 * plen as f64 / (plen as f64 + OVERHEAD as f64);
        println!(
            "  {:9} {:10}   {:14.0} b/s   {:.0}   {:+.3} %",
            if reverse { "reverse" } else { "forward" },
            got.len(),
            r,
            expected,
            (r / expected - 1.0) * 100.0
        );
    }
    println!("load average after: {}", load());
}
