//! A userspace TCP sender on raw Ethernet frames (Linux): satcc's sans-IO
//! [`TcpSender`] (NewReno, SACK, TCP-Peach) talking real TCP to an
//! unmodified receiver, the kernel's (`satcc perf --protocol peach`).
//!
//! How it sits beside the kernel, inside `satcc shell`'s namespace:
//!
//! * An `AF_PACKET` socket on the namespace's device (`satcc0`). A raw IP
//!   socket would leave the kernel the receiving side of our segments:
//!   the kernel would see a SYN-ACK for a connection it does not know and
//!   answer it with a RST. Instead the sender takes an address of its own
//!   on the /24 ([`DEFAULT_LOCAL`], 100.64.0.3) and a MAC address of its
//!   own ([`MAC`], locally administered), and answers ARP for that
//!   address itself. The peer's replies are addressed to that MAC, so the
//!   namespace's kernel drops them as `PACKET_OTHERHOST` before IP ever
//!   looks at them (no RST, no ICMP, no firewall rule needed), while the
//!   packet socket, which taps every frame of the device, reads them.
//! * The handshake offers MSS (device MTU - 40), SACK-permitted, window
//!   scale and timestamps (RFC 9293 §3.7.1, RFC 2018, RFC 7323). The
//!   sender's segment `n` is the stream's bytes `n*MSS..(n+1)*MSS`
//!   ([`seqmap`]), MSS the peer's less the 12 bytes of the timestamp
//!   option; cumulative ACKs and SACK blocks are divided back into
//!   segments, the advertised window (scaled, RFC 7323 §2.3) becomes the
//!   sender's rwnd, and TSecr (our microsecond clock, echoed) its RTT.
//! * TCP-Peach's dummies (paper 002 §III-A) become real: a copy of the
//!   last data segment sent (less its first byte, so that its D-SACK is
//!   told from a retransmission's), DSCP Lower-Effort (RFC 8622, DSCP 1), which
//!   a `priority` queue of `satcc shell` serves after everything else. The
//!   paper's receiver echoes the dummy's mark; Linux does not know it, but
//!   it answers any duplicate segment with a D-SACK (RFC 2883 §4,
//!   `net.ipv4.tcp_dsack`, on by default): a D-SACK covering a segment a
//!   dummy copied is that dummy's ACK (docs/real.md, "TCP-Peach over real
//!   TCP").
//! * Bounded everywhere: ARP and SYN retries end after the handshake
//!   timeout, the transfer after as long without the cumulative ACK
//!   advancing (then a RST), the FIN after the same; malformed frames are
//!   counted and dropped; the dummies awaiting a D-SACK are capped. A RST
//!   ends the transfer only if it carries exactly the sequence number
//!   expected; one elsewhere in the window earns a (rate-limited)
//!   challenge ACK (RFC 5961 §3.2, §7).

mod frame;
pub mod seqmap;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};

use satcc_proto::tcp::{SackBlock, SenderConfig, TcpAck, TcpData, TcpSender, MAX_SACK_BLOCKS};
use satcc_proto::wire::tcp::{Endpoints, Flags, Packet, Repr, PROTOCOL};
use satcc_proto::{Duration, Instant};
use satcc_sim::protocols::ProtocolConfig;
use satcc_sim::scenario::{parse_table, FlowSpec};

use crate::clock::Clock;
use crate::perf::{ClientReport, Interval, PerfError};
use crate::shell::{sys, DSCP_LE};
use frame::{Arp, Frame, Path, ARP_REPLY, ARP_REQUEST, BROADCAST, ETH_HEADER, IP_HEADER};
use seqmap::{PendingDummies, SeqMap};

/// The protocols this sender runs (`satcc perf --protocol`).
pub const PROTOCOLS: [&str; 4] = ["newreno", "sack", "peach", "peach-sack"];

/// The sender's own IPv4 address by default: on `satcc shell`'s /24, used
/// by neither side's kernel.
pub const DEFAULT_LOCAL: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 3);

/// The sender's own MAC address: locally administered (the 0x02 bit),
/// "satcc" in the rest.
pub const MAC: [u8; 6] = [0x02, b's', b'a', b't', b'c', b'c'];

/// TOS byte of a dummy: DSCP LE (RFC 8622 §4), ECN bits zero.
pub const TOS_LE: u8 = DSCP_LE << 2;

/// Window scale shift we offer (we receive no data: any value works).
const OUR_WSCALE: u8 = 7;

/// Bytes of the timestamp option as data segments carry it (two NOPs and
/// the 10-byte option).
const TS_OPTION_BYTES: u32 = 12;

/// Segments sent per turn of the loop before ACKs are read again.
const SEND_BURST: usize = 64;

/// Byte `off` of the stream the sender sends: a hash of the offset, so a
/// byte in the wrong place (a segment mapped to the wrong sequence
/// number) shows in a comparison.
pub fn payload_byte(off: u64) -> u8 {
    let x = (off ^ (off >> 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 56) as u8
}

fn fill_payload(off: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = payload_byte(off + i as u64);
    }
}

/// How to run the userspace sender.
#[derive(Clone, Debug)]
pub struct UtcpOptions {
    /// The receiver.
    pub server: SocketAddrV4,
    /// One of [`PROTOCOLS`].
    pub protocol: String,
    /// Further `[[flows]]` keys (`--set`), e.g. `peach_adsn`.
    pub flow: toml::Table,
    /// The device to send on.
    pub iface: String,
    /// Our own address (see the module's documentation).
    pub local: Ipv4Addr,
    /// Send for this long (bulk), unless `bytes` is given.
    pub time: Duration,
    /// Send exactly this many bytes, then close.
    pub bytes: Option<u64>,
    /// Reporting interval.
    pub interval: Duration,
    /// Give up when ARP and SYN go unanswered this long, and when the
    /// cumulative ACK does not advance for this long.
    pub timeout: Duration,
}

/// Checks the flow keys (`protocol`, `--set`) before anything is sent,
/// so a typo is one line naming the key.
pub fn check_flow(protocol: &str, flow: &toml::Table) -> Result<(), PerfError> {
    sender_config(protocol, flow, 1000, None).map(|_| ())
}

fn sender_config(
    protocol: &str,
    flow: &toml::Table,
    mss: u32,
    hs_rtt: Option<Duration>,
) -> Result<SenderConfig, PerfError> {
    let bad = |m: String| PerfError::Io(format!("--protocol: {m}"));
    if !PROTOCOLS.contains(&protocol) {
        return Err(bad(format!(
            "'{protocol}' is not one of {}",
            PROTOCOLS.join(", ")
        )));
    }
    let mut t = flow.clone();
    t.insert("protocol".into(), protocol.into());
    t.insert("mss".into(), i64::from(mss).into());
    let spec: FlowSpec = parse_table(t).map_err(PerfError::Flow)?;
    spec.validate().map_err(PerfError::Flow)?;
    match ProtocolConfig::from_spec(&spec, hs_rtt) {
        ProtocolConfig::Tcp { sender, .. } => Ok(sender),
        _ => Err(bad(format!("'{protocol}' is not a TCP sender"))),
    }
}

/// The device, our addresses and counters.
struct Link {
    fd: OwnedFd,
    path: Path,
    ip_id: u16,
    frames_sent: u64,
    send_errors: u64,
    malformed: u64,
    unknown_peer: u64,
    buf: Vec<u8>,
}

impl Link {
    fn send(&mut self, f: &[u8]) {
        self.frames_sent += 1;
        if sys::send_frame(self.fd.as_raw_fd(), f).is_err() {
            self.send_errors += 1;
        }
    }

    fn arp(&mut self, op: u16, tha: [u8; 6], tpa: Ipv4Addr, to: [u8; 6]) {
        let a = Arp {
            op,
            sha: self.path.src_mac,
            spa: self.path.src,
            tha,
            tpa,
        };
        let f = frame::arp_frame(to, &a);
        self.send(&f);
    }

    /// Emits one TCP segment.
    fn segment(&mut self, r: &Repr, payload: &[u8], tos: u8) {
        let len = r.buffer_len();
        let mut f = vec![0u8; ETH_HEADER + IP_HEADER + len];
        self.ip_id = self.ip_id.wrapping_add(1);
        frame::ipv4_headers(&mut f, &self.path, PROTOCOL, tos, self.ip_id, len);
        let ep = Endpoints::V4(self.path.src, self.path.dst);
        if r.emit(&mut f[ETH_HEADER + IP_HEADER..], payload, &ep)
            .is_ok()
        {
            self.send(&f);
        } else {
            self.send_errors += 1;
        }
    }

    /// Waits for a frame until `deadline`, then reads what has come (at
    /// most 256 frames): ARP is answered here, and the TCP segments from
    /// the peer to us are returned with their TOS.
    fn receive(&mut self, clock: &Clock, deadline: Instant, port: u16) -> Vec<Repr> {
        let wait = deadline.saturating_since(clock.now()).as_nanos();
        if wait > 0 {
            let _ = sys::wait_readable_any(&[self.fd.as_raw_fd()], wait);
        }
        let mut out = Vec::new();
        for _ in 0..256 {
            let n = match sys::recv_frame(self.fd.as_raw_fd(), &mut self.buf) {
                Ok(Some(n)) => n.min(self.buf.len()),
                _ => break,
            };
            let dst_mac_ours = self.buf[..n.min(6)] == self.path.src_mac;
            match frame::parse(&self.buf[..n]) {
                Frame::Arp(a) => {
                    if a.tpa == self.path.src && a.op == ARP_REQUEST {
                        self.arp(ARP_REPLY, a.sha, a.spa, a.sha);
                    }
                    if a.spa == self.path.dst && a.op == ARP_REPLY && dst_mac_ours {
                        self.path.dst_mac = a.sha;
                    }
                }
                Frame::Ipv4 {
                    src,
                    dst,
                    proto,
                    payload,
                    ..
                } if dst == self.path.src && dst_mac_ours && proto == PROTOCOL => {
                    let ep = Endpoints::V4(src, dst);
                    let parsed = Packet::new_checked(payload)
                        .map_err(|_| ())
                        .and_then(|p| Repr::parse(&p, Some(&ep)).map_err(|_| ()));
                    match parsed {
                        Ok(r) if src == self.path.dst && r.dst_port == port => out.push(r),
                        Ok(_) => self.unknown_peer += 1,
                        Err(()) => self.malformed += 1,
                    }
                }
                Frame::Malformed if dst_mac_ours => self.malformed += 1,
                _ => {}
            }
        }
        out
    }
}

/// The connection's TCP state around the sans-IO sender.
/// The receive window we advertise, in bytes (see [`Tcp::repr`]).
const RCV_WINDOW: u32 = 512 << OUR_WSCALE;

/// [`Tcp::rst_check`]'s verdict.
#[derive(Debug, PartialEq, Eq)]
enum RstCheck {
    /// The exact sequence number: the peer reset the connection.
    Accept,
    /// In the window but not exact: answer with a challenge ACK.
    Challenge,
    /// Outside the window: drop it.
    Drop,
}

struct Tcp {
    sport: u16,
    dport: u16,
    isn: u32,
    /// Next sequence number expected from the peer.
    rcv_nxt: u32,
    ts_ok: bool,
    ts_recent: u32,
    peer_wshift: u8,
}

impl Tcp {
    fn tsval(now: Instant) -> u32 {
        (now.as_nanos() / 1000) as u32
    }

    /// A segment with the connection's ports, ACK and timestamps.
    fn repr(&self, now: Instant, seq: u32, flags: Flags, payload_len: usize) -> Repr {
        Repr {
            src_port: self.sport,
            dst_port: self.dport,
            seq_number: seq,
            ack_number: self.rcv_nxt,
            flags,
            // 64 KB (512 << 7): we take no data, so the window only
            // needs to be open for the peer's FIN.
            window: (RCV_WINDOW >> OUR_WSCALE) as u16,
            urgent: 0,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack: [None; satcc_proto::wire::tcp::MAX_SACK_BLOCKS],
            timestamps: self.ts_ok.then_some((Self::tsval(now), self.ts_recent)),
            payload_len,
        }
    }

    /// What a RST from the peer's port is worth (RFC 5961 §3.2, blind
    /// reset attacks): only a RST whose sequence number is exactly the
    /// next one expected ends the connection; one elsewhere in our
    /// receive window earns a challenge ACK (a genuine peer answers it
    /// with a RST carrying the exact number), and one outside the window
    /// is dropped. Without this anyone on the link who guessed the ports
    /// could end a transfer with a single forged segment.
    fn rst_check(&self, seq: u32) -> RstCheck {
        match seq.wrapping_sub(self.rcv_nxt) {
            0 => RstCheck::Accept,
            off if off < RCV_WINDOW => RstCheck::Challenge,
            _ => RstCheck::Drop,
        }
    }

    /// The send time a TSecr echoes, from our microsecond TSval.
    fn echo_time(now: Instant, tsecr: u32) -> Option<Instant> {
        let ago = Self::tsval(now).wrapping_sub(tsecr);
        // Older than 10 minutes (or "from the future", wrapped): not ours.
        (ago < 600_000_000).then(|| Instant(now.as_nanos().saturating_sub(u64::from(ago) * 1000)))
    }

    /// RFC 7323 §4.3 in short: keep the newest TSval (we take no data,
    /// so there is no out-of-order data segment to exclude).
    fn note_ts(&mut self, r: &Repr) {
        if let Some((v, _)) = r.timestamps {
            if (v.wrapping_sub(self.ts_recent) as i32) >= 0 {
                self.ts_recent = v;
            }
        }
    }
}

/// Runs the userspace sender against `o.server`, calling `each` after
/// every interval.
pub fn run_utcp_client(
    o: &UtcpOptions,
    mut each: impl FnMut(&Interval),
) -> Result<ClientReport, PerfError> {
    let io = |m: String| PerfError::Io(m);
    check_flow(&o.protocol, &o.flow)?;
    let ifindex = sys::ifindex(&o.iface).map_err(|_| {
        io(format!(
            "--iface {}: no such device here (run this inside `satcc shell`, or name the device with --iface)",
            o.iface
        ))
    })?;
    let mtu = sys::ioctl_socket()
        .and_then(|s| sys::mtu(&s, &o.iface))
        .map_err(|e| io(format!("--iface {}: reading its MTU: {e}", o.iface)))?;
    if mtu < 576 {
        return Err(io(format!("--iface {}: MTU {mtu} is below 576", o.iface)));
    }
    let fd = sys::packet_socket(ifindex).map_err(|e| {
        io(format!(
            "--iface {}: {e} (a packet socket needs CAP_NET_RAW: run this inside `satcc shell`)",
            o.iface
        ))
    })?;
    let clock = Clock::new();
    let server_ip = *o.server.ip();
    let mut link = Link {
        fd,
        path: Path {
            src_mac: MAC,
            dst_mac: BROADCAST,
            src: o.local,
            dst: server_ip,
        },
        ip_id: 0,
        frames_sent: 0,
        send_errors: 0,
        malformed: 0,
        unknown_peer: 0,
        buf: vec![0u8; 65_536 + ETH_HEADER],
    };
    let secs = |t: Instant| t.as_secs_f64();

    // ARP for the peer, and the handshake, until `timeout`.
    let give_up = clock.now() + o.timeout;
    let mut next_try = Instant::ZERO;
    let mut tries = 0u32;
    while link.path.dst_mac == BROADCAST {
        let now = clock.now();
        if now >= give_up {
            return Err(io(format!(
                "no ARP reply from {server_ip} on {} within {:.1} s ({tries} requests): is the peer there?",
                o.iface,
                o.timeout.as_secs_f64()
            )));
        }
        if now >= next_try {
            link.arp(ARP_REQUEST, [0; 6], server_ip, BROADCAST);
            tries += 1;
            next_try = now + Duration::from_secs(1);
        }
        link.receive(&clock, next_try.min(give_up), 0);
    }
    let seed = clock.now().as_nanos() ^ u64::from(std::process::id()).rotate_left(32);
    let mut tcp = Tcp {
        sport: 32_768 + (seed % 28_000) as u16,
        dport: o.server.port(),
        isn: (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32,
        rcv_nxt: 0,
        ts_ok: true,
        ts_recent: 0,
        peer_wshift: 0,
    };
    let our_mss = (mtu - 40).min(u32::from(u16::MAX)) as u16;
    let mut syn_sent = Instant::ZERO;
    let mut syns = 0u32;
    let mut rto = Duration::from_secs(1);
    let mut next_syn = Instant::ZERO;
    let synack = loop {
        let now = clock.now();
        if now >= give_up {
            return Err(io(format!(
                "no SYN-ACK from {} within {:.1} s ({syns} SYNs sent): is a TCP server listening there?",
                o.server,
                o.timeout.as_secs_f64()
            )));
        }
        if now >= next_syn {
            let mut r = tcp.repr(now, tcp.isn, Flags::SYN, 0);
            r.ack_number = 0;
            r.window = u16::MAX;
            r.mss = Some(our_mss);
            r.window_scale = Some(OUR_WSCALE);
            r.sack_permitted = true;
            r.timestamps = Some((Tcp::tsval(now), 0));
            link.segment(&r, &[], 0);
            syn_sent = now;
            syns += 1;
            next_syn = now + rto;
            // RFC 6298 §5.5: back off.
            rto = rto.saturating_mul(2);
        }
        let got = link
            .receive(&clock, next_syn.min(give_up), tcp.sport)
            .into_iter()
            .find(|r| r.src_port == tcp.dport && r.flags.contains(Flags::ACK));
        if let Some(r) = got {
            if r.ack_number != tcp.isn.wrapping_add(1) {
                continue;
            }
            if r.flags.contains(Flags::RST) {
                return Err(io(format!(
                    "{} refused the connection (RST): is a TCP server listening there?",
                    o.server
                )));
            }
            if r.flags.contains(Flags::SYN) {
                break r;
            }
        }
    };
    let now = clock.now();
    // Karn: the handshake's RTT only if one SYN went out.
    let hs_rtt = (syns == 1).then(|| now.saturating_since(syn_sent));
    tcp.rcv_nxt = synack.seq_number.wrapping_add(1);
    tcp.ts_ok = synack.timestamps.is_some();
    if let Some((v, _)) = synack.timestamps {
        tcp.ts_recent = v;
    }
    // RFC 7323 §2.2: scaling only if both SYNs carried the option.
    tcp.peer_wshift = synack.window_shift();
    let ack = tcp.repr(now, tcp.isn.wrapping_add(1), Flags::ACK, 0);
    link.segment(&ack, &[], 0);
    // RFC 9293 §3.7.1: without the option the peer takes 536.
    let peer_mss = u32::from(synack.mss.unwrap_or(536));
    let opt = if tcp.ts_ok { TS_OPTION_BYTES } else { 0 };
    let mss = peer_mss.min(u32::from(our_mss)).saturating_sub(opt).max(64);
    let mut cfg = sender_config(&o.protocol, &o.flow, mss, hs_rtt)?;
    // The SYN-ACK's window is never scaled (RFC 7323 §2.2).
    cfg.initial_rwnd = (u32::from(synack.window) / mss).max(1);
    // `--set rwnd=N`: the window the sender uses is capped at N segments,
    // as if the receiver's buffer were N (the simulated receiver's rwnd).
    // Linux's receiver grows its advertised window to megabytes, and a
    // Sudden Start after a timeout sends rwnd - 1 dummies (paper 002
    // §III-B); the paper's rwnd is a fixed buffer. Unset: no cap.
    if let Some(r) = o.flow.get("rwnd").and_then(toml::Value::as_integer) {
        cfg.max_window = u32::try_from(r).unwrap_or(u32::MAX).max(1);
    }
    if !tcp.ts_ok {
        cfg.rtt_timing = satcc_proto::tcp::RttTiming::Karn;
    }
    let mut map = SeqMap {
        base: tcp.isn.wrapping_add(1),
        mss: u64::from(mss),
        end: o.bytes,
    };
    let start = clock.now();
    let mut sender = TcpSender::new(cfg, start);
    match o.bytes {
        Some(b) => sender.push_data(b),
        None => sender.set_unlimited(),
    }
    let t_end = start + o.time;
    let step = Duration(o.interval.as_nanos().max(1_000_000));
    let mut pending = PendingDummies::default();
    let mut st = Run::default();
    let mut iv_start = start;
    let mut prev = (0u64, 0u64, 0u64);
    let mut intervals = Vec::new();
    let mut closed = o.bytes.is_some();
    let mut last_progress = start;
    // When the next RFC 5961 challenge ACK may go out.
    let mut next_challenge = Instant::ZERO;
    let mut at_time: Option<(u64, Instant)> = None;
    let mut payload = vec![0u8; mss as usize];

    // The transfer.
    loop {
        let now = clock.now();
        if !closed && now >= t_end {
            sender.close();
            closed = true;
            map.end = Some(sender.snd_max() * map.mss);
        }
        let finishing =
            at_time.is_none() && (now >= t_end || map.end.is_some_and(|e| st.acked >= e));
        if finishing {
            at_time = Some((st.acked, now));
        }
        // An interval is closed every `step`, and the last one at the end
        // of the measured run (--time, or the last byte acknowledged).
        if (now.saturating_since(iv_start) >= step && at_time.is_none()) || finishing {
            let s = sender.stats();
            let dt = now.saturating_since(iv_start).as_secs_f64().max(1e-9);
            let iv = Interval {
                start_s: iv_start.saturating_since(start).as_secs_f64(),
                end_s: now.saturating_since(start).as_secs_f64(),
                send_rate_bps: (st.acked - prev.0) as f64 * 8.0 / dt,
                x_bps: None,
                x_recv_bps: None,
                loss_event_rate: None,
                rtt_s: s.srtt.map(|d| d.as_secs_f64()),
                feedback_packets: st.acks - prev.1,
                cwnd: Some(s.cwnd as u64),
                retransmits: Some(s.retransmits - prev.2),
            };
            each(&iv);
            intervals.push(iv);
            prev = (st.acked, st.acks, s.retransmits);
            iv_start = now;
        }
        if map.end.is_some_and(|e| st.acked >= e) {
            break;
        }
        if sender.poll_timeout().is_some_and(|t| t <= now) {
            sender.handle_timeout(now);
        }
        let mut burst = 0;
        while burst < SEND_BURST {
            let Some(d) = sender.poll_transmit(now) else {
                break;
            };
            send_data(
                &mut link,
                &tcp,
                &map,
                &mut pending,
                &mut st,
                &mut payload,
                now,
                &d,
            );
            burst += 1;
        }
        while sender.poll_event().is_some() {}
        if now.saturating_since(last_progress) > o.timeout {
            let r = tcp.repr(now, map.seq_of(st.highest), Flags::RST | Flags::ACK, 0);
            link.segment(&r, &[], 0);
            return Err(io(format!(
                "no progress from {} for {:.1} s (acknowledged {} bytes in {:.1} s): gave up and reset the connection",
                o.server,
                o.timeout.as_secs_f64(),
                st.acked,
                secs(now) - secs(start)
            )));
        }
        let mut deadline = if burst == SEND_BURST {
            now
        } else {
            (iv_start + step).min(last_progress + o.timeout + Duration::from_millis(1))
        };
        if let Some(t) = sender.poll_timeout() {
            deadline = deadline.min(t);
        }
        if !closed {
            deadline = deadline.min(t_end);
        }
        for r in link.receive(&clock, deadline, tcp.sport) {
            if r.src_port != tcp.dport {
                link.unknown_peer += 1;
                continue;
            }
            let now = clock.now();
            if r.flags.contains(Flags::RST) {
                match tcp.rst_check(r.seq_number) {
                    RstCheck::Accept => {}
                    verdict => {
                        link.unknown_peer += 1;
                        // RFC 5961 §7: challenge ACKs are rate-limited, so
                        // a flood of forged RSTs cannot turn us into an
                        // amplifier; one per 100 ms is plenty for a
                        // genuine peer to answer.
                        if verdict == RstCheck::Challenge && now >= next_challenge {
                            let a = tcp.repr(now, map.seq_of(st.highest), Flags::ACK, 0);
                            link.segment(&a, &[], 0);
                            next_challenge = now + Duration::from_millis(100);
                        }
                        continue;
                    }
                }
                return Err(io(format!(
                    "{} reset the connection after {:.1} s ({} bytes acknowledged)",
                    o.server,
                    now.saturating_since(start).as_secs_f64(),
                    st.acked
                )));
            }
            if r.flags.contains(Flags::SYN) {
                // Our handshake ACK was lost: the SYN-ACK again.
                let a = tcp.repr(now, map.seq_of(st.highest), Flags::ACK, 0);
                link.segment(&a, &[], 0);
                continue;
            }
            tcp.note_ts(&r);
            let before = st.acked;
            on_ack(&mut sender, &tcp, &map, &mut pending, &mut st, now, &r);
            if st.acked > before {
                last_progress = now;
            }
        }
    }
    let (acked_at_time, t_at) = at_time.unwrap_or((st.acked, clock.now()));
    let duration = t_at.saturating_since(start).as_secs_f64();
    let stats = sender.stats();

    // The FIN, retransmitted with backoff until acknowledged (bounded by
    // the timeout), then the peer's FIN acknowledged.
    let end = map.end.unwrap_or(st.highest);
    let fin_seq = map.seq_of(end);
    let give_up = clock.now() + o.timeout;
    let mut rto = sender.stats().rto.max(Duration::from_millis(200));
    let mut next_fin = Instant::ZERO;
    let mut fin_acked = false;
    let mut peer_fin = false;
    let mut fin_acked_at = Instant::MAX;
    loop {
        let now = clock.now();
        if fin_acked && (peer_fin || now >= fin_acked_at + Duration::from_secs(3)) {
            break;
        }
        if now >= give_up {
            let r = tcp.repr(now, fin_seq.wrapping_add(1), Flags::RST | Flags::ACK, 0);
            link.segment(&r, &[], 0);
            return Err(io(format!(
                "{} did not acknowledge our FIN within {:.1} s (all {end} bytes were acknowledged): reset the connection",
                o.server,
                o.timeout.as_secs_f64()
            )));
        }
        if !fin_acked && now >= next_fin {
            let r = tcp.repr(now, fin_seq, Flags::FIN | Flags::ACK, 0);
            link.segment(&r, &[], 0);
            next_fin = now + rto;
            rto = rto.saturating_mul(2);
        }
        let deadline = if fin_acked {
            fin_acked_at + Duration::from_secs(3)
        } else {
            next_fin
        };
        for r in link.receive(&clock, deadline.min(give_up), tcp.sport) {
            if r.src_port != tcp.dport || r.flags.contains(Flags::RST) {
                continue;
            }
            let now = clock.now();
            tcp.note_ts(&r);
            if r.flags.contains(Flags::ACK) && r.ack_number == fin_seq.wrapping_add(1) && !fin_acked
            {
                fin_acked = true;
                fin_acked_at = now;
            }
            // Late D-SACKs still answer dummies.
            on_ack(&mut sender, &tcp, &map, &mut pending, &mut st, now, &r);
            if r.flags.contains(Flags::FIN) && r.seq_number == tcp.rcv_nxt {
                tcp.rcv_nxt = tcp.rcv_nxt.wrapping_add(1);
                peer_fin = true;
            }
            if r.flags.contains(Flags::FIN) {
                let a = tcp.repr(now, fin_seq.wrapping_add(1), Flags::ACK, 0);
                link.segment(&a, &[], 0);
            }
        }
    }
    let fin_stats = sender.stats();
    Ok(ClientReport {
        protocol: o.protocol.clone(),
        server: o.server.to_string(),
        duration_s: duration,
        packets_sent: stats.segments_sent + stats.dummies_sent,
        data_bytes_sent: stats.bytes_sent,
        send_rate_bps: acked_at_time as f64 * 8.0 / duration.max(1e-9),
        mean_rtt_s: (stats.rtt_samples > 0)
            .then(|| stats.sum_rtt.as_secs_f64() / stats.rtt_samples as f64),
        loss_event_rate: None,
        slow_start_exit_s: None,
        feedback_packets: st.acks,
        malformed: link.malformed,
        unknown_peer: link.unknown_peer,
        send_errors: link.send_errors,
        late_wakeups: 0,
        max_wakeup_late_s: 0.0,
        cc: Some(format!("satcc {}", o.protocol)),
        bytes_acked: Some(acked_at_time),
        bytes_acked_at_close: Some(st.acked.min(end)),
        retransmits: Some(stats.retransmits),
        min_rtt_s: stats.min_rtt.map(|d| d.as_secs_f64()),
        cwnd: Some(stats.cwnd as u64),
        mss: Some(u64::from(mss)),
        dummies_sent: Some(fin_stats.dummies_sent),
        dummies_acked: Some(st.dummy_dsacks),
        timeouts: Some(fin_stats.timeouts),
        dsacks_other: Some(st.dsack_other),
        peach_fallback: sender
            .config()
            .peach
            .is_some()
            .then_some(fin_stats.peach_fallback),
        intervals,
    })
}

/// Counters of the run.
#[derive(Default)]
struct Run {
    /// Bytes cumulatively acknowledged.
    acked: u64,
    /// One past the highest byte sent.
    highest: u64,
    acks: u64,
    dummy_dsacks: u64,
    dsack_other: u64,
}

/// One of the sender's segments onto the wire.
#[allow(clippy::too_many_arguments)]
fn send_data(
    link: &mut Link,
    tcp: &Tcp,
    map: &SeqMap,
    pending: &mut PendingDummies,
    st: &mut Run,
    payload: &mut [u8],
    now: Instant,
    d: &TcpData,
) {
    let (mut off, _) = map.bytes_of(d.seq);
    let mut len = (d.len as usize).min(payload.len());
    let tos = if d.dummy {
        // A copy of the segment less its first byte (seqmap::dummy_range).
        if let Some((l, r)) = seqmap::dummy_range(map, d.seq) {
            pending.sent(d.seq);
            len = (r - l) as usize;
            off = l;
        }
        TOS_LE
    } else {
        st.highest = st.highest.max(off + len as u64);
        0
    };
    let p = &mut payload[..len];
    fill_payload(off, p);
    let r = tcp.repr(now, map.seq_of(off), Flags::ACK, len);
    link.segment(&r, p, tos);
}

/// An ACK from the peer into the sender.
fn on_ack(
    sender: &mut TcpSender,
    tcp: &Tcp,
    map: &SeqMap,
    pending: &mut PendingDummies,
    st: &mut Run,
    now: Instant,
    r: &Repr,
) {
    if !r.flags.contains(Flags::ACK) {
        return;
    }
    st.acks += 1;
    let m = map.map_ack(r.ack_number, &r.sack, st.acked);
    // An ACK beyond what we sent (or the FIN's own sequence number):
    // nothing for the sender.
    if m.ack_bytes > st.highest {
        return;
    }
    let dummy_echo = match m.dsack {
        Some(d)
            if m.dsack_bytes
                .is_some_and(|(l, _)| seqmap::is_dummy_dsack(map, l))
                && pending.answer(d) =>
        {
            st.dummy_dsacks += 1;
            true
        }
        Some(_) => {
            st.dsack_other += 1;
            false
        }
        None => false,
    };
    let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
    for (s, b) in sack.iter_mut().zip(&m.sack) {
        *s = *b;
    }
    let wnd = ((u64::from(r.window) << tcp.peer_wshift) / map.mss).min(u64::from(u32::MAX));
    let ts_echo = r
        .timestamps
        .and_then(|(_, e)| Tcp::echo_time(now, e))
        .unwrap_or(now);
    let ack = TcpAck {
        ack: m.ack,
        wnd: wnd as u32,
        ts_echo,
        sack,
        sack_len: m.sack.len().min(MAX_SACK_BLOCKS) as u8,
        dummy_echo,
    };
    sender.handle_input(now, &ack);
    st.acked = st.acked.max(m.ack_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_sequence_number_resets() {
        // rcv_nxt near the wrap, so the window check must wrap too.
        let tcp = Tcp {
            sport: 40000,
            dport: 5201,
            isn: 1,
            rcv_nxt: u32::MAX - 10,
            ts_ok: false,
            ts_recent: 0,
            peer_wshift: 0,
        };
        assert_eq!(tcp.rst_check(u32::MAX - 10), RstCheck::Accept);
        assert_eq!(tcp.rst_check(u32::MAX - 9), RstCheck::Challenge);
        // Past the wrap, still inside the 64 KB window.
        assert_eq!(tcp.rst_check(100), RstCheck::Challenge);
        assert_eq!(
            tcp.rst_check((u32::MAX - 10).wrapping_add(RCV_WINDOW - 1)),
            RstCheck::Challenge
        );
        assert_eq!(
            tcp.rst_check((u32::MAX - 10).wrapping_add(RCV_WINDOW)),
            RstCheck::Drop
        );
        // Below rcv_nxt: outside the window.
        assert_eq!(tcp.rst_check(u32::MAX - 11), RstCheck::Drop);
        assert_eq!(RCV_WINDOW >> OUR_WSCALE, 512);
    }

    #[test]
    fn payload_differs_one_segment_apart() {
        let a: Vec<u8> = (0..1448).map(payload_byte).collect();
        let b: Vec<u8> = (1448..2896).map(payload_byte).collect();
        assert_ne!(a, b);
        // Every byte value occurs: not a constant or short cycle.
        let mut seen = [false; 256];
        for o in 0..100_000 {
            seen[payload_byte(o) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn flow_keys_are_checked_by_name() {
        assert!(check_flow("peach", &toml::Table::new()).is_ok());
        let e = check_flow("cubic", &toml::Table::new()).unwrap_err();
        assert!(e.to_string().contains("'cubic' is not one of"), "{e}");
        let mut t = toml::Table::new();
        t.insert("peach_adsn".into(), "x".into());
        let e = check_flow("peach", &t).unwrap_err().to_string();
        assert!(e.contains("peach_adsn"), "{e}");
    }

    #[test]
    fn echo_time_inverts_tsval() {
        let now = Instant(5_000_000_000);
        let sent = Instant(4_250_000_000);
        assert_eq!(Tcp::echo_time(now, Tcp::tsval(sent)), Some(sent));
        assert_eq!(Tcp::echo_time(now, Tcp::tsval(now) + 10), None);
    }
}
