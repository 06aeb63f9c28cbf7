//! `satcc shell`: a command whose traffic crosses the emulated link.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Args;
use satcc_net::emu::LinkConfig;
use satcc_net::shell::{
    peer_addr, Bridge, DirReport, Namespaces, PeerEnd, SideProcess, DEFAULT_MTU, MAX_PEERS,
    SHELL_ADDR,
};
use satcc_proto::{Duration, Instant};
use serde::Serialize;

use crate::emulate::{describe, dur, load_link_from, LinkArgs};

/// Run a command (default: your shell) in a network namespace whose
/// traffic to the other side crosses an emulated satellite link, as
/// mahimahi's mm-link does, without root.
///
/// Two namespaces are made: the shell's side (100.64.0.1) and the peer's
/// side (100.64.0.2), each with one interface, satcc0, MTU 1500, and no
/// segmentation or checksum offloads (every packet on the link is one
/// MTU-sized IP packet). Every IP packet between them (TCP, UDP, ICMP,
/// any protocol) crosses the link: the shell's packets its forward
/// direction (`rate`, `queue`, `error`), the peer's its reverse direction,
/// with the simulator's queue and error-model code, as `satcc emulate`.
/// In both, SATCC_SELF is the side's own address and SATCC_PEER the other
/// side's.
///
/// Nothing outlives it: when the command exits (its exit code is satcc's),
/// or on Ctrl-C or SIGTERM (passed on to the command; it gets 2 s to exit
/// by itself), or if satcc is killed, the peer's processes, every process the command started, the
/// namespaces and the devices are gone. No root: satcc makes a user
/// namespace (where unprivileged user namespaces are allowed; as root
/// too). Linux only.
///
/// Examples:
///   satcc shell --preset geo                       # an interactive shell on a GEO link
///   satcc shell --preset geo --peer 'satcc perf --server' -- \
///       satcc perf --client 100.64.0.2:5201 --protocol tfrc --time 20s
///   satcc shell --preset leo --peer 'python3 -m http.server 8000' -- \
///       sh -c 'curl -o /dev/null -w "%{time_total}\n" http://$SATCC_PEER:8000/'
///   satcc shell --link my-link.toml --interval 1s --summary shell.json -- ./my-test
///   satcc shell --preset geo --peer-delay 40ms,80ms,120ms,160ms --peer 'satcc perf --server' -- \
///       sh -c 'for p in $SATCC_PEERS; do satcc perf --client $p:5201 --protocol tcp --time 20s & done; wait'
///
/// At the end, a summary on stderr: per direction the packets that arrived,
/// were delivered and dropped (by reason), and per flow (protocol,
/// addresses and ports) its packets and bytes. Frames that are not IP
/// (ARP) pass at once, outside the link.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ShellArgs {
    /// Where the link comes from (as `satcc emulate`).
    #[command(flatten)]
    pub src: LinkArgs,
    /// A command for the peer's side, run by `sh -c` (e.g. a server:
    /// 'satcc perf --server'). Its input is /dev/null; it is killed when
    /// the shell's command ends.
    #[arg(long, value_name = "CMD")]
    pub peer: Option<String>,
    /// Several peers on the far side, one per DURATION, each with that
    /// extra one-way delay between the link and it (both directions; the
    /// link itself is shared): e.g. `40ms,80ms,120ms,160ms` for four RTT
    /// groups. Peer k (from 1) is 100.64.0.(k+1); the shell sees them as
    /// SATCC_PEER_1..SATCC_PEER_N, SATCC_PEERS (all, space-separated) and
    /// SATCC_PEER (the first). --peer CMD runs on every peer, with
    /// SATCC_PEER_INDEX set [default: one peer, no extra delay].
    #[arg(long, value_name = "DURATION,...", value_delimiter = ',')]
    pub peer_delay: Vec<String>,
    /// The MTU of both sides (the largest IP packet on the link).
    #[arg(long, default_value_t = DEFAULT_MTU, value_parser = clap::value_parser!(u32).range(576..=9000))]
    pub mtu: u32,
    /// Print a line per direction every DURATION on stderr (delivered
    /// rate, queue, drops) [default: none, so an interactive shell is not
    /// written over].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// Write a row per direction every --interval (1 s if not given) to
    /// FILE in the columns of a simulated run's links.csv (links
    /// `forward` and `reverse`), flushed every interval, as `satcc
    /// emulate --links-csv`.
    #[arg(long, value_name = "FILE")]
    pub links_csv: Option<PathBuf>,
    /// Capture every packet the link delivered, both directions, whole
    /// (raw IP, timestamps from the start) to FILE (pcap; `tshark -r
    /// FILE` reads it). The file appears when the shell ends, never
    /// half-written.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Write the final summary as JSON to FILE (written whole or not at
    /// all).
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// Run REFWA (paper 003) as the link's router: every TCP segment
    /// entering the link is read; each flow's RTT is timed from its SYN to
    /// the client's first ACK, flows are grouped by RTT in steps of
    /// 2 x --refwa-quantum (the paper groups them by hop count), and the
    /// window of ACKs is lowered to their group's share F_k, checksum
    /// fixed. DIR is the direction the data flows in (forward: from the
    /// shell, reverse: from the peer); its rate and queue limit are the
    /// Bw and B of eq. 2. Only connections whose SYN crossed the link are
    /// touched. A link file may say the same in a `[refwa]` table
    /// (`direction = "forward"`, `quantum = "10ms"`); this option wins.
    #[arg(long, value_name = "DIR", value_parser = ["forward", "reverse"])]
    pub refwa: Option<String>,
    /// REFWA's RTT grouping quantum (the paper's ISL delay): flows whose
    /// RTTs round to the same multiple of twice this share a group
    /// [default: the link file's `refwa.quantum`, else 10ms].
    #[arg(long, value_name = "DURATION")]
    pub refwa_quantum: Option<String>,
    /// Print nothing of satcc's own (addresses, summary) on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// The command and its arguments [default: $SHELL, else /bin/sh].
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// One direction in the summary; names as `satcc emulate --json`.
#[derive(Serialize)]
struct DirSummary {
    name: &'static str,
    rate_bps: u64,
    delay_s: f64,
    arrivals: u64,
    arrived_bytes: u64,
    delivered: u64,
    delivered_bytes: u64,
    drops: u64,
    drops_queue: u64,
    drops_red: u64,
    drops_error: u64,
    max_queue_pkts: u64,
    late_1ms: u64,
    max_late_s: f64,
    /// Frames passed outside the link (ARP).
    not_ip: u64,
    /// Frames neither IP nor ARP (VLAN-tagged, LLDP, ...), dropped.
    other_dropped: u64,
    /// Frames over the MTU (should be 0: offloads are off).
    oversize: u64,
    /// Packets of flows past the first 8192 of the direction, counted
    /// together rather than per flow (`flows` lists the first 8192).
    other_flows_arrived: u64,
    /// Frames a peer's `--peer-delay` line dropped for want of room (it
    /// holds 64 MiB).
    delay_dropped: u64,
    /// ACKs entering this direction whose window REFWA lowered (only
    /// with `--refwa`).
    #[serde(skip_serializing_if = "Option::is_none")]
    refwa_acks_rewritten: Option<u64>,
}

#[derive(Serialize)]
struct PeerSummary {
    /// From 1 (SATCC_PEER_1 ...).
    index: usize,
    addr: String,
    /// The extra one-way delay between the link and this peer.
    extra_delay_s: f64,
}

#[derive(Serialize)]
struct FlowSummary {
    /// `forward` (shell to peer) or `reverse`.
    direction: &'static str,
    /// The peer at the flow's far end (from 1), if it is one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    peer: Option<usize>,
    protocol: String,
    src: String,
    sport: u16,
    dst: String,
    dport: u16,
    arrived: u64,
    arrived_bytes: u64,
    delivered: u64,
    delivered_bytes: u64,
    dropped: u64,
}

#[derive(Serialize)]
struct Summary {
    link: String,
    seed: u64,
    mtu: u32,
    shell_addr: String,
    peer_addr: String,
    peers: Vec<PeerSummary>,
    duration_s: f64,
    exit_code: i32,
    links: Vec<DirSummary>,
    flows: Vec<FlowSummary>,
}

/// Runs `satcc shell`.
pub fn shell(a: ShellArgs) -> ExitCode {
    match shell_inner(&a) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("satcc shell: {e}");
            ExitCode::from(2)
        }
    }
}

/// How long the command has, after Ctrl-C or SIGTERM reached satcc, to
/// exit by itself (a program printing its own summary) before it is
/// killed.
const GRACE: Duration = Duration::from_secs(2);

/// The REFWA controller's parameters from `--refwa DIR`: Bw and B from
/// that direction of the link, packets of one Linux MSS with timestamps
/// (MTU − 52: IPv4 20, TCP 20, timestamps option 12).
fn refwa_config(
    a: &ShellArgs,
    link: &LinkConfig,
) -> Result<Option<satcc_proto::refwa::RefwaConfig>, String> {
    use satcc_sim::scenario::QueueSpec;
    // The command line wins over the link file's [refwa] table.
    let Some(dir) = a
        .refwa
        .as_deref()
        .or(link.refwa.map(|r| r.direction.name()))
    else {
        if a.refwa_quantum.is_some() {
            return Err(
                "--refwa-quantum: needs --refwa DIR (or a [refwa] table in the link file)".into(),
            );
        }
        return Ok(None);
    };
    let quantum = match (&a.refwa_quantum, link.refwa.and_then(|r| r.quantum)) {
        (Some(q), _) => dur("--refwa-quantum", q)?,
        (None, Some(q)) => q.0,
        (None, None) => Duration::from_millis(10),
    };
    if quantum == Duration::ZERO {
        return Err("--refwa-quantum: must be greater than zero".into());
    }
    let d = if dir == "forward" {
        link.forward()
    } else {
        link.reverse()
    };
    let mss = a.mtu.saturating_sub(52).max(1);
    let (limit, bytes) = match &d.queue {
        QueueSpec::DropTail { limit, limit_bytes }
        | QueueSpec::Priority {
            limit, limit_bytes, ..
        } => (*limit, limit_bytes.map(|b| b.0)),
        QueueSpec::Red(r) => (Some(r.limit), None),
        #[allow(unreachable_patterns)]
        _ => (None, None),
    };
    let buffer = match (limit, bytes) {
        (Some(n), _) => u64::from(n),
        (None, Some(b)) => b / u64::from(mss),
        (None, None) => {
            return Err(format!(
                "--refwa {dir}: the link's queue has no limit, and REFWA needs the buffer B"
            ))
        }
    };
    Ok(Some(satcc_proto::refwa::RefwaConfig {
        isl_delay: quantum,
        bandwidth_bps: d.rate_bps,
        buffer_pkts: buffer,
        packet_bytes: mss,
        initial_ttl: 64,
        ..Default::default()
    }))
}

fn shell_inner(a: &ShellArgs) -> Result<i32, String> {
    let (name, link, _) = load_link_from(&a.src)?;
    let interval = a
        .interval
        .as_deref()
        .map(|s| dur("--interval", s))
        .transpose()?;
    if interval == Some(Duration::ZERO) {
        return Err("--interval: must be greater than zero".into());
    }
    let mut csv = match &a.links_csv {
        Some(p) => {
            let mut f = std::fs::File::create(p)
                .map_err(|e| format!("--links-csv {}: {e}", p.display()))?;
            writeln!(f, "{LINKS_CSV_HEADER}").map_err(|e| format!("--links-csv: {e}"))?;
            Some(f)
        }
        None => None,
    };
    let refwa = refwa_config(a, &link)?;
    let delays = peer_delays(a)?;
    let outputs = [("--pcap", &a.pcap), ("--summary", &a.summary)];
    for (opt, p) in outputs
        .iter()
        .filter_map(|(o, p)| p.as_ref().map(|p| (o, p)))
    {
        // Checked now, not after a long run.
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(format!(
                "{opt} {}: no directory {}",
                p.display(),
                dir.display()
            ));
        }
    }
    let cmd = if a.cmd.is_empty() {
        vec![std::env::var("SHELL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".into())]
    } else {
        a.cmd.clone()
    };
    // Before the fork: the sides inherit it (it only sets a flag), so a
    // Ctrl-C at the terminal does not kill the processes that hold the
    // sides' namespaces before the command has had its grace period.
    let interrupted = satcc_net::signal::stop_on_signals();
    let mut ns = Namespaces::create_peers(a.mtu, delays.len()).map_err(|e| e.to_string())?;
    let env = |me: std::net::Ipv4Addr, other: std::net::Ipv4Addr| {
        vec![
            ("SATCC_SELF".to_string(), me.to_string()),
            ("SATCC_PEER".to_string(), other.to_string()),
        ]
    };
    let mut shell_env = env(SHELL_ADDR, peer_addr(0));
    for k in 0..delays.len() {
        shell_env.push((format!("SATCC_PEER_{}", k + 1), peer_addr(k).to_string()));
    }
    let all: Vec<String> = (0..delays.len())
        .map(|k| peer_addr(k).to_string())
        .collect();
    shell_env.push(("SATCC_PEERS".into(), all.join(" ")));
    if !a.quiet {
        let refwa_note = match &refwa {
            Some(r) => format!(
                "; REFWA router on the {} data (quantum {} ms)",
                a.refwa
                    .as_deref()
                    .or(link.refwa.map(|r| r.direction.name()))
                    .unwrap_or("?"),
                r.isl_delay.as_secs_f64() * 1e3
            ),
            None => String::new(),
        };
        eprintln!(
            "satcc shell: {name}: {}{refwa_note}; MTU {}, no offloads\n  this shell {SHELL_ADDR} (SATCC_SELF)",
            describe(&link),
            ns.mtu()
        );
        for (k, d) in delays.iter().enumerate() {
            let var = if !a.peer_delay.is_empty() {
                format!("SATCC_PEER_{}", k + 1)
            } else {
                String::new()
            };
            let first = if k == 0 { "SATCC_PEER" } else { "" };
            let vars: Vec<&str> = [var.as_str(), first]
                .into_iter()
                .filter(|v| !v.is_empty())
                .collect();
            let extra = if *d > Duration::ZERO {
                format!(", {:.1} ms more each way", d.as_secs_f64() * 1e3)
            } else {
                String::new()
            };
            eprintln!("  peer {} ({}){extra}", peer_addr(k), vars.join(", "));
        }
    }
    let mut peers: Vec<SideProcess> = Vec::new();
    if let Some(p) = &a.peer {
        for k in 0..delays.len() {
            let mut e = env(peer_addr(k), SHELL_ADDR);
            e.push(("SATCC_PEER_INDEX".into(), (k + 1).to_string()));
            peers.push(
                ns.spawn_on(Some(k), &["/bin/sh".into(), "-c".into(), p.clone()], &e)
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    let mut me = ns
        .spawn(false, &cmd, &shell_env)
        .map_err(|e| e.to_string())?;
    let (shell_end, peer_ends) = ns.take_all_ends().ok_or("the veth ends are gone")?;
    let peer_ends = peer_ends
        .into_iter()
        .zip(&delays)
        .enumerate()
        .map(|(k, (end, d))| PeerEnd {
            end,
            addr: peer_addr(k),
            delay: *d,
        })
        .collect();
    // Threads only from here on: the forks are done.
    let bridge = match Bridge::start_peers(
        shell_end,
        peer_ends,
        &link,
        a.src.seed,
        ns.mtu(),
        a.pcap.as_deref(),
        refwa,
    ) {
        Ok(b) => b,
        Err(e) => {
            // The sides are already running: end them first.
            me.kill();
            return Err(format!("starting the relay: {e}"));
        }
    };
    let clock = bridge.clock();
    // The CSV has rows every second when no --interval asks for lines.
    let step = interval.or(csv.as_ref().map(|_| Duration::from_secs(1)));
    let mut next_report = step.map(|i| Instant(i.as_nanos()));
    let mut prev = bridge.report();
    let mut grace_until: Option<Instant> = None;
    let mut peer_noted = vec![false; peers.len()];
    let code = loop {
        if let Some(c) = me.try_wait() {
            break c;
        }
        let now = clock.now();
        if let Some(e) = bridge.error() {
            me.kill();
            return Err(format!("the relay stopped: {e}"));
        }
        if interrupted.load(Ordering::Relaxed) && grace_until.is_none() {
            grace_until = Some(now + GRACE);
            // A SIGTERM reached satcc alone: pass it on. (A Ctrl-C at the
            // terminal reached the command already.)
            if satcc_net::signal::caught() == Some(libc::SIGTERM) {
                me.terminate();
            }
        }
        if grace_until.is_some_and(|g| now >= g) {
            me.kill();
            break 128 + satcc_net::signal::caught().unwrap_or(libc::SIGINT);
        }
        for (k, p) in peers.iter_mut().enumerate() {
            if peer_noted[k] {
                continue;
            }
            if let Some(c) = p.try_wait() {
                peer_noted[k] = true;
                if !a.quiet {
                    eprintln!(
                        "satcc shell: the command of peer {} exited with code {c}",
                        peer_addr(k)
                    );
                }
            }
        }
        if let (Some(due), Some(i)) = (next_report, step) {
            if now >= due {
                let r = bridge.report();
                if interval.is_some() {
                    report_interval(now, i, &r, &prev);
                }
                if let Some(f) = csv.as_mut() {
                    csv_rows(f, now, i, &r, &prev).map_err(|e| format!("--links-csv: {e}"))?;
                }
                prev = r;
                next_report = Some(due + i);
            }
        }
        clock.sleep_until(now + Duration::from_millis(20));
    };
    for mut p in peers {
        p.kill();
    }
    let secs = clock.now().as_secs_f64();
    let (rep, captured) = bridge.finish();
    let s = summarize(&name, &link, a, &delays, secs, code, &rep);
    if !a.quiet {
        print_summary(&s);
    }
    captured.map_err(|e| format!("--pcap {e}"))?;
    if let (Some(p), false) = (&a.pcap, a.quiet) {
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &a.summary {
        write_summary(p, &s)?;
    }
    Ok(code)
}

/// The peers' extra one-way delays from `--peer-delay` (one peer with
/// none when it is not given).
fn peer_delays(a: &ShellArgs) -> Result<Vec<Duration>, String> {
    if a.peer_delay.is_empty() {
        return Ok(vec![Duration::ZERO]);
    }
    if a.peer_delay.len() > MAX_PEERS {
        return Err(format!(
            "--peer-delay: {} peers, at most {MAX_PEERS}",
            a.peer_delay.len()
        ));
    }
    a.peer_delay
        .iter()
        .map(|s| dur("--peer-delay", s.trim()))
        .collect()
}

/// The columns of a simulated run's links.csv.
const LINKS_CSV_HEADER: &str = "time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down";

fn csv_rows(
    f: &mut std::fs::File,
    now: Instant,
    i: Duration,
    r: &[DirReport; 2],
    p: &[DirReport; 2],
) -> std::io::Result<()> {
    for (k, name) in ["forward", "reverse"].iter().enumerate() {
        let (s, q) = (&r[k].link, &p[k].link);
        let util = (s.busy_ns.saturating_sub(q.busy_ns) as f64 * 1e-9 / i.as_secs_f64()).min(1.0);
        writeln!(
            f,
            "{:.3},{name},{},{util:.4},{},{},{},{},0,0,0",
            now.as_secs_f64(),
            s.queue_pkts,
            s.drops().saturating_sub(q.drops()),
            s.drops_queue.saturating_sub(q.drops_queue),
            s.drops_red.saturating_sub(q.drops_red),
            s.drops_error.saturating_sub(q.drops_error)
        )?;
    }
    f.flush()
}

fn report_interval(now: Instant, i: Duration, r: &[DirReport; 2], p: &[DirReport; 2]) {
    let secs = i.as_secs_f64();
    for (k, name) in ["forward", "reverse"].iter().enumerate() {
        let (s, q) = (&r[k].link, &p[k].link);
        eprintln!(
            "{:8.1}s {name:7} {:10.3} Mb/s delivered  queue {:5}  drops {:6} (queue {}, red {}, error {})",
            now.as_secs_f64(),
            s.delivered_bytes.saturating_sub(q.delivered_bytes) as f64 * 8.0 / secs / 1e6,
            s.queue_pkts,
            s.drops().saturating_sub(q.drops()),
            s.drops_queue.saturating_sub(q.drops_queue),
            s.drops_red.saturating_sub(q.drops_red),
            s.drops_error.saturating_sub(q.drops_error)
        );
    }
}

fn summarize(
    name: &str,
    link: &LinkConfig,
    a: &ShellArgs,
    delays: &[Duration],
    secs: f64,
    code: i32,
    rep: &[DirReport; 2],
) -> Summary {
    let dirs = [link.forward(), link.reverse()];
    let names = ["forward", "reverse"];
    let mut links = Vec::new();
    let mut flows = Vec::new();
    for k in 0..2 {
        let s = &rep[k].link;
        links.push(DirSummary {
            name: names[k],
            rate_bps: dirs[k].rate_bps,
            delay_s: dirs[k].delay.as_secs_f64(),
            arrivals: s.arrived,
            arrived_bytes: s.arrived_bytes,
            delivered: s.delivered,
            delivered_bytes: s.delivered_bytes,
            drops: s.drops(),
            drops_queue: s.drops_queue,
            drops_red: s.drops_red,
            drops_error: s.drops_error,
            max_queue_pkts: s.max_queue_pkts,
            late_1ms: s.late_1ms,
            max_late_s: s.max_late_ns as f64 * 1e-9,
            not_ip: rep[k].not_ip,
            other_dropped: rep[k].other_dropped,
            oversize: rep[k].oversize,
            other_flows_arrived: rep[k].other.arrived,
            delay_dropped: rep[k].delay_dropped,
            refwa_acks_rewritten: (a.refwa.is_some() || link.refwa.is_some())
                .then_some(rep[k].refwa_rewritten),
        });
        let mut fl: Vec<_> = rep[k].flows.iter().collect();
        fl.sort_by_key(|(key, _)| **key);
        for (key, c) in fl {
            // The far end: the destination going forward, the source
            // coming back.
            let far = if k == 0 { key.dst } else { key.src };
            let peer = (0..delays.len()).find(|&p| far == std::net::IpAddr::V4(peer_addr(p)));
            flows.push(FlowSummary {
                direction: names[k],
                peer: peer.map(|p| p + 1),
                protocol: key.proto_name(),
                src: key.src.to_string(),
                sport: key.sport,
                dst: key.dst.to_string(),
                dport: key.dport,
                arrived: c.arrived,
                arrived_bytes: c.arrived_bytes,
                delivered: c.delivered,
                delivered_bytes: c.delivered_bytes,
                dropped: c.dropped,
            });
        }
    }
    Summary {
        link: name.to_string(),
        seed: a.src.seed,
        mtu: a.mtu,
        shell_addr: SHELL_ADDR.to_string(),
        peer_addr: peer_addr(0).to_string(),
        peers: delays
            .iter()
            .enumerate()
            .map(|(k, d)| PeerSummary {
                index: k + 1,
                addr: peer_addr(k).to_string(),
                extra_delay_s: d.as_secs_f64(),
            })
            .collect(),
        duration_s: secs,
        exit_code: code,
        links,
        flows,
    }
}

fn print_summary(s: &Summary) {
    eprintln!(
        "satcc shell: {:.1} s, exit code {}",
        s.duration_s, s.exit_code
    );
    for d in &s.links {
        eprintln!(
            "  {:7}: {} arrived, {} delivered, {} dropped (queue {}, red {}, error {}), {:.3} Mb/s delivered, max queue {}{}",
            d.name,
            d.arrivals,
            d.delivered,
            d.drops,
            d.drops_queue,
            d.drops_red,
            d.drops_error,
            d.delivered_bytes as f64 * 8.0 / s.duration_s.max(1e-9) / 1e6,
            d.max_queue_pkts,
            if d.oversize > 0 {
                format!(", {} frames over the MTU (an offload was left on)", d.oversize)
            } else {
                String::new()
            }
        );
        if d.other_dropped > 0 {
            eprintln!(
                "           {} frames neither IP nor ARP (VLAN-tagged?) dropped: only IP crosses the link",
                d.other_dropped
            );
        }
        if d.other_flows_arrived > 0 {
            eprintln!(
                "           {} packets of flows past the first {} counted together, not listed",
                d.other_flows_arrived,
                satcc_net::shell::MAX_FLOWS
            );
        }
        if d.delay_dropped > 0 {
            eprintln!(
                "           {} frames dropped by a full --peer-delay line (64 MiB)",
                d.delay_dropped
            );
        }
    }
    if !s.flows.is_empty() {
        eprintln!(
            "  flows (forward: from this shell to the peer{}):",
            if s.peers.len() > 1 {
                "s; [k]: peer k"
            } else {
                ""
            }
        );
        for f in &s.flows {
            let end = |a: &str, p: u16| {
                if p == 0 {
                    a.to_string()
                } else {
                    format!("{a}:{p}")
                }
            };
            let peer = match (f.peer, s.peers.len() > 1) {
                (Some(k), true) => format!("[{k}] "),
                _ => String::new(),
            };
            eprintln!(
                "    {peer}{:7} {:6} {:>21} > {:<21} {:7} pkts {:12} B arrived, {:7} delivered, {:5} dropped",
                f.direction,
                f.protocol,
                end(&f.src, f.sport),
                end(&f.dst, f.dport),
                f.arrived,
                f.arrived_bytes,
                f.delivered,
                f.dropped
            );
        }
    }
    if s.links.iter().any(|d| d.late_1ms > 0) {
        let late: u64 = s.links.iter().map(|d| d.late_1ms).sum();
        eprintln!("  warning: {late} packets were delivered over 1 ms late (a loaded machine)");
    }
}

fn write_summary(p: &std::path::Path, s: &Summary) -> Result<(), String> {
    let text = serde_json::to_string_pretty(s).map_err(|e| e.to_string())?;
    let file = satcc_sim::partial::Partial::beside(p);
    let r = (|| {
        let mut f = file.create()?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()
    })();
    match r {
        Ok(()) => file
            .commit()
            .map_err(|e| format!("--summary {}: {e}", p.display())),
        Err(e) => Err(format!("--summary {}: {e}", p.display())),
    }
}
