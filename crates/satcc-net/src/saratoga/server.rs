//! The responder: many PUT and GET sessions on one socket, serving a
//! directory, with large files' checksums computed in worker threads.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use satcc_proto::saratoga::wire::{self, error_code, Checksum, Repr, RequestType};
use satcc_proto::saratoga::{Failure, SaraRequest, SaratogaReceiver};
use satcc_proto::{Duration, Endpoint, Instant, Message};

use super::beacon;
use super::files::{
    check_name, checksum_file, checksum_file_until, count_resumable, file_id, partial_path,
    resume_path, sweep_partials, FileId, ResumeInfo, SumCache, TempFile,
};
use super::frames::{error_status, parse, status_frame};
use super::session::{rate, sara_config, send_all_from_receiver, RecvSide, SendSide, HASH_AHEAD};
use super::types::{error_text, Access, ServeConfig, ServerCounters, SessionReport};
use crate::clock::{grow_buffers, Clock, Socket};
use crate::conn::MAX_RECEIVE;

/// How many times a resume offer is repeated (before STATUS replies).
pub(super) const RESUME_OFFER_REPEATS: u8 = 8;

#[derive(Debug)]
enum Side {
    Put(Box<RecvSide>),
    Get(Box<SendSide>),
    /// A GET whose file's checksum a worker thread computes first.
    Preparing(Box<Preparing>),
}

/// A GET waiting for its file's checksum: computed in a thread of its
/// own, so that a large file (SHA-1 runs at a few hundred MB/s) does not
/// stall the server's other sessions.
#[derive(Debug)]
struct Preparing {
    file: Option<File>,
    name: Vec<u8>,
    size: u64,
    id: FileId,
    rx: std::sync::mpsc::Receiver<io::Result<Checksum>>,
    /// Set when the session goes: the worker stops at its next block.
    cancel: Arc<AtomicBool>,
    /// The worker, joined when the session goes, so that no worker
    /// outlives its session and [`MAX_SUM_WORKERS`] bounds the threads
    /// alive, not only the sessions waiting.
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Preparing {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let Some(w) = self.worker.take() {
            // At most one 1 MB block's read and hash away.
            let _ = w.join();
        }
    }
}

/// Files up to this size are checksummed in the server's thread (a few
/// milliseconds); larger ones in a worker.
const INLINE_SUM: u64 = 4 << 20;

/// Checksum workers at once; a GET beyond is refused (the client repeats
/// its REQUEST and gets in later).
const MAX_SUM_WORKERS: usize = 4;

#[derive(Debug)]
struct Session {
    side: Side,
    name: String,
    started: Instant,
    last_heard: Instant,
    /// Finished (reported) at; kept until `linger` has passed.
    ended: Option<Instant>,
    /// How it ended: `Err((STATUS error code or 0, why))`.
    outcome: Outcome,
    /// A PUT's bytes counted against the quotas (given back if it fails).
    reserved: u64,
}

/// A Saratoga responder: accepts PUTs into a directory and serves GETs
/// from it, many sessions at once on one socket.
#[derive(Debug)]
pub struct SaratogaServer {
    sock: Socket,
    cfg: ServeConfig,
    clock: Clock,
    sessions: HashMap<(SocketAddr, u32), Session>,
    counters: ServerCounters,
    /// Length of the datagram being handled: an unsolicited reply (a
    /// refusal, a request for METADATA) is sent only if at most twice as
    /// long, so a spoofed source address gains no useful amplification
    /// (the smallest REQUEST is 9 bytes, a refusal 12).
    in_len: usize,
    /// Bytes of PUTs counted per peer address and in total (quotas).
    used: HashMap<IpAddr, u64>,
    used_total: u64,
    /// Checksums of files served, so that repeated GETs (or a peer
    /// sending REQUESTs with fresh session ids) do not re-read a large
    /// file in the server's only thread each time.
    sums: SumCache,
}

impl SaratogaServer {
    /// Binds `addr` to serve `cfg.dir` (which must be a directory).
    pub fn bind(addr: SocketAddr, mut cfg: ServeConfig) -> io::Result<SaratogaServer> {
        let dir = cfg
            .dir
            .canonicalize()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", cfg.dir.display())))?;
        if !dir.is_dir() {
            return Err(io::Error::other(format!(
                "{}: not a directory",
                dir.display()
            )));
        }
        let (stale_removed, resumable_found) = sweep_partials(&dir, cfg.max_resumable);
        cfg.dir = dir;
        let s = UdpSocket::bind(addr)?;
        grow_buffers(&s, 8 << 20);
        if cfg.announce.is_some() {
            // Announcing to a broadcast address needs it.
            s.set_broadcast(true)?;
        }
        Ok(SaratogaServer {
            sock: Socket::new(s),
            cfg,
            clock: Clock::new(),
            sessions: HashMap::new(),
            counters: ServerCounters {
                stale_removed,
                resumable_found,
                ..ServerCounters::default()
            },
            in_len: 0,
            used: HashMap::new(),
            used_total: 0,
            sums: SumCache::default(),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// The counters so far.
    pub fn counters(&self) -> ServerCounters {
        self.counters
    }

    /// Serves until `stop` is set (checked at least every 50 ms), calling
    /// `report` for each finished session. On stop, transfers in progress
    /// are abandoned and their temporary files removed.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&SessionReport),
    ) -> io::Result<()> {
        let mut out = vec![0u8; MAX_RECEIVE + 64];
        let mut inbuf = vec![0u8; MAX_RECEIVE + 1];
        let mut next_beacon = self.clock.now();
        while !stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            if let Some((to, every)) = self.cfg.announce {
                if now >= next_beacon {
                    let free = beacon::free_space_kb(&self.cfg.dir);
                    // Willing to send (serve GETs) and to receive (PUTs)
                    // as the access allows (§4.1).
                    let yes_if = |b: bool| if b { beacon::WILLING_YES } else { 0 };
                    let b = beacon::beacon_frame(
                        &self.cfg.eid,
                        free,
                        yes_if(self.cfg.access != Access::WriteOnly),
                        yes_if(self.cfg.access != Access::ReadOnly),
                    );
                    if self.sock.send_to(&b, to).is_ok() {
                        self.counters.beacons_sent += 1;
                    }
                    next_beacon = now + every;
                }
            }
            self.step(now, &mut out, report);
            let mut deadline = now + Duration::from_millis(50);
            for s in self.sessions.values() {
                let t = match &s.side {
                    // A complete file still being hashed: at once.
                    Side::Put(r)
                        if s.ended.is_none() && r.receiver.is_complete() && r.hash_lag() > 0 =>
                    {
                        Some(now)
                    }
                    Side::Put(r) if s.ended.is_none() => r.receiver.poll_timeout(),
                    Side::Get(g) if s.ended.is_none() => g.next_wake(),
                    _ => None,
                };
                if let Some(t) = t {
                    deadline = deadline.min(t);
                }
            }
            if let Some((n, from)) = self.sock.recv_until(&self.clock, &mut inbuf, deadline)? {
                self.counters.datagrams += 1;
                let now = self.clock.now();
                self.on_datagram(now, from, &inbuf[..n]);
                self.step(now, &mut out, report);
            }
        }
        let now = self.clock.now();
        for ((peer, id), mut s) in self.sessions.drain() {
            if s.ended.is_none() {
                if let Side::Put(r) = &mut s.side {
                    // A stopped server's PUTs may be resumed after restart.
                    let room = count_resumable(&self.cfg.dir) < self.cfg.max_resumable;
                    r.suspend_or_discard(room);
                }
                self.counters.failed += 1;
                report(&session_report(
                    &s,
                    peer,
                    id,
                    now,
                    Err("server stopped".into()),
                ));
            }
        }
        Ok(())
    }

    fn send(&self, buf: &[u8], to: SocketAddr) {
        let _ = self.sock.send_to(buf, to);
    }

    fn refuse(&mut self, peer: SocketAddr, session: u32, code: u8) {
        self.counters.refused += 1;
        self.reply(&error_status(session, code), peer);
    }

    /// An unsolicited reply, sent only if at most twice what came in.
    fn reply(&self, buf: &[u8], to: SocketAddr) {
        if buf.len() <= 2 * self.in_len {
            self.send(buf, to);
        }
    }

    fn active_from(&self, ip: IpAddr) -> usize {
        self.sessions
            .iter()
            .filter(|(k, s)| k.0.ip() == ip && s.ended.is_none())
            .count()
    }

    fn active(&self) -> usize {
        self.sessions.values().filter(|s| s.ended.is_none()).count()
    }

    /// Whether a new session from `peer` fits the limits.
    fn admit(&self, peer: SocketAddr) -> bool {
        self.active() < self.cfg.max_sessions
            && self.active_from(peer.ip()) < self.cfg.max_sessions_per_peer
            // Finished sessions are small but not free: bound them too.
            && self.sessions.len() < self.cfg.max_sessions.saturating_mul(8).max(64)
    }

    fn name_in_use(&self, name: &str) -> bool {
        self.sessions
            .values()
            .any(|s| s.ended.is_none() && s.name == name && matches!(s.side, Side::Put(_)))
    }

    /// The same sender starting the same file again (issue 33): a PUT of
    /// `name` still running from `peer`'s address (any port, any session:
    /// an interrupted client rerun has new ones) whose METADATA gave the
    /// same size and checksum (`file`). Such a session is ended as a client that went
    /// silent would be, its bytes kept for resume, instead of answering
    /// "file in use" until its inactivity timeout. Returns whether one was.
    fn supersede(&mut self, peer: SocketAddr, name: &str, file: (u64, Checksum)) -> bool {
        let mut any = false;
        // Counted (a directory scan) only once a session matches: a
        // METADATA that supersedes nothing costs no disk access.
        let mut room = None;
        let (dir, max_resumable) = (&self.cfg.dir, self.cfg.max_resumable);
        for (&(from, _), s) in self.sessions.iter_mut() {
            if from.ip() != peer.ip() || s.ended.is_some() || s.outcome.is_some() || s.name != name
            {
                continue;
            }
            let Side::Put(r) = &mut s.side else {
                continue;
            };
            if r.meta != Some(file) {
                continue;
            }
            // Its bytes kept for resume now, so that the new session finds
            // them; reported and its quota given back by the next step, as
            // an inactivity timeout is (a second suspend is a no-op).
            r.resumable_fail = true;
            let room = *room.get_or_insert_with(|| count_resumable(dir) < max_resumable);
            r.suspend_or_discard(room);
            s.outcome = Some(Err((
                0,
                "superseded: the same address started the same file again".into(),
            )));
            any = true;
        }
        if any {
            self.counters.superseded += 1;
        }
        any
    }

    fn on_datagram(&mut self, now: Instant, peer: SocketAddr, buf: &[u8]) {
        self.in_len = buf.len();
        if !self.cfg.allow.is_empty() && !self.cfg.allow.iter().any(|c| c.contains(peer.ip())) {
            // Not even a refusal: an address outside the list learns
            // nothing, and cannot make the server send to a third party.
            self.counters.not_allowed += 1;
            return;
        }
        let Some((repr, payload)) = parse(buf) else {
            self.counters.malformed += 1;
            return;
        };
        let session = match &repr {
            Repr::Beacon(_) => {
                self.counters.beacons_received += 1;
                return;
            }
            Repr::Request(r) => r.session,
            Repr::Metadata(m) => m.session,
            Repr::Data(d) => d.session,
            Repr::Status(s) => s.session,
        };
        let key = (peer, session);
        let Some(s) = self.sessions.get_mut(&key) else {
            match &repr {
                Repr::Metadata(m) => self.new_put(now, peer, m),
                Repr::Request(r) if r.kind == RequestType::Put => self.put_request(peer, r),
                Repr::Request(r) => self.new_get(now, peer, r),
                Repr::Data(d) => {
                    self.counters.unknown_session += 1;
                    // A PUT whose METADATA was lost: ask for it (a STATUS
                    // with bit 13 set, no larger than the DATA: no
                    // amplification), only when the DATA asked for one.
                    if d.request_status {
                        self.reply(&status_frame(session, 0, false), peer);
                    }
                }
                Repr::Status(st) if st.session == 0 && st.error != 0 => {
                    self.session_zero_error(peer, st.error);
                }
                _ => self.counters.unknown_session += 1,
            }
            return;
        };
        if let Some(Err((code, _))) = &s.outcome {
            // A failed session: repeat why to a sender still asking.
            if matches!(&repr, Repr::Data(d) if d.request_status) && *code != 0 {
                let b = error_status(session, *code);
                self.reply(&b, peer);
            }
            return;
        }
        let mut fail: Option<(u8, String)> = None;
        match (&mut s.side, &repr) {
            (Side::Put(r), Repr::Metadata(m)) if m.entry.path == s.name.as_bytes() => {
                s.last_heard = now;
                if let Err(c) = r.on_metadata(now, m) {
                    fail = Some((c, format!("size {} over --max-size", m.entry.size)));
                }
            }
            (Side::Put(r), Repr::Data(d)) => {
                s.last_heard = now;
                if let Err(e) = r.on_data(now, d, payload) {
                    fail = Some((error_code::CANT_RECEIVE, e.to_string()));
                }
            }
            (Side::Get(g), Repr::Status(st)) => {
                s.last_heard = now;
                if st.error != 0 {
                    fail = Some((0, format!("peer aborted: {}", error_text(st.error))));
                } else {
                    let before = g.sender.sender_stats().status_rejected;
                    // A resume offer from a GET client that kept part of
                    // the file (its first STATUS), else an ordinary one.
                    g.on_status(now, st);
                    self.counters.status_rejected +=
                        g.sender.sender_stats().status_rejected - before;
                }
            }
            (Side::Preparing(p), Repr::Request(r)) if r.name == p.name => {
                // Repeated while the checksum is computed: still alive.
                s.last_heard = now;
            }
            (Side::Get(g), Repr::Request(r)) if r.name == g.name => {
                // A repeated REQUEST: our METADATA was lost.
                s.last_heard = now;
                let m = Message::SaraRequest(SaraRequest {
                    session,
                    descriptor: r.descriptor,
                    kind: RequestType::Get,
                    name: 0,
                });
                g.sender.handle_input(now, &m);
            }
            _ => {
                self.counters.unknown_session += 1;
                return;
            }
        }
        if let Some(f) = fail {
            s.outcome = Some(Err(f));
        }
    }

    /// A REQUEST(put) (§4.2, type 2): the peer asks before sending. The
    /// answer is a STATUS of its session, success (with "METADATA not
    /// received", so a sender waits for nothing else) or the error a
    /// METADATA would get, and no state: the session starts, as a blind
    /// PUT's does, with the METADATA that follows ([`Self::new_put`]
    /// checks everything again, the size too), so a flood of requests
    /// costs the server one reply each and no memory.
    fn put_request(&mut self, peer: SocketAddr, r: &wire::Request) {
        let session = r.session;
        if self.cfg.access == Access::ReadOnly {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        }
        let Ok(name) = check_name(&r.name) else {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        };
        if !self.admit(peer) {
            return self.refuse(peer, session, error_code::CANT_RECEIVE);
        }
        if self.name_in_use(name) {
            // A REQUEST names the file only: let the METADATA that follows
            // decide (`new_put`) when this address is sending the name.
            let own = self.sessions.iter().any(|(&(from, _), s)| {
                from.ip() == peer.ip()
                    && s.ended.is_none()
                    && s.name == name
                    && matches!(s.side, Side::Put(_))
            });
            if !own {
                return self.refuse(peer, session, error_code::FILE_IN_USE);
            }
        }
        let exists = std::fs::symlink_metadata(self.cfg.dir.join(name)).is_ok();
        if !self.cfg.transfer.overwrite && exists {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        }
        self.reply(&status_frame(session, error_code::SUCCESS, false), peer);
    }

    /// A METADATA of a new session: a PUT, if name, size and limits allow.
    fn new_put(&mut self, now: Instant, peer: SocketAddr, m: &wire::Metadata) {
        let session = m.session;
        if self.cfg.access == Access::ReadOnly {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        }
        let name = match check_name(&m.entry.path) {
            Ok(n) => n.to_string(),
            Err(_) => return self.refuse(peer, session, error_code::ACCESS_DENIED),
        };
        if m.entry.size > self.cfg.transfer.max_size {
            return self.refuse(peer, session, error_code::FILE_TOO_BIG);
        }
        if !self.quota_allows(peer.ip(), m.entry.size) {
            self.counters.over_quota += 1;
            return self.refuse(peer, session, error_code::FILE_TOO_BIG);
        }
        if !self.admit(peer) {
            return self.refuse(peer, session, error_code::CANT_RECEIVE);
        }
        // In use, unless by this address sending this very file: that
        // session is ended (its bytes kept) and this one resumes it.
        if self.name_in_use(&name) && !self.supersede(peer, &name, (m.entry.size, m.checksum)) {
            return self.refuse(peer, session, error_code::FILE_IN_USE);
        }
        let dest = self.cfg.dir.join(&name);
        if !self.cfg.transfer.overwrite && std::fs::symlink_metadata(&dest).is_ok() {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        }
        // An interrupted PUT of the same file (name, size and checksum)
        // from the same address resumes from what it left; anything else
        // left under this name is replaced (no other transfer of the name
        // is running).
        let resume = ResumeInfo::load(&dest).filter(|i| {
            self.cfg.max_resumable > 0
                && i.size == m.entry.size
                && i.checksum == m.checksum
                && i.peer == Some(peer.ip())
                && !matches!(m.checksum, Checksum::None)
        });
        let reopened = resume.as_ref().and_then(|_| TempFile::reopen(&dest));
        let (temp, resume) = match reopened {
            Some(t) => (t, resume),
            None => {
                for p in [partial_path(&dest), resume_path(&dest)]
                    .into_iter()
                    .flatten()
                {
                    if std::fs::symlink_metadata(&p).is_ok() {
                        let _ = std::fs::remove_file(&p);
                    }
                }
                match TempFile::create(&dest) {
                    Ok(t) => (t, None),
                    Err(_) => return self.refuse(peer, session, error_code::CANT_RECEIVE),
                }
            }
        };
        let cfg = &self.cfg.transfer;
        let receiver = SaratogaReceiver::new(sara_config(cfg, session, Checksum::None), now);
        let mut side = RecvSide::new(receiver, session, temp, cfg, self.cfg.max_resumable > 0);
        side.peer = Some(peer.ip());
        let _ = side.on_metadata(now, m);
        if let Some(info) = resume {
            side.resumed_bytes = side.receiver.restore(&info.ranges);
            side.saved_held = info.held();
            self.counters.resumed += 1;
            if !side.receiver.is_complete() {
                // The resume offer: a voluntary STATUS listing every hole
                // up to the file's end (the sender's `try_resume`). Once
                // now, and before each of the next few STATUS replies in
                // case it is lost (a sender that already took one, or
                // took an ordinary STATUS first, ignores the rest).
                let holes = info.holes();
                let offer = Repr::Status(wire::Status {
                    descriptor: m.descriptor,
                    session,
                    metadata_received: true,
                    incomplete: false,
                    voluntary: true,
                    error: 0,
                    timestamp: None,
                    progress: holes.first().map_or(info.size, |h| h.0),
                    in_response_to: 0,
                    holes,
                })
                .to_vec()
                .unwrap_or_default();
                self.counters.resume_offers += 1;
                // At once only within the unsolicited-reply bound (one
                // or two holes, the usual shape): a METADATA's source
                // address may be spoofed, and an offer lists up to 64
                // holes (2 KB for 26 bytes). A longer one goes with the
                // first STATUS, which the peer's own DATA asks for.
                self.reply(&offer, peer);
                side.offer = Some((RESUME_OFFER_REPEATS, offer));
            }
        }
        self.open_session(now, (peer, session), Side::Put(Box::new(side)), name);
        let size = m.entry.size;
        if size > 0 && (self.cfg.quota_per_peer.is_some() || self.cfg.quota_total.is_some()) {
            *self.used.entry(peer.ip()).or_insert(0) += size;
            self.used_total += size;
            if let Some(s) = self.sessions.get_mut(&(peer, session)) {
                s.reserved = size;
            }
        }
    }

    /// Whether a PUT of `size` bytes from `ip` fits the quotas.
    fn quota_allows(&self, ip: IpAddr, size: u64) -> bool {
        let mine = self.used.get(&ip).copied();
        // The table of what each address holds is bounded whichever quota
        // fills it (a new address past the bound is refused until others
        // finish), and only addresses holding bytes are in it.
        if mine.is_none() && size > 0 && self.used.len() >= self.cfg.max_quota_peers {
            return false;
        }
        let fits = |used: u64, q: Option<u64>| q.is_none_or(|q| used.saturating_add(size) <= q);
        fits(mine.unwrap_or(0), self.cfg.quota_per_peer)
            && fits(self.used_total, self.cfg.quota_total)
    }

    /// A REQUEST of a new session: a GET of a regular file in the
    /// directory (no symlinks), if limits allow; other requests refused.
    fn new_get(&mut self, now: Instant, peer: SocketAddr, r: &wire::Request) {
        let session = r.session;
        if !matches!(r.kind, RequestType::Get) {
            // A put request is answered by `put_request`; delete and
            // directory requests are not served.
            return self.refuse(peer, session, error_code::BAD_REQUEST);
        }
        if self.cfg.access == Access::WriteOnly {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        }
        let name = match check_name(&r.name) {
            Ok(n) => n.to_string(),
            Err(_) => return self.refuse(peer, session, error_code::ACCESS_DENIED),
        };
        if !self.admit(peer) {
            return self.refuse(peer, session, error_code::CANT_SEND);
        }
        let path = self.cfg.dir.join(&name);
        match std::fs::symlink_metadata(&path) {
            Ok(md) if md.file_type().is_file() => {}
            Ok(_) => return self.refuse(peer, session, error_code::ACCESS_DENIED),
            Err(_) => return self.refuse(peer, session, error_code::FILE_NOT_FOUND),
        }
        let mut oo = OpenOptions::new();
        oo.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // The name may have become a symlink since the check.
            oo.custom_flags(libc::O_NOFOLLOW);
        }
        let Ok(file) = oo.open(&path) else {
            return self.refuse(peer, session, error_code::CANT_SEND);
        };
        let size = match file.metadata() {
            Ok(md) if md.is_file() => md.len(),
            _ => return self.refuse(peer, session, error_code::CANT_SEND),
        };
        if size > self.cfg.transfer.max_size {
            return self.refuse(peer, session, error_code::FILE_TOO_BIG);
        }
        let cfg = self.cfg.transfer.clone();
        let Some(id) = file_id(&file, size) else {
            return self.refuse(peer, session, error_code::CANT_SEND);
        };
        // The file's checksum: cached, or computed here if the file is
        // small; else on a worker thread while the session waits.
        let sum = match self.sums.get(&name, &id, cfg.checksum) {
            Some(sum) => Some(sum),
            None if size <= INLINE_SUM => {
                let Ok(sum) = checksum_file(&file, size, cfg.checksum) else {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                };
                self.sums.put(&name, id, sum);
                Some(sum)
            }
            None => None,
        };
        let side = match sum {
            Some(sum) => Side::Get(Box::new(SendSide::new(
                &cfg,
                session,
                file,
                r.name.clone(),
                size,
                sum,
                now,
            ))),
            None => {
                let workers = self
                    .sessions
                    .values()
                    .filter(|s| matches!(s.side, Side::Preparing(_)))
                    .count();
                let Ok(f2) = file.try_clone() else {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                };
                if workers >= MAX_SUM_WORKERS {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                }
                let (tx, rx) = std::sync::mpsc::channel();
                let kind = cfg.checksum;
                let cancel = Arc::new(AtomicBool::new(false));
                let stop = Arc::clone(&cancel);
                let spawned = std::thread::Builder::new()
                    .name("satcc-sar-sum".into())
                    .spawn(move || {
                        let _ = tx.send(checksum_file_until(&f2, size, kind, &stop));
                    });
                let Ok(worker) = spawned else {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                };
                self.counters.checksums_offloaded += 1;
                Side::Preparing(Box::new(Preparing {
                    file: Some(file),
                    name: r.name.clone(),
                    size,
                    id,
                    rx,
                    cancel,
                    worker: Some(worker),
                }))
            }
        };
        self.open_session(now, (peer, session), side, name);
    }

    /// A STATUS of session 0 carrying an error from `peer`: it could not
    /// create the session our frames are for (issue 29: the Go
    /// implementation answers so what it refuses; our client reports such
    /// a STATUS as the server's error, and now the server does the same).
    /// Every GET session of that address that has not yet heard a valid
    /// STATUS ends with the client's error, instead of sending until the
    /// progress or inactivity timeout; a session the client has already
    /// answered in its own id is not the one it could not create.
    fn session_zero_error(&mut self, peer: SocketAddr, code: u8) {
        let mut ended = 0;
        for (&(p, _), s) in self.sessions.iter_mut() {
            if p != peer || s.outcome.is_some() || s.ended.is_some() {
                continue;
            }
            let unanswered = match &s.side {
                Side::Get(g) => g.sender.sender_stats().status_received == 0,
                Side::Preparing(_) => true,
                Side::Put(_) => false,
            };
            if unanswered {
                s.outcome = Some(Err((0, format!("peer refused: {}", error_text(code)))));
                ended += 1;
            }
        }
        if ended == 0 {
            self.counters.unknown_session += 1;
        }
        self.counters.peer_refused += ended;
    }

    /// Starts a session (of a PUT or a GET) at `now`, counting the peak.
    fn open_session(&mut self, now: Instant, key: (SocketAddr, u32), side: Side, name: String) {
        self.counters.sessions_peak = self
            .counters
            .sessions_peak
            .max(self.sessions.len() as u64 + 1);
        self.sessions.insert(
            key,
            Session {
                side,
                name,
                started: now,
                last_heard: now,
                ended: None,
                outcome: None,
                reserved: 0,
            },
        );
    }

    /// Timers, transmissions, completions and expiry of every session.
    fn step(&mut self, now: Instant, out: &mut [u8], report: &mut dyn FnMut(&SessionReport)) {
        let linger = self.cfg.linger;
        let sock = &self.sock;
        let dir = &self.cfg.dir;
        let max_resumable = self.cfg.max_resumable;
        let mut done = Vec::new();
        let mut give_back: Vec<(IpAddr, u64)> = Vec::new();
        for (&(peer, id), s) in self.sessions.iter_mut() {
            if let Side::Preparing(p) = &mut s.side {
                use std::sync::mpsc::TryRecvError;
                match p.rx.try_recv() {
                    Ok(Ok(sum)) if p.file.is_some() => {
                        self.sums.put(&s.name, p.id, sum);
                        let file = p.file.take().expect("checked");
                        let g = SendSide::new(
                            &self.cfg.transfer,
                            id,
                            file,
                            std::mem::take(&mut p.name),
                            p.size,
                            sum,
                            now,
                        );
                        s.side = Side::Get(Box::new(g));
                    }
                    Err(TryRecvError::Empty) => {}
                    Ok(Ok(_)) | Ok(Err(_)) | Err(TryRecvError::Disconnected) => {
                        let _ = sock.send_to(&error_status(id, error_code::CANT_SEND), peer);
                        s.outcome = Some(Err((
                            error_code::CANT_SEND,
                            "reading the file for its checksum failed".into(),
                        )));
                    }
                }
            }
            if s.ended.is_none() && s.outcome.is_none() {
                s.outcome = match &mut s.side {
                    Side::Put(r) => put_step(r, now, sock, peer, out),
                    Side::Get(g) => get_step(g, now, sock, peer, out),
                    Side::Preparing(_) => None,
                };
            } else if let (Side::Put(r), Some(Ok(()))) = (&mut s.side, &s.outcome) {
                // Finished: keep answering STATUS requests (its last
                // STATUS may have been lost).
                r.receiver.handle_timeout(now);
                send_all_from_receiver(r, now, sock, peer, out, &[]);
            }
            if s.ended.is_none() {
                if let Some(o) = &s.outcome {
                    s.ended = Some(now);
                    if let (Side::Put(r), Err(_)) = (&mut s.side, o) {
                        let room = r.resumable_fail && count_resumable(dir) < max_resumable;
                        r.suspend_or_discard(room);
                        give_back.push((peer.ip(), std::mem::take(&mut s.reserved)));
                    }
                    let res = o.clone().map_err(|e| e.1);
                    done.push(session_report(s, peer, id, now, res));
                }
            }
        }
        for (ip, n) in give_back.into_iter().filter(|g| g.1 > 0) {
            self.used_total = self.used_total.saturating_sub(n);
            if let Some(u) = self.used.get_mut(&ip) {
                *u = u.saturating_sub(n);
                if *u == 0 {
                    self.used.remove(&ip);
                }
            }
        }
        for r in &done {
            if r.ok {
                self.counters.completed += 1;
            } else {
                self.counters.failed += 1;
            }
            report(r);
        }
        self.sessions
            .retain(|_, s| s.ended.is_none_or(|t| now.saturating_since(t) < linger));
    }
}

type Outcome = Option<Result<(), (u8, String)>>;

/// A PUT session's step: verify and rename once complete, *then* let the
/// STATUS frames out (so a client never hears "complete" for a file that
/// failed its checksum); give up on inactivity.
fn put_step(
    r: &mut RecvSide,
    now: Instant,
    sock: &Socket,
    peer: SocketAddr,
    out: &mut [u8],
) -> Outcome {
    if r.receiver.poll_timeout().is_some_and(|t| t <= now) {
        r.receiver.handle_timeout(now);
    }
    match r.receiver.failure() {
        Some(Failure::NoProgress { stalled, acked }) => {
            // The client keeps sending, but nothing new: tell it why the
            // session ends (§4.5 error 12, internal timeout), as a GET
            // responder does; what arrived is kept for a resume.
            r.resumable_fail = true;
            let b = error_status(r.session, error_code::INTERNAL_TIMEOUT);
            let _ = sock.send_to(&b, peer);
            return Some(Err((
                error_code::INTERNAL_TIMEOUT,
                format!(
                    "client stalled: no progress: nothing new received for {:.1} s \
                     ({acked} bytes from offset 0)",
                    stalled.as_secs_f64()
                ),
            )));
        }
        Some(_) => {
            r.resumable_fail = true;
            return Some(Err((
                0,
                "inactivity timeout: the client went silent".into(),
            )));
        }
        None => {}
    }
    r.maybe_save(now);
    r.hash_ahead(HASH_AHEAD);
    if r.receiver.is_complete() && r.hash_lag() > 0 {
        // Verified over the next passes, HASH_AHEAD each (see
        // `RecvSide::hash_lag`); no STATUS meanwhile, as none may say
        // "all received" before the checksum has.
        return None;
    }
    match r
        .try_commit()
        .map(|res| res.as_ref().map_err(ToString::to_string))
    {
        Some(Err(e)) => {
            // Drop the STATUS that would say "all received".
            while r.receiver.poll_message(now).is_some() {}
            let b = error_status(r.session, error_code::CANT_RECEIVE);
            let _ = sock.send_to(&b, peer);
            Some(Err((error_code::CANT_RECEIVE, e)))
        }
        Some(Ok(&())) => {
            send_all_from_receiver(r, now, sock, peer, out, &[]);
            Some(Ok(()))
        }
        None => {
            send_all_from_receiver(r, now, sock, peer, out, &[]);
            None
        }
    }
}

/// A GET session's step: send what is due; done once the client confirmed
/// every byte.
fn get_step(
    g: &mut SendSide,
    now: Instant,
    sock: &Socket,
    peer: SocketAddr,
    out: &mut [u8],
) -> Outcome {
    g.pump(now, sock, peer, out);
    if let Some(e) = g.error.take() {
        let b = error_status(g.sender.session(), error_code::CANT_SEND);
        let _ = sock.send_to(&b, peer);
        return Some(Err((error_code::CANT_SEND, e)));
    }
    if g.done() {
        return Some(Ok(()));
    }
    match g.sender.failure()? {
        f @ Failure::NoProgress { .. } => {
            // The client is alive but its STATUS never advances: tell it
            // why the session ends (§4.5 error 12, internal timeout).
            let b = error_status(g.sender.session(), error_code::INTERNAL_TIMEOUT);
            let _ = sock.send_to(&b, peer);
            Some(Err((
                error_code::INTERNAL_TIMEOUT,
                format!("client stalled: {f}"),
            )))
        }
        f => Some(Err((0, format!("client lost: {f}")))),
    }
}

fn session_report(
    s: &Session,
    peer: SocketAddr,
    id: u32,
    now: Instant,
    res: Result<(), String>,
) -> SessionReport {
    let (kind, bytes, resumed_bytes) = match &s.side {
        Side::Put(r) => ("put", r.meta.map_or(0, |m| m.0), r.resumed_bytes),
        Side::Get(g) => ("get", g.size, 0),
        Side::Preparing(p) => ("get", p.size, 0),
    };
    let secs = now.saturating_since(s.started).as_secs_f64();
    let ok = res.is_ok();
    SessionReport {
        kind,
        peer: peer.to_string(),
        session: id,
        name: s.name.clone(),
        ok,
        error: res.err(),
        bytes,
        resumed_bytes,
        duration_s: secs,
        goodput_bps: if ok { rate(bytes, secs) } else { 0.0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use satcc_proto::saratoga::wire::ChecksumType;

    /// A GET's checksum worker stops and is joined when its session
    /// goes: the worker holds `alive` until it returns, so after the drop
    /// only the test's reference is left. Without the join the worker
    /// would still be hashing (2 GiB of SHA-1, seconds); without the
    /// cancel the drop would wait for all of it and the result would be
    /// a checksum, not `Interrupted`.
    #[test]
    fn a_dropped_preparing_cancels_and_joins_its_worker() {
        let path = std::env::temp_dir().join(format!("satcc-sum-cancel-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let size = 2u64 << 30;
        file.set_len(size).unwrap(); // sparse: reads as zeros
        let f2 = File::open(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&cancel);
        let alive = Arc::new(());
        let held = Arc::clone(&alive);
        let (tx, rx) = std::sync::mpsc::channel();
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            let _held = held;
            let r = checksum_file_until(&f2, size, ChecksumType::Sha1, &stop);
            let _ = seen_tx.send(r.as_ref().map_err(io::Error::kind).copied());
            let _ = tx.send(r);
        });
        let p = Preparing {
            file: Some(file),
            name: b"big".to_vec(),
            size,
            id: FileId::default(),
            rx,
            cancel,
            worker: Some(worker),
        };
        drop(p);
        assert_eq!(
            Arc::strong_count(&alive),
            1,
            "the worker outlived its session"
        );
        assert_eq!(seen_rx.recv().unwrap(), Err(io::ErrorKind::Interrupted));
    }
}
