//! `satcc`: run satellite congestion-control scenarios.

mod bench;
mod ns2cmd;
mod output;
mod sweep;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant as WallClock;

use clap::{Args, Parser, Subcommand};
use satcc_sim::scenario::Scenario;
use satcc_sim::{RunOptions, Sim};

/// Congestion control on satellite links: a deterministic packet-level
/// simulator of TCP Reno/NewReno/SACK (and, as they land, TFRC, CCID3,
/// TCP-Peach, REFWA, TFRCP) over GEO, asymmetric and LEO topologies.
#[derive(Parser, Debug)]
#[command(name = "satcc", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a scenario file and report goodput, fairness and link statistics.
    ///
    /// Writes DIR/summary.json, DIR/flows.csv, DIR/links.csv and
    /// DIR/goodput.svg (goodput, cwnd and queue over time).
    ///
    /// Examples:
    ///   satcc run scenarios/quickstart.toml
    ///   satcc run scenarios/dumbbell.toml --set topology.bottleneck.rate=16Mbps --seed 7
    ///   satcc run scenarios/quickstart.toml --json | jq '.flows[].goodput_bps'
    ///   satcc run scenarios/quickstart.toml --pcap bottleneck   # then: tshark -r out/quickstart/bottleneck.pcap
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// Run one scenario over several values of some fields (and seeds) and
    /// print the results side by side.
    ///
    /// Every run is checked before the first starts; runs then go on all
    /// cores (`--jobs N` for fewer), with the same output whatever N.
    ///
    /// Examples:
    ///   satcc sweep scenarios/ccid3-ipstar.toml --vary flows.0.feedback=standard,dynamic --seeds 5
    ///   satcc sweep scenarios/dumbbell.toml --vary topology.bottleneck.rate=2Mbps,4Mbps,8Mbps --jobs 2
    #[command(verbatim_doc_comment)]
    Sweep(sweep::SweepArgs),
    /// Time the reference scenario (64 bulk flows over a 16 Mb/s RED
    /// bottleneck, 200 s) in satcc and, if `ns` is installed, in ns-2.
    Bench(bench::BenchArgs),
    /// Run a scenario in ns-2 2.35 (if installed) on the same topology,
    /// flows and seed, and print its per-flow goodput, link statistics and
    /// F/E/FC: the cross-check of satcc's baselines, and of TFRCP through
    /// an independent OTcl implementation carried in the script.
    ///
    /// Examples:
    ///   satcc ns2 scenarios/dumbbell.toml
    ///   satcc ns2 scenarios/tfrcp-c1.toml --set flows.1.m=5s --json
    ///   satcc ns2 scenarios/quickstart.toml --tcl > quickstart.tcl   # the script only
    #[command(verbatim_doc_comment)]
    Ns2(ns2cmd::Ns2Args),
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Scenario file (TOML; see docs/scenario.md).
    file: PathBuf,
    /// Override a field, e.g. `--set duration=30s --set flows.0.count=4`.
    /// Repeatable. Values parse as TOML, else as a string (`16Mbps`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run seed (overrides the file's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory [default: out/<scenario file stem>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the summary JSON on stdout and nothing else.
    #[arg(long)]
    json: bool,
    /// Capture this link to DIR/LINK.pcap (repeatable), e.g. `bottleneck`.
    #[arg(long, value_name = "LINK")]
    pcap: Vec<String>,
    /// Write no files (summary only).
    #[arg(long)]
    no_files: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run(a) => run(a),
        Cmd::Bench(a) => bench::bench(a),
        Cmd::Sweep(a) => sweep::sweep(a),
        Cmd::Ns2(a) => ns2cmd::ns2(a),
    }
}

/// Loads a scenario with `--set` overrides and an optional `--seed`; a
/// malformed one is reported on one line and gives exit code 2.
pub(crate) fn load_scenario(
    file: &std::path::Path,
    set: &[String],
    seed: Option<u64>,
) -> Result<Scenario, ExitCode> {
    let mut overrides = set.to_vec();
    if let Some(s) = seed {
        overrides.push(format!("seed={s}"));
    }
    Scenario::load(file, &overrides).map_err(|e| {
        eprintln!("satcc: {e}");
        ExitCode::from(2)
    })
}

fn run(a: RunArgs) -> ExitCode {
    let sc = match load_scenario(&a.file, &a.set, a.seed) {
        Ok(sc) => sc,
        Err(code) => return code,
    };
    let out_dir = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(a.file.file_stem().unwrap_or_default()));
    if !a.no_files || !a.pcap.is_empty() {
        if let Err(e) = std::fs::create_dir_all(&out_dir) {
            eprintln!("satcc: {}: cannot create: {e}", out_dir.display());
            return ExitCode::from(2);
        }
    }
    let opts = RunOptions {
        series: !a.no_files,
        pcap_links: a.pcap.clone(),
        pcap_dir: Some(out_dir.clone()),
    };
    let started = WallClock::now();
    let mut sim = match Sim::new(&sc, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("satcc: {}: {e}", a.file.display());
            return ExitCode::from(2);
        }
    };
    run_with_progress(&mut sim, a.quiet || a.json);
    let wall = started.elapsed().as_secs_f64();
    let out = sim.finish(Some(wall));
    if !a.no_files {
        if let Err(e) = output::write_files(&out_dir, &out) {
            eprintln!("satcc: {}: {e}", out_dir.display());
            return ExitCode::from(1);
        }
    }
    for e in &out.capture_errors {
        eprintln!("satcc: pcap {e}");
    }
    if a.json {
        println!("{}", output::summary_json(&out.summary));
    } else {
        print!("{}", output::summary_table(&out.summary));
        if !a.no_files {
            println!(
                "\nwrote {}/{{summary.json, flows.csv, links.csv, goodput.svg}}",
                out_dir.display()
            );
        }
        for l in &a.pcap {
            println!("wrote {}/{l}.pcap", out_dir.display());
        }
    }
    ExitCode::SUCCESS
}

/// Advances the simulation in slices, drawing a progress bar on a terminal
/// once the run has taken more than a second.
pub(crate) fn run_with_progress(sim: &mut Sim, quiet: bool) {
    use std::io::IsTerminal;
    let end = sim.end();
    let slices = 200u64;
    let step = (end.as_nanos() / slices).max(1);
    let started = WallClock::now();
    let show = !quiet && std::io::stderr().is_terminal();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut t = 0u64;
    while t < end.as_nanos() {
        t = (t + step).min(end.as_nanos());
        sim.run_until(satcc_proto::Instant(t));
        if show && bar.is_none() && started.elapsed().as_secs_f64() > 1.0 {
            let b = indicatif::ProgressBar::new(end.as_nanos() / 1_000_000);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} simulated {pos}/{len} ms [{bar:40}] {percent}% eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(t / 1_000_000);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// Times ns-2 on the scenario; Err says why it could not.
pub(crate) fn ns2_bench(sc: &Scenario) -> Option<Result<f64, String>> {
    if !satcc_ns2::ns_available() {
        return Some(Err(
            "not installed (apt-get install -y ns2 to compare)".into()
        ));
    }
    Some(
        satcc_ns2::run_ns2(sc)
            .map(|(_, wall)| wall)
            .map_err(|e| e.to_string()),
    )
}
