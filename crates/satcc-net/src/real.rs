//! `satcc run --real`: a scenario's flows as real endpoints, in wall-clock
//! time, over loopback UDP through in-process emulated links.
//!
//! Every flow gets two UDP sockets on 127.0.0.1 (its sender's and its
//! receiver's), each driven by a [`Conn`] in a thread of its own, exactly
//! as `satcc perf` drives them. Both send to one more socket, the
//! *fabric*, which stands for the scenario's network: it knows each
//! socket's flow and direction, looks up the flow's route through the
//! scenario's topology (the simulator's own routing), and passes each
//! datagram through the route's links one after another — each link a
//! [`LinkDir`], the emulator's link, which runs the simulator's queue and
//! error-model code — before handing it to the other end's socket.
//!
//! The report is the simulated run's: the same [`Summary`] (flows, links,
//! classes, fairness) and the same [`Series`], so `summary.json`,
//! `flows.csv`, `links.csv` and the plot of a real run sit beside those of
//! a simulated one. What differs, and why:
//! - time is the wall clock, so a run takes the scenario's `duration`
//!   and is not reproducible (the loss draws are seeded, but when each
//!   packet meets its draw depends on the OS scheduler);
//! - a datagram's size on a link is its real UDP payload (the protocol's
//!   wire header, e.g. DCCP's with its options) plus 28 bytes of IPv4 and
//!   UDP, not `mss + header_bytes`;
//! - `events` is the number of packets the fabric handled (UDP datagrams
//!   and the kernel TCP flows' segments);
//! - `loss_recovery`, files and TCP-Peach dummies do not apply: only
//!   protocols with a UDP wire format (TFRC, CCID3, TFRCP, CBR, Saratoga,
//!   STFRC) with bulk applications run as satcc's endpoints;
//! - TCP flows (Linux) run as the kernel's own TCP with the nearest
//!   congestion control, in network namespaces whose packets the fabric
//!   carries through the same links ([`kernel`]); their statistics are
//!   the kernel's `TCP_INFO`, and a packet's size on a link is its IP
//!   length.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::thread;

use satcc_proto::endpoint::{BoxedEndpoint, BoxedSender, Event, Stats};
use satcc_proto::rng::Rng;
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};
use satcc_sim::net::routing::Routes;
use satcc_sim::protocols::ProtocolConfig;
use satcc_sim::report::series::{FlowSample, LinkSample, Series};
use satcc_sim::report::{
    aggregate, flow_loss_event_rate, goodput_bps, DropCounts, FlowSummary, LinkSummary,
    PacketTotals, Summary,
};
use satcc_sim::scenario::{AppSpec, Scenario};
use satcc_sim::topology::{LinkRole, NetDef};
use satcc_sim::{FieldError, RunOutput};

use crate::clock::{grow_buffers, Clock, Socket};
use crate::conn::{Conn, ConnConfig, Counters};
use crate::emu::{DirStats, LinkDir};
use crate::emu::{Direction, DEFAULT_OVERHEAD};

#[cfg(target_os = "linux")]
mod kernel;

/// The fabric's tag in front of every datagram while it crosses the
/// emulated links: flow (u32), direction (0 forward, 1 reverse), hop.
const TAG: usize = 6;

/// Bytes after the tag that no link charges: a kernel flow's Ethernet
/// header (the frame is carried whole, the link charges its IP packet).
const ETH: usize = 14;

/// What a UDP datagram carries between the tag and its payload: the
/// uncharged Ethernet room and then 28 charged bytes, its IPv4 and UDP
/// headers (zeros), so that every link charges both kinds of packet
/// the bytes of their IP packets.
const UDP_PREFIX: usize = ETH + DEFAULT_OVERHEAD as usize;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RealOptions {
    /// Record the time series (`flows.csv`, `links.csv`, the plot).
    pub series: bool,
}

/// Why a scenario cannot run for real: the scenario field at fault (or
/// `--real`) and the problem, as the simulator reports its own.
pub type RealError = FieldError;

fn err(field: impl Into<String>, message: impl Into<String>) -> RealError {
    FieldError::new(field, message)
}

/// One flow instance as the runner sets it up.
struct FlowPlan {
    id: u32,
    name: String,
    spec_index: usize,
    config: ProtocolConfig,
    /// satcc's endpoints over UDP: their wire format.
    wire: Option<WireProtocol>,
    /// The kernel's TCP: the congestion control it runs.
    kernel_cc: Option<String>,
    /// Segment payload bytes (kernel TCP).
    mss: u32,
    start: Instant,
    stop: Instant,
    src: u32,
    dst: u32,
    /// Link indices, forward and reverse.
    path: [Vec<u32>; 2],
}

/// Checks that `sc` can run for real and lays out its flows. Warnings
/// (options the real run does not apply) go to `warn`.
fn plan(sc: &Scenario, net: &NetDef, warn: &mut Vec<String>) -> Result<Vec<FlowPlan>, RealError> {
    if !sc.snapshots.is_empty() {
        return Err(err(
            "snapshots",
            "topology changes are not emulated by --real (run it simulated)",
        ));
    }
    if sc.refwa.is_some() {
        return Err(err(
            "refwa",
            "REFWA router control is not emulated by --real (run it simulated)",
        ));
    }
    let routes = Routes::build(net, &vec![true; net.links.len()]);
    let starts = satcc_sim::sim::flow_starts(sc);
    let mut out = Vec::new();
    let mut id = 0u32;
    for (fi, spec) in sc.flows.iter().enumerate() {
        let kernel_cc = if spec.protocol.wire_protocol().is_none() {
            Some(kernel_tcp(fi, spec)?)
        } else {
            None
        };
        if !matches!(spec.app, AppSpec::Bulk) {
            return Err(err(
                format!("flows[{fi}].app"),
                "--real runs bulk flows only (files and on/off applications are simulated only)",
            ));
        }
        if kernel_cc.is_some() {
            let ignored = simulated_tcp_options(spec);
            if !ignored.is_empty() {
                warn.push(format!(
                    "flows[{fi}]: {} not applied: --real runs the kernel's TCP, with Linux's own \
                     loss recovery and growth (those options shape satcc's simulated TCP only)",
                    ignored.join(", ")
                ));
            }
        }
        if spec.host_jitter.is_some_and(|j| j.0 > Duration::ZERO) {
            warn.push(format!(
                "flows[{fi}].host_jitter is not applied: real sends have the OS's own jitter"
            ));
        }
        if spec.send_jitter.is_some() {
            warn.push(format!(
                "flows[{fi}].send_jitter is not applied: real sends have the OS's own jitter"
            ));
        }
        for _ in 0..spec.count {
            let (src, dst) = net.endpoints[id as usize];
            let fwd = routes.path(id, false);
            let rev = routes.path(id, true);
            let (Some(fwd), Some(rev)) = (fwd, rev) else {
                return Err(err(
                    format!("flows[{fi}].dst"),
                    "no path of links joins the flow's nodes",
                ));
            };
            let config = ProtocolConfig::from_spec(spec, routes.base_rtt(net, id));
            let (config, wire) = if kernel_cc.is_some() {
                (config, None)
            } else {
                let config = crate::perf::on_real_wire(config, spec);
                let wire = config
                    .wire_protocol()
                    .ok_or_else(|| err(format!("flows[{fi}].protocol"), "no UDP wire format"))?;
                (config, Some(wire))
            };
            out.push(FlowPlan {
                id,
                name: spec
                    .name
                    .clone()
                    .unwrap_or_else(|| spec.protocol.name().to_string()),
                spec_index: fi,
                config,
                wire,
                kernel_cc: kernel_cc.clone(),
                mss: spec.mss,
                start: Instant::ZERO + starts[id as usize],
                stop: spec
                    .stop
                    .map_or(Instant::ZERO + sc.duration.0, |d| Instant::ZERO + d.0),
                src,
                dst,
                path: [fwd, rev],
            });
            id += 1;
        }
    }
    if out.is_empty() {
        return Err(err("flows", "no flows to run"));
    }
    Ok(out)
}

/// The Linux congestion control TCP flow `fi` runs as the kernel's TCP,
/// or why it cannot.
#[cfg(target_os = "linux")]
fn kernel_tcp(fi: usize, spec: &satcc_sim::scenario::FlowSpec) -> Result<String, RealError> {
    let Some(cc) = kernel::linux_cc(spec) else {
        return Err(err(
            format!("flows[{fi}].protocol"),
            format!(
                "'{}' is satcc's own TCP sender, which has no wire format: --real runs TCP flows \
                 as the kernel's TCP (reno, newreno, sack, cubic, bbr, hybla, or any with linux_cc) \
                 and tfrc, ccid3, tfrcp, cbr, saratoga and stfrc as satcc's",
                spec.protocol
            ),
        ));
    };
    let named = matches!(&spec.options, satcc_sim::scenario::ProtocolOptions::Tcp(o) if o.linux_cc.is_some());
    kernel::check_cc(&cc).map_err(|m| {
        let field = if named { "linux_cc" } else { "protocol" };
        let hint = if named {
            ""
        } else {
            "; choose one with linux_cc"
        };
        err(format!("flows[{fi}].{field}"), format!("{m}{hint}"))
    })?;
    if !matches!(spec.app, AppSpec::Bulk) {
        return Err(err(
            format!("flows[{fi}].app"),
            "--real runs bulk flows only (files and on/off applications are simulated only)",
        ));
    }
    if spec.mss + kernel::HEADERS > 9000 {
        return Err(err(
            format!("flows[{fi}].mss"),
            format!(
                "{} bytes: a kernel TCP segment of that payload would not fit a 9000-byte MTU",
                spec.mss
            ),
        ));
    }
    Ok(cc)
}

/// The options of a TCP flow set away from their defaults that only the
/// simulated sender has (how it recovers, times RTTs and which variant of
/// a growth rule it runs): the kernel's TCP that `--real` runs for it
/// cannot take them, so the run says so rather than ignore them silently.
fn simulated_tcp_options(spec: &satcc_sim::scenario::FlowSpec) -> Vec<&'static str> {
    use satcc_sim::scenario::{ProtocolOptions, RttTimingSpec, SackRecoverySpec};
    let ProtocolOptions::Tcp(o) = &spec.options else {
        return Vec::new();
    };
    [
        (
            "sack_recovery",
            o.sack_recovery != SackRecoverySpec::default(),
        ),
        ("loss_detection", o.loss_detection.is_some()),
        ("prr", o.prr.is_some()),
        ("rtt_timing", o.rtt_timing != RttTimingSpec::default()),
        ("rto_ssthresh", o.rto_ssthresh.is_some()),
        ("dupack_threshold", o.dupack_threshold.is_some()),
        (
            "cubic_variant",
            o.cubic.as_ref().is_some_and(|c| c.cubic_variant.is_some()),
        ),
        (
            "hybla_variant",
            o.hybla.as_ref().is_some_and(|h| h.hybla_variant.is_some()),
        ),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect()
}

/// Without Linux's namespaces, TCP flows cannot run for real.
#[cfg(not(target_os = "linux"))]
fn kernel_tcp(fi: usize, spec: &satcc_sim::scenario::FlowSpec) -> Result<String, RealError> {
    Err(err(
        format!("flows[{fi}].protocol"),
        format!(
            "'{}' runs for real as the kernel's TCP inside Linux network namespaces, \
             which this system does not have; --real runs tfrc, ccid3, tfrcp, cbr, saratoga and stfrc here",
            spec.protocol
        ),
    ))
}

/// What one side (sender or receiver) of a flow reports.
#[derive(Default)]
struct SideReport {
    /// Stats at each sample tick.
    samples: Vec<Stats>,
    /// Delivered bytes at `measure_from` (receivers).
    at_measure: u64,
    stats: Stats,
    counters: Counters,
    slow_start_exit: Option<Instant>,
    late_wakeups: u64,
    error: Option<String>,
}

/// The instants a side stops at: sample ticks, its start and stop,
/// `measure_from`, the end.
fn breakpoints(ticks: &[Instant], extra: &[Instant], end: Instant) -> Vec<Instant> {
    let mut v: Vec<Instant> = ticks
        .iter()
        .chain(extra)
        .copied()
        .filter(|&t| t <= end)
        .collect();
    v.push(end);
    v.sort();
    v.dedup();
    v
}

#[allow(clippy::too_many_arguments)]
fn run_side(
    mut ep: SideEndpoint,
    sock: UdpSocket,
    fabric: SocketAddr,
    clock: Clock,
    wire: WireProtocol,
    ticks: Vec<Instant>,
    (start, stop, measure, end): (Instant, Instant, Instant, Instant),
) -> SideReport {
    let cfg = ConnConfig {
        protocol: wire,
        peer_timeout: None,
        burst: crate::conn::DEFAULT_BURST,
    };
    let mut conn = Conn::new(sock, fabric, clock, cfg);
    let mut rep = SideReport::default();
    let mut started = false;
    for b in breakpoints(&ticks, &[start, stop, measure], end) {
        let r = match &mut ep {
            SideEndpoint::Sender(s) => conn.drive(&mut **s, b),
            SideEndpoint::Receiver(r) => conn.drive(&mut **r, b),
        };
        if let Err(e) = r {
            rep.error = Some(e.to_string());
            break;
        }
        let now = clock.now();
        for e in conn.take_events() {
            if e == Event::SlowStartExit && rep.slow_start_exit.is_none() {
                rep.slow_start_exit = Some(now);
            }
        }
        if let SideEndpoint::Sender(s) = &mut ep {
            if b == start && !started && start < stop {
                s.set_unlimited(now);
                started = true;
                // Send at once: the first packet is due now.
                if let Err(e) = conn.drive(&mut **s, now) {
                    rep.error = Some(e.to_string());
                    break;
                }
            }
            if b == stop && started {
                s.close(now);
            }
        }
        let stats = ep.stats();
        if b == measure {
            rep.at_measure = stats.delivered_bytes;
        }
        if ticks.binary_search(&b).is_ok() {
            rep.samples.push(stats);
        }
    }
    rep.stats = ep.stats();
    rep.counters = conn.counters();
    rep.late_wakeups = conn.wake_stats().late_1ms;
    rep
}

enum SideEndpoint {
    Sender(BoxedSender),
    Receiver(BoxedEndpoint),
}

impl SideEndpoint {
    fn stats(&self) -> Stats {
        match self {
            SideEndpoint::Sender(s) => s.stats(),
            SideEndpoint::Receiver(r) => r.stats(),
        }
    }
}

/// What the fabric reports.
struct FabricReport {
    links: Vec<LinkDir>,
    link_samples: Vec<Vec<LinkSample>>,
    /// Per flow: datagrams the links dropped.
    flow_drops: Vec<u64>,
    handled: u64,
    unknown: u64,
    send_errors: u64,
    late_max: Duration,
    frames: Vec<[FrameCount; 2]>,
}

/// The fabric: one socket, the scenario's links, the flows' routes.
struct Fabric {
    sock: Socket,
    clock: Clock,
    links: Vec<LinkDir>,
    /// Source address -> (flow, direction).
    from: HashMap<SocketAddr, (u32, u8)>,
    /// Per flow: [forward path, reverse path], and the two ends'
    /// addresses [receiver, sender] (where each direction delivers).
    paths: Vec<[Vec<u32>; 2]>,
    to: Vec<[SocketAddr; 2]>,
    flow_drops: Vec<u64>,
    handled: u64,
    unknown: u64,
    send_errors: u64,
    /// Receive buffer.
    buf: Vec<u8>,
    /// Per flow: whether it is a kernel TCP flow (Ethernet frames from
    /// and to the namespaces' veth ends, not datagrams).
    kernel_flow: Vec<bool>,
    /// The kernel flows' veth ends in satcc's namespace: the senders'
    /// side and the receivers' side (`AF_PACKET` sockets).
    ends: Option<[std::os::fd::OwnedFd; 2]>,
    /// Per kernel flow and direction: frames that entered the fabric,
    /// their IP bytes, and frames delivered to the other side.
    frames: Vec<[FrameCount; 2]>,
}

/// A kernel flow's frames in one direction.
#[derive(Clone, Copy, Debug, Default)]
struct FrameCount {
    entered: u64,
    ip_bytes: u64,
    delivered: u64,
}

impl Fabric {
    /// A datagram from an endpoint enters its route's first link.
    fn enter(&mut self, now: Instant, n: usize, from: SocketAddr) {
        let Some(&(flow, dir)) = self.from.get(&from) else {
            self.unknown += 1;
            return;
        };
        self.handled += 1;
        let mut d = Vec::with_capacity(TAG + UDP_PREFIX + n);
        d.extend_from_slice(&flow.to_be_bytes());
        d.push(dir);
        d.push(0);
        d.extend_from_slice(&[0u8; UDP_PREFIX]);
        d.extend_from_slice(&self.buf[..n]);
        self.hop(now, d);
    }

    /// A frame from a kernel flow's side (`side` 0: the senders', going
    /// forward) enters its route's first link; ARP passes at once, and a
    /// packet of no flow is dropped and counted as unknown.
    #[cfg(target_os = "linux")]
    fn enter_frame(&mut self, now: Instant, side: usize, frame: &[u8]) {
        let Some(ends) = &self.ends else {
            return;
        };
        let ip = match frame.get(12..14) {
            Some([0x08, 0x00]) if frame.len() > ETH => &frame[ETH..],
            _ => {
                // ARP (or anything not IPv4): not the link's business,
                // as in `satcc shell`.
                let _ = crate::shell::send_frame(ends[1 - side].as_raw_fd(), frame);
                return;
            }
        };
        let flow = kernel::flow_of(ip, side == 0)
            .filter(|&f| self.kernel_flow.get(f as usize).copied().unwrap_or(false));
        let Some(flow) = flow else {
            self.unknown += 1;
            return;
        };
        self.handled += 1;
        let c = &mut self.frames[flow as usize][side];
        c.entered += 1;
        c.ip_bytes += ip.len() as u64;
        let mut d = Vec::with_capacity(TAG + frame.len());
        d.extend_from_slice(&flow.to_be_bytes());
        d.push(side as u8);
        d.push(0);
        d.extend_from_slice(frame);
        self.hop(now, d);
    }

    /// Puts a tagged datagram into the link of its hop, or delivers it at
    /// the end of its route.
    fn hop(&mut self, now: Instant, d: Vec<u8>) {
        let flow = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize;
        let (dir, hop) = (d[4] as usize, d[5] as usize);
        match self.paths[flow][dir].get(hop) {
            Some(&li) => {
                self.links[li as usize].arrive(now, d);
                self.count_drops(li as usize);
            }
            None if self.kernel_flow[flow] => {
                #[cfg(target_os = "linux")]
                if let Some(ends) = &self.ends {
                    // Forward frames go to the receivers' side.
                    if crate::shell::send_frame(ends[1 - dir].as_raw_fd(), &d[TAG..]).is_ok() {
                        self.frames[flow][dir].delivered += 1;
                    } else {
                        self.send_errors += 1;
                    }
                }
            }
            None => {
                let to = self.to[flow][dir];
                if self.sock.send_to(&d[TAG + UDP_PREFIX..], to).is_err() {
                    self.send_errors += 1;
                }
            }
        }
    }

    /// Books the datagrams link `li` dropped to their flows (by tag).
    fn count_drops(&mut self, li: usize) {
        for d in self.links[li].take_dropped() {
            let flow = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize;
            if let Some(c) = self.flow_drops.get_mut(flow) {
                *c += 1;
            }
        }
    }

    /// Moves every datagram that has crossed a link by `now` on.
    fn advance(&mut self, now: Instant) {
        for li in 0..self.links.len() {
            let mut out = Vec::new();
            while let Some(mut d) = self.links[li].poll(now) {
                d[5] += 1;
                out.push(d);
            }
            self.count_drops(li);
            for d in out {
                self.hop(now, d);
            }
        }
    }

    fn next_event(&self) -> Option<Instant> {
        self.links.iter().filter_map(|l| l.next_event()).min()
    }

    fn run(mut self, ticks: &[Instant], end: Instant) -> FabricReport {
        #[cfg(target_os = "linux")]
        if self.ends.is_some() {
            // `wait_all` reads the socket without blocking, after ppoll
            // on a high-resolution timer (as `Socket::recv_until`).
            if self.sock.inner().set_nonblocking(true).is_err() {
                self.send_errors += 1;
            }
            // SAFETY: PR_SET_TIMERSLACK changes only this thread's timer
            // slack: 1 µs, so that a packet due in 200 µs is not 50 µs
            // late.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
            }
        }
        let mut samples = Vec::with_capacity(ticks.len());
        let mut next_tick = 0;
        let mut late_max = Duration::ZERO;
        loop {
            let now = self.clock.now();
            self.advance(now);
            while next_tick < ticks.len() && ticks[next_tick] <= now {
                late_max = late_max.max(now.saturating_since(ticks[next_tick]));
                samples.push(
                    self.links
                        .iter()
                        .map(|l| link_sample(&l.stats()))
                        .collect::<Vec<_>>(),
                );
                next_tick += 1;
            }
            if now >= end {
                break;
            }
            let mut deadline = end;
            if let Some(t) = self.next_event() {
                deadline = deadline.min(t);
            }
            if let Some(&t) = ticks.get(next_tick) {
                deadline = deadline.min(t);
            }
            #[cfg(target_os = "linux")]
            if self.ends.is_some() {
                self.wait_all(deadline);
                continue;
            }
            let mut buf = std::mem::take(&mut self.buf);
            match self.sock.recv_until(&self.clock, &mut buf, deadline) {
                Ok(Some((n, from))) => {
                    self.buf = buf;
                    let now = self.clock.now();
                    self.advance(now);
                    self.enter(now, n, from);
                }
                Ok(None) => self.buf = buf,
                Err(_) => {
                    self.buf = buf;
                    self.send_errors += 1;
                }
            }
        }
        FabricReport {
            links: self.links,
            link_samples: samples,
            flow_drops: self.flow_drops,
            handled: self.handled,
            unknown: self.unknown,
            send_errors: self.send_errors,
            late_max,
            frames: self.frames,
        }
    }

    /// With kernel flows: waits for a datagram or a frame from either
    /// side until `deadline`, then takes in what has come (a bounded
    /// number of each before the links are served again).
    #[cfg(target_os = "linux")]
    fn wait_all(&mut self, deadline: Instant) {
        let Some(ends) = &self.ends else {
            return;
        };
        let fds = [
            self.sock.inner().as_raw_fd(),
            ends[0].as_raw_fd(),
            ends[1].as_raw_fd(),
        ];
        let wait = deadline.saturating_since(self.clock.now()).as_nanos();
        if wait > 0 && crate::shell::wait_readable_any(&fds, wait).is_err() {
            self.send_errors += 1;
        }
        for _ in 0..256 {
            let mut buf = std::mem::take(&mut self.buf);
            let r = self.sock.inner().recv_from(&mut buf);
            self.buf = buf;
            match r {
                Ok((n, from)) => {
                    let now = self.clock.now();
                    self.advance(now);
                    self.enter(now, n, from);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted
                            | std::io::ErrorKind::ConnectionRefused
                            | std::io::ErrorKind::ConnectionReset
                    ) => {}
                Err(_) => break,
            }
        }
        for side in 0..2 {
            for _ in 0..256 {
                let mut buf = std::mem::take(&mut self.buf);
                let fd = self.ends.as_ref().map(|e| e[side].as_raw_fd());
                let r = fd.map(|fd| crate::shell::recv_frame(fd, &mut buf));
                match r {
                    Some(Ok(Some(n))) => {
                        let now = self.clock.now();
                        self.advance(now);
                        let n = n.min(buf.len());
                        self.enter_frame(now, side, &buf[..n]);
                        self.buf = buf;
                    }
                    _ => {
                        self.buf = buf;
                        break;
                    }
                }
            }
        }
    }
}

fn link_sample(s: &DirStats) -> LinkSample {
    LinkSample {
        queue_pkts: s.queue_pkts as usize,
        busy_ns: s.busy_ns,
        drops: [
            s.drops(),
            s.drops_queue,
            s.drops_red,
            s.drops_error,
            0,
            0,
            0,
        ],
    }
}

/// Binds a loopback UDP socket with large buffers.
fn loopback() -> Result<UdpSocket, RealError> {
    let s = UdpSocket::bind("127.0.0.1:0")
        .map_err(|e| err("--real", format!("cannot bind a loopback UDP socket: {e}")))?;
    grow_buffers(&s, 4 << 20);
    Ok(s)
}

/// The link seed of link `i`: one stream per link, split off the run
/// seed (the emulator's links draw their losses from it).
fn link_seed(seed: u64, i: usize) -> u64 {
    let mut z = seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `sc` for real for its `duration` of wall-clock time and reports
/// as a simulated run would. `progress` is called about once a second
/// with the seconds elapsed. Warnings about options not applied are
/// returned beside the output.
pub fn run_real(
    sc: &Scenario,
    opts: &RealOptions,
    mut progress: impl FnMut(f64),
) -> Result<(RunOutput, Vec<String>), RealError> {
    let net = NetDef::build(sc);
    let mut warnings = Vec::new();
    let flows = plan(sc, &net, &mut warnings)?;
    let monitored: Vec<usize> = match &sc.record.links {
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                net.links
                    .iter()
                    .position(|l| &l.name == name)
                    .ok_or_else(|| {
                        err(
                            format!("record.links[{k}]"),
                            format!("unknown link '{name}'"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        None => (0..net.links.len())
            .filter(|&i| net.links[i].role != LinkRole::Access)
            .collect(),
    };
    let end = Instant::ZERO + sc.duration.0;
    let interval = sc.record.interval.0.max(Duration::from_millis(1));
    let ticks: Vec<Instant> = if opts.series {
        (1..)
            .map(|k| Instant::ZERO + Duration::from_nanos(interval.as_nanos() * k))
            .take_while(|&t| t <= end)
            .collect()
    } else {
        Vec::new()
    };
    let measure = Instant::ZERO + sc.record.measure_from.0;

    // Kernel TCP flows: the namespaces first, while this process has one
    // thread (a user namespace is entered only then); every socket below
    // is then in satcc's new network namespace, its loopback up.
    #[cfg(target_os = "linux")]
    let knet = match flows.iter().find(|f| f.kernel_cc.is_some()) {
        Some(first) => {
            let mtu = flows
                .iter()
                .filter(|f| f.kernel_cc.is_some())
                .map(|f| f.mss + kernel::HEADERS)
                .max()
                .unwrap_or(0)
                .max(crate::shell::DEFAULT_MTU);
            if flows.len() as u32 > kernel::MAX_FLOWS {
                return Err(err(
                    "flows",
                    format!("at most {} flows with kernel TCP", kernel::MAX_FLOWS),
                ));
            }
            let spec = &sc.flows[first.spec_index];
            Some(kernel::KernelNet::create(mtu).map_err(|e| {
                err(
                    format!("flows[{}].protocol", first.spec_index),
                    format!(
                        "'{}' runs for real as the kernel's TCP inside network namespaces, which are not available here: {e}",
                        spec.protocol
                    ),
                )
            })?)
        }
        None => None,
    };
    // Sockets first, so the fabric knows every address before anything
    // is sent.
    let fabric_sock = loopback()?;
    let fabric_addr = fabric_sock
        .local_addr()
        .map_err(|e| err("--real", e.to_string()))?;
    let mut ends = Vec::new();
    let mut from = HashMap::new();
    let mut to = Vec::new();
    #[cfg(target_os = "linux")]
    let mut listeners = HashMap::new();
    for f in &flows {
        #[cfg(target_os = "linux")]
        if let (Some(k), Some(_)) = (&knet, &f.kernel_cc) {
            let l = k.listener(f.id, f.mss).map_err(|e| {
                err(
                    format!("flows[{}]", f.spec_index),
                    format!("cannot listen for the kernel TCP flow {}: {e}", f.id),
                )
            })?;
            listeners.insert(f.id, l);
        }
        let (s, r) = (loopback()?, loopback()?);
        let (sa, ra) = (
            s.local_addr().map_err(|e| err("--real", e.to_string()))?,
            r.local_addr().map_err(|e| err("--real", e.to_string()))?,
        );
        from.insert(sa, (f.id, 0u8));
        from.insert(ra, (f.id, 1u8));
        to.push([ra, sa]);
        ends.push((s, r));
    }
    let links: Vec<LinkDir> = net
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut d = LinkDir::new(
                &Direction {
                    rate_bps: l.rate_bps,
                    delay: l.delay,
                    queue: l.queue.clone(),
                    error: l.error.clone(),
                    shaper: l.shaper.clone(),
                },
                link_seed(sc.seed, i),
                // The tag (and the Ethernet room after it) rides along
                // inside the fabric; the link counts each packet's IP
                // bytes (a datagram's real size plus IPv4 and UDP
                // headers, a kernel TCP packet as it is).
                0,
            );
            d.set_uncharged((TAG + ETH) as u32);
            // Drops are booked to flows by the tag of the dropped datagram.
            d.keep_dropped();
            d
        })
        .collect();
    let clock = Clock::new();
    let fabric = Fabric {
        sock: Socket::new(fabric_sock),
        clock,
        links,
        from,
        paths: flows.iter().map(|f| f.path.clone()).collect(),
        to,
        flow_drops: vec![0; flows.len()],
        handled: 0,
        unknown: 0,
        send_errors: 0,
        buf: vec![0u8; 65_536],
        kernel_flow: flows.iter().map(|f| f.kernel_cc.is_some()).collect(),
        #[cfg(target_os = "linux")]
        ends: match &knet {
            Some(k) => Some([
                k.senders
                    .try_clone()
                    .map_err(|e| err("--real", e.to_string()))?,
                k.receivers
                    .try_clone()
                    .map_err(|e| err("--real", e.to_string()))?,
            ]),
            None => None,
        },
        #[cfg(not(target_os = "linux"))]
        ends: None,
        frames: vec![[FrameCount::default(); 2]; flows.len()],
    };
    let fabric_ticks = ticks.clone();
    // The fabric runs a little past the end so datagrams sent at the end
    // are not counted as in flight forever; endpoints stop at `end`.
    let fabric_thread = thread::spawn(move || fabric.run(&fabric_ticks, end));
    let mut sides = Vec::new();
    for (f, (s, r)) in flows.iter().zip(ends) {
        let times = (f.start, f.stop, measure, end);
        #[cfg(target_os = "linux")]
        if let (Some(k), Some(cc)) = (&knet, &f.kernel_cc) {
            let ns =
                k.ns.side_netns(None)
                    .map_err(|e| err("--real", e.to_string()))?;
            let l = listeners
                .remove(&f.id)
                .ok_or_else(|| err("--real", "a kernel flow without its listener"))?;
            let to = SocketAddr::from((crate::shell::PEER_ADDR, kernel::PORT_BASE + f.id as u16));
            let (cc, t1, t2) = (cc.clone(), ticks.clone(), ticks.clone());
            let st = thread::spawn(move || kernel::run_sender(ns, to, cc, clock, t1, times));
            let rt = thread::spawn(move || kernel::run_receiver(l, clock, t2, times));
            sides.push((st, rt));
            drop((s, r));
            continue;
        }
        let Some(w) = f.wire else {
            return Err(err(
                format!("flows[{}].protocol", f.spec_index),
                "no UDP wire format",
            ));
        };
        let mut rng = Rng::stream(sc.seed, 1_000 + u64::from(f.id));
        let (tx, rx) = f.config.instantiate(Instant::ZERO, &mut rng);
        let (t1, t2) = (ticks.clone(), ticks.clone());
        let st = thread::spawn(move || {
            run_side(
                SideEndpoint::Sender(Box::new(tx)),
                s,
                fabric_addr,
                clock,
                w,
                t1,
                times,
            )
        });
        let rt = thread::spawn(move || {
            run_side(
                SideEndpoint::Receiver(Box::new(rx)),
                r,
                fabric_addr,
                clock,
                w,
                t2,
                times,
            )
        });
        sides.push((st, rt));
    }
    // Progress while the threads run.
    let wall = std::time::Instant::now();
    while clock.now() < end {
        let step = Duration::from_secs(1).min(end.saturating_since(clock.now()));
        clock.sleep_until(clock.now() + step);
        progress(clock.now().as_secs_f64().min(end.as_secs_f64()));
    }
    let mut results = Vec::new();
    for (st, rt) in sides {
        let s = st
            .join()
            .map_err(|_| err("--real", "a sender thread panicked"))?;
        let r = rt
            .join()
            .map_err(|_| err("--real", "a receiver thread panicked"))?;
        results.push((s, r));
    }
    let mut fab = fabric_thread
        .join()
        .map_err(|_| err("--real", "the fabric thread panicked"))?;
    let wall_s = wall.elapsed().as_secs_f64();
    for (f, (s, r)) in flows.iter().zip(&results) {
        for (side, e) in [("sender", &s.error), ("receiver", &r.error)] {
            if let Some(e) = e {
                warnings.push(format!("flow {} ({}) {side}: {e}", f.id, f.name));
            }
        }
        let late = s.late_wakeups + r.late_wakeups;
        if late > 0 {
            warnings.push(format!(
                "flow {} ({}): {late} timed wake-ups came over 1 ms late (a busy machine: pacing may have suffered)",
                f.id, f.name
            ));
        }
    }
    if fab.late_max > Duration::from_millis(5) {
        warnings.push(format!(
            "the emulated links ran up to {:.1} ms late (a busy machine)",
            fab.late_max.as_secs_f64() * 1e3
        ));
    }
    if fab.unknown > 0 || fab.send_errors > 0 {
        warnings.push(format!(
            "the links ignored {} datagrams from unknown addresses; {} sends failed",
            fab.unknown, fab.send_errors
        ));
    }
    let summary = summarise(
        sc, &net, &flows, &results, &mut fab, &monitored, end, wall_s,
    );
    let series = opts.series.then(|| {
        let mut series = Series::new(
            flows.iter().map(|f| {
                (
                    format!("{}#{}", f.name, f.id),
                    sc.flows[f.spec_index].protocol.name().to_string(),
                )
            }),
            monitored.iter().map(|&li| net.links[li].name.clone()),
        );
        let n = ticks.len().min(fab.link_samples.len()).min(
            results
                .iter()
                .map(|(s, r)| s.samples.len().min(r.samples.len()))
                .min()
                .unwrap_or(0),
        );
        for (k, &t) in ticks.iter().enumerate().take(n) {
            series.sample(
                t,
                results.iter().map(|(s, r)| FlowSample {
                    delivered_bytes: r.samples[k].delivered_bytes,
                    sender: s.samples[k],
                    feedback_sent: r.samples[k].feedback_sent,
                }),
                monitored.iter().map(|&li| fab.link_samples[k][li]),
            );
        }
        series
    });
    Ok((
        RunOutput {
            summary,
            series,
            capture_errors: Vec::new(),
        },
        warnings,
    ))
}

#[allow(clippy::too_many_arguments)]
fn summarise(
    sc: &Scenario,
    net: &NetDef,
    flows: &[FlowPlan],
    results: &[(SideReport, SideReport)],
    fab: &mut FabricReport,
    monitored: &[usize],
    end: Instant,
    wall_s: f64,
) -> Summary {
    let measure = Instant::ZERO + sc.record.measure_from.0;
    let mut out = Vec::new();
    for (f, (s, r)) in flows.iter().zip(results) {
        let spec = &sc.flows[f.spec_index];
        let delivered = r.stats.delivered_bytes;
        let before = if f.start < measure { r.at_measure } else { 0 };
        let overhead = u64::from(DEFAULT_OVERHEAD);
        // A kernel flow's packets are what the fabric took from its
        // sides (SYN, data, FIN and ACKs alike), at their IP sizes.
        let fr = &fab.frames[f.id as usize];
        let kernel = f.kernel_cc.is_some();
        let (sent, data_bytes, ack_bytes) = if kernel {
            (fr[0].entered, fr[0].ip_bytes, fr[1].ip_bytes)
        } else {
            (
                s.counters.sent,
                s.counters.sent_bytes + overhead * s.counters.sent,
                r.counters.sent_bytes + overhead * r.counters.sent,
            )
        };
        out.push(FlowSummary {
            id: f.id,
            name: f.name.clone(),
            protocol: spec.protocol,
            src: net.nodes[f.src as usize].clone(),
            dst: net.nodes[f.dst as usize].clone(),
            delivered_bytes: delivered,
            goodput_bps: goodput_bps(delivered, before, (f.start, f.stop), measure, end),
            share: 0.0,
            drops: fab.flow_drops[f.id as usize],
            packets_sent: sent,
            retransmits: s.stats.retransmits,
            timeouts: s.stats.timeouts,
            mean_rtt_s: s.stats.mean_rtt_s(),
            files_completed: 0,
            mean_file_time_s: None,
            feedback_packets: r.stats.feedback_sent,
            feedback_bytes: r
                .stats
                .feedback_sent
                .map(|_| r.counters.sent_bytes + overhead * r.counters.sent),
            loss_event_rate: flow_loss_event_rate(
                spec.protocol,
                r.stats.loss_event_rate,
                s.stats.rate.map(|x| x.p),
            ),
            slow_start_exit_s: s.slow_start_exit.map(|t| t.as_secs_f64()),
            loss_recovery: None,
            data_bytes_sent: data_bytes,
            ack_bytes_sent: ack_bytes,
            stale_packets: 0,
            dummy: None,
        });
    }
    let measured: Vec<bool> = flows
        .iter()
        .map(|f| sc.flows[f.spec_index].measured)
        .collect();
    let agg = aggregate(&mut out, &measured);
    let end_ns = end.as_nanos().max(1);
    let mut totals = PacketTotals::default();
    let mut reasons = DropCounts::default();
    for l in &fab.links {
        let st = l.stats();
        reasons.queue_full += st.drops_queue;
        reasons.red_early += st.drops_red;
        reasons.link_error += st.drops_error;
    }
    totals.sent = results
        .iter()
        .map(|(s, r)| s.counters.sent + r.counters.sent)
        .chain(fab.frames.iter().map(|f| f[0].entered + f[1].entered))
        .sum();
    totals.delivered = results
        .iter()
        .map(|(s, r)| s.counters.received + r.counters.received)
        .chain(fab.frames.iter().map(|f| f[0].delivered + f[1].delivered))
        .sum();
    totals.dropped = reasons.queue_full + reasons.red_early + reasons.link_error;
    totals.in_flight = totals
        .sent
        .saturating_sub(totals.delivered + totals.dropped);
    totals.drop_reasons = reasons;
    let links = monitored
        .iter()
        .map(|&li| {
            let mean_queue = fab.links[li].mean_queue_pkts(end);
            let st = fab.links[li].stats();
            let drops = st.drops();
            LinkSummary {
                name: net.links[li].name.clone(),
                rate_bps: net.links[li].rate_bps,
                utilization: (st.busy_ns as f64 / end_ns as f64).min(1.0),
                arrivals: st.arrived,
                drops,
                drops_queue: st.drops_queue,
                drops_red: st.drops_red,
                drops_error: st.drops_error,
                drops_ttl: 0,
                drops_hook: 0,
                drops_link_down: 0,
                mean_queue_pkts: mean_queue,
                loss: if st.arrived > 0 {
                    drops as f64 / st.arrived as f64
                } else {
                    0.0
                },
            }
        })
        .collect();
    Summary {
        scenario: sc.name.clone().unwrap_or_else(|| "scenario".into()),
        seed: sc.seed,
        duration_s: sc.duration.0.as_secs_f64(),
        events: fab.handled,
        wall_s: Some(wall_s),
        flows: out,
        classes: agg.classes,
        jain: agg.jain,
        normalized_tcp_throughput: agg.normalized_tcp_throughput,
        friendliness: agg.friendliness,
        links,
        packets: totals,
        refwa: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel TCP flow's simulator-only options are named (and so
    /// reported as not applied); defaults name nothing.
    #[test]
    fn simulated_tcp_options_are_named() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/modern-tcp-geo.toml"
        ))
        .unwrap();
        let names = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let sc = Scenario::from_toml_str(&text, "t", &sets).unwrap();
            simulated_tcp_options(&sc.flows[0])
        };
        assert!(names(&[]).is_empty());
        assert_eq!(
            names(&[
                "flows.0.protocol=cubic",
                "flows.0.sack_recovery=ns2-linux",
                "flows.0.cubic_variant=linux-2.6.22",
            ]),
            vec!["sack_recovery", "cubic_variant"]
        );
        assert_eq!(
            names(&["flows.0.protocol=hybla", "flows.0.prr=true"]),
            vec!["prr"]
        );
    }
}
