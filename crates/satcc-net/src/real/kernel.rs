//! Kernel TCP flows in `satcc run --real` (Linux): a scenario's TCP flow
//! becomes a connection of the kernel's own TCP, with the nearest Linux
//! congestion control, whose packets cross the scenario's emulated links.
//!
//! ```text
//!  senders' netns                satcc's netns: the fabric                    receivers' netns
//!  satcc0 100.64.0.1 ==veth== shell0 -AF_PACKET-> flow's path of LinkDirs -> peer0 ==veth== satcc0 100.64.0.2
//! ```
//!
//! The namespaces are `satcc shell`'s ([`crate::shell::Namespaces`], one
//! peer): every TCP flow's sender lives on the shell's side, its receiver
//! on the peer's, and flow `i`'s receiver listens on port
//! [`PORT_BASE`]` + i`, so the fabric knows a packet's flow from its
//! ports: the destination port going forward, the source port coming
//! back. Each packet then crosses the links of that flow's route one
//! after another (access links included, so per-flow access delays give
//! the flows their own RTTs), as the fabric's UDP datagrams do; frames
//! that are not IP (ARP) pass at once. No process is started: the
//! sockets are made by threads of satcc that join a side's network
//! namespace, so the namespaces, devices and connections live exactly as
//! long as satcc (a Ctrl-C or `kill -9` leaves nothing).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};

use satcc_proto::endpoint::Stats;
use satcc_proto::{Duration, Instant};
use satcc_sim::scenario::{FlowSpec, Protocol, ProtocolOptions};

use super::{breakpoints, SideReport};
use crate::clock::Clock;
use crate::ktcp;
use crate::shell::{join_netns, Namespaces, ShellError, PEER_ADDR};

/// Flow `i`'s receiver listens on this port plus `i`.
pub(crate) const PORT_BASE: u16 = 30_000;

/// Most kernel TCP flows in one run (their ports must fit).
pub(crate) const MAX_FLOWS: u32 = 30_000;

/// Header bytes of a kernel TCP segment beyond the payload: IPv4 20, TCP
/// 20, the timestamps option 12 (Linux negotiates it by default).
pub(crate) const HEADERS: u32 = 52;

/// The Linux congestion control flow `spec` runs as: `linux_cc` if it
/// names one, else the nearest to its protocol (Reno with SACK for `reno`,
/// `newreno` and `sack`: Linux's `reno` module is NewReno's window with
/// SACK loss recovery when SACK is negotiated, as it is by default;
/// `cubic`, `bbr` and `hybla` by their own names). `None`: a protocol no
/// kernel TCP runs (TCP-Peach is a sender of satcc's own).
pub(crate) fn linux_cc(spec: &FlowSpec) -> Option<String> {
    if let ProtocolOptions::Tcp(o) = &spec.options {
        if let Some(cc) = &o.linux_cc {
            return Some(cc.clone());
        }
    }
    match spec.protocol {
        Protocol::Reno | Protocol::NewReno | Protocol::Sack => Some("reno".into()),
        Protocol::Cubic => Some("cubic".into()),
        Protocol::Bbr => Some("bbr".into()),
        Protocol::Hybla => Some("hybla".into()),
        _ => None,
    }
}

/// Refuses a congestion control this kernel does not list.
pub(crate) fn check_cc(cc: &str) -> Result<(), String> {
    ktcp::check_cc(cc).map_err(|e| match e {
        crate::perf::PerfError::Cc(m) => m,
        other => other.to_string(),
    })
}

/// The namespaces of a run's kernel flows and satcc's ends of their veth
/// pairs.
pub(crate) struct KernelNet {
    pub ns: Namespaces,
    /// The senders' side (frames from it go forward).
    pub senders: OwnedFd,
    /// The receivers' side.
    pub receivers: OwnedFd,
}

impl KernelNet {
    /// Makes the namespaces: must be called while the process has one
    /// thread. Senders' side: no saved per-destination metrics, so that
    /// every flow starts as a fresh connection (all flows share one
    /// destination address).
    pub fn create(mtu: u32) -> Result<KernelNet, ShellError> {
        let mut ns = Namespaces::create(mtu)?;
        for side in [None, Some(0)] {
            // Best effort: an old kernel may not have the sysctl per
            // namespace; the flows still run.
            let _ = ns.in_side(side, || {
                std::fs::write("/proc/sys/net/ipv4/tcp_no_metrics_save", "1")
            });
        }
        let (senders, receivers) = ns
            .take_ends()
            .ok_or_else(|| ShellError::Setup(io::Error::other("the veth ends are gone")))?;
        Ok(KernelNet {
            ns,
            senders,
            receivers,
        })
    }

    /// Flow `id`'s listening socket on the receivers' side, announcing
    /// an MSS of `mss` + 12 (the timestamps option the sender then
    /// subtracts), so that its segments carry `mss` bytes as the
    /// simulated flow's do.
    pub fn listener(&self, id: u32, mss: u32) -> io::Result<TcpListener> {
        let port = PORT_BASE + id as u16;
        let l = self
            .ns
            .in_side(Some(0), || TcpListener::bind((PEER_ADDR, port)))?;
        let v = (mss + 12) as libc::c_int;
        // SAFETY: an int option of the right size on a live socket.
        let r = unsafe {
            libc::setsockopt(
                l.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_MAXSEG,
                (&v as *const libc::c_int).cast(),
                4,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        l.set_nonblocking(true)?;
        Ok(l)
    }
}

/// The flow of a TCP packet entering the fabric from the senders' side
/// (`forward`) or the receivers' side, from its ports.
pub(crate) fn flow_of(ip: &[u8], forward: bool) -> Option<u32> {
    let k = crate::shell::FlowKey::of_ip(ip)?;
    if k.proto != 6 {
        return None;
    }
    let port = if forward { k.dport } else { k.sport };
    port.checked_sub(PORT_BASE).map(u32::from)
}

/// How often the sender reads `TCP_INFO` for its mean RTT.
const RTT_SAMPLE: std::time::Duration = std::time::Duration::from_millis(100);

/// The sender's statistics from `TCP_INFO`; `rtt` holds the mean-RTT
/// samples taken so far (count, sum).
fn sender_stats(i: &ktcp::TcpInfo, rtt: (u64, Duration)) -> Stats {
    Stats {
        cwnd: Some(f64::from(i.snd_cwnd)),
        srtt: (i.rtt_us > 0).then(|| Duration::from_micros(u64::from(i.rtt_us))),
        // Sequence space: the SYN counts one (and the FIN one more).
        acked_bytes: i.bytes_acked.saturating_sub(1),
        retransmits: u64::from(i.total_retrans),
        timeouts: u64::from(i.total_rto),
        rtt_samples: rtt.0,
        sum_rtt: rtt.1,
        ..Stats::default()
    }
}

/// A kernel TCP flow's sender: joins the senders' namespace, connects at
/// `start`, runs congestion control `cc`, writes as fast as the kernel
/// takes until `stop` (then closes: the kernel delivers what it has and
/// sends its FIN), and samples `TCP_INFO` at every breakpoint.
pub(crate) fn run_sender(
    ns: OwnedFd,
    to: SocketAddr,
    cc: String,
    clock: Clock,
    ticks: Vec<Instant>,
    (start, stop, measure, end): (Instant, Instant, Instant, Instant),
) -> SideReport {
    let mut rep = SideReport::default();
    if let Err(e) = join_netns(&ns) {
        rep.error = Some(format!("joining the senders' namespace: {e}"));
        return rep;
    }
    drop(ns);
    if start >= stop || start >= end {
        return rep;
    }
    clock.sleep_until(start);
    let left = end.saturating_since(clock.now());
    let timeout = std::time::Duration::from_nanos(left.as_nanos().max(1_000_000));
    // The congestion control is set before the handshake (BBR's pacing
    // would otherwise stay from a default of bbr; ktcp::connect_with_cc).
    let s = match ktcp::connect_with_cc(&to, &cc, timeout) {
        Ok(s) => s,
        Err(ktcp::CcConnectError::Io(e)) => {
            rep.error = Some(format!("connecting to {to}: {e}"));
            return rep;
        }
        Err(ktcp::CcConnectError::Cc(e)) => {
            rep.error = Some(e.to_string());
            return rep;
        }
    };
    match ktcp::get_cc(&s) {
        Ok(running) if running != cc => {
            rep.error = Some(format!("asked for '{cc}', the kernel runs '{running}'"));
        }
        _ => {}
    }
    // As `satcc perf --protocol tcp`: at most 128 KB written but unsent,
    // so that the flow stops near `stop` rather than when a send buffer
    // of megabytes has drained.
    let lowat: libc::c_int = 128 << 10;
    // SAFETY: an int option of the right size on a live socket; best
    // effort.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&lowat as *const libc::c_int).cast(),
            4,
        );
    }
    let _ = s.set_write_timeout(Some(std::time::Duration::from_millis(20)));
    let chunk = vec![0x5au8; 64 << 10];
    let mut rtt = (0u64, Duration::ZERO);
    let mut last_rtt = std::time::Instant::now();
    let mut closed = false;
    let mut last = ktcp::TcpInfo::default();
    for b in breakpoints(&ticks, &[stop, measure], end) {
        while clock.now() < b {
            if clock.now() < stop && !closed {
                match (&s).write(&chunk) {
                    Ok(_) => {}
                    Err(e) if ktcp::is_transient(&e) => {}
                    Err(e) => {
                        rep.error = Some(format!("sending: {e}"));
                        closed = true;
                    }
                }
            } else {
                clock.sleep_until(b.min(clock.now() + Duration::from_millis(20)));
            }
            if last_rtt.elapsed() >= RTT_SAMPLE {
                last_rtt = std::time::Instant::now();
                if let Ok(i) = ktcp::tcp_info(&s) {
                    if i.rtt_us > 0 {
                        rtt.0 += 1;
                        rtt.1 += Duration::from_micros(u64::from(i.rtt_us));
                    }
                    last = i;
                }
            }
        }
        if b >= stop && !closed {
            closed = true;
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
        if let Ok(i) = ktcp::tcp_info(&s) {
            last = i;
        }
        let st = sender_stats(&last, rtt);
        if ticks.binary_search(&b).is_ok() {
            rep.samples.push(st);
        }
        rep.stats = st;
    }
    rep
}

/// A kernel TCP flow's receiver: accepts its connection on `l` and reads
/// it until `end`, counting the bytes delivered to the application.
pub(crate) fn run_receiver(
    l: TcpListener,
    clock: Clock,
    ticks: Vec<Instant>,
    (start, stop, measure, end): (Instant, Instant, Instant, Instant),
) -> SideReport {
    let mut rep = SideReport::default();
    let mut conn: Option<TcpStream> = None;
    let mut delivered = 0u64;
    let mut buf = vec![0u8; 128 << 10];
    let mut eof = false;
    for b in breakpoints(&ticks, &[start, stop, measure], end) {
        while clock.now() < b {
            match &conn {
                None => match l.accept() {
                    Ok((c, _)) => {
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(20)));
                        conn = Some(c);
                    }
                    Err(_) => clock.sleep_until(b.min(clock.now() + Duration::from_millis(5))),
                },
                Some(_) if eof => {
                    clock.sleep_until(b.min(clock.now() + Duration::from_millis(20)));
                }
                Some(c) => match (&*c).read(&mut buf) {
                    Ok(0) => eof = true,
                    Ok(n) => delivered += n as u64,
                    Err(e) if ktcp::is_transient(&e) => {}
                    Err(e) => {
                        rep.error = Some(format!("receiving: {e}"));
                        eof = true;
                    }
                },
            }
        }
        let st = Stats {
            delivered_bytes: delivered,
            ..Stats::default()
        };
        if b == measure {
            rep.at_measure = delivered;
        }
        if ticks.binary_search(&b).is_ok() {
            rep.samples.push(st);
        }
        rep.stats = st;
    }
    if let Some(c) = &conn {
        let _ = (&*c).flush();
    }
    rep
}
