//! `satcc bench`: the reference scenario, timed as whole processes from
//! outside, in satcc (as a user runs it, with its default outputs, and
//! simulation only) and in ns-2 on the identical script, alternated run by
//! run so that a change in the machine's load hits all three alike.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant as WallClock;

use clap::Args;
use satcc_sim::scenario::Scenario;
use satcc_sim::{RunOptions, Sim};

/// The reference scenario, shipped in the binary so `satcc bench` works
/// from any directory (the same file is `scenarios/bench.toml`).
const REFERENCE: &str = include_str!("../../../scenarios/bench.toml");

/// Options of `satcc bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Print JSON only: medians of the whole-process times (satcc with
    /// default outputs, satcc simulation only, ns-2), both ratios,
    /// events_per_s, ns_per_packet, events_per_packet, peak_rss_mb. With
    /// a `--scale` list, an array of such objects, one per scale, each
    /// with events_per_s_vs_first.
    #[arg(long)]
    pub json: bool,
    /// Multiply the flow counts and the bottleneck rate by K (cost should
    /// grow about K-fold). A list (`--scale 1,2,4,8`) benchmarks each in
    /// turn and ends with a table of events/s relative to the first: how
    /// flat the cost per event stays as the scenario grows.
    #[arg(long, value_name = "K[,K...]", value_delimiter = ',', default_values_t = [1])]
    pub scale: Vec<u32>,
    /// Override the simulated time (e.g. `20s` for a quick look).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Do not run ns-2 even if it is installed.
    #[arg(long)]
    pub no_ns2: bool,
    /// Timed runs of each program; medians are reported.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: u32,
    /// Extra `--set KEY=VALUE` overrides applied to the reference scenario.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// The `--set` overrides of the bench options at scale `k`, in order.
fn overrides(a: &BenchArgs, k: u32) -> Vec<String> {
    let mut sets = Vec::new();
    if k > 1 {
        sets.push(format!("flows.0.count={}", 32 * k));
        sets.push(format!("flows.1.count={}", 32 * k));
        sets.push(format!("topology.bottleneck.rate={}Mbps", 16 * k));
    }
    if let Some(d) = &a.duration {
        sets.push(format!("duration={d}"));
    }
    sets.extend(a.set.iter().cloned());
    sets
}

/// The reference scenario with the bench options applied, at scale `k`.
pub fn reference(a: &BenchArgs, k: u32) -> Result<Scenario, String> {
    Scenario::from_toml_str(REFERENCE, "bench.toml", &overrides(a, k)).map_err(|e| e.to_string())
}

/// Wall-clock seconds and peak resident set size (MB) of one child
/// process, from spawn to exit.
fn time_child(cmd: &mut Command) -> Result<(f64, Option<f64>), String> {
    let started = WallClock::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let (ok, rss) = wait_with_rusage(child);
    let wall = started.elapsed().as_secs_f64();
    if !ok {
        return Err(format!("{cmd:?} failed"));
    }
    Ok((wall, rss))
}

/// Waits for `child` and returns whether it succeeded and its peak RSS in
/// MB (`wait4`'s resource usage: that process's alone, not the sum of
/// every child so far as `RUSAGE_CHILDREN` would give).
fn wait_with_rusage(mut child: std::process::Child) -> (bool, Option<f64>) {
    // The child's stderr is small (a warning at most): it fits the pipe.
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value; `wait4` writes to two
    // locals that outlive the call and reaps a child this process spawned
    // and has not waited for.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    if r != pid {
        // Not ours to reap (should not happen): fall back to std.
        let ok = child.wait().map(|s| s.success()).unwrap_or(false);
        return (ok, None);
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    // ru_maxrss is in kilobytes on Linux.
    (ok, Some(ru.ru_maxrss as f64 / 1024.0))
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// One satcc child: `satcc run FILE -q --set ...`, with its default
/// outputs written under `out` or, without it, `--no-files`.
fn satcc_cmd(exe: &Path, file: &Path, sets: &[String], out: Option<&Path>) -> Command {
    let mut c = Command::new(exe);
    c.arg("run").arg(file).arg("-q");
    match out {
        Some(dir) => c.arg("--out").arg(dir),
        None => c.arg("--no-files"),
    };
    for s in sets {
        c.arg("--set").arg(s);
    }
    c
}

/// What one scale's benchmark measured.
struct Measured {
    scale: u32,
    runs: u32,
    flows: usize,
    simulated_s: f64,
    /// Median wall seconds: satcc with its default outputs, simulation
    /// only, ns-2 (when it ran).
    files_s: f64,
    sim_s: f64,
    ns2_s: Option<f64>,
    ns2_note: Option<String>,
    events: u64,
    delivered: u64,
    util: f64,
    rss: Option<f64>,
}

impl Measured {
    fn ratio(&self) -> Option<f64> {
        self.ns2_s.map(|n| n / self.files_s)
    }
    fn ratio_sim(&self) -> Option<f64> {
        self.ns2_s.map(|n| n / self.sim_s)
    }
    /// Per delivered packet, from the simulation-only process: what a
    /// packet costs end to end, start-up included.
    fn ns_per_packet(&self) -> f64 {
        self.sim_s * 1e9 / self.delivered.max(1) as f64
    }
    fn events_per_packet(&self) -> f64 {
        self.events as f64 / self.delivered.max(1) as f64
    }
    fn events_per_s(&self) -> f64 {
        self.events as f64 / self.sim_s
    }
    fn output_share(&self) -> f64 {
        (self.files_s - self.sim_s) / self.files_s
    }
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "scale": self.scale,
            "runs": self.runs,
            "satcc_wall_s": self.files_s,
            "satcc_sim_only_wall_s": self.sim_s,
            "ns2_wall_s": self.ns2_s,
            "ratio": self.ratio(),
            "ratio_sim_only": self.ratio_sim(),
            "output_share": self.output_share(),
            "events": self.events,
            "packets_delivered": self.delivered,
            "events_per_s": self.events_per_s(),
            "ns_per_packet": self.ns_per_packet(),
            "events_per_packet": self.events_per_packet(),
            "peak_rss_mb": self.rss,
            "flows": self.flows,
            "simulated_s": self.simulated_s,
            "bottleneck_utilization": self.util,
            "ns2_note": self.ns2_note,
            "load_average": load_average(),
        })
    }
    fn print(&self) {
        println!(
            "satcc, default outputs : {:.3} s (outputs {:.0}% of it)",
            self.files_s,
            self.output_share() * 100.0
        );
        println!(
            "satcc, simulation only : {:.3} s, {} events, {:.2} M events/s, {:.0} ns and {:.2} events per delivered packet",
            self.sim_s,
            self.events,
            self.events_per_s() / 1e6,
            self.ns_per_packet(),
            self.events_per_packet()
        );
        println!(
            "                         peak RSS {} MB, bottleneck utilization {:.1}%",
            self.rss.map_or("?".into(), |r| format!("{r:.1}")),
            self.util * 100.0
        );
        match (self.ns2_s, &self.ns2_note) {
            (Some(n), _) => println!(
                "ns-2                   : {n:.3} s\nratio                  : satcc is {:.1}x faster than ns-2 with default outputs, {:.1}x simulation only",
                self.ratio().unwrap_or(0.0),
                self.ratio_sim().unwrap_or(0.0)
            ),
            (None, Some(note)) => println!("ns-2                   : {note}"),
            (None, None) => {}
        }
        println!(
            "(whole processes timed from outside, medians of {} alternated runs; load average {})",
            self.runs,
            load_average().map_or_else(|| "?".into(), |l| format!("{l:.2}"))
        );
    }
}

/// Runs the benchmark, at each `--scale` in turn.
pub fn bench(a: BenchArgs) -> ExitCode {
    if let Some(k) = a.scale.iter().find(|&&k| k == 0) {
        eprintln!("satcc: --scale: {k}: must be at least 1");
        return ExitCode::from(2);
    }
    let mut all = Vec::new();
    for &k in &a.scale {
        match measure(&a, k) {
            Ok(m) => {
                if !a.json {
                    if a.scale.len() > 1 {
                        println!("== scale {k}: {} flows", m.flows);
                    }
                    m.print();
                }
                all.push(m);
            }
            Err(code) => return code,
        }
    }
    let first = all.first().map_or(f64::NAN, Measured::events_per_s);
    if a.json {
        let v = if let [m] = all.as_slice() {
            m.json()
        } else {
            serde_json::Value::Array(
                all.iter()
                    .map(|m| {
                        let mut v = m.json();
                        v["events_per_s_vs_first"] = (m.events_per_s() / first).into();
                        v
                    })
                    .collect(),
            )
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    if all.len() > 1 {
        println!("\nscale  flows     events  M events/s  vs first  ns/packet  outputs  peak RSS");
        for m in &all {
            println!(
                "{:>5}  {:>5}  {:>9}  {:>10.2}  {:>8.2}  {:>9.0}  {:>6.1}%  {:>5} MB",
                m.scale,
                m.flows,
                m.events,
                m.events_per_s() / 1e6,
                m.events_per_s() / first,
                m.ns_per_packet(),
                m.output_share() * 100.0,
                m.rss.map_or("?".into(), |r| format!("{r:.1}")),
            );
        }
        println!(
            "(vs first: events/s relative to scale {}; simulation only)",
            all[0].scale
        );
    }
    ExitCode::SUCCESS
}

/// Benchmarks the reference scenario at scale `k`.
fn measure(a: &BenchArgs, k: u32) -> Result<Measured, ExitCode> {
    let sc = reference(a, k).map_err(|e| {
        eprintln!("satcc: {e}");
        ExitCode::from(2)
    })?;
    let runs = a.runs.max(1);
    if !a.json {
        let flows: u32 = sc.flows.iter().map(|f| f.count).sum();
        eprintln!(
            "satcc bench: {flows} bulk flows, {:.0} s simulated; {runs} runs of each program, alternated ...",
            sc.duration.0.as_secs_f64()
        );
    }
    // One run in this process first: the event and packet counts (the
    // same in every run: the simulator is deterministic), and a warm-up.
    let mut sim = match Sim::new(&sc, &RunOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("satcc: {e}");
            return Err(ExitCode::from(2));
        }
    };
    // (No interrupt is caught here: `bench` keeps the default Ctrl-C.)
    crate::runner::run_with_progress(&mut sim, true, |_| {});
    let out = sim.finish(None);
    let events = out.summary.events;
    let delivered = out.summary.packets.delivered;
    let util = out.summary.links.first().map_or(0.0, |l| l.utilization);

    let tmp = std::env::temp_dir().join(format!("satcc-bench-{}", std::process::id()));
    let file = tmp.join("bench.toml");
    let outdir = tmp.join("out");
    if let Err(e) = std::fs::create_dir_all(&tmp).and_then(|()| std::fs::write(&file, REFERENCE)) {
        eprintln!("satcc: {}: {e}", tmp.display());
        return Err(ExitCode::from(1));
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("satcc: cannot find this program to run it: {e}");
            return Err(ExitCode::from(1));
        }
    };
    let sets = overrides(a, k);
    let script = if a.no_ns2 {
        Err("skipped (--no-ns2)".to_string())
    } else if !satcc_ns2::ns_available() {
        Err("not installed (apt-get install -y ns2 to compare)".to_string())
    } else {
        satcc_ns2::export(&sc).map_err(|e| e.to_string())
    };
    let (mut with_files, mut sim_only, mut ns2) = (Vec::new(), Vec::new(), Vec::new());
    let mut rss: Option<f64> = None;
    let mut ns2_note = script.as_ref().err().cloned();
    for i in 0..runs {
        // satcc as a user runs it, ns-2, satcc simulation only: A/B/A.
        match time_child(&mut satcc_cmd(&exe, &file, &sets, Some(&outdir))) {
            Ok((w, r)) => {
                with_files.push(w);
                rss = max_opt(rss, r);
            }
            Err(e) => {
                eprintln!("satcc: {e}");
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(ExitCode::from(1));
            }
        }
        if let Ok(s) = &script {
            if ns2_note.is_none() {
                match s.run() {
                    Ok((_, w)) => ns2.push(w),
                    Err(e) => ns2_note = Some(e.to_string()),
                }
            }
        }
        match time_child(&mut satcc_cmd(&exe, &file, &sets, None)) {
            Ok((w, r)) => {
                sim_only.push(w);
                rss = max_opt(rss, r);
            }
            Err(e) => {
                eprintln!("satcc: {e}");
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(ExitCode::from(1));
            }
        }
        if !a.json {
            eprintln!("  run {}/{runs} done", i + 1);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(Measured {
        scale: k,
        runs,
        flows: out.summary.flows.len(),
        simulated_s: out.summary.duration_s,
        files_s: median(&with_files).unwrap_or(f64::NAN),
        sim_s: median(&sim_only).unwrap_or(f64::NAN),
        ns2_s: median(&ns2),
        ns2_note,
        events,
        delivered,
        util,
        rss,
    })
}

/// The larger of two optional values.
fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The 1-minute load average (Linux), for reading a timing in context; a
/// number in `--json`, so a script can compare it without parsing text.
fn load_average() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().next()?.parse().ok()
}
