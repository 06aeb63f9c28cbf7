//! `satcc saratoga`: real file transfers over UDP (PUT, GET, a server for
//! a directory) with STFRC or a fixed rate.

use std::io::IsTerminal;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::{Args, Subcommand};
use satcc_net::saratoga::{
    self as sar, parse_checksum, parse_timestamp, Access, Cidr, Progress, Rate, SaratogaServer,
    ServeConfig, SessionReport, TransferConfig, TransferReport, DEFAULT_PORT,
};
use satcc_proto::stfrc::{LossFilter, ReceiveRate};
use satcc_proto::Duration;
use satcc_sim::scenario::limits::fmt_bytes;
use satcc_sim::scenario::units::{parse_bytes, parse_duration, parse_rate_bps};

/// Transfer files with Saratoga (draft-wood-tsvwg-saratoga) over UDP,
/// paced by STFRC (TCP-friendly, for shared links) or at a fixed rate
/// (a dedicated link). Port 7542 unless given; IPv4 or IPv6.
///
/// A receiver writes to .NAME.partial and renames it to NAME only once
/// every byte has arrived and the sender's checksum (SHA-1 by default)
/// verifies: a failed or interrupted transfer never leaves a file under
/// its final name, and the command exits non-zero saying why. A server
/// keeps an interrupted PUT's .NAME.partial with a .NAME.resume record;
/// a PUT of the same file (name, size, checksum) then resumes, sending
/// only what is missing.
///
/// Examples:
///   satcc saratoga serve ./inbox --bind 127.0.0.1        # accept PUTs, serve GETs
///   satcc saratoga put report.pdf 127.0.0.1              # STFRC by default
///   satcc saratoga put image.raw sat.example:7542 --rate 20Mbps --as img-001.raw
///   satcc saratoga get 127.0.0.1 report.pdf ./copy.pdf
///   satcc saratoga put big.bin '[::1]:7542' --json | jq .goodput_bps
///
/// Through an emulated satellite link (see `satcc emulate --help`):
///   satcc saratoga serve ./inbox --bind 127.0.0.1:7542 &
///   satcc emulate --listen 127.0.0.1:9000 --to 127.0.0.1:7542 --preset dmc &
///   satcc saratoga put big.bin 127.0.0.1:9000 --rate 50Mbps
///
/// Saratoga has no authentication: anyone who can reach the server's
/// port can write files into DIR (within --max-size and the session
/// limits) and read any file in it. Bind to a trusted interface.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct SaratogaArgs {
    #[command(subcommand)]
    cmd: SarCmd,
}

#[derive(Subcommand, Debug)]
enum SarCmd {
    /// Accept PUTs into DIR and serve GETs from it, many sessions at once,
    /// until interrupted (Ctrl-C keeps PUTs in progress for a resume).
    ///
    /// Names are single file names: no '/', '\', NUL or control
    /// characters, no leading '.', at most 200 bytes. GET serves regular
    /// files only (never a symlink). An existing file is not replaced
    /// unless --overwrite. One line per finished transfer on stdout.
    ///
    /// Examples:
    ///   satcc saratoga serve ./inbox --bind 127.0.0.1
    ///   satcc saratoga serve /srv/sat --bind '[::]:7542' --max-size 2GB --stfrc
    ///   satcc saratoga serve ./inbox --json > transfers.jsonl
    #[command(verbatim_doc_comment)]
    Serve(ServeArgs),
    /// Send FILE to a server (a Saratoga PUT).
    ///
    /// Examples:
    ///   satcc saratoga put notes.txt 127.0.0.1
    ///   satcc saratoga put image.raw 192.0.2.7:7542 --rate 8Mbps --as pass-42.raw
    ///   satcc saratoga put big.bin '[::1]' --json
    #[command(verbatim_doc_comment)]
    Put(PutArgs),
    /// Fetch NAME from a server into DEST (default: ./NAME) (a Saratoga GET).
    ///
    /// Examples:
    ///   satcc saratoga get 127.0.0.1 notes.txt
    ///   satcc saratoga get 192.0.2.7:7542 pass-42.raw /data/pass-42.raw --json
    #[command(verbatim_doc_comment)]
    Get(GetArgs),
    /// Announce this peer with BEACON frames, or listen for peers that
    /// announce themselves (draft §4.1).
    ///
    /// A BEACON carries an endpoint identifier (EID), whether the peer is
    /// willing to send and receive files, and optionally its free space.
    /// `serve --announce ADDR` sends them from the server's own port, so
    /// a listener learns the address to PUT to.
    ///
    /// Examples:
    ///   satcc saratoga beacon listen --bind 0.0.0.0:7542 --duration 30s
    ///   satcc saratoga beacon send 192.0.2.255 --eid groundstation-1 --count 5
    ///   satcc saratoga serve ./inbox --bind 192.0.2.10 --announce 192.0.2.255
    #[command(verbatim_doc_comment)]
    Beacon(BeaconArgs),
}

#[derive(Args, Debug)]
struct BeaconArgs {
    #[command(subcommand)]
    cmd: BeaconCmd,
}

#[derive(Subcommand, Debug)]
enum BeaconCmd {
    /// Send BEACON frames to ADDR (HOST[:PORT], a broadcast address
    /// allowed).
    Send {
        /// Where to: HOST or HOST:PORT (port 7542 if omitted).
        to: String,
        /// The endpoint identifier announced.
        #[arg(long, default_value = "satcc")]
        eid: String,
        /// How many.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Time between them.
        #[arg(long, default_value = "1s", value_name = "DURATION")]
        interval: String,
        /// Advertise the free space of this directory's file system.
        #[arg(long, value_name = "DIR")]
        free_space: Option<PathBuf>,
        /// Willing to send files: yes, capable or no.
        #[arg(long, default_value = "yes")]
        tx: String,
        /// Willing to receive files: yes, capable or no.
        #[arg(long, default_value = "yes")]
        rx: String,
    },
    /// Listen for BEACON frames and print each peer the first time it is
    /// heard (every BEACON with --all); a summary at the end.
    Listen {
        /// Local address: IP or IP:PORT (port 7542 if omitted).
        #[arg(long, default_value = "0.0.0.0:7542", value_name = "ADDR")]
        bind: String,
        /// How long to listen.
        #[arg(long, default_value = "10s", value_name = "DURATION")]
        duration: String,
        /// A line for every BEACON, not only new peers.
        #[arg(long)]
        all: bool,
        /// JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Options of every transfer.
#[derive(Args, Debug)]
struct Common {
    /// Send at this fixed wire rate, e.g. `20Mbps` (plain Saratoga, for a
    /// link of your own).
    #[arg(long, value_name = "RATE", conflicts_with = "stfrc")]
    rate: Option<String>,
    /// Pace with STFRC (TCP-friendly; the default).
    #[arg(long)]
    stfrc: bool,
    /// Payload bytes per DATA frame.
    #[arg(long, default_value_t = 1024, value_name = "BYTES")]
    payload: u32,
    /// Checksum the sender computes: sha1, md5, crc32 or none.
    #[arg(long, default_value = "sha1")]
    checksum: String,
    /// Give up when nothing is heard from the peer for this long.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    timeout: String,
    /// Refuse files larger than this.
    #[arg(long, default_value = "10GB", value_name = "SIZE")]
    max_size: String,
    /// Replace an existing file of the same name.
    #[arg(long)]
    overwrite: bool,
    /// The sender also asks for a STATUS every N DATA frames (0, the
    /// default: not by count; it asks once per round trip and at least
    /// once a second). A count ties the STATUS rate to the data rate and
    /// can fill a narrow return link.
    #[arg(long, default_value_t = 0, value_name = "N")]
    status_every: u32,
    /// STATUS requests per round trip of a fixed-rate sender (0: off);
    /// STFRC asks once per round trip by itself.
    #[arg(long, default_value_t = 1.0, value_name = "K")]
    status_per_rtt: f64,
    /// At least N DATA frames between two per-round-trip requests (on a
    /// LAN or loopback a round trip lasts a few frames; 0: no floor).
    #[arg(long, default_value_t = 100, value_name = "N")]
    status_min_frames: u32,
    /// The return link's rate, if you know it (e.g. `38.4kbps`): STATUS
    /// requests are spaced so that the STATUS frames use at most
    /// --status-share of it.
    #[arg(long, value_name = "RATE")]
    reverse_rate: Option<String>,
    /// STFRC's estimate of the receiver's rate X_recv: `predicted` (paper
    /// 000: the cycle's bytes over its send times; the default) or
    /// `delivery` (over the time between STATUS frames too, so slow start
    /// stops at twice the bottleneck's rate).
    #[arg(long, default_value = "predicted", value_name = "HOW")]
    receive_rate: String,
    /// Which losses slow STFRC down: `all` (RFC 5348; the default) or
    /// `spike` (only those seen while the round trip says a queue is
    /// building; the rest are taken as link errors and only repaired: for
    /// a link of your own with random errors, not TCP-friendly).
    #[arg(long, default_value = "all", value_name = "WHICH")]
    loss_filter: String,
    /// STFRC leaves out of the round trip its rate equation uses the time
    /// a STATUS's hole list takes on the return link (learnt from the
    /// quickest STATUS frames with and without holes): on a narrow return
    /// link a long list would otherwise count as path delay.
    #[arg(long)]
    exclude_hole_delay: bool,
    /// The share of --reverse-rate that STATUS frames may use.
    #[arg(long, default_value_t = 0.5, value_name = "SHARE")]
    status_share: f64,
    /// Timestamp type in STATUS-requesting DATA: posix64_32 (the
    /// default; every peer tried decodes it), posix32, posix64,
    /// posix32_32, epoch2000_32, local (type 0, which the Go
    /// implementation refuses) or none.
    #[arg(long, default_value = "posix64_32", value_name = "TYPE")]
    timestamp: String,
    /// Give up when the peer keeps answering but acknowledges nothing new
    /// for this long (or for N round trips, `16rtt`, if longer; both:
    /// `30s,16rtt`).
    #[arg(long, default_value = "30s,16rtt", value_name = "T[,Nrtt]")]
    progress_timeout: String,
    /// JSON on stdout instead of the result line (serve: one line per
    /// finished transfer).
    #[arg(long)]
    json: bool,
    /// No progress line.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Directory PUTs land in and GETs are served from.
    dir: PathBuf,
    /// Local address: IP or IP:PORT (port 7542 if omitted).
    #[arg(long, default_value = "0.0.0.0:7542", value_name = "ADDR")]
    bind: String,
    /// Transfers in progress at once, all peers together.
    #[arg(long, default_value_t = 64)]
    max_sessions: usize,
    /// Transfers in progress at once from one IP address.
    #[arg(long, default_value_t = 8)]
    max_per_peer: usize,
    /// Announce the server with a BEACON to ADDR (HOST[:PORT], a
    /// broadcast address allowed) every --announce-every.
    #[arg(long, value_name = "ADDR")]
    announce: Option<String>,
    /// Time between announcements.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    announce_every: String,
    /// The endpoint identifier announced.
    #[arg(long, default_value = "satcc")]
    eid: String,
    /// Interrupted PUTs kept for resuming at most (0: never resume;
    /// every failed transfer's temporary file is removed).
    #[arg(long, default_value_t = 32, value_name = "N")]
    max_resumable: usize,
    /// Answer only peers in this address block (`192.0.2.0/24`,
    /// `2001:db8::/32`, or one address); repeatable. Others' frames are
    /// dropped unanswered. Default: everyone.
    #[arg(long, value_name = "CIDR")]
    allow: Vec<String>,
    /// Serve GETs only: PUTs are refused (STATUS error 5).
    #[arg(long, conflicts_with = "write_only")]
    read_only: bool,
    /// Accept PUTs only: GETs are refused (STATUS error 5).
    #[arg(long)]
    write_only: bool,
    /// Bytes of PUTs one IP address may send while the server runs (a
    /// failed PUT's are given back); beyond, refused (STATUS error 8).
    #[arg(long, value_name = "SIZE")]
    quota_per_peer: Option<String>,
    /// The same for all peers together.
    #[arg(long, value_name = "SIZE")]
    quota: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct PutArgs {
    /// The file to send.
    file: PathBuf,
    /// The server: HOST or HOST:PORT (`[::1]:7542` for IPv6 with a port).
    server: String,
    /// Name on the server [default: FILE's name].
    #[arg(long = "as", value_name = "NAME")]
    name: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct GetArgs {
    /// The server: HOST or HOST:PORT.
    server: String,
    /// The file's name on the server.
    name: String,
    /// Where to write it [default: ./NAME].
    dest: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// HOST, HOST:PORT, IPv6 or [IPv6]:PORT; port 7542 when not given.
fn resolve(what: &str, s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = s.trim_matches(|c| c == '[' || c == ']').parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    }
    let with_port = match s.rsplit_once(':') {
        Some((_, p)) if p.parse::<u16>().is_ok() => s.to_string(),
        _ => format!("{s}:{DEFAULT_PORT}"),
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("{what} '{s}': {e} (expected HOST or HOST:PORT)"))?
        .next()
        .ok_or_else(|| format!("{what} '{s}': no address"))
}

/// `--progress-timeout`: a duration, `Nrtt`, or both separated by a
/// comma; at least one non-zero.
fn parse_progress_timeout(s: &str) -> Result<(Duration, u32), String> {
    let err = |e: String| format!("--progress-timeout '{s}': {e}");
    let (mut t, mut n) = (Duration::ZERO, 0u32);
    for part in s.split(',').map(str::trim) {
        if let Some(k) = part.strip_suffix("rtt") {
            n = k
                .parse()
                .map_err(|_| err(format!("'{part}': expected N followed by 'rtt'")))?;
        } else {
            t = parse_duration(part).map_err(|e| err(e.to_string()))?;
        }
    }
    if t == Duration::ZERO && n == 0 {
        return Err(err("expected a non-zero time or number of RTTs".into()));
    }
    Ok((t, n))
}

fn transfer_config(c: &Common) -> Result<TransferConfig, String> {
    let rate = match &c.rate {
        Some(r) => {
            let bps = parse_rate_bps(r).map_err(|e| format!("--rate '{r}': {e}"))?;
            if bps == 0 {
                return Err(format!("--rate '{r}': must be greater than zero"));
            }
            Rate::Fixed(bps)
        }
        None => Rate::Stfrc,
    };
    if c.payload == 0 || c.payload > sar::MAX_PAYLOAD {
        return Err(format!(
            "--payload {}: expected 1 to {}",
            c.payload,
            sar::MAX_PAYLOAD
        ));
    }
    let timeout =
        parse_duration(&c.timeout).map_err(|e| format!("--timeout '{}': {e}", c.timeout))?;
    if timeout.as_nanos() == 0 {
        return Err(format!(
            "--timeout '{}': must be greater than zero",
            c.timeout
        ));
    }
    let (progress_timeout, progress_timeout_rtts) = parse_progress_timeout(&c.progress_timeout)?;
    if !(c.status_per_rtt.is_finite() && c.status_per_rtt >= 0.0) {
        return Err(format!(
            "--status-per-rtt {}: expected a number >= 0",
            c.status_per_rtt
        ));
    }
    if !(c.status_share.is_finite() && c.status_share > 0.0 && c.status_share <= 1.0) {
        return Err(format!(
            "--status-share {}: expected a number in (0, 1]",
            c.status_share
        ));
    }
    let reverse_rate_bps = match &c.reverse_rate {
        Some(r) => {
            let bps = parse_rate_bps(r).map_err(|e| format!("--reverse-rate '{r}': {e}"))?;
            if bps == 0 {
                return Err(format!("--reverse-rate '{r}': must be greater than zero"));
            }
            Some(bps)
        }
        None => None,
    };
    Ok(TransferConfig {
        rate,
        payload: c.payload,
        checksum: parse_checksum(&c.checksum)?,
        inactivity_timeout: timeout,
        status_every_frames: c.status_every,
        status_per_rtt: c.status_per_rtt,
        status_min_frames: c.status_min_frames,
        reverse_rate_bps,
        status_share: c.status_share,
        timestamp: parse_timestamp(&c.timestamp)?,
        progress_timeout,
        progress_timeout_rtts,
        max_size: parse_bytes(&c.max_size)
            .map_err(|e| format!("--max-size '{}': {e}", c.max_size))?,
        overwrite: c.overwrite,
        stfrc_receive_rate: match c.receive_rate.as_str() {
            "predicted" => ReceiveRate::Predicted,
            "delivery" => ReceiveRate::Delivery,
            v => {
                return Err(format!(
                    "--receive-rate '{v}': expected predicted or delivery"
                ))
            }
        },
        stfrc_loss_filter: match c.loss_filter.as_str() {
            "all" => LossFilter::All,
            "spike" => LossFilter::SPIKE,
            v => return Err(format!("--loss-filter '{v}': expected all or spike")),
        },
        stfrc_exclude_hole_delay: c.exclude_hole_delay,
    })
}

/// Runs `satcc saratoga`.
pub fn saratoga(a: SaratogaArgs) -> ExitCode {
    let (what, r) = match a.cmd {
        SarCmd::Serve(s) => ("serve", serve(s)),
        SarCmd::Put(p) => ("put", put(p)),
        SarCmd::Get(g) => ("get", get(g)),
        SarCmd::Beacon(b) => ("beacon", beacon(b)),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, e)) => {
            eprintln!("satcc saratoga {what}: {e}");
            ExitCode::from(code)
        }
    }
}

/// Exit 2 for bad arguments, 1 for a failed transfer.
type Outcome = Result<(), (u8, String)>;

fn bad(e: String) -> (u8, String) {
    (2, e)
}

/// Bytes, exact below 10 kB (a 3-byte file is not "0 KB").
fn size(b: u64) -> String {
    if b < 10_000 {
        format!("{b} B")
    } else {
        fmt_bytes(b)
    }
}

fn mbps(bps: f64) -> String {
    format!("{:.2} Mb/s", bps / 1e6)
}

/// A progress line on a terminal (stderr), redrawn about 4 times a second.
struct ProgressLine {
    show: bool,
    last: f64,
    drawn: bool,
}

impl ProgressLine {
    fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            show: !quiet && std::io::stderr().is_terminal(),
            last: -1.0,
            drawn: false,
        }
    }

    fn update(&mut self, p: &Progress) {
        if !self.show || p.elapsed_s - self.last < 0.25 {
            return;
        }
        self.last = p.elapsed_s;
        let rate = if p.elapsed_s > 0.0 {
            p.done as f64 * 8.0 / p.elapsed_s
        } else {
            0.0
        };
        let tail = match p.total {
            Some(t) if t > 0 => {
                let left = t.saturating_sub(p.done) as f64 * 8.0;
                let eta = if rate > 0.0 {
                    format!("ETA {:.0} s", left / rate)
                } else {
                    "ETA -".into()
                };
                format!(
                    "{} / {} ({:.0}%)  {}  {eta}",
                    fmt_bytes(p.done),
                    fmt_bytes(t),
                    100.0 * p.done as f64 / t as f64,
                    mbps(rate)
                )
            }
            _ => format!("{}  {}", fmt_bytes(p.done), mbps(rate)),
        };
        eprint!("\r\x1b[2K{tail}");
        self.drawn = true;
    }

    fn clear(&self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
        }
    }
}

fn finish(
    r: Result<TransferReport, sar::TransferError>,
    line: ProgressLine,
    json: bool,
    what: String,
) -> Outcome {
    line.clear();
    match r {
        Ok(rep) => {
            if json {
                let mut v = serde_json::to_value(&rep).unwrap_or_default();
                v["ok"] = true.into();
                // With checksum "none" the bytes arrived but nothing
                // checked them: a script must be able to tell.
                v["verified"] = (rep.checksum != "none").into();
                println!("{v}");
            } else {
                let p = rep.loss_event_rate.map_or(String::new(), |p| {
                    if p > 0.0 {
                        format!(", loss event rate {p:.2e}")
                    } else {
                        ", loss event rate 0".into()
                    }
                });
                let resumed = if rep.resumed_bytes > 0 {
                    format!(", resumed: {} already there", size(rep.resumed_bytes))
                } else {
                    String::new()
                };
                let verified = if rep.checksum == "none" {
                    "not verified: no checksum".to_string()
                } else {
                    format!("{} verified", rep.checksum)
                };
                println!(
                    "{what}: {} in {:.2} s, {} ({} retransmitted, {} STATUS{p}, {verified}{resumed})",
                    size(rep.bytes),
                    rep.duration_s,
                    mbps(rep.goodput_bps),
                    size(rep.retransmitted_bytes),
                    rep.status_frames,
                );
            }
            Ok(())
        }
        Err(e) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"ok": false, "error": e.to_string()})
                );
            }
            Err((1, e.to_string()))
        }
    }
}

fn put(a: PutArgs) -> Outcome {
    let cfg = transfer_config(&a.common).map_err(bad)?;
    let server = resolve("SERVER", &a.server).map_err(bad)?;
    let name = match &a.name {
        Some(n) => n.clone(),
        None => a
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                bad(format!(
                    "{}: no file name (use --as NAME)",
                    a.file.display()
                ))
            })?,
    };
    sar::check_name(name.as_bytes()).map_err(|e| bad(format!("--as: {e}")))?;
    let stop = satcc_net::signal::stop_on_signals();
    let mut line = ProgressLine::new(a.common.quiet || a.common.json);
    let r = sar::put(&a.file, server, &name, &cfg, &mut |p| {
        line.update(p);
        !stop.load(Ordering::Relaxed)
    });
    let what = format!("put {} -> {server} as {name}", a.file.display());
    finish(r, line, a.common.json, what)
}

fn get(a: GetArgs) -> Outcome {
    let cfg = transfer_config(&a.common).map_err(bad)?;
    let server = resolve("SERVER", &a.server).map_err(bad)?;
    sar::check_name(a.name.as_bytes()).map_err(|e| bad(format!("NAME: {e}")))?;
    let dest = a.dest.clone().unwrap_or_else(|| PathBuf::from(&a.name));
    let dest = if dest.is_dir() {
        dest.join(&a.name)
    } else {
        dest
    };
    let stop = satcc_net::signal::stop_on_signals();
    let mut line = ProgressLine::new(a.common.quiet || a.common.json);
    let r = sar::get(server, &a.name, &dest, &cfg, &mut |p| {
        line.update(p);
        !stop.load(Ordering::Relaxed)
    });
    let what = format!("get {} from {server} -> {}", a.name, dest.display());
    finish(r, line, a.common.json, what)
}

fn serve(a: ServeArgs) -> Outcome {
    let transfer = transfer_config(&a.common).map_err(bad)?;
    let bind = resolve("--bind", &a.bind).map_err(bad)?;
    if a.max_sessions == 0 || a.max_per_peer == 0 {
        return Err(bad(
            "--max-sessions and --max-per-peer: must be at least 1".into()
        ));
    }
    if !Path::new(&a.dir).is_dir() {
        return Err(bad(format!("{}: not a directory", a.dir.display())));
    }
    let announce = match &a.announce {
        Some(to) => {
            let to = resolve("--announce", to).map_err(bad)?;
            let every = positive_duration("--announce-every", &a.announce_every)?;
            Some((to, every))
        }
        None => None,
    };
    let allow = a
        .allow
        .iter()
        .map(|c| Cidr::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    let access = match (a.read_only, a.write_only) {
        (true, _) => Access::ReadOnly,
        (_, true) => Access::WriteOnly,
        _ => Access::ReadWrite,
    };
    let quota = |flag: &str, v: &Option<String>| -> Result<Option<u64>, (u8, String)> {
        v.as_ref()
            .map(|q| parse_bytes(q).map_err(|e| bad(format!("{flag} '{q}': {e}"))))
            .transpose()
    };
    let cfg = ServeConfig {
        transfer,
        allow,
        access,
        quota_per_peer: quota("--quota-per-peer", &a.quota_per_peer)?,
        quota_total: quota("--quota", &a.quota)?,
        max_sessions: a.max_sessions,
        max_sessions_per_peer: a.max_per_peer,
        max_resumable: a.max_resumable,
        announce,
        eid: a.eid.clone(),
        ..ServeConfig::new(a.dir.clone())
    };
    let mut srv = SaratogaServer::bind(bind, cfg).map_err(|e| (1, format!("{bind}: {e}")))?;
    let local = srv.local_addr().map_err(|e| (1, e.to_string()))?;
    let json = a.common.json;
    if !json {
        eprintln!(
            "satcc saratoga: serving {} on {local} (Ctrl-C to stop)",
            a.dir.display()
        );
    }
    if bind.ip().is_unspecified() {
        eprintln!(
            "satcc saratoga: warning: Saratoga has no authentication; anyone who can reach {local} can write into {} (--bind a trusted interface)",
            a.dir.display()
        );
    }
    let stale = srv.counters().stale_removed;
    if stale > 0 && !json {
        eprintln!(
            "satcc saratoga: removed {stale} stale .NAME.partial file(s) of an interrupted server"
        );
    }
    let kept = srv.counters().resumable_found;
    if kept > 0 && !json {
        eprintln!(
            "satcc saratoga: kept {kept} interrupted transfer(s) (.NAME.partial with .NAME.resume): a PUT of the same file resumes"
        );
    }
    let stop = satcc_net::signal::stop_on_signals();
    let mut report = |r: &SessionReport| {
        if json {
            println!("{}", serde_json::to_string(r).unwrap_or_default());
        } else if r.ok {
            println!(
                "{} {} {} {}: {} in {:.2} s, {}",
                r.kind,
                r.name,
                if r.kind == "put" { "from" } else { "to" },
                r.peer,
                size(r.bytes),
                r.duration_s,
                mbps(r.goodput_bps)
            );
        } else {
            println!(
                "{} {} {} {}: failed: {}",
                r.kind,
                r.name,
                if r.kind == "put" { "from" } else { "to" },
                r.peer,
                r.error.as_deref().unwrap_or("?")
            );
        }
    };
    srv.run(stop, &mut report)
        .map_err(|e| (1, format!("{local}: {e}")))?;
    let c = srv.counters();
    if !json {
        eprintln!(
            "satcc saratoga: stopped; {} completed, {} failed, {} refused, {} malformed, {} unknown-session frames",
            c.completed, c.failed, c.refused, c.malformed, c.unknown_session
        );
    }
    Ok(())
}

fn positive_duration(what: &str, s: &str) -> Result<satcc_proto::Duration, (u8, String)> {
    let d = parse_duration(s).map_err(|e| bad(format!("{what} '{s}': {e}")))?;
    if d.as_nanos() == 0 {
        return Err(bad(format!("{what} '{s}': must be greater than zero")));
    }
    Ok(d)
}

fn willing(what: &str, s: &str) -> Result<u8, (u8, String)> {
    match s {
        "yes" => Ok(3),
        "capable" => Ok(2),
        "no" => Ok(0),
        _ => Err(bad(format!("{what} '{s}': expected yes, capable or no"))),
    }
}

fn beacon(a: BeaconArgs) -> Outcome {
    use satcc_net::saratoga::beacon as b;
    let stop = satcc_net::signal::stop_on_signals();
    match a.cmd {
        BeaconCmd::Send {
            to,
            eid,
            count,
            interval,
            free_space,
            tx,
            rx,
        } => {
            let to = resolve("TO", &to).map_err(bad)?;
            let every = positive_duration("--interval", &interval)?;
            let (tx, rx) = (willing("--tx", &tx)?, willing("--rx", &rx)?);
            if eid.len() > b::MAX_EID {
                return Err(bad(format!("--eid: at most {} bytes", b::MAX_EID)));
            }
            let free = match &free_space {
                Some(d) => Some(b::free_space_kb(d).ok_or_else(|| {
                    bad(format!(
                        "--free-space {}: cannot read its file system",
                        d.display()
                    ))
                })?),
                None => None,
            };
            let frame = b::beacon_frame(&eid, free, tx, rx);
            let std_every = std::time::Duration::from_nanos(every.as_nanos());
            let n = b::send_beacons(to, &frame, count, std_every, stop)
                .map_err(|e| (1, format!("{to}: {e}")))?;
            eprintln!("satcc saratoga beacon: sent {n} BEACON(s) to {to} as '{eid}'");
            Ok(())
        }
        BeaconCmd::Listen {
            bind,
            duration,
            all,
            json,
        } => {
            let bind = resolve("--bind", &bind).map_err(bad)?;
            let d = positive_duration("--duration", &duration)?;
            let sock = std::net::UdpSocket::bind(bind).map_err(|e| (1, format!("{bind}: {e}")))?;
            if !json {
                eprintln!(
                    "satcc saratoga beacon: listening on {} for {}",
                    sock.local_addr().map_or(bind, |a| a),
                    duration
                );
            }
            let show = |p: &b::PeerInfo| {
                if json {
                    println!("{}", serde_json::to_string(p).unwrap_or_default());
                } else {
                    let free = p.free_space_kb.map_or(String::new(), |kb| {
                        format!(", {} free", fmt_bytes(kb.saturating_mul(1024)))
                    });
                    println!(
                        "{} '{}': send {}, receive {}, {}-bit descriptors{free}",
                        p.addr,
                        p.eid.escape_debug(),
                        b::willing_text(p.tx_willing),
                        b::willing_text(p.rx_willing),
                        p.descriptor_bits
                    );
                }
            };
            let std_d = std::time::Duration::from_nanos(d.as_nanos());
            let (peers, c) = b::listen_beacons(&sock, std_d, stop, &mut |p, new| {
                if new || all {
                    show(p);
                }
            })
            .map_err(|e| (1, format!("{bind}: {e}")))?;
            if !json {
                eprintln!(
                    "satcc saratoga beacon: {} peer(s), {} BEACON(s), {} other datagram(s)",
                    peers.len(),
                    c.beacons,
                    c.other
                );
            }
            Ok(())
        }
    }
}
