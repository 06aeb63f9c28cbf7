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
    cell_at(rate_mbps, delay_ms, buf, per, seed, 0)
}

/// [`cell`] with the flow started `start_s` seconds into the run, which
/// lasts 300 s more (both simulators measure the flow's goodput over its
/// own 300 s).
fn cell_at(rate_mbps: f64, delay_ms: f64, buf: f64, per: f64, seed: u64, start_s: u64) -> Scenario {
    let duration = 300 + start_s;
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
duration = "{duration}s"
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
start = "{start_s}s"
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
    check_runs(cells, |rate, d, b, per, seeds| {
        (1..=seeds).map(|s| cell(rate, d, b, per, s)).collect()
    });
}

/// [`check`] over the scenarios `runs` makes for each cell, pooled as
/// samples of it.
fn check_runs(
    cells: &[(f64, f64, f64, f64, u64)],
    runs: impl Fn(f64, f64, f64, f64, u64) -> Vec<Scenario>,
) {
    require_ns();
    let mut bad = Vec::new();
    for &(rate, d, b, per, seeds) in cells {
        let scs = runs(rate, d, b, per, seeds);
        let (ns, sat): (Vec<f64>, Vec<f64>) = scs.iter().map(pair).unzip();
        let ((mn, sn), (ms, ss)) = (mean_sd(&ns), mean_sd(&sat));
        let ratio = ms / mn;
        let n = scs.len() as f64;
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

/// The three PER-0 cells that one ns-2 run puts outside 5 % (20 Mb/s,
/// 300 ms, 2 BDP: 0.863; 50 Mb/s, 250 ms, 2 BDP: 1.060; 10 Mb/s, 200 ms,
/// 0.5 BDP: 1.053), each pooled over the flow started at 0, 1, ..., 9 s.
/// ns-2's clock is a double: while its saturated slow start sits at
/// `rate_` = 2 X_recv, the first report measured wholly past t = 16 s
/// (where the clock's rounding step doubles) gives an X_recv a few 1e-12
/// lower on the 20 and 50 Mb/s cells and `slowstart()` halves (`rate_ >
/// ss_maxrate_`), which satcc's whole nanoseconds never do. Where a
/// flow's saturated slow start falls against 16 s is an accident of its
/// start time, so one start is one draw; moving the delay by microseconds
/// (`--perturb`) does not move it, moving the start does. The 10 Mb/s
/// cell is the receiver's report-phase tie instead: ns-2 delivers 7.45 or
/// 7.85 Mb/s by start, satcc 7.854 (docs/validation.md, "Where ns-2's
/// clock crosses 16 s"). Tolerance as [`check`]: 5 %, or two standard errors
/// where ns-2's runs spread wider. Measured: 0.982 ± 0.015, 1.027 ±
/// 0.009, and 0.981 ± 0.067 at 50 Mb/s, whose tolerance is then 13 %: there
/// ns-2 takes another branch at one start in ten (37.4 Mb/s against
/// 21.4-22.5), and satcc's single trajectory is 3-6 % above ns-2's usual
/// one (the order of two reports at the overshoot's loss events; not a
/// rule difference, see the doc section).
#[test]
fn tfrc_ns2_grid_per0_clock_phase() {
    check_runs(
        &[
            (20.0, 300.0, 2.0, 0.0, 1),
            (50.0, 250.0, 2.0, 0.0, 1),
            (10.0, 200.0, 0.5, 0.0, 1),
        ],
        |rate, d, b, per, _| (0..10).map(|st| cell_at(rate, d, b, per, 1, st)).collect(),
    );
}
