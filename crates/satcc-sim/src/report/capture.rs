//! Packet capture of one link: pcap with synthesised IPv4 and TCP/UDP
//! headers, so tshark and Wireshark can analyse a simulated run.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use satcc_proto::Instant;

use crate::net::packet::{Message, Packet};
use crate::partial::Partial;
use crate::report::pcap::{PcapWriter, TcpPcap, UdpPcap};

/// A pcap file being written for one link.
#[derive(Debug)]
pub(crate) struct LinkCapture {
    w: Option<PcapWriter<BufWriter<File>>>,
    error: Option<String>,
    /// The final name, and the name written until the capture is whole
    /// (`None` once [`LinkCapture::finish`] renamed or removed it). After
    /// `w`, so that dropping closes the file before removing it.
    file: Option<Partial>,
}

/// Node `id` as an address in 10.0.0.0/8 (10.0.0.1 is node 0).
fn node_ip(id: u32) -> [u8; 4] {
    let n = id + 1;
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

/// Flow `id`'s port at its sender; receivers listen on 5001 (as iperf).
fn sender_port(id: u32) -> u16 {
    (1024 + id % 60_000) as u16
}

const RECEIVER_PORT: u16 = 5001;

impl LinkCapture {
    /// Captures into `.LINK.pcap.partial` in `dir`; [`Self::finish`]
    /// renames it to `LINK.pcap` once it is complete, so a run that fails
    /// or is interrupted never leaves a partial file under the final name.
    pub(crate) fn create(dir: &Path, link: &str) -> std::io::Result<Self> {
        let file = Partial::beside(dir.join(format!("{link}.pcap")));
        let f = file.create()?;
        Ok(LinkCapture {
            w: Some(PcapWriter::new(BufWriter::new(f))?),
            error: None,
            file: Some(file),
        })
    }

    pub(crate) fn record(&mut self, now: Instant, p: &Packet, flow: u32, mss: u32) {
        let Some(w) = self.w.as_mut() else { return };
        // Sequence numbers in bytes, wrapping as real TCP's do; segment n
        // starts at byte n*mss (+1 to leave room for a notional SYN).
        let bytes = |seg: u64| (seg.wrapping_mul(u64::from(mss)) as u32).wrapping_add(1);
        let ms = |t: Instant| (t.as_nanos() / 1_000_000) as u32;
        let res = match &p.payload {
            Message::TcpData(d) => w.write_tcp(
                now.as_nanos(),
                &TcpPcap {
                    src_ip: node_ip(p.src),
                    dst_ip: node_ip(p.dst),
                    src_port: sender_port(flow),
                    dst_port: RECEIVER_PORT,
                    seq: bytes(d.seq),
                    ack: 1,
                    ack_flag: true,
                    psh: true,
                    syn: false,
                    fin: false,
                    window: 65535,
                    sack: Vec::new(),
                    timestamp: Some((ms(d.ts), 0)),
                    ttl: p.ttl,
                    payload_len: d.len,
                },
            ),
            Message::TcpAck(a) => w.write_tcp(
                now.as_nanos(),
                &TcpPcap {
                    src_ip: node_ip(p.src),
                    dst_ip: node_ip(p.dst),
                    src_port: RECEIVER_PORT,
                    dst_port: sender_port(flow),
                    seq: 1,
                    ack: bytes(a.ack),
                    ack_flag: true,
                    psh: false,
                    syn: false,
                    fin: false,
                    window: (u64::from(a.wnd) * u64::from(mss)).min(65535) as u16,
                    sack: a
                        .sack_blocks()
                        .iter()
                        .map(|b| (bytes(b.start), bytes(b.end)))
                        .collect(),
                    timestamp: Some((ms(now), ms(a.ts_echo))),
                    ttl: p.ttl,
                    payload_len: 0,
                },
            ),
            // Every datagram protocol goes out as UDP.
            _ => w.write_udp(
                now.as_nanos(),
                &UdpPcap {
                    src_ip: node_ip(p.src),
                    dst_ip: node_ip(p.dst),
                    src_port: if p.payload.is_reverse() {
                        RECEIVER_PORT
                    } else {
                        sender_port(flow)
                    },
                    dst_port: if p.payload.is_reverse() {
                        sender_port(flow)
                    } else {
                        RECEIVER_PORT
                    },
                    ttl: p.ttl,
                    payload_len: p.size.saturating_sub(28),
                },
            ),
        };
        if let Err(e) = res {
            // Keep simulating; report the capture failure at the end.
            self.error = Some(e.to_string());
            self.w = None;
        }
    }

    /// Flushes the file; the error, if writing failed at any point.
    pub(crate) fn finish(&mut self) -> Result<(), String> {
        let flushed = match self.w.take() {
            Some(w) => w.into_inner().map(drop).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        match (self.error.take(), flushed, self.file.take()) {
            (_, _, None) => Ok(()),
            (Some(e), _, Some(f)) | (None, Err(e), Some(f)) => {
                f.abandon();
                Err(e)
            }
            (None, Ok(()), Some(f)) => f.commit().map_err(|e| e.to_string()),
        }
    }
}
