//! `satcc ns2`: run a scenario in ns-2 2.35 instead of satcc, for
//! cross-checking the two on the same experiment.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use satcc_ns2 as ns2;

use crate::output::fmt_bps;

/// Arguments of `satcc ns2`.
#[derive(Args, Debug)]
pub struct Ns2Args {
    /// Scenario file (TOML; see docs/scenario.md).
    file: PathBuf,
    /// Override a field, as in `satcc run`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run seed (overrides the file's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Print the generated ns-2 script and do not run it.
    #[arg(long)]
    tcl: bool,
    /// Print the results as JSON on stdout and nothing else.
    #[arg(long)]
    json: bool,
}

/// Runs `satcc ns2`.
pub fn ns2(a: Ns2Args) -> ExitCode {
    let sc = match crate::runner::load_scenario(&a.file, &a.set, a.seed) {
        Ok(sc) => sc,
        Err(code) => return code,
    };
    // What ns-2 cannot express is a scenario problem: one line naming the
    // file and field, exit 2 (as a malformed scenario).
    let script = match ns2::export(&sc) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("satcc: {}: {e}", a.file.display());
            return ExitCode::from(if e.is_scenario_error() { 2 } else { 1 });
        }
    };
    if a.tcl {
        print!("{}", script.tcl);
        return ExitCode::SUCCESS;
    }
    if !ns2::ns_available() {
        eprintln!("satcc: ns-2 is not installed (apt-get install -y ns2)");
        return ExitCode::from(1);
    }
    let (r, wall) = match script.run() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("satcc: ns-2: {e}");
            return ExitCode::from(1);
        }
    };
    let fr = r.friendliness(&sc);
    // The same scenario and seed in satcc, to print beside ns-2's numbers.
    let ours = match satcc_sim::run(&sc, &satcc_sim::RunOptions::default()) {
        Ok(o) => o.summary,
        Err(e) => {
            eprintln!("satcc: {}: {e}", a.file.display());
            return ExitCode::from(2);
        }
    };
    let our_goodput = |id: usize| {
        ours.flows
            .get(id)
            .map_or(f64::NAN, |f: &satcc_sim::report::FlowSummary| f.goodput_bps)
    };
    if a.json {
        let v = serde_json::json!({
            "simulator": "ns-2",
            "seed": sc.seed,
            "wall_s": wall,
            "flows": r.flows.iter().map(|f| serde_json::json!({
                "id": f.id,
                "protocol": f.protocol,
                "goodput_bps": f.goodput_bps,
                "delivered_bytes": f.delivered_bytes,
                "packets_sent": f.packets_sent,
                "retransmits": f.retransmits,
                "timeouts": f.timeouts,
                "tfrcp": f.tfrcp.as_ref().map(|t| serde_json::json!({
                    "rounds": t.rounds,
                    "doubled": t.doubled,
                    "packets_lost": t.lost,
                    "packets_received": t.received,
                    "mean_lossy_p": t.mean_lossy_p,
                    "rate_end_pps": t.rate_end_pps,
                })),
            })).collect::<Vec<_>>(),
            "links": r.links.iter().map(|l| serde_json::json!({
                "name": l.name,
                "utilization": l.utilization,
                "arrivals": l.arrivals,
                "drops": l.drops,
                "mean_queue_pkts": l.mean_queue_pkts,
            })).collect::<Vec<_>>(),
            "friendliness": fr.map(|x| serde_json::json!({
                "f": x.f, "e": x.e, "fc": x.fc.is_finite().then_some(x.fc),
            })),
            "satcc": {
                "flows": ours.flows.iter().map(|f| serde_json::json!({
                    "id": f.id,
                    "protocol": f.protocol,
                    "goodput_bps": f.goodput_bps,
                    "retransmits": f.retransmits,
                    "timeouts": f.timeouts,
                })).collect::<Vec<_>>(),
                "friendliness": ours.friendliness,
            },
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    println!(
        "ns-2 2.35 and satcc: {} (seed {}), ns-2 {:.1} s wall",
        a.file.display(),
        sc.seed,
        wall
    );
    println!(
        "{:>4}  {:<8} {:>12} {:>12} {:>7} {:>10} {:>8} {:>6}  tfrcp rounds (doubled) p",
        "flow", "protocol", "ns-2", "satcc", "diff", "sent", "rexmit", "RTOs"
    );
    for f in &r.flows {
        let extra = f.tfrcp.as_ref().map_or(String::new(), |t| {
            format!("{} ({}) {:.4}", t.rounds, t.doubled, t.mean_lossy_p)
        });
        let sat = our_goodput(f.id as usize);
        let diff = if f.goodput_bps > 0.0 {
            format!("{:+.1}%", 100.0 * (sat - f.goodput_bps) / f.goodput_bps)
        } else {
            "-".into()
        };
        println!(
            "{:>4}  {:<8} {:>12} {:>12} {:>7} {:>10} {:>8} {:>6}  {}",
            f.id,
            f.protocol,
            fmt_bps(f.goodput_bps),
            fmt_bps(sat),
            diff,
            f.packets_sent,
            f.retransmits,
            f.timeouts,
            extra
        );
    }
    for l in &r.links {
        let loss = if l.arrivals > 0 {
            l.drops as f64 / l.arrivals as f64
        } else {
            0.0
        };
        println!(
            "link {:<16} utilization {:.3}  loss {:.4}  mean queue {:.1} pkts",
            l.name, l.utilization, loss, l.mean_queue_pkts
        );
    }
    if let Some(x) = fr {
        print!("friendliness F {:.3}  E {:.3}  FC {:.3}", x.f, x.e, x.fc);
        if let Some(y) = &ours.friendliness {
            print!(
                "   (satcc: F {:.3}  E {:.3}  FC {})",
                y.f,
                y.e,
                y.fc.map_or("-".into(), |c| format!("{c:.3}"))
            );
        }
        println!();
        println!("{}", crate::output::FRIENDLINESS_LEGEND);
    }
    println!("goodput, sent, rexmit and RTOs are ns-2's but the satcc column; diff = (satcc - ns-2) / ns-2");
    ExitCode::SUCCESS
}
