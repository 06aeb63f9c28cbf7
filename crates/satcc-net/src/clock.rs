//! The wall clock and deadline waits.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use satcc_proto::{Duration, Instant};

/// How long before a deadline a wait stops sleeping in the kernel and
/// spins: zero by default. Waits sleep in `ppoll` on a high-resolution
/// timer with the thread's timer slack at 1 µs, which keeps constant-bit-
/// rate pacing within 0.01 % up to 200 Mb/s without spinning, and on a
/// machine with more runnable threads than cores a spinning thread uses
/// up its scheduler slice and is then descheduled for milliseconds: a
/// TFRC sender at 10 Mb/s sent 92-95 % of its computed rate with a
/// 250 µs spin and 98-100 % without (docs/real.md). [`Socket::set_spin`]
/// turns it on for an idle machine or a coarse OS timer.
pub const DEFAULT_SPIN: Duration = Duration::ZERO;

/// The wall clock as the endpoints see it: nanoseconds since the clock
/// was created, as a [`satcc_proto::Instant`].
///
/// Copy it freely: copies share the same origin, so instants from two
/// threads compare.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: StdInstant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Clock {
        Clock {
            origin: StdInstant::now(),
        }
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        // u64 nanoseconds last 584 years: the cast cannot truncate in
        // practice, and saturates rather than wraps if it ever did.
        Instant(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The `std` instant of `t`.
    pub fn to_std(&self, t: Instant) -> StdInstant {
        self.origin + StdDuration::from_nanos(t.as_nanos())
    }

    /// Blocks until `t`: an OS sleep to 50 µs before it, then a spin (not
    /// a yield: see [`Socket::recv_until`]). For tests and tools that need
    /// a precise instant; the runtime waits in [`Socket::recv_until`].
    pub fn sleep_until(&self, t: Instant) {
        loop {
            let now = self.now();
            if now >= t {
                return;
            }
            let left = t - now;
            let spin = Duration::from_micros(50);
            if left > spin {
                std::thread::sleep(StdDuration::from_nanos((left - spin).as_nanos()));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Lowers this thread's timer slack to 1 µs once (Linux's default of
/// 50 µs is added to every timed sleep; other systems: nothing to do).
fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    {
        thread_local!(static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        DONE.with(|d| {
            if !d.get() {
                // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and
                // touches only the calling thread's scheduling state.
                unsafe {
                    libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
                }
                d.set(true);
            }
        });
    }
}

/// Waits until `sock` is readable or `timeout` has passed.
///
/// Not a socket read timeout (`SO_RCVTIMEO`): Linux rounds those up to
/// the next scheduler tick (up to 4 ms at HZ = 250), far too coarse for a
/// link delay. `ppoll` sleeps on a high-resolution timer.
#[cfg(unix)]
fn wait_readable(sock: &UdpSocket, timeout: Duration) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut fds = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ns = timeout.as_nanos();
    #[cfg(target_os = "linux")]
    let r = {
        let ts = libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) }
    };
    #[cfg(not(target_os = "linux"))]
    let r = {
        let ms = ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut fds, 1, ms) }
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Elsewhere: a short sleep (arrivals are then seen up to 1 ms late).
#[cfg(not(unix))]
fn wait_readable(_sock: &UdpSocket, timeout: Duration) -> io::Result<()> {
    std::thread::sleep(StdDuration::from_nanos(timeout.as_nanos().min(1_000_000)));
    Ok(())
}

/// A non-blocking `UdpSocket` with a deadline-bounded receive.
///
/// [`Socket::recv_until`] sleeps until the socket is readable or shortly
/// before the deadline (a high-resolution `ppoll`), then polls without
/// blocking, so a datagram is seen as soon as it arrives and the deadline
/// is kept to a few microseconds.
#[derive(Debug)]
pub struct Socket {
    sock: UdpSocket,
    nonblocking: bool,
    spin: Duration,
}

impl Socket {
    /// Wraps `sock`, spinning [`DEFAULT_SPIN`] (none) before deadlines. The
    /// socket is switched to non-blocking mode at its first receive (on
    /// every descriptor that shares it: clones of a `UdpSocket` do).
    pub fn new(sock: UdpSocket) -> Socket {
        Socket {
            sock,
            nonblocking: false,
            spin: DEFAULT_SPIN,
        }
    }

    /// Sets how long before a deadline waits stop sleeping and spin (zero:
    /// never spin, trusting the OS timer).
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// The wrapped socket.
    pub fn inner(&self) -> &UdpSocket {
        &self.sock
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Sends one datagram. A full socket buffer (`WouldBlock`: the socket
    /// is non-blocking) is reported as an error like any other: the caller
    /// counts it as a drop, as a full interface queue would be.
    pub fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.sock.send_to(buf, to)
    }

    /// Receives one datagram, waiting no later than `deadline` on
    /// `clock`: `Ok(None)` when the deadline passed with nothing received.
    /// ICMP errors reported on the socket (a peer's port closed) and
    /// interrupted calls are skipped, not returned.
    pub fn recv_until(
        &mut self,
        clock: &Clock,
        buf: &mut [u8],
        deadline: Instant,
    ) -> io::Result<Option<(usize, SocketAddr)>> {
        if !self.nonblocking {
            self.sock.set_nonblocking(true)?;
            self.nonblocking = true;
            tighten_timer_slack();
        }
        // Bounded: each pass either returns or waits; a flood of ICMP
        // errors is capped too.
        for _ in 0..10_000_000u32 {
            match self.sock.recv_from(buf) {
                Ok(x) => return Ok(Some(x)),
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => {
                        let left = deadline.saturating_since(clock.now());
                        if left == Duration::ZERO {
                            return Ok(None);
                        }
                        if left > self.spin {
                            wait_readable(&self.sock, left - self.spin)?;
                        } else {
                            // Spin, never yield: under load a yielding
                            // thread waits a whole scheduler slice
                            // (milliseconds) to run again.
                            std::hint::spin_loop();
                        }
                    }
                    io::ErrorKind::Interrupted
                    | io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::ConnectionReset => {}
                    _ => return Err(e),
                },
            }
        }
        Ok(None)
    }
}

/// Receives one datagram from any of `socks` (non-blocking sockets),
/// waiting no later than `deadline` on `clock`: the datagram, its source
/// and the index of the socket it came from, or `Ok(None)` at the
/// deadline. As [`Socket::recv_until`], for several sockets at once.
#[cfg(target_os = "linux")]
pub(crate) fn recv_any_until(
    socks: &[UdpSocket],
    clock: &Clock,
    buf: &mut [u8],
    deadline: Instant,
) -> io::Result<Option<(usize, SocketAddr, usize)>> {
    use std::os::fd::AsRawFd;
    // Bounded: each pass either returns or waits.
    for _ in 0..10_000_000u32 {
        for (i, s) in socks.iter().enumerate() {
            match s.recv_from(buf) {
                Ok((n, from)) => return Ok(Some((n, from, i))),
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock
                    | io::ErrorKind::Interrupted
                    | io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::ConnectionReset => {}
                    _ => return Err(e),
                },
            }
        }
        let left = deadline.saturating_since(clock.now());
        if left == Duration::ZERO {
            return Ok(None);
        }
        let mut fds: Vec<libc::pollfd> = socks
            .iter()
            .map(|s| libc::pollfd {
                fd: s.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ns = left.as_nanos();
        let ts = libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `fds` holds fds.len() valid pollfds, a valid timespec,
        // no signal mask.
        let r = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
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
    }
    Ok(None)
}

/// Asks for `bytes` of kernel receive and send buffer on `sock` (the
/// kernel caps it at `net.core.rmem_max`/`wmem_max`). A receiver that is
/// briefly descheduled on a loaded machine otherwise overflows the
/// default ~200 KB and drops datagrams that the network delivered.
/// Best effort: errors are ignored (and nothing happens off Unix).
pub fn grow_buffers(sock: &UdpSocket, bytes: usize) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            // SAFETY: a valid socket descriptor and a c_int option value of
            // the size passed.
            unsafe {
                libc::setsockopt(
                    sock.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&v as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (sock, bytes);
}
