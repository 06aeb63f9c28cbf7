//! A pcap writer for simulated packets, so that a run can be inspected with
//! Wireshark/tshark (`tcptrace`, `tshark -z`, stream graphs).
//!
//! Format: classic libpcap (<https://wiki.wireshark.org/Development/LibpcapFileFormat>,
//! IETF draft-ietf-opsawg-pcap) with the nanosecond-resolution magic
//! `0xa1b23c4d`, written little-endian, snaplen 65535, link type
//! `LINKTYPE_RAW` (101: the packet starts with the IP header; understood by
//! every libpcap and Wireshark version, unlike `LINKTYPE_IPV4` 228).
//!
//! Each record holds synthesised IPv4 (RFC 791) and TCP (RFC 9293, with
//! SACK RFC 2018 and timestamps RFC 7323 options) or UDP (RFC 768)
//! headers and no payload: the captured length is the headers only, the
//! original length is headers + payload, as a capture with a short snaplen
//! would record it. The IPv4 total length is headers + `payload_len`, so
//! Wireshark's `tcp.len` equals the simulated payload exactly (and its
//! sequence analysis works), even when the synthesised options make the
//! header longer than the simulation's nominal header bytes.

use std::io::{self, Write};

use satcc_proto::wire::checksum;

/// Link type: raw IP (LINKTYPE_RAW).
pub const LINKTYPE_RAW: u32 = 101;
/// pcap magic for nanosecond timestamps.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Snapshot length written in the file header.
pub const SNAPLEN: u32 = 65_535;

/// A TCP segment to record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpPcap {
    /// Source IPv4 address.
    pub src_ip: [u8; 4],
    /// Destination IPv4 address.
    pub dst_ip: [u8; 4],
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number (32-bit byte number, wraps).
    pub seq: u32,
    /// Acknowledgment number (32-bit byte number).
    pub ack: u32,
    /// ACK flag.
    pub ack_flag: bool,
    /// PSH flag.
    pub psh: bool,
    /// SYN flag.
    pub syn: bool,
    /// FIN flag.
    pub fin: bool,
    /// Advertised window (unscaled).
    pub window: u16,
    /// SACK blocks (left edge, right edge); at most 4 fit, 3 with a
    /// timestamp option; extra blocks are not written.
    pub sack: Vec<(u32, u32)>,
    /// Timestamp option (TSval, TSecr), if any.
    pub timestamp: Option<(u32, u32)>,
    /// IP time to live (0 is written as 64).
    pub ttl: u8,
    /// Payload bytes carried (not captured).
    pub payload_len: u32,
}

/// A UDP datagram to record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpPcap {
    /// Source IPv4 address.
    pub src_ip: [u8; 4],
    /// Destination IPv4 address.
    pub dst_ip: [u8; 4],
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// IP time to live (0 is written as 64).
    pub ttl: u8,
    /// Payload bytes carried (not captured).
    pub payload_len: u32,
}

/// IPv4 protocol numbers.
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

/// A 20-byte IPv4 header with a correct checksum. The total length
/// saturates at 65535.
fn ipv4_header(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    ttl: u8,
    id: u16,
    total_len: u64,
) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45; // version 4, IHL 5 words
    h[1] = 0; // DSCP/ECN
    let tl = total_len.min(65_535) as u16;
    h[2..4].copy_from_slice(&tl.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = 0x40; // DF, fragment offset 0
    h[8] = if ttl == 0 { 64 } else { ttl };
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = checksum::complement(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// The TCP header with options (no checksum: there is no payload to sum).
fn tcp_header(t: &TcpPcap) -> Vec<u8> {
    let mut opts: Vec<u8> = Vec::new();
    if let Some((val, ecr)) = t.timestamp {
        // RFC 7323 Appendix A layout: NOP, NOP, TS.
        opts.extend_from_slice(&[1, 1, 8, 10]);
        opts.extend_from_slice(&val.to_be_bytes());
        opts.extend_from_slice(&ecr.to_be_bytes());
    }
    if !t.sack.is_empty() {
        let room = (40 - opts.len() - 4) / 8; // NOP NOP kind len
        let n = t.sack.len().min(room).min(4);
        if n > 0 {
            opts.extend_from_slice(&[1, 1, 5, (2 + 8 * n) as u8]);
            for &(l, r) in &t.sack[..n] {
                opts.extend_from_slice(&l.to_be_bytes());
                opts.extend_from_slice(&r.to_be_bytes());
            }
        }
    }
    let len = 20 + opts.len(); // a multiple of 4 by construction
    let mut h = vec![0u8; 20];
    h[0..2].copy_from_slice(&t.src_port.to_be_bytes());
    h[2..4].copy_from_slice(&t.dst_port.to_be_bytes());
    h[4..8].copy_from_slice(&t.seq.to_be_bytes());
    h[8..12].copy_from_slice(&t.ack.to_be_bytes());
    h[12] = ((len / 4) as u8) << 4;
    let mut flags = 0u8;
    if t.fin {
        flags |= 0x01;
    }
    if t.syn {
        flags |= 0x02;
    }
    if t.psh {
        flags |= 0x08;
    }
    if t.ack_flag {
        flags |= 0x10;
    }
    h[13] = flags;
    h[14..16].copy_from_slice(&t.window.to_be_bytes());
    h.extend_from_slice(&opts);
    h
}

/// Writes simulated packets as a pcap file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    w: W,
    ip_id: u16,
    records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header and returns the writer.
    pub fn new(mut w: W) -> io::Result<Self> {
        let mut hdr = Vec::with_capacity(24);
        hdr.extend_from_slice(&MAGIC_NANOS.to_le_bytes());
        hdr.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
        hdr.extend_from_slice(&4u16.to_le_bytes());
        hdr.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        hdr.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        hdr.extend_from_slice(&SNAPLEN.to_le_bytes());
        hdr.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        w.write_all(&hdr)?;
        Ok(PcapWriter {
            w,
            ip_id: 0,
            records: 0,
        })
    }

    fn record(&mut self, ts_ns: u64, bytes: &[u8], orig_len: u64) -> io::Result<()> {
        let secs = (ts_ns / 1_000_000_000).min(u64::from(u32::MAX)) as u32;
        let nanos = (ts_ns % 1_000_000_000) as u32;
        let cap = bytes.len().min(SNAPLEN as usize);
        let mut rec = Vec::with_capacity(16 + cap);
        rec.extend_from_slice(&secs.to_le_bytes());
        rec.extend_from_slice(&nanos.to_le_bytes());
        rec.extend_from_slice(&(cap as u32).to_le_bytes());
        let orig = orig_len.max(cap as u64).min(u64::from(u32::MAX)) as u32;
        rec.extend_from_slice(&orig.to_le_bytes());
        rec.extend_from_slice(&bytes[..cap]);
        self.w.write_all(&rec)?;
        self.records += 1;
        Ok(())
    }

    /// Records a TCP segment seen at `ts_ns` nanoseconds of simulated time.
    pub fn write_tcp(&mut self, ts_ns: u64, hdr: &TcpPcap) -> io::Result<()> {
        let bytes = tcp_packet_bytes(hdr, self.ip_id);
        self.ip_id = self.ip_id.wrapping_add(1);
        let orig = bytes.len() as u64 + u64::from(hdr.payload_len);
        self.record(ts_ns, &bytes, orig)
    }

    /// Records a UDP datagram seen at `ts_ns` nanoseconds of simulated time.
    pub fn write_udp(&mut self, ts_ns: u64, hdr: &UdpPcap) -> io::Result<()> {
        let bytes = udp_packet_bytes(hdr, self.ip_id);
        self.ip_id = self.ip_id.wrapping_add(1);
        let orig = bytes.len() as u64 + u64::from(hdr.payload_len);
        self.record(ts_ns, &bytes, orig)
    }

    /// Records a real UDP datagram at `ts_ns`, captured whole: synthesised
    /// IPv4 and UDP headers (`hdr`, whose `payload_len` is ignored)
    /// followed by `payload`, so a dissector (DCCP over UDP, say) sees the
    /// datagram's bytes. Used by the link emulator, which has them.
    pub fn write_udp_payload(
        &mut self,
        ts_ns: u64,
        hdr: &UdpPcap,
        payload: &[u8],
    ) -> io::Result<()> {
        let h = UdpPcap {
            payload_len: payload.len() as u32,
            ..hdr.clone()
        };
        let mut bytes = udp_packet_bytes(&h, self.ip_id);
        self.ip_id = self.ip_id.wrapping_add(1);
        bytes.extend_from_slice(payload);
        let orig = bytes.len() as u64;
        self.record(ts_ns, &bytes, orig)
    }

    /// Records a real IP packet at `ts_ns`, whole (up to the snap
    /// length): `satcc shell` captures what its link delivered.
    pub fn write_ip(&mut self, ts_ns: u64, packet: &[u8]) -> io::Result<()> {
        self.record(ts_ns, packet, packet.len() as u64)
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

/// The captured bytes (IPv4 + TCP headers) of a segment, with IP
/// identification `ip_id`.
pub fn tcp_packet_bytes(t: &TcpPcap, ip_id: u16) -> Vec<u8> {
    let tcp = tcp_header(t);
    let total = 20 + tcp.len() as u64 + u64::from(t.payload_len);
    let mut v = ipv4_header(t.src_ip, t.dst_ip, PROTO_TCP, t.ttl, ip_id, total).to_vec();
    v.extend_from_slice(&tcp);
    v
}

/// The captured bytes (IPv4 + UDP headers) of a datagram, with IP
/// identification `ip_id`. The UDP checksum is 0 ("none", RFC 768).
pub fn udp_packet_bytes(u: &UdpPcap, ip_id: u16) -> Vec<u8> {
    let udp_len = 8 + u64::from(u.payload_len);
    let total = 20 + udp_len;
    let mut v = ipv4_header(u.src_ip, u.dst_ip, PROTO_UDP, u.ttl, ip_id, total).to_vec();
    v.extend_from_slice(&u.src_port.to_be_bytes());
    v.extend_from_slice(&u.dst_port.to_be_bytes());
    v.extend_from_slice(&(udp_len.min(65_535) as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg() -> TcpPcap {
        TcpPcap {
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 1, 1],
            src_port: 40000,
            dst_port: 5001,
            seq: 4_000_000_000,
            ack: 12345,
            ack_flag: true,
            psh: true,
            window: 65535,
            sack: vec![(1000, 2000), (3000, 4000)],
            timestamp: Some((77, 66)),
            ttl: 0,
            payload_len: 1460,
            ..Default::default()
        }
    }

    #[test]
    fn file_header_and_record_lengths() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_tcp(1_500_000_123, &seg()).unwrap();
        let b = w.into_inner().unwrap();
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 65535);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 101);
        let r = &b[24..];
        assert_eq!(u32::from_le_bytes(r[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(r[4..8].try_into().unwrap()), 500_000_123);
        let cap = u32::from_le_bytes(r[8..12].try_into().unwrap());
        let orig = u32::from_le_bytes(r[12..16].try_into().unwrap());
        // IP 20 + TCP 20 + TS 12 + SACK(2 blocks) 20 = 72 captured.
        assert_eq!(cap, 72);
        assert_eq!(orig, 72 + 1460);
        assert_eq!(b.len(), 24 + 16 + 72);
    }

    #[test]
    fn headers_parse_back() {
        let b = tcp_packet_bytes(&seg(), 7);
        assert_eq!(b[0], 0x45);
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 72 + 1460);
        assert_eq!(u16::from_be_bytes([b[4], b[5]]), 7);
        assert_eq!(b[8], 64);
        assert_eq!(b[9], 6);
        // A correct header sums to 0 (RFC 1071).
        assert!(checksum::verify(&b[..20]));
        let t = &b[20..];
        assert_eq!(u16::from_be_bytes([t[0], t[1]]), 40000);
        assert_eq!(
            u32::from_be_bytes(t[4..8].try_into().unwrap()),
            4_000_000_000
        );
        assert_eq!(u32::from_be_bytes(t[8..12].try_into().unwrap()), 12345);
        assert_eq!(t[12] >> 4, 13); // 52 bytes
        assert_eq!(t[13], 0x18); // ACK|PSH
                                 // Options: NOP NOP TS(8,10) then NOP NOP SACK(5, 18).
        assert_eq!(&t[20..24], &[1, 1, 8, 10]);
        assert_eq!(&t[32..36], &[1, 1, 5, 18]);
        assert_eq!(u32::from_be_bytes(t[36..40].try_into().unwrap()), 1000);
        assert_eq!(u32::from_be_bytes(t[48..52].try_into().unwrap()), 4000);

        // Too many SACK blocks: 3 fit with a timestamp, 4 without.
        let mut s = seg();
        s.sack = (0..6).map(|i| (i * 10, i * 10 + 5)).collect();
        assert_eq!(tcp_packet_bytes(&s, 0).len(), 20 + 20 + 12 + 4 + 24);
        s.timestamp = None;
        assert_eq!(tcp_packet_bytes(&s, 0).len(), 20 + 20 + 4 + 32);

        let u = udp_packet_bytes(
            &UdpPcap {
                src_ip: [1, 2, 3, 4],
                dst_ip: [5, 6, 7, 8],
                src_port: 7,
                dst_port: 9,
                ttl: 5,
                payload_len: 100,
            },
            1,
        );
        assert_eq!(u.len(), 28);
        assert!(checksum::verify(&u[..20]));
        assert_eq!(u16::from_be_bytes([u[2], u[3]]), 128);
        assert_eq!(u16::from_be_bytes([u[24], u[25]]), 108);
        assert_eq!(u[8], 5);

        // A huge payload saturates the IP length rather than wrapping.
        let mut s = seg();
        s.payload_len = u32::MAX;
        let b = tcp_packet_bytes(&s, 0);
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 65535);
        assert!(checksum::verify(&b[..20]));
    }

    /// Reads the file back with tshark (the CI installs it).
    #[test]
    fn tshark_reads_the_file() {
        let ok = std::process::Command::new("tshark")
            .arg("--version")
            .output();
        assert!(
            ok.map(|o| o.status.success()).unwrap_or(false),
            "tshark is not installed: install it (apt-get install tshark) to run this test"
        );
        let dir = std::env::temp_dir().join(format!("satcc-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let f = std::fs::File::create(&path).unwrap();
        let mut w = PcapWriter::new(std::io::BufWriter::new(f)).unwrap();
        w.write_tcp(1_000_000_000, &seg()).unwrap();
        w.write_udp(
            2_000_000_500,
            &UdpPcap {
                src_ip: [192, 168, 1, 2],
                dst_ip: [192, 168, 1, 3],
                src_port: 1234,
                dst_port: 7777,
                ttl: 9,
                payload_len: 500,
            },
        )
        .unwrap();
        w.into_inner().unwrap();
        let out = std::process::Command::new("tshark")
            .args(["-r", path.to_str().unwrap(), "-n"])
            .args(["-o", "tcp.relative_sequence_numbers:FALSE"])
            .args(["-o", "ip.check_checksum:TRUE"])
            .args(["-T", "fields", "-E", "separator=;"])
            .args([
                "-e",
                "frame.time_epoch",
                "-e",
                "frame.len",
                "-e",
                "frame.cap_len",
            ])
            .args([
                "-e",
                "ip.src",
                "-e",
                "ip.dst",
                "-e",
                "ip.len",
                "-e",
                "ip.checksum.status",
            ])
            .args([
                "-e",
                "tcp.seq",
                "-e",
                "tcp.ack",
                "-e",
                "tcp.len",
                "-e",
                "tcp.flags",
            ])
            .args(["-e", "tcp.options.sack_le", "-e", "tcp.options.sack_re"])
            .args([
                "-e",
                "tcp.options.timestamp.tsval",
                "-e",
                "udp.dstport",
                "-e",
                "udp.length",
            ])
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "tshark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // ip.checksum.status: 1 = good (Wireshark proto_checksum_enum_e).
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(';').collect()).collect();
        assert_eq!(lines.len(), 2, "{text}");
        let t = &lines[0];
        assert!(t[0].starts_with("1.000000000"), "{text}");
        assert_eq!(
            &t[1..7],
            &["1532", "72", "10.0.0.1", "10.0.1.1", "1532", "1"],
            "{text}"
        );
        assert_eq!(&t[7..10], &["4000000000", "12345", "1460"], "{text}");
        assert_eq!(t[10], "0x0018", "{text}");
        assert_eq!(t[11], "1000,3000", "{text}");
        assert_eq!(t[12], "2000,4000", "{text}");
        assert_eq!(t[13], "77", "{text}");
        let u = &lines[1];
        assert!(u[0].starts_with("2.0000005"), "{text}");
        assert_eq!(
            &u[1..7],
            &["528", "28", "192.168.1.2", "192.168.1.3", "528", "1"],
            "{text}"
        );
        assert_eq!(&u[14..16], &["7777", "508"], "{text}");
    }
}
