//! `satcc shell`: any program's traffic across the emulated link.
//!
//! The shape is mahimahi's `mm-link` (a command in a network namespace
//! whose packets cross an emulated link), built without root:
//!
//! ```text
//!  shell's netns            satcc's own netns (user ns root)           peer's netns
//!  satcc0 100.64.0.1 ==veth== shell0 --AF_PACKET--> LinkDir forward --> peer0 ==veth== satcc0 100.64.0.2
//!                              shell0 <-- LinkDir reverse <--AF_PACKET-- peer0
//! ```
//!
//! satcc moves itself into a new user namespace (where it is root, mapped
//! to the caller's uid) with a network namespace of its own, and makes two
//! more network namespaces, one per side. A veth pair joins each side to
//! satcc's namespace; satcc reads every frame from its end with an
//! `AF_PACKET` socket and relays it to the other side, IP packets through
//! one direction of the link ([`crate::emu::LinkDir`], the code `satcc
//! emulate` runs), ARP at once. Both sides are in one IPv4 /24, so
//! nothing routes: the link is a wire between them.
//!
//! Each side's command runs in a child that joins the side's network
//! namespace and a new PID namespace. The first process of that PID
//! namespace waits for the command and exits with its status; when it
//! exits, the kernel kills every other process of the namespace, and
//! every child is set to be killed when its parent dies
//! (`PR_SET_PDEATHSIG`). So killing satcc, even with SIGKILL, kills the
//! commands and everything they started, and the namespaces and devices,
//! held only by those processes and satcc's descriptors, go with them.

mod bridge;
pub(crate) mod sys;

pub use bridge::{
    is_lower_effort, Bridge, DirReport, FlowCount, FlowKey, PeerEnd, DSCP_LE, MAX_FLOWS,
};
pub(crate) use sys::{recv_frame, send_frame, wait_readable_any};

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;

/// The shell side's address.
pub const SHELL_ADDR: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 1);
/// The peer side's address.
pub const PEER_ADDR: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 2);
/// The most peers `satcc shell --peer-delay` makes (their addresses are
/// 100.64.0.2 up to 100.64.0.65, one /24 with the shell).
pub const MAX_PEERS: usize = 64;

/// The address of peer `k` (from 0): 100.64.0.2, 100.64.0.3, ...;
/// peer 0 is [`PEER_ADDR`].
pub fn peer_addr(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(100, 64, 0, 2 + (k.min(MAX_PEERS - 1) as u8))
}

/// Makes the calling thread (only it) join a network namespace, e.g. one
/// from [`Namespaces::side_netns`]: sockets it makes from then on are
/// that namespace's.
pub fn join_netns(ns: &OwnedFd) -> io::Result<()> {
    sys::enter_netns(ns)
}

/// The prefix length of both.
pub const PREFIX: u8 = 24;
/// The interface name inside each side's namespace.
pub const IFNAME: &str = "satcc0";
/// The MTU of every device, and so the largest IP packet on the link.
pub const DEFAULT_MTU: u32 = 1500;

/// Why `satcc shell` cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// Other threads run: a user namespace is entered only by a
    /// single-threaded process.
    #[error("{0} threads are running; namespaces must be set up before any thread starts")]
    Threaded(usize),
    /// The kernel refused a user namespace.
    #[error(
        "cannot create a user namespace ({0}): this system does not let this user make one \
         (user.max_user_namespaces is 0, kernel.unprivileged_userns_clone is 0, or a security \
         module forbids it); run as root, or allow unprivileged user namespaces"
    )]
    NoUserNamespace(io::Error),
    /// A later step of the set-up failed.
    #[error("setting up the namespaces: {0}")]
    Setup(io::Error),
    /// A side's process could not be started.
    #[error("cannot start the {side}'s process: {err}")]
    Spawn {
        /// "shell" or "peer".
        side: &'static str,
        /// Why.
        err: io::Error,
    },
}

/// The namespaces and devices of a shell: the two sides' network
/// namespaces (held open here) and satcc's ends of their veth pairs.
#[derive(Debug)]
pub struct Namespaces {
    /// satcc's own network namespace (where the veth ends are).
    home: OwnedFd,
    shell_ns: OwnedFd,
    /// One per peer (`--peer-delay` makes several).
    peer_ns: Vec<OwnedFd>,
    shell_end: Option<OwnedFd>,
    peer_ends: Vec<OwnedFd>,
    mtu: u32,
}

fn setup(e: io::Error) -> ShellError {
    ShellError::Setup(e)
}

/// Configures a side's namespace (run inside it): loopback up, IPv6 off
/// (so the per-flow summary holds only what the programs send, not
/// router solicitations), the address, offloads off, the device up.
fn configure_side(ip: Ipv4Addr) -> io::Result<()> {
    let s = sys::ioctl_socket()?;
    sys::set_up(&s, "lo")?;
    // Best effort: a kernel without IPv6 has no such file.
    let _ = sys::write_sysctl(
        &format!("/proc/sys/net/ipv6/conf/{IFNAME}/disable_ipv6"),
        "1",
    );
    sys::set_ipv4(&s, IFNAME, ip, PREFIX)?;
    sys::disable_offloads(&s, IFNAME)?;
    sys::set_up(&s, IFNAME)
}

impl Namespaces {
    /// Moves this process into a user and network namespace of its own and
    /// builds the two sides: must be called before any thread is started,
    /// and before anything that depends on the process's network
    /// namespace (sockets made before keep theirs).
    pub fn create(mtu: u32) -> Result<Namespaces, ShellError> {
        Namespaces::create_peers(mtu, 1)
    }

    /// As [`Namespaces::create`], with `peers` peer sides (1 to
    /// [`MAX_PEERS`]), peer `k` at [`peer_addr`]`(k)`, all in one /24
    /// with the shell.
    pub fn create_peers(mtu: u32, peers: usize) -> Result<Namespaces, ShellError> {
        let peers = peers.clamp(1, MAX_PEERS);
        let threads = sys::thread_count();
        if threads > 1 {
            return Err(ShellError::Threaded(threads));
        }
        sys::enter_user_and_net_namespace().map_err(ShellError::NoUserNamespace)?;
        let home = sys::current_netns().map_err(setup)?;
        // satcc's own namespace: no IPv6 on its veth ends (they carry
        // frames only, and would otherwise send their own solicitations).
        let _ = sys::write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
        // satcc's own loopback up: `satcc run --real` keeps its UDP flows
        // on 127.0.0.1 of this namespace.
        sys::set_up(&sys::ioctl_socket().map_err(setup)?, "lo").map_err(setup)?;
        let shell_ns = sys::new_netns(&home).map_err(setup)?;
        let peer_ns = (0..peers)
            .map(|_| sys::new_netns(&home))
            .collect::<io::Result<Vec<_>>>()
            .map_err(setup)?;
        let mut sides = vec![("shell0".to_string(), &shell_ns, SHELL_ADDR)];
        for (k, ns) in peer_ns.iter().enumerate() {
            sides.push((format!("peer{k}"), ns, peer_addr(k)));
        }
        let mut ends = Vec::new();
        for (near, ns, ip) in sides {
            sys::create_veth(&near, IFNAME, ns, mtu).map_err(setup)?;
            sys::in_netns(ns, &home, || configure_side(ip)).map_err(setup)?;
            let s = sys::ioctl_socket().map_err(setup)?;
            sys::disable_offloads(&s, &near).map_err(setup)?;
            sys::set_up(&s, &near).map_err(setup)?;
            // Opened now, before either side runs, so that no frame is
            // missed.
            ends.push(sys::packet_socket(sys::ifindex(&near).map_err(setup)?).map_err(setup)?);
        }
        let shell_end = Some(ends.remove(0));
        Ok(Namespaces {
            home,
            shell_ns,
            peer_ns,
            shell_end,
            peer_ends: ends,
            mtu,
        })
    }

    /// How many peer sides there are.
    pub fn peers(&self) -> usize {
        self.peer_ns.len()
    }

    /// Runs `f` in the shell's network namespace (`peer`: `None`) or peer
    /// `k`'s, on the calling thread, then returns to satcc's: sockets `f`
    /// makes stay in that side's namespace.
    pub fn in_side<T>(
        &self,
        peer: Option<usize>,
        f: impl FnOnce() -> io::Result<T>,
    ) -> io::Result<T> {
        sys::in_netns(self.side_ns(peer)?, &self.home, f)
    }

    /// A descriptor of a side's network namespace (for [`join_netns`] on
    /// another thread).
    pub fn side_netns(&self, peer: Option<usize>) -> io::Result<OwnedFd> {
        self.side_ns(peer)?.try_clone()
    }

    fn side_ns(&self, peer: Option<usize>) -> io::Result<&OwnedFd> {
        match peer {
            None => Ok(&self.shell_ns),
            Some(k) => self
                .peer_ns
                .get(k)
                .ok_or_else(|| io::Error::other(format!("no peer {k}"))),
        }
    }

    /// The MTU of the devices.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// satcc's ends of the shell's and the peer's veth pairs, as
    /// `AF_PACKET` sockets (once; `None` after).
    pub fn take_ends(&mut self) -> Option<(OwnedFd, OwnedFd)> {
        let (shell, mut peers) = self.take_all_ends()?;
        Some((shell, peers.swap_remove(0)))
    }

    /// satcc's end of the shell's veth pair and of every peer's (in peer
    /// order), as `AF_PACKET` sockets (once; `None` after).
    pub fn take_all_ends(&mut self) -> Option<(OwnedFd, Vec<OwnedFd>)> {
        if self.peer_ends.is_empty() {
            return None;
        }
        Some((self.shell_end.take()?, std::mem::take(&mut self.peer_ends)))
    }

    /// Starts `argv` on the shell's side (`peer`: false) or the peer's,
    /// with `env` added to the environment; see [`SideProcess`].
    /// Must be called while this process is single-threaded (it forks).
    pub fn spawn(
        &self,
        peer: bool,
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<SideProcess, ShellError> {
        self.spawn_on(peer.then_some(0), argv, env)
    }

    /// Starts `argv` on the shell's side (`peer`: `None`) or on peer `k`'s,
    /// as [`Namespaces::spawn`].
    pub fn spawn_on(
        &self,
        peer: Option<usize>,
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<SideProcess, ShellError> {
        let side = if peer.is_some() { "peer" } else { "shell" };
        let threads = sys::thread_count();
        if threads > 1 {
            return Err(ShellError::Threaded(threads));
        }
        if argv.is_empty() {
            return Err(ShellError::Spawn {
                side,
                err: io::Error::other("no command"),
            });
        }
        let ns = self
            .side_ns(peer)
            .map_err(|err| ShellError::Spawn { side, err })?;
        // Prepared before the fork: the child only makes system calls.
        let mut cmd = std::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        if peer.is_some() {
            // The peer reads nothing from the terminal, and is in a
            // process group of its own so that Ctrl-C at the terminal
            // reaches the shell's command, not the server behind it.
            cmd.stdin(std::process::Stdio::null());
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        }
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: this process is single-threaded (checked above), so the
        // child may do anything the parent could.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(ShellError::Spawn {
                side,
                err: io::Error::last_os_error(),
            });
        }
        if pid == 0 {
            child(ns, cmd, side, parent);
        }
        Ok(SideProcess { pid, status: None })
    }
}

/// The child of a fork: joins the side's network namespace and a new PID
/// namespace, and runs the command under an init process there. Never
/// returns.
fn child(ns: &OwnedFd, mut cmd: std::process::Command, side: &str, parent: libc::pid_t) -> ! {
    // SAFETY: prctl, getppid, setns, unshare, fork, waitpid and _exit
    // are plain system calls on this process's own state.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            // The parent died before the death signal was armed.
            libc::_exit(1);
        }
        if let Err(e) = sys::enter_netns(ns) {
            eprintln!("satcc shell: {side}: {e}");
            libc::_exit(126);
        }
        // Nothing of satcc's (the other side's namespace, the packet
        // sockets) stays open in the side's processes.
        libc::close_range(3, u32::MAX, 0);
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            eprintln!(
                "satcc shell: {side}: unshare(CLONE_NEWPID): {}",
                io::Error::last_os_error()
            );
            libc::_exit(126);
        }
        let init = libc::fork();
        if init < 0 {
            libc::_exit(126);
        }
        if init == 0 {
            // PID 1 of the side's PID namespace. Its exit ends every
            // process left in the namespace.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            let code = match cmd.spawn() {
                Ok(c) => {
                    forward_sigterm_to(c.id() as libc::pid_t);
                    reap_until(c.id() as libc::pid_t)
                }
                Err(e) => {
                    let prog = cmd.get_program().to_string_lossy().into_owned();
                    eprintln!("satcc shell: {side}: {prog}: {e}");
                    127
                }
            };
            libc::_exit(code);
        }
        forward_sigterm_to(init);
        libc::_exit(wait_code(init));
    }
}

/// Where this process passes a SIGTERM on to (0: nowhere).
static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward_sigterm(_: libc::c_int) {
    // Async-signal-safe: an atomic load and kill(2).
    let pid = FORWARD_TO.load(std::sync::atomic::Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill has no memory preconditions.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// Makes a SIGTERM to this process go on to `pid`: satcc's SIGTERM to a
/// side reaches the side's init, and the init's reaches the command, so
/// the command can stop cleanly (`timeout 60 satcc shell ...`). SIGINT is
/// not passed on: at a terminal the command already has it.
fn forward_sigterm_to(pid: libc::pid_t) {
    FORWARD_TO.store(pid, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: a zeroed sigaction with a handler that only loads an atomic
    // and calls kill, and no old action asked for.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = forward_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// As PID 1: reaps every child (orphans are re-parented to it) until
/// `main` exits; its exit code (128 + signal if killed).
fn reap_until(main: libc::pid_t) -> i32 {
    loop {
        let mut st = 0;
        // SAFETY: waitpid writes the status into `st`.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r == main {
            return status_code(st);
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1;
        }
    }
}

fn wait_code(pid: libc::pid_t) -> i32 {
    loop {
        let mut st = 0;
        // SAFETY: waitpid writes the status into `st`.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            return status_code(st);
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1;
        }
    }
}

/// A wait status as a shell reports it: the exit code, or 128 + the
/// signal that killed the process.
fn status_code(st: libc::c_int) -> i32 {
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        1
    }
}

/// A side's process: the child that holds the side's PID namespace. Its
/// exit code is the command's. Killed (with everything in its PID
/// namespace) when dropped, and when satcc dies.
#[derive(Debug)]
pub struct SideProcess {
    pid: libc::pid_t,
    status: Option<i32>,
}

impl SideProcess {
    /// The exit code if the command has finished (128 + signal if it was
    /// killed), without waiting.
    pub fn try_wait(&mut self) -> Option<i32> {
        if self.status.is_none() {
            let mut st = 0;
            // SAFETY: waitpid writes the status into `st`.
            let r = unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) };
            if r == self.pid {
                self.status = Some(status_code(st));
            }
        }
        self.status
    }

    /// Kills the side: its init process and so, by the kernel, everything
    /// in its PID namespace. Returns the exit code if it had finished
    /// before.
    pub fn kill(&mut self) -> Option<i32> {
        let before = self.try_wait();
        if before.is_none() {
            // SAFETY: kill and waitpid on our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
            self.status = Some(wait_code(self.pid));
        }
        before
    }

    /// Sends SIGTERM to the side's command (through its init).
    pub fn terminate(&mut self) {
        if self.try_wait().is_none() {
            // SAFETY: kill on our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGTERM);
            }
        }
    }

    /// The child's process id (in satcc's PID namespace).
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }
}

impl Drop for SideProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
