#!/usr/bin/env python3
"""CUBIC and Hybla against SACK on 4+4 dumbbells, satcc against ns-2 2.35
(issue 31; docs/validation.md "4+4 dumbbells against ns-2").

Each dumbbell: 4 flows of PROTO (cubic or hybla; ns-2: Agent/TCP/Linux
with `select_ca`) and 4 of sack (ns-2: Agent/TCP/Sack1) over one
DropTail bottleneck, 200 s, goodput from 50 s, start spread 2 s, rwnd
2000 segments, min_rto 200 ms. Two bottlenecks:

* `geo`: the GEO preset, 10 Mb/s, 250 ms one way, 625 KB of DropTail;
* `terrestrial`: 10 Mb/s, 20 ms one way, DropTail of 100 packets.

Normalized throughput of PROTO = its 4 flows' goodput over half of all 8
flows' goodput (1: an even share; 2: SACK starved). The same scenario
and seed run in satcc (`satcc run`) and ns-2 (`satcc ns2`).

    cargo build --release -p satcc-cli
    scripts/modern-tcp-ns2.py [--satcc PATH] [--seeds 10] [--sack-ns2]
                              [--cubic-variant linux-2.6.22] [--hybla-variant linux-2.6.22]
                              [--recovery ns2-linux]
                              [--links terrestrial] [--protos hybla]

`--sack-ns2` gives satcc's sack flows ns-2's Sack1 configuration
(`sack_recovery = "ns2"`, `rto_ssthresh = "window"`, `rtt_timing =
"karn"`) instead of RFC 6675. `--cubic-variant linux-2.6.22` gives the
cubic flows ns-2's own CUBIC v2.1 (`cubic_variant`; `satcc ns2` exports
it as the same `select_ca cubic`, so the ns-2 column does not change).
`--hybla-variant linux-2.6.22` likewise gives the hybla flows ns-2's
tcp_hybla.c (`hybla_variant`). `--recovery ns2-linux` gives the cubic
and hybla flows ns-2's Agent/TCP/Linux loss recovery (`sack_recovery =
"ns2-linux"`; the agent ns-2 runs anyway, so again the ns-2 column does
not change). `--links` and `--protos` restrict the dumbbells
(comma-separated). The last column counts the timeouts of PROTO's four
flows alone.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCENARIO = """name = "modern-tcp-dumbbell"
duration = "200s"
seed = 1
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
delay = "{delay}"
queue = {queue}
[topology.access]
rate = "100Mbps"
delay = "1ms"
[[flows]]
protocol = "{proto}"
count = 4
rwnd = 2000
min_rto = "200ms"
start_spread = "2s"
{proto_extra}
[[flows]]
protocol = "sack"
count = 4
rwnd = 2000
min_rto = "200ms"
start_spread = "2s"
{sack_extra}
[record]
measure_from = "50s"
"""

LINKS = {
    "geo": ("250ms", '{ kind = "droptail", limit_bytes = "625KB" }'),
    "terrestrial": ("20ms", '{ kind = "droptail", limit = 100 }'),
}

SACK_NS2 = 'sack_recovery = "ns2"\nrto_ssthresh = "window"\nrtt_timing = "karn"'


def normalized(flows, proto):
    total = sum(f["goodput_bps"] for f in flows)
    mine = sum(f["goodput_bps"] for f in flows if f["protocol"] == proto)
    return mine / (total / 2)


def run(satcc, tool, path, seed):
    args = [satcc, tool, path, "--json", "--seed", str(seed)]
    if tool == "run":
        args += ["-q", "--no-files"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["flows"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sack-ns2", action="store_true")
    ap.add_argument("--cubic-variant", choices=["rfc9438", "linux-2.6.22"], default=None)
    ap.add_argument("--hybla-variant", choices=["caini2004", "linux-2.6.22"], default=None)
    ap.add_argument("--recovery", choices=["rfc6675", "ns2-linux"], default=None)
    ap.add_argument("--links", default=",".join(LINKS))
    ap.add_argument("--protos", default="cubic,hybla")
    a = ap.parse_args()
    print(f"seeds 1-{a.seeds}; normalized throughput mean (sd); timeouts per run, all 8 flows\n")
    print("| dumbbell | protocol | ns-2 | satcc | difference | timeouts ns-2 / satcc "
          "| of which PROTO's |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for link in a.links.split(","):
            delay, queue = LINKS[link]
            for proto in a.protos.split(","):
                extra = ""
                if proto == "cubic" and a.cubic_variant:
                    extra = f'cubic_variant = "{a.cubic_variant}"'
                if proto == "hybla" and a.hybla_variant:
                    extra = f'hybla_variant = "{a.hybla_variant}"'
                if a.recovery:
                    extra += f'\nsack_recovery = "{a.recovery}"'
                path = os.path.join(d, f"{link}-{proto}.toml")
                with open(path, "w") as f:
                    f.write(SCENARIO.format(delay=delay, queue=queue, proto=proto,
                                            proto_extra=extra,
                                            sack_extra=SACK_NS2 if a.sack_ns2 else ""))
                res = {}
                for tool in ["ns2", "run"]:
                    ns, to, tp = [], [], []
                    for seed in range(1, a.seeds + 1):
                        flows = run(a.satcc, tool, path, seed)
                        ns.append(normalized(flows, proto))
                        to.append(sum(f["timeouts"] or 0 for f in flows))
                        tp.append(sum(f["timeouts"] or 0 for f in flows
                                      if f["protocol"] == proto))
                    res[tool] = (statistics.mean(ns), statistics.stdev(ns), statistics.mean(to),
                                 statistics.mean(tp))
                n, s = res["ns2"], res["run"]
                print(f"| {link} | {proto} | {n[0]:.3f} ({n[1]:.3f}) | {s[0]:.3f} ({s[1]:.3f}) "
                      f"| {s[0] - n[0]:+.3f} | {n[2]:.1f} / {s[2]:.1f} "
                      f"| {n[3]:.1f} / {s[3]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
