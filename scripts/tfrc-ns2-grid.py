#!/usr/bin/env python3
"""TFRC `profile = "ns2"` against ns-2 2.35's Agent/TFRC on a grid of paths.

One TFRC flow alone on a dumbbell (access links 100 Mb/s, 1 ms each side,
bottleneck of --rate with one-way delay D and a DropTail buffer of B x BDP,
BDP = rate x 2 (D + 2 ms) / 1040 B), errors on the forward bottleneck
only, for every D x B x PER. Each cell runs `satcc ns2 --json` (which runs
the same scenario in ns-2 and in satcc with the same seed) over seeds
1..N (PER 0 is deterministic: one seed) and prints a markdown table of
satcc's mean goodput over ns-2's, with the standard error of that ratio
over the seeds (from the two samples' spreads) where there are several.

Usage:
  scripts/tfrc-ns2-grid.py                        # the full grid, 10 seeds
  scripts/tfrc-ns2-grid.py --delays 250 --buffers 2 --pers 0 --seeds 1
  scripts/tfrc-ns2-grid.py --rate 20 --delays 300 --buffers 2 --pers 0 --perturb 10
--starts 0,0.5,...,9.5 also runs every cell with the flow started that many
seconds into the run, pooled the same way: ns-2's clock is a double whose
rounding step doubles at every power of two of seconds, and where a
saturated slow start straddles one (t = 16 s on the GEO cells) its X_recv
changes in the last bits and decides the 2 X_recv tie; moving the start
moves the flow against those boundaries, which moving the delay by
microseconds does not (docs/validation.md, "Where ns-2's clock crosses
16 s").
--perturb N also runs every cell at the delays D + 1 us, ..., D + (N-1) us
and pools those runs as samples of the cell (with a standard error): ns-2's
double clock breaks slow start's ties at 2 X_recv and the receiver's
`now - last_report_sent >= rtt_` by the last bits of its sums of delays, so
on some deep-buffer paths one PER-0 run of ns-2 is one draw of several
outcomes (docs/validation.md, "TFRC profile ns2 on long-delay paths").
Needs `ns` (apt-get install -y ns2) and a release build of satcc.
"""

import argparse
import concurrent.futures as cf
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCENARIO = """\
name = "tfrc-ns2-grid"
duration = "{duration}s"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "{rate}Mbps"
delay = "{delay}ms"
queue = {{ kind = "droptail", limit = {limit} }}
{error}
[topology.access]
rate = "100Mbps"
delay = "1ms"
queue = {{ kind = "droptail", limit = 100000 }}
[[flows]]
protocol = "tfrc"
profile = "{profile}"
mss = 1000
header_bytes = 40
{start}"""


def bdp_packets(rate_mbps, delay_ms):
    """Packets of 1040 B in flight over the base RTT 2 (D + 2 ms)."""
    return rate_mbps * 1e6 * 2 * (delay_ms + 2) / 1000 / 8 / 1040


def scenario(rate, delay, buf, per, duration, profile, start=0.0):
    """The cell's scenario; with `start` > 0 the flow starts then and the
    run lasts `duration` more (both simulators measure the flow's goodput
    over its own lifetime)."""
    limit = max(2, round(buf * bdp_packets(rate, delay)))
    error = f'error = {{ kind = "uniform", per = {per:e} }}' if per > 0 else ""
    total = f"{duration + start:g}"
    first = f'start = "{start:g}s"\n' if start > 0 else ""
    return SCENARIO.format(rate=rate, delay=delay, limit=limit, error=error,
                           duration=total, profile=profile, start=first)


def run_one(satcc, text, seed):
    """(ns-2 goodput, satcc goodput) in b/s for one seed."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    try:
        out = subprocess.run([satcc, "ns2", f.name, "--json", "--seed", str(seed)],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    j = json.loads(out)
    return j["flows"][0]["goodput_bps"], j["satcc"]["flows"][0]["goodput_bps"]


def mean_sd(x):
    m = sum(x) / len(x)
    sd = math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1)) if len(x) > 1 else 0.0
    return m, sd


def cell_stats(pairs):
    """ratio of the means, its standard error (delta method) or None."""
    ns, sat = zip(*pairs)
    mn, sn = mean_sd(ns)
    ms, ss = mean_sd(sat)
    ratio = ms / mn
    if len(pairs) < 2:
        return ratio, None, mn, ms
    se = ratio * math.sqrt((ss / ms) ** 2 / len(sat) + (sn / mn) ** 2 / len(ns))
    return ratio, se, mn, ms


def fmt(c):
    ratio, se, _, _ = c
    s = f"{ratio:.3f}"
    if se is not None:
        s += f" ± {se:.3f}"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=10.0, help="bottleneck Mb/s (10)")
    ap.add_argument("--delays", default="10,50,100,200,300",
                    help="one-way bottleneck delays, ms (10,50,100,200,300)")
    ap.add_argument("--buffers", default="0.25,0.5,1,2",
                    help="DropTail limits in BDPs (0.25,0.5,1,2)")
    ap.add_argument("--pers", default="0,1e-3,1e-2", help="packet error rates (0,1e-3,1e-2)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds of the lossy cells (10)")
    ap.add_argument("--duration", type=int, default=300, help="seconds (300)")
    ap.add_argument("--profile", default="ns2", help="satcc's TFRC profile (ns2)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--perturb", type=int, default=1,
                    help="runs per seed at D, D + 1 us, ..., pooled as samples (1)")
    ap.add_argument("--starts", default="0",
                    help="flow start offsets, s, pooled as samples (0)")
    ap.add_argument("--json", action="store_true", help="print every cell as JSON instead")
    a = ap.parse_args()
    delays = [float(x) if "." in x else int(x) for x in a.delays.split(",")]
    bufs = [float(x) for x in a.buffers.split(",")]
    pers = [float(x) for x in a.pers.split(",")]
    try:
        starts = [float(x) for x in a.starts.split(",")]
    except ValueError:
        starts = [-1.0]
    if any(not math.isfinite(st) or st < 0 for st in starts):
        ap.error(f"--starts: offsets must be >= 0 seconds, got {a.starts!r}")

    jobs = {}
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for d in delays:
            for b in bufs:
                for p in pers:
                    for k in range(max(1, a.perturb)):
                        # Whole microseconds: the delay stays exact in
                        # satcc's nanoseconds and in the exported script.
                        dk = round(d + k / 1000, 3) if k else d
                        for j, st in enumerate(starts):
                            text = scenario(a.rate, dk, b, p, a.duration, a.profile, st)
                            for seed in range(1, (a.seeds if p > 0 else 1) + 1):
                                jobs[ex.submit(run_one, a.satcc, text, seed)] = \
                                    (d, b, p, (seed, k, j))
        res = {}
        for fut in cf.as_completed(jobs):
            d, b, p, seed = jobs[fut]
            res.setdefault((d, b, p), []).append((seed, fut.result()))
    cells = {k: cell_stats([r for _, r in sorted(v)]) for k, v in res.items()}

    if a.json:
        print(json.dumps([{"delay_ms": d, "buffer_bdp": b, "per": p, "ratio": c[0],
                           "se": c[1], "ns2_bps": c[2], "satcc_bps": c[3],
                           "runs": [r for _, r in sorted(res[(d, b, p)])]}
                          for (d, b, p), c in sorted(cells.items())]))
        return
    print(f"satcc `profile = \"{a.profile}\"` goodput / ns-2 Agent/TFRC goodput, "
          f"{a.rate:g} Mb/s bottleneck, {a.duration} s, mean of {a.seeds} seeds where "
          "PER > 0" + (f", each at {a.perturb} delays 1 us apart" if a.perturb > 1 else "")
          + (f", each with the flow started at {a.starts} s" if len(starts) > 1 else "")
          + " (± standard error of the ratio)\n")
    print("| one-way delay | buffer (BDP) | " + " | ".join(f"PER {p:g}" for p in pers) + " |")
    print("|---|---|" + "---|" * len(pers))
    worst = 0.0
    for d in delays:
        for b in bufs:
            row = [fmt(cells[(d, b, p)]) for p in pers]
            worst = max(worst, *(abs(cells[(d, b, p)][0] - 1) for p in pers))
            limit = max(2, round(b * bdp_packets(a.rate, d)))
            print(f"| {d} ms | {b:g} ({limit} pkts) | " + " | ".join(row) + " |")
    print(f"\nlargest |ratio - 1|: {worst:.3f}")


if __name__ == "__main__":
    sys.exit(main())
