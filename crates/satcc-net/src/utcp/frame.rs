//! Ethernet, ARP (RFC 826) and IPv4 (RFC 791) around the TCP segments of
//! the userspace sender: just what one unicast IPv4 flow on a veth device
//! needs. Every parse checks lengths first; nothing here panics on a
//! frame off the wire.

use std::net::Ipv4Addr;

use satcc_proto::wire::checksum;

/// Ethernet header bytes.
pub const ETH_HEADER: usize = 14;
/// IPv4 header bytes (we send no IP options).
pub const IP_HEADER: usize = 20;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
/// The broadcast MAC address.
pub const BROADCAST: [u8; 6] = [0xFF; 6];

/// An ARP packet for IPv4 over Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arp {
    /// 1 request, 2 reply.
    pub op: u16,
    /// Sender hardware address.
    pub sha: [u8; 6],
    /// Sender protocol address.
    pub spa: Ipv4Addr,
    /// Target hardware address.
    pub tha: [u8; 6],
    /// Target protocol address.
    pub tpa: Ipv4Addr,
}

/// An ARP request.
pub const ARP_REQUEST: u16 = 1;
/// An ARP reply.
pub const ARP_REPLY: u16 = 2;

/// What a received frame holds, for the sender.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// An ARP packet.
    Arp(Arp),
    /// An IPv4 packet with a valid header checksum, not a fragment:
    /// source, destination, protocol, TOS, and the payload (cut to the
    /// packet's total length).
    Ipv4 {
        /// Source address.
        src: Ipv4Addr,
        /// Destination address.
        dst: Ipv4Addr,
        /// Protocol number.
        proto: u8,
        /// TOS byte (DSCP and ECN).
        tos: u8,
        /// The IP payload.
        payload: &'a [u8],
    },
    /// Another Ethernet type (IPv6, ...): not ours.
    Other,
    /// Too short, a bad header checksum, a fragment or a bad length.
    Malformed,
}

fn ip(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

/// Parses a frame.
pub fn parse(frame: &[u8]) -> Frame<'_> {
    if frame.len() < ETH_HEADER {
        return Frame::Malformed;
    }
    let body = &frame[ETH_HEADER..];
    match u16::from_be_bytes([frame[12], frame[13]]) {
        ETHERTYPE_ARP => {
            // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4.
            if body.len() < 28 || body[0..6] != [0, 1, 8, 0, 6, 4] {
                return Frame::Malformed;
            }
            let mut sha = [0; 6];
            let mut tha = [0; 6];
            sha.copy_from_slice(&body[8..14]);
            tha.copy_from_slice(&body[18..24]);
            Frame::Arp(Arp {
                op: u16::from_be_bytes([body[6], body[7]]),
                sha,
                spa: ip(&body[14..18]),
                tha,
                tpa: ip(&body[24..28]),
            })
        }
        ETHERTYPE_IPV4 => {
            if body.len() < IP_HEADER || body[0] >> 4 != 4 {
                return Frame::Malformed;
            }
            let ihl = usize::from(body[0] & 15) * 4;
            let total = usize::from(u16::from_be_bytes([body[2], body[3]]));
            if ihl < IP_HEADER || total < ihl || total > body.len() {
                return Frame::Malformed;
            }
            if !checksum::verify(&body[..ihl]) {
                return Frame::Malformed;
            }
            // More-fragments or an offset: we never send anything that
            // needs fragmenting (DF), so a fragment is not ours.
            if u16::from_be_bytes([body[6], body[7]]) & 0x3FFF != 0 {
                return Frame::Malformed;
            }
            Frame::Ipv4 {
                src: ip(&body[12..16]),
                dst: ip(&body[16..20]),
                proto: body[9],
                tos: body[1],
                payload: &body[ihl..total],
            }
        }
        _ => Frame::Other,
    }
}

/// Writes an Ethernet header into `buf[..14]`.
fn eth(buf: &mut [u8], dst: [u8; 6], src: [u8; 6], ethertype: u16) {
    buf[0..6].copy_from_slice(&dst);
    buf[6..12].copy_from_slice(&src);
    buf[12..14].copy_from_slice(&ethertype.to_be_bytes());
}

/// An ARP frame (padded to Ethernet's 60-byte minimum).
pub fn arp_frame(dst_mac: [u8; 6], a: &Arp) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    eth(&mut f, dst_mac, a.sha, ETHERTYPE_ARP);
    let b = &mut f[ETH_HEADER..];
    b[0..6].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
    b[6..8].copy_from_slice(&a.op.to_be_bytes());
    b[8..14].copy_from_slice(&a.sha);
    b[14..18].copy_from_slice(&a.spa.octets());
    b[18..24].copy_from_slice(&a.tha);
    b[24..28].copy_from_slice(&a.tpa.octets());
    f
}

/// The addresses of one IPv4 flow on Ethernet.
#[derive(Clone, Copy, Debug)]
pub struct Path {
    /// Our MAC address.
    pub src_mac: [u8; 6],
    /// The next hop's.
    pub dst_mac: [u8; 6],
    /// Our IPv4 address.
    pub src: Ipv4Addr,
    /// The peer's.
    pub dst: Ipv4Addr,
}

/// Writes the Ethernet and IPv4 headers of a packet carrying `l4_len`
/// bytes of protocol `proto` into `buf[..34]`, with TOS `tos` and
/// identification `id`; Don't Fragment set (RFC 791 §3.1; Path MTU
/// discovery as Linux's TCP does, RFC 1191), TTL 64.
pub fn ipv4_headers(buf: &mut [u8], p: &Path, proto: u8, tos: u8, id: u16, l4_len: usize) {
    eth(buf, p.dst_mac, p.src_mac, ETHERTYPE_IPV4);
    let h = &mut buf[ETH_HEADER..ETH_HEADER + IP_HEADER];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&((IP_HEADER + l4_len) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[10..12].copy_from_slice(&[0, 0]);
    h[12..16].copy_from_slice(&p.src.octets());
    h[16..20].copy_from_slice(&p.dst.octets());
    let c = checksum::complement(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arp_round_trip_and_garbage() {
        let a = Arp {
            op: ARP_REQUEST,
            sha: [2, 0, 0, 0, 0, 1],
            spa: Ipv4Addr::new(100, 64, 0, 3),
            tha: [0; 6],
            tpa: Ipv4Addr::new(100, 64, 0, 2),
        };
        let f = arp_frame(BROADCAST, &a);
        assert_eq!(parse(&f), Frame::Arp(a));
        assert_eq!(parse(&f[..20]), Frame::Malformed);
        assert_eq!(parse(&[]), Frame::Malformed);
    }

    #[test]
    fn ipv4_headers_parse_back_and_a_bad_checksum_is_caught() {
        let p = Path {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: Ipv4Addr::new(100, 64, 0, 3),
            dst: Ipv4Addr::new(100, 64, 0, 2),
        };
        let mut f = vec![0u8; ETH_HEADER + IP_HEADER + 8];
        ipv4_headers(&mut f, &p, 6, 0x04, 7, 8);
        f[ETH_HEADER + IP_HEADER..].copy_from_slice(b"abcdefgh");
        match parse(&f) {
            Frame::Ipv4 {
                src,
                dst,
                proto,
                tos,
                payload,
            } => {
                assert_eq!((src, dst, proto, tos), (p.src, p.dst, 6, 0x04));
                assert_eq!(payload, b"abcdefgh");
            }
            other => panic!("{other:?}"),
        }
        // Trailing Ethernet padding is cut off by the total length.
        let mut padded = f.clone();
        padded.extend_from_slice(&[0; 6]);
        assert!(matches!(parse(&padded), Frame::Ipv4 { payload, .. } if payload.len() == 8));
        f[ETH_HEADER + 8] ^= 1; // TTL: the header checksum fails
        assert_eq!(parse(&f), Frame::Malformed);
    }
}
