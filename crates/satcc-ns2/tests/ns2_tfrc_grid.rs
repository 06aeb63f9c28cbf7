//! TFRC `profile = "ns2"` against ns-2 2.35's `Agent/TFRC` on a grid of
//! long-delay paths: the short version of `scripts/tfrc-ns2-grid.py` (the
//! full grid and its tables are in docs/validation.md, "TFRC profile ns2
//! on long-delay paths").
//!
//! One TFRC flow alone, 300 s, on a dumbbell whose bottleneck has one-way
//! delay D and a DropTail buffer of B x BDP (BDP = rate x 2 (D + 2 ms) /
//! 1040 B), access links 100 Mb/s and 1 ms; errors on the forward
//! bottleneck only. Like the other cross-checks these tests need `ns`
//! (`apt-get install -y ns2`) and fail without it.
//!
//! Tolerances: at PER 0 (deterministic, one run per side) every cell
//! within 5 %. At PER 1e-2 (10 seeds) and 1e-3 (10 to 100 seeds) the ratio
//! of the means within 5 %, or within two standard errors of the ratio
//! where those are wider: one run's goodput varies with the seed by
//! 20-30 % at 1e-3 on a 600 ms RTT (the first loss, and the interval
//! synthesized from it, fall at a random point of slow start), so 10 seeds
//! leave a standard error of 12 % on the ratio there.

use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions};

/// Seeds of the PER 1e-2 cells.
const SEEDS: u64 = 10;

fn require_ns() {
    assert!(
        satcc_ns2::ns_available(),
        "ns-2 is not installed (no `ns` on PATH): run `apt-get install -y ns2`; \
         these cross-checks must not be skipped"
    );
}

/// The grid's scenario: `rate_mbps`, one-way bottleneck delay `delay_ms`,
/// buffer `buf` x BDP, packet error rate `per`.
fn cell(rate_mbps: f64, delay_ms: f64, buf: f64, per: f64, seed: u64) -> Scenario {
    let bdp = rate_mbps * 1e6 * 2.0 * (delay_ms + 2.0) / 1000.0 / 8.0 / 1040.0;
    let limit = ((buf * bdp).round() as u64).max(2);
    let error = if per > 0.0 {
        format!("error = {{ kind = \"uniform\", per = {per:e} }}")
    } else {
        String::new()
    };
    let text = format!(
        r#"
name = "tfrc-ns2-grid"
duration = "300s"
seed = {seed}
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "{rate_mbps}Mbps"
delay = "{delay_ms}ms"
queue = {{ kind = "droptail", limit = {limit} }}
{error}
[topology.access]
rate = "100Mbps"
delay = "1ms"
queue = {{ kind = "droptail", limit = 100000 }}
[[flows]]
protocol = "tfrc"
profile = "ns2"
mss = 1000
header_bytes = 40
"#
    );
    Scenario::from_toml_str(&text, "<tfrc ns2 grid>", &[]).expect("scenario parses")
}

/// (ns-2 goodput, satcc goodput) in b/s of one run.
fn pair(sc: &Scenario) -> (f64, f64) {
    let (r, _) = satcc_ns2::run_ns2(sc).unwrap_or_else(|e| panic!("ns-2 run failed: {e}"));
    let out = run(sc, &RunOptions::default()).expect("satcc runs");
    assert!(out.summary.packets.conserved(), "{:?}", out.summary.packets);
    (r.flows[0].goodput_bps, out.summary.flows[0].goodput_bps)
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let sd = if x.len() > 1 {
        (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

/// Runs the cells and fails if any ratio of the means is off by more than
/// 5 % and (for several seeds) by more than two standard errors.
fn check(cells: &[(f64, f64, f64, f64, u64)]) {
    require_ns();
    let mut bad = Vec::new();
    for &(rate, d, b, per, seeds) in cells {
        let (ns, sat): (Vec<f64>, Vec<f64>) =
            (1..=seeds).map(|s| pair(&cell(rate, d, b, per, s))).unzip();
        let ((mn, sn), (ms, ss)) = (mean_sd(&ns), mean_sd(&sat));
        let ratio = ms / mn;
        let n = seeds as f64;
        let se = ratio * ((ss / ms).powi(2) / n + (sn / mn).powi(2) / n).sqrt();
        let tol = 0.05f64.max(2.0 * se);
        println!(
            "CROSSCHECK tfrc ns2 grid {rate} Mb/s, {d} ms, {b} BDP, PER {per:e}: \
             satcc {ms:.0} ns-2 {mn:.0} b/s, ratio {ratio:.3} ± {se:.3} (tolerance {tol:.3})"
        );
        if (ratio - 1.0).abs() > tol {
            bad.push(format!(
                "{rate} Mb/s {d} ms {b} BDP PER {per:e}: {ratio:.3}"
            ));
        }
    }
    assert!(bad.is_empty(), "cells off: {bad:?}");
}

/// The 10 Mb/s grid at PER 0: 10, 100 and 300 ms, 0.25 and 2 BDP.
#[test]
fn tfrc_ns2_grid_per0() {
    let cells: Vec<_> = [10.0, 100.0, 300.0]
        .iter()
        .flat_map(|&d| [0.25, 2.0].map(|b| (10.0, d, b, 0.0, 1)))
        .collect();
    check(&cells);
}

/// Faster GEO-like paths at PER 0 where the overshoot into a deep buffer
/// decides the run: before slow start held its rate at the 2 X_recv tie
/// (`Ns2Params::ss_tie`) satcc delivered +65 %, +38 % and +22 % here; and
/// 20 Mb/s at 150 ms with a quarter BDP, where the open interval starts
/// to lower p only once ns-2's average over every closed interval says so
/// (`ns2_sink`), was -5.7 %.
#[test]
fn tfrc_ns2_grid_per0_fast_geo() {
    check(&[
        (50.0, 150.0, 2.0, 0.0, 1),
        (50.0, 200.0, 1.0, 0.0, 1),
        (20.0, 250.0, 2.0, 0.0, 1),
        (20.0, 150.0, 0.25, 0.0, 1),
    ]);
}

/// The 10 Mb/s grid at PER 1e-3. The buffer does not matter at this
/// loss rate (the flow stays far below the link rate); the seeds grow
/// with the delay so that the standard error of the ratio stays near 2 %
/// (10 seeds leave 12 % at 300 ms: 1.235 ± 0.123 for seeds 1-10, 1.127 ±
/// 0.061 for 1-30, 1.036 ± 0.021 for 1-200).
#[test]
fn tfrc_ns2_grid_per1e3() {
    check(&[
        (10.0, 10.0, 0.25, 1e-3, 10),
        (10.0, 100.0, 2.0, 1e-3, 40),
        (10.0, 300.0, 0.25, 1e-3, 100),
        (10.0, 300.0, 2.0, 1e-3, 100),
    ]);
}

/// The 10 Mb/s grid at PER 1e-2, 10 seeds.
#[test]
fn tfrc_ns2_grid_per1e2() {
    let cells: Vec<_> = [10.0, 100.0, 300.0]
        .iter()
        .flat_map(|&d| [0.25, 2.0].map(|b| (10.0, d, b, 1e-2, SEEDS)))
        .collect();
    check(&cells);
}
