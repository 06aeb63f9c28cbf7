//! `satcc sweep`: one scenario, several values of some fields, several
//! seeds; results side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use satcc_sim::report::metrics::median_siqr;
use satcc_sim::report::Summary;
use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions, Sim, SimError};

use crate::output::{fmt_bps, fmt_jain};

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

/// One point of the grid, loaded and checked before any run.
struct PointSpec {
    /// The scenario's TOML tree with every override (and seed 1): with a
    /// run's seed put in, the store's key.
    tree: toml::Value,
    /// The varied keys and their values, as the store records them.
    params: Vec<(String, toml::Value)>,
}

/// Every point of the grid loaded and checked (with seed 1: a seed
/// changes draws, never what loading or building checks); Err is the
/// message of the first that fails. One scenario per point, not per run:
/// a sweep of a million seeds starts at once and holds a point's tree, not
/// a million scenarios (issue 33).
fn checked_points(
    a: &SweepArgs,
    points: &[Vec<(String, String)>],
    too_big: impl Fn(&Scenario) -> Option<String>,
) -> Result<(Vec<PointSpec>, Vec<String>), String> {
    let mut specs = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    for p in points {
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
        sets.push("seed=1".into());
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
        // Before building it: a run that cannot fit in memory, with as
        // many at once as there are workers.
        if let Some(m) = too_big(&sc) {
            return Err(m);
        }
        // What only building the network finds (e.g. an unknown link in
        // `record.links`).
        if let Err(e) = Sim::new(&sc, &RunOptions::default()) {
            return Err(format!("{}: {e}", a.file.display()));
        }
        for w in sc.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        specs.push(PointSpec { tree, params });
    }
    Ok((specs, warnings))
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
    // A store that cannot be written fails before any run, not after the
    // first result (issue 33: `--store /proc/x` used to count runs "taken
    // from the store" before failing).
    if let Some(dir) = &a.store {
        if let Err(e) = check_writable(dir) {
            eprintln!("satcc: --store {}: cannot write: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    let limit = match crate::runner::memory_limit(a.max_memory.as_deref()) {
        Ok(l) => l,
        Err(code) => return code,
    };
    // Every point is built and checked before the first run, so a typo in
    // the last value fails at once rather than after hours of runs.
    let at_once = (workers as u64).min(runs);
    let (specs, warnings) = match checked_points(&a, &points, |sc| {
        crate::runner::memory_problem(&a.file, sc, false, at_once, &limit)
    }) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("satcc: {e}");
            return ExitCode::from(2);
        }
    };
    for w in &warnings {
        eprintln!("satcc: warning: {}: {w}", a.file.display());
    }
    // Results go out point by point as they complete, in order: the table
    // (or the JSON) streams, and memory holds a few numbers per run, not
    // every summary (issue 33: 500 000 seeds grew past 2 GB, 7.8 GB with
    // --json, before printing anything).
    use std::io::Write as _;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut acc: Option<PointAcc> = None;
    let mut legend_f = false;
    let mut write_err: Option<std::io::Error> = None;
    // Whether the output can still be written: once it cannot (a closed
    // pipe, `satcc sweep ... | head`), the sweep stops rather than compute
    // runs nobody will read (issue 33).
    let mut put = |out: &mut std::io::BufWriter<std::io::StdoutLock<'_>>, s: &str| -> bool {
        if write_err.is_none() {
            if let Err(e) = out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
                write_err = Some(e);
            }
        }
        write_err.is_none()
    };
    if a.json {
        put(&mut out, "[");
    } else {
        put(
            &mut out,
            &format!(
                "\n{} point(s), {} seed(s) each; means over seeds, [min..max] where seeds > 1\n\n",
                points.len(),
                seeds
            ),
        );
    }
    let file = a.file.display().to_string();
    // Whether a point's `"runs": [` is open in the JSON: a run that fails
    // part-way closes it, so that stdout stays one valid JSON array of the
    // runs that completed (a script reads them and the exit code says the
    // sweep failed).
    let mut open_point = false;
    let result = run_all(&a, &file, &points, &specs, seeds, workers, |i, summary| {
        let (pi, seed) = ((i as u64 / seeds) as usize, i as u64 % seeds + 1);
        if a.json {
            let mut s = String::new();
            if seed == 1 {
                if pi > 0 {
                    s.push(',');
                }
                let vary = serde_json::to_string_pretty(&points[pi]).unwrap_or_default();
                s.push_str("\n  {\n    \"vary\": ");
                s.push_str(&indent(&vary, 4, false));
                s.push_str(",\n    \"runs\": [\n");
            } else {
                s.push_str(",\n");
            }
            let run = serde_json::to_string_pretty(summary).unwrap_or_default();
            s.push_str(&indent(&run, 6, true));
            open_point = seed != seeds;
            if !open_point {
                s.push_str("\n    ]\n  }");
            }
            put(&mut out, &s)
        } else {
            let p = acc.get_or_insert_with(|| PointAcc::new(summary));
            p.push(summary);
            if seed == seeds {
                if let Some(p) = acc.take() {
                    legend_f |= p.nt.n > 0;
                    return put(&mut out, &p.block(&points[pi]));
                }
            }
            true
        }
    });
    if let Err(e) = result {
        if a.json {
            put(
                &mut out,
                if open_point {
                    "\n    ]\n  }\n]\n"
                } else {
                    "\n]\n"
                },
            );
        }
        let _ = out.flush();
        eprintln!("satcc: {}: {e}", a.file.display());
        return ExitCode::from(2);
    }
    if a.json {
        put(&mut out, "\n]\n");
    } else {
        let mut s = format!("\n{}\n", crate::output::JAIN_LEGEND);
        if legend_f {
            s.push_str(crate::output::FRIENDLINESS_LEGEND);
            s.push('\n');
        }
        put(&mut out, &s);
    }
    match write_err {
        None => ExitCode::SUCCESS,
        Some(e) => {
            eprintln!("satcc: sweep: cannot write the results: {e}");
            ExitCode::from(1)
        }
    }
}

/// Creates `dir` if need be and writes and removes a probe file in it:
/// whether the store's records could be written.
fn check_writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".probe.{}.partial", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// `text` (serde_json's pretty output) moved right by `n` spaces, the first
/// line too when `first`: a nested value of a pretty document written a
/// piece at a time is byte for byte what the whole document would be.
fn indent(text: &str, n: usize, first: bool) -> String {
    let pad = " ".repeat(n);
    let mut o = String::with_capacity(text.len() + text.len() / 8);
    for (k, line) in text.split('\n').enumerate() {
        if k > 0 {
            o.push('\n');
        }
        if k > 0 || first {
            o.push_str(&pad);
        }
        o.push_str(line);
    }
    o
}

/// How many finished runs may wait for an earlier one still running, per
/// worker: bounds the memory of in-order output when one run is slow.
const WINDOW_PER_WORKER: usize = 16;

/// Runs job `i` (point `i / seeds`, seed `i % seeds + 1`) for every job on
/// up to `workers` threads and hands each summary to `emit` in job order
/// as soon as it and every job before it are done. On failure, the error
/// of the first failing job (in job order): every job before it was
/// already claimed when it failed and still finishes, later ones do not
/// start.
fn run_all(
    a: &SweepArgs,
    file: &str,
    points: &[Vec<(String, String)>],
    specs: &[PointSpec],
    seeds: u64,
    workers: usize,
    mut emit: impl FnMut(usize, &Summary) -> bool,
) -> Result<(), SimError> {
    use std::io::IsTerminal;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let total = specs.len() * seeds as usize;
    let label = |i: usize| {
        let (pi, seed) = (i / seeds as usize, i as u64 % seeds + 1);
        let l: Vec<String> = points[pi].iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{} seed {seed}", l.join(" "))
    };
    let bar = std::io::stderr().is_terminal().then(|| {
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
    // Off a terminal: a line per run for a small sweep, else one every few
    // seconds (a million lines would bury the table).
    let every_run = total <= 1000;
    let line_secs = std::env::var("SATCC_PROGRESS_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(5.0);
    let started = std::time::Instant::now();
    let mut last_line = 0.0;
    let next = AtomicUsize::new(0);
    let emitted = AtomicUsize::new(0);
    let computed = AtomicUsize::new(0);
    let from_store = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let window = workers.saturating_mul(WINDOW_PER_WORKER).max(1);
    let mut first_err: Option<SimError> = None;
    let mut stopped = false;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Summary, SimError>)>();
        for _ in 0..workers.min(total) {
            let tx = tx.clone();
            let (next, emitted, computed, from_store, failed) =
                (&next, &emitted, &computed, &from_store, &failed);
            s.spawn(move || loop {
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                // Wait while `window` finished runs already wait for an
                // earlier one: jobs are claimed in order, so the earliest
                // is running and nothing deadlocks.
                while i >= emitted.load(Ordering::Relaxed) + window {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                let spec = &specs[i / seeds as usize];
                let seed = i as u64 % seeds + 1;
                let r = run_one(a.store.as_deref(), file, spec, seed, computed, from_store);
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                if tx.send((i, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::BTreeMap::new();
        let mut done = 0usize;
        for (i, r) in rx {
            done += 1;
            if let Some(b) = &bar {
                b.inc(1);
                b.set_message(label(i));
            } else if !a.json {
                // With --json off a terminal, stderr stays quiet (a
                // script's output), as before.
                let t = started.elapsed().as_secs_f64();
                if every_run || done == total || t - last_line >= line_secs {
                    if every_run {
                        eprintln!("[{done}/{total}] {}", label(i));
                    } else {
                        eprintln!("[{done}/{total}] runs after {t:.0} s");
                    }
                    last_line = t;
                }
            }
            pending.insert(i, r);
            if first_err.is_some() || stopped {
                continue;
            }
            loop {
                let k = emitted.load(Ordering::Relaxed);
                let Some(r) = pending.remove(&k) else {
                    break;
                };
                match r {
                    Ok(summary) => {
                        if !emit(k, &summary) {
                            // The output is gone: no later run starts.
                            failed.store(true, Ordering::Relaxed);
                            stopped = true;
                        }
                    }
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        first_err = Some(e);
                        break;
                    }
                }
                emitted.store(k + 1, Ordering::Relaxed);
                if stopped {
                    break;
                }
            }
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(dir) = &a.store {
        eprintln!(
            "satcc: store {}: {} run(s) computed, {} taken from the store",
            dir.display(),
            computed.load(Ordering::Relaxed),
            from_store.load(Ordering::Relaxed)
        );
    }
    match first_err {
        Some(e) => Err(e),
        // The caller reports the write error.
        None if stopped => Ok(()),
        None if emitted.load(Ordering::Relaxed) == total => Ok(()),
        // Every job before a missing one finished: a failure came first
        // and was returned above.
        None => Err(SimError {
            field: String::new(),
            message: "sweep: a run was lost".into(),
        }),
    }
}

/// One run's summary: from the store if it holds the run (counted in
/// `from_store`), else simulated (and then stored, counted in `computed`).
fn run_one(
    store: Option<&std::path::Path>,
    file: &str,
    spec: &PointSpec,
    seed: u64,
    computed: &std::sync::atomic::AtomicUsize,
    from_store: &std::sync::atomic::AtomicUsize,
) -> Result<Summary, SimError> {
    use std::sync::atomic::Ordering;
    let tree = satcc_sim::store::with_seed(&spec.tree, seed);
    let key = store.map(|_| satcc_sim::store::key(&tree, seed));
    if let (Some(dir), Some(key)) = (store, &key) {
        // A record that does not read back as a summary counts as missing.
        if let Some(s) =
            satcc_sim::store::get(dir, key).and_then(|j| serde_json::from_value::<Summary>(j).ok())
        {
            from_store.fetch_add(1, Ordering::Relaxed);
            return Ok(s);
        }
    }
    let sc = Scenario::from_tree(tree.clone(), file).map_err(|e| SimError {
        field: e.field,
        message: e.message,
    })?;
    let summary = run(&sc, &RunOptions::default())?.summary;
    computed.fetch_add(1, Ordering::Relaxed);
    if let (Some(dir), Some(key)) = (store, &key) {
        let rec = satcc_sim::store::record(key, &tree, seed, &spec.params, &summary);
        satcc_sim::store::put(dir, &rec).map_err(|e| SimError {
            field: "--store".into(),
            message: format!("{}: cannot write: {e}", dir.display()),
        })?;
    }
    Ok(summary)
}

/// A running mean (and range) of one number over a point's runs, summed in
/// run order as the whole list was.
#[derive(Default)]
struct Acc {
    sum: f64,
    n: usize,
    lo: f64,
    hi: f64,
}

impl Acc {
    fn push(&mut self, x: f64) {
        if self.n == 0 {
            // `Iterator::sum` of f64 starts from -0.0: the same bits.
            self.sum = -0.0;
            self.lo = f64::INFINITY;
            self.hi = f64::NEG_INFINITY;
        }
        self.sum += x;
        self.n += 1;
        self.lo = self.lo.min(x);
        self.hi = self.hi.max(x);
    }
    fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / self.n as f64
        }
    }
}

/// A protocol's numbers over a point's runs.
struct ClassAcc {
    protocol: satcc_sim::scenario::flow::Protocol,
    flows: usize,
    goodput: Acc,
    jain: Acc,
}

/// A link's numbers over a point's runs.
struct LinkAcc {
    name: String,
    utilization: Acc,
    loss: Acc,
}

/// What a point's table block needs from its runs, gathered run by run: a
/// few numbers per run (F and FC values kept for their median), never the
/// summaries.
struct PointAcc {
    classes: Vec<ClassAcc>,
    links: Vec<LinkAcc>,
    duration_s: f64,
    feedback: Acc,
    loss_event_rate: Acc,
    slow_start_exit: Acc,
    dummy_overhead: Acc,
    files: u64,
    file_time: f64,
    nt: Acc,
    f: Vec<f64>,
    fc: Vec<f64>,
}

impl PointAcc {
    /// The rows come from the first run (seed 1): its protocols and links.
    fn new(first: &Summary) -> Self {
        PointAcc {
            classes: first
                .classes
                .iter()
                .map(|c| ClassAcc {
                    protocol: c.protocol,
                    flows: c.flows as usize,
                    goodput: Acc::default(),
                    jain: Acc::default(),
                })
                .collect(),
            links: first
                .links
                .iter()
                .map(|l| LinkAcc {
                    name: l.name.clone(),
                    utilization: Acc::default(),
                    loss: Acc::default(),
                })
                .collect(),
            duration_s: first.duration_s,
            feedback: Acc::default(),
            loss_event_rate: Acc::default(),
            slow_start_exit: Acc::default(),
            dummy_overhead: Acc::default(),
            files: 0,
            file_time: 0.0,
            nt: Acc::default(),
            f: Vec::new(),
            fc: Vec::new(),
        }
    }

    fn push(&mut self, r: &Summary) {
        for c in &mut self.classes {
            if let Some(x) = r.classes.iter().find(|x| x.protocol == c.protocol) {
                c.goodput.push(x.goodput_bps);
                // Undefined (every flow of the class at 0) is left out of the
                // mean rather than counted as 1 or 0.
                if let Some(j) = x.jain {
                    c.jain.push(j);
                }
            }
        }
        for f in &r.flows {
            if let Some(n) = f.feedback_packets {
                self.feedback.push(n as f64);
            }
        }
        for f in &r.flows {
            if let Some(p) = f.loss_event_rate {
                self.loss_event_rate.push(p);
            }
        }
        for f in &r.flows {
            if let Some(s) = f.slow_start_exit_s {
                self.slow_start_exit.push(s);
            }
        }
        // TCP-Peach: dummy segments per data segment, per run.
        let (d, n) = r.flows.iter().fold((0, 0), |(d, n), f| match &f.dummy {
            Some(x) => (d + x.packets_sent, n + f.packets_sent),
            None => (d, n),
        });
        if n > 0 {
            self.dummy_overhead.push(d as f64 / n as f64);
        }
        // Finite files: mean transfer time over every completed file.
        for f in &r.flows {
            if let Some(m) = f.mean_file_time_s {
                self.files += f.files_completed;
                self.file_time += m * f.files_completed as f64;
            }
        }
        if let Some(nt) = r.normalized_tcp_throughput {
            self.nt.push(nt);
        }
        if let Some(x) = r.friendliness {
            self.f.push(x.f);
            if let Some(fc) = x.fc {
                self.fc.push(fc);
            }
        }
        for l in &mut self.links {
            if let Some(x) = r.links.iter().find(|x| x.name == l.name) {
                l.utilization.push(x.utilization);
                l.loss.push(x.loss);
            }
        }
    }

    /// The point's block of the table.
    fn block(&self, vary: &[(String, String)]) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let label: Vec<String> = vary.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "== {}", label.join("  "));
        for c in &self.classes {
            let g = &c.goodput;
            let range = if g.n > 1 {
                format!(" [{}..{}]", fmt_bps(g.lo), fmt_bps(g.hi))
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "   {:<10} {:>3} flows  goodput {:>12}{range}  jain {}",
                c.protocol,
                c.flows,
                fmt_bps(g.mean()),
                fmt_jain((c.jain.n > 0).then(|| c.jain.mean()))
            );
        }
        if self.feedback.n > 0 {
            let dur = self.duration_s.max(1e-9);
            let _ = writeln!(
                o,
                "   feedback {:.2} pkts/s per flow   loss event rate p {:.5}   slow start left at {}",
                self.feedback.mean() / dur,
                self.loss_event_rate.mean(),
                if self.slow_start_exit.n == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1} s", self.slow_start_exit.mean())
                }
            );
        }
        if self.dummy_overhead.n > 0 {
            let _ = writeln!(
                o,
                "   dummy overhead {:.1}%",
                self.dummy_overhead.mean() * 100.0
            );
        }
        if self.files > 0 {
            let _ = writeln!(
                o,
                "   files {} completed, mean transfer time {:.3} s",
                self.files,
                self.file_time / self.files as f64
            );
        }
        if self.nt.n > 0 {
            let spread = |x: &[f64]| match median_siqr(x) {
                Some((m, q)) if x.len() > 1 => format!(" (median {m:.3}, SIQR {q:.3})"),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "   normalized TCP throughput {:.3}   F {:.3}{}   FC {:.2}{}",
                self.nt.mean(),
                mean(&self.f),
                spread(&self.f),
                mean(&self.fc),
                spread(&self.fc)
            );
        }
        // Every link at every point, idle ones too: a row that came and
        // went with the point's load would leave the points' blocks
        // misaligned (issue 33).
        for l in &self.links {
            let _ = writeln!(
                o,
                "   link {:<14} util {:>5.1}%  loss {:.3}%",
                l.name,
                l.utilization.mean() * 100.0,
                l.loss.mean() * 100.0
            );
        }
        o
    }
}
