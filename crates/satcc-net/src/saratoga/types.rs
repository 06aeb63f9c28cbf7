//! The public vocabulary of Saratoga transfers: how one runs
//! ([`TransferConfig`], [`ServeConfig`]), what it measured
//! ([`TransferReport`], [`SessionReport`], [`ServerCounters`],
//! [`Progress`]) and why it failed ([`TransferError`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use satcc_proto::saratoga::wire::{error_code, ChecksumType, TimestampType};
use satcc_proto::Duration;
use serde::Serialize;

/// The sending rate of a transfer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// A fixed rate in bits per second on the wire (plain Saratoga, for a
    /// dedicated link).
    Fixed(u64),
    /// STFRC (paper 000): TFRC-friendly, for a shared link.
    Stfrc,
}

/// How a transfer runs (client and server side).
#[derive(Clone, Debug, PartialEq)]
pub struct TransferConfig {
    /// Sending rate (for the side that sends).
    pub rate: Rate,
    /// Payload bytes per DATA frame.
    pub payload: u32,
    /// Checksum the sender computes over the file and the receiver
    /// verifies before it renames.
    pub checksum: ChecksumType,
    /// Give up after hearing nothing valid from the peer this long.
    pub inactivity_timeout: Duration,
    /// Refuse files larger than this.
    pub max_size: u64,
    /// Replace an existing file of the same name (else refused).
    pub overwrite: bool,
    /// The sender also requests a STATUS every this many DATA frames (0,
    /// the default: not by count). The draft leaves the frequency open
    /// (§4.4); a count ties the STATUS rate to the data rate, and on a
    /// narrow return path (`dmc`'s 38.4 kb/s) frequent STATUS frames queue
    /// there and delay the last one.
    pub status_every_frames: u32,
    /// STATUS requests per smoothed RTT for a fixed-rate sender
    /// (`SaratogaConfig::status_per_rtt`, default 1, paper 000 §5); STFRC
    /// asks once per RTT itself.
    pub status_per_rtt: f64,
    /// The least DATA frames between two requests of the per-RTT rule
    /// (`SaratogaConfig::status_min_frames`, default 100; 0: none).
    pub status_min_frames: u32,
    /// The return path's rate in bits/s, if known: STATUS requests are
    /// spaced so their STATUS frames use at most `status_share` of it.
    pub reverse_rate_bps: Option<u64>,
    /// The share of `reverse_rate_bps` STATUS frames may use (0.5).
    pub status_share: f64,
    /// The timestamp type the sender writes in STATUS-requesting DATA
    /// (§4.4), `None` for none. Default POSIX 64+32: the Go decoder
    /// refuses type 0 (local interpretation) and with it the whole frame.
    pub timestamp: Option<TimestampType>,
    /// Give up when the peer's STATUS frames acknowledge nothing new for
    /// this long (or [`TransferConfig::progress_timeout_rtts`] RTTs, if
    /// longer), even though they keep arriving.
    pub progress_timeout: Duration,
    /// The progress timeout in smoothed RTTs (0: the time alone).
    pub progress_timeout_rtts: u32,
    /// STFRC's X_recv estimate (`StfrcConfig::receive_rate`; paper 000's
    /// by default).
    pub stfrc_receive_rate: satcc_proto::stfrc::ReceiveRate,
    /// Which losses enter STFRC's p (`StfrcConfig::loss_filter`; all by
    /// default).
    pub stfrc_loss_filter: satcc_proto::stfrc::LossFilter,
    /// STFRC leaves the STATUS hole lists' serialization out of the
    /// equation's R (`StfrcConfig::exclude_hole_delay`; off by default).
    pub stfrc_exclude_hole_delay: bool,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig {
            rate: Rate::Stfrc,
            payload: 1024,
            checksum: ChecksumType::Sha1,
            inactivity_timeout: Duration::from_secs(30),
            max_size: 10_000_000_000,
            overwrite: false,
            status_every_frames: 0,
            status_per_rtt: 1.0,
            status_min_frames: 100,
            reverse_rate_bps: None,
            status_share: 0.5,
            timestamp: Some(TimestampType::Posix64_32),
            progress_timeout: Duration::from_secs(30),
            progress_timeout_rtts: 16,
            stfrc_receive_rate: satcc_proto::stfrc::ReceiveRate::Predicted,
            stfrc_loss_filter: satcc_proto::stfrc::LossFilter::All,
            stfrc_exclude_hole_delay: false,
        }
    }
}

/// What a finished transfer measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferReport {
    /// "put" or "get" (as the client saw it).
    pub direction: &'static str,
    /// File name on the wire.
    pub name: String,
    /// The peer.
    pub peer: String,
    /// File size in bytes.
    pub bytes: u64,
    /// From the first frame sent or received to completion, seconds.
    pub duration_s: f64,
    /// File bytes per second over that time, in bits per second.
    pub goodput_bps: f64,
    /// DATA frames sent (the sending side) or received.
    pub data_frames: u64,
    /// Payload bytes sent again (holes and probes); 0 on the receiving side.
    pub retransmitted_bytes: u64,
    /// Payload bytes sent in DATA frames, retransmissions included (0 on
    /// the receiving side).
    pub sent_bytes: u64,
    /// Bytes the receiver already held from an interrupted transfer of
    /// the same file and said so (a resume offer): not sent again.
    pub resumed_bytes: u64,
    /// STATUS frames received (sending side) or sent (receiving side).
    pub status_frames: u64,
    /// The rate controller's final loss event rate (STFRC), if any.
    pub loss_event_rate: Option<f64>,
    /// Smoothed RTT from timestamp echoes (sending side), seconds.
    pub srtt_s: Option<f64>,
    /// The checksum verified ("sha1", "md5", "crc32" or "none").
    pub checksum: &'static str,
}

/// Why a transfer failed.
#[derive(Debug)]
pub enum TransferError {
    /// A local problem: a file, a name, an argument.
    Local(String),
    /// The peer refused or aborted with a STATUS error code.
    Peer(u8),
    /// Nothing valid heard from the peer for this long.
    Timeout(Duration),
    /// The peer kept answering, but acknowledged nothing new for this
    /// long (`acked` of `total` bytes acknowledged).
    Stalled {
        /// How long nothing new was acknowledged.
        stalled: Duration,
        /// Bytes acknowledged from offset 0.
        acked: u64,
        /// The file's size.
        total: u64,
    },
    /// Receiving: the peer kept sending, but nothing new (`received` of
    /// `total` bytes there, from offset 0) for this long.
    Starved {
        /// How long no new byte arrived.
        stalled: Duration,
        /// Bytes received from offset 0.
        received: u64,
        /// The file's size, if METADATA told it.
        total: Option<u64>,
    },
    /// Every byte arrived but the checksum did not match.
    Integrity(String),
    /// The progress callback asked to stop.
    Cancelled,
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferError::Local(m) => write!(f, "{m}"),
            TransferError::Peer(c) => {
                write!(f, "peer reported STATUS error {c} ({})", error_text(*c))
            }
            TransferError::Timeout(d) => write!(
                f,
                "nothing heard from the peer for {:.1} s (is it running and reachable?)",
                d.as_secs_f64()
            ),
            TransferError::Stalled {
                stalled,
                acked,
                total,
            } => write!(
                f,
                "no progress: the peer's STATUS acknowledged nothing new for {:.1} s \
                 ({acked} of {total} bytes acknowledged; --progress-timeout)",
                stalled.as_secs_f64()
            ),
            TransferError::Starved {
                stalled,
                received,
                total,
            } => {
                let of = total.map_or(String::new(), |t| format!(" of {t}"));
                write!(
                    f,
                    "no progress: the peer sent nothing new for {:.1} s \
                     ({received}{of} bytes received; --progress-timeout)",
                    stalled.as_secs_f64()
                )
            }
            TransferError::Integrity(m) => write!(f, "integrity check failed: {m}"),
            TransferError::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl std::error::Error for TransferError {}

/// What a STATUS error code means (draft §4.5), with this server's use.
pub fn error_text(code: u8) -> &'static str {
    match code {
        error_code::UNSPECIFIED => "unspecified error",
        error_code::CANT_SEND => "cannot send: the server could not read the file",
        error_code::CANT_RECEIVE => {
            "cannot receive: checksum mismatch, disk error or session limit reached"
        }
        error_code::FILE_NOT_FOUND => "file not found",
        error_code::ACCESS_DENIED => {
            "access denied: name refused, the file exists (serve --overwrite), \
             or the server is read-only or write-only"
        }
        error_code::UNKNOWN_ID => "unknown session id",
        error_code::FILE_TOO_BIG => "file too big for the server's --max-size or byte quota",
        error_code::BAD_REQUEST => "request type not supported",
        error_code::FILE_IN_USE => {
            "file in use by another transfer (another address, or another file under \
             that name): the server frees the name when that transfer completes or has \
             been silent for its inactivity timeout (30 s by default); retry then"
        }
        error_code::INTERNAL_TIMEOUT => {
            "internal timeout: the transfer made no progress (--progress-timeout)"
        }
        _ => "see draft-wood-tsvwg-saratoga §4.5",
    }
}

/// Progress of a client transfer, reported about every 100 ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Bytes confirmed (PUT: acknowledged by the server; GET: received).
    pub done: u64,
    /// File size, once known.
    pub total: Option<u64>,
    /// Seconds since the transfer started.
    pub elapsed_s: f64,
}

/// An address block (`192.0.2.0/24`, `2001:db8::/32`, or one address):
/// a server given any answers only peers inside one (`--allow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `ADDR/PREFIX` or `ADDR` (the whole address).
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let bad = |why: &str| format!("--allow '{s}': {why}");
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim_matches(|c| c == '[' || c == ']')
            .parse()
            .map_err(|_| bad("expected ADDR or ADDR/PREFIX, e.g. 192.0.2.0/24"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| bad(&format!("prefix length 0 to {max}")))?,
        };
        Ok(Cidr { addr, prefix })
    }

    /// Whether `ip` is inside. An IPv4 peer on an IPv6 socket (`::ffff:a.b.c.d`)
    /// is matched as the IPv4 address it is.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        let (a, b, bits) = match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (
                u128::from(u32::from(a)) << 96,
                u128::from(u32::from(b)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), self.prefix),
            _ => return false,
        };
        let mask = if bits == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(bits))
        };
        a & mask == b & mask
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// What a server lets its peers do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Access {
    /// PUT and GET.
    #[default]
    ReadWrite,
    /// GET only (`--read-only`): a PUT's METADATA or REQUEST(put) is
    /// refused with STATUS error 5 (access denied).
    ReadOnly,
    /// PUT only (`--write-only`): a REQUEST(get) is refused so.
    WriteOnly,
}

/// How a [`super::SaratogaServer`] runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The directory PUTs land in and GETs are served from.
    pub dir: PathBuf,
    /// Rate, payload, checksum (of files served), size limit, timeouts.
    pub transfer: TransferConfig,
    /// Sessions in progress at once, all peers together.
    pub max_sessions: usize,
    /// Sessions in progress at once from one IP address.
    pub max_sessions_per_peer: usize,
    /// How long a finished session is kept to answer late frames (a
    /// client whose final STATUS was lost probes again).
    pub linger: Duration,
    /// Interrupted PUTs kept for resuming (`.NAME.partial` with its
    /// `.NAME.resume` record) at most; 0 disables resuming (every failure
    /// removes its temporary file, as does a server restart).
    pub max_resumable: usize,
    /// Send a BEACON (§4.1) from the server's socket to this address
    /// (unicast or broadcast) every so often: willing to send and
    /// receive, the directory's free space, `eid`.
    pub announce: Option<(SocketAddr, Duration)>,
    /// The endpoint identifier announced.
    pub eid: String,
    /// Peers allowed: frames from any other address are dropped unanswered
    /// (and counted, [`ServerCounters::not_allowed`]). Empty: everyone.
    pub allow: Vec<Cidr>,
    /// PUT and GET, or one of them.
    pub access: Access,
    /// Bytes of PUTs one IP address may send while the server runs
    /// (in progress and completed; a failed PUT's bytes are given back).
    /// A PUT that would pass it is refused with STATUS error 8.
    pub quota_per_peer: Option<u64>,
    /// The same for all peers together.
    pub quota_total: Option<u64>,
    /// With a quota, addresses holding bytes against it at most: a PUT
    /// from a new address beyond is refused as over quota, so a flood of
    /// (spoofable) source addresses cannot grow the table without bound.
    /// Empty files hold nothing and take no place in it.
    pub max_quota_peers: usize,
}

impl ServeConfig {
    /// Serving `dir` with default limits: 64 sessions, 8 per peer.
    pub fn new(dir: PathBuf) -> ServeConfig {
        ServeConfig {
            dir,
            transfer: TransferConfig::default(),
            max_sessions: 64,
            max_sessions_per_peer: 8,
            linger: Duration::from_secs(10),
            max_resumable: 32,
            announce: None,
            eid: "satcc".into(),
            allow: Vec::new(),
            access: Access::ReadWrite,
            quota_per_peer: None,
            quota_total: None,
            max_quota_peers: 65_536,
        }
    }
}

/// What a server counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerCounters {
    /// GET sessions ended by the client's STATUS of session 0 with an
    /// error (it could not take the session: the Go implementation's way
    /// to refuse).
    pub peer_refused: u64,
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that did not parse as Saratoga frames.
    pub malformed: u64,
    /// Datagrams from addresses outside [`ServeConfig::allow`], dropped
    /// unanswered.
    pub not_allowed: u64,
    /// PUTs refused because they would pass a byte quota.
    pub over_quota: u64,
    /// Frames of no session known for their address (and session id).
    pub unknown_session: u64,
    /// Sessions refused (name, size, limits, existing file).
    pub refused: u64,
    /// Transfers completed (PUTs verified and renamed, GETs confirmed).
    pub completed: u64,
    /// Transfers failed (timeout, checksum, disk).
    pub failed: u64,
    /// Stale `.NAME.partial` files (of a server killed mid-transfer)
    /// removed at start: those without a valid resume record, or beyond
    /// [`ServeConfig::max_resumable`].
    pub stale_removed: u64,
    /// STATUS frames of a GET's client rejected as impossible (offsets
    /// or holes beyond what was sent, out of order, ...; never trusted).
    pub status_rejected: u64,
    /// Largest number of sessions held at once (in progress and
    /// finished, kept to answer late frames): bounded by the limits.
    pub sessions_peak: u64,
    /// GETs whose file's checksum was computed in a worker thread (files
    /// over 4 MB not in the checksum cache).
    pub checksums_offloaded: u64,
    /// BEACON frames received (peers announcing themselves; no reply).
    pub beacons_received: u64,
    /// BEACON frames sent (`ServeConfig::announce`).
    pub beacons_sent: u64,
    /// Interrupted PUTs found at start with a resume record, kept.
    pub resumable_found: u64,
    /// PUTs resumed from an interrupted transfer's bytes.
    pub resumed: u64,
    /// Resume offers sent (voluntary STATUS frames listing what a resumed
    /// PUT lacks).
    pub resume_offers: u64,
    /// PUTs still running ended because their sender's address started
    /// the same file (name, size, checksum) again: an interrupted client
    /// rerun, resumed instead of refused as "file in use".
    pub superseded: u64,
}

/// A finished session, as a server reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionReport {
    /// "put" (the peer sent a file) or "get" (the peer fetched one).
    pub kind: &'static str,
    /// The peer.
    pub peer: String,
    /// Session id.
    pub session: u32,
    /// File name.
    pub name: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Why not, if not.
    pub error: Option<String>,
    /// Bytes of the file.
    pub bytes: u64,
    /// Bytes a PUT resumed from (held from an interrupted transfer).
    pub resumed_bytes: u64,
    /// Seconds from the session's first frame to its end.
    pub duration_s: f64,
    /// Goodput, bits per second.
    pub goodput_bps: f64,
}
