//! One endpoint, one peer, one socket.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};

use satcc_proto::endpoint::{Endpoint, Event, Transmit};
use satcc_proto::wire::{self, WireProtocol, MAX_HEADER_LEN};
use satcc_proto::{Duration, Instant};

use crate::clock::{Clock, Socket};

/// The largest UDP payload over IPv4: the most a flow sends in one
/// datagram, and (plus one byte, to notice a longer one) its receive
/// buffer.
pub(crate) const MAX_DATAGRAM: usize = 65_507;

/// A receive buffer that holds any datagram whole, whatever the IP
/// version (the 16-bit length bound; over IPv6 a UDP payload reaches
/// 65 527 bytes, beyond [`MAX_DATAGRAM`]). Saratoga reads into it: its
/// frames are parsed from whatever arrives, not from this crate's codec.
pub(crate) const MAX_RECEIVE: usize = 65_535;

/// Transmits taken from an endpoint in one pass before the driver checks
/// the socket again: bounds the work of one step even if an endpoint that
/// was starved of CPU has a long backlog of due packets.
pub(crate) const MAX_BURST: usize = 4_096;

/// Events kept for [`Conn::take_events`]; older ones are dropped.
const MAX_EVENTS: usize = 1_024;

/// How a [`Conn`] runs.
#[derive(Clone, Copy, Debug)]
pub struct ConnConfig {
    /// The flow's wire format.
    pub protocol: WireProtocol,
    /// End the flow with [`NetError::PeerSilent`] when nothing valid came
    /// from the peer for this long (`None`: never; a constant-bit-rate
    /// source hears nothing back by design).
    pub peer_timeout: Option<Duration>,
    /// Burst credit: when the driver wakes late (the OS ran it late, or
    /// another thread held the core), send times the endpoint missed by
    /// up to this much are replayed at once, each `poll_transmit` getting
    /// the time it asked for, so the flow keeps its computed rate instead
    /// of losing the late time. Longer stalls forfeit the excess. Zero:
    /// no catch-up (a paced sender more than one interval late then
    /// restarts its schedule from the actual time).
    pub burst: Duration,
}

/// The default burst credit, 2 ms: the stalls of a busy machine are
/// absorbed, and the largest burst is 2 ms of the flow's rate (about 3
/// packets at 10 Mb/s, 50 at 200 Mb/s).
pub const DEFAULT_BURST: Duration = Duration::from_millis(2);

impl ConnConfig {
    /// A flow in `protocol` without a peer timeout, with the default burst
    /// credit.
    pub fn new(protocol: WireProtocol) -> ConnConfig {
        ConnConfig {
            protocol,
            peer_timeout: None,
            burst: DEFAULT_BURST,
        }
    }
}

/// What a driver counted: the datagrams it sent and received, and those
/// it refused. Every datagram received lands in exactly one of
/// `received`, `malformed` or `unknown_peer`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams sent.
    pub sent: u64,
    /// Bytes sent (UDP payload: header plus payload).
    pub sent_bytes: u64,
    /// Payload bytes sent (what the endpoint asked for, without headers).
    pub sent_payload_bytes: u64,
    /// Valid datagrams received and handed to the endpoint.
    pub received: u64,
    /// Bytes of those datagrams (UDP payload).
    pub received_bytes: u64,
    /// Datagrams the codec refused (dropped, never handed on).
    pub malformed: u64,
    /// Datagrams from an address that is not the peer (dropped).
    pub unknown_peer: u64,
    /// Messages that could not be encoded (dropped).
    pub encode_errors: u64,
    /// Sends the socket refused (a full socket buffer, a closed port): the
    /// datagram is lost, as in a full interface queue.
    pub send_errors: u64,
}

/// Why a driver stopped.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A socket call failed (the operation names which).
    #[error("{op}: {err}")]
    Io {
        /// What the driver was doing.
        op: &'static str,
        /// The error.
        err: io::Error,
    },
    /// Nothing valid came from `peer` for `silent` (at least the
    /// configured peer timeout): the peer is gone.
    #[error(
        "peer {peer} silent for {:.3} s: no valid datagram received (is it running, and reachable?)",
        .silent.as_secs_f64()
    )]
    PeerSilent {
        /// The peer.
        peer: SocketAddr,
        /// How long it has been silent.
        silent: Duration,
    },
}

/// Encodes `t` into `out` and sends it; counts the outcome.
pub(crate) fn send_transmit(
    sock: &Socket,
    out: &mut [u8],
    t: &Transmit,
    to: SocketAddr,
    c: &mut Counters,
) {
    match wire::encode(&t.message, out) {
        Ok(n) => match sock.send_to(&out[..n], to) {
            Ok(_) => {
                c.sent += 1;
                c.sent_bytes += n as u64;
                c.sent_payload_bytes += u64::from(t.payload_len);
            }
            Err(_) => c.send_errors += 1,
        },
        Err(_) => c.encode_errors += 1,
    }
}

/// A send buffer: the largest header plus the largest UDP payload. The
/// payload area stays zero: the endpoints exchange lengths, not data.
pub(crate) fn out_buffer() -> Vec<u8> {
    vec![0u8; MAX_HEADER_LEN + MAX_DATAGRAM]
}

/// Drives one endpoint against one peer over a UDP socket, in wall-clock
/// time.
///
/// ```no_run
/// # use satcc_net::{Clock, Conn, ConnConfig};
/// # use satcc_proto::wire::WireProtocol;
/// # fn f(mut sender: Box<dyn satcc_proto::Sender>) -> Result<(), satcc_net::NetError> {
/// let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
/// let clock = Clock::new();
/// let cfg = ConnConfig::new(WireProtocol::Dccp);
/// let mut conn = Conn::new(sock, "127.0.0.1:9001".parse().unwrap(), clock, cfg);
/// sender.set_unlimited(clock.now());
/// conn.drive(&mut *sender, clock.now() + satcc_proto::Duration::from_secs(10))?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Conn {
    sock: Socket,
    peer: SocketAddr,
    clock: Clock,
    cfg: ConnConfig,
    counters: Counters,
    last_heard: Instant,
    /// The endpoint's events, with the time each was polled.
    events: VecDeque<(Instant, Event)>,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    /// The latest time handed to the endpoint: replayed send times never
    /// go below it, so the endpoint's clock never runs backwards.
    last_passed: Instant,
    /// Transmits sent on a replayed (earlier than actual) time.
    caught_up: u64,
    wake: WakeStats,
}

/// How punctual a driver's timed wake-ups were: the OS's share of pacing
/// error, to tell a loaded machine from a protocol that sends slowly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeStats {
    /// Wake-ups at a deadline (rather than for a datagram).
    pub wakeups: u64,
    /// Of those, how many came more than 1 ms after the deadline.
    pub late_1ms: u64,
    /// The latest one.
    pub max_late: Duration,
}

impl Conn {
    /// A driver for the flow to `peer` on `sock` (bound already), timed by
    /// `clock`. The peer timeout counts from now.
    pub fn new(sock: UdpSocket, peer: SocketAddr, clock: Clock, cfg: ConnConfig) -> Conn {
        Conn {
            sock: Socket::new(sock),
            peer,
            clock,
            cfg,
            counters: Counters::default(),
            last_heard: clock.now(),
            events: VecDeque::new(),
            inbuf: vec![0u8; MAX_DATAGRAM + 1],
            outbuf: out_buffer(),
            last_passed: Instant::ZERO,
            caught_up: 0,
            wake: WakeStats::default(),
        }
    }

    /// How late the timed wake-ups were.
    pub fn wake_stats(&self) -> WakeStats {
        self.wake
    }

    /// Transmits sent late on the burst credit (see [`ConnConfig::burst`]).
    pub fn caught_up(&self) -> u64 {
        self.caught_up
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// The clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Sets the spin before deadlines (see [`Socket::set_spin`]).
    pub fn set_spin(&mut self, spin: Duration) {
        self.sock.set_spin(spin);
    }

    /// The endpoint's events since the last call (at most the latest
    /// 1024).
    pub fn take_events(&mut self) -> Vec<Event> {
        self.events.drain(..).map(|(_, e)| e).collect()
    }

    /// As [`Conn::take_events`], each with the time the endpoint gave it
    /// (when it was polled right after the input or timer that caused it).
    pub fn take_timed_events(&mut self) -> Vec<(Instant, Event)> {
        self.events.drain(..).collect()
    }

    /// When the last valid datagram from the peer arrived (the creation
    /// time if none has).
    pub fn last_heard(&self) -> Instant {
        self.last_heard
    }

    /// Replays the send times the endpoint missed since `now - burst`
    /// (never before the last time it was given), in order.
    fn catch_up<E: Endpoint + ?Sized>(&mut self, ep: &mut E, now: Instant) {
        let floor =
            Instant(now.as_nanos().saturating_sub(self.cfg.burst.as_nanos())).max(self.last_passed);
        for _ in 0..MAX_BURST {
            let Some(due) = ep.poll_timeout() else { break };
            if due >= now {
                break;
            }
            let t = due.max(floor);
            // A due time that is a timer rather than a send yields
            // nothing: the regular path handles it at `now`.
            let Some(x) = ep.poll_transmit(t) else { break };
            self.last_passed = t;
            if t < now {
                self.caught_up += 1;
            }
            send_transmit(
                &self.sock,
                &mut self.outbuf,
                &x,
                self.peer,
                &mut self.counters,
            );
        }
    }

    fn flush<E: Endpoint + ?Sized>(&mut self, ep: &mut E, now: Instant) {
        self.last_passed = now;
        for _ in 0..MAX_BURST {
            let Some(t) = ep.poll_transmit(now) else {
                break;
            };
            send_transmit(
                &self.sock,
                &mut self.outbuf,
                &t,
                self.peer,
                &mut self.counters,
            );
        }
        while let Some(e) = ep.poll_event() {
            if self.events.len() == MAX_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back((now, e));
        }
    }

    /// Runs `ep` until the clock reaches `until` (then returns `Ok`), or
    /// until the peer has been silent for the configured timeout, or a
    /// socket call fails. Call it again to continue: state carries over.
    pub fn drive<E: Endpoint + ?Sized>(
        &mut self,
        ep: &mut E,
        until: Instant,
    ) -> Result<(), NetError> {
        loop {
            let now = self.clock.now();
            if self.cfg.burst > Duration::ZERO {
                self.catch_up(ep, now);
            }
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                self.last_passed = now;
                ep.handle_timeout(now);
            }
            self.flush(ep, now);
            if now >= until {
                return Ok(());
            }
            let mut deadline = until;
            if let Some(limit) = self.cfg.peer_timeout {
                let silent = now.saturating_since(self.last_heard);
                if silent >= limit {
                    return Err(NetError::PeerSilent {
                        peer: self.peer,
                        silent,
                    });
                }
                deadline = deadline.min(self.last_heard + limit);
            }
            if let Some(t) = ep.poll_timeout() {
                deadline = deadline.min(t);
            }
            let got = self
                .sock
                .recv_until(&self.clock, &mut self.inbuf, deadline)
                .map_err(|err| NetError::Io { op: "receive", err })?;
            let Some((n, from)) = got else {
                let late = self.clock.now().saturating_since(deadline);
                self.wake.max_late = self.wake.max_late.max(late);
                if late > Duration::from_millis(1) {
                    self.wake.late_1ms += 1;
                }
                self.wake.wakeups += 1;
                continue;
            };
            if from != self.peer {
                self.counters.unknown_peer += 1;
                continue;
            }
            let now = self.clock.now();
            match wire::decode(self.cfg.protocol, &self.inbuf[..n], now) {
                Ok(msg) => {
                    self.counters.received += 1;
                    self.counters.received_bytes += n as u64;
                    self.last_heard = now;
                    self.last_passed = now;
                    ep.handle_input(now, &msg);
                    self.flush(ep, now);
                }
                Err(_) => self.counters.malformed += 1,
            }
        }
    }
}
