#!/usr/bin/env python3
"""Single GEO flows like for like against ns-2 2.35's Agent/TCP/Linux
(issue 31; docs/validation.md "Single flows over 200 seeds").

Each protocol runs as ns-2 runs it on both sides: ns-2's own loss
recovery (`sack_recovery = "ns2-linux"`, which `satcc ns2` exports as
Agent/TCP/Linux) and, for cubic and hybla, ns-2's own Linux 2.6.22
modules (`cubic_variant` / `hybla_variant = "linux-2.6.22"`); `reno` is
satcc's `sack` with that recovery, exported as `select_ca reno`. The
scenario is `scenarios/modern-tcp-geo.toml` (the GEO preset link, 120 s);
the same scenario and seed run in satcc (`satcc run`) and ns-2 (`satcc
ns2`). Neither simulator shares the other's random draws, and on this
path when the first error comes decides much of a run, so ten seeds
leave a standard error of 10-15 % on each mean: the default is 200.

    cargo build --release -p satcc-cli
    scripts/modern-tcp-ns2-single.py [--seeds 200] [--pers 1e-3,1e-2]
                                     [--protos cubic,reno,hybla] [--json FILE]

Prints per protocol and PER the two means with their standard errors and
the ratio satcc / ns-2 with its standard error (propagated from both).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, "scenarios", "modern-tcp-geo.toml")

SETS = {
    "cubic": ["flows.0.protocol=cubic", "flows.0.cubic_variant=linux-2.6.22"],
    "reno": ["flows.0.protocol=sack"],
    "hybla": ["flows.0.protocol=hybla", "flows.0.hybla_variant=linux-2.6.22"],
}


def goodput(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)["flows"][0]["goodput_bps"] / 1e6


def mean_se(x):
    return statistics.mean(x), statistics.stdev(x) / math.sqrt(len(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--pers", default="1e-3,1e-2")
    ap.add_argument("--protos", default=",".join(SETS))
    ap.add_argument("--json", metavar="FILE", help="write every run's goodput here")
    a = ap.parse_args()
    if a.seeds < 2:
        sys.exit(f"--seeds {a.seeds}: at least 2 (a standard error needs two runs)")
    protos = a.protos.split(",")
    for p in protos:
        if p not in SETS:
            sys.exit(f"--protos: '{p}' is not one of {', '.join(SETS)}")
    pers = []
    for p in a.pers.split(","):
        try:
            v = float(p)
        except ValueError:
            sys.exit(f"--pers: '{p}' is not a number")
        if not 0 <= v < 1:
            sys.exit(f"--pers: {p} is not a packet error rate in [0, 1)")
        pers.append(p)
    if not os.access(a.satcc, os.X_OK):
        sys.exit(f"--satcc {a.satcc}: not an executable (cargo build --release -p satcc-cli)")
    runs = {}
    print(f"{'protocol':8} {'PER':>6} {'satcc':>15} {'ns-2':>15} {'ratio':>15}   (seeds 1-{a.seeds})")
    for proto in protos:
        for per in pers:
            sets = SETS[proto] + ["flows.0.sack_recovery=ns2-linux", f"topology.bottleneck.error.per={per}"]
            args = [x for s in sets for x in ("--set", s)]
            sat, ns = [], []
            for seed in range(1, a.seeds + 1):
                common = [SCENARIO, *args, "--seed", str(seed)]
                sat.append(goodput([a.satcc, "run", *common, "--json", "--no-files", "-q"]))
                ns.append(goodput([a.satcc, "ns2", *common, "--json"]))
            (ms, ss), (mn, sn) = mean_se(sat), mean_se(ns)
            ratio = ms / mn
            se = ratio * math.sqrt((ss / ms) ** 2 + (sn / mn) ** 2)
            print(f"{proto:8} {per:>6} {ms:7.3f} ± {ss:5.3f} {mn:7.3f} ± {sn:5.3f} {ratio:7.3f} ± {se:5.3f}", flush=True)
            runs[f"{proto} {per}"] = {"satcc": sat, "ns2": ns}
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(runs, f)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
