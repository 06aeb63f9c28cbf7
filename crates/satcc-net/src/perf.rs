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
use satcc_sim::scenario::{parse_table, FieldError, FlowSpec, Protocol};
use serde::Serialize;

use crate::clock::{grow_buffers, Clock};
use crate::conn::{Conn, ConnConfig, Counters, NetError};
use crate::server::ReceiverFactory;

/// Protocols `perf` runs: those with a UDP wire format, in
/// [`Protocol::ALL`]'s order except that those which need `--rate` come
/// last (as `satcc perf --help` lists them).
pub fn protocols() -> Vec<Protocol> {
    let (own_rate, fixed_rate): (Vec<Protocol>, Vec<Protocol>) = Protocol::ALL
        .into_iter()
        .filter(|p| p.wire_protocol().is_some())
        .partition(|p| !p.requires_rate());
    [own_rate, fixed_rate].concat()
}

/// The names of [`protocols`], as `--protocol` takes them.
pub fn protocol_names() -> Vec<&'static str> {
    protocols().into_iter().map(Protocol::name).collect()
}

/// A flow's configuration from its scenario keys (`protocol`, `mss`, and
/// any option a `[[flows]]` table takes, e.g. `feedback`, `rate`). Errors
/// name the key.
pub fn flow_config(keys: toml::Table) -> Result<ProtocolConfig, PerfError> {
    let spec: FlowSpec = parse_table(keys).map_err(PerfError::Flow)?;
    if spec.protocol.wire_protocol().is_none() {
        return Err(PerfError::Flow(FieldError::new(
            "protocol",
            format!(
                "'{}' has no UDP wire format (perf runs {})",
                spec.protocol,
                protocol_names().join(", ")
            ),
        )));
    }
    // The checks a scenario's flow gets (ranges such as mss's).
    spec.validate().map_err(PerfError::Flow)?;
    Ok(on_real_wire(ProtocolConfig::from_spec(&spec, None), &spec))
}

/// A configuration made for the simulator, adjusted to the real wire: a
/// CBR flow's `rate` counts every byte of its datagram at IP, as a link
/// does. The simulator's CBR datagram is the payload plus the flow's
/// header bytes (28, IPv4 + UDP); the real one also carries satcc's
/// 12-byte datagram header, so the schedule is stretched to match (a
/// 9 Mb/s flow of 1000-byte payloads went out at 9.105 Mb/s at IP).
/// Other protocols' rates come from their own control loops.
pub fn on_real_wire(config: ProtocolConfig, spec: &FlowSpec) -> ProtocolConfig {
    match config {
        ProtocolConfig::Cbr(mut c) => {
            let sim_wire = u128::from(c.payload + spec.wire_header_bytes());
            let header = satcc_proto::wire::header_len(&Message::Datagram {
                seq: 0,
                len: c.payload,
            })
            .unwrap_or(0) as u128;
            let real_wire = u128::from(c.payload) + header + 28;
            if let Some(ns) = (u128::from(c.interval.as_nanos()) * real_wire).checked_div(sim_wire)
            {
                c.interval = Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
            }
            ProtocolConfig::Cbr(c)
        }
        other => other,
    }
}

/// A receiver factory for a [`crate::Server`]: the receiver a scenario
/// flow of that protocol would have, with the segment size of the peer's
/// first data packet. `feedback` (`standard` or `dynamic`) is the
/// TFRC/CCID3 receiver's feedback policy.
pub fn receiver_factory(feedback: &str) -> Result<ReceiverFactory, PerfError> {
    // Checked once here so that the factory cannot fail later.
    let mut probe = toml::Table::new();
    probe.insert("protocol".into(), Protocol::Ccid3.name().into());
    probe.insert("feedback".into(), feedback.into());
    flow_config(probe).map_err(|e| match e {
        PerfError::Flow(e) => PerfError::Feedback(e),
        e => e,
    })?;
    let feedback = feedback.to_string();
    Ok(Box::new(move |proto: WireProtocol, first: &Message| {
        // The protocol whose receiver serves a peer of each wire format
        // (no catch-all: a new format must name one), and the segment
        // size; `None` if the first datagram is not one that opens a flow.
        let (protocol, len) = match proto {
            // CCID3's receiver: the one that takes a feedback policy
            // (TFRC's is CCID3's with the standard one).
            WireProtocol::Dccp => match first {
                Message::TfrcData(d) => (Protocol::Ccid3, d.len),
                _ => return None,
            },
            WireProtocol::Tfrcp => match first {
                Message::TfrcpData(d) => (Protocol::Tfrcp, d.len),
                _ => return None,
            },
            WireProtocol::Datagram => match first {
                Message::Datagram { len, .. } => (Protocol::Cbr, *len),
                _ => return None,
            },
            // A Saratoga PUT opens with METADATA (or DATA if that was
            // lost); the receiver is the same for plain Saratoga and STFRC
            // (paper 000 changes the sender only), and learns the size
            // from METADATA.
            WireProtocol::Saratoga => match first {
                Message::SaraMetadata(_) => (Protocol::Stfrc, 1000),
                Message::SaraData(d) => (Protocol::Stfrc, d.len),
                _ => return None,
            },
        };
        let mut t = toml::Table::new();
        t.insert("protocol".into(), protocol.name().into());
        t.insert("mss".into(), i64::from(len.clamp(1, 65_000)).into());
        if protocol == Protocol::Ccid3 {
            t.insert("feedback".into(), feedback.clone().into());
        }
        if protocol.requires_rate() {
            // Any rate: the receiver does not use it.
            t.insert("rate".into(), "1Mbps".into());
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
    /// Datagrams received from the server (feedback) in the interval;
    /// kernel TCP: segments received (ACKs).
    pub feedback_packets: u64,
    /// Kernel TCP: the congestion window at the end, segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwnd: Option<u64>,
    /// Kernel TCP: segments retransmitted in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
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
    /// Datagrams from an address other than the server's (for the
    /// userspace TCP sender also RSTs whose sequence number is not the
    /// one expected, RFC 5961 §3.2).
    pub unknown_peer: u64,
    /// Sends the socket refused.
    pub send_errors: u64,
    /// The runtime's timed wake-ups that came over 1 ms late (the machine
    /// was busy: pacing suffered when these are many).
    pub late_wakeups: u64,
    /// The latest wake-up, seconds after its deadline.
    pub max_wakeup_late_s: f64,
    /// Kernel TCP: the congestion control (read back from the socket).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// Kernel TCP: bytes the server acknowledged by the end of the run
    /// (`send_rate_bps` is these over `duration_s`: the goodput).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_acked: Option<u64>,
    /// Kernel TCP: bytes acknowledged when the connection was closed
    /// (what was in flight at the end included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_acked_at_close: Option<u64>,
    /// Kernel TCP: segments retransmitted over the run (`TCP_INFO`'s
    /// total_retrans).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Kernel TCP: the smallest RTT the kernel saw, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_s: Option<f64>,
    /// Kernel TCP: the congestion window at the end, segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwnd: Option<u64>,
    /// Kernel TCP: the sender's MSS, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss: Option<u64>,
    /// satcc's TCP-Peach over real TCP (`crate::utcp`): dummy segments
    /// sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dummies_sent: Option<u64>,
    /// satcc's TCP over real TCP: dummies the receiver answered (a D-SACK
    /// of the segment a dummy copied).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dummies_acked: Option<u64>,
    /// satcc's TCP over real TCP: retransmission timeouts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    /// satcc's TCP over real TCP: D-SACKs that answered no dummy (a
    /// retransmission that was not needed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsacks_other: Option<u64>,
    /// satcc's TCP-Peach over real TCP: the receiver never answered a
    /// dummy (no D-SACK), so the sender fell back to its base variant
    /// (paper 002 §III-A).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peach_fallback: Option<bool>,
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

/// Why a `perf` flow cannot be configured or run.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// A key of the flow is wrong: `FIELD: PROBLEM`, or the problem alone
    /// when it is the flow's table as a whole.
    #[error("{}", Bare(.0))]
    Flow(FieldError),
    /// The receivers' feedback policy (`--feedback`) is wrong.
    #[error("--feedback: {}", Bare(.0))]
    Feedback(FieldError),
    /// The client socket could not be bound.
    #[error("--bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// The server stopped answering.
    #[error("{source}; after {after_s:.1} s")]
    Silent {
        /// The driver's error ([`NetError::PeerSilent`]).
        source: NetError,
        /// Seconds from the start of the flow.
        after_s: f64,
    },
    /// A socket call failed.
    #[error(transparent)]
    Net(NetError),
    /// Kernel TCP: the congestion control cannot be used.
    #[error("--cc {0}")]
    Cc(String),
    /// Kernel TCP: the server could not be reached.
    #[error("connecting to {addr} (TCP): {source} (is `satcc perf --server` running there?)")]
    Connect {
        /// The server.
        addr: SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// Kernel TCP: a socket call failed.
    #[error("{0}")]
    Io(String),
}

/// A field error as perf prints it: without a field, the message alone.
struct Bare<'a>(&'a FieldError);

impl std::fmt::Display for Bare<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.field.is_empty() {
            f.write_str(&self.0.message)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Whether a flow of wire protocol `proto` hears from its receiver: every
/// one but the constant-bit-rate datagram source.
fn expects_feedback(proto: WireProtocol) -> bool {
    proto != WireProtocol::Datagram
}

/// Runs a client flow for `opts.time`, calling `each` after every
/// interval. A server that never answers (or stops answering) ends the run
/// with [`NetError::PeerSilent`] after `opts.peer_timeout`; so does a run
/// that heard nothing at all from it by the end.
pub fn run_client(
    opts: &ClientOptions,
    mut each: impl FnMut(&Interval),
) -> Result<ClientReport, PerfError> {
    let cfg = flow_config(opts.flow.clone())?;
    let proto = cfg
        .wire_protocol()
        .ok_or_else(|| PerfError::Flow(FieldError::new("protocol", "no UDP wire format")))?;
    let sock = UdpSocket::bind(opts.bind).map_err(|source| PerfError::Bind {
        addr: opts.bind,
        source,
    })?;
    grow_buffers(&sock, 4 << 20);
    let clock = Clock::new();
    let start = clock.now();
    let (sender, _) = cfg.instantiate(start, &mut Rng::stream(opts.seed, 0));
    let mut sender: BoxedSender = Box::new(sender);
    let ccfg = ConnConfig {
        protocol: proto,
        peer_timeout: expects_feedback(proto).then_some(opts.peer_timeout),
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
            cwnd: None,
            retransmits: None,
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
            NetError::PeerSilent { .. } => PerfError::Silent {
                source: e,
                after_s: (now - start).as_secs_f64(),
            },
            _ => PerfError::Net(e),
        });
    }
    let c = conn.counters();
    // A run that ended before the peer timeout fired but heard nothing at
    // all (`--time` no longer than `--peer-timeout`, nothing listening, or
    // a link that drops everything) measured nothing: a failure, not a
    // report of zero feedback (issue 33).
    if expects_feedback(proto) && c.received == 0 {
        return Err(PerfError::Silent {
            source: NetError::PeerSilent {
                peer: opts.server,
                silent: now - start,
            },
            after_s: (now - start).as_secs_f64(),
        });
    }
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
        cc: None,
        bytes_acked: None,
        bytes_acked_at_close: None,
        retransmits: None,
        min_rtt_s: None,
        cwnd: None,
        mss: None,
        dummies_sent: None,
        dummies_acked: None,
        timeouts: None,
        dsacks_other: None,
        peach_fallback: None,
        intervals,
    })
}
