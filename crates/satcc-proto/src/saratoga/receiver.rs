//! The receiving side of a Saratoga transfer: a PUT's destination, or a
//! GET's requester (draft-wood-tsvwg-saratoga-22 §3).
//!
//! It records what DATA (§4.4) brings in a bounded [`RangeSet`] and
//! answers every DATA that requests a STATUS (bit 15) with one (§4.5): the
//! progress indicator (lowest offset not received), the offset of the DATA
//! it answers, the timestamp that DATA carried, whether METADATA has been
//! seen (bit 13), and the holes between the progress indicator and the
//! highest byte received (at most [`super::STATUS_INLINE_HOLES`]; bit 14
//! says when there are more). DATA outside the file (beyond the METADATA
//! size or the descriptor's range) is rejected and counted.
//!
//! A GET requester first sends REQUEST (§4.2) and repeats it every
//! [`SaratogaConfig::request_retry`] until METADATA or DATA of the session
//! arrives.

use std::collections::VecDeque;

use super::holes::SharedHoleStore;
use super::wire::{Checksum, DescriptorSize, RequestType};
use super::{Failure, RangeSet, SaraData, SaraMetadata, SaraRequest, SaraStatus, SaratogaConfig};
use crate::endpoint::Message;
use crate::time::{Duration, Instant};

/// STATUS frames queued at most (older ones are dropped: a newer STATUS
/// says at least as much).
const MAX_PENDING_STATUS: usize = 8;

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaratogaReceiverStats {
    /// Distinct payload bytes received.
    pub delivered_bytes: u64,
    /// DATA frames received (valid, including duplicates).
    pub data_received: u64,
    /// DATA frames that brought nothing new.
    pub duplicates: u64,
    /// DATA frames rejected: outside the file or the descriptor range.
    pub data_rejected: u64,
    /// DATA frames dropped because the range set was at its cap.
    pub dropped_at_cap: u64,
    /// METADATA frames received.
    pub metadata_received: u64,
    /// METADATA frames rejected (a size smaller than data received, a
    /// descriptor that cannot hold the size).
    pub metadata_rejected: u64,
    /// STATUS frames sent.
    pub status_sent: u64,
    /// REQUEST frames sent (GET).
    pub requests_sent: u64,
    /// Messages of another protocol, direction or session.
    pub foreign: u64,
}

/// The Saratoga receiver (PUT destination or GET requester).
#[derive(Debug)]
pub struct SaratogaReceiver {
    cfg: SaratogaConfig,
    session: u32,
    /// GET: the request to send, until the transfer starts.
    get: Option<SaraRequest>,
    request_due: bool,
    last_request: Option<Instant>,
    file_size: Option<u64>,
    eod_end: Option<u64>,
    descriptor: DescriptorSize,
    checksum: Checksum,
    name: Option<u64>,
    metadata_seen: bool,
    received: RangeSet,
    pending: VecDeque<SaraStatus>,
    heard: bool,
    last_heard: Instant,
    /// When a DATA last brought new bytes (or the transfer's first frame
    /// arrived): the receiver's progress timeout counts from here.
    last_new: Option<Instant>,
    completed_reported: bool,
    /// Where hole lists longer than the message holds go (the simulator's;
    /// see [`Self::set_hole_store`]).
    hole_store: Option<SharedHoleStore>,
    pub(super) failure: Option<Failure>,
    pub(super) stats: SaratogaReceiverStats,
}

impl SaratogaReceiver {
    /// A PUT destination for session `cfg.session`: passive until METADATA
    /// or DATA of that session arrives.
    pub fn new(cfg: SaratogaConfig, now: Instant) -> SaratogaReceiver {
        SaratogaReceiver {
            session: cfg.session,
            received: RangeSet::new(cfg.max_ranges),
            cfg,
            get: None,
            request_due: false,
            last_request: None,
            file_size: None,
            eod_end: None,
            descriptor: DescriptorSize::D16,
            checksum: Checksum::None,
            name: None,
            metadata_seen: false,
            pending: VecDeque::new(),
            heard: false,
            last_heard: now,
            last_new: None,
            completed_reported: false,
            hole_store: None,
            failure: None,
            stats: SaratogaReceiverStats::default(),
        }
    }

    /// A GET requester: sends REQUEST(get, `name`) in session
    /// `cfg.session` at once, and receives the file.
    pub fn get(cfg: SaratogaConfig, name: u64, now: Instant) -> SaratogaReceiver {
        let mut r = SaratogaReceiver::new(cfg, now);
        r.get = Some(SaraRequest {
            session: r.session,
            descriptor: DescriptorSize::D64,
            kind: RequestType::Get,
            name,
        });
        r.request_due = true;
        r
    }

    /// The file size, once METADATA (or the end-of-data DATA) told it.
    pub fn file_size(&self) -> Option<u64> {
        self.file_size.or(self.eod_end)
    }

    /// The checksum METADATA announced (the runtime verifies the file's
    /// bytes with [`Checksum::verify`]; the simulator has none).
    pub fn checksum(&self) -> Checksum {
        self.checksum
    }

    /// The name key METADATA announced.
    pub fn name(&self) -> Option<u64> {
        self.name
    }

    /// Every byte of `[0, size)` has arrived (METADATA's size, else the
    /// end that the end-of-data DATA marked).
    pub fn is_complete(&self) -> bool {
        self.file_size()
            .is_some_and(|s| self.received.contains(0, s))
    }

    /// Verifies a received file's bytes (the runtime's, which holds them):
    /// `None` until [`Self::is_complete`]; then whether `file` has the
    /// METADATA size and checksum (§4.3; always true for no checksum).
    pub fn verify(&self, file: &[u8]) -> Option<bool> {
        if !self.is_complete() {
            return None;
        }
        let size = self.file_size()?;
        Some(file.len() as u64 == size && self.checksum.verify(file))
    }

    /// Marks `ranges` as received: what an interrupted transfer of the
    /// same file left on disk, restored by a runtime after METADATA (the
    /// size must be known; ranges are clipped to it). Returns the bytes
    /// newly covered. A range that would exceed the range cap is skipped
    /// (it is then requested again, like any hole).
    pub fn restore(&mut self, ranges: &[(u64, u64)]) -> u64 {
        let Some(size) = self.file_size else {
            return 0;
        };
        let mut n = 0;
        for &(a, b) in ranges {
            let b = b.min(size);
            if a < b {
                n += self.received.insert(a, b).unwrap_or(0);
            }
        }
        self.stats.delivered_bytes += n;
        self.check_complete();
        n
    }

    /// Puts STATUS hole lists longer than [`super::STATUS_INLINE_HOLES`]
    /// in `store` (up to [`SaratogaConfig::status_max_holes`] each), for
    /// the sender that shares it: a driver whose messages are the frames
    /// (the simulator) carries what a real frame lists. A runtime that
    /// encodes frames itself needs none.
    pub fn set_hole_store(&mut self, store: SharedHoleStore) {
        self.hole_store = Some(store);
    }

    /// The received ranges.
    pub fn received(&self) -> &RangeSet {
        &self.received
    }

    /// Why the receiver gave up, if it did.
    pub fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// The counters.
    pub fn receiver_stats(&self) -> SaratogaReceiverStats {
        self.stats
    }

    fn heard(&mut self, now: Instant) {
        self.heard = true;
        self.last_heard = now;
        self.last_new.get_or_insert(now);
        // The transfer started: no more REQUESTs.
        self.request_due = false;
        self.get = None;
    }

    pub(super) fn on_metadata(&mut self, now: Instant, m: &SaraMetadata) {
        if m.session != self.session {
            self.stats.foreign += 1;
            return;
        }
        // §4.3: the size must fit the descriptor, and cannot be below data
        // already received (a file may grow, never shrink).
        if m.file_size > m.descriptor.max_value()
            || m.file_size < self.received.max_end()
            || self.file_size.is_some_and(|s| m.file_size < s)
        {
            self.stats.metadata_rejected += 1;
            return;
        }
        self.heard(now);
        self.stats.metadata_received += 1;
        self.metadata_seen = true;
        self.file_size = Some(m.file_size);
        self.descriptor = m.descriptor;
        self.checksum = m.checksum;
        self.name = Some(m.name);
        self.check_complete();
    }

    pub(super) fn on_data(&mut self, now: Instant, d: &SaraData) {
        if d.session != self.session {
            self.stats.foreign += 1;
            return;
        }
        let Some(end) = d.offset.checked_add(u64::from(d.len)) else {
            self.stats.data_rejected += 1;
            return;
        };
        let limit = self.file_size.unwrap_or(u64::MAX);
        if end > limit
            || end > d.descriptor.max_value()
            || d.eod && self.file_size.is_some_and(|s| end != s)
        {
            self.stats.data_rejected += 1;
            return;
        }
        self.heard(now);
        self.stats.data_received += 1;
        if !self.metadata_seen {
            self.descriptor = d.descriptor;
        }
        if d.eod {
            self.eod_end = Some(end);
        }
        match self.received.insert(d.offset, end) {
            Some(0) => self.stats.duplicates += 1,
            Some(n) => {
                self.stats.delivered_bytes += n;
                self.last_new = Some(now);
            }
            None => self.stats.dropped_at_cap += 1,
        }
        if d.request_status {
            let s = self.status(d.offset, d.ts, false);
            self.queue(s);
        }
        self.check_complete();
    }

    /// A STATUS for the current state.
    fn status(&self, in_response_to: u64, ts: Option<[u8; 16]>, voluntary: bool) -> SaraStatus {
        let progress = self.received.prefix_end();
        let mut s = SaraStatus::new(self.session, self.descriptor, progress, in_response_to);
        s.set_timestamp(ts);
        s.set_voluntary(voluntary);
        s.set_metadata_received(self.metadata_seen);
        let top = self.received.max_end();
        let max = self.cfg.status_max_holes;
        match &self.hole_store {
            Some(store) if max > super::STATUS_INLINE_HOLES => {
                let mut gaps = self.received.gaps(progress, top).take(max + 1);
                let head: Vec<(u64, u64)> =
                    gaps.by_ref().take(super::STATUS_INLINE_HOLES + 1).collect();
                if head.len() <= super::STATUS_INLINE_HOLES {
                    s.set_holes(head);
                } else {
                    let first = head[0];
                    let rest = max - head.len();
                    let mut st = store.lock().unwrap_or_else(|e| e.into_inner());
                    let (key, n) = st.put(head.into_iter().chain(gaps.by_ref().take(rest)));
                    // The (max + 1)-th hole, if any: the list is incomplete.
                    let more = gaps.next().is_some();
                    s.set_stored_holes(first, key, n, more);
                }
            }
            _ => s.set_holes(self.received.gaps(progress, top)),
        }
        s
    }

    fn queue(&mut self, s: SaraStatus) {
        if self.pending.len() >= MAX_PENDING_STATUS {
            self.pending.pop_front();
        }
        self.pending.push_back(s);
    }

    fn check_complete(&mut self) {
        if self.is_complete() && !self.completed_reported {
            self.completed_reported = true;
            if self.cfg.voluntary_status_on_complete && self.pending.is_empty() {
                let s = self.status(self.received.max_end(), None, true);
                self.queue(s);
            }
        }
    }

    /// The next frame to send.
    pub fn poll_message(&mut self, now: Instant) -> Option<Message> {
        if self.failure.is_some() {
            return None;
        }
        if let Some(s) = self.pending.pop_front() {
            self.stats.status_sent += 1;
            return Some(Message::SaraStatus(s));
        }
        if self.request_due {
            if let Some(r) = self.get {
                self.request_due = false;
                self.last_request = Some(now);
                self.stats.requests_sent += 1;
                if !self.heard {
                    self.last_heard = now;
                    self.heard = true;
                    // Inactivity counts from the first REQUEST; `heard`
                    // goes back to waiting for the responder below.
                }
                return Some(Message::SaraRequest(r));
            }
        }
        None
    }

    /// Timers: REQUEST retransmission and inactivity.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.failure.is_some() || self.is_complete() {
            return;
        }
        if self.heard && now >= self.last_heard + self.cfg.inactivity_timeout {
            self.failure = Some(Failure::InactivityTimeout {
                last_heard: self.last_heard,
            });
            return;
        }
        if let Some(p) = self.progress_deadline() {
            if now >= p {
                self.failure = Some(Failure::NoProgress {
                    stalled: now.saturating_since(self.last_new.unwrap_or(now)),
                    acked: self.received.prefix_end(),
                });
                return;
            }
        }
        if self.get.is_some() {
            let due = self
                .last_request
                .map_or(now, |t| t + self.cfg.request_retry);
            if now >= due {
                self.request_due = true;
            }
        }
    }

    /// When the receiver's progress timeout expires, if it is on and the
    /// transfer has started.
    fn progress_deadline(&self) -> Option<Instant> {
        let limit = self.cfg.receiver_progress_timeout;
        (limit > Duration::ZERO)
            .then_some(self.last_new)
            .flatten()
            .map(|t| t + limit)
    }

    /// When the receiver next needs waking.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.failure.is_some() || self.is_complete() {
            return None;
        }
        let mut t: Option<Instant> = None;
        if self.heard {
            t = Some(self.last_heard + self.cfg.inactivity_timeout);
        }
        if let Some(p) = self.progress_deadline() {
            t = Some(t.map_or(p, |t| t.min(p)));
        }
        if self.get.is_some() {
            let r = self
                .last_request
                .map_or(self.last_heard, |x| x + self.cfg.request_retry);
            t = Some(t.map_or(r, |t| t.min(r)));
        }
        t
    }
}
