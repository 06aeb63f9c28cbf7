//! The two sides of a transfer, shared by the clients and the server: a
//! sender endpoint reading its file ([`SendSide`]), a receiver endpoint
//! writing into a temporary file ([`RecvSide`]), and the client's
//! receive loop skeleton ([`ClientLink`]).

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};

use satcc_proto::saratoga::msg::from_repr;
use satcc_proto::saratoga::wire::{
    self, error_code, Checksum, DescriptorSize, Repr, RequestType, TimestampType,
};
use satcc_proto::saratoga::{
    RangeSet, RateController, SaraMetadata, SaraRequest, SaratogaConfig, SaratogaReceiver,
    SaratogaSender,
};
use satcc_proto::stfrc::{StfrcConfig, StfrcController};
use satcc_proto::{Duration, Endpoint, Instant, Message};

use super::files::{write_all_at, FileError, Hasher, ResumeInfo, TempFile};
use super::frames::{
    checksum_name, encode, encode_status_or, feed_status, from_y2k_secs, metadata_message, parse,
    y2k_secs, MAX_WIRE_HOLES,
};
use super::types::{Progress, Rate, TransferConfig, TransferError, TransferReport};
use super::MAX_PAYLOAD;
use crate::clock::{grow_buffers, Clock, Socket};
use crate::conn::{DEFAULT_BURST, MAX_BURST, MAX_RECEIVE};

/// Burst credit: send times missed by up to this much after a late
/// wake-up are replayed (as [`crate::ConnConfig::burst`], and as long).
const BURST: Duration = DEFAULT_BURST;

/// Bytes of a receiver's prefix hashed at most per pass (about 10 ms of
/// SHA-1): the verification keeps up with the transfer without stalling
/// a server's other sessions for long.
pub(super) const HASH_AHEAD: u64 = 4 << 20;

/// Smallest piece of the prefix hashed ahead (but the file's last).
pub(super) const HASH_BLOCK: u64 = 256 << 10;

/// How often a server records what a PUT in progress holds (each record
/// syncs the temporary file first).
pub(super) const RESUME_SAVE_EVERY: Duration = Duration::from_millis(500);

/// A session id: not secret (Saratoga has no authentication), just
/// unlikely to collide between runs from the same address.
pub(super) fn new_session_id() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let x = t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    // splitmix64 finaliser.
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

pub(super) fn sara_config(
    cfg: &TransferConfig,
    session: u32,
    checksum: Checksum,
) -> SaratogaConfig {
    SaratogaConfig {
        session,
        payload: cfg.payload.clamp(1, MAX_PAYLOAD),
        checksum,
        inactivity_timeout: cfg.inactivity_timeout,
        status_every_frames: cfg.status_every_frames,
        // STFRC's controller asks once per RTT by its own RTT estimate
        // (paper 000 §5, StfrcConfig::status_per_rtt), as in the
        // simulator; the sender's rule would double it.
        status_per_rtt: match cfg.rate {
            Rate::Stfrc => 0.0,
            Rate::Fixed(_) => cfg.status_per_rtt,
        },
        status_min_frames: cfg.status_min_frames,
        reverse_rate_bps: cfg.reverse_rate_bps,
        status_share: cfg.status_share,
        timestamps: cfg.timestamp.is_some(),
        timestamp_type: cfg.timestamp.unwrap_or(TimestampType::Posix64_32),
        progress_timeout: cfg.progress_timeout,
        progress_timeout_rtts: cfg.progress_timeout_rtts,
        // The receiver has no RTT: only the time rule (0, with
        // `--progress-timeout 16rtt` alone, leaves it to the inactivity
        // timeout).
        receiver_progress_timeout: cfg.progress_timeout,
        ..SaratogaConfig::default()
    }
}

/// POSIX time in ns at `Instant(0)` of the clock whose present is `now`,
/// for the POSIX timestamp types: the same offset encodes our timestamps
/// and decodes their echoes, so RTT samples stay exact.
fn unix_offset_ns(now: Instant) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .saturating_sub(now.as_nanos())
}

/// A file's (mtime, ctime) as METADATA's directory entry carries them
/// (seconds since 2000, §5); ctime is the inode change time on Unix.
fn file_times(file: &File) -> (u32, u32) {
    let Ok(md) = file.metadata() else {
        return (0, 0);
    };
    #[cfg(unix)]
    let ctime = {
        use std::os::unix::fs::MetadataExt;
        u64::try_from(md.ctime())
            .ok()
            .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s))
    };
    #[cfg(not(unix))]
    let ctime = md.created().ok();
    (y2k_secs(md.modified().ok()), y2k_secs(ctime))
}

/// The sending endpoint for a file of `size` bytes in `session`.
///
/// Built as a GET responder and started with a synthetic REQUEST for
/// both directions: a PUT sender starts on `offer(size)`, which ignores
/// a size of 0, so an empty file could not be sent that way.
pub(super) fn make_sender(
    cfg: &TransferConfig,
    session: u32,
    size: u64,
    checksum: Checksum,
    now: Instant,
) -> SaratogaSender {
    let sc = SaratogaConfig {
        unix_offset_ns: unix_offset_ns(now),
        ..sara_config(cfg, session, checksum)
    };
    let rc: Box<dyn RateController> = match cfg.rate {
        Rate::Fixed(bps) => Box::new(satcc_proto::saratoga::FixedRate::new(bps)),
        Rate::Stfrc => {
            let d = DescriptorSize::smallest_for(size).bytes() as u32;
            Box::new(StfrcController::new(
                StfrcConfig {
                    // The equation's s: a full DATA frame on the wire
                    // (payload, Saratoga header, IPv4 + UDP).
                    segment_size: sc.payload + 8 + d + 28,
                    // Bounded history per session (memory on a server).
                    max_history: 1 << 16,
                    receive_rate: cfg.stfrc_receive_rate,
                    loss_filter: cfg.stfrc_loss_filter,
                    exclude_hole_delay: cfg.stfrc_exclude_hole_delay,
                    ..StfrcConfig::default()
                },
                now,
            ))
        }
    };
    let mut s = SaratogaSender::get_responder(sc, rc, 0, size, now);
    s.handle_input(
        now,
        &Message::SaraRequest(SaraRequest {
            session,
            descriptor: DescriptorSize::D64,
            kind: RequestType::Get,
            name: 0,
        }),
    );
    s
}

/// A sender endpoint with its file.
#[derive(Debug)]
pub(super) struct SendSide {
    pub(super) sender: SaratogaSender,
    pub(super) file: File,
    pub(super) name: Vec<u8>,
    pub(super) size: u64,
    pub(super) checksum: Checksum,
    pub(super) retx_bytes: u64,
    pub(super) data_frames: u64,
    /// Payload bytes sent.
    pub(super) sent_bytes: u64,
    /// After a resume offer: holes beyond what had been sent, whose
    /// first transmission is not a retransmission.
    pub(super) fresh: RangeSet,
    pub(super) last_passed: Instant,
    /// Empty file: the sans-IO sender does not repeat a lost METADATA when
    /// there is no DATA to request a STATUS with, so the driver does.
    pub(super) meta_retry: Option<Instant>,
    pub(super) error: Option<String>,
    /// The file's (mtime, ctime), seconds since 2000, for METADATA.
    pub(super) times: (u32, u32),
}

impl SendSide {
    /// The sending side of `file` (`size` bytes, `checksum`) in
    /// `session`: a PUT client's, or a server's for a GET.
    pub(super) fn new(
        cfg: &TransferConfig,
        session: u32,
        file: File,
        name: Vec<u8>,
        size: u64,
        checksum: Checksum,
        now: Instant,
    ) -> SendSide {
        SendSide {
            sender: make_sender(cfg, session, size, checksum, now),
            times: file_times(&file),
            file,
            name,
            size,
            checksum,
            retx_bytes: 0,
            data_frames: 0,
            sent_bytes: 0,
            fresh: RangeSet::new(2 * MAX_WIRE_HOLES),
            last_passed: now,
            meta_retry: None,
            error: None,
        }
    }

    pub(super) fn send_one(
        &mut self,
        t: Instant,
        sock: &Socket,
        to: SocketAddr,
        out: &mut [u8],
    ) -> bool {
        let before = self.sender.sent_end();
        let Some(m) = self.sender.poll_message(t) else {
            return false;
        };
        if let Message::SaraData(d) = &m {
            self.data_frames += 1;
            self.sent_bytes += u64::from(d.len);
            let end = d.offset + u64::from(d.len);
            if d.offset < before {
                if self.fresh.contains(d.offset, end) {
                    self.fresh.remove(d.offset, end);
                } else {
                    self.retx_bytes += u64::from(d.len);
                }
            }
        }
        match encode(&m, &self.name, Some(&self.file), self.times, out) {
            Ok(n) => {
                // A full socket buffer loses the frame, as a full queue
                // would: Saratoga repairs it.
                let _ = sock.send_to(&out[..n], to);
            }
            Err(e) => self.error = Some(format!("reading the file: {e}")),
        }
        true
    }

    /// Sends what is due at `now`, replaying send times missed by a late
    /// wake-up (up to [`BURST`]), and fires timers.
    pub(super) fn pump(&mut self, now: Instant, sock: &Socket, to: SocketAddr, out: &mut [u8]) {
        let floor = Instant(now.as_nanos().saturating_sub(BURST.as_nanos())).max(self.last_passed);
        for _ in 0..MAX_BURST {
            let Some(due) = self.sender.poll_timeout() else {
                break;
            };
            if due >= now {
                break;
            }
            let t = due.max(floor);
            if !self.send_one(t, sock, to, out) {
                break;
            }
            self.last_passed = t;
        }
        self.last_passed = now;
        if self.sender.poll_timeout().is_some_and(|t| t <= now) {
            self.sender.handle_timeout(now);
        }
        for _ in 0..MAX_BURST {
            if !self.send_one(now, sock, to, out) {
                break;
            }
        }
        // The sender queues an event per acknowledging STATUS; nothing
        // here reads them, and undrained they would grow with the file.
        while self.sender.poll_event().is_some() {}
        if self.size == 0 && self.sender.sender_stats().status_received == 0 {
            match self.meta_retry {
                None => self.meta_retry = Some(now + Duration::from_secs(1)),
                Some(t) if now >= t => {
                    let m = Message::SaraMetadata(SaraMetadata {
                        session: self.sender.session(),
                        descriptor: DescriptorSize::D16,
                        file_size: 0,
                        checksum: self.checksum,
                        name: 0,
                    });
                    if let Ok(n) = encode(&m, &self.name, None, self.times, out) {
                        let _ = sock.send_to(&out[..n], to);
                    }
                    self.meta_retry = Some(now + Duration::from_secs(1));
                }
                Some(_) => {}
            }
        }
    }

    /// A STATUS for a PUT: a resume offer if it is one
    /// ([`SaratogaSender::try_resume`]), else an ordinary STATUS.
    pub(super) fn on_status(&mut self, now: Instant, st: &wire::Status) {
        let old = self.sender.sent_end();
        if let Ok(Message::SaraStatus(mut m)) = from_repr(&Repr::Status(st.clone())) {
            m.set_incomplete(st.incomplete);
            if self.sender.try_resume(now, &m, &st.holes) {
                for &(a, b) in &st.holes {
                    let _ = self.fresh.insert(a.max(old), b);
                }
                return;
            }
        }
        feed_status(&mut self.sender, now, st);
    }

    pub(super) fn next_wake(&self) -> Option<Instant> {
        let t = self.sender.poll_timeout();
        match (t, self.meta_retry) {
            (Some(a), Some(b)) if self.size == 0 => Some(a.min(b)),
            (None, Some(b)) if self.size == 0 => Some(b),
            _ => t,
        }
    }

    /// Confirmed by the receiver (a STATUS saying all is there).
    pub(super) fn done(&self) -> bool {
        self.sender.is_complete() && self.sender.sender_stats().status_received > 0
    }

    pub(super) fn report(
        &self,
        direction: &'static str,
        peer: SocketAddr,
        secs: f64,
    ) -> TransferReport {
        let st = self.sender.sender_stats();
        let es = self.sender.stats();
        TransferReport {
            direction,
            name: String::from_utf8_lossy(&self.name).into_owned(),
            peer: peer.to_string(),
            bytes: self.size,
            duration_s: secs,
            goodput_bps: rate(self.size, secs),
            data_frames: self.data_frames,
            retransmitted_bytes: self.retx_bytes,
            sent_bytes: self.sent_bytes,
            resumed_bytes: st.resumed_bytes,
            status_frames: st.status_received,
            loss_event_rate: es.rate.map(|r| r.p),
            srtt_s: st.srtt.map(|d| d.as_secs_f64()),
            checksum: checksum_name(self.checksum.kind()),
        }
    }
}

pub(super) fn rate(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

/// A receiver endpoint writing into a temporary file.
#[derive(Debug)]
pub(super) struct RecvSide {
    pub(super) receiver: SaratogaReceiver,
    pub(super) session: u32,
    pub(super) temp: TempFile,
    /// Size and checksum from METADATA.
    pub(super) meta: Option<(u64, Checksum)>,
    /// The file's modification time from METADATA (§5), applied to the
    /// file once verified; `None` when the peer sent 0 (unknown).
    pub(super) mtime: Option<std::time::SystemTime>,
    pub(super) max_size: u64,
    pub(super) overwrite: bool,
    pub(super) data_frames: u64,
    /// Set once complete: Ok after the rename, Err why not.
    pub(super) result: Option<Result<(), FileError>>,
    /// Keep a resume record while receiving, and the temporary file when
    /// the peer goes silent (a server's PUT).
    pub(super) keep: bool,
    /// When the resume record was last written, and the bytes it held.
    pub(super) last_saved: Option<Instant>,
    pub(super) saved_held: u64,
    /// Bytes restored from an interrupted transfer.
    pub(super) resumed_bytes: u64,
    /// Failed in a way a later transfer may resume from (the peer went
    /// silent, the server stopped), not a checksum or disk failure.
    pub(super) resumable_fail: bool,
    /// Resume offers still to repeat (see [`super::SaratogaServer`]).
    pub(super) offer: Option<(u8, Vec<u8>)>,
    /// The checksum of the file's contiguous prefix `[0, n)`, computed as
    /// it arrives, with `n`; bytes below `n` are never written again.
    pub(super) hash: Option<(Hasher, u64)>,
    /// The peer's address, written into resume records
    /// ([`ResumeInfo::peer`]).
    pub(super) peer: Option<std::net::IpAddr>,
}

impl RecvSide {
    /// The receiving side of `receiver` writing into `temp`: a GET
    /// client's, or a server's for a PUT (`keep`: resumable).
    pub(super) fn new(
        receiver: SaratogaReceiver,
        session: u32,
        temp: TempFile,
        cfg: &TransferConfig,
        keep: bool,
    ) -> RecvSide {
        RecvSide {
            receiver,
            session,
            temp,
            meta: None,
            mtime: None,
            max_size: cfg.max_size,
            overwrite: cfg.overwrite,
            data_frames: 0,
            result: None,
            keep,
            last_saved: None,
            saved_held: 0,
            resumed_bytes: 0,
            resumable_fail: false,
            offer: None,
            hash: None,
            peer: None,
        }
    }

    pub(super) fn on_metadata(&mut self, now: Instant, m: &wire::Metadata) -> Result<(), u8> {
        if m.entry.size > self.max_size {
            return Err(error_code::FILE_TOO_BIG);
        }
        if self
            .meta
            .is_some_and(|(s, c)| s != m.entry.size || c != m.checksum)
        {
            // A METADATA that changes the file mid-transfer: ignored.
            return Ok(());
        }
        if let Ok(msg) = metadata_message(m) {
            let before = self.receiver.receiver_stats().metadata_received;
            self.receiver.handle_input(now, &msg);
            // Only a METADATA the endpoint accepted (not smaller than the
            // data already received, within its descriptor) sets what the
            // file is verified against.
            if self.receiver.receiver_stats().metadata_received > before {
                if self.meta.is_none() {
                    self.hash = Hasher::new(m.checksum.kind()).map(|h| (h, 0));
                    self.mtime = from_y2k_secs(m.entry.mtime);
                }
                self.meta = Some((m.entry.size, m.checksum));
            }
        }
        Ok(())
    }

    /// Writes the payload, then hands the frame to the endpoint.
    pub(super) fn on_data(
        &mut self,
        now: Instant,
        d: &wire::Data,
        payload: &[u8],
    ) -> Result<(), FileError> {
        let Some(end) = d.offset.checked_add(payload.len() as u64) else {
            return Ok(());
        };
        let limit = self.meta.map_or(self.max_size, |m| m.0);
        if end > limit || payload.len() != d.payload_len {
            return Ok(()); // the endpoint rejects and counts it too
        }
        // Bytes already hashed stay as they were hashed: a later
        // duplicate (or a forged DATA) cannot change what is verified.
        let hashed = self.hash.as_ref().map_or(0, |h| h.1);
        if self.result.is_none() && end > hashed {
            let skip = hashed.saturating_sub(d.offset) as usize;
            write_all_at(&self.temp.file, &payload[skip..], d.offset + skip as u64)
                .map_err(FileError::io(self.temp.tmp(), "write: "))?;
        }
        if let Ok(msg) = from_repr(&Repr::Data(*d)) {
            self.data_frames += 1;
            self.receiver.handle_input(now, &msg);
        }
        Ok(())
    }

    /// What a resume record would say now: `None` without a checksum (it
    /// is what tells a retried transfer of the same file from another).
    pub(super) fn resume_info(&self) -> Option<ResumeInfo> {
        let (size, sum) = self.meta?;
        if matches!(sum, Checksum::None) {
            return None;
        }
        Some(ResumeInfo::from_received(
            size,
            sum,
            self.peer,
            self.receiver.received(),
        ))
    }

    /// Rewrites the resume record every [`RESUME_SAVE_EVERY`] while bytes
    /// arrive.
    pub(super) fn maybe_save(&mut self, now: Instant) {
        if !self.keep || self.result.is_some() {
            return;
        }
        if self
            .last_saved
            .is_some_and(|t| now.saturating_since(t) < RESUME_SAVE_EVERY)
        {
            return;
        }
        self.last_saved = Some(now);
        let Some(info) = self.resume_info() else {
            return;
        };
        let held = info.held();
        if held != self.saved_held && self.temp.save_resume(&info, false).is_ok() {
            self.saved_held = held;
        }
    }

    /// Keeps the temporary file and a resume record, if there is
    /// something worth resuming; else (or on any error) removes it.
    pub(super) fn suspend_or_discard(&mut self, allowed: bool) -> bool {
        match self.resume_info().filter(|i| i.held() > 0) {
            Some(info) if allowed && self.keep && self.result.is_none() => self.temp.suspend(&info),
            _ => {
                self.temp.discard();
                false
            }
        }
    }

    /// Hashes up to `budget` more bytes of the contiguous prefix
    /// received, so that the verification at the end has little left to
    /// read (a large file's checksum would otherwise stall a server's
    /// other sessions, and delay the confirmation, at the end).
    pub(super) fn hash_ahead(&mut self, budget: u64) {
        let Some((size, _)) = self.meta else {
            return;
        };
        let prefix = self.receiver.received().prefix_end().min(size);
        let Some((h, at)) = &mut self.hash else {
            return;
        };
        // Not a read per frame: wait for a block, or the end.
        if *at >= prefix || (prefix - *at < HASH_BLOCK && prefix < size) {
            return;
        }
        let to = prefix.min(at.saturating_add(budget));
        let mut buf = vec![0u8; (to - *at).min(1 << 20) as usize];
        if h.feed(&self.temp.file, *at, to, &mut buf).is_ok() {
            *at = to;
        } else {
            // Verified from scratch at the end instead.
            self.hash = None;
        }
    }

    /// Bytes of the contiguous prefix received that the running checksum
    /// has not read yet (0 without one). A server waits for this to
    /// reach 0 before committing a complete file, hashing
    /// [`HASH_AHEAD`] a pass: when the last hole fills late (the first
    /// segment lost and resent last) the whole file becomes the prefix
    /// at once, and hashing it in one go inside the commit would stall
    /// every other session for as long as SHA-1 takes over the file.
    pub(super) fn hash_lag(&self) -> u64 {
        let (Some((size, _)), Some((_, at))) = (self.meta, &self.hash) else {
            return 0;
        };
        self.receiver
            .received()
            .prefix_end()
            .min(size)
            .saturating_sub(*at)
    }

    /// Once every byte is there and METADATA seen: verify and rename.
    pub(super) fn try_commit(&mut self) -> Option<&Result<(), FileError>> {
        if self.result.is_none() && self.receiver.is_complete() {
            if let Some((size, sum)) = self.meta {
                let hashed = self.hash.take();
                let res = self.temp.commit(size, &sum, self.overwrite, hashed);
                if let (Ok(()), Some(t)) = (&res, self.mtime) {
                    // After the rename (truncating to size in `commit`
                    // would update it again); through the open handle, so
                    // it is the file we verified. Best effort: ctime
                    // cannot be set, and a failure here loses no data.
                    let _ = self.temp.file.set_modified(t);
                }
                self.result = Some(res);
            }
        }
        self.result.as_ref()
    }
}

/// Sends the receiver's pending frames.
pub(super) fn send_all_from_receiver(
    r: &mut RecvSide,
    now: Instant,
    sock: &Socket,
    peer: SocketAddr,
    out: &mut [u8],
    name: &[u8],
) {
    for _ in 0..MAX_BURST {
        let Some(m) = r.receiver.poll_message(now) else {
            break;
        };
        if let Some((left, offer)) = &mut r.offer {
            let _ = sock.send_to(offer, peer);
            *left -= 1;
            if *left == 0 {
                r.offer = None;
            }
        }
        if let Ok(n) = encode_status_or(&m, &r.receiver, name, out) {
            let _ = sock.send_to(&out[..n], peer);
        }
    }
}

/// How often a client reports progress (and checks for cancellation).
pub(super) const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// A datagram a client received: when, its frame, and its payload.
pub(super) type Received<'a> = (Instant, Repr, &'a [u8]);

/// What the PUT and GET clients share: a socket that talks to one
/// server, the clock, the buffers and the progress schedule. Their loops
/// differ in what they send and what they do with a frame; waiting for
/// one, and calling back with progress, is this.
#[derive(Debug)]
pub(super) struct ClientLink {
    pub(super) sock: Socket,
    pub(super) server: SocketAddr,
    pub(super) clock: Clock,
    /// When the transfer started.
    pub(super) start: Instant,
    /// Where frames are encoded.
    pub(super) out: Vec<u8>,
    inbuf: Vec<u8>,
    /// When progress is next reported.
    pub(super) next_progress: Instant,
}

impl ClientLink {
    /// Binds a socket for `server` (see [`crate::client_bind_addr`]) and
    /// starts the clock.
    pub(super) fn open(server: SocketAddr) -> Result<ClientLink, TransferError> {
        let bind = crate::client_bind_addr(server);
        let s =
            UdpSocket::bind(bind).map_err(|e| TransferError::Local(format!("bind {bind}: {e}")))?;
        grow_buffers(&s, 4 << 20);
        let sock = Socket::new(s);
        let clock = Clock::new();
        let start = clock.now();
        Ok(ClientLink {
            sock,
            server,
            clock,
            start,
            out: vec![0u8; MAX_RECEIVE + 64],
            inbuf: vec![0u8; MAX_RECEIVE + 1],
            next_progress: start,
        })
    }

    /// Sends `buf` to the server (a full socket buffer loses it, as a
    /// full queue would).
    pub(super) fn send(&self, buf: &[u8]) {
        let _ = self.sock.send_to(buf, self.server);
    }

    /// Reports progress (`done` of `total` bytes) if it is due at `now`;
    /// [`TransferError::Cancelled`] if `progress` asks to stop.
    pub(super) fn progress(
        &mut self,
        now: Instant,
        done: u64,
        total: Option<u64>,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<(), TransferError> {
        if now >= self.next_progress {
            let p = Progress {
                done,
                total,
                elapsed_s: (now - self.start).as_secs_f64(),
            };
            if !progress(&p) {
                return Err(TransferError::Cancelled);
            }
            self.next_progress = now + PROGRESS_EVERY;
        }
        Ok(())
    }

    /// Waits until `deadline` for a datagram from the server: the time it
    /// arrived, its frame and (for DATA) its payload. `None` for nothing
    /// usable: the deadline passed, another address sent it, or it is not
    /// a Saratoga frame.
    pub(super) fn recv(
        &mut self,
        deadline: Instant,
    ) -> Result<Option<Received<'_>>, TransferError> {
        let got = self
            .sock
            .recv_until(&self.clock, &mut self.inbuf, deadline)
            .map_err(|e| TransferError::Local(format!("receive: {e}")))?;
        let Some((n, from)) = got else {
            return Ok(None);
        };
        if from != self.server {
            return Ok(None);
        }
        let now = self.clock.now();
        Ok(parse(&self.inbuf[..n]).map(|(repr, payload)| (now, repr, payload)))
    }
}
