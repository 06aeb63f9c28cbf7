//! `satcc`: run satellite congestion-control scenarios.

// `println!` and `print!` for the whole crate (a `macro_rules!` defined
// before the modules shadows std's): std's panics with a backtrace when
// standard output is gone (`satcc run --json | head -1` closes the pipe);
// these say why in one line and exit 1, as `satcc sweep` does.
macro_rules! println {
    () => {
        $crate::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*))
    };
}

/// Writes to standard output; if it cannot (a closed pipe, a full disk),
/// one line on standard error, then an unwind that `main` turns into exit
/// status 1.
fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        eprintln!("satcc: cannot write to standard output: {e}");
        // Unwind rather than `process::exit`: destructors still run (a
        // server's transfers keep their resume records, a shell's children
        // and namespaces are taken down, temporaries are removed), and
        // `resume_unwind` calls no panic hook, so nothing more is printed.
        std::panic::resume_unwind(Box::new(StdoutGone));
    }
}

/// What [`write_stdout`] unwinds with.
struct StdoutGone;

fn main() -> ExitCode {
    match std::panic::catch_unwind(satcc_main) {
        Ok(code) => code,
        Err(p) if p.is::<StdoutGone>() => ExitCode::from(1),
        Err(p) => std::panic::resume_unwind(p),
    }
}

mod bench;
mod emulate;
mod ns2cmd;
mod output;
mod perf;
mod runner;
mod saratoga;
#[cfg(target_os = "linux")]
mod shell;
mod sweep;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant as WallClock;

use clap::{Args, Parser, Subcommand};
use satcc_sim::scenario::Scenario;
use satcc_sim::{RunOptions, Sim};

use runner::{check_memory, load_scenario, memory_limit, run_with_progress};

/// Congestion control on satellite links: a deterministic packet-level
/// simulator of TCP Reno/NewReno/SACK, TFRC, DCCP CCID3, TCP-Peach, REFWA
/// and TFRCP over GEO, asymmetric and LEO topologies.
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
    ///   satcc run scenarios/quickstart.toml --pcap uplink   # then: tshark -r out/quickstart/uplink.pcap
    ///
    /// In the tables: jain is Jain's fairness index of the flows' goodputs
    /// (1/n when one flow gets all, 1 when all are equal); F is the mean
    /// non-TCP over the mean TCP goodput (1 = TCP-friendly), E = max(F, 1/F),
    /// FC the largest over the smallest non-TCP goodput (1 = equal); Υ is
    /// the aggregate window REFWA shares among a link's flows (paper 003).
    ///
    /// A run whose estimated memory exceeds --max-memory (default 80% of
    /// the available memory) is refused before it starts, naming the field
    /// to change. When stderr is not a terminal, progress is a line every
    /// 5 s (none with -q or --json).
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
    ///   satcc sweep scenarios/peach-web.toml --vary flows.0.protocol+flows.0.initial_window=peach-sack:1,sack:4
    ///   satcc sweep scenarios/quickstart.toml --vary flows.0.count=1,4 --seeds 10 --store results/
    ///
    /// With --store DIR every run is kept in DIR (one file per run, keyed by
    /// the scenario's content, seed and satcc's version) and runs already
    /// there are not run again: an interrupted sweep resumes. The Python
    /// package reads and writes the same store (docs/python.md).
    ///
    /// jain, F, E and FC are as in `satcc run --help`.
    #[command(verbatim_doc_comment)]
    Sweep(sweep::SweepArgs),
    /// Time the reference scenario (64 bulk flows over a 16 Mb/s RED
    /// bottleneck, 200 s) as whole processes: `satcc run` with its default
    /// outputs, `satcc run --no-files`, and, if `ns` is installed, ns-2 on
    /// the exported script; alternated, medians of --runs.
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
    Emulate(emulate::EmulateArgs),
    Perf(perf::PerfArgs),
    Saratoga(saratoga::SaratogaArgs),
    #[cfg(target_os = "linux")]
    Shell(shell::ShellArgs),
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
    /// Output directory [default: out/<scenario file stem>, with the
    /// --set overrides and --seed appended when given, e.g.
    /// out/dumbbell_flows.0.count=4_seed=7; none with --json alone].
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
    /// No progress on stderr (a bar on a terminal, else a line every few
    /// seconds).
    #[arg(long, short)]
    quiet: bool,
    /// Refuse a run whose estimated memory exceeds SIZE, e.g. `2GB`
    /// [default: 80% of the machine's available memory].
    #[arg(long, value_name = "SIZE")]
    max_memory: Option<String>,
    /// Run the flows for real instead of simulating them: each flow's
    /// sender and receiver on their own loopback UDP sockets, in
    /// wall-clock time (the run takes the scenario's `duration`), through
    /// the scenario's links emulated in process with the simulator's
    /// queue and error-model code. Writes the same summary and series.
    /// Protocols with a UDP wire format (tfrc, ccid3, tfrcp, cbr,
    /// saratoga, stfrc) run as satcc's endpoints; on Linux, TCP flows
    /// run as the kernel's TCP (reno for reno/newreno/sack, cubic, bbr,
    /// or the flow's `linux_cc`) in network namespaces satcc makes
    /// without root, their packets through the same links. Bulk
    /// applications, no snapshots or REFWA; see docs/real.md. The
    /// default output directory is the simulated run's with `-real`
    /// appended (`out/real-geo-real`).
    #[arg(long)]
    real: bool,
}

/// Lets `--time -1` reach the value's own check ("invalid value '-1' for
/// '--time'") instead of clap's "unexpected argument '-1'", which reads as
/// if the option were unknown (issue 33); on every subcommand.
fn negative_numbers(cmd: clap::Command) -> clap::Command {
    cmd.allow_negative_numbers(true)
        .mut_subcommands(negative_numbers)
}

fn satcc_main() -> ExitCode {
    let cli = {
        use clap::{CommandFactory, FromArgMatches};
        let m = negative_numbers(Cli::command()).get_matches();
        Cli::from_arg_matches(&m).unwrap_or_else(|e| e.exit())
    };
    match cli.cmd {
        Cmd::Run(a) => run(a),
        Cmd::Bench(a) => bench::bench(a),
        Cmd::Sweep(a) => sweep::sweep(a),
        Cmd::Ns2(a) => ns2cmd::ns2(a),
        Cmd::Emulate(a) => emulate::emulate(a),
        Cmd::Perf(a) => perf::perf(a),
        Cmd::Saratoga(a) => saratoga::saratoga(a),
        #[cfg(target_os = "linux")]
        Cmd::Shell(a) => shell::shell(a),
    }
}

fn run(a: RunArgs) -> ExitCode {
    let sc = match load_scenario(&a.file, &a.set, a.seed) {
        Ok(sc) => sc,
        Err(code) => return code,
    };
    let limit = match memory_limit(a.max_memory.as_deref()) {
        Ok(l) => l,
        Err(code) => return code,
    };
    // `--json` alone writes no files: its output is the summary on stdout.
    let no_files = a.no_files || (a.json && a.out.is_none());
    if let Err(code) = check_memory(&a.file, &sc, !no_files, 1, &limit) {
        return code;
    }
    if let Some(w) = sc.flows_csv_warning().filter(|_| !no_files && !a.real) {
        eprintln!("satcc: warning: {}: {w}", a.file.display());
    }
    let out_dir = a.out.clone().unwrap_or_else(|| {
        let d = default_out_dir(&a.file, &a.set, a.seed);
        // A real run and the simulated run of the same scenario must
        // not overwrite each other (issue 33): `out/real-geo-real`
        // beside `out/real-geo`.
        if a.real {
            let mut name = d.file_name().unwrap_or_default().to_os_string();
            name.push("-real");
            d.with_file_name(name)
        } else {
            d
        }
    });
    if !no_files || !a.pcap.is_empty() {
        if let Err(e) = std::fs::create_dir_all(&out_dir) {
            eprintln!("satcc: {}: cannot create: {e}", out_dir.display());
            return ExitCode::from(2);
        }
    }
    if a.real {
        return run_real(&a, &sc, &out_dir, no_files);
    }
    // Before any partial file exists: from here on the first Ctrl-C
    // (SIGINT) or SIGTERM does not kill the process: it is noted, and the
    // run stops at its first slice boundary, removes its partial files and
    // exits 128 + the signal, as a killed process would. A second one
    // kills at once.
    satcc_net::signal::catch_interrupts(satcc_net::signal::Repeat::Kill);
    let opts = RunOptions {
        series: !no_files,
        pcap_links: a.pcap.clone(),
        pcap_dir: Some(out_dir.clone()),
        // flows.csv and links.csv are written as the run goes (below).
        series_streamed: true,
        ..RunOptions::default()
    };
    let started = WallClock::now();
    let mut sim = match Sim::new(&sc, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("satcc: {}: {e}", a.file.display());
            return ExitCode::from(2);
        }
    };
    // flows.csv and links.csv are written as the run goes, on a thread of
    // their own; the rest of the files after it.
    let mut csv = match sim.series().filter(|_| !no_files) {
        Some(series) => match output::SeriesWriter::start(&out_dir, series) {
            Ok(w) => {
                // Nothing sampled yet: this gives back the room reserved
                // for the columns that will be released as they are
                // written.
                sim.release_written_series(output::MAX_FLOW_LINES);
                Some(w)
            }
            Err(e) => {
                eprintln!("satcc: {}: {e}", out_dir.display());
                return ExitCode::from(1);
            }
        },
        None => None,
    };
    let complete = run_with_progress(&mut sim, a.quiet || a.json, |sim| {
        if let (Some(w), Some(series)) = (csv.as_mut(), sim.series()) {
            w.send_new(series, false);
            // What was just handed over is written from its copy: the
            // series keeps only what the plot draws (issue 28: 66 MB of
            // columns never read again at `satcc bench --scale 8`).
            if w.all_sent(series) {
                sim.release_written_series(output::MAX_FLOW_LINES);
            }
        }
    });
    if !complete {
        let sig = satcc_net::signal::caught().unwrap_or(libc::SIGINT);
        eprintln!(
            "satcc: interrupted at {:.1} of {:.1} simulated seconds: no files written",
            sim.now().as_secs_f64(),
            sim.end().as_secs_f64()
        );
        // Dropping them removes the partial CSV and pcap files.
        drop(csv);
        drop(sim);
        return ExitCode::from((128 + sig) as u8);
    }
    let wall = started.elapsed().as_secs_f64();
    let out = sim.finish(Some(wall));
    if !no_files {
        if let Err(e) = output::write_files(&out_dir, &out, csv) {
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
        if !no_files {
            println!(
                "\nwrote {}/{{summary.json, flows.csv, links.csv, goodput.svg}}",
                out_dir.display()
            );
        }
        // Only the captures that were written (issue 33: a full disk used
        // to print "wrote" for a file that did not exist, and exit 0).
        for l in a.pcap.iter().filter(|l| {
            !out.capture_errors
                .iter()
                .any(|e| e.starts_with(&format!("{l}: ")))
        }) {
            println!("wrote {}/{l}.pcap", out_dir.display());
        }
    }
    if out.capture_errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `satcc run --real`: the scenario's flows over loopback UDP (TCP flows as
/// kernel TCP in namespaces) in wall-clock
/// time (satcc_net::real), reported as a simulated run is.
fn run_real(a: &RunArgs, sc: &Scenario, out_dir: &std::path::Path, no_files: bool) -> ExitCode {
    if !a.pcap.is_empty() {
        eprintln!(
            "satcc: --pcap: not available with --real (capture the loopback interface with tshark)"
        );
        return ExitCode::from(2);
    }
    let quiet = a.quiet || a.json;
    let total = sc.duration.0.as_secs_f64();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut last_line = 0.0;
    let progress = |t: f64| {
        if quiet {
            return;
        }
        if tty {
            eprint!("\r  real time {t:6.1} / {total:.1} s");
            if t >= total {
                eprintln!();
            }
        } else if t - last_line >= 5.0 || t >= total {
            eprintln!("  real time {t:.1} / {total:.1} s");
            last_line = t;
        }
    };
    let opts = satcc_net::real::RealOptions { series: !no_files };
    let (out, warnings) = match satcc_net::real::run_real(sc, &opts, progress) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("satcc: {}: {e}", a.file.display());
            return ExitCode::from(2);
        }
    };
    for w in &warnings {
        eprintln!("satcc: warning: {w}");
    }
    if !no_files {
        if let Err(e) = output::write_files(out_dir, &out, None) {
            eprintln!("satcc: {}: {e}", out_dir.display());
            return ExitCode::from(1);
        }
    }
    if a.json {
        println!("{}", output::summary_json(&out.summary));
    } else {
        print!("{}", output::real_summary_table(&out.summary));
        if !no_files {
            println!(
                "\nwrote {}/{{summary.json, flows.csv, links.csv, goodput.svg}}",
                out_dir.display()
            );
        }
    }
    ExitCode::SUCCESS
}

/// The default output directory of a run: `out/<file stem>` for the file as
/// written, and one directory per distinct run otherwise, named from the
/// overrides and the seed (`out/dumbbell_flows.0.count=4_seed=7`), so that
/// a run does not overwrite another's results. A name longer than 100
/// characters is cut and given a hash of the whole.
pub(crate) fn default_out_dir(
    file: &std::path::Path,
    set: &[String],
    seed: Option<u64>,
) -> PathBuf {
    let mut parts: Vec<String> = vec![file
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()];
    parts.extend(set.iter().map(|s| s.trim().to_string()));
    if let Some(s) = seed {
        parts.push(format!("seed={s}"));
    }
    // ASCII only, so the name can be cut anywhere; no path separators.
    let mut name: String = parts
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | '-' | '+' | '_') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.len() > 100 {
        // FNV-1a: stable across builds and platforms.
        let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        name.truncate(83);
        name.push_str(&format!("_{h:016x}"));
    }
    PathBuf::from("out").join(name)
}
