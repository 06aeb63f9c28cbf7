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
    /// events_per_s, ns_per_packet, events_per_packet, peak_rss_mb.
    #[arg(long)]
    pub json: bool,
    /// Multiply the flow counts and the bottleneck rate by K (cost should
    /// grow about K-fold).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub scale: u32,
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

/// The `--set` overrides of the bench options, in order.
fn overrides(a: &BenchArgs) -> Vec<String> {
    let mut sets = Vec::new();
    if a.scale > 1 {
        let k = a.scale;
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

/// The reference scenario with the bench options applied.
pub fn reference(a: &BenchArgs) -> Result<Scenario, String> {
    Scenario::from_toml_str(REFERENCE, "bench.toml", &overrides(a)).map_err(|e| e.to_string())
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

/// Runs the benchmark.
pub fn bench(a: BenchArgs) -> ExitCode {
    let sc = match reference(&a) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("satcc: {e}");
            return ExitCode::from(2);
        }
    };
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
            return ExitCode::from(2);
        }
    };
    crate::run_with_progress(&mut sim, true, |_| {});
    let out = sim.finish(None);
    let events = out.summary.events;
    let delivered = out.summary.packets.delivered;
    let util = out.summary.links.first().map_or(0.0, |l| l.utilization);

    let tmp = std::env::temp_dir().join(format!("satcc-bench-{}", std::process::id()));
    let file = tmp.join("bench.toml");
    let outdir = tmp.join("out");
    if let Err(e) = std::fs::create_dir_all(&tmp).and_then(|()| std::fs::write(&file, REFERENCE)) {
        eprintln!("satcc: {}: {e}", tmp.display());
        return ExitCode::from(1);
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("satcc: cannot find this program to run it: {e}");
            return ExitCode::from(1);
        }
    };
    let sets = overrides(&a);
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
                return ExitCode::from(1);
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
                return ExitCode::from(1);
            }
        }
        if !a.json {
            eprintln!("  run {}/{runs} done", i + 1);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let files_s = median(&with_files).unwrap_or(f64::NAN);
    let sim_s = median(&sim_only).unwrap_or(f64::NAN);
    let ns2_s = median(&ns2);
    let ratio_files = ns2_s.map(|n| n / files_s);
    let ratio_sim = ns2_s.map(|n| n / sim_s);
    // Per delivered packet, from the simulation-only process: what a
    // packet costs end to end, start-up included.
    let ns_per_packet = sim_s * 1e9 / delivered.max(1) as f64;
    let events_per_packet = events as f64 / delivered.max(1) as f64;
    let events_per_s = events as f64 / sim_s;
    let output_share = (files_s - sim_s) / files_s;
    if a.json {
        let v = serde_json::json!({
            "runs": runs,
            "satcc_wall_s": files_s,
            "satcc_sim_only_wall_s": sim_s,
            "ns2_wall_s": ns2_s,
            "ratio": ratio_files,
            "ratio_sim_only": ratio_sim,
            "output_share": output_share,
            "events": events,
            "packets_delivered": delivered,
            "events_per_s": events_per_s,
            "ns_per_packet": ns_per_packet,
            "events_per_packet": events_per_packet,
            "peak_rss_mb": rss,
            "flows": out.summary.flows.len(),
            "simulated_s": out.summary.duration_s,
            "bottleneck_utilization": util,
            "ns2_note": ns2_note,
            "load_average": load_average(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    println!(
        "satcc, default outputs : {files_s:.3} s (outputs {:.0}% of it)",
        output_share * 100.0
    );
    println!(
        "satcc, simulation only : {sim_s:.3} s, {events} events, {:.2} M events/s, {:.0} ns and {:.2} events per delivered packet",
        events_per_s / 1e6,
        ns_per_packet,
        events_per_packet
    );
    println!(
        "                         peak RSS {} MB, bottleneck utilization {:.1}%",
        rss.map_or("?".into(), |r| format!("{r:.1}")),
        util * 100.0
    );
    match (ns2_s, ns2_note) {
        (Some(n), _) => println!(
            "ns-2                   : {n:.3} s\nratio                  : satcc is {:.1}x faster than ns-2 with default outputs, {:.1}x simulation only",
            ratio_files.unwrap_or(0.0),
            ratio_sim.unwrap_or(0.0)
        ),
        (None, Some(note)) => println!("ns-2                   : {note}"),
        (None, None) => {}
    }
    println!(
        "(whole processes timed from outside, medians of {runs} alternated runs; load average {})",
        load_average().unwrap_or_else(|| "?".into())
    );
    ExitCode::SUCCESS
}

/// The larger of two optional values.
fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The 1-minute load average (Linux), for reading a timing in context.
fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().next().map(str::to_string)
}
