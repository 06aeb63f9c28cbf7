//! The PUT and GET clients: each a loop over one [`ClientLink`], the
//! first driving a [`SendSide`], the second a [`RecvSide`].

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;

use satcc_proto::saratoga::wire::{self, error_code, Checksum, Repr};
use satcc_proto::saratoga::{DescriptorSize, Failure, SaratogaReceiver};
use satcc_proto::{Duration, Instant};

use super::files::{check_name, checksum_file, ResumeInfo, TempFile};
use super::frames::{checksum_name, error_status};
use super::server::RESUME_OFFER_REPEATS;
use super::session::{
    new_session_id, rate, sara_config, send_all_from_receiver, ClientLink, RecvSide, SendSide,
    HASH_AHEAD, PROGRESS_EVERY,
};
use super::types::{Progress, TransferConfig, TransferError, TransferReport};

/// An error STATUS the client takes as the server's answer: of its
/// session, or of session 0, which a responder uses when it could not
/// create the session the frame asked for (the Go responder answers a
/// refused REQUEST so). Only frames from the server's address get here.
fn is_ours_or_zero(status_session: u32, ours: u32) -> bool {
    status_session == ours || status_session == 0
}

/// Sends `path` to the server at `server` as `name` (a Saratoga PUT),
/// calling `progress` about every 100 ms (return `false` to give up).
/// Returns when the server has confirmed every byte (after verifying the
/// checksum and renaming the file into place).
pub fn put(
    path: &Path,
    server: SocketAddr,
    name: &str,
    cfg: &TransferConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<TransferReport, TransferError> {
    check_name(name.as_bytes()).map_err(|e| TransferError::Local(e.to_string()))?;
    let file =
        File::open(path).map_err(|e| TransferError::Local(format!("{}: {e}", path.display())))?;
    let md = file
        .metadata()
        .map_err(|e| TransferError::Local(format!("{}: {e}", path.display())))?;
    if !md.is_file() {
        return Err(TransferError::Local(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let size = md.len();
    let checksum = checksum_file(&file, size, cfg.checksum)
        .map_err(|e| TransferError::Local(format!("{}: {e}", path.display())))?;
    let mut link = ClientLink::open(server)?;
    let start = link.start;
    let session = new_session_id();
    let name_b = name.as_bytes().to_vec();
    let mut side = SendSide::new(cfg, session, file, name_b, size, checksum, start);
    let mut last_heard = start;
    // Bounded: every pass waits for a datagram or a deadline, and the
    // inactivity timeout ends a transfer that hears nothing valid.
    loop {
        let now = link.clock.now();
        side.pump(now, &link.sock, server, &mut link.out);
        if let Some(e) = side.error.take() {
            return Err(TransferError::Local(format!("{}: {e}", path.display())));
        }
        if side.done() {
            let secs = (link.clock.now() - start).as_secs_f64();
            return Ok(side.report("put", server, secs));
        }
        match side.sender.failure() {
            Some(Failure::PeerError(c)) => return Err(TransferError::Peer(c)),
            Some(Failure::NoProgress { stalled, acked }) => {
                return Err(TransferError::Stalled {
                    stalled,
                    acked,
                    total: size,
                })
            }
            Some(Failure::InactivityTimeout { .. }) => {
                return Err(TransferError::Timeout(now.saturating_since(last_heard)))
            }
            None => {}
        }
        if size == 0 && now.saturating_since(last_heard) >= cfg.inactivity_timeout {
            return Err(TransferError::Timeout(now.saturating_since(last_heard)));
        }
        let acked = side.sender.sender_stats().acked_bytes;
        link.progress(now, acked, Some(size), progress)?;
        let deadline = side
            .next_wake()
            .map_or(link.next_progress, |t| t.min(link.next_progress));
        let Some((now, repr, _)) = link.recv(deadline)? else {
            continue;
        };
        if let Repr::Status(s) = repr {
            if s.error != 0 && is_ours_or_zero(s.session, session) {
                return Err(TransferError::Peer(s.error));
            }
            if s.session != session {
                continue;
            }
            let before = side.sender.sender_stats().status_received;
            side.on_status(now, &s);
            if side.sender.sender_stats().status_received > before {
                last_heard = now;
            }
        }
    }
}

/// Fetches `name` from the server at `server` into `dest` (a Saratoga
/// GET): written to `.DEST.partial`, renamed to `dest` once complete and
/// verified. `progress` as for [`put`].
///
/// A GET that times out, stalls or is cancelled keeps `.DEST.partial` and
/// a record of the bytes it holds (`.DEST.resume`, rewritten every 0.5 s
/// while data arrives, as a server does for a PUT); a later GET of the
/// same file (same size and checksum in METADATA, a checksum other than
/// none) into `dest` continues from them: it sends the server a resume
/// offer (the voluntary STATUS of `docs/transfers.md`) and only the rest
/// is sent. The whole file's checksum is verified before the rename, as
/// always. A file that changed on the server is fetched from zero.
pub fn get(
    server: SocketAddr,
    name: &str,
    dest: &Path,
    cfg: &TransferConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<TransferReport, TransferError> {
    check_name(name.as_bytes()).map_err(|e| TransferError::Local(e.to_string()))?;
    if !cfg.overwrite && std::fs::symlink_metadata(dest).is_ok() {
        return Err(TransferError::Local(format!(
            "{}: exists (--overwrite to replace it)",
            dest.display()
        )));
    }
    // What an interrupted GET into `dest` left: reopened only with a
    // record that parses; whether it is the same file is known only from
    // METADATA.
    let mut kept = ResumeInfo::load(dest);
    let reopened = kept.as_ref().and_then(|_| TempFile::reopen(dest));
    let temp = match reopened {
        Some(t) => t,
        None => {
            kept = None;
            TempFile::create(dest).map_err(|e| TransferError::Local(e.to_string()))?
        }
    };
    let mut link = ClientLink::open(server)?;
    let session = new_session_id();
    let receiver = SaratogaReceiver::get(sara_config(cfg, session, Checksum::None), 0, link.start);
    let mut side = RecvSide::new(receiver, session, temp, cfg, true);
    side.peer = Some(link.server.ip());
    let r = get_loop(&mut link, &mut side, kept, name, cfg, progress);
    if let Err(e) = &r {
        // Kept for a retry only when the peer went away or the user
        // stopped; a refusal, a bad checksum or a disk error removes it.
        let resumable = matches!(
            e,
            TransferError::Timeout(_)
                | TransferError::Stalled { .. }
                | TransferError::Starved { .. }
                | TransferError::Cancelled
        );
        side.suspend_or_discard(resumable);
    }
    r
}

/// The GET client's loop (see [`get`]): returns once the file is
/// verified and renamed, or why not; `side`'s temporary is the caller's
/// to keep or remove.
fn get_loop(
    link: &mut ClientLink,
    side: &mut RecvSide,
    mut kept: Option<ResumeInfo>,
    name: &str,
    cfg: &TransferConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<TransferReport, TransferError> {
    let server = link.server;
    let start = link.start;
    let session = side.session;
    let name_b = name.as_bytes().to_vec();
    let mut finished: Option<Instant> = None;
    let mut last_rx = start;
    loop {
        let now = link.clock.now();
        if side.receiver.poll_timeout().is_some_and(|t| t <= now) {
            side.receiver.handle_timeout(now);
        }
        send_all_from_receiver(side, now, &link.sock, server, &mut link.out, &name_b);
        match side.receiver.failure() {
            Some(Failure::NoProgress { stalled, acked }) => {
                return Err(TransferError::Starved {
                    stalled,
                    received: acked,
                    total: side.meta.map(|m| m.0),
                })
            }
            Some(_) => return Err(TransferError::Timeout(now.saturating_since(last_rx))),
            None => {}
        }
        if let Some(t) = finished {
            // Linger briefly to answer the server's last STATUS requests
            // (a lost final STATUS would leave it probing).
            if now.saturating_since(last_rx) >= Duration::from_millis(300)
                || now.saturating_since(t) >= Duration::from_secs(3)
            {
                let secs = (t - start).as_secs_f64();
                let (size, sum) = side.meta.unwrap_or((0, Checksum::None));
                let st = side.receiver.receiver_stats();
                return Ok(TransferReport {
                    direction: "get",
                    name: name.to_string(),
                    peer: server.to_string(),
                    bytes: size,
                    duration_s: secs,
                    goodput_bps: rate(size, secs),
                    data_frames: side.data_frames,
                    retransmitted_bytes: 0,
                    sent_bytes: 0,
                    resumed_bytes: side.resumed_bytes,
                    status_frames: st.status_sent,
                    loss_event_rate: None,
                    srtt_s: None,
                    checksum: checksum_name(sum.kind()),
                });
            }
        } else if now.saturating_since(last_rx) >= cfg.inactivity_timeout {
            return Err(TransferError::Timeout(now.saturating_since(last_rx)));
        }
        if finished.is_none() {
            let done = side.receiver.received().prefix_end();
            link.progress(now, done, side.meta.map(|m| m.0), progress)?;
        }
        let mut deadline = now + PROGRESS_EVERY;
        if let Some(t) = side.receiver.poll_timeout() {
            deadline = deadline.min(t);
        }
        let Some((now, repr, payload)) = link.recv(deadline)? else {
            continue;
        };
        match &repr {
            Repr::Status(s) if s.error != 0 && is_ours_or_zero(s.session, session) => {
                return Err(TransferError::Peer(s.error));
            }
            Repr::Metadata(m) if m.session == session => {
                last_rx = now;
                if let Err(code) = side.on_metadata(now, m) {
                    link.send(&error_status(session, code));
                    return Err(TransferError::Local(format!(
                        "{name}: {} bytes, over --max-size {}",
                        m.entry.size, cfg.max_size
                    )));
                }
                // The first METADATA accepted says whether what an
                // interrupted GET kept is this file.
                if side.meta.is_some() {
                    if let Some(info) = kept.take().filter(|i| {
                        side.meta == Some((i.size, i.checksum))
                            && i.peer == side.peer
                            && !matches!(i.checksum, Checksum::None)
                    }) {
                        resume_from(link, side, &info, m.descriptor);
                    }
                }
            }
            Repr::Data(d) if d.session == session => {
                last_rx = now;
                side.on_data(now, d, payload)
                    .map_err(|e| TransferError::Local(e.to_string()))?;
                side.hash_ahead(HASH_AHEAD);
                side.maybe_save(now);
            }
            _ => continue,
        }
        if finished.is_none() {
            match side.try_commit() {
                Some(Ok(())) => finished = Some(now),
                Some(Err(e)) => {
                    let e = e.to_string();
                    link.send(&error_status(session, error_code::CANT_RECEIVE));
                    return Err(TransferError::Integrity(e));
                }
                None => {}
            }
        }
    }
}

/// Marks what an interrupted GET of the same file kept as received and
/// offers the server to send only the rest: a voluntary STATUS listing
/// every hole up to the file's end (`SaratogaSender::try_resume`), sent
/// now and repeated before the next few STATUS replies in case it is lost.
fn resume_from(link: &ClientLink, side: &mut RecvSide, info: &ResumeInfo, d: DescriptorSize) {
    side.resumed_bytes = side.receiver.restore(&info.ranges);
    side.saved_held = info.held();
    if side.receiver.is_complete() {
        return;
    }
    let holes = info.holes();
    let offer = Repr::Status(wire::Status {
        descriptor: d,
        session: side.session,
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
    link.send(&offer);
    side.offer = Some((RESUME_OFFER_REPEATS, offer));
}
