//! The Linux calls `satcc shell` is made of: user and network namespaces,
//! one rtnetlink request (a veth pair whose far end is created inside
//! another namespace), interface ioctls (address, flags, offloads) and
//! `AF_PACKET` sockets. No `ip`, `ethtool` or helper binary is needed.

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The result of a libc call that returns -1 and sets `errno` on failure.
fn cvt(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(r)
    }
}

/// Threads of this process (a user namespace can only be entered by a
/// single-threaded process).
pub fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(1)
}

/// Moves this (single-threaded) process into a new user namespace, where
/// it is root (uid and gid 0 mapped to the caller's), and a new network
/// namespace owned by it. Works unprivileged where the kernel allows user
/// namespaces; as root too.
pub fn enter_user_and_net_namespace() -> io::Result<()> {
    // SAFETY: plain system calls without pointers.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // SAFETY: unshare takes flags only.
    cvt(
        unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) },
        "unshare(CLONE_NEWUSER | CLONE_NEWNET)",
    )?;
    // setgroups must be denied before an unprivileged process may write
    // its gid_map (user_namespaces(7)).
    let w = |path: &str, text: String| {
        std::fs::write(path, text).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
    };
    match w("/proc/self/setgroups", "deny".into()) {
        Ok(()) => {}
        // Kernels before 3.19 have no setgroups file.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    w("/proc/self/uid_map", format!("0 {uid} 1"))?;
    w("/proc/self/gid_map", format!("0 {gid} 1"))?;
    Ok(())
}

/// This thread's network namespace, as a file descriptor that keeps it
/// alive.
pub fn current_netns() -> io::Result<OwnedFd> {
    let f = std::fs::File::open("/proc/thread-self/ns/net")
        .map_err(|e| io::Error::new(e.kind(), format!("/proc/thread-self/ns/net: {e}")))?;
    Ok(OwnedFd::from(f))
}

/// A new network namespace, held by the returned descriptor; this thread
/// is left in `back`.
pub fn new_netns(back: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: unshare takes flags only.
    cvt(
        unsafe { libc::unshare(libc::CLONE_NEWNET) },
        "unshare(CLONE_NEWNET)",
    )?;
    let ns = current_netns()?;
    enter_netns(back)?;
    Ok(ns)
}

/// Moves this thread into the network namespace `ns`.
pub fn enter_netns(ns: &OwnedFd) -> io::Result<()> {
    // SAFETY: `ns` is an open namespace descriptor.
    cvt(
        unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) },
        "setns(CLONE_NEWNET)",
    )?;
    Ok(())
}

/// Runs `f` with this thread in the network namespace `ns`, then returns
/// to `back` (also when `f` fails).
pub fn in_netns<T>(
    ns: &OwnedFd,
    back: &OwnedFd,
    f: impl FnOnce() -> io::Result<T>,
) -> io::Result<T> {
    enter_netns(ns)?;
    let r = f();
    enter_netns(back)?;
    r
}

/// Writes a sysctl of the current network namespace (`/proc/sys/net` is
/// resolved for the namespace of the thread that opens it).
pub fn write_sysctl(path: &str, value: &str) -> io::Result<()> {
    std::fs::write(path, value).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
}

// rtnetlink constants (linux/rtnetlink.h, if_link.h, veth.h).
const RTM_NEWLINK: u16 = 16;
const NLMSG_ERROR: u16 = 2;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_LINKINFO: u16 = 18;
const IFLA_NET_NS_FD: u16 = 28;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;

/// A netlink attribute being built: its start in the buffer, so that its
/// length can be filled in once its (possibly nested) payload is written.
struct Nest(usize);

#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn pad(&mut self) {
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }
    fn ifinfomsg(&mut self) {
        // family, pad, type, index, flags, change: all zero.
        self.0.extend_from_slice(&[0u8; 16]);
    }
    fn begin(&mut self, ty: u16) -> Nest {
        self.pad();
        let at = self.0.len();
        self.0.extend_from_slice(&0u16.to_ne_bytes());
        self.0.extend_from_slice(&ty.to_ne_bytes());
        Nest(at)
    }
    fn end(&mut self, n: Nest) {
        let len = (self.0.len() - n.0) as u16;
        self.0[n.0..n.0 + 2].copy_from_slice(&len.to_ne_bytes());
        self.pad();
    }
    fn attr(&mut self, ty: u16, data: &[u8]) {
        let n = self.begin(ty);
        self.0.extend_from_slice(data);
        self.end(n);
    }
    fn name(&mut self, name: &str) {
        let mut v = name.as_bytes().to_vec();
        v.push(0);
        self.attr(IFLA_IFNAME, &v);
    }
}

/// Creates a veth pair: `near` in this thread's network namespace and
/// `far` inside the namespace `far_ns`, both with `mtu`.
pub fn create_veth(near: &str, far: &str, far_ns: &OwnedFd, mtu: u32) -> io::Result<()> {
    let mut m = Msg::default();
    m.0.extend_from_slice(&[0u8; 16]); // nlmsghdr, filled in below
    m.ifinfomsg();
    m.name(near);
    m.attr(IFLA_MTU, &mtu.to_ne_bytes());
    let info = m.begin(IFLA_LINKINFO);
    m.attr(IFLA_INFO_KIND, b"veth\0");
    let data = m.begin(IFLA_INFO_DATA);
    let peer = m.begin(VETH_INFO_PEER);
    m.ifinfomsg();
    m.name(far);
    m.attr(IFLA_MTU, &mtu.to_ne_bytes());
    m.attr(IFLA_NET_NS_FD, &(far_ns.as_raw_fd() as u32).to_ne_bytes());
    m.end(peer);
    m.end(data);
    m.end(info);
    let len = m.0.len() as u32;
    let flags =
        (libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_EXCL) as u16;
    m.0[0..4].copy_from_slice(&len.to_ne_bytes());
    m.0[4..6].copy_from_slice(&RTM_NEWLINK.to_ne_bytes());
    m.0[6..8].copy_from_slice(&flags.to_ne_bytes());
    m.0[8..12].copy_from_slice(&1u32.to_ne_bytes());
    netlink_request(&m.0).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("creating veth pair {near}/{far} (rtnetlink): {e}"),
        )
    })
}

/// Sends one request on a fresh rtnetlink socket and reads its
/// acknowledgement.
fn netlink_request(msg: &[u8]) -> io::Result<()> {
    // SAFETY: socket() with constant arguments; the descriptor is owned
    // at once.
    let fd = cvt(
        unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        },
        "socket(AF_NETLINK)",
    )?;
    // SAFETY: `fd` was just returned by socket() and is owned by no one
    // else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed sockaddr_nl is the kernel's address (pid 0).
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: `msg` and `kernel` are valid for the lengths given.
    let sent = unsafe {
        libc::sendto(
            sock.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = [0u8; 4096];
    // Bounded: the kernel answers a request with NLM_F_ACK by one error
    // message (error 0 is the acknowledgement).
    for _ in 0..16 {
        // SAFETY: `buf` is valid for its length.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n < 20 {
            return Err(io::Error::other("short netlink answer"));
        }
        let ty = u16::from_ne_bytes([buf[4], buf[5]]);
        if ty == NLMSG_ERROR {
            let err = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
            return if err == 0 {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(-err))
            };
        }
    }
    Err(io::Error::other("no netlink acknowledgement"))
}

/// An `AF_INET` datagram socket of the current network namespace, the
/// handle interface ioctls are made on.
pub fn ioctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket() with constant arguments; owned at once.
    let fd = cvt(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) },
        "socket(AF_INET)",
    )?;
    // SAFETY: just returned, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    // SAFETY: an all-zero ifreq is valid (empty name, zero union).
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    let b = name.as_bytes();
    if b.len() >= r.ifr_name.len() {
        return Err(io::Error::other(format!(
            "interface name '{name}' too long"
        )));
    }
    for (d, s) in r.ifr_name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    Ok(r)
}

fn sockaddr_in(ip: Ipv4Addr) -> libc::sockaddr {
    // SAFETY: all-zero sockaddr_in is valid; it is reinterpreted as the
    // generic sockaddr of the same size the ioctl expects.
    unsafe {
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_addr.s_addr = u32::from_ne_bytes(ip.octets());
        std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(a)
    }
}

/// Sets interface `name`'s IPv4 address and prefix length.
pub fn set_ipv4(sock: &OwnedFd, name: &str, ip: Ipv4Addr, prefix: u8) -> io::Result<()> {
    let mut r = ifreq(name)?;
    r.ifr_ifru.ifru_addr = sockaddr_in(ip);
    // SAFETY: a valid ifreq for SIOCSIFADDR.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFADDR, &r) },
        &format!("{name}: setting address {ip}"),
    )?;
    let mask = Ipv4Addr::from(u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0));
    r.ifr_ifru.ifru_netmask = sockaddr_in(mask);
    // SAFETY: a valid ifreq for SIOCSIFNETMASK.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFNETMASK, &r) },
        &format!("{name}: setting netmask {mask}"),
    )?;
    Ok(())
}

/// Brings interface `name` up.
pub fn set_up(sock: &OwnedFd, name: &str) -> io::Result<()> {
    let mut r = ifreq(name)?;
    // SAFETY: a valid ifreq for SIOCGIFFLAGS, filled in by the kernel.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut r) },
        &format!("{name}: reading flags"),
    )?;
    // SAFETY: the flags member was just written by SIOCGIFFLAGS.
    unsafe {
        r.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
    }
    // SAFETY: a valid ifreq for SIOCSIFFLAGS.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &r) },
        &format!("{name}: bringing it up"),
    )?;
    Ok(())
}

// Legacy ethtool commands (linux/ethtool.h): set TX checksumming,
// scatter-gather, TSO, GSO, GRO.
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Turns off the offloads that would let a packet on `name` be anything
/// but one MTU-sized IP packet with a complete checksum: segmentation
/// offloads (TSO, GSO: the stack would hand the veth 64 KB super-packets,
/// and the emulated link would carry them as one), GRO (coalescing on
/// receive), and TX checksumming (veth leaves the checksum to be filled
/// in later, and the bytes an `AF_PACKET` socket reads would carry a
/// partial one that the other side's stack then rejects).
pub fn disable_offloads(sock: &OwnedFd, name: &str) -> io::Result<()> {
    for (cmd, what) in [
        (ETHTOOL_STSO, "tso"),
        (ETHTOOL_SGSO, "gso"),
        (ETHTOOL_SGRO, "gro"),
        (ETHTOOL_STXCSUM, "tx checksumming"),
        (ETHTOOL_SSG, "scatter-gather"),
    ] {
        let mut v = EthtoolValue { cmd, data: 0 };
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_data = (&mut v as *mut EthtoolValue).cast();
        // SAFETY: ifru_data points at a live ethtool_value for the call.
        let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &r) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            // A feature the device cannot change is already off for it.
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{name}: turning {what} off: {e}"),
                ));
            }
        }
    }
    Ok(())
}

/// An interface's index in the current network namespace.
pub fn ifindex(name: &str) -> io::Result<i32> {
    let c = CString::new(name).map_err(|_| io::Error::other("interface name with a NUL"))?;
    // SAFETY: a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name}"),
        ));
    }
    Ok(i as i32)
}

/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, Linux 4.20): the socket
/// does not see the frames sent on its own interface.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A non-blocking `AF_PACKET` socket bound to interface `ifindex` that
/// reads and writes whole Ethernet frames of every protocol.
pub fn packet_socket(ifindex: i32) -> io::Result<OwnedFd> {
    let all = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: socket() with constant arguments; owned at once.
    let fd = cvt(
        unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                libc::c_int::from(all),
            )
        },
        "socket(AF_PACKET)",
    )?;
    // SAFETY: just returned, owned by no one else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: zeroed sockaddr_ll is valid; filled in below.
    let mut a: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    a.sll_family = libc::AF_PACKET as u16;
    a.sll_protocol = all;
    a.sll_ifindex = ifindex;
    // SAFETY: `a` is a valid sockaddr_ll of the size given.
    cvt(
        unsafe {
            libc::bind(
                fd,
                (&a as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        },
        "bind(AF_PACKET)",
    )?;
    let one: libc::c_int = 1;
    // Best effort: older kernels lack it, and `recv_frame` also checks
    // each frame's packet type.
    // SAFETY: an int option of the right size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            (&one as *const libc::c_int).cast(),
            4,
        );
    }
    let big: libc::c_int = 4 << 20;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: an int option of the right size. Capped by the
        // kernel's rmem_max/wmem_max; a smaller buffer only drops
        // earlier under a burst.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&big as *const libc::c_int).cast(),
                4,
            );
        }
    }
    Ok(sock)
}

/// Reads one frame into `buf`: `Ok(None)` when none is waiting. Frames
/// this socket's interface sent itself are skipped.
pub fn recv_frame(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: zeroed sockaddr_ll is valid for the kernel to fill in.
        let mut a: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut alen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `buf` and `a` are valid for the lengths given.
        let n = unsafe {
            libc::recvfrom(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
                (&mut a as *mut libc::sockaddr_ll).cast(),
                &mut alen,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(None),
                io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        if a.sll_pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        return Ok(Some(n as usize));
    }
}

/// Sends one whole frame.
pub fn send_frame(fd: RawFd, frame: &[u8]) -> io::Result<()> {
    // SAFETY: `frame` is valid for its length.
    let n = unsafe { libc::send(fd, frame.as_ptr().cast(), frame.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until any of `fds` is readable or `timeout_ns` has passed, on a
/// high-resolution timer (as [`crate::Socket`] does).
pub fn wait_readable_any(fds: &[RawFd], timeout_ns: u64) -> io::Result<()> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `p` holds p.len() valid pollfds, a valid timespec, no
    // signal mask.
    let r = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Interface `name`'s MTU (`SIOCGIFMTU`).
pub fn mtu(sock: &OwnedFd, name: &str) -> io::Result<u32> {
    let mut r = ifreq(name)?;
    // SAFETY: a valid ifreq the kernel fills in.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut r) },
        "SIOCGIFMTU",
    )?;
    // SAFETY: SIOCGIFMTU filled the ifru_mtu member.
    Ok(u32::try_from(unsafe { r.ifr_ifru.ifru_mtu }).unwrap_or(0))
}
