//! REFWA (paper 003) on real TCP: the adapter that lets the one
//! [`Refwa`] controller act as the router of an emulated link carrying
//! kernel TCP flows (issue 30, step 2; the `satcc shell` wiring is still
//! to do).
//!
//! The driver hands every IP packet crossing the guarded link (both
//! directions) to [`TcpRefwa::on_packet`] with the guarded link's queue.
//! The adapter parses IPv4 or IPv6 and the TCP segment with
//! [`crate::wire::tcp`], and:
//!
//! * takes each direction's window shift from its SYN (RFC 7323 §2.2: the
//!   shift applies to every later segment of that direction, never to the
//!   SYN itself);
//! * measures the flow's RTT at the router as the time from the SYN to the
//!   first ACK of the same side (the SYN-ACK crossing in between covers the
//!   other half), the paper's hop count being unavailable on a real path;
//! * turns the RTT into the hop counts eq. 1 expects,
//!   H_f + H_b = round(RTT / (2·ISL_delay)) − 2, split evenly, so flows
//!   whose RTTs fall in the same 2·ISL_delay step form one group as the
//!   paper's flows with the same hop count do; `isl_delay` of the
//!   [`RefwaConfig`] is thus the grouping quantum;
//! * reports segments with payload as data of their direction and bare
//!   ACKs as ACKs of the reverse direction's data, converting the window
//!   to packets of `packet_bytes` (the MSS) and the controller's F_k back
//!   to the window field, which it only ever lowers (§III-C), fixing the
//!   checksum incrementally (RFC 1624).
//!
//! Not TCP, fragments, IPv6 extension headers and malformed segments pass
//! unchanged and are counted.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::refwa::{FlowKey, Refwa, RefwaConfig};
use crate::time::{Duration, Instant};
use crate::wire::tcp::{Endpoints, Flags, Packet, Repr};

/// What [`TcpRefwa::on_packet`] did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a TCP segment the adapter reads (other protocol, fragment,
    /// extension header): passed unchanged.
    NotTcp,
    /// A malformed IP header or TCP segment (or a bad checksum): passed
    /// unchanged, never rewritten.
    Malformed,
    /// Read; its window left as it was.
    Passed,
    /// An ACK whose window field was lowered from `old` to `new`.
    Rewritten {
        /// The window field as sent.
        old: u16,
        /// The window field written.
        new: u16,
    },
}

/// Counters of the adapter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpRefwaStats {
    /// Packets passed unchanged as not TCP.
    pub not_tcp: u64,
    /// Malformed packets passed unchanged.
    pub malformed: u64,
    /// TCP segments read.
    pub segments: u64,
    /// ACKs whose window was lowered.
    pub rewritten: u64,
    /// Connections not followed because [`MAX_CONNS`] were (their
    /// segments pass unchanged).
    pub untracked: u64,
}

/// Connections followed at once: one entry per SYN seen, until both FINs
/// or a RST, so a stream of SYNs (a scan, spoofed sources) cannot grow
/// the table without bound.
pub const MAX_CONNS: usize = 16_384;

#[derive(Clone, Copy, Debug, Default)]
struct Conn {
    /// Window shift of each direction, from its SYN (index: 0 = the SYN
    /// sender's direction, 1 = the other).
    shift: [Option<u8>; 2],
    /// When the SYN crossed.
    syn_at: Option<Instant>,
    /// The RTT measured at the router.
    rtt: Option<Duration>,
    /// A FIN was seen from each side (index as `shift`).
    fin: [bool; 2],
}

/// The REFWA controller of one guarded link, reading real TCP.
#[derive(Debug)]
pub struct TcpRefwa {
    refwa: Refwa,
    /// Keyed by the SYN sender's direction.
    conns: HashMap<FlowKey, Conn>,
    stats: TcpRefwaStats,
}

/// Folds an IPv6 address to the 32 bits [`FlowKey`] holds (flows are
/// told apart by the whole key; a collision only merges two flows' state).
fn fold6(a: &Ipv6Addr) -> u32 {
    a.octets()
        .chunks_exact(4)
        .fold(0, |x, w| x ^ u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// The TCP segment and its endpoints inside an IP packet, if it is one.
fn split(ip: &mut [u8]) -> Result<Option<(Endpoints, &mut [u8])>, ()> {
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            if ip.len() < 20 {
                return Err(());
            }
            let ihl = usize::from(ip[0] & 0x0F) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if ihl < 20 || total < ihl || total > ip.len() {
                return Err(());
            }
            // A fragment's TCP header may be elsewhere: leave it alone.
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3FFF;
            if ip[9] != 6 || frag != 0 {
                return Ok(None);
            }
            let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
            Ok(Some((Endpoints::V4(src, dst), &mut ip[ihl..total])))
        }
        Some(6) => {
            if ip.len() < 40 {
                return Err(());
            }
            let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            if 40 + plen > ip.len() {
                return Err(());
            }
            if ip[6] != 6 {
                return Ok(None);
            }
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s.copy_from_slice(&ip[8..24]);
            d.copy_from_slice(&ip[24..40]);
            let ep = Endpoints::V6(Ipv6Addr::from(s), Ipv6Addr::from(d));
            Ok(Some((ep, &mut ip[40..40 + plen])))
        }
        Some(_) => Ok(None),
        None => Err(()),
    }
}

impl TcpRefwa {
    /// A controller for a link of `cfg.bandwidth_bps` and
    /// `cfg.buffer_pkts`, with `cfg.packet_bytes` the flows' MSS and
    /// `cfg.isl_delay` the RTT grouping quantum (a group per
    /// 2·`isl_delay` of RTT).
    pub fn new(cfg: RefwaConfig, now: Instant) -> Self {
        TcpRefwa {
            refwa: Refwa::new(cfg, now),
            conns: HashMap::new(),
            stats: TcpRefwaStats::default(),
        }
    }

    /// The controller (groups, stats).
    pub fn refwa(&self) -> &Refwa {
        &self.refwa
    }

    /// The adapter's counters.
    pub fn stats(&self) -> TcpRefwaStats {
        self.stats
    }

    /// The RTT measured for the connection of the segment `key` (either
    /// direction's 5-tuple).
    pub fn rtt_of(&self, key: &FlowKey) -> Option<Duration> {
        self.conn(key).and_then(|(c, _)| c.rtt)
    }

    fn conn(&self, key: &FlowKey) -> Option<(&Conn, usize)> {
        if let Some(c) = self.conns.get(key) {
            return Some((c, 0));
        }
        self.conns.get(&reverse(key)).map(|c| (c, 1))
    }

    /// Hop counts (H_f, H_b) standing for `rtt` in eq. 1.
    fn hops(&self, rtt: Duration) -> (u8, u8) {
        let q = 2 * self.refwa.config().isl_delay.as_nanos().max(1);
        let steps = (rtt.as_nanos() + q / 2) / q;
        let total = steps.saturating_sub(2).min(200) as u8;
        (total / 2, total - total / 2)
    }

    /// Reads the IP packet `ip` entering one direction of the link at
    /// `now` and rewrites an ACK's window in place. `own_queue` is the
    /// queue of the direction it enters, `other_queue` the other's: a data
    /// segment loads its own direction, an ACK's data travels the other
    /// one, and Υ steps by the data direction's queue (eq. 2).
    pub fn on_packet(
        &mut self,
        now: Instant,
        ip: &mut [u8],
        own_queue: u64,
        other_queue: u64,
    ) -> Verdict {
        let (ep, seg) = match split(ip) {
            Ok(Some(x)) => x,
            Ok(None) => {
                self.stats.not_tcp += 1;
                return Verdict::NotTcp;
            }
            Err(()) => {
                self.stats.malformed += 1;
                return Verdict::Malformed;
            }
        };
        let repr = match Packet::new_checked(&seg[..]).and_then(|p| Repr::parse(&p, Some(&ep))) {
            Ok(r) => r,
            Err(_) => {
                self.stats.malformed += 1;
                return Verdict::Malformed;
            }
        };
        self.stats.segments += 1;
        let (src, dst) = match ep {
            Endpoints::V4(s, d) => (u32::from(s), u32::from(d)),
            Endpoints::V6(s, d) => (fold6(&s), fold6(&d)),
        };
        let key = FlowKey {
            src,
            dst,
            sport: repr.src_port,
            dport: repr.dst_port,
            proto: 6,
        };
        let syn = repr.flags.contains(Flags::SYN);
        if repr.flags.contains(Flags::RST) {
            // The connection is gone (either side's RST): forget it.
            self.conns.remove(&key);
            self.conns.remove(&reverse(&key));
            return Verdict::Passed;
        }
        if syn && !repr.flags.contains(Flags::ACK) {
            if self.conns.len() >= MAX_CONNS && !self.conns.contains_key(&key) {
                self.stats.untracked += 1;
                return Verdict::Passed;
            }
            // A new connection (or a retransmitted SYN: the RTT is timed
            // from the first).
            let c = self.conns.entry(key).or_default();
            c.shift[0] = Some(repr.window_shift());
            c.syn_at.get_or_insert(now);
            return Verdict::Passed;
        }
        let Some((dir, rtt)) = self.conn_update(&key, &repr, now, syn) else {
            // Connections whose SYN the router did not see have no window
            // shift to read the window by: left alone.
            return Verdict::Passed;
        };
        if self.closed(&key) {
            // Both FINs seen: what follows is the last ACK; forget it.
            self.conns.remove(&key);
            self.conns.remove(&reverse(&key));
        }
        let Some(rtt) = rtt else {
            return Verdict::Passed;
        };
        let (h_f, h_b) = self.hops(rtt);
        let ttl0 = self.refwa.config().initial_ttl;
        let mss = u64::from(self.refwa.config().packet_bytes.max(1));
        if repr.payload_len > 0 {
            self.refwa
                .on_data(now, key, ttl0.saturating_sub(h_f), own_queue);
        }
        if !repr.flags.contains(Flags::ACK) || syn {
            return Verdict::Passed;
        }
        // The ACK acknowledges the reverse direction's data: its window is
        // this direction's, shifted by this direction's own SYN shift.
        let Some(shift) = dir else {
            return Verdict::Passed;
        };
        let bytes = u64::from(repr.window) << shift;
        let rwnd = (bytes / mss).min(u64::from(u32::MAX)) as u32;
        let w = self.refwa.on_ack(
            now,
            reverse(&key),
            ttl0.saturating_sub(h_b),
            rwnd,
            other_queue,
        );
        if w >= rwnd {
            return Verdict::Passed;
        }
        // F_k packets back to the window field, rounded down (never above
        // the advertised window), at least one MSS so the flow keeps its
        // ACK clock.
        let new = ((u64::from(w.max(1)) * mss) >> shift).min(u64::from(u16::MAX)) as u16;
        let old = repr.window;
        if new >= old {
            return Verdict::Passed;
        }
        Packet::new_unchecked(seg).set_window(new);
        self.stats.rewritten += 1;
        Verdict::Rewritten { old, new }
    }

    /// Both sides of the connection of `key` (either direction) sent FIN.
    fn closed(&self, key: &FlowKey) -> bool {
        self.conns
            .get(key)
            .or_else(|| self.conns.get(&reverse(key)))
            .is_some_and(|c| c.fin == [true, true])
    }

    /// Connections followed now.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Updates the connection of a non-SYN segment (or the SYN-ACK):
    /// returns this direction's shift and the RTT, `None` if the router did
    /// not see the connection's SYN.
    fn conn_update(
        &mut self,
        key: &FlowKey,
        repr: &Repr,
        now: Instant,
        synack: bool,
    ) -> Option<(Option<u8>, Option<Duration>)> {
        let (c, side) = if let Some(c) = self.conns.get_mut(key) {
            (c, 0)
        } else {
            (self.conns.get_mut(&reverse(key))?, 1)
        };
        if synack && side == 1 {
            c.shift[1] = Some(repr.window_shift());
        }
        if repr.flags.contains(Flags::FIN) {
            c.fin[side] = true;
        }
        if side == 0 && c.rtt.is_none() && repr.flags.contains(Flags::ACK) {
            // The SYN sender's first ACK: SYN → server → SYN-ACK → client →
            // this ACK is one whole round trip seen from the router.
            c.rtt = c.syn_at.map(|t| now - t);
        }
        // RFC 7323 §2.2: without Window Scale on both SYNs no shift is
        // used in either direction.
        let shift = match c.shift {
            [Some(a), Some(b)] if a > 0 || b > 0 => Some(c.shift[side].unwrap_or(0)),
            [Some(_), Some(_)] => Some(0),
            _ => None,
        };
        Some((shift, c.rtt))
    }
}

fn reverse(k: &FlowKey) -> FlowKey {
    FlowKey {
        src: k.dst,
        dst: k.src,
        sport: k.dport,
        dport: k.sport,
        proto: k.proto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tcp::MAX_SACK_BLOCKS;

    const MSS: u32 = 1000;

    fn cfg() -> RefwaConfig {
        RefwaConfig {
            isl_delay: Duration::from_millis(10),
            bandwidth_bps: 8_000_000, // 1000 packets/s of 1000 bytes
            buffer_pkts: 50,
            packet_bytes: MSS,
            initial_ttl: 64,
            ..RefwaConfig::default()
        }
    }

    /// An IPv4 packet a -> b carrying a TCP segment.
    fn ip(
        a: u8,
        b: u8,
        ports: (u16, u16),
        flags: Flags,
        window: u16,
        ws: Option<u8>,
        len: usize,
    ) -> Vec<u8> {
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, a), Ipv4Addr::new(10, 0, 0, b));
        let r = Repr {
            src_port: ports.0,
            dst_port: ports.1,
            seq_number: 1,
            ack_number: 1,
            flags,
            window,
            urgent: 0,
            mss: None,
            window_scale: ws,
            sack_permitted: false,
            sack: [None; MAX_SACK_BLOCKS],
            timestamps: None,
            payload_len: len,
        };
        let n = r.buffer_len();
        let mut v = vec![0u8; 20 + n];
        v[0] = 0x45;
        v[2..4].copy_from_slice(&((20 + n) as u16).to_be_bytes());
        v[8] = 64;
        v[9] = 6;
        v[12..16].copy_from_slice(&src.octets());
        v[16..20].copy_from_slice(&dst.octets());
        let payload = vec![0x55; len];
        r.emit(&mut v[20..], &payload, &Endpoints::V4(src, dst))
            .unwrap();
        v
    }

    fn tcp_of(v: &[u8]) -> (Endpoints, Repr) {
        let ep = Endpoints::V4(
            Ipv4Addr::new(v[12], v[13], v[14], v[15]),
            Ipv4Addr::new(v[16], v[17], v[18], v[19]),
        );
        let r = Repr::parse(&Packet::new_checked(&v[20..]).unwrap(), Some(&ep)).unwrap();
        (ep, r)
    }

    /// Client 1 (the data sender) and server 2; the handshake crosses the
    /// router with `rtt` between SYN and the client's first ACK. Returns
    /// the time after the handshake.
    fn handshake(t: &mut TcpRefwa, c: u8, port: u16, at: Instant, rtt: Duration) -> Instant {
        let (cp, sp) = ((port, 5001), (5001, port));
        let mut syn = ip(c, 200, cp, Flags::SYN, 64240, Some(7), 0);
        assert_eq!(t.on_packet(at, &mut syn, 0, 0), Verdict::Passed);
        let mut sa = ip(200, c, sp, Flags::SYN | Flags::ACK, 65160, Some(7), 0);
        assert_eq!(
            t.on_packet(at + Duration(rtt.0 / 2), &mut sa, 0, 0),
            Verdict::Passed
        );
        let mut ack = ip(c, 200, cp, Flags::ACK, 502, None, 0);
        assert_eq!(t.on_packet(at + rtt, &mut ack, 0, 0), Verdict::Passed);
        at + rtt
    }

    #[test]
    fn rtt_measured_at_the_router_groups_flows_and_acks_are_lowered() {
        let mut t = TcpRefwa::new(cfg(), Instant::ZERO);
        // Two flows 40 ms apart in RTT: two groups (quantum 20 ms).
        let mut now = handshake(&mut t, 1, 40000, Instant::ZERO, Duration::from_millis(80));
        now = handshake(&mut t, 3, 40001, now, Duration::from_millis(160));
        let key = |c: u8, p: u16| FlowKey {
            src: u32::from(Ipv4Addr::new(10, 0, 0, c)),
            dst: u32::from(Ipv4Addr::new(10, 0, 0, 200)),
            sport: p,
            dport: 5001,
            proto: 6,
        };
        assert_eq!(t.rtt_of(&key(1, 40000)), Some(Duration::from_millis(80)));
        assert_eq!(t.rtt_of(&key(3, 40001)), Some(Duration::from_millis(160)));
        // Data from both clients, ACKs from the server advertising a
        // large window (0xFFFF << 7 bytes): over a few epochs the
        // controller computes F_k and the ACKs get it.
        let mut rewritten = Vec::new();
        for i in 0..400u64 {
            now += Duration::from_millis(2);
            for (c, p) in [(1u8, 40000u16), (3, 40001)] {
                let mut d = ip(c, 200, (p, 5001), Flags::ACK, 502, None, MSS as usize);
                assert_eq!(t.on_packet(now, &mut d, 10, 10), Verdict::Passed);
                let mut a = ip(200, c, (5001, p), Flags::ACK, 0xFFFF, None, 0);
                let v = t.on_packet(now, &mut a, 10, 10);
                // Every ACK leaves with a valid checksum.
                let (_, r) = tcp_of(&a);
                if let Verdict::Rewritten { old, new } = v {
                    assert_eq!((old, r.window), (0xFFFF, new));
                    assert!(new < old);
                    if i == 399 {
                        rewritten.push((c, u64::from(new) << 7));
                    }
                }
            }
        }
        let groups = t.refwa().groups();
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0].rtt, Duration::from_millis(80));
        assert_eq!(groups[1].rtt, Duration::from_millis(160));
        // The ACK carries F_k packets of the flow's group (in MSS units,
        // through the shift of 7), the longer RTT the larger window
        // (α = 1: windows proportional to RTT, paper 003 eq. 3).
        assert_eq!(rewritten.len(), 2, "{rewritten:?}");
        for (c, bytes) in &rewritten {
            let k = key(*c, if *c == 1 { 40000 } else { 40001 });
            let f = t.refwa().window_of(&k).unwrap();
            assert_eq!(*bytes, (f.floor() as u64 * u64::from(MSS)) >> 7 << 7);
        }
        assert!(rewritten[0].1 < rewritten[1].1);
        assert!(t.stats().rewritten > 0);
    }

    /// A connection is forgotten after both FINs or a RST, and SYNs past
    /// `MAX_CONNS` open connections are passed without being followed.
    #[test]
    fn connections_end_with_fin_or_rst_and_the_table_is_bounded() {
        let mut t = TcpRefwa::new(cfg(), Instant::ZERO);
        let rtt = Duration::from_millis(80);
        let now = handshake(&mut t, 1, 40000, Instant::ZERO, rtt);
        let now = handshake(&mut t, 3, 40001, now, rtt);
        assert_eq!(t.connections(), 2);
        // Client 1 closes, the server closes: forgotten.
        let mut f = ip(1, 200, (40000, 5001), Flags::ACK | Flags::FIN, 502, None, 0);
        assert_eq!(t.on_packet(now, &mut f, 0, 0), Verdict::Passed);
        assert_eq!(t.connections(), 2);
        let mut f = ip(200, 1, (5001, 40000), Flags::ACK | Flags::FIN, 502, None, 0);
        t.on_packet(now, &mut f, 0, 0);
        assert_eq!(t.connections(), 1);
        // The server resets client 3's connection.
        let mut r = ip(200, 3, (5001, 40001), Flags::RST, 0, None, 0);
        assert_eq!(t.on_packet(now, &mut r, 0, 0), Verdict::Passed);
        assert_eq!(t.connections(), 0);
        // A flood of SYNs from distinct ports fills the table and no more.
        for port in 0..(MAX_CONNS + 50) as u32 {
            let p = 1024 + (port % 60_000) as u16;
            let c = 10 + (port / 60_000) as u8;
            let mut syn = ip(c, 200, (p, 5001), Flags::SYN, 0xFFFF, Some(7), 0);
            t.on_packet(now, &mut syn, 0, 0);
        }
        assert_eq!(t.connections(), MAX_CONNS);
        assert_eq!(t.stats().untracked, 50);
    }

    #[test]
    fn unseen_handshake_non_tcp_and_malformed_pass_unchanged() {
        let mut t = TcpRefwa::new(cfg(), Instant::ZERO);
        let mut a = ip(200, 1, (5001, 40000), Flags::ACK, 9, None, 0);
        let before = a.clone();
        assert_eq!(t.on_packet(Instant::ZERO, &mut a, 0, 0), Verdict::Passed);
        assert_eq!(a, before);
        let mut udp = before.clone();
        udp[9] = 17;
        assert_eq!(t.on_packet(Instant::ZERO, &mut udp, 0, 0), Verdict::NotTcp);
        let mut bad = before.clone();
        bad[30] ^= 1; // TCP checksum no longer matches
        assert_eq!(
            t.on_packet(Instant::ZERO, &mut bad, 0, 0),
            Verdict::Malformed
        );
        for n in 0..before.len() {
            let mut cut = before[..n].to_vec();
            assert_ne!(
                t.on_packet(Instant::ZERO, &mut cut, 0, 0),
                Verdict::Passed,
                "{n}"
            );
        }
        assert_eq!(t.stats().not_tcp, 1);
    }
}
