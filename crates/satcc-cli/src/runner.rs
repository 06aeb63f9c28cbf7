//! What the commands that run scenarios share (`run`, `sweep`, `bench`,
//! `ns2`): loading a scenario with its `--set` overrides, the memory
//! guard, and the loop that advances a simulation with a progress bar.
//! Below `main.rs` and the command modules, so that they all import from
//! here and nothing imports from `main.rs`.

use std::process::ExitCode;
use std::time::Instant as WallClock;

use satcc_sim::scenario::Scenario;
use satcc_sim::Sim;

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
    let sc = Scenario::load(file, &overrides).map_err(|e| {
        eprintln!("satcc: {e}");
        ExitCode::from(2)
    })?;
    for w in &sc.warnings {
        eprintln!("satcc: warning: {}: {w}", file.display());
    }
    Ok(sc)
}

/// The memory a run (or `runs` at once) may take: `--max-memory`, else 80%
/// of MemAvailable in /proc/meminfo (no limit where that cannot be read).
/// Returns the limit in bytes and how it was chosen.
pub(crate) fn memory_limit(opt: Option<&str>) -> Result<Option<(u64, String)>, ExitCode> {
    if let Some(s) = opt {
        return match satcc_sim::scenario::units::parse_bytes(s) {
            Ok(b) => Ok(Some((b, format!("--max-memory {s}")))),
            Err(e) => {
                eprintln!("satcc: --max-memory: {e}");
                Err(ExitCode::from(2))
            }
        };
    }
    let avail_kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    Ok(avail_kb.map(|kb| {
        (
            kb * 1024 / 10 * 8,
            format!(
                "80% of the {} available; --max-memory to change",
                satcc_sim::scenario::limits::fmt_bytes(kb * 1024)
            ),
        )
    }))
}

/// Refuses (exit 2, naming the field and the estimate) a scenario whose
/// estimated memory, `runs` times over, exceeds `limit`.
pub(crate) fn check_memory(
    file: &std::path::Path,
    sc: &Scenario,
    series: bool,
    runs: u64,
    limit: &Option<(u64, String)>,
) -> Result<(), ExitCode> {
    match memory_problem(file, sc, series, runs, limit) {
        None => Ok(()),
        Some(m) => {
            eprintln!("satcc: {m}");
            Err(ExitCode::from(2))
        }
    }
}

/// Why a scenario (`runs` of it at once) will not fit in `limit`, if so.
pub(crate) fn memory_problem(
    file: &std::path::Path,
    sc: &Scenario,
    series: bool,
    runs: u64,
    limit: &Option<(u64, String)>,
) -> Option<String> {
    let (max, how) = limit.as_ref()?;
    let est = sc.memory_estimate(series);
    let total = est.bytes.saturating_mul(runs.max(1));
    if total <= *max {
        return None;
    }
    use satcc_sim::scenario::limits::fmt_bytes;
    let at_once = if runs > 1 {
        format!(" ({runs} runs at once; --jobs for fewer)")
    } else {
        String::new()
    };
    Some(format!(
        "{}: {}: the run needs about {}{at_once}, over the limit of {} ({how}): {}",
        file.display(),
        est.field,
        fmt_bytes(total),
        fmt_bytes(*max),
        est.why
    ))
}

/// Advances the simulation in slices, drawing a progress bar on a terminal
/// once the run has taken more than a second, or, when stderr is not a
/// terminal, writing a line every 5 s (`SATCC_PROGRESS_SECS` to change).
/// `after_slice` is called after each slice (to hand new samples to a
/// writer). Returns false if it stopped early on an interrupt caught by
/// [`satcc_net::signal::catch_interrupts`] (checked between slices:
/// within 1/200 of the run).
pub(crate) fn run_with_progress(
    sim: &mut Sim,
    quiet: bool,
    mut after_slice: impl FnMut(&mut Sim),
) -> bool {
    use std::io::IsTerminal;
    let end = sim.end();
    let slices = 200u64;
    let step = (end.as_nanos() / slices).max(1);
    let started = WallClock::now();
    let terminal = std::io::stderr().is_terminal();
    let show = !quiet && terminal;
    // Not a terminal (a log, CI): a plain line every few seconds.
    let every = std::env::var("SATCC_PROGRESS_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(5.0);
    let mut next_line = every;
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut t = 0u64;
    while t < end.as_nanos() {
        t = (t + step).min(end.as_nanos());
        sim.run_until(satcc_proto::Instant(t));
        after_slice(sim);
        if satcc_net::signal::caught().is_some() {
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            return false;
        }
        if !quiet && !terminal && t < end.as_nanos() {
            let el = started.elapsed().as_secs_f64();
            if el >= next_line {
                let (done, all) = (t as f64 / 1e9, end.as_nanos() as f64 / 1e9);
                eprintln!(
                    "satcc: simulated {done:.1}/{all:.1} s ({:.0}%), {el:.0} s elapsed",
                    100.0 * done / all
                );
                next_line = el + every;
            }
        }
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
    true
}
