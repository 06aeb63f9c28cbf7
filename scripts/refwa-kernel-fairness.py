#!/usr/bin/env python3
"""Paper 003 C (Figs. 5-6) with the kernel's TCP: four RTT groups of two
flows each through one T1 link in `satcc shell`, with and without REFWA
(`--refwa forward`), Jain's index of the flows' goodputs beside the
simulator's `scenarios/refwa-c-fairness.toml` (docs/validation.md,
"REFWA on kernel TCP (issue 30)").

The setup mirrors the scenario: a 1.544 Mb/s link, 20 ms one way,
DropTail 55 packets both ways; four peers behind it with 60, 100, 140 and
180 ms more one way (`--peer-delay`), so the RTTs are 160, 240, 320 and
400 ms as the groups' (2i+2) x 40 ms; segments of 1000 bytes (MTU 1052,
so REFWA's packet is the simulated one); all eight flows start at once
and run `--time`.

    scripts/refwa-kernel-fairness.py --cc reno cubic --runs 2 --time 20s

Prints one row per (cc, REFWA, run) and the mean Jain per (cc, REFWA);
the load average at the start and end of each run, since the machine's
load shows in real-time runs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DELAYS_MS = [60, 100, 140, 180]
PER_GROUP = 2
LINK = 'rate = "1.544Mbps"\ndelay = "20ms"\nqueue = { kind = "droptail", limit = 55 }\n'


def jain(xs):
    s = sum(xs)
    q = sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else float("nan")


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def one_run(satcc, cc, refwa, time, work):
    link = os.path.join(work, "link.toml")
    with open(link, "w") as f:
        f.write(LINK)
    for name in os.listdir(work):
        if name.endswith(".json"):
            os.remove(os.path.join(work, name))
    clients = " ".join(
        f"{satcc} perf --client $SATCC_PEER_{k + 1}:5201 --protocol tcp --cc {cc} "
        f"--time {time} --json > {work}/g{k + 1}-{j}.json &"
        for k in range(len(DELAYS_MS))
        for j in range(PER_GROUP)
    )
    cmd = [
        satcc, "shell", "-q", "--link", link, "--mtu", "1052",
        "--peer-delay", ",".join(f"{d}ms" for d in DELAYS_MS),
        "--summary", f"{work}/shell.json",
        "--peer", f"{satcc} perf --server --bind $SATCC_SELF:5201",
    ]
    if refwa:
        cmd += ["--refwa", "forward"]
    cmd += ["--", "/bin/sh", "-c", f"sleep 0.5; {clients} wait"]
    before = loadavg()
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = loadavg()
    if p.returncode != 0:
        sys.exit(f"satcc shell failed ({p.returncode}): {p.stderr}")
    groups = []
    for k in range(len(DELAYS_MS)):
        g = []
        for j in range(PER_GROUP):
            with open(f"{work}/g{k + 1}-{j}.json") as f:
                g.append(json.load(f)["send_rate_bps"])
        groups.append(g)
    with open(f"{work}/shell.json") as f:
        s = json.load(f)
    fwd = s["links"][0]
    return groups, fwd, before, after


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target/release/satcc"))
    ap.add_argument("--cc", nargs="+", default=["reno", "cubic"])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--time", default="20s")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="satcc-refwa-kernel-")
    os.chmod(work, 0o777)
    print("| cc | REFWA | run | Jain (8 flows) | per-flow goodput by group, kb/s (160/240/320/400 ms) "
          "| link drops | max queue | load avg (start, end) |")
    print("|---|---|---|---|---|---|---|---|")
    means = {}
    for cc in a.cc:
        for refwa in (False, True):
            for r in range(a.runs):
                groups, fwd, before, after = one_run(a.satcc, cc, refwa, a.time, work)
                flows = [x for g in groups for x in g]
                j = jain(flows)
                means.setdefault((cc, refwa), []).append(j)
                per = " / ".join(f"{sum(g) / len(g) / 1e3:.0f}" for g in groups)
                print(f"| {cc} | {'on' if refwa else 'off'} | {r + 1} | {j:.3f} | {per} "
                      f"| {fwd['drops']} | {fwd['max_queue_pkts']} | {before}, {after} |",
                      flush=True)
    print()
    for (cc, refwa), js in means.items():
        print(f"{cc} REFWA {'on' if refwa else 'off'}: mean Jain {sum(js) / len(js):.3f} over {len(js)} runs")


if __name__ == "__main__":
    main()
