#!/usr/bin/env python3
"""TFRC and paper 001 (CCID3) tables for docs/validation.md, from satcc sweeps.

Runs the sweeps named in docs/validation.md ("TCP-friendliness sweep" and
"Paper 001") and prints their markdown tables. Usage:

    pip install ./python        # the satcc package (docs/python.md)
    scripts/tfrc-validation.py [--only friendliness|ccid3] [--set KEY=VALUE ...] [--store DIR]

`--set` is passed to every sweep (e.g. `--set flows.0.oscillation_damping=false`
to see what one RFC 5348 knob contributes); with `--store DIR`, runs already
in DIR (the store of `satcc sweep --store`) are not run again.
"""

import argparse
import os

import satcc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORE = None


def sweep(scenario, vary, seeds, sets):
    """The sweep as the CLI's `--json` gave it: one (vary, runs) pair per
    point, in grid order, runs being the seeds' summaries."""
    sc = satcc.Scenario.load(os.path.join(ROOT, "scenarios", scenario))
    for s in sets:
        sc = sc.set(*s.split("=", 1))
    df = satcc.sweep(sc, vary=vary, seeds=seeds, store=STORE, with_summary=True)
    pts = []
    for i in range(0, len(df), seeds):
        block = df.iloc[i:i + seeds]
        pts.append(({k: block.iloc[0][k.split("+")[0]] for k in vary}, list(block["summary"])))
    return pts


def friendliness(sets):
    pts = sweep("tfrc-friendliness.toml",
                {"topology.bottleneck.rate": ["1Mbps", "4Mbps", "16Mbps", "64Mbps"],
                 "flows.0.count+flows.1.count": [1, 4, 16, 32]}, 3, sets)
    print("| bottleneck | flows (TCP+TFRC) | TCP window (pkts/RTT) "
          "| normalized TCP throughput (3 seeds) | mean | in [0.7, 1.3] |")
    print("|---|---|---|---|---|---|")
    for vary, runs in pts:
        rate, n = vary["topology.bottleneck.rate"], vary["flows.0.count+flows.1.count"]
        norms, windows = [], []
        for r in runs:
            tcp = [f for f in r["flows"] if f["protocol"] == "sack"]
            all_g = sum(f["goodput_bps"] for f in r["flows"])
            tcp_g = sum(f["goodput_bps"] for f in tcp)
            # Normalized TCP throughput: TCP's aggregate over its fair half.
            norms.append(tcp_g / (all_g / 2))
            windows.append(sum(f["goodput_bps"] * f["mean_rtt_s"] / 8000 for f in tcp) / len(tcp))
        mean = sum(norms) / len(norms)
        ok = "yes" if 0.7 <= mean <= 1.3 else "no"
        print(f"| {rate} | {n}+{n} | {sum(windows) / len(windows):.1f} | "
              f"{' / '.join(f'{x:.2f}' for x in norms)} | {mean:.2f} | {ok} |")


def ccid3(sets):
    rows = []
    for name, sc, label in [("slowstart", "ccid3-slowstart.toml", "slowstart (RTT 1 s, 1 Mb/s, PER 1e-4, 120 s)"),
                            ("ipstar", "ccid3-ipstar.toml", "ipstar (RTT 1.2 s, 1 Mb/s, PER 0.33 %, 300 s)")]:
        pts = sweep(sc, {"flows.0.feedback": ["standard", "dynamic"]}, 10, sets)
        base = None
        for vary, runs in pts:
            policy = vary["flows.0.feedback"]
            n = len(runs)
            g = sum(r["flows"][0]["goodput_bps"] for r in runs) / n
            ss = [r["flows"][0]["slow_start_exit_s"] for r in runs]
            ss = [x for x in ss if x is not None]
            ssm = sum(ss) / len(ss) if ss else float("nan")
            fb = sum(r["flows"][0]["feedback_packets"] / r["duration_s"] for r in runs) / n
            fbb = sum(r["flows"][0]["feedback_bytes"] / r["duration_s"] for r in runs) / n
            loss = sum(next(l for l in r["links"] if l["name"] == "downlink")["loss"] for r in runs) / n
            if base is None:
                base = (g, ssm)
                rows.append(f"| {label} | {policy} | {g / 1000:.1f} kb/s | {ssm:.1f} s "
                            f"| {fb:.2f} /s ({fbb:.0f} B/s) | {loss * 100:.2f} % |")
            else:
                dg = (g / base[0] - 1) * 100
                rows.append(f"| | {policy} | {g / 1000:.1f} kb/s ({dg:+.1f} %) "
                            f"| {ssm:.1f} s ({ssm - base[1]:+.1f} s) "
                            f"| {fb:.2f} /s ({fbb:.0f} B/s) | {loss * 100:.2f} % |")
    print("| scenario | policy | goodput | slow start left | feedback | downlink loss |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["friendliness", "ccid3"])
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--store", default=None, help="results store directory (default: keep nothing)")
    a = ap.parse_args()
    global STORE
    STORE = a.store
    if a.only in (None, "friendliness"):
        print("### TCP-friendliness sweep\n")
        friendliness(a.sets)
        print()
    if a.only in (None, "ccid3"):
        print("### Paper 001\n")
        ccid3(a.sets)


if __name__ == "__main__":
    main()
