//! The emulator over sockets: two threads, one per direction.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use satcc_proto::{Duration, Instant};

use super::link::{DirStats, LinkDir};
use super::{LinkConfig, Params, DEFAULT_OVERHEAD};
use satcc_sim::partial::Partial;
use satcc_sim::report::pcap::{PcapWriter, UdpPcap};

use crate::clock::{Clock, Socket};
use crate::conn::MAX_DATAGRAM;

/// How to run a [`Relay`].
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Where clients send (the emulated link's near end).
    pub listen: SocketAddr,
    /// Where the relay forwards to (the server behind the link).
    pub to: SocketAddr,
    /// The link.
    pub link: LinkConfig,
    /// Seed of the error models' and queues' random streams.
    pub seed: u64,
    /// Bytes added to each datagram's UDP payload on the link
    /// ([`DEFAULT_OVERHEAD`]).
    pub overhead: u32,
    /// How long before a due time the direction threads stop sleeping and
    /// spin (see [`Socket::set_spin`]). Default zero: a millisecond-scale
    /// delay needs no spin (an OS sleep overshoots by tens of
    /// microseconds), and on a machine with more runnable threads than
    /// cores a spinning thread uses up its scheduler slice and is then
    /// descheduled for milliseconds, while a sleeping one is run promptly
    /// when it wakes.
    pub spin: Duration,
    /// Write every delivered datagram, both directions, to this pcap file
    /// (whole, with synthesised IPv4 and UDP headers; timestamps from the
    /// relay's start). Written to a temporary name beside it and renamed
    /// when the relay stops, so the file is never half-written.
    pub pcap: Option<std::path::PathBuf>,
    /// More routes (near-end address clients send to, server) through the
    /// same link: their datagrams share its queues, rate and errors, so
    /// flows to different servers compete for one bottleneck (Linux
    /// only). Each route serves one client at a time, as the first.
    pub routes: Vec<(SocketAddr, SocketAddr)>,
}

fn quiet(mut s: Socket, spin: Duration) -> Socket {
    s.set_spin(spin);
    s
}

impl RelayConfig {
    /// A relay of `link` from `listen` to `to`, seed 1, IPv4+UDP overhead.
    pub fn new(listen: SocketAddr, to: SocketAddr, link: LinkConfig) -> RelayConfig {
        RelayConfig {
            listen,
            to,
            link,
            seed: 1,
            overhead: DEFAULT_OVERHEAD,
            spin: Duration::ZERO,
            pcap: None,
            routes: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Shared {
    /// The client being served and when it last sent.
    client: Option<(SocketAddr, Instant)>,
    /// With several routes: each route's client, as `client`.
    clients: Vec<Option<(SocketAddr, Instant)>>,
    /// Datagrams from another client while one was being served.
    other_clients: u64,
    /// Forward, reverse.
    stats: [DirStats; 2],
    /// Datagrams on the server side from an address other than `to`.
    strangers: u64,
    /// A socket error that stopped a direction.
    error: Option<String>,
}

/// The relay's pcap capture could not be written completely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pcap {}: {message}", path.display())]
pub struct CaptureError {
    /// The file being written when it failed (the temporary name while
    /// capturing, the final one when finishing).
    pub path: std::path::PathBuf,
    /// What failed.
    pub message: String,
}

/// The emulator's capture: the writer and the file it is written through
/// (`.NAME.partial` beside the final name until it is complete).
struct Capture {
    w: Option<PcapWriter<std::io::BufWriter<std::fs::File>>>,
    /// After `w`: dropping closes the file before the partial is removed.
    /// `None` once [`Capture::finish`] renamed or removed it.
    file: Option<Partial>,
    error: Option<CaptureError>,
}

impl Capture {
    fn create(path: &std::path::Path) -> io::Result<Capture> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "capture.pcap".into());
        let file = Partial::with_partial(path, path.with_file_name(format!(".{name}.partial")));
        let w = PcapWriter::new(std::io::BufWriter::new(file.create()?))?;
        Ok(Capture {
            w: Some(w),
            file: Some(file),
            error: None,
        })
    }

    fn write(&mut self, now: Instant, from: SocketAddr, to: SocketAddr, data: &[u8]) {
        let Some(w) = self.w.as_mut() else { return };
        let v4 = |a: SocketAddr| match a.ip() {
            std::net::IpAddr::V4(ip) => ip.octets(),
            // The synthesised header is IPv4: an IPv6 peer is written as
            // 0.0.0.0 (the ports still tell the directions apart).
            std::net::IpAddr::V6(_) => [0; 4],
        };
        let hdr = UdpPcap {
            src_ip: v4(from),
            dst_ip: v4(to),
            src_port: from.port(),
            dst_port: to.port(),
            ttl: 64,
            payload_len: 0,
        };
        if let Err(e) = w.write_udp_payload(now.as_nanos(), &hdr, data) {
            self.error = Some(CaptureError {
                path: self
                    .file
                    .as_ref()
                    .map_or_else(Default::default, |f| f.partial().to_path_buf()),
                message: e.to_string(),
            });
            self.w = None;
        }
    }

    /// Flushes and renames into place; a failed capture is removed.
    fn finish(&mut self) -> Result<(), CaptureError> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let Some(w) = self.w.take() else {
            file.abandon();
            return match self.error.take() {
                Some(e) => Err(e),
                None => Ok(()),
            };
        };
        let path = file.path().to_path_buf();
        let r = w
            .into_inner()
            .map_err(|e| e.to_string())
            .and_then(|b| b.into_inner().map_err(|e| e.to_string()))
            .and_then(|f| f.sync_all().map_err(|e| e.to_string()))
            .and_then(|()| file.commit().map_err(|e| e.to_string()));
        r.map_err(|message| CaptureError { path, message })
    }
}

/// A running emulator: datagrams to [`Relay::local_addr`] go through the
/// forward direction to the server; the server's replies come back
/// through the reverse direction to the client. One client at a time:
/// datagrams from another address are dropped (counted in
/// [`Relay::other_clients`]) until the current client has been silent for
/// [`CLIENT_IDLE`], so that two flows never receive each other's replies.
///
/// Stops when dropped or by [`Relay::stop`].
pub struct Relay {
    local: SocketAddr,
    clock: Clock,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    threads: Vec<JoinHandle<()>>,
    capture: Option<Arc<Mutex<Capture>>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").field("local", &self.local).finish()
    }
}

/// A client silent this long frees the relay for another.
pub const CLIENT_IDLE: Duration = Duration::from_secs(5);

/// Longest a direction thread waits before it checks the stop flag.
const TICK: Duration = Duration::from_millis(50);

struct Dir {
    index: usize,
    input: Socket,
    output: UdpSocket,
    link: LinkDir,
    cfg: LinkConfig,
    clock: Clock,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    /// Forward: forward to this fixed address; reverse: to the client.
    to: Option<SocketAddr>,
    /// Reverse: accept only datagrams from this address.
    from: Option<SocketAddr>,
    capture: Option<Arc<Mutex<Capture>>>,
    /// The address datagrams leave from (the relay's socket on this side),
    /// for the capture's source: the far side's client or server.
    server: SocketAddr,
}

impl Dir {
    fn apply_schedule(&mut self, now: Instant) -> Option<Instant> {
        if self.cfg.schedule.steps.is_empty() {
            return None;
        }
        let since = Duration(now.as_nanos());
        let p: Params = self.cfg.schedule.params_at(self.cfg.base(), since);
        self.link.set_rate(if self.index == 0 {
            p.rate_bps
        } else {
            p.reverse_rate_bps
        });
        self.link.set_delay(p.delay);
        self.cfg.schedule.next_change(since).map(|d| now + d)
    }

    fn run(mut self) {
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        let r = self.run_inner(&mut buf);
        if let Err(e) = r {
            let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
            s.error = Some(format!(
                "{} direction: {e}",
                if self.index == 0 {
                    "forward"
                } else {
                    "reverse"
                }
            ));
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn run_inner(&mut self, buf: &mut [u8]) -> io::Result<()> {
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            let change = self.apply_schedule(now);
            let dest = match self.to {
                Some(a) => Some(a),
                None => self
                    .shared
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .client
                    .map(|c| c.0),
            };
            while let Some(pkt) = self.link.poll(now) {
                if let (Some(c), Some(d)) = (&self.capture, dest) {
                    // Forward: client to server; reverse: server to client.
                    let client = self
                        .shared
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .client
                        .map_or(d, |c| c.0);
                    let (src, dst) = if self.index == 0 {
                        (client, self.server)
                    } else {
                        (self.server, d)
                    };
                    c.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .write(now, src, dst, &pkt);
                }
                let sent = dest.map(|d| self.output.send_to(&pkt, d));
                if !matches!(sent, Some(Ok(_))) {
                    self.link.count_send_error();
                }
            }
            {
                let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
                s.stats[self.index] = self.link.stats();
            }
            let mut deadline = now + TICK;
            if let Some(t) = self.link.next_event() {
                deadline = deadline.min(t);
            }
            if let Some(t) = change {
                deadline = deadline.min(t);
            }
            let Some((n, from)) = self.input.recv_until(&self.clock, buf, deadline)? else {
                continue;
            };
            let now = self.clock.now();
            match self.from {
                Some(f) if f != from => {
                    self.shared
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .strangers += 1;
                    continue;
                }
                Some(_) => {}
                None => {
                    let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
                    match s.client {
                        Some((c, last))
                            if c != from && now.saturating_since(last) < CLIENT_IDLE =>
                        {
                            s.other_clients += 1;
                            continue;
                        }
                        _ => s.client = Some((from, now)),
                    }
                }
            }
            self.link.arrive(now, buf[..n].to_vec());
        }
        Ok(())
    }
}

/// Several routes through one link: a direction thread receives from the
/// sockets of every route and tags each datagram with its route (one
/// byte appended, not charged: the link's overhead is one less).
#[cfg(target_os = "linux")]
struct MultiDir {
    index: usize,
    inputs: Vec<UdpSocket>,
    outputs: Vec<UdpSocket>,
    /// Each route's server: where the forward direction sends, and the
    /// only source the reverse direction accepts.
    to: Vec<Option<SocketAddr>>,
    link: LinkDir,
    clock: Clock,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
}

#[cfg(target_os = "linux")]
impl MultiDir {
    fn run(mut self) {
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        if let Err(e) = self.run_inner(&mut buf) {
            let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
            s.error = Some(format!("direction {}: {e}", self.index));
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn run_inner(&mut self, buf: &mut [u8]) -> io::Result<()> {
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            let clients: Vec<Option<SocketAddr>> = {
                let s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
                s.clients.iter().map(|c| c.map(|c| c.0)).collect()
            };
            while let Some(mut pkt) = self.link.poll(now) {
                let r = pkt.pop().map_or(0, usize::from);
                // Forward: to the route's server; reverse: its client.
                let dest = if self.index == 0 {
                    self.route_server(r)
                } else {
                    clients.get(r).copied().flatten()
                };
                let sent = match (dest, self.outputs.get(r)) {
                    (Some(d), Some(o)) => o.send_to(&pkt, d).is_ok(),
                    _ => false,
                };
                if !sent {
                    self.link.count_send_error();
                }
            }
            {
                let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
                s.stats[self.index] = self.link.stats();
            }
            let mut deadline = now + TICK;
            if let Some(t) = self.link.next_event() {
                deadline = deadline.min(t);
            }
            let Some((n, from, r)) =
                crate::clock::recv_any_until(&self.inputs, &self.clock, buf, deadline)?
            else {
                continue;
            };
            let now = self.clock.now();
            {
                let mut s = self.shared.lock().unwrap_or_else(|p| p.into_inner());
                if self.index == 0 {
                    // From a client: one per route at a time.
                    match s.clients[r] {
                        Some((c, last))
                            if c != from && now.saturating_since(last) < CLIENT_IDLE =>
                        {
                            s.other_clients += 1;
                            continue;
                        }
                        _ => s.clients[r] = Some((from, now)),
                    }
                } else if self.to.len() > r && Some(from) != self.route_server(r) {
                    s.strangers += 1;
                    continue;
                }
            }
            let mut pkt = Vec::with_capacity(n + 1);
            pkt.extend_from_slice(&buf[..n]);
            pkt.push(r as u8);
            self.link.arrive(now, pkt);
        }
        Ok(())
    }

    /// The server of route `r`.
    fn route_server(&self, r: usize) -> Option<SocketAddr> {
        self.to.get(r).copied().flatten()
    }
}

/// The two direction threads of a relay, named for `ps` and panics.
fn spawn_directions(
    forward: impl FnOnce() + Send + 'static,
    reverse: impl FnOnce() + Send + 'static,
) -> io::Result<Vec<JoinHandle<()>>> {
    Ok(vec![
        std::thread::Builder::new()
            .name("emu-forward".into())
            .spawn(forward)?,
        std::thread::Builder::new()
            .name("emu-reverse".into())
            .spawn(reverse)?,
    ])
}

impl Relay {
    /// Several routes through one link ([`RelayConfig::routes`]).
    #[cfg(target_os = "linux")]
    fn start_multi(cfg: RelayConfig) -> io::Result<Relay> {
        let mut routes = vec![(cfg.listen, cfg.to)];
        routes.extend(cfg.routes.iter().copied());
        if routes.len() > 255 {
            return Err(io::Error::other("at most 255 routes"));
        }
        let mut nears = Vec::new();
        let mut fars = Vec::new();
        for &(listen, to) in &routes {
            let near = UdpSocket::bind(listen)?;
            let far = UdpSocket::bind(SocketAddr::new(
                if to.ip().is_loopback() {
                    to.ip()
                } else if to.is_ipv4() {
                    "0.0.0.0".parse().expect("literal")
                } else {
                    "::".parse().expect("literal")
                },
                0,
            ))?;
            for s in [&near, &far] {
                crate::clock::grow_buffers(s, 4 << 20);
                s.set_nonblocking(true)?;
            }
            nears.push(near);
            fars.push(far);
        }
        let local = nears[0].local_addr()?;
        let clock = Clock::new();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared {
            clients: vec![None; routes.len()],
            ..Shared::default()
        }));
        let overhead = cfg.overhead.saturating_sub(1);
        let clone_all = |v: &[UdpSocket]| -> io::Result<Vec<UdpSocket>> {
            v.iter().map(|s| s.try_clone()).collect()
        };
        let servers: Vec<Option<SocketAddr>> = routes.iter().map(|r| Some(r.1)).collect();
        let fwd = MultiDir {
            index: 0,
            inputs: clone_all(&nears)?,
            outputs: clone_all(&fars)?,
            to: servers.clone(),
            link: LinkDir::new(&cfg.link.forward(), cfg.seed.wrapping_mul(2), overhead),
            clock,
            stop: stop.clone(),
            shared: shared.clone(),
        };
        let rev = MultiDir {
            index: 1,
            inputs: fars,
            outputs: nears,
            to: servers,
            link: LinkDir::new(
                &cfg.link.reverse(),
                cfg.seed.wrapping_mul(2).wrapping_add(1),
                overhead,
            ),
            clock,
            stop: stop.clone(),
            shared: shared.clone(),
        };
        let threads = spawn_directions(move || fwd.run(), move || rev.run())?;
        Ok(Relay {
            local,
            clock,
            stop,
            shared,
            threads,
            // Refused with several routes (`satcc emulate` says so).
            capture: None,
        })
    }

    /// Binds `cfg.listen`, opens a socket toward `cfg.to` and starts the
    /// two direction threads.
    pub fn start(cfg: RelayConfig) -> io::Result<Relay> {
        if !cfg.routes.is_empty() {
            if cfg.pcap.is_some() {
                return Err(io::Error::other("a capture (pcap) of several routes"));
            }
            #[cfg(target_os = "linux")]
            return Relay::start_multi(cfg);
            #[cfg(not(target_os = "linux"))]
            return Err(io::Error::other("several routes: Linux only"));
        }
        let near = UdpSocket::bind(cfg.listen)?;
        let any: SocketAddr = if cfg.to.is_ipv4() {
            "0.0.0.0:0".parse().expect("literal")
        } else {
            "[::]:0".parse().expect("literal")
        };
        let any = if cfg.to.ip().is_loopback() {
            SocketAddr::new(
                if cfg.to.is_ipv4() {
                    "127.0.0.1".parse().expect("literal")
                } else {
                    "::1".parse().expect("literal")
                },
                0,
            )
        } else {
            any
        };
        let far = UdpSocket::bind(any)?;
        crate::clock::grow_buffers(&near, 4 << 20);
        crate::clock::grow_buffers(&far, 4 << 20);
        let local = near.local_addr()?;
        let capture = match &cfg.pcap {
            Some(p) => Some(Arc::new(Mutex::new(Capture::create(p)?))),
            None => None,
        };
        let clock = Clock::new();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared::default()));
        let fwd = Dir {
            index: 0,
            input: quiet(Socket::new(near.try_clone()?), cfg.spin),
            output: far.try_clone()?,
            link: LinkDir::new(&cfg.link.forward(), cfg.seed.wrapping_mul(2), cfg.overhead),
            cfg: cfg.link.clone(),
            clock,
            stop: stop.clone(),
            shared: shared.clone(),
            to: Some(cfg.to),
            from: None,
            capture: capture.clone(),
            server: cfg.to,
        };
        let rev = Dir {
            index: 1,
            input: quiet(Socket::new(far), cfg.spin),
            output: near,
            link: LinkDir::new(
                &cfg.link.reverse(),
                cfg.seed.wrapping_mul(2).wrapping_add(1),
                cfg.overhead,
            ),
            cfg: cfg.link,
            clock,
            stop: stop.clone(),
            shared: shared.clone(),
            to: None,
            from: Some(cfg.to),
            capture: capture.clone(),
            server: cfg.to,
        };
        let threads = spawn_directions(move || fwd.run(), move || rev.run())?;
        Ok(Relay {
            local,
            clock,
            stop,
            shared,
            threads,
            capture,
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The relay's clock (zero at start).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Forward and reverse counters now.
    pub fn stats(&self) -> [DirStats; 2] {
        self.shared.lock().unwrap_or_else(|p| p.into_inner()).stats
    }

    /// Datagrams that reached the server-side socket from an address other
    /// than the server (dropped).
    pub fn strangers(&self) -> u64 {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .strangers
    }

    /// Datagrams dropped because they came from a second client while
    /// another was being served.
    pub fn other_clients(&self) -> u64 {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .other_clients
    }

    /// The error that stopped the relay, if a socket call failed.
    pub fn error(&self) -> Option<String> {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .error
            .clone()
    }

    /// Whether the relay is still running (false after a socket error).
    pub fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }

    /// Stops both directions (datagrams still queued or in flight are
    /// discarded) and returns the final counters.
    pub fn stop(mut self) -> [DirStats; 2] {
        self.halt();
        self.stats()
    }

    /// Stops both directions and finishes the capture, if any: its file
    /// appears under its name only now, complete (an error says why it
    /// could not be written; nothing is left under either name then).
    pub fn finish(mut self) -> Result<[DirStats; 2], CaptureError> {
        self.halt();
        let stats = self.stats();
        if let Some(c) = self.capture.take() {
            c.lock().unwrap_or_else(|p| p.into_inner()).finish()?;
        }
        Ok(stats)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.halt();
        // Every record written is whole: a dropped relay's capture is
        // finished too rather than left under its temporary name.
        if let Some(c) = self.capture.take() {
            let _ = c.lock().unwrap_or_else(|p| p.into_inner()).finish();
        }
    }
}
