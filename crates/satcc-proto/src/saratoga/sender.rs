//! The sending side of a Saratoga transfer: a PUT's initiator, or a GET's
//! responder (draft-wood-tsvwg-saratoga-22 §3).
//!
//! It sends METADATA (§4.3), then DATA (§4.4) paced at the rate its
//! [`RateController`] allows, requesting a STATUS (bit 15) by the rules of
//! [`SaratogaConfig`] and always on the frame that carries the end of the
//! file (bit 16). Each valid STATUS (§4.5) moves the acknowledged point to
//! its progress indicator and queues its holes for retransmission, which
//! goes before new data. A STATUS whose offsets are impossible (beyond
//! what was sent, holes unordered or overlapping, holes below the progress
//! indicator) is rejected and counted, never trusted.
//!
//! Duplicate retransmission is avoided with the echoed timestamp: a
//! STATUS reflects every DATA sent before the DATA whose timestamp it
//! echoes (frames travel in order), so holes retransmitted after that
//! time are still in flight and are not queued again.
//!
//! When nothing is left to send but the transfer is not acknowledged, the
//! sender re-sends its last new DATA frame with a STATUS request every
//! [`SaratogaConfig::status_request_interval`] (at least two smoothed
//! RTTs; a lost final DATA or lost
//! STATUS would otherwise stall the transfer; re-sending the *last* frame
//! makes the receiver's hole list cover everything). After
//! [`SaratogaConfig::inactivity_timeout`] without a valid STATUS it gives
//! up ([`SaratogaSender::failure`]).

use std::collections::VecDeque;

use super::holes::SharedHoleStore;
use super::msg::{ts_decode, ts_encode};
use super::rate::{FixedRate, RateController, StatusInfo};
use super::wire::{check_holes, DescriptorSize, RequestType, TIMESTAMP_LEN};
use super::{
    Failure, RangeSet, SaraData, SaraMetadata, SaraStatus, SaratogaConfig, UNLIMITED_SIZE,
};
use crate::endpoint::{Event, Message};
use crate::pacer::{Ipi, Pacer};
use crate::time::{Duration, Instant};

/// Why a STATUS was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusReject {
    /// Another session's.
    WrongSession,
    /// Before anything was sent.
    Unexpected,
    /// Progress indicator beyond the data sent.
    Progress,
    /// In-response-to offset beyond the data sent.
    InResponseTo,
    /// A hole beyond the data sent, below the progress indicator, empty,
    /// or out of order / overlapping.
    Holes,
}

/// Sender counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SaratogaSenderStats {
    /// DATA frames sent (new and retransmitted).
    pub data_sent: u64,
    /// DATA frames re-sent (holes and probes).
    pub retransmits: u64,
    /// Of those, probes: the last frame re-sent to draw a STATUS.
    pub probes: u64,
    /// METADATA frames sent.
    pub metadata_sent: u64,
    /// DATA frames that requested a STATUS.
    pub status_requests: u64,
    /// Valid STATUS frames received.
    pub status_received: u64,
    /// STATUS frames rejected as impossible or foreign to the session.
    pub status_rejected: u64,
    /// The last rejection's reason.
    pub last_reject: Option<StatusReject>,
    /// Progress indicator: bytes acknowledged from offset 0.
    pub acked_bytes: u64,
    /// RTT samples from echoed timestamps.
    pub rtt_samples: u64,
    /// Their sum.
    pub sum_rtt: Duration,
    /// Smoothed RTT (1/8 gain), once sampled.
    pub srtt: Option<Duration>,
    /// REQUESTs refused (GET responder: another file or request type).
    pub requests_rejected: u64,
    /// Bytes a resume offer ([`SaratogaSender::try_resume`]) said the
    /// receiver already held and that were therefore not sent.
    pub resumed_bytes: u64,
    /// Messages of another protocol or direction.
    pub foreign: u64,
}

/// What starts the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// PUT: starts when the application offers data.
    Put,
    /// GET responder: starts on a REQUEST for this file.
    GetResponder { name: u64, size: u64 },
}

/// The Saratoga sender (PUT initiator or GET responder).
#[derive(Debug)]
pub struct SaratogaSender {
    cfg: SaratogaConfig,
    pub(super) rc: Box<dyn RateController>,
    pub(super) role: Role,
    session: u32,
    name: u64,
    /// File size once known.
    pub(super) file_size: Option<u64>,
    pub(super) descriptor: DescriptorSize,
    /// Next new offset to send.
    next_new: u64,
    /// No new data past `next_new` (the application closed).
    pub(super) closed: bool,
    pub(super) metadata_due: bool,
    /// Progress indicator as last validly reported.
    acked: u64,
    /// Holes queued for retransmission.
    retx: RangeSet,
    /// Ranges re-sent, with when: not queued again by a STATUS that
    /// predates them.
    recent_retx: VecDeque<(Instant, u64, u64)>,
    pacer: Pacer,
    frames_since_request: u32,
    last_request: Option<Instant>,
    last_heard: Instant,
    /// When a STATUS last acknowledged new data (or data became
    /// outstanding after none was): the progress timeout's start.
    last_progress: Instant,
    /// The highest of progress indicator and in-response-to offset any
    /// valid STATUS carried: "new data acknowledged" is this growing.
    best_ack: u64,
    /// The last new DATA frame (offset, len), re-sent as a probe.
    last_frame: Option<(u64, u32)>,
    probe_due: bool,
    started: bool,
    pub(super) failure: Option<Failure>,
    pub(super) all_acked_reported: bool,
    /// A resume offer was accepted ([`SaratogaSender::try_resume`]).
    resumed: bool,
    /// Where the receiver puts hole lists too long for a message (the
    /// simulator's; see [`Self::set_hole_store`]).
    hole_store: Option<SharedHoleStore>,
    /// Since when a due STATUS request has waited for the end of a
    /// retransmission round (`defer_status_to_round_end`).
    deferred_since: Option<Instant>,
    /// [`Event::SlowStartExit`] has been reported.
    slow_start_exit_reported: bool,
    pub(super) events: VecDeque<Event>,
    pub(super) stats: SaratogaSenderStats,
}

impl SaratogaSender {
    /// A PUT sender at a fixed rate of `rate_bps` bits per second on the
    /// wire. It sends nothing until [`crate::Sender::offer`] (a file of
    /// that many bytes) or [`crate::Sender::set_unlimited`] (an endless
    /// transfer of [`UNLIMITED_SIZE`] bytes with 64-bit offsets).
    pub fn new(cfg: SaratogaConfig, rate_bps: u64, now: Instant) -> SaratogaSender {
        SaratogaSender::with_rate_controller(cfg, Box::new(FixedRate::new(rate_bps)), now)
    }

    /// A PUT sender whose rate a controller (STFRC, ...) sets.
    pub fn with_rate_controller(
        cfg: SaratogaConfig,
        rc: Box<dyn RateController>,
        now: Instant,
    ) -> SaratogaSender {
        let retx = RangeSet::new(cfg.max_retx_ranges);
        SaratogaSender {
            session: cfg.session,
            cfg,
            rc,
            role: Role::Put,
            name: 0,
            file_size: None,
            descriptor: DescriptorSize::D16,
            next_new: 0,
            closed: false,
            metadata_due: false,
            acked: 0,
            retx,
            recent_retx: VecDeque::new(),
            pacer: Pacer::new(now),
            frames_since_request: 0,
            last_request: None,
            last_heard: now,
            last_progress: now,
            best_ack: 0,
            last_frame: None,
            probe_due: false,
            started: false,
            failure: None,
            all_acked_reported: false,
            resumed: false,
            hole_store: None,
            deferred_since: None,
            slow_start_exit_reported: false,
            events: VecDeque::new(),
            stats: SaratogaSenderStats::default(),
        }
    }

    /// A GET responder serving one file, `name` (key) of `size` bytes: it
    /// waits for a REQUEST (get or get+delete) for that name and answers
    /// with METADATA and DATA in the requester's session (§3, §4.2).
    pub fn get_responder(
        cfg: SaratogaConfig,
        rc: Box<dyn RateController>,
        name: u64,
        size: u64,
        now: Instant,
    ) -> SaratogaSender {
        let mut s = SaratogaSender::with_rate_controller(cfg, rc, now);
        s.role = Role::GetResponder { name, size };
        s.name = name;
        s
    }

    /// Sets the name key announced in METADATA (PUT; default 0).
    pub fn set_name(&mut self, name: u64) {
        self.name = name;
    }

    /// Why the sender gave up, if it did.
    pub fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// The counters.
    pub fn sender_stats(&self) -> SaratogaSenderStats {
        self.stats
    }

    /// The session id.
    pub fn session(&self) -> u32 {
        self.session
    }

    /// The file size, once known.
    pub fn file_size(&self) -> Option<u64> {
        self.file_size
    }

    /// The end of the new data sent so far: every offset below it has been
    /// sent at least once.
    pub fn sent_end(&self) -> u64 {
        self.next_new
    }

    /// Every byte there is to send has been acknowledged.
    pub fn is_complete(&self) -> bool {
        self.started && self.acked >= self.end()
    }

    /// The end of the data to deliver: the file size, or where the
    /// application closed.
    fn end(&self) -> u64 {
        let size = self.file_size.unwrap_or(0);
        if self.closed {
            self.next_new.min(size)
        } else {
            size
        }
    }

    pub(super) fn start(&mut self, size: u64, now: Instant) {
        self.file_size = Some(size);
        self.descriptor = DescriptorSize::smallest_for(size);
        self.started = true;
        self.metadata_due = true;
        self.last_heard = now;
        self.last_progress = now;
        self.pacer = Pacer::new(now);
    }

    fn frame_wire_len(&self, payload: u32, ts: bool) -> f64 {
        let ts = if ts { TIMESTAMP_LEN } else { 0 };
        f64::from(payload)
            + (8 + ts + self.descriptor.bytes()) as f64
            + f64::from(self.cfg.lower_header_bytes)
    }

    fn ipi(&self, wire_len: f64) -> Ipi {
        Ipi::from_rate(wire_len.max(1.0), self.rc.rate_bytes_per_sec())
    }

    fn has_work(&self) -> bool {
        self.metadata_due || !self.retx.is_empty() || self.next_new < self.end() || self.probe_due
    }

    fn active(&self) -> bool {
        self.started && self.failure.is_none() && !self.is_complete()
    }

    fn wants_status(&mut self, now: Instant, eod: bool, end_of_round: bool) -> bool {
        let since = self.last_request.map(|t| now.saturating_since(t));
        let by_count = self.cfg.status_every_frames > 0
            && self.frames_since_request + 1 >= self.cfg.status_every_frames;
        let by_time = since.is_none_or(|d| d >= self.cfg.status_request_interval);
        let by_rtt = match (since, self.rtt_request_interval()) {
            (Some(d), Some(i)) => {
                d >= i && self.frames_since_request + 1 >= self.cfg.status_min_frames
            }
            _ => false,
        };
        // Ask the controller every time, so that it sees each opportunity.
        let by_rc = self.rc.want_status_request(now);
        // The reverse path's cap (SaratogaConfig::reverse_rate_bps) holds
        // back every rule except those the transfer needs to end.
        let capped = match (since, self.reverse_gap()) {
            (Some(d), Some(g)) => d < g,
            _ => false,
        };
        ((by_rc || by_count || by_time || by_rtt) && !capped) || eod || end_of_round
    }

    /// The per-RTT rule's spacing: srtt / `status_per_rtt`, once an RTT
    /// has been sampled.
    fn rtt_request_interval(&self) -> Option<Duration> {
        let k = self.cfg.status_per_rtt;
        if !(k.is_finite() && k > 0.0) {
            return None;
        }
        let srtt = self.stats.srtt?;
        Some(Duration::from_nanos(
            (srtt.as_nanos() as f64 / k).round() as u64
        ))
    }

    /// The least spacing of STATUS requests that keeps the STATUS frames
    /// they draw within `status_share` of the reverse path's rate, if that
    /// rate is known. A STATUS is counted with a timestamp and two holes
    /// (what the simulator's STATUS carries inline at most).
    fn reverse_gap(&self) -> Option<Duration> {
        let rate = self.cfg.reverse_rate_bps.filter(|r| *r > 0)?;
        let share = self.cfg.status_share;
        if !(share.is_finite() && share > 0.0) {
            return None;
        }
        let d = self.descriptor.bytes() as u64;
        let ts = if self.cfg.timestamps {
            TIMESTAMP_LEN as u64
        } else {
            0
        };
        let bytes = u64::from(self.cfg.lower_header_bytes) + 8 + ts + 2 * d + 4 * d;
        let secs = (bytes * 8) as f64 / (share * rate as f64);
        Some(Duration::from_nanos((secs * 1e9).round() as u64))
    }

    fn data_frame(&mut self, now: Instant, offset: u64, len: u32, request: bool) -> SaraData {
        let eod = self
            .file_size
            .is_some_and(|s| s != UNLIMITED_SIZE && offset + u64::from(len) == s);
        let ts = (request && self.cfg.timestamps)
            .then(|| ts_encode(self.cfg.timestamp_type, now, self.cfg.unix_offset_ns));
        if request {
            self.deferred_since = None;
            self.frames_since_request = 0;
            self.last_request = Some(now);
            self.stats.status_requests += 1;
        } else {
            self.frames_since_request += 1;
        }
        self.stats.data_sent += 1;
        self.rc.on_data_sent(now, offset, len, request);
        SaraData {
            session: self.session,
            descriptor: self.descriptor,
            offset,
            len,
            request_status: request,
            eod,
            ts,
        }
    }

    /// The next frame to send now, if the pacer allows one.
    pub fn poll_message(&mut self, now: Instant) -> Option<Message> {
        if !self.started || self.failure.is_some() || self.pacer.due() > now {
            return None;
        }
        if self.metadata_due {
            self.metadata_due = false;
            self.stats.metadata_sent += 1;
            let m = SaraMetadata {
                session: self.session,
                descriptor: self.descriptor,
                file_size: self.file_size.unwrap_or(0),
                checksum: self.cfg.checksum,
                name: self.name,
            };
            // METADATA: about 8 + 2 + d + 8 + 17 bytes plus the checksum.
            let len =
                35.0 + self.descriptor.bytes() as f64 + 4.0 * m.checksum.kind().words() as f64;
            let ipi = self.ipi(len + f64::from(self.cfg.lower_header_bytes));
            self.pacer.on_send(now, ipi);
            return Some(Message::SaraMetadata(m));
        }
        if self.progress_deadline().is_none() {
            // Nothing was outstanding (an idle application, or the
            // start): the progress timeout counts from this frame.
            self.last_progress = now;
        }
        let payload = u64::from(self.cfg.payload.max(1));
        let d = if let Some((s, e)) = self.retx.first() {
            let len = (e - s).min(payload);
            self.retx.remove(s, s + len);
            self.remember_retx(now, s, s + len);
            self.stats.retransmits += 1;
            // The round's end asks for a STATUS to learn what is still
            // missing; while new data follows, its own requests do
            // (`round_end_status`).
            let round_over = self.retx.is_empty();
            let end_of_round =
                round_over && (self.cfg.round_end_status || self.next_new >= self.end());
            let eod = self.file_size.is_some_and(|f| s + len == f);
            // A request due mid-round waits for the round's last frame
            // (`defer_status_to_round_end`): its STATUS then lists the holes
            // this round did not repair instead of the ones still in flight.
            // A round can outlast a round trip (64 holes at a few packets
            // per RTT): a request waits at most one smoothed RTT for it,
            // and not at all before an RTT is known (a resumed transfer's
            // whole rest is one round: deferring its requests by the
            // 1 s request interval left a real GET responder silent past
            // its peer's inactivity timeout).
            let req = if round_over || !self.cfg.defer_status_to_round_end {
                self.wants_status(now, eod, end_of_round)
            } else {
                let due = self.wants_status(now, eod, false);
                let since = *self.deferred_since.get_or_insert(now);
                let limit = self.stats.srtt.unwrap_or(Duration::ZERO);
                if !due {
                    self.deferred_since = None;
                }
                eod || (due && now.saturating_since(since) >= limit)
            };
            self.data_frame(now, s, len as u32, req)
        } else if self.next_new < self.end() {
            let off = self.next_new;
            let len = (self.end() - off).min(payload);
            self.next_new += len;
            self.last_frame = Some((off, len as u32));
            let eod = self
                .file_size
                .is_some_and(|f| off + len == f && f != UNLIMITED_SIZE);
            let req = self.wants_status(now, eod, false);
            self.data_frame(now, off, len as u32, req)
        } else if self.probe_due {
            self.probe_due = false;
            let (off, len) = self.last_frame?;
            self.stats.retransmits += 1;
            self.stats.probes += 1;
            self.data_frame(now, off, len, true)
        } else {
            return None;
        };
        let ipi = self.ipi(self.frame_wire_len(d.len, d.ts.is_some()));
        self.pacer.on_send(now, ipi);
        Some(Message::SaraData(d))
    }

    /// Our timestamps' echoes tell when the answered DATA left: on, and of
    /// a nanosecond type (a seconds-only echo cannot order frames).
    fn echo_usable(&self) -> bool {
        self.cfg.timestamps && self.cfg.timestamp_type.is_precise()
    }

    fn remember_retx(&mut self, now: Instant, s: u64, e: u64) {
        if !self.echo_usable() {
            return;
        }
        if self.recent_retx.len() >= self.cfg.max_retx_ranges.max(1) {
            self.recent_retx.pop_front();
        }
        self.recent_retx.push_back((now, s, e));
    }

    /// Checks a STATUS against what was sent (§4.5: offsets within the
    /// transfer, holes in order, disjoint, non-empty, at or above the
    /// progress indicator).
    fn validate(&self, s: &SaraStatus, holes: &[(u64, u64)]) -> Result<(), StatusReject> {
        if s.session != self.session {
            return Err(StatusReject::WrongSession);
        }
        if !self.started || self.file_size.is_none() {
            return Err(StatusReject::Unexpected);
        }
        // The receiver cannot have seen past the highest byte sent.
        let sent = self.next_new;
        if s.progress > sent {
            return Err(StatusReject::Progress);
        }
        if s.in_response_to > sent {
            return Err(StatusReject::InResponseTo);
        }
        if check_holes(holes).is_err() || holes.iter().any(|&(a, b)| a < s.progress || b > sent) {
            return Err(StatusReject::Holes);
        }
        Ok(())
    }

    /// Offers `s` (with its whole hole list `holes`) as a *resume offer*:
    /// the receiver already holds part of the file from an interrupted
    /// transfer, and says so with a voluntary STATUS (§4.5 bit 15) whose
    /// holes are everything it lacks, up to the file's end. Returns whether
    /// it was taken; if not, hand the STATUS to
    /// [`Self::on_status_with_holes`] as usual.
    ///
    /// Taken only as the first valid STATUS of the transfer, voluntary,
    /// without error or "incomplete" flag, with holes in order, starting at
    /// the progress indicator and ending exactly at the file size (or no
    /// holes and a progress indicator at the size). Such a STATUS cannot be
    /// an ordinary reply, which lists holes only up to the highest byte
    /// received, and an ordinary reply that happens to fit says the same
    /// thing. Then every byte outside the holes counts as sent and
    /// acknowledged, the holes beyond what was already sent are queued,
    /// and holes below it are left to the frames in flight (later STATUS
    /// frames list whatever they miss). The rate controller is not told:
    /// these holes are not losses.
    ///
    /// The draft has no resume operation; this uses only what a STATUS
    /// may say at any time, and the receiver verifies the whole file's
    /// checksum before it confirms, so a false offer costs a failed
    /// transfer, never a wrong file reported as delivered.
    pub fn try_resume(&mut self, now: Instant, s: &SaraStatus, holes: &[(u64, u64)]) -> bool {
        let Some(size) = self.file_size else {
            return false;
        };
        if self.resumed
            || !self.started
            || self.failure.is_some()
            || self.stats.status_received > 0
            || s.session != self.session
            || size == UNLIMITED_SIZE
            || s.error != 0
            || !s.voluntary()
            || s.incomplete()
            || s.progress > size
            || s.in_response_to > size
            || check_holes(holes).is_err()
        {
            return false;
        }
        let shape_ok = match (holes.first(), holes.last()) {
            (None, _) => s.progress == size,
            (Some(&(a, _)), Some(&(_, b))) => a == s.progress && b == size,
            _ => false,
        };
        if !shape_ok {
            return false;
        }
        self.resumed = true;
        self.stats.status_received += 1;
        self.last_heard = now;
        let sent = self.next_new;
        let mut skipped = size - sent.min(size);
        for &(a, b) in holes {
            let a = a.max(sent);
            if a < b {
                skipped -= b - a;
                let _ = self.retx.insert(a, b);
            }
        }
        self.stats.resumed_bytes = skipped;
        self.next_new = size;
        if size > 0 {
            let len = size.min(u64::from(self.cfg.payload.max(1)));
            self.last_frame = Some((size - len, len as u32));
        }
        if s.progress > self.acked {
            let delta = s.progress - self.acked;
            self.acked = s.progress;
            self.stats.acked_bytes = self.acked;
            self.retx.remove(0, self.acked);
            self.events.push_back(Event::Acked(delta));
        }
        self.check_complete();
        true
    }

    /// Reads STATUS hole lists kept out of line from `store`, the one the
    /// receiver of the same flow writes
    /// ([`super::SaratogaReceiver::set_hole_store`]).
    pub fn set_hole_store(&mut self, store: SharedHoleStore) {
        self.hole_store = Some(store);
    }

    /// A STATUS arrived. Its hole list is the inline one or, when out of
    /// line, the one in the shared store; a list the store no longer
    /// keeps (or a stored list without a store) reads as the first hole
    /// with the incomplete flag, which §4.5 allows any STATUS to say.
    pub fn on_status(&mut self, now: Instant, s: &SaraStatus) {
        let Some((key, _)) = s.stored_holes() else {
            return self.on_status_with_holes(now, s, s.holes());
        };
        let list = self
            .hole_store
            .as_ref()
            .and_then(|st| st.lock().unwrap_or_else(|e| e.into_inner()).take(key));
        match list {
            Some(holes) => {
                self.on_status_with_holes(now, s, &holes);
                if let Some(st) = &self.hole_store {
                    st.lock().unwrap_or_else(|e| e.into_inner()).recycle(holes);
                }
            }
            None => {
                let short = s.without_store();
                self.on_status_with_holes(now, &short, short.holes());
            }
        }
    }

    /// A STATUS arrived whose hole list is `holes` rather than the (at
    /// most [`super::STATUS_INLINE_HOLES`]) holes inline in `s`: a runtime
    /// that parsed a wire STATUS with a longer list passes it whole, so
    /// that many holes are repaired per round trip. Validated as inline
    /// holes are (in order, disjoint, within what was sent).
    pub fn on_status_with_holes(&mut self, now: Instant, s: &SaraStatus, holes: &[(u64, u64)]) {
        if self.failure.is_some() {
            return;
        }
        if let Err(why) = self.validate(s, holes) {
            self.stats.status_rejected += 1;
            self.stats.last_reject = Some(why);
            return;
        }
        self.stats.status_received += 1;
        self.last_heard = now;
        if s.error != 0 {
            self.failure = Some(Failure::PeerError(s.error));
            return;
        }
        // New data acknowledged: the frontier (progress indicator or
        // in-response-to offset) growing, or the progress indicator alone
        // growing. Once a STATUS has answered the file's last frame the
        // frontier is at the end and only the progress indicator still
        // moves while holes are repaired: counting the frontier alone
        // declared a transfer repairing its holes at a low STATUS rate
        // (38.4 kb/s reverse path) stalled 60 s after its last new frame,
        // mid-repair (the seed-5 `dmc` STFRC stall). The draft names no
        // such timer (§3 leaves session timers to implementations); ours
        // must only fire when nothing moves.
        let frontier = s.progress.max(s.in_response_to);
        if frontier > self.best_ack || s.progress > self.acked {
            self.best_ack = self.best_ack.max(frontier);
            self.last_progress = now;
        }
        let echo = s
            .timestamp()
            // Only an echo of the type we write is ours: a peer's own
            // bytes (the Go encoder puts its offsets in the field, which
            // then read as type 0) would make a false RTT sample.
            .filter(|t| self.echo_usable() && t[0] == self.cfg.timestamp_type.code())
            .and_then(|t| ts_decode(&t, self.cfg.unix_offset_ns))
            .filter(|&t| t <= now);
        if let Some(t) = echo {
            let rtt = now - t;
            self.stats.rtt_samples += 1;
            self.stats.sum_rtt += rtt;
            self.stats.srtt = Some(match self.stats.srtt {
                None => rtt,
                Some(sr) => Duration((sr.0 / 8) * 7 + rtt.0 / 8),
            });
        }
        if s.progress > self.acked {
            let delta = s.progress - self.acked;
            self.acked = s.progress;
            self.stats.acked_bytes = self.acked;
            self.retx.remove(0, self.acked);
            self.events.push_back(Event::Acked(delta));
        }
        if !s.metadata_received() {
            // §4.5 bit 13: the receiver lacks METADATA; send it again.
            self.metadata_due = true;
        }
        // Re-sent since the echoed DATA left: still in flight, not holes.
        // Without an echo (a voluntary STATUS, or timestamps off) there is
        // no telling, and the holes are taken as they are: a duplicate
        // costs a frame, a hole never re-sent would stall the transfer.
        // Merged into disjoint ranges in order, so that taking them out of
        // the holes is one pass over both lists: a STATUS may list
        // thousands of holes and `recent_retx` hold thousands of ranges,
        // and a range-by-range removal per hole made one STATUS cost
        // their product (tens of millions of steps a datagram).
        let in_flight: Vec<(u64, u64)> = match echo {
            Some(t) => {
                while self.recent_retx.front().is_some_and(|r| r.0 < t) {
                    self.recent_retx.pop_front();
                }
                let mut set = RangeSet::new(usize::MAX);
                for r in &self.recent_retx {
                    let _ = set.insert(r.1, r.2);
                }
                set.iter().collect()
            }
            None => {
                if !self.echo_usable() {
                    self.recent_retx.clear();
                }
                Vec::new()
            }
        };
        // What the list speaks for: up to its last hole when incomplete,
        // else every byte sent before the echoed DATA (up to the offset it
        // answers, whose frame arrived).
        let span_end = if s.incomplete() {
            holes.last().map_or(self.acked, |h| h.1)
        } else {
            s.in_response_to.max(holes.last().map_or(0, |h| h.1))
        };
        self.retx.remove(self.acked, span_end);
        // Holes come in order (checked), as do the in-flight ranges: the
        // first in-flight range that may still meet a hole only moves on.
        let mut first = 0;
        for &(a, b) in holes {
            let a = a.max(self.acked);
            if a >= b {
                continue;
            }
            while in_flight.get(first).is_some_and(|r| r.1 <= a) {
                first += 1;
            }
            let mut at = a;
            for &(x, y) in in_flight[first..].iter().take_while(|r| r.0 < b) {
                if x > at {
                    let _ = self.retx.insert(at, x);
                }
                at = at.max(y);
            }
            if at < b {
                let _ = self.retx.insert(at, b);
            }
        }
        let info = StatusInfo {
            now,
            progress: s.progress,
            in_response_to: s.in_response_to,
            holes,
            incomplete: s.incomplete(),
            ts_echo: echo,
            voluntary: s.voluntary(),
        };
        self.rc.on_status(&info);
        if !self.slow_start_exit_reported && self.rc.left_slow_start() {
            self.slow_start_exit_reported = true;
            self.events.push_back(Event::SlowStartExit);
        }
        self.check_complete();
        if self.has_work() {
            self.pacer
                .reschedule(self.ipi(self.frame_wire_len(self.cfg.payload, false)));
        }
    }

    pub(super) fn check_complete(&mut self) {
        if self.is_complete() && !self.all_acked_reported {
            self.all_acked_reported = true;
            self.retx.clear();
            self.probe_due = false;
            self.events.push_back(Event::AllAcked);
        }
    }

    /// GET responder: a REQUEST arrived.
    pub(super) fn on_request(&mut self, now: Instant, kind: RequestType, name: u64, session: u32) {
        match self.role {
            Role::GetResponder { name: mine, size }
                if name == mine && matches!(kind, RequestType::Get | RequestType::GetDelete) =>
            {
                if !self.started {
                    self.session = session;
                    self.start(size, now);
                } else if session == self.session {
                    // A repeated REQUEST: our METADATA was lost.
                    self.metadata_due = true;
                    self.last_heard = now;
                } else {
                    self.stats.requests_rejected += 1;
                }
            }
            _ => self.stats.requests_rejected += 1,
        }
    }

    /// Timers: inactivity and the end-of-data probe.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !self.active() {
            return;
        }
        if self.rc.poll_timeout().is_some_and(|t| now >= t) {
            self.rc.handle_timeout(now);
        }
        if now >= self.last_heard + self.cfg.inactivity_timeout {
            self.failure = Some(Failure::InactivityTimeout {
                last_heard: self.last_heard,
            });
            return;
        }
        if let Some(t) = self.progress_deadline() {
            if now >= t {
                self.failure = Some(Failure::NoProgress {
                    stalled: now.saturating_since(self.last_progress),
                    acked: self.acked,
                });
                return;
            }
        }
        if !self.has_work() && self.last_frame.is_some() {
            let due = self.last_request.map_or(now, |t| t + self.probe_interval());
            if now >= due {
                self.probe_due = true;
            }
        }
    }

    /// Time from the last STATUS request to a probe: the STATUS request
    /// interval, but at least two smoothed RTTs once measured (on a path
    /// whose RTT exceeds the interval, an earlier probe would only
    /// duplicate the last frame while its STATUS is on its way).
    fn probe_interval(&self) -> Duration {
        let rtts = self
            .stats
            .srtt
            .map_or(Duration::ZERO, |r| r.saturating_mul(2));
        self.cfg.status_request_interval.max(rtts)
    }

    /// When the progress timeout expires: only while sent data awaits
    /// acknowledgement (an idle application is not a stall), after
    /// `max(T, N × srtt)` without new data acknowledged.
    fn progress_deadline(&self) -> Option<Instant> {
        if self.next_new <= self.acked && self.retx.is_empty() {
            return None;
        }
        let rtts = self.stats.srtt.map_or(Duration::ZERO, |r| {
            r.saturating_mul(u64::from(self.cfg.progress_timeout_rtts))
        });
        let limit = self.cfg.progress_timeout.max(rtts);
        (limit > Duration::ZERO).then(|| self.last_progress + limit)
    }

    /// When the sender next needs waking.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.active() {
            return None;
        }
        let mut t = self.last_heard + self.cfg.inactivity_timeout;
        if let Some(p) = self.progress_deadline() {
            t = t.min(p);
        }
        if let Some(rc) = self.rc.poll_timeout() {
            t = t.min(rc);
        }
        if self.has_work() {
            t = t.min(self.pacer.due());
        } else if self.last_frame.is_some() {
            let probe = self
                .last_request
                .map_or(self.pacer.due(), |r| r + self.probe_interval());
            t = t.min(probe);
        }
        Some(t)
    }
}
