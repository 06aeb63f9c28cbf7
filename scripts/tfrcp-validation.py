#!/usr/bin/env python3
"""Paper 004 (TFRCP) tables for docs/validation.md, from satcc sweeps.

Runs the sweeps named at the top of scenarios/tfrcp-c*.toml and prints
markdown tables: each cell is the median F over seeds 1..N +- SIQR (as the
paper reports), with the median FC in brackets where there are several
TFRCP flows. Needs the Python package (`pip install ./python`, see
docs/python.md). Usage: scripts/tfrcp-validation.py [--only NAME]
[--store DIR] [--jobs N]; with --store, runs already in DIR are not run
again (the store of `satcc sweep --store`).
"""

import argparse
import math
import os
import statistics
import sys

import satcc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FLOWS = "flows.0.count+flows.1.count=5,10,15,20,25"
C2_ROWS = ("flows.0.count+flows.1.count+topology.bottleneck.rate+topology.bottleneck.queue.limit="
           "5:5:320kbps:64,10:10:640kbps:128,15:15:960kbps:192,20:20:1280kbps:256,25:25:1600kbps:320")
# name: (scenario, seeds, fixed --sets, row --vary, column --vary, show FC)
TABLES = {
    "c1-s1": ("tfrcp-c1.toml", 3, [], FLOWS, "flows.1.m=2s,3s,4s,5s", True),
    # A strategy and its own parameter are set together (set_many checks
    # once at the end): S2 needs k, S3 m_base and m_spread; the column
    # --vary then sets each value.
    "c1-s2": ("tfrcp-c1.toml", 3, ["flows.1.strategy=s2", "flows.1.k=10"], FLOWS,
              "flows.1.k=10,20,40,60", True),
    "c1-s3": ("tfrcp-c1.toml", 3, ["flows.1.strategy=s3", "flows.1.m_base=0.3s",
                                   "flows.1.m_spread=5.4s"], FLOWS,
              "flows.1.m_base+flows.1.m_spread=0.3s:5.4s,1.5s:3s,2.7s:0.6s", True),
    "c2": ("tfrcp-c2.toml", 3, [], C2_ROWS, "flows.1.m=2s,3s,5s", True),
    "c3-80k": ("tfrcp-c3.toml", 8, [], "flows.2.count=2,4,6,10,20", "flows.1.m=2s,3s,5s,8s", False),
    "c3-160k": ("tfrcp-c3.toml", 8, ["flows.2.app.size_max=160KB"], "flows.2.count=2,4,6,10,20",
                "flows.1.m=2s,3s,5s,8s", False),
    "c3-pair": ("tfrcp-c3.toml", 8, ["flows.2.start=5000s", "flows.0.start_spread=1s",
                                     "flows.1.start_spread=1s"], "flows.2.count=2",
                "flows.1.m=2s,3s,5s,8s", False),
    "c4": ("tfrcp-c4.toml", 3, [], "flows.2.count=20,40,60,80", "flows.1.m=2s,3s,5s", False),
}


def med_siqr(v):
    v = sorted(v)
    if len(v) < 2:
        return v[0], 0.0
    q = statistics.quantiles(v, n=4, method="inclusive")
    return statistics.median(v), (q[2] - q[0]) / 2


def vary_arg(spec):
    """A `--vary KEYS=V1,V2` string as a satcc.sweep vary entry: joint
    values `a:b` become tuples, one per key."""
    keys, vals = spec.split("=")
    return keys, [tuple(v.split(":")) if ":" in v else v for v in vals.split(",")]


def table(name, store, jobs):
    sc, seeds, sets, rows, cols, fc = TABLES[name]
    scenario = satcc.Scenario.load(os.path.join(ROOT, "scenarios", sc))
    scenario = scenario.set_many(tuple(s.split("=", 1)) for s in sets)
    rkey, rv = vary_arg(rows)
    ckey, cv = vary_arg(cols)
    df = satcc.sweep(scenario, vary={rkey: rv, ckey: cv}, seeds=seeds, store=store, jobs=jobs)
    rvals, cvals = rows.split("=")[1].split(","), cols.split("=")[1].split(",")
    cell = {}
    # The frame is in grid order: rows slowest, then columns, seeds inside.
    for i, (r, c) in enumerate((r, c) for r in rvals for c in cvals):
        runs = df.iloc[i * seeds:(i + 1) * seeds]
        runs = runs[runs["F"].notna()] if "F" in runs else runs.iloc[:0]
        fs = list(runs["F"])
        fcs = [x if not math.isnan(x) else float("inf") for x in runs.get("FC", [math.nan] * len(runs))]
        m, q = med_siqr(fs)
        txt = f"{m:.2f} ±{q:.2f}"
        if fc:
            fm = statistics.median(fcs)
            txt += f" (FC {fm:.2f})" if fm != float("inf") else " (FC inf)"
        cell[(r, c)] = txt
    print(f"\n{name}: `satcc sweep scenarios/{sc} --seeds {seeds} --vary {rows} --vary {cols}"
          + "".join(f" --set {s}" for s in sets) + "`\n")
    print("| | " + " | ".join(cvals) + " |")
    print("|---" * (len(cvals) + 1) + "|")
    for r in rvals:
        print(f"| {r} | " + " | ".join(cell.get((r, c), "?") for c in cvals) + " |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", choices=sorted(TABLES))
    ap.add_argument("--store", default=None, help="results store directory (default: keep nothing)")
    ap.add_argument("--jobs", type=int, default=None, help="runs at a time (default: all cores)")
    a = ap.parse_args()
    for name in a.only or list(TABLES):
        table(name, a.store, a.jobs)


if __name__ == "__main__":
    main()
