//! Many peers on one socket: a receiver endpoint per peer.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};

use satcc_proto::endpoint::{BoxedEndpoint, Message, Stats};
use satcc_proto::wire::{self, WireProtocol};
use satcc_proto::{Duration, Instant};

use crate::clock::{Clock, Socket};
use crate::conn::{out_buffer, send_transmit, Counters, NetError, MAX_DATAGRAM};

/// Makes the receiver for a new peer from its first valid datagram (its
/// wire format and message), or refuses it (`None`).
pub type ReceiverFactory = Box<dyn FnMut(WireProtocol, &Message) -> Option<BoxedEndpoint> + Send>;

/// How a [`Server`] runs.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    /// Peers served at once; datagrams from further new peers are dropped
    /// (counted in [`Counters::unknown_peer`]) until one expires.
    pub max_peers: usize,
    /// A peer silent this long is expired and its report kept for
    /// [`Server::take_finished`].
    pub idle_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_peers: 64,
            idle_timeout: Duration::from_secs(10),
        }
    }
}

/// One peer's flow as the server saw it.
#[derive(Clone, Copy, Debug)]
pub struct PeerReport {
    /// The peer's address.
    pub peer: SocketAddr,
    /// Its wire format.
    pub protocol: WireProtocol,
    /// First valid datagram.
    pub first: Instant,
    /// Last valid datagram.
    pub last: Instant,
    /// The receiver's statistics.
    pub stats: Stats,
    /// This peer's datagram counters (`malformed` counts datagrams from
    /// it that did not decode).
    pub counters: Counters,
}

struct Peer {
    ep: BoxedEndpoint,
    protocol: WireProtocol,
    first: Instant,
    last: Instant,
    counters: Counters,
}

impl Peer {
    fn report(&self, peer: SocketAddr) -> PeerReport {
        PeerReport {
            peer,
            protocol: self.protocol,
            first: self.first,
            last: self.last,
            stats: self.ep.stats(),
            counters: self.counters,
        }
    }
}

/// Serves any number of flows (up to [`ServerConfig::max_peers`]) on one
/// socket: the first datagram of a new peer that decodes as data in one
/// of the wire formats creates its receiver; everything else that does not
/// decode is dropped and counted.
pub struct Server {
    sock: Socket,
    clock: Clock,
    cfg: ServerConfig,
    factory: ReceiverFactory,
    peers: HashMap<SocketAddr, Peer>,
    finished: Vec<PeerReport>,
    counters: Counters,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("peers", &self.peers.len())
            .field("counters", &self.counters)
            .finish()
    }
}

/// Formats tried, in order, on a new peer's first datagram. The DCCP
/// header and the compact header cannot be confused: both are
/// checksummed, and the compact magic byte is not a valid DCCP start.
/// Saratoga frames carry no checksum, so they are tried last (a frame
/// must still parse completely: version 1, a known type, every length
/// consistent).
const FORMATS: [WireProtocol; 4] = [
    WireProtocol::Dccp,
    WireProtocol::Tfrcp,
    WireProtocol::Datagram,
    WireProtocol::Saratoga,
];

impl Server {
    /// A server on `sock`, timed by `clock`, making receivers with
    /// `factory`.
    pub fn new(
        sock: UdpSocket,
        clock: Clock,
        cfg: ServerConfig,
        factory: ReceiverFactory,
    ) -> Server {
        Server {
            sock: Socket::new(sock),
            clock,
            cfg,
            factory,
            peers: HashMap::new(),
            finished: Vec::new(),
            counters: Counters::default(),
            inbuf: vec![0u8; MAX_DATAGRAM + 1],
            outbuf: out_buffer(),
        }
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Totals over all peers, plus datagrams attributed to none
    /// (`malformed` from unknown addresses, `unknown_peer` refused).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The peers being served now.
    pub fn active(&self) -> Vec<PeerReport> {
        self.peers.iter().map(|(a, p)| p.report(*a)).collect()
    }

    /// Reports of the peers expired since the last call.
    pub fn take_finished(&mut self) -> Vec<PeerReport> {
        std::mem::take(&mut self.finished)
    }

    fn expire(&mut self, now: Instant) {
        let idle = self.cfg.idle_timeout;
        let gone: Vec<SocketAddr> = self
            .peers
            .iter()
            .filter(|(_, p)| now.saturating_since(p.last) >= idle)
            .map(|(a, _)| *a)
            .collect();
        for a in gone {
            if let Some(p) = self.peers.remove(&a) {
                self.finished.push(p.report(a));
            }
        }
    }

    fn flush_peer(&mut self, addr: SocketAddr, now: Instant) {
        let Some(p) = self.peers.get_mut(&addr) else {
            return;
        };
        for _ in 0..4_096 {
            let Some(t) = p.ep.poll_transmit(now) else {
                break;
            };
            let before = p.counters;
            send_transmit(&self.sock, &mut self.outbuf, &t, addr, &mut p.counters);
            self.counters.sent += p.counters.sent - before.sent;
            self.counters.sent_bytes += p.counters.sent_bytes - before.sent_bytes;
            self.counters.send_errors += p.counters.send_errors - before.send_errors;
            self.counters.encode_errors += p.counters.encode_errors - before.encode_errors;
        }
        while p.ep.poll_event().is_some() {}
    }

    fn on_datagram(&mut self, n: usize, from: SocketAddr) {
        let now = self.clock.now();
        let buf = &self.inbuf[..n];
        if let Some(p) = self.peers.get_mut(&from) {
            match wire::decode(p.protocol, buf, now) {
                Ok(msg) => {
                    p.counters.received += 1;
                    p.counters.received_bytes += n as u64;
                    self.counters.received += 1;
                    self.counters.received_bytes += n as u64;
                    p.last = now;
                    p.ep.handle_input(now, &msg);
                    self.flush_peer(from, now);
                }
                Err(_) => {
                    p.counters.malformed += 1;
                    self.counters.malformed += 1;
                }
            }
            return;
        }
        let found = FORMATS.iter().find_map(|&f| {
            wire::decode(f, buf, now)
                .ok()
                .filter(|m| !m.is_reverse())
                .map(|m| (f, m))
        });
        let Some((protocol, msg)) = found else {
            self.counters.malformed += 1;
            return;
        };
        if self.peers.len() >= self.cfg.max_peers {
            self.counters.unknown_peer += 1;
            return;
        }
        let Some(mut ep) = (self.factory)(protocol, &msg) else {
            self.counters.unknown_peer += 1;
            return;
        };
        ep.handle_input(now, &msg);
        let counters = Counters {
            received: 1,
            received_bytes: n as u64,
            ..Counters::default()
        };
        self.counters.received += 1;
        self.counters.received_bytes += n as u64;
        self.peers.insert(
            from,
            Peer {
                ep,
                protocol,
                first: now,
                last: now,
                counters,
            },
        );
        self.flush_peer(from, now);
    }

    /// Serves until the clock reaches `until`, or a socket call fails.
    pub fn drive(&mut self, until: Instant) -> Result<(), NetError> {
        loop {
            let now = self.clock.now();
            let due: Vec<SocketAddr> = self
                .peers
                .iter()
                .filter(|(_, p)| p.ep.poll_timeout().is_some_and(|t| t <= now))
                .map(|(a, _)| *a)
                .collect();
            for a in due {
                if let Some(p) = self.peers.get_mut(&a) {
                    p.ep.handle_timeout(now);
                }
                self.flush_peer(a, now);
            }
            self.expire(now);
            if now >= until {
                return Ok(());
            }
            let mut deadline = until;
            for p in self.peers.values() {
                deadline = deadline.min(p.last + self.cfg.idle_timeout);
                if let Some(t) = p.ep.poll_timeout() {
                    deadline = deadline.min(t);
                }
            }
            let got = self
                .sock
                .recv_until(&self.clock, &mut self.inbuf, deadline)
                .map_err(|err| NetError::Io { op: "receive", err })?;
            if let Some((n, from)) = got {
                self.on_datagram(n, from);
            }
        }
    }
}
