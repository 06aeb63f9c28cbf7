//! The kernel's TCP in `satcc perf` (Linux): a bulk flow over a kernel
//! socket with the congestion control asked for (`TCP_CONGESTION`),
//! measured from the kernel's own `TCP_INFO` (bytes acknowledged,
//! retransmissions, smoothed RTT, cwnd), and the server side that
//! accepts such flows beside the UDP protocols.
//!
//! satcc's own TCP variants have no wire format (they run in the
//! simulator); this is how a real TCP is measured across `satcc shell`'s
//! link, in the same table and JSON as the other protocols.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant as StdInstant;

use satcc_proto::Duration;

use crate::perf::{ClientReport, Interval, PerfError};

/// What `TCP_INFO` says of a connection (the fields perf reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
    /// Smallest RTT seen, microseconds (0: the kernel does not say).
    pub min_rtt_us: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Sender MSS, bytes.
    pub snd_mss: u32,
    /// Segments retransmitted over the connection.
    pub total_retrans: u32,
    /// Bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Segments sent (data and pure ACKs).
    pub segs_out: u32,
    /// Segments received.
    pub segs_in: u32,
    /// Data segments sent (retransmissions included).
    pub data_segs_out: u32,
    /// Retransmission timeouts over the connection (`tcpi_total_rto`,
    /// Linux 6.7; 0 on older kernels).
    pub total_rto: u32,
}

/// An error a socket read or write with a timeout (or a non-blocking
/// one) returns when there is nothing to do yet: try again.
pub(crate) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Reads `TCP_INFO` of a connected socket. Offsets are those of
/// `struct tcp_info` (linux/tcp.h), which only grows at its end; fields
/// beyond what this kernel returns stay zero.
pub fn tcp_info(s: &TcpStream) -> io::Result<TcpInfo> {
    let mut buf = [0u8; 248];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is valid for `len` bytes; the kernel writes at most
    // that many and sets `len` to what it wrote.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = len as usize;
    let u32_at = |o: usize| {
        if o + 4 <= len {
            u32::from_ne_bytes(buf[o..o + 4].try_into().unwrap_or([0; 4]))
        } else {
            0
        }
    };
    let u64_at = |o: usize| {
        if o + 8 <= len {
            u64::from_ne_bytes(buf[o..o + 8].try_into().unwrap_or([0; 8]))
        } else {
            0
        }
    };
    Ok(TcpInfo {
        snd_mss: u32_at(16),
        rtt_us: u32_at(68),
        snd_cwnd: u32_at(80),
        total_retrans: u32_at(100),
        bytes_acked: u64_at(120),
        segs_out: u32_at(136),
        segs_in: u32_at(140),
        min_rtt_us: u32_at(148),
        data_segs_out: u32_at(156),
        // A u16 (then tcpi_total_rto_recoveries).
        total_rto: if len >= 242 {
            u32::from(u16::from_ne_bytes([buf[240], buf[241]]))
        } else {
            0
        },
    })
}

/// The congestion controls this kernel offers (for messages).
pub fn available_ccs() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Refuses a congestion control this kernel does not list (before any
/// connection is made); any name passes where the list cannot be read.
pub fn check_cc(cc: &str) -> Result<(), PerfError> {
    if cc.is_empty() || cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(PerfError::Cc(format!(
            "'{cc}': not a congestion control name"
        )));
    }
    match std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control") {
        Ok(list) if !list.split_whitespace().any(|n| n == cc) => Err(PerfError::Cc(format!(
            "'{cc}': this kernel has no such congestion control (it has {})",
            available_ccs()
        ))),
        _ => Ok(()),
    }
}

/// Sets the socket's congestion control.
pub(crate) fn set_cc(s: &TcpStream, cc: &str) -> Result<(), PerfError> {
    // SAFETY: `cc` is valid for its length; the kernel copies it.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    Err(PerfError::Cc(match e.raw_os_error() {
        Some(libc::ENOENT) => format!(
            "'{cc}': this kernel has no such congestion control (it has {})",
            available_ccs()
        ),
        Some(libc::EPERM) => format!(
            "'{cc}': not allowed to this user (not in net.ipv4.tcp_allowed_congestion_control; \
             inside `satcc shell` every one the kernel has is allowed)"
        ),
        _ => format!("'{cc}': {e}"),
    }))
}

/// Why [`connect_with_cc`] failed.
#[derive(Debug)]
pub(crate) enum CcConnectError {
    /// The congestion control could not be set (unknown, not allowed).
    Cc(PerfError),
    /// The socket or the connection failed.
    Io(io::Error),
}

/// A TCP connection to `to` that runs congestion control `cc` from its
/// first packet: the socket is given `cc` before `connect()`.
///
/// Setting it after the handshake is not the same flow. The kernel
/// initialises the namespace's default congestion control when the
/// connection is established, and `bbr_init()` asks for pacing
/// (`sk_pacing_status = SK_PACING_NEEDED`), which switching to another
/// module does not undo: on a machine whose default is `bbr`, `--cc cubic`
/// set after `connect()` ran CUBIC paced at 2·cwnd/srtt in slow start (in
/// pairs of segments 11 ms apart in the first round trip on the `geo`
/// preset, where unpaced CUBIC sends back to back; docs/validation.md).
pub(crate) fn connect_with_cc(
    to: &SocketAddr,
    cc: &str,
    timeout: std::time::Duration,
) -> Result<TcpStream, CcConnectError> {
    use CcConnectError::Io;
    let domain = if to.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return Err(Io(io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a socket just made and owned by nobody else; the
    // stream closes it when dropped (every early return below).
    let s = unsafe { TcpStream::from_raw_fd(fd) };
    set_cc(&s, cc).map_err(CcConnectError::Cc)?;
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match to {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    let r = unsafe {
        libc::connect(
            fd,
            (&ss as *const libc::sockaddr_storage).cast(),
            len as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(Io(e));
        }
        let deadline = StdInstant::now() + timeout;
        // Bounded by the deadline: each pass waits for what is left of it.
        loop {
            let left = deadline.saturating_duration_since(StdInstant::now());
            if left.is_zero() {
                return Err(Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connection timed out",
                )));
            }
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut p, 1, ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(Io(e));
            }
            if n > 0 {
                break;
            }
        }
        if let Some(e) = s.take_error().map_err(Io)? {
            return Err(Io(e));
        }
    }
    s.set_nonblocking(false).map_err(Io)?;
    Ok(s)
}

/// The congestion control the kernel runs on the socket, read back.
pub(crate) fn get_cc(s: &TcpStream) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is valid for `len` bytes.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let b = &buf[..(len as usize).min(buf.len())];
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(String::from_utf8_lossy(&b[..end]).into_owned())
}

fn int_opt(s: &TcpStream, level: libc::c_int, opt: libc::c_int, v: libc::c_int) {
    // SAFETY: an int option of the right size. Best effort: the flow
    // still runs without it.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            4,
        );
    }
}

/// Runs a kernel TCP bulk flow with congestion control `cc` to `server`
/// for `time`, calling `each` after every interval. The flow's rate is
/// the kernel's: satcc only writes and reads `TCP_INFO`.
pub fn run_tcp_client(
    server: SocketAddr,
    cc: &str,
    time: Duration,
    interval: Duration,
    peer_timeout: Duration,
    mut each: impl FnMut(&Interval),
) -> Result<ClientReport, PerfError> {
    let to = std::time::Duration::from_nanos(peer_timeout.as_nanos().max(1));
    // Before the handshake: the whole flow runs with it, and nothing of
    // the namespace's default (BBR's pacing) stays (connect_with_cc()).
    let s = connect_with_cc(&server, cc, to).map_err(|e| match e {
        CcConnectError::Cc(e) => e,
        CcConnectError::Io(e) => PerfError::Connect {
            addr: server,
            source: e,
        },
    })?;
    // Reported as the kernel has it, not as asked.
    let running = get_cc(&s).map_err(|e| PerfError::Io(format!("reading TCP_CONGESTION: {e}")))?;
    // At most 128 KB written but not yet sent: the run's end is then
    // close to --time, not seconds later when an auto-tuned send buffer
    // of several megabytes has drained across a slow link.
    int_opt(&s, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, 128 << 10);
    let net = |e: io::Error| PerfError::Io(e.to_string());
    // Writes wake up at least this often, to close intervals on time.
    s.set_write_timeout(Some(std::time::Duration::from_millis(20)))
        .map_err(net)?;
    let start = StdInstant::now();
    let secs = |t: StdInstant| t.duration_since(start).as_secs_f64();
    let end = start + std::time::Duration::from_nanos(time.as_nanos());
    let step = std::time::Duration::from_nanos(interval.as_nanos().max(1_000_000));
    let chunk = vec![0x5au8; 64 << 10];
    let mut written = 0u64;
    let mut intervals = Vec::new();
    let mut prev = tcp_info(&s).map_err(net)?;
    let mut t0 = start;
    let mut rtt_sum = 0.0;
    let mut rtt_n = 0u32;
    let mut w = &s;
    while t0 < end {
        let t1 = (t0 + step).min(end);
        while StdInstant::now() < t1 {
            match w.write(&chunk) {
                Ok(n) => written += n as u64,
                Err(e) if is_transient(&e) => {}
                Err(e) => return Err(PerfError::Io(format!("sending to {server}: {e}"))),
            }
        }
        let now = StdInstant::now();
        let ti = tcp_info(&s).map_err(net)?;
        let dt = now.duration_since(t0).as_secs_f64();
        let iv = Interval {
            start_s: secs(t0),
            end_s: secs(now),
            send_rate_bps: if dt > 0.0 {
                ti.bytes_acked.saturating_sub(prev.bytes_acked) as f64 * 8.0 / dt
            } else {
                0.0
            },
            x_bps: None,
            x_recv_bps: None,
            loss_event_rate: None,
            rtt_s: (ti.rtt_us > 0).then(|| f64::from(ti.rtt_us) * 1e-6),
            feedback_packets: u64::from(ti.segs_in.saturating_sub(prev.segs_in)),
            cwnd: Some(u64::from(ti.snd_cwnd)),
            retransmits: Some(u64::from(
                ti.total_retrans.saturating_sub(prev.total_retrans),
            )),
        };
        if let Some(r) = iv.rtt_s {
            rtt_sum += r;
            rtt_n += 1;
        }
        each(&iv);
        intervals.push(iv);
        prev = ti;
        t0 = t1;
    }
    let at_end = tcp_info(&s).map_err(net)?;
    let duration = secs(StdInstant::now());
    // Then an orderly close: the server closes once it has read all, so
    // its count includes what was still in flight at the end (bounded by
    // the peer timeout).
    let _ = s.shutdown(std::net::Shutdown::Write);
    let _ = s.set_read_timeout(Some(to));
    let mut sink = [0u8; 4096];
    let mut r = &s;
    let wait = StdInstant::now();
    while wait.elapsed() < to {
        match r.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let last = tcp_info(&s).unwrap_or(at_end);
    // TCP_INFO's bytes_acked counts sequence space: the SYN is one, and
    // the FIN one more. Data bytes only here.
    let acked = at_end.bytes_acked.saturating_sub(1).min(written);
    let acked_at_close = last.bytes_acked.saturating_sub(1).min(written);
    Ok(ClientReport {
        protocol: "tcp".into(),
        server: server.to_string(),
        duration_s: duration,
        packets_sent: u64::from(at_end.data_segs_out),
        data_bytes_sent: written,
        send_rate_bps: acked as f64 * 8.0 / duration.max(1e-9),
        mean_rtt_s: (rtt_n > 0).then(|| rtt_sum / f64::from(rtt_n)),
        loss_event_rate: None,
        slow_start_exit_s: None,
        feedback_packets: u64::from(at_end.segs_in),
        malformed: 0,
        unknown_peer: 0,
        send_errors: 0,
        late_wakeups: 0,
        max_wakeup_late_s: 0.0,
        cc: Some(running),
        bytes_acked: Some(acked),
        bytes_acked_at_close: Some(acked_at_close),
        retransmits: Some(u64::from(at_end.total_retrans)),
        min_rtt_s: (at_end.min_rtt_us > 0).then(|| f64::from(at_end.min_rtt_us) * 1e-6),
        cwnd: Some(u64::from(at_end.snd_cwnd)),
        mss: Some(u64::from(at_end.snd_mss)),
        dummies_sent: None,
        dummies_acked: None,
        timeouts: None,
        dsacks_other: None,
        peach_fallback: None,
        intervals,
    })
}

/// A TCP client as the server saw it.
#[derive(Clone, Debug)]
pub struct TcpPeer {
    /// The client's address.
    pub peer: SocketAddr,
    /// Bytes read so far.
    pub bytes: u64,
    /// Seconds from its connection to its last byte (or now).
    pub duration_s: f64,
}

#[derive(Default)]
struct Book {
    active: Vec<(SocketAddr, Arc<AtomicU64>, StdInstant)>,
    finished: Vec<TcpPeer>,
    refused: u64,
}

/// Accepts kernel TCP flows on a port and reads them to their end, one
/// thread per client (at most `max_peers` at once; more are refused).
/// Stops when dropped.
pub struct TcpServer {
    stop: Arc<AtomicBool>,
    book: Arc<Mutex<Book>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for TcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpServer").finish_non_exhaustive()
    }
}

impl TcpServer {
    /// Listens on `bind` (the UDP server's address: one port for both).
    pub fn start(bind: SocketAddr, max_peers: usize, idle: Duration) -> io::Result<TcpServer> {
        let l = TcpListener::bind(bind)?;
        l.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let book = Arc::new(Mutex::new(Book::default()));
        let (st, bk) = (stop.clone(), book.clone());
        let idle = std::time::Duration::from_nanos(idle.as_nanos().max(1_000_000));
        let thread = std::thread::Builder::new()
            .name("perf-tcp".into())
            .spawn(move || accept_loop(l, st, bk, max_peers, idle))?;
        Ok(TcpServer {
            stop,
            book,
            thread: Some(thread),
        })
    }

    /// Clients still sending.
    pub fn active(&self) -> Vec<TcpPeer> {
        let b = self.book.lock().unwrap_or_else(|p| p.into_inner());
        b.active
            .iter()
            .map(|(peer, n, t)| TcpPeer {
                peer: *peer,
                bytes: n.load(Ordering::Relaxed),
                duration_s: t.elapsed().as_secs_f64(),
            })
            .collect()
    }

    /// Clients that finished since the last call.
    pub fn take_finished(&self) -> Vec<TcpPeer> {
        std::mem::take(&mut self.book.lock().unwrap_or_else(|p| p.into_inner()).finished)
    }

    /// Connections refused because `max_peers` were being served.
    pub fn refused(&self) -> u64 {
        self.book.lock().unwrap_or_else(|p| p.into_inner()).refused
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    l: TcpListener,
    stop: Arc<AtomicBool>,
    book: Arc<Mutex<Book>>,
    max_peers: usize,
    idle: std::time::Duration,
) {
    while !stop.load(Ordering::Relaxed) {
        let (c, peer) = match l.accept() {
            Ok(x) => x,
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                continue;
            }
        };
        let count = Arc::new(AtomicU64::new(0));
        {
            let mut b = book.lock().unwrap_or_else(|p| p.into_inner());
            if b.active.len() >= max_peers {
                b.refused += 1;
                continue; // dropped: closed
            }
            b.active.push((peer, count.clone(), StdInstant::now()));
        }
        let (bk, st) = (book.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("perf-tcp-peer".into())
            .spawn(move || read_peer(c, peer, count, bk, st, idle));
        if spawned.is_err() {
            let mut b = book.lock().unwrap_or_else(|p| p.into_inner());
            b.active.retain(|(p, _, _)| *p != peer);
            b.refused += 1;
        }
    }
}

/// Reads a client to its end (EOF, an error, `idle` of silence, or the
/// server stopping), then books it as finished and closes.
fn read_peer(
    c: TcpStream,
    peer: SocketAddr,
    count: Arc<AtomicU64>,
    book: Arc<Mutex<Book>>,
    stop: Arc<AtomicBool>,
    idle: std::time::Duration,
) {
    let _ = c.set_nonblocking(false);
    let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(100)));
    let start = StdInstant::now();
    let mut last = start;
    let mut buf = vec![0u8; 128 << 10];
    let mut r = &c;
    while !stop.load(Ordering::Relaxed) && last.elapsed() < idle {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                count.fetch_add(n as u64, Ordering::Relaxed);
                last = StdInstant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let mut b = book.lock().unwrap_or_else(|p| p.into_inner());
    b.active.retain(|(p, _, _)| *p != peer);
    b.finished.push(TcpPeer {
        peer,
        bytes: count.load(Ordering::Relaxed),
        duration_s: last.duration_since(start).as_secs_f64(),
    });
    drop(b);
    let _ = (&c).flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_with_cc_sets_it_before_the_handshake() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let to = l.local_addr().unwrap();
        let t = std::time::Duration::from_secs(5);
        // reno is built into every Linux kernel.
        let s = connect_with_cc(&to, "reno", t).expect("connects");
        assert_eq!(get_cc(&s).unwrap(), "reno");
        assert_eq!(s.peer_addr().unwrap(), to);
        // Blocking again, as the callers expect.
        s.set_read_timeout(Some(std::time::Duration::from_millis(10)))
            .unwrap();
        let mut b = [0u8; 1];
        let e = (&s).read(&mut b).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{e}"
        );
        assert!(l.accept().is_ok());
        // An unknown congestion control fails before any SYN: the listener
        // sees no connection.
        match connect_with_cc(&to, "nosuchcc", t) {
            Err(CcConnectError::Cc(PerfError::Cc(m))) => assert!(m.contains("nosuchcc"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(l.accept().unwrap_err().kind(), io::ErrorKind::WouldBlock);
        // A closed port: the connection's own error.
        drop(l);
        match connect_with_cc(&to, "reno", t) {
            Err(CcConnectError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused),
            other => panic!("{other:?}"),
        }
    }
}
