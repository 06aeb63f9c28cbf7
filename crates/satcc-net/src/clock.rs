//! The wall clock and deadline waits.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use satcc_proto::{Duration, Instant};

/// How long before a deadline a wait stops sleeping in the kernel and
/// spins. Linux wakes a sleeping thread 50-100 µs late (timer slack plus
/// scheduling); 250 µs of spinning absorbs that with margin on a loaded
/// machine, at the cost of one busy core-fraction only near deadlines.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(250);

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

    /// Blocks until `t`: an OS sleep to [`DEFAULT_SPIN`] before it, then a
    /// spin (yielding the core while more than 20 µs remain).
    pub fn sleep_until(&self, t: Instant) {
        loop {
            let now = self.now();
            if now >= t {
                return;
            }
            let left = t - now;
            if left > DEFAULT_SPIN {
                std::thread::sleep(StdDuration::from_nanos((left - DEFAULT_SPIN).as_nanos()));
            } else if left > Duration::from_micros(20) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Unknown,
    Blocking,
    NonBlocking,
}

/// A `UdpSocket` with a deadline-bounded receive.
///
/// [`Socket::recv_until`] sleeps in the kernel (a read timeout) until
/// shortly before the deadline and then polls without blocking, so a
/// datagram is seen as soon as it arrives and the deadline is kept to a
/// few microseconds. The socket's blocking mode is switched only when
/// needed (each switch is a system call).
#[derive(Debug)]
pub struct Socket {
    sock: UdpSocket,
    mode: Mode,
    spin: Duration,
}

impl Socket {
    /// Wraps `sock`, spinning for [`DEFAULT_SPIN`] before deadlines.
    pub fn new(sock: UdpSocket) -> Socket {
        Socket {
            sock,
            mode: Mode::Unknown,
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

    fn set_mode(&mut self, m: Mode) -> io::Result<()> {
        if self.mode != m {
            self.sock.set_nonblocking(m == Mode::NonBlocking)?;
            self.mode = m;
        }
        Ok(())
    }

    /// Sends one datagram. A full socket buffer (`WouldBlock`, possible
    /// while polling) is reported as an error like any other: the caller
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
        // Bounded: each pass either returns or moves closer to the
        // deadline; a flood of ICMP errors is capped too.
        for _ in 0..1_000_000u32 {
            let now = clock.now();
            let left = deadline.saturating_since(now);
            let r = if left > self.spin {
                self.set_mode(Mode::Blocking)?;
                // A zero timeout means "block forever" to set_read_timeout;
                // `left - spin` is positive here.
                let wait = StdDuration::from_nanos((left - self.spin).as_nanos().max(1_000));
                self.sock.set_read_timeout(Some(wait))?;
                self.sock.recv_from(buf)
            } else {
                self.set_mode(Mode::NonBlocking)?;
                self.sock.recv_from(buf)
            };
            match r {
                Ok(x) => return Ok(Some(x)),
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                        if left == Duration::ZERO {
                            return Ok(None);
                        }
                        if self.mode == Mode::NonBlocking {
                            if left > Duration::from_micros(20) {
                                std::thread::yield_now();
                            } else {
                                std::hint::spin_loop();
                            }
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
