//! `satcc perf`: a flow of a satcc protocol to a server that makes a
//! receiver per peer, with per-interval measurements.
//!
//! Endpoints are configured exactly as a scenario flow would configure
//! them: a [`FlowSpec`] (the TOML keys of `[[flows]]`) through
//! [`ProtocolConfig::from_spec`].

use std::net::{SocketAddr, UdpSocket};

use satcc_proto::endpoint::{BoxedEndpoint, BoxedSender, Event, Message};
use satcc_proto::rng::Rng;
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};
use satcc_sim::protocols::ProtocolConfig;
use satcc_sim::scenario::FlowSpec;
use serde::Serialize;

use crate::clock::{grow_buffers, Clock};
use crate::conn::{Conn, ConnConfig, Counters, NetError};
use crate::server::ReceiverFactory;

/// Protocols `perf` runs (those with a UDP wire format).
pub const PROTOCOLS: &[&str] = &["tfrc", "ccid3", "tfrcp", "stfrc", "saratoga", "cbr"];

/// A flow's configuration from its scenario keys (`protocol`, `mss`, and
/// any option a `[[flows]]` table takes, e.g. `feedback`, `rate`). Errors
/// name the key.
pub fn flow_config(keys: toml::Table) -> Result<ProtocolConfig, String> {
    let spec: FlowSpec =
        serde_path_to_error::deserialize(toml::Value::Table(keys)).map_err(|e| {
            let p = e.path().to_string();
            let m = crate::emu::tidy(&e.into_inner().to_string());
            let (inner, msg) = match m.strip_prefix('\u{1}').and_then(|r| r.split_once('\u{1}')) {
                Some((i, m)) => (i.to_string(), m.to_string()),
                None => (String::new(), m),
            };
            let field = [p.as_str(), inner.as_str()]
                .iter()
                .filter(|s| !s.is_empty() && **s != ".")
                .copied()
                .collect::<Vec<_>>()
                .join(".");
            if field.is_empty() {
                msg
            } else {
                format!("{field}: {msg}")
            }
        })?;
    if spec.protocol.is_tcp() {
        return Err(format!(
            "protocol: '{}' has no UDP wire format (perf runs {})",
            spec.protocol,
            PROTOCOLS.join(", ")
        ));
    }
    // The scenario's own range check (FlowSpec::validate) is crate-private;
    // mss is the one range a perf flow sets.
    if spec.mss == 0 || spec.mss > 65_000 {
        return Err(format!("mss: {} outside 1..=65000", spec.mss));
    }
    Ok(ProtocolConfig::from_spec(&spec, None))
}

/// The wire format of a configured flow.
pub fn wire_protocol(cfg: &ProtocolConfig) -> Option<WireProtocol> {
    match cfg {
        ProtocolConfig::Tfrc { .. } => Some(WireProtocol::Dccp),
        ProtocolConfig::Tfrcp { .. } => Some(WireProtocol::Tfrcp),
        ProtocolConfig::Cbr(_) => Some(WireProtocol::Datagram),
        ProtocolConfig::Saratoga { .. } => Some(WireProtocol::Saratoga),
        ProtocolConfig::Tcp { .. } => None,
    }
}

/// A receiver factory for a [`crate::Server`]: the receiver a scenario
/// flow of that protocol would have, with the segment size of the peer's
/// first data packet. `feedback` (`standard` or `dynamic`) is the
/// TFRC/CCID3 receiver's feedback policy.
pub fn receiver_factory(feedback: &str) -> Result<ReceiverFactory, String> {
    // Checked once here so that the factory cannot fail later.
    let mut probe = toml::Table::new();
    probe.insert("protocol".into(), "ccid3".into());
    probe.insert("feedback".into(), feedback.into());
    flow_config(probe).map_err(|e| format!("--feedback: {e}"))?;
    let feedback = feedback.to_string();
    Ok(Box::new(move |proto: WireProtocol, first: &Message| {
        let (name, len) = match (proto, first) {
            (WireProtocol::Dccp, Message::TfrcData(d)) => ("ccid3", d.len),
            (WireProtocol::Tfrcp, Message::TfrcpData(d)) => ("tfrcp", d.len),
            (WireProtocol::Datagram, Message::Datagram { len, .. }) => ("cbr", *len),
            // A Saratoga PUT opens with METADATA (or DATA if that was
            // lost); the receiver is the same for plain Saratoga and STFRC
            // (paper 000 changes the sender only), and learns the size
            // from METADATA.
            (WireProtocol::Saratoga, Message::SaraMetadata(_)) => ("stfrc", 1000),
            (WireProtocol::Saratoga, Message::SaraData(d)) => ("stfrc", d.len),
            _ => return None,
        };
        let mut t = toml::Table::new();
        t.insert("protocol".into(), name.into());
        t.insert("mss".into(), i64::from(len.clamp(1, 65_000)).into());
        match name {
            "ccid3" => {
                t.insert("feedback".into(), feedback.clone().into());
            }
            "cbr" => {
                t.insert("rate".into(), "1Mbps".into());
            }
            _ => {}
        }
        let cfg = flow_config(t).ok()?;
        let (_, rx) = cfg.instantiate(Instant::ZERO, &mut Rng::new(0));
        Some(Box::new(rx) as BoxedEndpoint)
    }))
}

/// One interval of a client's flow.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Interval {
    /// Start, seconds since the flow started.
    pub start_s: f64,
    /// End.
    pub end_s: f64,
    /// Payload bits per second sent in the interval.
    pub send_rate_bps: f64,
    /// The sender's computed (allowed) rate at the end, bits per second.
    pub x_bps: Option<f64>,
    /// The receive rate the receiver last reported, bits per second.
    pub x_recv_bps: Option<f64>,
    /// The loss event rate the sender last learned.
    pub loss_event_rate: Option<f64>,
    /// The sender's smoothed RTT, seconds.
    pub rtt_s: Option<f64>,
    /// Datagrams received from the server (feedback) in the interval.
    pub feedback_packets: u64,
}

/// How to run a client.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// The server (or an emulator in front of it).
    pub server: SocketAddr,
    /// Local address to bind (port 0: any).
    pub bind: SocketAddr,
    /// The flow's scenario keys (see [`flow_config`]).
    pub flow: toml::Table,
    /// How long to send.
    pub time: Duration,
    /// Reporting interval.
    pub interval: Duration,
    /// End with an error after this long without feedback (not for
    /// `cbr`, which gets none).
    pub peer_timeout: Duration,
    /// Seed of the sender's random stream (TFRCP strategy S3).
    pub seed: u64,
}

/// A finished client run, with field names as in `summary.json` where
/// they mean the same.
#[derive(Clone, Debug, Serialize)]
pub struct ClientReport {
    /// Protocol name.
    pub protocol: String,
    /// The server address.
    pub server: String,
    /// Seconds the flow ran.
    pub duration_s: f64,
    /// Data packets sent.
    pub packets_sent: u64,
    /// Bytes of data packets sent (UDP payload: satcc header + payload).
    pub data_bytes_sent: u64,
    /// Payload bits per second sent over the run.
    pub send_rate_bps: f64,
    /// Mean RTT the sender measured, seconds.
    pub mean_rtt_s: Option<f64>,
    /// Loss event rate at the end.
    pub loss_event_rate: Option<f64>,
    /// When the sender left slow start, seconds from the start.
    pub slow_start_exit_s: Option<f64>,
    /// Feedback datagrams received.
    pub feedback_packets: u64,
    /// Datagrams refused: undecodable, or from another address.
    pub malformed: u64,
    /// Datagrams from an address other than the server's.
    pub unknown_peer: u64,
    /// Sends the socket refused.
    pub send_errors: u64,
    /// The runtime's timed wake-ups that came over 1 ms late (the machine
    /// was busy: pacing suffered when these are many).
    pub late_wakeups: u64,
    /// The latest wake-up, seconds after its deadline.
    pub max_wakeup_late_s: f64,
    /// The intervals.
    pub intervals: Vec<Interval>,
}

fn bps(bytes: f64, d: Duration) -> f64 {
    if d == Duration::ZERO {
        0.0
    } else {
        bytes * 8.0 / d.as_secs_f64()
    }
}

/// Runs a client flow for `opts.time`, calling `each` after every
/// interval. A server that never answers (or stops answering) ends the run
/// with [`NetError::PeerSilent`] after `opts.peer_timeout`.
pub fn run_client(
    opts: &ClientOptions,
    mut each: impl FnMut(&Interval),
) -> Result<ClientReport, String> {
    let cfg = flow_config(opts.flow.clone())?;
    let proto = wire_protocol(&cfg).ok_or("protocol: no UDP wire format")?;
    let sock = UdpSocket::bind(opts.bind).map_err(|e| format!("--bind {}: {e}", opts.bind))?;
    grow_buffers(&sock, 4 << 20);
    let clock = Clock::new();
    let start = clock.now();
    let (sender, _) = cfg.instantiate(start, &mut Rng::stream(opts.seed, 0));
    let mut sender: BoxedSender = Box::new(sender);
    let ccfg = ConnConfig {
        protocol: proto,
        peer_timeout: (proto != WireProtocol::Datagram).then_some(opts.peer_timeout),
        burst: crate::conn::DEFAULT_BURST,
    };
    let mut conn = Conn::new(sock, opts.server, clock, ccfg);
    sender.set_unlimited(start);
    let end = start + opts.time;
    let interval = if opts.interval == Duration::ZERO {
        opts.time
    } else {
        opts.interval
    };
    let mut intervals = Vec::new();
    let mut slow_start_exit = None;
    let mut t0 = start;
    let mut prev = Counters::default();
    let mut result = Ok(());
    while t0 < end {
        let t1 = (t0 + interval).min(end);
        result = conn.drive(&mut *sender, t1);
        let now = clock.now();
        // The time of the event itself, not of the end of the report
        // interval it fell in (issue 34).
        for (t, e) in conn.take_timed_events() {
            if e == Event::SlowStartExit && slow_start_exit.is_none() {
                slow_start_exit = Some(t.saturating_since(start).as_secs_f64());
            }
        }
        let c = conn.counters();
        let st = sender.stats();
        let iv = Interval {
            start_s: (t0 - start).as_secs_f64(),
            end_s: (now - start).as_secs_f64(),
            send_rate_bps: bps(
                (c.sent_payload_bytes - prev.sent_payload_bytes) as f64,
                now - t0,
            ),
            x_bps: st.rate.map(|r| r.x_bps),
            x_recv_bps: st.rate.map(|r| r.x_recv_bps).filter(|x| x.is_finite()),
            loss_event_rate: st.rate.map(|r| r.p),
            rtt_s: st.srtt.map(|d| d.as_secs_f64()),
            feedback_packets: c.received - prev.received,
        };
        each(&iv);
        intervals.push(iv);
        prev = c;
        t0 = t1;
        if result.is_err() {
            break;
        }
    }
    let now = clock.now();
    sender.close(now);
    if let Err(e) = result {
        return Err(match e {
            NetError::PeerSilent { .. } => {
                format!("{e}; after {:.1} s", (now - start).as_secs_f64())
            }
            _ => e.to_string(),
        });
    }
    let c = conn.counters();
    let st = sender.stats();
    let dur = now - start;
    Ok(ClientReport {
        protocol: opts
            .flow
            .get("protocol")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string(),
        server: opts.server.to_string(),
        duration_s: dur.as_secs_f64(),
        packets_sent: c.sent,
        data_bytes_sent: c.sent_bytes,
        send_rate_bps: bps(c.sent_payload_bytes as f64, dur),
        mean_rtt_s: st.mean_rtt_s(),
        loss_event_rate: st.rate.map(|r| r.p),
        slow_start_exit_s: slow_start_exit,
        feedback_packets: c.received,
        malformed: c.malformed,
        unknown_peer: c.unknown_peer,
        send_errors: c.send_errors,
        late_wakeups: conn.wake_stats().late_1ms,
        max_wakeup_late_s: conn.wake_stats().max_late.as_secs_f64(),
        intervals,
    })
}
