#!/usr/bin/env python3
"""Paper 004 (TFRCP) in satcc and in ns-2 2.35, side by side.

ns-2 has no TFRCP agent; `satcc ns2` exports a scenario with its own OTcl
TFRCP (crates/satcc-ns2/src/ns2_tfrcp.tcl, written from the paper, not from
satcc's Rust), so the paper's findings can be checked in a second simulator
on the same topology, flows and seed. For every grid point this runs
`satcc run` and `satcc ns2` over seeds 1..N and prints a markdown table of
the friendliness ratio F (median and SIQR over seeds, as the paper reports).

Usage: scripts/tfrcp-ns2.py [--seeds N] [--jobs J] [--satcc PATH] [--only NAME]
Needs `ns` (apt-get install -y ns2) and a release build of satcc.
"""

import argparse
import concurrent.futures as cf
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PAIR = ["flows.0.count=1", "flows.1.count=1", "flows.0.start_spread=1s",
        "flows.1.start_spread=1s"]

# (table name, scenario, row label, row --sets, column label, column --sets)
TABLES = {
    "c1-s1": ("tfrcp-c1.toml",
              [(f"{n}", [f"flows.0.count={n}", f"flows.1.count={n}"]) for n in (5, 10, 15, 20, 25)],
              [(m, [f"flows.1.m={m}"]) for m in ("2s", "5s")]),
    "c1-s2": ("tfrcp-c1.toml",
              [(f"{n}", [f"flows.0.count={n}", f"flows.1.count={n}"]) for n in (5, 10, 15, 20, 25)],
              [(f"K={k}", ["flows.1.strategy=s2", f"flows.1.k={k}"]) for k in (10, 60)]),
    "c1-s3": ("tfrcp-c1.toml",
              [(f"{n}", [f"flows.0.count={n}", f"flows.1.count={n}"]) for n in (5, 10, 15, 20, 25)],
              [("0.3s+[0,5.4s]", ["flows.1.strategy=s3", "flows.1.m_base=0.3s",
                                 "flows.1.m_spread=5.4s"])]),
    "pair": ("tfrcp-c1.toml",
             [("1 TCP + 1 TFRCP", PAIR)],
             [(m, [f"flows.1.m={m}"]) for m in ("2s", "3s", "5s", "8s")]),
    "c4": ("tfrcp-c4.toml",
           [(f"{n}", [f"flows.2.count={n}", "duration=2000s"]) for n in (20, 80)],
           [(m, [f"flows.1.m={m}"]) for m in ("2s", "3s", "5s", "8s")]),
}


def run(satcc, which, scenario, sets, seed):
    cmd = [satcc, which, os.path.join(ROOT, "scenarios", scenario), "--json",
           "--seed", str(seed)]
    if which == "run":
        cmd += ["--no-files", "-q"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    fr = json.loads(out)["friendliness"]
    return fr["f"] if fr else float("nan")


def _load_validation():
    # The median/SIQR of the satcc tables, so both scripts summarise alike.
    spec = importlib.util.spec_from_file_location(
        "tfrcp_validation", os.path.join(ROOT, "scripts", "tfrcp-validation.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


med_siqr = _load_validation().med_siqr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--only", action="append", choices=sorted(TABLES))
    a = ap.parse_args()
    names = a.only or list(TABLES)
    jobs = {}
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for name in names:
            sc, rows, cols = TABLES[name]
            for rl, rs in rows:
                for cl, cs in cols:
                    for which in ("run", "ns2"):
                        for seed in range(1, a.seeds + 1):
                            jobs[(name, rl, cl, which, seed)] = ex.submit(
                                run, a.satcc, which, sc, rs + cs, seed)
        for name in names:
            sc, rows, cols = TABLES[name]
            print(f"\n{name} ({sc}), F median ±SIQR over {a.seeds} seeds: satcc / ns-2\n")
            print("| | " + " | ".join(cl for cl, _ in cols) + " |")
            print("|---" * (len(cols) + 1) + "|")
            for rl, _ in rows:
                cells = []
                for cl, _ in cols:
                    part = []
                    for which in ("run", "ns2"):
                        v = [jobs[(name, rl, cl, which, s)].result() for s in range(1, a.seeds + 1)]
                        m, q = med_siqr(v)
                        part.append(f"{m:.2f} ±{q:.2f}")
                    cells.append(" / ".join(part))
                print(f"| {rl} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
