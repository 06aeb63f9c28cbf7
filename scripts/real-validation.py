#!/usr/bin/env python3
"""The simulator against real traffic (docs/validation.md, "Simulated
against real traffic"): TFRC, CCID3 and TFRCP flows over the GEO link
(10 Mb/s, 250 ms one way, 625 KB DropTail queue, PER 0 and 1e-3), run
for real with `satcc run --real` (each flow's endpoints on their own
loopback UDP sockets, the links emulated in process with the simulator's
queue and error-model code) and simulated with `satcc run`, from the
same scenario file.

    cargo build --release
    scripts/real-validation.py [--satcc PATH] [--flows 32] [--time 30]
                               [--real-seeds 2] [--sim-seeds 10]
                               [--real-cache real.json] [--sim-set host_jitter=none]

One run carries --flows independent copies of the link, one flow each
(the scenario's graph has a pair of nodes per copy), so a 30 s real run
gives --flows samples: with loss a 30 s flow sees a handful of loss
events and its goodput depends on where the first one falls, so single
runs cannot be compared, only means over many. Without loss the flows
are 4 (they fill their links). Real runs bind to 127.0.0.1 only.
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scenario(proto, per, secs, n):
    lines = [f'name = "real-vs-sim"', f'duration = "{secs}s"', "[topology]", 'kind = "graph"']
    lines.append("nodes = [" + ", ".join(f'{{ name = "a{i}" }}, {{ name = "b{i}" }}'
                                         for i in range(n)) + "]")
    for i in range(n):
        lines += ["[[topology.links]]", f'from = "a{i}"', f'to = "b{i}"', f'name = "geo{i}"',
                  'rate = "10Mbps"', 'delay = "250ms"',
                  'queue = { kind = "droptail", limit_bytes = "625KB" }']
        if per:
            lines.append(f'error = {{ kind = "uniform", per = {per} }}')
    for i in range(n):
        lines += ["[[flows]]", f'protocol = "{proto}"', f'src = "a{i}"', f'dst = "b{i}"',
                  "mss = 1000"]
    return "\n".join(lines) + "\n"


def run(satcc, text, seed, real, sets=()):
    """One run; `sets` are flow keys (`host_jitter=20us`) set on every flow."""
    n = text.count("[[flows]]")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(text)
        args = [satcc, "run", path, "--json", "-q", "--seed", str(seed)]
        for i in range(n):
            for kv in sets:
                args += ["--set", f"flows.{i}.{kv}"]
        if real:
            args.append("--real")
        p = subprocess.run(args, check=True, capture_output=True, text=True)
        late = sum(int(m) for m in re.findall(r"(\d+) timed wake-ups", p.stderr))
        s = json.loads(p.stdout)
    return ([f["goodput_bps"] for f in s["flows"]],
            [f.get("loss_event_rate") or 0.0 for f in s["flows"]], late)


def mean_se(v):
    m = statistics.mean(v)
    se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else 0.0
    return m, se


def no_loss_causes(satcc, secs):
    """The no-loss gap put into the simulator (docs/validation.md): TFRC,
    4 flows, seeds 1-5, with send jitter and the real packets' size."""
    print("| simulated with | mean [min–max] |")
    print("|---|---|")
    text = scenario("tfrc", 0, secs, 4)
    for label, sets in [('no jitter (`host_jitter = "none"`)', ["host_jitter=none"]),
                        ('`send_jitter = "20us"`', ["send_jitter=20us"]),
                        ('`send_jitter = "20us"`, `header_bytes = 56`',
                         ["send_jitter=20us", "header_bytes=56"]),
                        ('`host_jitter = "20us"`', ["host_jitter=20us"]),
                        ('`host_jitter = "20us"`, `header_bytes = 56`',
                         ["host_jitter=20us", "header_bytes=56"])]:
        g = []
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.toml")
            with open(path, "w") as f:
                f.write(text)
            for seed in range(1, 6):
                args = [satcc, "run", path, "--json", "-q", "--seed", str(seed)]
                for i in range(4):
                    for kv in sets:
                        args += ["--set", f"flows.{i}.{kv}"]
                out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
                g += [f["goodput_bps"] for f in json.loads(out)["flows"]]
        print(f"| {label} | {statistics.mean(g) / 1e6:.3f} [{min(g) / 1e6:.3f}–{max(g) / 1e6:.3f}] Mb/s |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--flows", type=int, default=32, help="independent links (and flows) with loss")
    ap.add_argument("--time", type=int, default=30)
    ap.add_argument("--real-seeds", type=int, default=2)
    ap.add_argument("--sim-seeds", type=int, default=10)
    ap.add_argument("--no-loss-causes", action="store_true",
                    help="only the simulator with send jitter and real packet sizes (seconds)")
    ap.add_argument("--sim-set", action="append", default=[], metavar="KEY=VALUE",
                    help="set a flow key on every simulated flow, e.g. host_jitter=none "
                         "(repeatable; the real runs are not changed)")
    ap.add_argument("--real-cache", metavar="PATH",
                    help="JSON file of the real runs' results: read if it exists (no real runs, "
                         "seconds instead of minutes), written after running them otherwise")
    a = ap.parse_args()
    if a.no_loss_causes:
        return no_loss_causes(a.satcc, a.time)
    cache = {}
    if a.real_cache and os.path.exists(a.real_cache):
        with open(a.real_cache) as f:
            cache = json.load(f)
    print("| protocol | PER | real goodput, mean ± s.e. (flows) | simulated goodput, mean ± s.e. (flows) "
          "| real / simulated | difference / combined s.e. | real p | simulated p | real late wake-ups |")
    print("|---|---|---|---|---|---|---|---|---|")
    for proto in ["tfrc", "ccid3", "tfrcp"]:
        for per in [0, 1e-3]:
            n = a.flows if per else 4
            text = scenario(proto, per, a.time, n)
            rg, rp, late = [], [], 0
            for k in range(1, a.real_seeds + 1):
                # One entry per real run, so that more seeds add runs.
                key = f"{proto} {per:g} flows={n} time={a.time} seed={k}"
                if key not in cache:
                    cache[key] = run(a.satcc, text, k, True)
                    if a.real_cache:
                        with open(a.real_cache + ".tmp", "w") as f:
                            json.dump(cache, f)
                        os.replace(a.real_cache + ".tmp", a.real_cache)
                g, p, l = cache[key]
                rg += g
                rp += p
                late += l
            sg, sp = [], []
            for k in range(1, a.sim_seeds + 1):
                g, p, _ = run(a.satcc, text, k, False, a.sim_set)
                sg += g
                sp += p
            (rm, rse), (sm, sse) = mean_se(rg), mean_se(sg)
            z = (rm - sm) / math.hypot(rse, sse) if (rse or sse) else float("nan")
            print(f"| {proto} | {per:g} | {rm / 1e6:.3f} ± {rse / 1e6:.3f} Mb/s ({len(rg)}) | "
                  f"{sm / 1e6:.3f} ± {sse / 1e6:.3f} Mb/s ({len(sg)}) | {rm / sm:.3f} | {z:+.1f} | "
                  f"{statistics.mean(rp):.5f} | {statistics.mean(sp):.5f} | {late} |", flush=True)


if __name__ == "__main__":
    main()
