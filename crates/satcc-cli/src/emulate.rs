//! `satcc emulate`: the userspace satellite-link emulator.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use satcc_net::emu::{DirStats, LinkConfig, Relay, RelayConfig, DEFAULT_OVERHEAD, PRESETS};
use satcc_proto::Duration;
use satcc_sim::scenario::units::parse_duration;
use serde::Serialize;

/// Relay UDP between a client and a server through an emulated satellite
/// link: per direction its rate (serialisation time), propagation delay,
/// queue (DropTail or RED) and error model (random loss, bit errors,
/// Gilbert-Elliott bursts), with the simulator's own queue and error code.
///
/// Clients send to --listen; datagrams go through the forward direction
/// (the link's `rate`, `queue`, `error`) to --to, and the server's replies
/// come back through the reverse direction (`reverse_rate`,
/// `reverse_queue`, `reverse_error`) to the client. One client at a time:
/// another's datagrams are dropped until the first has been silent for
/// 5 s (flows to several servers share the link with --route). No root
/// and no kernel module: everything happens in this process.
///
/// The link is a preset or a file with the keys of a scenario link
/// (docs/scenario.md), plus an optional [schedule] of rate and delay
/// changes; `--preset NAME --print-link` prints a preset in that syntax.
///
/// Presets:
///   geo     10 Mb/s each way, 250 ms one-way
///   dmc     paper 000's DMC satellite: 100 Mb/s down, 38.4 kb/s up, PER 1e-4
///   ipstar  paper 001's IPSTAR: 1 Mb/s down, 256 kb/s up, 600 ms, PER 0.33 %
///   leo     20 Mb/s, delay 8-18 ms over a pass, a handover every 15 s
///
/// Examples:
///   satcc perf --server --bind 127.0.0.1:9001 &
///   satcc emulate --listen 127.0.0.1:9000 --to 127.0.0.1:9001 --preset geo --duration 40s &
///   satcc perf --client 127.0.0.1:9000 --protocol tfrc --time 30s
///
///   satcc emulate --preset leo --print-link > my-leo.toml   # edit, then:
///   satcc emulate --to 127.0.0.1:9001 --link my-leo.toml --links-csv links.csv
///   satcc emulate --to 127.0.0.1:9001 --preset geo --trace rates.csv   # time_s,rate,delay
///
/// Every --interval a line per direction: delivered rate, queue, drops.
/// The link's drops happen here; `satcc perf` reports what the flow saw.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct EmulateArgs {
    /// Address clients send to.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9000")]
    pub listen: String,
    /// Address to forward to (the server behind the link).
    #[arg(long, value_name = "ADDR")]
    pub to: Option<String>,
    /// Another route through the same link, LISTEN=TO (repeatable):
    /// clients of LISTEN reach the server TO, and their datagrams share
    /// the link's queues, rate and errors with every other route's, so
    /// flows to different servers compete for one bottleneck (e.g. a
    /// Saratoga PUT beside `satcc perf`). Not with a schedule or trace;
    /// Linux only.
    #[arg(long, value_name = "LISTEN=TO")]
    pub route: Vec<String>,
    /// Where the link comes from.
    #[command(flatten)]
    pub src: LinkArgs,
    /// Stop after this long (e.g. `30s`) and print a summary [default: run
    /// until interrupted].
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Write per-interval rows to FILE in the columns of a simulated run's
    /// links.csv (links `forward` and `reverse`), flushed every interval.
    #[arg(long, value_name = "FILE")]
    pub links_csv: Option<PathBuf>,
    /// Capture every delivered datagram, both directions, to FILE (pcap,
    /// whole datagrams with synthesised IPv4/UDP headers, timestamps from
    /// the emulator's start; `tshark -r FILE -T fields -e udp.dstport -e
    /// data.data` shows them). The file appears when the emulator stops
    /// (--duration, Ctrl-C or SIGTERM), never half-written.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Reporting interval.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub interval: String,
    /// Bytes each datagram takes on the link beyond its UDP payload
    /// (IPv4 + UDP headers).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_OVERHEAD)]
    pub overhead: u32,
    /// Print the link in link-file syntax and exit.
    #[arg(long)]
    pub print_link: bool,
    /// Print the summary as JSON on stdout at the end, and nothing else
    /// (needs --duration).
    #[arg(long, requires = "duration")]
    pub json: bool,
    /// No per-interval lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// One direction in the final summary; names as in summary.json's links.
#[derive(Serialize)]
struct DirSummary {
    name: &'static str,
    rate_bps: u64,
    delay_s: f64,
    utilization: f64,
    arrivals: u64,
    delivered: u64,
    drops: u64,
    drops_queue: u64,
    drops_red: u64,
    drops_error: u64,
    loss: f64,
    max_queue_pkts: u64,
    send_errors: u64,
    late_1ms: u64,
    max_late_s: f64,
}

#[derive(Serialize)]
struct Summary {
    link: String,
    listen: String,
    to: String,
    seed: u64,
    duration_s: f64,
    /// Datagrams dropped because a second client sent while one was served.
    other_clients: u64,
    links: Vec<DirSummary>,
}

fn resolve(what: &str, s: &str) -> Result<SocketAddr, String> {
    s.to_socket_addrs()
        .map_err(|e| format!("{what} '{s}': {e} (expected HOST:PORT, e.g. 127.0.0.1:9000)"))?
        .next()
        .ok_or_else(|| format!("{what} '{s}': no address"))
}

/// A duration option's value, or the line saying what is wrong with it.
pub fn dur(what: &str, s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| format!("{what}: {e}"))
}

/// Where a link comes from: the options `satcc emulate` and `satcc shell`
/// share.
#[derive(Args, Debug)]
pub struct LinkArgs {
    /// A built-in link: geo, dmc, ipstar, leo.
    #[arg(long, value_name = "NAME", conflicts_with = "link")]
    pub preset: Option<String>,
    /// A link file: a scenario link's keys (rate, reverse_rate, delay,
    /// queue, reverse_queue, error, reverse_error) and an optional
    /// [schedule] (repeat, steps = [{ at, rate, reverse_rate, delay }]).
    #[arg(long, value_name = "FILE.toml")]
    pub link: Option<PathBuf>,
    /// Replace the schedule with a CSV trace `time_s,rate,delay[,reverse_rate]`
    /// (e.g. `5,2Mbps,260ms`; empty fields keep the previous value).
    #[arg(long, value_name = "FILE.csv", conflicts_with = "mahimahi")]
    pub trace: Option<PathBuf>,
    /// Replace the forward rate with a mahimahi packet-delivery trace (one
    /// millisecond timestamp per 1500-byte delivery opportunity; loops),
    /// averaged over 100 ms windows.
    #[arg(long, value_name = "FILE")]
    pub mahimahi: Option<PathBuf>,
    /// Loop a --trace with this period (e.g. `60s`).
    #[arg(long, value_name = "DURATION")]
    pub trace_repeat: Option<String>,
    /// Seed of the error models' and RED's random streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The link a [`LinkArgs`] names: its name for messages, the link, and
/// the preset's text (for `--print-link`).
pub fn load_link_from(a: &LinkArgs) -> Result<(String, LinkConfig, Option<&'static str>), String> {
    let (name, mut link, text) = match (a.preset.as_deref(), a.link.as_deref()) {
        (Some(p), None) => (
            format!("preset {p}"),
            LinkConfig::preset(p).map_err(|e| format!("--preset: {e}"))?,
            LinkConfig::preset_toml(p),
        ),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| format!("--link {}: cannot read: {e}", f.display()))?;
            (
                f.display().to_string(),
                LinkConfig::from_toml_str(&text, &f.display().to_string())
                    .map_err(|e| e.to_string())?,
                None,
            )
        }
        (None, None) => {
            return Err(format!(
                "give --preset NAME ({}) or --link FILE.toml",
                PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
            ))
        }
        (Some(_), Some(_)) => return Err("give --preset or --link, not both".into()),
    };
    let repeat = a
        .trace_repeat
        .as_deref()
        .map(|s| dur("--trace-repeat", s))
        .transpose()?;
    if let Some(f) = a.trace.as_deref() {
        let text = std::fs::read_to_string(f)
            .map_err(|e| format!("--trace {}: cannot read: {e}", f.display()))?;
        link.set_trace_csv(&text, &f.display().to_string(), repeat)
            .map_err(|e| e.to_string())?;
    }
    if let Some(f) = a.mahimahi.as_deref() {
        let text = std::fs::read_to_string(f)
            .map_err(|e| format!("--mahimahi {}: cannot read: {e}", f.display()))?;
        link.set_mahimahi(&text, &f.display().to_string(), Duration::from_millis(100))
            .map_err(|e| e.to_string())?;
    }
    Ok((name, link, text))
}

/// One line describing a link's two directions.
pub fn describe(l: &LinkConfig) -> String {
    let f = l.forward();
    let r = l.reverse();
    let mbps = |b: u64| b as f64 / 1e6;
    format!(
        "forward {:.4} Mb/s, reverse {:.4} Mb/s, {:.1} ms one-way{}{}",
        mbps(f.rate_bps),
        mbps(r.rate_bps),
        f.delay.as_secs_f64() * 1e3,
        if f.error.is_some() || r.error.is_some() {
            ", with errors"
        } else {
            ""
        },
        if l.schedule.steps.is_empty() {
            ""
        } else {
            ", scheduled changes"
        }
    )
}

fn summary_of(
    name: &'static str,
    rate_bps: u64,
    delay: Duration,
    s: &DirStats,
    secs: f64,
) -> DirSummary {
    DirSummary {
        name,
        rate_bps,
        delay_s: delay.as_secs_f64(),
        utilization: if secs > 0.0 {
            (s.busy_ns as f64 * 1e-9 / secs).min(1.0)
        } else {
            0.0
        },
        arrivals: s.arrived,
        delivered: s.delivered,
        drops: s.drops(),
        drops_queue: s.drops_queue,
        drops_red: s.drops_red,
        drops_error: s.drops_error,
        loss: if s.arrived > 0 {
            s.drops() as f64 / s.arrived as f64
        } else {
            0.0
        },
        max_queue_pkts: s.max_queue_pkts,
        send_errors: s.send_errors,
        late_1ms: s.late_1ms,
        max_late_s: s.max_late_ns as f64 * 1e-9,
    }
}

/// Largest `--overhead`: headers beyond the payload cannot exceed an
/// IPv4 datagram's 65 535 bytes (issue 33: 10^9 was accepted).
const MAX_OVERHEAD: u32 = 65_535;

/// Runs `satcc emulate`.
pub fn emulate(a: EmulateArgs) -> ExitCode {
    match emulate_inner(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("satcc emulate: {e}");
            ExitCode::from(2)
        }
    }
}

fn emulate_inner(a: &EmulateArgs) -> Result<(), String> {
    let (name, link, text) = load_link_from(&a.src)?;
    if link.refwa.is_some() {
        // The relay carries datagrams, not TCP: there is nothing for the
        // router to rewrite. The same file works unchanged in the shell.
        eprintln!(
            "satcc emulate: warning: {name}: [refwa] is ignored here (REFWA rewrites TCP ACKs; it runs in `satcc shell`)"
        );
    }
    if a.print_link {
        match text {
            Some(t) if a.src.trace.is_none() && a.src.mahimahi.is_none() => print!("{t}"),
            _ => {
                return Err(
                    "--print-link prints a preset (a --link file is already in that syntax)".into(),
                )
            }
        }
        return Ok(());
    }
    let to = resolve(
        "--to",
        a.to.as_deref()
            .ok_or("--to ADDR is required (the server behind the link)")?,
    )?;
    let listen = resolve("--listen", &a.listen)?;
    if listen == to {
        // The relay would send every datagram to itself.
        return Err(format!(
            "--listen {listen} / --to {to}: the same address; --to is the server behind the link"
        ));
    }
    let interval = dur("--interval", &a.interval)?;
    if interval == Duration::ZERO {
        return Err("--interval: must be greater than zero".into());
    }
    if a.overhead > MAX_OVERHEAD {
        return Err(format!(
            "--overhead {}: at most {MAX_OVERHEAD} bytes (a whole IPv4 datagram)",
            a.overhead
        ));
    }
    let duration = a
        .duration
        .as_deref()
        .map(|s| dur("--duration", s))
        .transpose()?;
    let mut csv = match &a.links_csv {
        Some(p) => {
            let mut f = std::fs::File::create(p)
                .map_err(|e| format!("--links-csv {}: {e}", p.display()))?;
            writeln!(f, "time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down")
                .map_err(|e| format!("--links-csv: {e}"))?;
            Some(f)
        }
        None => None,
    };
    let mut cfg = RelayConfig::new(listen, to, link.clone());
    cfg.seed = a.src.seed;
    cfg.overhead = a.overhead;
    for r in &a.route {
        let (l, t) = r
            .split_once('=')
            .ok_or_else(|| format!("--route '{r}': expected LISTEN=TO"))?;
        cfg.routes
            .push((resolve("--route", l)?, resolve("--route", t)?));
    }
    if !cfg.routes.is_empty() && !link.schedule.steps.is_empty() {
        return Err("--route: not with a schedule or trace (a fixed link only)".into());
    }
    if !cfg.routes.is_empty() && a.pcap.is_some() {
        return Err("--pcap: not with --route (capture one route at a time)".into());
    }
    cfg.pcap = a.pcap.clone();
    // Ctrl-C and SIGTERM end the run like --duration does: the summary is
    // printed and the capture finished.
    let interrupted = satcc_net::signal::stop_on_signals();
    let relay = Relay::start(cfg).map_err(|e| match &a.pcap {
        Some(p) if e.kind() != std::io::ErrorKind::AddrInUse => {
            format!("--listen {listen} / --pcap {}: {e}", p.display())
        }
        _ => format!("--listen {listen}: {e}"),
    })?;
    if !a.json {
        eprintln!(
            "satcc emulate: {name}: {}\n  listening on {}, forwarding to {to}{}",
            describe(&link),
            relay.local_addr(),
            match duration {
                Some(d) => format!(", for {:.1} s", d.as_secs_f64()),
                None => ", until interrupted".into(),
            }
        );
    }
    let clock = relay.clock();
    let mut prev = [DirStats::default(); 2];
    let mut k = 1u64;
    loop {
        let due = clock
            .now()
            .max(satcc_proto::Instant(interval.as_nanos().saturating_mul(k)));
        let due = match duration {
            Some(d) => due.min(satcc_proto::Instant(d.as_nanos())),
            None => due,
        };
        clock.sleep_until(due);
        k += 1;
        let now = clock.now();
        let stats = relay.stats();
        let secs = interval.as_secs_f64();
        for (i, name) in ["forward", "reverse"].iter().enumerate() {
            let (s, p) = (&stats[i], &prev[i]);
            let util = ((s.busy_ns - p.busy_ns) as f64 * 1e-9 / secs).min(1.0);
            if let Some(f) = csv.as_mut() {
                writeln!(
                    f,
                    "{:.3},{name},{},{util:.4},{},{},{},{},0,0,0",
                    now.as_secs_f64(),
                    s.queue_pkts,
                    s.drops() - p.drops(),
                    s.drops_queue - p.drops_queue,
                    s.drops_red - p.drops_red,
                    s.drops_error - p.drops_error
                )
                .map_err(|e| format!("--links-csv: {e}"))?;
            }
            if !a.quiet && !a.json {
                eprintln!(
                    "{:8.1}s {name:7} {:10.3} Mb/s delivered  queue {:5}  drops {:6} (queue {}, red {}, error {})",
                    now.as_secs_f64(),
                    (s.delivered_bytes - p.delivered_bytes) as f64 * 8.0 / secs / 1e6,
                    s.queue_pkts,
                    s.drops() - p.drops(),
                    s.drops_queue - p.drops_queue,
                    s.drops_red - p.drops_red,
                    s.drops_error - p.drops_error
                );
            }
        }
        if let Some(f) = csv.as_mut() {
            let _ = f.flush();
        }
        prev = stats;
        if let Some(e) = relay.error() {
            return Err(e);
        }
        if duration.is_some_and(|d| now.as_nanos() >= d.as_nanos())
            || interrupted.load(std::sync::atomic::Ordering::Relaxed)
        {
            break;
        }
    }
    let secs = clock.now().as_secs_f64();
    let other_clients = relay.other_clients();
    let stats = relay.finish().map_err(|e| e.to_string())?;
    if let (Some(p), false) = (&a.pcap, a.json) {
        eprintln!("wrote {}", p.display());
    }
    let (f, r) = (link.forward(), link.reverse());
    let s = Summary {
        link: name,
        listen: listen.to_string(),
        to: to.to_string(),
        seed: a.src.seed,
        duration_s: secs,
        other_clients,
        links: vec![
            summary_of("forward", f.rate_bps, f.delay, &stats[0], secs),
            summary_of("reverse", r.rate_bps, r.delay, &stats[1], secs),
        ],
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?
        );
    } else {
        for d in &s.links {
            eprintln!(
                "{:7}: {} arrived, {} delivered, {} dropped ({:.3} %: queue {}, red {}, error {}), utilization {:.1} %, max queue {}",
                d.name, d.arrivals, d.delivered, d.drops, d.loss * 100.0, d.drops_queue, d.drops_red, d.drops_error, d.utilization * 100.0, d.max_queue_pkts
            );
        }
        if s.other_clients > 0 {
            eprintln!(
                "{} datagrams from a second client were dropped (one client at a time; another may start after {} s of silence)",
                s.other_clients,
                satcc_net::emu::CLIENT_IDLE.as_secs_f64()
            );
        }
    }
    Ok(())
}
