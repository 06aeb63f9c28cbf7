//! BEACON frames (draft §4.1): announcing a Saratoga peer on a link and
//! discovering the peers that announce themselves.
//!
//! A BEACON says who a peer is (its endpoint identifier, EID), whether
//! it is willing to send and to receive files, the largest descriptor it
//! supports and, optionally, its free space. It starts no transfer and
//! needs no answer, so [`send_beacons`] just sends them (to a unicast or
//! broadcast address) and [`listen_beacons`] just collects them, in a
//! bounded table, dropping and counting anything else.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use satcc_proto::saratoga::wire::{self, DescriptorSize, Frame, Repr};
use serde::Serialize;

/// Longest EID sent or shown (the rest of a received one is cut).
pub const MAX_EID: usize = 256;

/// Peers a listener remembers at most (bounded memory whatever arrives;
/// beyond it new peers are counted, not stored).
pub const MAX_PEERS: usize = 1024;

/// Willingness (§4.1 bits 12-13 and 14-15): 0 no, 2 capable, 3 yes.
pub const WILLING_YES: u8 = 3;

/// What a peer's BEACON said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PeerInfo {
    /// Where it came from.
    pub addr: String,
    /// Its endpoint identifier (lossy UTF-8, at most [`MAX_EID`] bytes).
    pub eid: String,
    /// Willing to send files: 0 no, 2 capable, 3 yes.
    pub tx_willing: u8,
    /// Willing to receive files.
    pub rx_willing: u8,
    /// Largest descriptor supported, in bits.
    pub descriptor_bits: u32,
    /// Free space advertised, kilobytes.
    pub free_space_kb: Option<u64>,
    /// Streams supported.
    pub streams: bool,
    /// BEACONs received from this address.
    pub beacons: u64,
}

/// The BEACON frame announcing `eid`: willing to send and receive,
/// 64-bit descriptors (the largest this implementation sends; it reads
/// 128-bit ones whose values fit 64 bits), and `free_space_kb` if given.
pub fn beacon_frame(eid: &str, free_space_kb: Option<u64>, tx: u8, rx: u8) -> Vec<u8> {
    let eid = eid.as_bytes();
    let eid = &eid[..eid.len().min(MAX_EID)];
    Repr::Beacon(wire::Beacon {
        descriptor: DescriptorSize::D64,
        streams: false,
        tx_willing: tx & 3,
        rx_willing: rx & 3,
        udp_lite: false,
        free_space: free_space_kb.map(|kb| (DescriptorSize::smallest_for(kb), kb)),
        eid: eid.to_vec(),
    })
    .to_vec()
    .unwrap_or_default()
}

/// Free space of the file system holding `dir`, kilobytes available to
/// an unprivileged user.
pub fn free_space_kb(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs writes into the zeroed struct it is given and
        // reads the NUL-terminated path.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64) / 1024)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// Sends `count` BEACONs (`frame`) to `to`, `interval` apart, or until
/// `stop`. A broadcast destination is allowed. Returns how many were sent.
pub fn send_beacons(
    to: SocketAddr,
    frame: &[u8],
    count: u64,
    interval: StdDuration,
    stop: &AtomicBool,
) -> io::Result<u64> {
    let bind = crate::client_bind_addr(to);
    let sock = UdpSocket::bind(bind)?;
    sock.set_broadcast(true)?;
    let mut sent = 0;
    while sent < count && !stop.load(Ordering::Relaxed) {
        sock.send_to(frame, to)?;
        sent += 1;
        if sent < count {
            sleep_unless(stop, interval);
        }
    }
    Ok(sent)
}

/// Sleeps `d`, waking every 50 ms to check `stop`.
fn sleep_unless(stop: &AtomicBool, d: StdDuration) {
    let end = StdInstant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let now = StdInstant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(StdDuration::from_millis(50)));
    }
}

/// What a listener counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ListenCounters {
    /// BEACONs received.
    pub beacons: u64,
    /// Datagrams that were not BEACON frames (malformed or other types).
    pub other: u64,
    /// BEACONs of new peers not stored because the table was full.
    pub peers_dropped: u64,
}

/// Listens on `sock` for BEACONs for `duration` (or until `stop`),
/// calling `on_beacon(peer, new)` for each (`new`: the first from that
/// address). Returns the peers seen (at most [`MAX_PEERS`]) and counters.
pub fn listen_beacons(
    sock: &UdpSocket,
    duration: StdDuration,
    stop: &AtomicBool,
    on_beacon: &mut dyn FnMut(&PeerInfo, bool),
) -> io::Result<(Vec<PeerInfo>, ListenCounters)> {
    let mut peers: HashMap<SocketAddr, PeerInfo> = HashMap::new();
    let mut c = ListenCounters::default();
    let end = StdInstant::now() + duration;
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        let now = StdInstant::now();
        if now >= end {
            break;
        }
        sock.set_read_timeout(Some(
            (end - now).clamp(StdDuration::from_millis(1), StdDuration::from_millis(50)),
        ))?;
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        let b = match Frame::new_checked(&buf[..n]).and_then(|f| Repr::parse(&f)) {
            Ok(Repr::Beacon(b)) => b,
            _ => {
                c.other += 1;
                continue;
            }
        };
        c.beacons += 1;
        let eid = &b.eid[..b.eid.len().min(MAX_EID)];
        let info = PeerInfo {
            addr: from.to_string(),
            eid: String::from_utf8_lossy(eid).into_owned(),
            tx_willing: b.tx_willing,
            rx_willing: b.rx_willing,
            descriptor_bits: 8 * b.descriptor.bytes() as u32,
            free_space_kb: b.free_space.map(|f| f.1),
            streams: b.streams,
            beacons: 1,
        };
        let full = peers.len() >= MAX_PEERS;
        match peers.get_mut(&from) {
            Some(p) => {
                let count = p.beacons + 1;
                *p = PeerInfo {
                    beacons: count,
                    ..info
                };
                on_beacon(p, false);
            }
            None if !full => {
                on_beacon(&info, true);
                peers.insert(from, info);
            }
            None => c.peers_dropped += 1,
        }
    }
    let mut v: Vec<PeerInfo> = peers.into_values().collect();
    v.sort_by(|a, b| a.addr.cmp(&b.addr));
    Ok((v, c))
}

/// A willingness value as the draft names it.
pub fn willing_text(w: u8) -> &'static str {
    match w {
        0 => "no",
        2 => "capable",
        3 => "yes",
        _ => "invalid",
    }
}
