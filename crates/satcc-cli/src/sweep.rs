//! `satcc sweep`: one scenario, several values of some fields, several
//! seeds; results side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use satcc_sim::report::metrics::median_siqr;
use satcc_sim::report::Summary;
use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions, Sim, SimError};
use serde::Serialize;

use crate::output::fmt_bps;

/// Options of `satcc sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Scenario file.
    pub file: PathBuf,
    /// A field and the values to try, e.g.
    /// `--vary flows.0.feedback=standard,dynamic`. Repeat for a grid (a
    /// key may be varied once). Keys joined by `+` take the same value
    /// together: `--vary flows.0.count+flows.1.count=1,8,32`; or one value
    /// each, joined by `:` in key order:
    /// `--vary flows.0.protocol+flows.0.initial_window=sack:1,sack:4`.
    #[arg(long, value_name = "KEY=V1,V2,...", required = true)]
    pub vary: Vec<String>,
    /// Run each point with seeds 1..=N and report the mean (and range).
    /// At most 1000000 runs in all.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seeds: u64,
    /// Refuse a sweep whose runs at once are estimated to exceed SIZE of
    /// memory, e.g. `4GB` [default: 80% of the available memory].
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Fixed overrides applied to every run.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print JSON only: one object per point with the per-seed summaries.
    #[arg(long)]
    pub json: bool,
    /// Runs at a time, each on its own thread [default: all cores]. The
    /// output is the same whatever N.
    #[arg(long, short, value_name = "N")]
    pub jobs: Option<usize>,
    /// Keep every run's result in DIR, one file per run keyed by the
    /// scenario's content, seed and satcc's version, and take from there
    /// what is already in it: an interrupted sweep run again computes only
    /// what is missing. The same store as the Python package's
    /// `satcc.sweep(..., store=DIR)` (docs/python.md).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

#[derive(Serialize)]
struct Point {
    vary: Vec<(String, String)>,
    runs: Vec<Summary>,
}

/// Most runs a sweep makes (points times seeds).
pub const MAX_RUNS: u64 = 1_000_000;

fn grid(vary: &[String]) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    let mut seen: Vec<String> = Vec::new();
    let mut size: u64 = 1;
    for v in vary {
        let (k, vals) = v
            .split_once('=')
            .ok_or_else(|| format!("--vary {v}: expected KEY=V1,V2,..."))?;
        for key in k.split('+').map(str::trim) {
            if seen.iter().any(|s| s == key) {
                return Err(format!(
                    "--vary {v}: {key} is already varied (vary a key once; list all its values there)"
                ));
            }
            seen.push(key.to_string());
        }
        let n = vals.split(',').filter(|s| !s.trim().is_empty()).count() as u64;
        size = size.saturating_mul(n.max(1));
        if size > MAX_RUNS {
            return Err(format!(
                "--vary {v}: the grid has more than {MAX_RUNS} points"
            ));
        }
        let vals: Vec<&str> = vals
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if vals.is_empty() {
            return Err(format!("--vary {v}: no values"));
        }
        points = points
            .into_iter()
            .flat_map(|p| {
                vals.iter().map(move |val| {
                    let mut q = p.clone();
                    q.push((k.trim().to_string(), val.to_string()));
                    q
                })
            })
            .collect();
    }
    Ok(points)
}

fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        f64::NAN
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// One (point, seed) run, loaded and validated before any runs.
struct Job {
    point: usize,
    seed: u64,
    sc: Scenario,
    /// The scenario's TOML tree with every override: the store's key.
    tree: toml::Value,
    /// The varied keys and their values, as the store records them.
    params: Vec<(String, toml::Value)>,
}

/// The runs a sweep makes: every point with seeds `1..=seeds`, in output
/// order, each scenario loaded and checked; Err is the message of the first
/// that fails.
fn jobs(
    a: &SweepArgs,
    points: &[Vec<(String, String)>],
    seeds: u64,
    too_big: impl Fn(&Scenario) -> Option<String>,
) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    for (pi, p) in points.iter().enumerate() {
        for seed in 1..=seeds {
            let mut sets = a.set.clone();
            let mut params = Vec::new();
            for (keys, v) in p {
                let keys: Vec<&str> = keys.split('+').map(str::trim).collect();
                let vals: Vec<&str> = v.split(':').collect();
                if vals.len() > 1 && vals.len() != keys.len() {
                    return Err(format!(
                        "--vary {}={v}: {} values for {} keys",
                        keys.join("+"),
                        vals.len(),
                        keys.len()
                    ));
                }
                for (i, k) in keys.iter().enumerate() {
                    let val = if vals.len() > 1 { vals[i] } else { v.as_str() };
                    sets.push(format!("{k}={val}"));
                    params.push((
                        (*k).to_string(),
                        satcc_sim::scenario::parse_override_value(val.trim()),
                    ));
                }
            }
            sets.push(format!("seed={seed}"));
            let file = a.file.display().to_string();
            let (tree, sc) = Scenario::load_tree(&a.file, &sets)
                .and_then(|t| Ok((t.clone(), Scenario::from_tree(t, &file)?)))
                .map_err(|mut e| {
                    // An override that cannot be applied: say which option
                    // it came from.
                    if e.file == "--set" && Scenario::load(&a.file, &a.set).is_ok() {
                        e.file = "--vary".into();
                    }
                    e.to_string()
                })?;
            // Before building it: a run that cannot fit in memory, with
            // as many at once as there are workers.
            if let Some(m) = too_big(&sc) {
                return Err(m);
            }
            // What only building the network finds (e.g. an unknown link
            // in `record.links`), once per point: the seed changes draws,
            // never what the build checks.
            if seed == 1 {
                if let Err(e) = Sim::new(&sc, &RunOptions::default()) {
                    return Err(format!("{}: {e}", a.file.display()));
                }
            }
            jobs.push(Job {
                point: pi,
                seed,
                sc,
                tree,
                params,
            });
        }
    }
    Ok(jobs)
}

/// Runs the sweep.
pub fn sweep(a: SweepArgs) -> ExitCode {
    let points = match grid(&a.vary) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("satcc: {e}");
            return ExitCode::from(2);
        }
    };
    // Each point runs seeds 1..=N; a seed from --vary or --set would be
    // overwritten without a word.
    let seed_key = |k: &str| k.trim() == "seed";
    if a.vary.iter().any(|v| {
        v.split_once('=')
            .is_some_and(|(k, _)| k.split('+').any(seed_key))
    }) || a
        .set
        .iter()
        .any(|s| s.split_once('=').is_some_and(|(k, _)| seed_key(k)))
    {
        eprintln!(
            "satcc: sweep: seed cannot be set or varied; --seeds N runs seeds 1..N at every point"
        );
        return ExitCode::from(2);
    }
    let workers = match a.jobs {
        Some(0) => {
            eprintln!("satcc: sweep: --jobs 0: need at least one worker");
            return ExitCode::from(2);
        }
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if a.seeds == 0 {
        eprintln!("satcc: sweep: --seeds 0: need at least one seed (--seeds N runs seeds 1..N)");
        return ExitCode::from(2);
    }
    let seeds = a.seeds;
    let runs = (points.len() as u64).saturating_mul(seeds);
    if runs > MAX_RUNS {
        eprintln!(
            "satcc: sweep: --seeds {seeds}: {} point(s) x {seeds} seeds = {runs} runs, over the limit of {MAX_RUNS}",
            points.len()
        );
        return ExitCode::from(2);
    }
    let limit = match crate::runner::memory_limit(a.max_memory.as_deref()) {
        Ok(l) => l,
        Err(code) => return code,
    };
    // Every scenario is built and checked before the first run, so a typo
    // in the last value fails at once rather than after hours of runs.
    let at_once = (workers as u64).min(runs);
    let jobs = match jobs(&a, &points, seeds, |sc| {
        crate::runner::memory_problem(&a.file, sc, false, at_once, &limit)
    }) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("satcc: {e}");
            return ExitCode::from(2);
        }
    };
    let mut warned: Vec<&String> = Vec::new();
    for w in jobs.iter().flat_map(|j| &j.sc.warnings) {
        if !warned.contains(&w) {
            eprintln!("satcc: warning: {}: {w}", a.file.display());
            warned.push(w);
        }
    }
    let runs = match run_all(&a, &points, &jobs, workers) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("satcc: {}: {e}", a.file.display());
            return ExitCode::from(2);
        }
    };
    // Runs are in job order: point by point, seeds ascending.
    let mut results: Vec<Point> = points
        .iter()
        .map(|p| Point {
            vary: p.clone(),
            runs: Vec::new(),
        })
        .collect();
    for (job, summary) in jobs.iter().zip(runs) {
        results[job.point].runs.push(summary);
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&results).unwrap_or_default()
        );
    } else {
        print!("{}", table(&results, seeds));
    }
    ExitCode::SUCCESS
}

/// Runs every job on up to `workers` threads; the summaries come back in
/// job order whatever order the runs finish in. On failure, the error of
/// the first failing job (in job order): every job before it was already
/// claimed when it failed and still finishes, later ones do not start.
fn run_all(
    a: &SweepArgs,
    points: &[Vec<(String, String)>],
    jobs: &[Job],
    workers: usize,
) -> Result<Vec<Summary>, SimError> {
    use std::io::IsTerminal;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, OnceLock};

    let total = jobs.len();
    let label = |j: &Job| {
        let l: Vec<String> = points[j.point]
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{} seed {}", l.join(" "), j.seed)
    };
    let bar = (!a.json && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(total as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} runs {pos}/{len} [{bar:40}] {percent}% elapsed {elapsed} eta {eta} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(250));
        b
    });
    let next = AtomicUsize::new(0);
    let computed = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let done = Mutex::new(0usize);
    let slots: Vec<OnceLock<Result<Summary, SimError>>> =
        jobs.iter().map(|_| OnceLock::new()).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.min(total) {
            s.spawn(|| loop {
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else {
                    break;
                };
                let r = run_one(a.store.as_deref(), job, &computed);
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                let _ = slots[i].set(r);
                if let Some(b) = &bar {
                    b.inc(1);
                    b.set_message(label(job));
                } else if !a.json {
                    // Under the lock, so k counts up on stderr.
                    let mut k = done.lock().unwrap_or_else(|e| e.into_inner());
                    *k += 1;
                    eprintln!("[{k}/{total}] {}", label(job));
                }
            });
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(dir) = &a.store {
        let n = computed.load(Ordering::Relaxed);
        eprintln!(
            "satcc: store {}: {n} run(s) computed, {} taken from the store",
            dir.display(),
            total - n
        );
    }
    let mut out = Vec::with_capacity(total);
    for slot in slots {
        match slot.into_inner() {
            Some(Ok(summary)) => out.push(summary),
            Some(Err(e)) => return Err(e),
            // Not run: a job before it failed, and comes first.
            None => unreachable!("a job was skipped without an earlier failure"),
        }
    }
    Ok(out)
}

/// One job's summary: from the store if it holds the run, else simulated
/// (and then stored, counted in `computed`).
fn run_one(
    store: Option<&std::path::Path>,
    job: &Job,
    computed: &std::sync::atomic::AtomicUsize,
) -> Result<Summary, SimError> {
    let key = store.map(|_| satcc_sim::store::key(&job.tree, job.seed));
    if let (Some(dir), Some(key)) = (store, &key) {
        // A record that does not read back as a summary counts as missing.
        if let Some(s) =
            satcc_sim::store::get(dir, key).and_then(|j| serde_json::from_value::<Summary>(j).ok())
        {
            return Ok(s);
        }
    }
    let summary = run(&job.sc, &RunOptions::default())?.summary;
    computed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let (Some(dir), Some(key)) = (store, &key) {
        let rec = satcc_sim::store::record(key, &job.tree, job.seed, &job.params, &summary);
        satcc_sim::store::put(dir, &rec).map_err(|e| SimError {
            field: "--store".into(),
            message: format!("{}: cannot write: {e}", dir.display()),
        })?;
    }
    Ok(summary)
}

fn table(results: &[Point], seeds: u64) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n{} point(s), {} seed(s) each; means over seeds, [min..max] where seeds > 1\n",
        results.len(),
        seeds
    );
    let mut legend_f = false;
    for p in results {
        let label: Vec<String> = p.vary.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "== {}", label.join("  "));
        let Some(first) = p.runs.first() else {
            continue;
        };
        for c in &first.classes {
            let g: Vec<f64> = p
                .runs
                .iter()
                .filter_map(|r| r.classes.iter().find(|x| x.protocol == c.protocol))
                .map(|x| x.goodput_bps)
                .collect();
            let j: Vec<f64> = p
                .runs
                .iter()
                .filter_map(|r| r.classes.iter().find(|x| x.protocol == c.protocol))
                .map(|x| x.jain)
                .collect();
            let range = if g.len() > 1 {
                let lo = g.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = g.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                format!(" [{}..{}]", fmt_bps(lo), fmt_bps(hi))
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "   {:<10} {:>3} flows  goodput {:>12}{range}  jain {:.3}",
                c.protocol,
                c.flows,
                fmt_bps(mean(&g)),
                mean(&j)
            );
        }
        let fb: Vec<f64> = p
            .runs
            .iter()
            .flat_map(|r| r.flows.iter().filter_map(|f| f.feedback_packets))
            .map(|n| n as f64)
            .collect();
        if !fb.is_empty() {
            let dur = first.duration_s.max(1e-9);
            let pe: Vec<f64> = p
                .runs
                .iter()
                .flat_map(|r| r.flows.iter().filter_map(|f| f.loss_event_rate))
                .collect();
            let ss: Vec<f64> = p
                .runs
                .iter()
                .flat_map(|r| r.flows.iter().filter_map(|f| f.slow_start_exit_s))
                .collect();
            let _ = writeln!(
                o,
                "   feedback {:.2} pkts/s per flow   loss event rate p {:.5}   slow start left at {}",
                mean(&fb) / dur,
                mean(&pe),
                if ss.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.1} s", mean(&ss))
                }
            );
        }
        // TCP-Peach: dummy segments per data segment, per run.
        let ov: Vec<f64> = p
            .runs
            .iter()
            .filter_map(|r| {
                let (d, n) = r.flows.iter().fold((0, 0), |(d, n), f| match &f.dummy {
                    Some(x) => (d + x.packets_sent, n + f.packets_sent),
                    None => (d, n),
                });
                (n > 0).then(|| d as f64 / n as f64)
            })
            .collect();
        if !ov.is_empty() {
            let _ = writeln!(o, "   dummy overhead {:.1}%", mean(&ov) * 100.0);
        }
        // Finite files: mean transfer time over every completed file.
        let (nf, tf) = p
            .runs
            .iter()
            .flat_map(|r| r.flows.iter())
            .filter_map(|f| Some((f.files_completed, f.mean_file_time_s?)))
            .fold((0u64, 0.0), |(n, t), (k, m)| (n + k, t + m * k as f64));
        if nf > 0 {
            let _ = writeln!(
                o,
                "   files {} completed, mean transfer time {:.3} s",
                nf,
                tf / nf as f64
            );
        }
        let nt: Vec<f64> = p
            .runs
            .iter()
            .filter_map(|r| r.normalized_tcp_throughput)
            .collect();
        if !nt.is_empty() {
            let f: Vec<f64> = p
                .runs
                .iter()
                .filter_map(|r| r.friendliness.map(|x| x.f))
                .collect();
            let fc: Vec<f64> = p
                .runs
                .iter()
                .filter_map(|r| r.friendliness.and_then(|x| x.fc))
                .collect();
            let spread = |x: &[f64]| match median_siqr(x) {
                Some((m, q)) if x.len() > 1 => format!(" (median {m:.3}, SIQR {q:.3})"),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "   normalized TCP throughput {:.3}   F {:.3}{}   FC {:.2}{}",
                mean(&nt),
                mean(&f),
                spread(&f),
                mean(&fc),
                spread(&fc)
            );
            legend_f = true;
        }
        for l in &first.links {
            let u: Vec<f64> = p
                .runs
                .iter()
                .filter_map(|r| r.links.iter().find(|x| x.name == l.name))
                .map(|x| x.utilization)
                .collect();
            let loss: Vec<f64> = p
                .runs
                .iter()
                .filter_map(|r| r.links.iter().find(|x| x.name == l.name))
                .map(|x| x.loss)
                .collect();
            if mean(&u) > 0.01 {
                let _ = writeln!(
                    o,
                    "   link {:<14} util {:>5.1}%  loss {:.3}%",
                    l.name,
                    mean(&u) * 100.0,
                    mean(&loss) * 100.0
                );
            }
        }
    }
    let _ = writeln!(o, "\n{}", crate::output::JAIN_LEGEND);
    if legend_f {
        let _ = writeln!(o, "{}", crate::output::FRIENDLINESS_LEGEND);
    }
    o
}
