#!/usr/bin/env python3
"""The simulator's TCP against Linux's (issue 27 item 4; docs/real.md,
"The simulator's TCP against Linux's").

Two links, each at packet error rate 0, 1e-3 and 1e-2 on the data
direction:

* `geo`: the preset (10 Mb/s both ways, 250 ms one way, DropTail of one
  bandwidth-delay product, 625 KB);
* `small`: 1 Mb/s both ways, 300 ms one way, DropTail of 10 packets
  (a fifth of the 50-packet bandwidth-delay product).

Kernel: `satcc shell --link FILE --seed K` with `satcc perf --server` as
the peer and `satcc perf --client --protocol tcp --cc reno --time T`
(SACK, timestamps and everything else the kernel does by default); the
goodput is the bytes acknowledged within T over T (TCP_INFO). Each run
is its own user and network namespaces (no privilege needed) and its own
error-model seed.

Simulated: the same link as a two-node `graph` scenario, one `sack` flow
for T, `mss = 1448` and `header_bytes = 52` (what the kernel puts in a
1500-byte packet with timestamps), goodput from summary.json, seeds 1..N.
Rows: the flow with the simulator's defaults, and with `profile =
"linux"` (TCP as Linux runs it).

    cargo build --release -p satcc-cli
    scripts/linux-validation.py [--satcc PATH] [--time 30] [--runs 4]
                                [--sim-seeds 10] [--links geo,small]
                                [--pers 0,1e-3,1e-2] [--json out.json]
    scripts/linux-validation.py --quick     # 15 s, 2 kernel runs a point

`--cc` picks the congestion control: `reno` (the default; simulated as
`sack`), `cubic` or `bbr` (simulated as the protocol of the same name,
issue 31).

Prints a Markdown table: per point the kernel's mean goodput ± its
standard error, each simulated row's mean ± s.e., and simulated / kernel
with its standard error (propagated from both).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Link keys (scenario link syntax, as `satcc shell --link` reads them).
LINKS = {
    "geo": 'rate = "10Mbps"\ndelay = "250ms"\n'
           'queue = { kind = "droptail", limit_bytes = "625KB" }\n',
    "small": 'rate = "1Mbps"\ndelay = "300ms"\n'
             'queue = { kind = "droptail", limit = 10 }\n',
}

# What the kernel puts in one 1500-byte IPv4 packet: 1448 bytes of payload
# behind 20 bytes of IP and 32 of TCP (20 + the 12-byte timestamp option).
MSS, HEADER = 1448, 52


def link_text(link, per):
    text = LINKS[link]
    if per:
        text += f'error = {{ kind = "uniform", per = {per!r} }}\n'
    return text


# The simulated protocol each kernel congestion control is compared with.
SIM_PROTOCOL = {"reno": "sack", "cubic": "cubic", "bbr": "bbr"}
CC = "reno"


def kernel_run(satcc, link, per, seed, secs):
    """Goodput (b/s) of one kernel flow (congestion control CC), with its
    retransmissions."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "link.toml")
        with open(path, "w") as f:
            f.write(link_text(link, per))
        summary = os.path.join(d, "shell.json")
        args = [satcc, "shell", "--link", path, "--seed", str(seed), "--summary", summary, "-q",
                "--peer", f"{satcc} perf --server >/dev/null 2>&1",
                "--", satcc, "perf", "--client", "100.64.0.2:5201", "--protocol", "tcp",
                "--cc", CC, "--time", f"{secs}s", "--json"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=secs + 120)
        if p.returncode != 0:
            sys.exit(f"kernel run failed ({p.returncode}): {' '.join(args)}\n{p.stderr}")
        c = json.loads(p.stdout)
        return c["bytes_acked"] * 8 / c["duration_s"], c["retransmits"]


def scenario(link, per, secs, profile):
    lk = link_text(link, per).strip().replace("\n", ", ")
    prof = f'profile = "{profile}"\n' if profile else ""
    return f"""name = "linux-validation"
duration = "{secs}s"
[topology]
kind = "graph"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
links = [{{ from = "a", to = "b", {lk} }}]
[[flows]]
protocol = "{SIM_PROTOCOL[CC]}"
src = "a"
dst = "b"
mss = {MSS}
header_bytes = {HEADER}
{prof}"""


def sim_runs(satcc, link, per, secs, profile, seeds):
    g, rx = [], []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(scenario(link, per, secs, profile))
        for seed in range(1, seeds + 1):
            out = subprocess.run([satcc, "run", path, "--json", "-q", "--seed", str(seed)],
                                 check=True, capture_output=True, text=True).stdout
            f = json.loads(out)["flows"][0]
            g.append(f["goodput_bps"])
            rx.append(f["retransmits"])
    return g, rx


def mean_se(xs):
    m = statistics.mean(xs)
    return m, (statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0)


def ratio(a, b):
    """a/b with its standard error, a and b as (mean, se)."""
    r = a[0] / b[0]
    return r, r * math.hypot(a[1] / a[0], b[1] / b[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--time", type=int, default=30, help="seconds of data per run")
    ap.add_argument("--runs", type=int, default=4, help="kernel runs (seeds) per point")
    ap.add_argument("--first-seed", type=int, default=1,
                    help="error-model seed of the first kernel run (the others follow)")
    ap.add_argument("--sim-seeds", type=int, default=10)
    ap.add_argument("--links", default="geo,small")
    ap.add_argument("--pers", default="0,1e-3,1e-2")
    ap.add_argument("--profiles", default="default,linux",
                    help="simulated rows: the simulator's defaults and/or profile = \"linux\"")
    ap.add_argument("--cc", default="reno", choices=sorted(SIM_PROTOCOL),
                    help="kernel congestion control (simulated: reno as sack, the others "
                    "as themselves)")
    ap.add_argument("--quick", action="store_true", help="15 s, 2 kernel runs, 4 seeds")
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--kernel-from", help="take the kernel runs from an earlier --json "
                    "(same --time) instead of running them: re-simulate only")
    a = ap.parse_args()
    global CC
    CC = a.cc
    sim = SIM_PROTOCOL[CC]
    if a.quick:
        a.time, a.runs, a.sim_seeds = 15, 2, 4
    profiles = a.profiles.split(",")
    print(f"T = {a.time} s, {a.runs} kernel runs and {a.sim_seeds} simulated seeds a point; "
          "goodput mean ± s.e. in Mb/s, ratio simulated / kernel ± s.e.\n")
    head = f"| link | PER | kernel {CC} | kernel retr. |"
    for p in profiles:
        head += f" sim {sim} ({p}) | ratio ({p}) | sim retr. ({p}) |"
    print(head)
    print("|" + "---|" * (4 + 3 * len(profiles)))
    rows = []
    old = {}
    if a.kernel_from:
        with open(a.kernel_from) as f:
            saved = json.load(f)
        if saved.get("cc", "reno") != CC:
            sys.exit(f"--kernel-from: runs of --cc {saved.get('cc', 'reno')}, not --cc {CC}")
        if saved["time_s"] != a.time:
            sys.exit(f"--kernel-from: runs of {saved['time_s']} s, not --time {a.time}")
        old = {(r["link"], r["per"]): r for r in saved["rows"]}
    for link in a.links.split(","):
        for per in [float(x) for x in a.pers.split(",")]:
            kg, kr = [], []
            if (link, per) in old:
                kg, kr = old[(link, per)]["kernel_bps"], old[(link, per)]["kernel_retransmits"]
            elif a.kernel_from:
                sys.exit(f"--kernel-from: no kernel runs for {link} at PER {per:g}")
            for seed in range(a.first_seed, a.first_seed + (a.runs if not a.kernel_from else 0)):
                g, r = kernel_run(a.satcc, link, per, seed, a.time)
                kg.append(g)
                kr.append(r)
            k = mean_se(kg)
            row = {"link": link, "per": per, "kernel_bps": kg, "kernel_retransmits": kr}
            line = (f"| {link} | {per:g} | {k[0] / 1e6:.3f} ± {k[1] / 1e6:.3f} "
                    f"| {statistics.mean(kr):.0f} |")
            for p in profiles:
                sg, sr = sim_runs(a.satcc, link, per, a.time, None if p == "default" else p,
                                  a.sim_seeds)
                s = mean_se(sg)
                r = ratio(s, k)
                row[f"sim_{p}_bps"] = sg
                row[f"sim_{p}_retransmits"] = sr
                line += (f" {s[0] / 1e6:.3f} ± {s[1] / 1e6:.3f} | {r[0]:.3f} ± {r[1]:.3f} "
                         f"| {statistics.mean(sr):.0f} |")
            print(line, flush=True)
            rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"time_s": a.time, "cc": CC, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
