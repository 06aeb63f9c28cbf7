//! The relay between the two sides: per direction a thread reads
//! Ethernet frames from one veth end's `AF_PACKET` socket, passes every
//! IP packet through the direction's [`LinkDir`] and writes it to the
//! other veth end when the link delivers it, and keeps per-flow counts.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use satcc_proto::refwa::RefwaConfig;
use satcc_proto::refwa_tcp::{TcpRefwa, Verdict};
use satcc_proto::{Duration, Instant};
use satcc_sim::partial::Partial;
use satcc_sim::report::pcap::PcapWriter;

use super::sys;
use crate::clock::Clock;
use crate::emu::{DirStats, LinkConfig, LinkDir, Params};

/// Bytes of an Ethernet header: on the veth devices only, not charged to
/// the emulated link.
const ETH_HEADER: usize = 14;
/// Flows (5-tuples) counted one by one per direction; packets of flows
/// beyond go to [`DirReport::other`]. A port scan or a flood of spoofed
/// sources would otherwise grow the table (and the copy of it published
/// every [`PUBLISH`]) without bound.
pub const MAX_FLOWS: usize = 8192;
/// Bytes a peer's delay line holds at most: it has no rate, so a peer
/// sending faster than the link would otherwise fill memory at its rate
/// times its delay before the link's own queue limit is reached. Frames
/// beyond are dropped and counted ([`DirReport::delay_dropped`]).
const MAX_DELAY_BYTES: usize = 64 << 20;

/// A flow as the per-flow summary names it: protocol and both ends
/// (ports 0 for protocols without them, ICMP included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// IP protocol number (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6, ...).
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination port.
    pub dport: u16,
}

impl FlowKey {
    /// The key of an IP packet (without its Ethernet header), or `None`
    /// for something that is not a well-formed IPv4 or IPv6 header.
    pub fn of_ip(p: &[u8]) -> Option<FlowKey> {
        let version = p.first()? >> 4;
        let (proto, src, dst, l4): (u8, IpAddr, IpAddr, &[u8]) = match version {
            4 => {
                let ihl = usize::from(p.first()? & 0x0f) * 4;
                if ihl < 20 || p.len() < ihl {
                    return None;
                }
                let a: [u8; 4] = p[12..16].try_into().ok()?;
                let b: [u8; 4] = p[16..20].try_into().ok()?;
                // Only the first fragment carries the ports.
                let frag_off = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
                let l4 = if frag_off == 0 { &p[ihl..] } else { &[][..] };
                (p[9], a.into(), b.into(), l4)
            }
            6 => {
                if p.len() < 40 {
                    return None;
                }
                let a: [u8; 16] = p[8..24].try_into().ok()?;
                let b: [u8; 16] = p[24..40].try_into().ok()?;
                (p[6], a.into(), b.into(), &p[40..])
            }
            _ => return None,
        };
        let (sport, dport) = match proto {
            6 | 17 | 33 | 132 if l4.len() >= 4 => (
                u16::from_be_bytes([l4[0], l4[1]]),
                u16::from_be_bytes([l4[2], l4[3]]),
            ),
            _ => (0, 0),
        };
        Some(FlowKey {
            proto,
            src,
            sport,
            dst,
            dport,
        })
    }

    /// The protocol's name (`tcp`, `udp`, `icmp`, ...) or its number.
    pub fn proto_name(&self) -> String {
        match self.proto {
            1 => "icmp".into(),
            6 => "tcp".into(),
            17 => "udp".into(),
            33 => "dccp".into(),
            58 => "icmpv6".into(),
            132 => "sctp".into(),
            n => format!("ip{n}"),
        }
    }
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let end = |ip: IpAddr, port: u16| match (ip, port) {
            (_, 0) => ip.to_string(),
            (IpAddr::V4(a), p) => format!("{a}:{p}"),
            (IpAddr::V6(a), p) => format!("[{a}]:{p}"),
        };
        write!(
            f,
            "{} {} > {}",
            self.proto_name(),
            end(self.src, self.sport),
            end(self.dst, self.dport)
        )
    }
}

/// One flow's packets on one direction of the link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCount {
    /// Packets that arrived at the link.
    pub arrived: u64,
    /// Their IP bytes.
    pub arrived_bytes: u64,
    /// Packets delivered at the far end.
    pub delivered: u64,
    /// Their IP bytes.
    pub delivered_bytes: u64,
    /// Packets dropped (queue, RED or the error model).
    pub dropped: u64,
}

/// What one direction of the bridge has done: the link's counters, its
/// flows, and the frames that bypassed the link.
#[derive(Clone, Debug, Default)]
pub struct DirReport {
    /// The link direction's counters (bytes are IP bytes).
    pub link: DirStats,
    /// Per flow.
    pub flows: HashMap<FlowKey, FlowCount>,
    /// ARP frames: passed at once, not through the link.
    pub not_ip: u64,
    /// Frames neither IP nor ARP (802.1Q-tagged, LLDP, ...): dropped, so
    /// that nothing crosses the shell outside the emulated link (a
    /// priority-tagged VLAN 0 frame carries IP that the peer's kernel
    /// would take as untagged).
    pub other_dropped: u64,
    /// Frames larger than the MTU (an offload left on): carried as one
    /// packet, which the real network would not do.
    pub oversize: u64,
    /// ACKs entering this direction whose window REFWA lowered
    /// (`--refwa`).
    pub refwa_rewritten: u64,
    /// Packets of flows beyond the first [`MAX_FLOWS`], together.
    pub other: FlowCount,
    /// Frames a peer's delay line dropped for want of room
    /// (`MAX_DELAY_BYTES`, 64 MiB).
    pub delay_dropped: u64,
}

impl DirReport {
    /// The counters of flow `k`: its own while the table has room (or
    /// already holds it), else the shared [`DirReport::other`].
    pub fn flow(&mut self, k: FlowKey) -> &mut FlowCount {
        if self.flows.len() < MAX_FLOWS || self.flows.contains_key(&k) {
            self.flows.entry(k).or_default()
        } else {
            &mut self.other
        }
    }
}

/// The capture of delivered packets: the writer and the file it is
/// written through (`.NAME.partial` until [`Bridge::finish`]).
struct Capture {
    w: Option<PcapWriter<std::io::BufWriter<std::fs::File>>>,
    /// After `w`, so the file is closed before the partial is removed.
    file: Option<Partial>,
    error: Option<String>,
}

impl Capture {
    fn create(path: &std::path::Path) -> std::io::Result<Capture> {
        let file = Partial::beside(path);
        let w = PcapWriter::new(std::io::BufWriter::new(file.create()?))?;
        Ok(Capture {
            w: Some(w),
            file: Some(file),
            error: None,
        })
    }

    fn write(&mut self, now: Instant, ip: &[u8]) {
        if let Some(w) = self.w.as_mut() {
            if let Err(e) = w.write_ip(now.as_nanos(), ip) {
                self.error = Some(e.to_string());
                self.w = None;
            }
        }
    }

    /// Flushes and renames into place; a failed capture is removed.
    fn finish(&mut self) -> Result<(), String> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let path = file.path().display().to_string();
        let Some(w) = self.w.take() else {
            file.abandon();
            return Err(format!(
                "{path}: {}",
                self.error.take().unwrap_or_else(|| "not written".into())
            ));
        };
        w.into_inner()
            .map_err(|e| e.to_string())
            .and_then(|b| b.into_inner().map_err(|e| e.to_string()))
            .and_then(|f| f.sync_all().map_err(|e| e.to_string()))
            .and_then(|()| file.commit().map_err(|e| e.to_string()))
            .map_err(|e| format!("{path}: {e}"))
    }
}

#[derive(Default)]
struct Shared {
    dirs: [DirReport; 2],
    error: Option<String>,
}

/// The running relay between the shell's side (forward: from the shell
/// to the peer) and the peer's side (reverse). Stops when dropped.
pub struct Bridge {
    clock: Clock,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    threads: Vec<JoinHandle<()>>,
    capture: Option<Arc<Mutex<Capture>>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge").finish_non_exhaustive()
    }
}

/// Longest a direction thread sleeps before it checks the stop flag.
const TICK: Duration = Duration::from_millis(50);

/// How often a direction thread publishes its counters.
const PUBLISH: Duration = Duration::from_millis(20);

struct Dir {
    index: usize,
    /// Where frames come from: the shell's end (forward) or every peer's
    /// (reverse), each with the extra delay frames wait before the link
    /// (reverse: the peer's `--peer-delay`; forward: none).
    inputs: Vec<(OwnedFd, DelayLine)>,
    /// Where delivered frames go: every peer's end (forward), each after
    /// its extra delay, chosen by the packet's destination address, or
    /// the shell's (reverse).
    outputs: Vec<(OwnedFd, DelayLine, Option<Ipv4Addr>)>,
    link: LinkDir,
    cfg: LinkConfig,
    mtu: usize,
    clock: Clock,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    report: DirReport,
    capture: Option<Arc<Mutex<Capture>>>,
    /// The REFWA controller both directions share (`--refwa`): packets
    /// cross it as they enter the link, the router's position.
    refwa: Option<Arc<Mutex<TcpRefwa>>>,
    /// Each direction's queue length, for the other's REFWA calls.
    queues: Arc<[AtomicU64; 2]>,
}

/// A peer's extra one-way delay (`satcc shell --peer-delay`): a pure
/// delay, no rate and no queue limit, between the link and the peer.
/// The delay is constant, so frames leave in the order they entered.
#[derive(Debug, Default)]
struct DelayLine {
    delay: Duration,
    frames: VecDeque<(Instant, Vec<u8>)>,
    /// Bytes held.
    bytes: usize,
    /// Frames dropped because `MAX_DELAY_BYTES` were held.
    dropped: u64,
}

impl DelayLine {
    fn new(delay: Duration) -> DelayLine {
        DelayLine {
            delay,
            ..DelayLine::default()
        }
    }

    /// Takes `frame` unless the line has no delay (then it is handed
    /// back, to go on at once).
    fn push(&mut self, now: Instant, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.delay == Duration::ZERO {
            return Some(frame);
        }
        if self.bytes + frame.len() > MAX_DELAY_BYTES {
            self.dropped += 1;
            return None;
        }
        self.bytes += frame.len();
        self.frames.push_back((now + self.delay, frame));
        None
    }

    fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.frames.front().is_some_and(|(t, _)| *t <= now) {
            let f = self.frames.pop_front().map(|(_, f)| f)?;
            self.bytes -= f.len();
            return Some(f);
        }
        None
    }

    fn next_due(&self) -> Option<Instant> {
        self.frames.front().map(|(t, _)| *t)
    }
}

/// One peer of the shell: satcc's end of its veth pair, its address and
/// its extra one-way delay (both directions).
#[derive(Debug)]
pub struct PeerEnd {
    /// The `AF_PACKET` socket on satcc's end of the peer's veth pair.
    pub end: OwnedFd,
    /// The peer's address (packets from the shell to it go to this end).
    pub addr: Ipv4Addr,
    /// Extra one-way delay between the link and this peer.
    pub delay: Duration,
}

fn ip_of_frame(frame: &[u8]) -> Option<&[u8]> {
    if frame.len() <= ETH_HEADER {
        return None;
    }
    match u16::from_be_bytes([frame[12], frame[13]]) {
        0x0800 | 0x86dd => Some(&frame[ETH_HEADER..]),
        _ => None,
    }
}

/// Whether an Ethernet frame is ARP (EtherType 0x0806), the one kind
/// of frame the bridge passes outside the link.
fn is_arp(frame: &[u8]) -> bool {
    frame.len() > ETH_HEADER && u16::from_be_bytes([frame[12], frame[13]]) == 0x0806
}

/// RFC 8622 §4: the Lower-Effort per-hop behaviour's DSCP.
pub const DSCP_LE: u8 = 1;

/// Whether an IP packet is of the lower-effort class: DSCP LE (RFC 8622)
/// in IPv4's TOS or IPv6's Traffic Class. TCP-Peach's real dummies carry
/// it (`crate::utcp`); a `priority` queue serves the class last.
pub fn is_lower_effort(ip: &[u8]) -> bool {
    let dscp = match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 2 => ip[1] >> 2,
        Some(6) if ip.len() >= 2 => ((ip[0] & 0x0f) << 2) | (ip[1] >> 6),
        _ => return false,
    };
    dscp == DSCP_LE
}

impl Dir {
    fn apply_schedule(&mut self, now: Instant) -> Option<Instant> {
        if self.cfg.schedule.steps.is_empty() {
            return None;
        }
        let since = Duration(now.as_nanos());
        let p: Params = self.cfg.schedule.params_at(self.cfg.base(), since);
        self.link.set_rate(if self.index == 0 {
            p.rate_bps
        } else {
            p.reverse_rate_bps
        });
        self.link.set_delay(p.delay);
        self.cfg.schedule.next_change(since).map(|d| now + d)
    }

    fn count_drops(&mut self) {
        for d in self.link.take_dropped() {
            if let Some(k) = ip_of_frame(&d).and_then(FlowKey::of_ip) {
                self.report.flow(k).dropped += 1;
            }
        }
    }

    fn publish(&mut self) {
        self.report.link = self.link.stats();
        self.report.delay_dropped = self.inputs.iter().map(|i| i.1.dropped).sum::<u64>()
            + self.outputs.iter().map(|o| o.1.dropped).sum::<u64>();
        let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        s.dirs[self.index].clone_from(&self.report);
    }

    fn run(mut self) {
        // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and changes
        // only this thread's timer slack: 1 µs instead of 50, so that
        // a packet due in 200 µs is not delivered 50 µs late (as
        // `crate::Socket` does for the UDP relay).
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
        }
        if let Err(e) = self.run_inner() {
            let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
            s.error = Some(format!(
                "{} direction: {e}",
                ["forward", "reverse"][self.index]
            ));
            self.stop.store(true, Ordering::Relaxed);
        }
        self.publish();
    }

    /// Where a delivered frame goes: the output whose address is the
    /// packet's destination (forward, several peers), else the first.
    fn route(&self, frame: &[u8]) -> usize {
        if self.outputs.len() > 1 {
            if let Some(IpAddr::V4(dst)) =
                ip_of_frame(frame).and_then(FlowKey::of_ip).map(|k| k.dst)
            {
                if let Some(o) = self.outputs.iter().position(|(_, _, a)| *a == Some(dst)) {
                    return o;
                }
            }
        }
        0
    }

    fn send(&mut self, o: usize, frame: &[u8]) {
        if sys::send_frame(self.outputs[o].0.as_raw_fd(), frame).is_err() {
            self.link.count_send_error();
        }
    }

    /// An IP frame enters the link (after its peer's extra delay, if
    /// any): counted for its flow, seen by REFWA, queued.
    fn enter_link(&mut self, now: Instant, mut frame: Vec<u8>) {
        if let Some(k) = ip_of_frame(&frame).and_then(FlowKey::of_ip) {
            let c = self.report.flow(k);
            c.arrived += 1;
            c.arrived_bytes += (frame.len() - ETH_HEADER) as u64;
        }
        if let Some(r) = &self.refwa {
            let own = self.link.stats().queue_pkts;
            let other = self.queues[1 - self.index].load(Ordering::Relaxed);
            let v = r.lock().unwrap_or_else(|p| p.into_inner()).on_packet(
                now,
                &mut frame[ETH_HEADER..],
                own,
                other,
            );
            if let Verdict::Rewritten { .. } = v {
                self.report.refwa_rewritten += 1;
            }
        }
        // RFC 8622 Lower-Effort packets (Peach's dummies) go to the low
        // class, served after everything else.
        let low = is_lower_effort(&frame[ETH_HEADER..]);
        self.link.arrive_class(now, frame, low);
        self.queues[self.index].store(self.link.stats().queue_pkts, Ordering::Relaxed);
    }

    fn run_inner(&mut self) -> std::io::Result<()> {
        // Frames are at most MTU + header; a bigger buffer lets an
        // oversized one be seen (and counted) rather than cut.
        let mut buf = vec![0u8; 65_536 + ETH_HEADER];
        let mut published = Instant::ZERO;
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            let change = self.apply_schedule(now);
            for k in 0..self.inputs.len() {
                while let Some(f) = self.inputs[k].1.pop_due(now) {
                    self.enter_link(now, f);
                }
            }
            while let Some(frame) = self.link.poll(now) {
                if let Some(ip) = ip_of_frame(&frame) {
                    if let Some(k) = FlowKey::of_ip(ip) {
                        let c = self.report.flow(k);
                        c.delivered += 1;
                        c.delivered_bytes += ip.len() as u64;
                    }
                    if let Some(c) = &self.capture {
                        c.lock().unwrap_or_else(|p| p.into_inner()).write(now, ip);
                    }
                }
                let o = self.route(&frame);
                if let Some(f) = self.outputs[o].1.push(now, frame) {
                    self.send(o, &f);
                }
            }
            for o in 0..self.outputs.len() {
                while let Some(f) = self.outputs[o].1.pop_due(now) {
                    self.send(o, &f);
                }
            }
            self.count_drops();
            if now.saturating_since(published) >= PUBLISH {
                self.publish();
                published = now;
            }
            let mut deadline = now + TICK;
            let lines = self.inputs.iter().map(|(_, l)| l.next_due());
            let lines = lines.chain(self.outputs.iter().map(|(_, l, _)| l.next_due()));
            for t in lines.chain([self.link.next_event(), change]).flatten() {
                deadline = deadline.min(t);
            }
            let wait = deadline.saturating_since(self.clock.now()).as_nanos();
            if wait > 0 {
                let fds: Vec<_> = self.inputs.iter().map(|(f, _)| f.as_raw_fd()).collect();
                sys::wait_readable_any(&fds, wait)?;
            }
            for k in 0..self.inputs.len() {
                // Bounded: at most this many frames before the link is
                // served again.
                for _ in 0..256 {
                    let Some(n) = sys::recv_frame(self.inputs[k].0.as_raw_fd(), &mut buf)? else {
                        break;
                    };
                    let n = n.min(buf.len());
                    let frame = &buf[..n];
                    if n > self.mtu + ETH_HEADER {
                        self.report.oversize += 1;
                    }
                    let now = self.clock.now();
                    if ip_of_frame(frame).is_some() {
                        if let Some(f) = self.inputs[k].1.push(now, frame.to_vec()) {
                            self.enter_link(now, f);
                        }
                    } else if !is_arp(frame) {
                        self.report.other_dropped += 1;
                    } else {
                        // ARP: not carried by the emulated link (an IP
                        // link has none), so address resolution costs no
                        // satellite round trip; to every peer (a peer
                        // ignores what is not for it).
                        self.report.not_ip += 1;
                        for o in 0..self.outputs.len() {
                            let _ = sys::send_frame(self.outputs[o].0.as_raw_fd(), frame);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Bridge {
    /// Starts relaying between `shell_end` (frames from the shell's side)
    /// and `peer_end` (the peer's side) through `link`: its forward
    /// direction carries the shell's packets, its reverse direction the
    /// peer's. `seed` seeds the error models and RED as `satcc emulate`'s
    /// does. With `pcap`, every packet the link delivers, both
    /// directions, is captured whole (raw IP, timestamps from the start)
    /// to that file, which appears under its name at [`Bridge::finish`].
    pub fn start(
        shell_end: OwnedFd,
        peer_end: OwnedFd,
        link: &LinkConfig,
        seed: u64,
        mtu: u32,
        pcap: Option<&std::path::Path>,
        refwa: Option<RefwaConfig>,
    ) -> std::io::Result<Bridge> {
        let peer = PeerEnd {
            end: peer_end,
            addr: super::PEER_ADDR,
            delay: Duration::ZERO,
        };
        Bridge::start_peers(shell_end, vec![peer], link, seed, mtu, pcap, refwa)
    }

    /// As [`Bridge::start`], with several peers on the far side of the
    /// link, each behind its own extra one-way delay (`satcc shell
    /// --peer-delay`): the shell's packets cross the link and then their
    /// destination peer's delay; a peer's packets cross its delay and
    /// then the link. The link is the bottleneck all of them share.
    pub fn start_peers(
        shell_end: OwnedFd,
        peers: Vec<PeerEnd>,
        link: &LinkConfig,
        seed: u64,
        mtu: u32,
        pcap: Option<&std::path::Path>,
        refwa: Option<RefwaConfig>,
    ) -> std::io::Result<Bridge> {
        if peers.is_empty() {
            return Err(std::io::Error::other("no peer"));
        }
        let queues: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let refwa = refwa.map(|c| Arc::new(Mutex::new(TcpRefwa::new(c, Instant::ZERO))));
        let capture = match pcap {
            Some(p) => Some(Arc::new(Mutex::new(Capture::create(p).map_err(|e| {
                std::io::Error::new(e.kind(), format!("--pcap {}: {e}", p.display()))
            })?))),
            None => None,
        };
        let clock = Clock::new();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared::default()));
        type Outputs = Vec<(OwnedFd, DelayLine, Option<Ipv4Addr>)>;
        let mk = |index: usize, inputs: Vec<(OwnedFd, DelayLine)>, outputs: Outputs| {
            let d = if index == 0 {
                link.forward()
            } else {
                link.reverse()
            };
            // The link carries IP packets: their own headers are in the
            // frame, so no overhead is added, and the Ethernet header is
            // not charged.
            let mut l = LinkDir::new(&d, seed.wrapping_mul(2).wrapping_add(index as u64), 0);
            l.set_uncharged(ETH_HEADER as u32);
            l.keep_dropped();
            Dir {
                index,
                inputs,
                outputs,
                link: l,
                cfg: link.clone(),
                mtu: mtu as usize,
                clock,
                stop: stop.clone(),
                shared: shared.clone(),
                report: DirReport::default(),
                capture: capture.clone(),
                refwa: refwa.clone(),
                queues: queues.clone(),
            }
        };
        let mut fwd_out = Vec::new();
        let mut rev_in = Vec::new();
        for p in peers {
            fwd_out.push((p.end.try_clone()?, DelayLine::new(p.delay), Some(p.addr)));
            rev_in.push((p.end, DelayLine::new(p.delay)));
        }
        let fwd_in = vec![(shell_end.try_clone()?, DelayLine::default())];
        let fwd = mk(0, fwd_in, fwd_out);
        let rev = mk(1, rev_in, vec![(shell_end, DelayLine::default(), None)]);
        let threads = vec![
            std::thread::Builder::new()
                .name("shell-forward".into())
                .spawn(move || fwd.run())?,
            std::thread::Builder::new()
                .name("shell-reverse".into())
                .spawn(move || rev.run())?,
        ];
        Ok(Bridge {
            clock,
            stop,
            shared,
            threads,
            capture,
        })
    }

    /// The bridge's clock (zero at start).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Forward and reverse, now (published every 20 ms).
    pub fn report(&self) -> [DirReport; 2] {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .dirs
            .clone()
    }

    /// The error that stopped a direction, if a socket call failed.
    pub fn error(&self) -> Option<String> {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .error
            .clone()
    }

    /// Stops both directions and returns the final reports.
    pub fn stop(mut self) -> [DirReport; 2] {
        self.halt();
        self.report()
    }

    /// Stops both directions, finishes the capture (its file appears
    /// under its name only now; an error says why it could not be
    /// written, and nothing is left under either name then), and returns
    /// the final reports.
    pub fn finish(mut self) -> ([DirReport; 2], Result<(), String>) {
        self.halt();
        let r = match self.capture.take() {
            Some(c) => c.lock().unwrap_or_else(|p| p.into_inner()).finish(),
            None => Ok(()),
        };
        (self.report(), r)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.halt();
        // Every record written is whole: a dropped bridge's capture is
        // finished too rather than left under its temporary name.
        if let Some(c) = self.capture.take() {
            let _ = c.lock().unwrap_or_else(|p| p.into_inner()).finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer's delay line holds each frame exactly its delay and keeps
    /// their order; a line without delay hands the frame straight back.
    #[test]
    fn delay_line_holds_frames_their_delay_in_order() {
        let ms = |m| Instant::ZERO + Duration::from_millis(m);
        let mut none = DelayLine::default();
        assert_eq!(none.push(ms(0), vec![1]), Some(vec![1]));
        assert_eq!(none.next_due(), None);
        let mut l = DelayLine::new(Duration::from_millis(40));
        assert_eq!(l.push(ms(0), vec![1]), None);
        assert_eq!(l.push(ms(5), vec![2]), None);
        assert_eq!(l.next_due(), Some(ms(40)));
        assert_eq!(l.pop_due(ms(39)), None);
        assert_eq!(l.pop_due(ms(45)), Some(vec![1]));
        assert_eq!(l.pop_due(ms(45)), Some(vec![2]));
        assert_eq!(l.pop_due(ms(100)), None);
        assert_eq!(l.next_due(), None);
    }

    /// The delay line drops (and counts) what would take it past its
    /// bytes, and has room again once frames leave.
    #[test]
    fn delay_line_is_bounded_in_bytes() {
        let ms = |m| Instant::ZERO + Duration::from_millis(m);
        let mut l = DelayLine::new(Duration::from_millis(40));
        let frame = vec![0u8; 1 << 20];
        for _ in 0..MAX_DELAY_BYTES >> 20 {
            assert_eq!(l.push(ms(0), frame.clone()), None);
        }
        assert_eq!(l.dropped, 0);
        assert_eq!(l.push(ms(1), frame.clone()), None);
        assert_eq!((l.dropped, l.frames.len()), (1, MAX_DELAY_BYTES >> 20));
        assert!(l.pop_due(ms(40)).is_some());
        assert_eq!(l.push(ms(41), frame), None);
        assert_eq!((l.dropped, l.frames.len()), (1, MAX_DELAY_BYTES >> 20));
    }

    /// Past `MAX_FLOWS` distinct 5-tuples, new flows share one counter;
    /// flows already in the table keep theirs.
    #[test]
    fn flow_table_is_bounded() {
        let key = |port: u16| {
            let mut p = vec![0u8; 40];
            p[0] = 0x45;
            p[9] = 17;
            p[12..16].copy_from_slice(&[100, 64, 0, 1]);
            p[16..20].copy_from_slice(&[100, 64, 0, 2]);
            p[20..22].copy_from_slice(&port.to_be_bytes());
            p[22..24].copy_from_slice(&9u16.to_be_bytes());
            FlowKey::of_ip(&p).unwrap()
        };
        let mut r = DirReport::default();
        for port in 0..(MAX_FLOWS + 100) as u16 {
            r.flow(key(port)).arrived += 1;
        }
        r.flow(key(0)).arrived += 1;
        assert_eq!(r.flows.len(), MAX_FLOWS);
        assert_eq!(r.other.arrived, 100);
        assert_eq!(r.flows[&key(0)].arrived, 2);
    }

    #[test]
    fn only_ip_enters_the_link_and_only_arp_passes_outside_it() {
        let mut f = vec![0u8; ETH_HEADER + 28];
        f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert!(is_arp(&f) && ip_of_frame(&f).is_none());
        // An 802.1Q priority tag (VLAN 0) around IPv4: neither.
        f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        f[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        assert!(!is_arp(&f) && ip_of_frame(&f).is_none());
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert!(!is_arp(&f) && ip_of_frame(&f).is_some());
        assert!(!is_arp(&f[..ETH_HEADER]));
    }

    #[test]
    fn flow_keys_of_ipv4_tcp_and_icmp_and_garbage() {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p[12..16].copy_from_slice(&[100, 64, 0, 1]);
        p[16..20].copy_from_slice(&[100, 64, 0, 2]);
        p[20..22].copy_from_slice(&43210u16.to_be_bytes());
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        let k = FlowKey::of_ip(&p).unwrap();
        assert_eq!(k.to_string(), "tcp 100.64.0.1:43210 > 100.64.0.2:5201");
        p[9] = 1;
        assert_eq!(
            FlowKey::of_ip(&p).unwrap().to_string(),
            "icmp 100.64.0.1 > 100.64.0.2"
        );
        // A later fragment has no ports.
        p[9] = 17;
        p[7] = 10;
        assert_eq!(FlowKey::of_ip(&p).unwrap().sport, 0);
        assert!(FlowKey::of_ip(&[]).is_none());
        assert!(FlowKey::of_ip(&[0x45, 0, 0]).is_none());
        assert!(FlowKey::of_ip(&[0x4f; 30]).is_none()); // IHL 60 > length
        assert!(FlowKey::of_ip(&[0x60; 39]).is_none());
        assert!(FlowKey::of_ip(&[0x10; 60]).is_none());
    }
}

#[cfg(test)]
mod le_tests {
    use super::*;

    /// DSCP LE (1) is TOS 0x04 in IPv4 and Traffic Class 0x04 in IPv6;
    /// the ECN bits do not matter, other DSCPs are not LE.
    #[test]
    fn lower_effort_by_dscp() {
        let mut v4 = [0u8; 20];
        v4[0] = 0x45;
        assert!(!is_lower_effort(&v4));
        v4[1] = 0x04;
        assert!(is_lower_effort(&v4));
        v4[1] = 0x05; // LE with ECT(1)
        assert!(is_lower_effort(&v4));
        v4[1] = 0x08; // CS0 + DSCP 2
        assert!(!is_lower_effort(&v4));
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[1] = 0x40; // traffic class 0x04
        assert!(is_lower_effort(&v6));
        v6[1] = 0x00;
        assert!(!is_lower_effort(&v6));
        assert!(!is_lower_effort(&[]));
        assert!(!is_lower_effort(&[0x45]));
    }
}
