//! `satcc sweep`: one scenario, several values of some fields, several
//! seeds; results side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use satcc_sim::metrics::median_siqr;
use satcc_sim::report::Summary;
use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions};
use serde::Serialize;

use crate::output::fmt_bps;

/// Options of `satcc sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Scenario file.
    pub file: PathBuf,
    /// A field and the values to try, e.g.
    /// `--vary flows.0.feedback=standard,dynamic`. Repeat for a grid. Keys
    /// joined by `+` take the same value together:
    /// `--vary flows.0.count+flows.1.count=1,8,32`.
    #[arg(long, value_name = "KEY=V1,V2,...", required = true)]
    pub vary: Vec<String>,
    /// Run each point with seeds 1..=N and report the mean (and range).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seeds: u64,
    /// Fixed overrides applied to every run.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print JSON only: one object per point with the per-seed summaries.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Point {
    vary: Vec<(String, String)>,
    runs: Vec<Summary>,
}

fn grid(vary: &[String]) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for v in vary {
        let (k, vals) = v
            .split_once('=')
            .ok_or_else(|| format!("--vary {v}: expected KEY=V1,V2,..."))?;
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
    let seeds = a.seeds.max(1);
    let total = points.len() as u64 * seeds;
    let mut results = Vec::new();
    let mut k = 0;
    for p in &points {
        let mut runs = Vec::new();
        for seed in 1..=seeds {
            let mut sets = a.set.clone();
            for (keys, v) in p {
                let keys: Vec<&str> = keys.split('+').map(str::trim).collect();
                let vals: Vec<&str> = v.split(':').collect();
                if vals.len() > 1 && vals.len() != keys.len() {
                    eprintln!(
                        "satcc: --vary {}={v}: {} values for {} keys",
                        keys.join("+"),
                        vals.len(),
                        keys.len()
                    );
                    return ExitCode::from(2);
                }
                for (i, k) in keys.iter().enumerate() {
                    let val = if vals.len() > 1 { vals[i] } else { v.as_str() };
                    sets.push(format!("{k}={val}"));
                }
            }
            sets.push(format!("seed={seed}"));
            let sc = match Scenario::load(&a.file, &sets) {
                Ok(sc) => sc,
                Err(e) => {
                    eprintln!("satcc: {e}");
                    return ExitCode::from(2);
                }
            };
            k += 1;
            if !a.json {
                let label: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
                eprintln!("[{k}/{total}] {} seed {seed}", label.join(" "));
            }
            match run(&sc, &RunOptions::default()) {
                Ok(out) => runs.push(out.summary),
                Err(e) => {
                    eprintln!("satcc: {}: {e}", a.file.display());
                    return ExitCode::from(2);
                }
            }
        }
        results.push(Point {
            vary: p.clone(),
            runs,
        });
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

fn table(results: &[Point], seeds: u64) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n{} point(s), {} seed(s) each; means over seeds, [min..max] where seeds > 1\n",
        results.len(),
        seeds
    );
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
    o
}
