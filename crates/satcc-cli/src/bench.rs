//! `satcc bench`: the reference scenario, timed in satcc and (when `ns` is
//! installed) in ns-2 on the identical script, one after the other.

use std::process::ExitCode;
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
    /// Print JSON only: satcc_wall_s, ns2_wall_s, ratio, events_per_s,
    /// peak_rss_mb.
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
    /// Extra `--set KEY=VALUE` overrides applied to the reference scenario.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Peak resident set size of this process, MB (Linux; None elsewhere).
fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The reference scenario with the bench options applied.
pub fn reference(a: &BenchArgs) -> Result<Scenario, String> {
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
    Scenario::from_toml_str(REFERENCE, "bench.toml", &sets).map_err(|e| e.to_string())
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
    if !a.json {
        let flows: u32 = sc.flows.iter().map(|f| f.count).sum();
        eprintln!(
            "satcc bench: {flows} bulk flows, {:.0} s simulated; running satcc ...",
            sc.duration.0.as_secs_f64()
        );
    }
    let started = WallClock::now();
    let mut sim = match Sim::new(&sc, &RunOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("satcc: {e}");
            return ExitCode::from(2);
        }
    };
    crate::run_with_progress(&mut sim, a.json);
    let out = sim.finish(None);
    let satcc_wall = started.elapsed().as_secs_f64();
    let rss = peak_rss_mb();
    let events = out.summary.events;
    let ns2 = if a.no_ns2 {
        None
    } else {
        if !a.json {
            eprintln!("running ns-2 on the same scenario ...");
        }
        crate::ns2_bench(&sc)
    };
    let (ns2_wall, ns2_note) = match &ns2 {
        Some(Ok(w)) => (Some(*w), None),
        Some(Err(e)) => (None, Some(e.clone())),
        None => (None, Some("skipped (--no-ns2)".to_string())),
    };
    let ratio = ns2_wall.map(|n| n / satcc_wall.max(1e-9));
    let util = out.summary.links.first().map_or(0.0, |l| l.utilization);
    if a.json {
        let v = serde_json::json!({
            "satcc_wall_s": satcc_wall,
            "ns2_wall_s": ns2_wall,
            "ratio": ratio,
            "events": events,
            "events_per_s": events as f64 / satcc_wall.max(1e-9),
            "peak_rss_mb": rss,
            "flows": out.summary.flows.len(),
            "simulated_s": out.summary.duration_s,
            "bottleneck_utilization": util,
            "ns2_note": ns2_note,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!(
            "satcc : {satcc_wall:.3} s wall, {events} events, {:.2} M events/s, peak RSS {} MB, bottleneck utilization {:.1}%",
            events as f64 / satcc_wall.max(1e-9) / 1e6,
            rss.map_or("?".into(), |r| format!("{r:.0}")),
            util * 100.0
        );
        match (ns2_wall, ns2_note) {
            (Some(n), _) => println!(
                "ns-2  : {n:.3} s wall\nratio : satcc is {:.1}x faster than ns-2",
                ratio.unwrap_or(0.0)
            ),
            (None, Some(note)) => println!("ns-2  : {note}"),
            (None, None) => {}
        }
    }
    ExitCode::SUCCESS
}
