//! `satcc perf`: an iperf3-like flow of a satcc protocol over real UDP.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::process::ExitCode;

use clap::Args;
use satcc_net::perf::{protocol_names, receiver_factory, run_client, ClientOptions, Interval};
use satcc_net::{grow_buffers, Clock, PeerReport, Server, ServerConfig};
use satcc_proto::Duration;
use satcc_sim::scenario::units::parse_duration;
use serde::Serialize;

/// Measure a TFRC, CCID3, TFRCP, Saratoga/STFRC or CBR flow over a real network (or
/// through `satcc emulate`): the sans-IO endpoints of the simulator,
/// driven over UDP in wall-clock time. Or the kernel's own TCP with the
/// congestion control of your choice (`--protocol tcp --cc cubic`),
/// measured from the kernel's TCP_INFO: goodput (bytes acknowledged),
/// retransmissions, RTT and cwnd, in the same table.
///
/// The server makes a receiver for each client (configured as a scenario
/// flow of that protocol would be) and prints what it receives; the client
/// sends for --time and prints, every --interval, its sending rate, the
/// sender's computed rate X, the receive rate and loss event rate the
/// receiver reported, and the RTT.
///
/// Examples:
///   satcc perf --server --feedback dynamic                 # on 0.0.0.0:5201
///   satcc perf --client 192.0.2.7:5201 --protocol ccid3
///   satcc perf --client 127.0.0.1:9000 --protocol tfrc --time 30s --json > run.json
///   satcc perf --client 127.0.0.1:5201 --protocol cbr --rate 2Mbps
///   satcc perf --client 127.0.0.1:5201 --protocol tfrcp --set strategy=s2 --set k=5
///   satcc perf --client 127.0.0.1:5201 --protocol stfrc      # Saratoga with paper 000's STFRC
///   satcc perf --client 127.0.0.1:5201 --protocol saratoga --rate 5Mbps
///   satcc perf --client 127.0.0.1:5201 --protocol tcp --cc bbr   # the kernel's TCP (Linux)
///
/// satcc's own TCP (newreno, sack, peach, peach-sack) over real TCP to a
/// kernel receiver: a userspace sender on raw frames, inside satcc shell
/// (it needs a packet socket; it takes the address 100.64.0.3, --local).
/// TCP-Peach's dummies leave with DSCP LE, which a `priority` link queue
/// serves last; the kernel's D-SACK of a dummy counts as its ACK:
///   satcc shell --preset geo --peer 'satcc perf --server' -- \
///       satcc perf --client 100.64.0.2:5201 --protocol peach --time 30s
///   satcc shell --link geo-prio.toml --peer 'satcc perf --server' -- \
///       satcc perf --client 100.64.0.2:5201 --protocol peach-sack --bytes 5000000 --json
///
/// Across an emulated GEO link, any TCP the kernel has (see `satcc shell --help`):
///   satcc shell --preset geo --peer 'satcc perf --server' -- \
///       satcc perf --client 100.64.0.2:5201 --protocol tcp --cc cubic --time 20s
///
/// Through an emulated GEO link (see `satcc emulate --help`):
///   satcc perf --server --bind 127.0.0.1:9001 &
///   satcc emulate --to 127.0.0.1:9001 --preset geo &
///   satcc perf --client 127.0.0.1:9000 --protocol tfrc
///
/// JSON (--json): one object at the end; flow fields are named as in a
/// simulated run's summary.json (packets_sent, data_bytes_sent,
/// mean_rtt_s, loss_event_rate, slow_start_exit_s; the server's
/// delivered_bytes, goodput_bps, feedback_packets) plus `intervals`.
/// Kernel TCP adds cc, bytes_acked, bytes_acked_at_close, retransmits,
/// min_rtt_s, cwnd, mss (and cwnd, retransmits per interval); its
/// send_rate_bps is the goodput (bytes acknowledged over the run) and its
/// feedback_packets the segments received. satcc's TCP over real TCP
/// has the same fields (cc is "satcc PROTOCOL") plus dummies_sent,
/// dummies_acked, timeouts and dsacks_other.
///
/// The server takes both: UDP datagrams of every protocol and TCP
/// connections on the same port number.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct PerfArgs {
    /// Run the server.
    #[arg(long, conflicts_with = "client")]
    pub server: bool,
    /// Run a client sending to HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub client: Option<String>,
    /// Local address [server default: 0.0.0.0:5201; client: any port].
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// Client: tfrc, ccid3, tfrcp, stfrc, saratoga (with --rate), cbr, or
    /// tcp (the kernel's, Linux; with --cc).
    #[arg(long, default_value = "tfrc")]
    pub protocol: String,
    /// With --protocol tcp: the kernel congestion control (any name in
    /// /proc/sys/net/ipv4/tcp_available_congestion_control, e.g. reno,
    /// cubic, bbr) [default: the system's,
    /// net.ipv4.tcp_congestion_control].
    #[arg(long, value_name = "NAME")]
    pub cc: Option<String>,
    /// How long the client sends; how long the server serves [default:
    /// client 10s, server until interrupted].
    #[arg(long, value_name = "DURATION")]
    pub time: Option<String>,
    /// Reporting interval.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub interval: String,
    /// Payload bytes per packet (the flow's `mss`, TFRC's s).
    #[arg(long, default_value_t = 1000)]
    pub mss: u32,
    /// Server: the feedback policy of the CCID3/TFRC receivers it makes,
    /// standard or dynamic (paper 001). Feedback is the receiver's
    /// business, so the client does not take it.
    #[arg(long, default_value = "standard")]
    pub feedback: String,
    /// CBR and Saratoga: the rate, e.g. `2Mbps`, counted at IP (every
    /// byte of the datagram with its IPv4 and UDP headers, as a link
    /// counts it).
    #[arg(long)]
    pub rate: Option<String>,
    /// Further flow keys as in a scenario's [[flows]], e.g.
    /// `--set oscillation_damping=true`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Client: give up when no feedback came for this long.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub peer_timeout: String,
    /// Server: clients served at once.
    #[arg(long, default_value_t = 64)]
    pub max_peers: usize,
    /// Server: forget a client silent this long (and report it).
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub idle_timeout: String,
    /// Seed of the sender's random stream (TFRCP strategy S3).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With --protocol newreno|sack|peach|peach-sack: send exactly this
    /// many bytes, then close (instead of --time).
    #[arg(long, value_name = "BYTES", conflicts_with = "time")]
    pub bytes: Option<u64>,
    /// With --protocol newreno|sack|peach|peach-sack: the device the
    /// userspace TCP sends on (satcc shell's is satcc0).
    #[arg(long, value_name = "DEV", default_value = "satcc0")]
    pub iface: String,
    /// With --protocol newreno|sack|peach|peach-sack: the sender's own
    /// IPv4 address, one no kernel socket owns (satcc shell's /24 leaves
    /// 100.64.0.3 free).
    #[arg(long, value_name = "IPV4", default_value = "100.64.0.3")]
    pub local: String,
    /// JSON on stdout and nothing else (server: one line per finished
    /// client).
    #[arg(long)]
    pub json: bool,
}

fn dur(what: &str, s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| format!("{what}: {e}"))
}

fn resolve(what: &str, s: &str) -> Result<SocketAddr, String> {
    s.to_socket_addrs()
        .map_err(|e| format!("{what} '{s}': {e} (expected HOST:PORT)"))?
        .next()
        .ok_or_else(|| format!("{what} '{s}': no address"))
}

/// Runs `satcc perf`.
pub fn perf(a: PerfArgs) -> ExitCode {
    let r = if a.server {
        server(&a)
    } else if a.client.is_some() {
        client(&a)
    } else {
        Err("give --server or --client HOST:PORT (see satcc perf --help)".into())
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("satcc perf: {e}");
            ExitCode::from(2)
        }
    }
}

fn flow_keys(a: &PerfArgs) -> Result<toml::Table, String> {
    let protocols = protocol_names();
    if !protocols.contains(&a.protocol.as_str()) {
        return Err(format!(
            "--protocol: '{}' is not one of {}, tcp, {}",
            a.protocol,
            protocols.join(", "),
            USERSPACE_TCP.join(", ")
        ));
    }
    if a.feedback != "standard" {
        return Err(
            "--feedback: the feedback policy is the receiver's: give it to the server (satcc perf --server --feedback dynamic)"
                .into(),
        );
    }
    let mut t = toml::Table::new();
    t.insert("protocol".into(), a.protocol.clone().into());
    t.insert("mss".into(), i64::from(a.mss).into());
    if let Some(r) = &a.rate {
        t.insert("rate".into(), r.clone().into());
    }
    t.extend(flow_keys_of(&a.set)?);
    Ok(t)
}

/// `--set KEY=VALUE` as a table of flow keys.
fn flow_keys_of(set: &[String]) -> Result<toml::Table, String> {
    let mut t = toml::Table::new();
    for s in set {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("--set '{s}': expected KEY=VALUE"))?;
        let v = format!("v = {v}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(v.to_string()));
        t.insert(k.trim().to_string(), v);
    }
    Ok(t)
}

fn opt(x: Option<f64>, scale: f64, prec: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{:.*}", prec, v * scale),
        _ => "-".into(),
    }
}

fn client(a: &PerfArgs) -> Result<(), String> {
    let server = resolve("--client", a.client.as_deref().unwrap_or_default())?;
    if a.protocol == "tcp" {
        return tcp_client(a, server);
    }
    if USERSPACE_TCP.contains(&a.protocol.as_str()) {
        return utcp_client(a, server);
    }
    for (given, what) in [
        (a.bytes.is_some(), "--bytes"),
        (a.iface != "satcc0", "--iface"),
        (a.local != "100.64.0.3", "--local"),
    ] {
        if given {
            return Err(format!(
                "{what}: only with --protocol {}",
                USERSPACE_TCP.join("|")
            ));
        }
    }
    if a.cc.is_some() {
        return Err(format!(
            "--cc: only with --protocol tcp ({} sets its own rate)",
            a.protocol
        ));
    }
    let bind = match &a.bind {
        Some(b) => resolve("--bind", b)?,
        None => satcc_net::client_bind_addr(server),
    };
    let opts = ClientOptions {
        server,
        bind,
        flow: flow_keys(a).map_err(|e| {
            if e.starts_with("--") {
                e
            } else {
                format!("flow {e}")
            }
        })?,
        time: dur("--time", a.time.as_deref().unwrap_or("10s"))?,
        interval: dur("--interval", &a.interval)?,
        peer_timeout: dur("--peer-timeout", &a.peer_timeout)?,
        seed: a.seed,
    };
    if opts.time == Duration::ZERO {
        return Err("--time: must be greater than zero".into());
    }
    if opts.interval == Duration::ZERO {
        return Err("--interval: must be greater than zero".into());
    }
    // Refuse a bad flow before printing anything.
    satcc_net::perf::flow_config(opts.flow.clone()).map_err(|e| format!("flow {e}"))?;
    if !a.json {
        eprintln!(
            "satcc perf: {} to {server} for {:.1} s",
            a.protocol,
            opts.time.as_secs_f64()
        );
        print_header();
    }
    let quiet = a.json;
    let report = run_client(&opts, |iv: &Interval| {
        if !quiet {
            print_interval(iv);
        }
    })
    .map_err(|e| e.to_string())?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        eprintln!(
            "sent {} packets ({:.3} Mb/s payload), mean RTT {} ms, loss event rate {}, {} feedback packets; refused {} malformed, {} from strangers",
            report.packets_sent,
            report.send_rate_bps / 1e6,
            opt(report.mean_rtt_s, 1e3, 1),
            opt(report.loss_event_rate, 1.0, 6),
            report.feedback_packets,
            report.malformed,
            report.unknown_peer
        );
        // The X column is the allowed rate X; what the sender paces at
        // (RFC 5348 §4.5's X_inst with oscillation damping) can differ, and
        // did by 5-8x in issue 34's overload. Slow start's first interval
        // is left out: X grows through it. Up to 2 X is the damping's
        // bound (damping_max_gain); the note is for more.
        let over: Vec<f64> = report
            .intervals
            .iter()
            .skip(1)
            .filter_map(|i| i.x_bps.filter(|x| *x > 0.0).map(|x| i.send_rate_bps / x))
            .filter(|r| *r > 2.5)
            .collect();
        if !over.is_empty() {
            eprintln!(
                "note: in {} interval(s) the sender sent faster than 2.5 X (up to {:.1} X): X is the allowed rate, the pacing rate (X_inst, RFC 5348 §4.5) differed",
                over.len(),
                over.iter().cloned().fold(0.0, f64::max)
            );
        }
        if report.late_wakeups > 0 {
            eprintln!(
                "note: {} timed wake-ups came over 1 ms late (latest {:.1} ms): a busy machine; pacing may have suffered",
                report.late_wakeups,
                report.max_wakeup_late_s * 1e3
            );
        }
    }
    Ok(())
}

/// The per-interval table's header (one table for every protocol; a
/// column that does not apply shows `-`).
fn print_header() {
    eprintln!(
        "{:>13} {:>11} {:>11} {:>11} {:>10} {:>9} {:>6} {:>7} {:>5}",
        "interval_s", "send_Mbps", "X_Mbps", "Xrecv_Mbps", "p", "rtt_ms", "fb", "cwnd", "retr"
    );
}

fn print_interval(iv: &Interval) {
    let int = |x: Option<u64>| x.map_or_else(|| "-".to_string(), |v| v.to_string());
    eprintln!(
        "{:>6.1}-{:<6.1} {:>11.3} {:>11} {:>11} {:>10} {:>9} {:>6} {:>7} {:>5}",
        iv.start_s,
        iv.end_s,
        iv.send_rate_bps / 1e6,
        opt(iv.x_bps, 1e-6, 3),
        opt(iv.x_recv_bps, 1e-6, 3),
        opt(iv.loss_event_rate, 1.0, 6),
        opt(iv.rtt_s, 1e3, 1),
        iv.feedback_packets,
        int(iv.cwnd),
        int(iv.retransmits)
    );
}

/// `--protocol tcp`: the kernel's TCP.
#[cfg(target_os = "linux")]
fn tcp_client(a: &PerfArgs, server: SocketAddr) -> Result<(), String> {
    // Default: the system's (net.ipv4.tcp_congestion_control).
    let cc = match a.cc.clone() {
        Some(c) => c,
        None => std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "cubic".into()),
    };
    // Checked before connecting, so that a typo is the only line printed.
    satcc_net::ktcp::check_cc(&cc).map_err(|e| e.to_string())?;
    for (given, what) in [
        (a.bind.is_some(), "--bind"),
        (a.rate.is_some(), "--rate"),
        (!a.set.is_empty(), "--set"),
        (a.mss != 1000, "--mss"),
    ] {
        if given {
            return Err(format!(
                "{what}: not with --protocol tcp (the kernel's TCP takes its rate, segment size and options from the kernel)"
            ));
        }
    }
    let time = dur("--time", a.time.as_deref().unwrap_or("10s"))?;
    if time == Duration::ZERO {
        return Err("--time: must be greater than zero".into());
    }
    let interval = dur("--interval", &a.interval)?;
    if interval == Duration::ZERO {
        return Err("--interval: must be greater than zero".into());
    }
    let peer_timeout = dur("--peer-timeout", &a.peer_timeout)?;
    let quiet = a.json;
    let mut first = true;
    let report = satcc_net::ktcp::run_tcp_client(
        server,
        &cc,
        time,
        interval,
        peer_timeout,
        |iv: &Interval| {
            if quiet {
                return;
            }
            // Once connected: a failure to connect is then one line.
            if std::mem::take(&mut first) {
                eprintln!(
                    "satcc perf: kernel tcp ({cc}) to {server} for {:.1} s; send_Mbps is goodput (bytes acknowledged)",
                    time.as_secs_f64()
                );
                print_header();
            }
            print_interval(iv);
        },
    )
    .map_err(|e| e.to_string())?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        eprintln!(
            "tcp ({cc}): {} bytes acknowledged in {:.1} s: {:.3} Mb/s goodput; mean RTT {} ms (min {}), {} retransmitted segments, cwnd {} at the end",
            report.bytes_acked.unwrap_or(0),
            report.duration_s,
            report.send_rate_bps / 1e6,
            opt(report.mean_rtt_s, 1e3, 1),
            opt(report.min_rtt_s, 1e3, 1),
            report.retransmits.unwrap_or(0),
            report.cwnd.unwrap_or(0)
        );
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn tcp_client(_: &PerfArgs, _: SocketAddr) -> Result<(), String> {
    Err("--protocol tcp: the kernel's TCP is measured on Linux only".into())
}

/// satcc's own TCP senders over real TCP (`satcc_net::utcp`).
const USERSPACE_TCP: [&str; 4] = ["newreno", "sack", "peach", "peach-sack"];

/// `--protocol newreno|sack|peach|peach-sack`: satcc's sans-IO TCP sender
/// on raw frames, to a kernel receiver.
#[cfg(target_os = "linux")]
fn utcp_client(a: &PerfArgs, server: SocketAddr) -> Result<(), String> {
    use satcc_net::utcp;
    let SocketAddr::V4(server) = server else {
        return Err(format!(
            "--client {server}: --protocol {} runs over IPv4 only",
            a.protocol
        ));
    };
    for (given, what) in [
        (a.bind.is_some(), "--bind"),
        (a.rate.is_some(), "--rate"),
        (a.cc.is_some(), "--cc"),
        (a.mss != 1000, "--mss"),
    ] {
        if given {
            return Err(format!(
                "{what}: not with --protocol {} (the window sets the rate; the MSS is the handshake's)",
                a.protocol
            ));
        }
    }
    let local: std::net::Ipv4Addr = a
        .local
        .parse()
        .map_err(|_| format!("--local '{}': expected an IPv4 address", a.local))?;
    let mut flow = flow_keys_of(&a.set)?;
    flow.remove("protocol");
    let time = dur("--time", a.time.as_deref().unwrap_or("10s"))?;
    if time == Duration::ZERO {
        return Err("--time: must be greater than zero".into());
    }
    if a.bytes == Some(0) {
        return Err("--bytes: must be greater than zero".into());
    }
    let interval = dur("--interval", &a.interval)?;
    if interval == Duration::ZERO {
        return Err("--interval: must be greater than zero".into());
    }
    let timeout = dur("--peer-timeout", &a.peer_timeout)?;
    if timeout == Duration::ZERO {
        return Err("--peer-timeout: must be greater than zero".into());
    }
    utcp::check_flow(&a.protocol, &flow).map_err(|e| e.to_string())?;
    let o = utcp::UtcpOptions {
        server,
        protocol: a.protocol.clone(),
        flow,
        iface: a.iface.clone(),
        local,
        time: if a.bytes.is_some() {
            Duration::MAX
        } else {
            time
        },
        bytes: a.bytes,
        interval,
        timeout,
    };
    let quiet = a.json;
    let mut first = true;
    let report = utcp::run_utcp_client(&o, |iv: &Interval| {
        if quiet {
            return;
        }
        if std::mem::take(&mut first) {
            eprintln!(
                "satcc perf: satcc {} over real TCP ({} -> {server}); send_Mbps is goodput (bytes acknowledged)",
                a.protocol, local
            );
            print_header();
        }
        print_interval(iv);
    })
    .map_err(|e| e.to_string())?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        eprintln!(
            "{}: {} bytes acknowledged in {:.1} s: {:.3} Mb/s goodput; mean RTT {} ms (min {}), {} retransmitted segments, {} timeouts; dummies {} sent, {} answered (D-SACK)",
            a.protocol,
            report.bytes_acked.unwrap_or(0),
            report.duration_s,
            report.send_rate_bps / 1e6,
            opt(report.mean_rtt_s, 1e3, 1),
            opt(report.min_rtt_s, 1e3, 1),
            report.retransmits.unwrap_or(0),
            report.timeouts.unwrap_or(0),
            report.dummies_sent.unwrap_or(0),
            report.dummies_acked.unwrap_or(0),
        );
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn utcp_client(a: &PerfArgs, _: SocketAddr) -> Result<(), String> {
    Err(format!(
        "--protocol {}: satcc's userspace TCP runs on Linux only",
        a.protocol
    ))
}

/// A finished client as the server reports it.
#[derive(Serialize)]
struct PeerJson {
    peer: String,
    protocol: String,
    duration_s: f64,
    delivered_bytes: u64,
    goodput_bps: f64,
    loss_event_rate: Option<f64>,
    feedback_packets: Option<u64>,
    /// UDP datagrams (none for TCP, where the kernel counts segments).
    packets_received: Option<u64>,
    malformed: Option<u64>,
}

fn peer_json(r: &PeerReport) -> PeerJson {
    let secs = (r.last - r.first).as_secs_f64();
    PeerJson {
        peer: r.peer.to_string(),
        protocol: r.protocol.to_string(),
        duration_s: secs,
        delivered_bytes: r.stats.delivered_bytes,
        goodput_bps: if secs > 0.0 {
            r.stats.delivered_bytes as f64 * 8.0 / secs
        } else {
            0.0
        },
        loss_event_rate: r.stats.loss_event_rate,
        feedback_packets: r.stats.feedback_sent,
        packets_received: Some(r.counters.received),
        malformed: Some(r.counters.malformed),
    }
}

#[cfg(target_os = "linux")]
fn tcp_peer_json(p: &satcc_net::ktcp::TcpPeer) -> PeerJson {
    PeerJson {
        peer: p.peer.to_string(),
        protocol: "tcp".into(),
        duration_s: p.duration_s,
        delivered_bytes: p.bytes,
        goodput_bps: if p.duration_s > 0.0 {
            p.bytes as f64 * 8.0 / p.duration_s
        } else {
            0.0
        },
        loss_event_rate: None,
        feedback_packets: None,
        packets_received: None,
        malformed: None,
    }
}

/// A client's result on stdout: one JSON line with `json`, else one line
/// of text (the per-interval progress stays on stderr).
fn print_peer(j: &PeerJson, json: bool, what: &str) -> Result<(), String> {
    if json {
        println!("{}", serde_json::to_string(j).map_err(|e| e.to_string())?);
    } else {
        println!(
            "{} {} {what}: {} bytes in {:.1} s, {:.3} Mb/s, p {}, {} malformed",
            j.peer,
            j.protocol,
            j.delivered_bytes,
            j.duration_s,
            j.goodput_bps / 1e6,
            opt(j.loss_event_rate, 1.0, 6),
            j.malformed.unwrap_or(0)
        );
    }
    Ok(())
}

fn server(a: &PerfArgs) -> Result<(), String> {
    let bind = resolve("--bind", a.bind.as_deref().unwrap_or("0.0.0.0:5201"))?;
    let interval = dur("--interval", &a.interval)?;
    if interval == Duration::ZERO {
        return Err("--interval: must be greater than zero".into());
    }
    let until = a.time.as_deref().map(|s| dur("--time", s)).transpose()?;
    let cfg = ServerConfig {
        max_peers: a.max_peers.max(1),
        idle_timeout: dur("--idle-timeout", &a.idle_timeout)?,
    };
    let factory = receiver_factory(&a.feedback).map_err(|e| e.to_string())?;
    let sock = UdpSocket::bind(bind).map_err(|e| format!("--bind {bind}: {e}"))?;
    grow_buffers(&sock, 4 << 20);
    let clock = Clock::new();
    let mut srv = Server::new(sock, clock, cfg, factory);
    // Kernel TCP clients on the same port number.
    #[cfg(target_os = "linux")]
    let tcp = satcc_net::ktcp::TcpServer::start(bind, cfg.max_peers, cfg.idle_timeout)
        .map_err(|e| format!("--bind {bind} (TCP): {e}"))?;
    if !a.json {
        eprintln!(
            "satcc perf: server on {} (feedback {}, up to {} clients)",
            srv.local_addr().map_err(|e| e.to_string())?,
            a.feedback,
            cfg.max_peers
        );
    }
    let mut prev: HashMap<SocketAddr, u64> = HashMap::new();
    // TCP clients apart: a UDP and a TCP client may share an address and
    // port number.
    #[cfg(target_os = "linux")]
    let mut prev_tcp: HashMap<SocketAddr, u64> = HashMap::new();
    let mut k = 1u64;
    loop {
        let mut t = satcc_proto::Instant(interval.as_nanos().saturating_mul(k));
        if let Some(u) = until {
            t = t.min(satcc_proto::Instant(u.as_nanos()));
        }
        srv.drive(t).map_err(|e| e.to_string())?;
        k += 1;
        let secs = interval.as_secs_f64();
        if !a.json {
            for p in srv.active() {
                let before = prev.insert(p.peer, p.stats.delivered_bytes).unwrap_or(0);
                eprintln!(
                    "{:8.1}s {} {}: {:10.3} Mb/s received, p {}, feedback {}",
                    clock.now().as_secs_f64(),
                    p.peer,
                    p.protocol,
                    (p.stats.delivered_bytes - before) as f64 * 8.0 / secs / 1e6,
                    opt(p.stats.loss_event_rate, 1.0, 6),
                    p.stats.feedback_sent.unwrap_or(0)
                );
            }
        }
        #[cfg(target_os = "linux")]
        {
            if !a.json {
                for p in tcp.active() {
                    let before = prev_tcp.insert(p.peer, p.bytes).unwrap_or(0);
                    eprintln!(
                        "{:8.1}s {} tcp: {:10.3} Mb/s received",
                        clock.now().as_secs_f64(),
                        p.peer,
                        p.bytes.saturating_sub(before) as f64 * 8.0 / secs / 1e6,
                    );
                }
            }
            for p in tcp.take_finished() {
                prev_tcp.remove(&p.peer);
                let j = tcp_peer_json(&p);
                if a.json {
                    println!("{}", serde_json::to_string(&j).map_err(|e| e.to_string())?);
                } else {
                    // On stdout, as the other protocols' results.
                    println!(
                        "{} tcp done: {} bytes in {:.1} s, {:.3} Mb/s",
                        j.peer,
                        j.delivered_bytes,
                        j.duration_s,
                        j.goodput_bps / 1e6
                    );
                }
            }
        }
        for r in srv.take_finished() {
            prev.remove(&r.peer);
            print_peer(&peer_json(&r), a.json, "done")?;
        }
        if until.is_some_and(|u| clock.now().as_nanos() >= u.as_nanos()) {
            for r in srv.active() {
                print_peer(&peer_json(&r), a.json, "still active at the end")?;
            }
            #[cfg(target_os = "linux")]
            for p in tcp.active() {
                if a.json {
                    let j = tcp_peer_json(&p);
                    println!("{}", serde_json::to_string(&j).map_err(|e| e.to_string())?);
                }
            }
            return Ok(());
        }
    }
}
