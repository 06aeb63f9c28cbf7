//! The emulator measured alone over loopback: delay, rate, loss.

use std::net::UdpSocket;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration as StdDuration;

use satcc_net::emu::{LinkConfig, Relay, RelayConfig};
use satcc_net::{Clock, Conn, ConnConfig};
use satcc_proto::cbr::{CbrConfig, CbrSource};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Sender};

/// The timing tests run one at a time: on a 2-core machine, tests that
/// each run a relay, a sender and a receiver in parallel measure each
/// other's scheduling, not the emulator.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// More runnable threads than cores (1-minute load average above the
/// core count, Linux): the tail of wall-clock timings then reflects other
/// processes' use of the CPU.
fn overloaded() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .is_some_and(|l| l > cores)
}

/// Bits per second from arrival times and sizes: the least-squares slope
/// of cumulative bits against time, robust to a late wake-up of the
/// receiving thread at either end (unlike first-to-last).
fn fitted_rate(got: &[(satcc_proto::Instant, usize)]) -> f64 {
    let t0 = got[0].0;
    let mut bits = 0.0;
    let pts: Vec<(f64, f64)> = got
        .iter()
        .map(|(t, n)| {
            let p = ((*t - t0).as_secs_f64(), bits);
            bits += *n as f64 * 8.0;
            p
        })
        .collect();
    let k = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / k,
        pts.iter().map(|p| p.1).sum::<f64>() / k,
    );
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

fn link(toml: &str) -> LinkConfig {
    LinkConfig::from_toml_str(toml, "test").unwrap()
}

/// A relay in front of a fresh server socket.
fn relay(toml: &str) -> (Relay, UdpSocket) {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let cfg = RelayConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        server.local_addr().unwrap(),
        link(toml),
    );
    (Relay::start(cfg).unwrap(), server)
}

/// Arrival times at `server` until it has been quiet for `quiet`.
fn arrivals(
    server: UdpSocket,
    clock: Clock,
    quiet: StdDuration,
) -> Vec<(satcc_proto::Instant, Vec<u8>)> {
    server.set_read_timeout(Some(quiet)).unwrap();
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::new();
    while let Ok((n, _)) = server.recv_from(&mut buf) {
        out.push((clock.now(), buf[..n].to_vec()));
    }
    out
}

/// 50 ms one-way at 200 datagrams/s: every datagram's one-way delay is
/// 50 ms plus its 10 µs serialisation, within 1 ms at the 99th
/// percentile.
#[test]
fn delay_within_1ms_p99() {
    let _g = serial();
    let (relay, server) =
        relay("rate = \"100Mbps\"\ndelay = \"50ms\"\nqueue = { kind = \"droptail\", limit = 100 }");
    let clock = Clock::new();
    let to = relay.local_addr();
    let rx = std::thread::spawn(move || arrivals(server, clock, StdDuration::from_millis(300)));
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..200 {
        let t = clock.now().as_nanos();
        client.send_to(&t.to_be_bytes(), to).unwrap();
        clock.sleep_until(clock.now() + Duration::from_millis(5));
    }
    let got = rx.join().unwrap();
    assert_eq!(got.len(), 200);
    let mut err_us: Vec<f64> = got
        .iter()
        .map(|(at, d)| {
            let sent = u64::from_be_bytes(d[..8].try_into().unwrap());
            (at.as_nanos() - sent) as f64 / 1e3 - 50_000.0
        })
        .collect();
    err_us.sort_by(f64::total_cmp);
    let (p50, p90, p99) = (err_us[99], err_us[179], err_us[197]);
    eprintln!(
        "excess one-way delay, us: min {:.0} p50 {p50:.0} p90 {p90:.0} p99 {p99:.0} max {:.0}",
        err_us[0], err_us[199]
    );
    assert!(
        err_us[0] >= 0.0,
        "a datagram arrived early: {} us",
        err_us[0]
    );
    assert!(p90 < 1000.0, "p90 excess delay {p90} us");
    if overloaded() {
        eprintln!("machine overloaded: p99 checked against 10 ms instead of 1 ms");
        assert!(p99 < 10_000.0, "p99 excess delay {p99} us");
    } else {
        assert!(p99 < 1000.0, "p99 excess delay {p99} us");
    }
    let s = relay.stop();
    assert_eq!(s[0].delivered, 200);
}

/// A 10 Mb/s link fed at 15 Mb/s for 1 s delivers at 10 Mb/s (IP bytes:
/// UDP payload + 28), within 1 %.
#[test]
fn rate_within_1_percent() {
    let _g = serial();
    let (relay, server) =
        relay("rate = \"10Mbps\"\ndelay = \"5ms\"\nqueue = { kind = \"droptail\", limit = 5000 }");
    let clock = Clock::new();
    let rx = std::thread::spawn(move || arrivals(server, clock, StdDuration::from_millis(500)));
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut conn = Conn::new(
        tx,
        relay.local_addr(),
        clock,
        ConnConfig {
            protocol: WireProtocol::Datagram,
            peer_timeout: None,
            burst: satcc_net::DEFAULT_BURST,
        },
    );
    // 1000-byte UDP payloads (12 header + 988), 1028 bytes of IP each.
    let mut src = CbrSource::new(CbrConfig::new(988, 1028, 15_000_000, false), clock.now());
    src.set_unlimited(clock.now());
    conn.drive(&mut src, clock.now() + Duration::from_secs(1))
        .unwrap();
    let got = rx.join().unwrap();
    let sent = conn.counters().sent;
    let stats = relay.stop();
    assert_eq!(stats[0].drops(), 0, "{stats:?}");
    assert_eq!(
        got.len() as u64,
        sent,
        "loopback or the relay lost datagrams"
    );
    let sizes: Vec<_> = got.iter().map(|(t, d)| (*t, d.len() + 28)).collect();
    let rate = fitted_rate(&sizes);
    eprintln!("delivered {rate:.0} b/s");
    assert!((rate / 10e6 - 1.0).abs() < 0.01, "delivered {rate:.0} b/s");
}

/// Uniform loss 5 % on 4000 datagrams: the loss count lies within the
/// binomial 99.99 % interval (4 sd = 55), and every datagram is either
/// delivered or counted as an error drop.
#[test]
fn loss_within_binomial_interval() {
    let _g = serial();
    let (relay, server) = relay(
        "rate = \"100Mbps\"\ndelay = \"1ms\"\nerror = { kind = \"uniform\", per = 0.05 }\nqueue = { kind = \"droptail\", limit = 1000 }",
    );
    let clock = Clock::new();
    let rx = std::thread::spawn(move || arrivals(server, clock, StdDuration::from_millis(300)));
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let n = 4000u64;
    let start = clock.now();
    for i in 0..n {
        client.send_to(&[0u8; 64], relay.local_addr()).unwrap();
        clock.sleep_until(start + Duration::from_micros(250 * (i + 1)));
    }
    let got = rx.join().unwrap().len() as u64;
    let s = relay.stop();
    let lost = n - got;
    eprintln!("lost {lost} of {n} (expected 200, binomial sd 13.8)");
    assert_eq!(s[0].drops_error, lost, "{s:?}");
    assert!((lost as f64 - 200.0).abs() < 55.0, "lost {lost} of {n}");
}

/// The reverse direction takes the reverse rate: 1 Mb/s back, 100 Mb/s
/// forward; an echo server's replies arrive paced at 1 Mb/s.
#[test]
fn reverse_direction_has_its_own_rate() {
    let _g = serial();
    let (relay, server) = relay(
        "rate = \"100Mbps\"\nreverse_rate = \"1Mbps\"\ndelay = \"2ms\"\nqueue = { kind = \"droptail\", limit = 1000 }",
    );
    let clock = Clock::new();
    let echo = std::thread::spawn(move || {
        server
            .set_read_timeout(Some(StdDuration::from_millis(300)))
            .unwrap();
        let mut buf = [0u8; 2000];
        while let Ok((n, from)) = server.recv_from(&mut buf) {
            server.send_to(&buf[..n], from).unwrap();
        }
    });
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..50 {
        client.send_to(&[0u8; 222], relay.local_addr()).unwrap();
    }
    // 50 x 250 bytes at 1 Mb/s: 100 ms of serialisation.
    let got = arrivals(client, clock, StdDuration::from_millis(300));
    echo.join().unwrap();
    assert_eq!(got.len(), 50);
    let sizes: Vec<_> = got.iter().map(|(t, d)| (*t, d.len() + 28)).collect();
    let rate = fitted_rate(&sizes);
    eprintln!("reverse {rate:.0} b/s");
    assert!((rate / 1e6 - 1.0).abs() < 0.02, "reverse {rate:.0} b/s");
}

/// One client at a time: while one is being served, another's datagrams
/// are dropped and counted, so neither receives the other's replies.
#[test]
fn second_client_is_refused_while_the_first_is_active() {
    let _g = serial();
    let (relay, server) =
        relay("rate = \"100Mbps\"\ndelay = \"1ms\"\nqueue = { kind = \"droptail\", limit = 100 }");
    let clock = Clock::new();
    let rx = std::thread::spawn(move || arrivals(server, clock, StdDuration::from_millis(300)));
    let (a, b) = (
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        UdpSocket::bind("127.0.0.1:0").unwrap(),
    );
    for _ in 0..5 {
        a.send_to(b"a", relay.local_addr()).unwrap();
        std::thread::sleep(StdDuration::from_millis(2));
        b.send_to(b"b", relay.local_addr()).unwrap();
        std::thread::sleep(StdDuration::from_millis(2));
    }
    let got = rx.join().unwrap();
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|(_, d)| d == b"a"));
    assert_eq!(relay.other_clients(), 5);
}

/// Two routes through one link (`RelayConfig::routes`): each client
/// reaches its own server and gets its own server's replies, and both
/// share the link's rate: 2 × 100 datagrams of 1000 B at 1 Mb/s take about
/// 1.6 s of serialisation together (each alone would take 0.8 s).
#[cfg(target_os = "linux")]
#[test]
fn two_routes_share_one_link() {
    let _g = serial();
    let servers: Vec<UdpSocket> = (0..2)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            // The servers are read one after the other: the second holds
            // all of its 100 datagrams meanwhile, and at ~2.3 kB of kernel
            // memory each they overflow the default ~208 kB buffer (seen:
            // 94 of 100 kept, though the relay delivered all 200).
            satcc_net::grow_buffers(&s, 1 << 20);
            s
        })
        .collect();
    let free = || {
        UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    };
    let mut cfg = RelayConfig::new(
        free(),
        servers[0].local_addr().unwrap(),
        link("rate = \"1Mbps\"\ndelay = \"5ms\"\nqueue = { kind = \"droptail\", limit = 1000 }"),
    );
    cfg.overhead = 0;
    cfg.routes = vec![(free(), servers[1].local_addr().unwrap())];
    let near = [cfg.listen, cfg.routes[0].0];
    let relay = Relay::start(cfg).unwrap();
    let clients: Vec<UdpSocket> = (0..2)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let t0 = std::time::Instant::now();
    for _ in 0..100 {
        for (i, c) in clients.iter().enumerate() {
            let mut d = vec![i as u8; 1000];
            d[1] = 7;
            c.send_to(&d, near[i]).unwrap();
        }
    }
    // Each server gets its own client's 100 datagrams, unchanged.
    let mut last = [StdDuration::ZERO; 2];
    let mut from = [None; 2];
    for (i, s) in servers.iter().enumerate() {
        s.set_read_timeout(Some(StdDuration::from_secs(5))).unwrap();
        let mut buf = [0u8; 2000];
        for _ in 0..100 {
            let (n, f) = s.recv_from(&mut buf).unwrap();
            assert_eq!((n, buf[0], buf[1]), (1000, i as u8, 7));
            from[i] = Some(f);
        }
        last[i] = t0.elapsed();
    }
    let both = last[0].max(last[1]).as_secs_f64();
    assert!(
        (1.5..2.5).contains(&both) || overloaded(),
        "200 kB at 1 Mb/s took {both:.2} s"
    );
    // Replies go back to the right client.
    for (i, s) in servers.iter().enumerate() {
        s.send_to(&[10 + i as u8; 50], from[i].unwrap()).unwrap();
    }
    for (i, c) in clients.iter().enumerate() {
        c.set_read_timeout(Some(StdDuration::from_secs(2))).unwrap();
        let mut buf = [0u8; 100];
        let (n, _) = c.recv_from(&mut buf).unwrap();
        assert_eq!((n, buf[0]), (50, 10 + i as u8));
    }
    let st = relay.stop();
    assert_eq!((st[0].arrived, st[0].delivered), (200, 200));
    assert_eq!(st[1].delivered, 2);
}
