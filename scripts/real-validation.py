#!/usr/bin/env python3
"""The simulator against real traffic (docs/validation.md, "Simulated
against real"): one TFRC, CCID3 or TFRCP flow over the emulator's GEO
preset (10 Mb/s, 250 ms one-way, one-BDP DropTail queue) on loopback for
30 s, beside `satcc sweep` of the same link and flow over seeds 1..N.

    cargo build --release
    scripts/real-validation.py [--satcc PATH] [--seeds N] [--time 30]

Real runs bind to 127.0.0.1 only and take --time + a few seconds each.
Wall-clock pacing suffers on a loaded machine: the client's
`late_wakeups` is printed beside each real run.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINK = """rate = "10Mbps"
delay = "250ms"
queue = {{ kind = "droptail", limit_bytes = "625KB" }}
{error}"""

SCENARIO = """name = "real-vs-sim"
duration = "{secs}s"
[topology]
kind = "graph"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
[[topology.links]]
from = "a"
to = "b"
name = "geo"
{link}
[[flows]]
protocol = "{proto}"
src = "a"
dst = "b"
mss = 1000
"""


def real(satcc, proto, per, secs, port, seed):
    err = f'error = {{ kind = "uniform", per = {per} }}' if per else ""
    with tempfile.TemporaryDirectory() as d:
        link = os.path.join(d, "link.toml")
        with open(link, "w") as f:
            f.write(LINK.format(error=err))
        srv_addr, emu_addr = f"127.0.0.1:{port + 1}", f"127.0.0.1:{port}"
        server = subprocess.Popen([satcc, "perf", "--server", "--bind", srv_addr,
                                   "--time", f"{secs + 8}s", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        emu = subprocess.Popen([satcc, "emulate", "--listen", emu_addr, "--to", srv_addr,
                                "--link", link, "--duration", f"{secs + 6}s", "--seed", str(seed)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            client = subprocess.run([satcc, "perf", "--client", emu_addr, "--protocol", proto,
                                     "--time", f"{secs}s", "--json"],
                                    check=True, capture_output=True, text=True, timeout=secs + 30)
            rep = json.loads(client.stdout)
            out, _ = server.communicate(timeout=secs + 30)
        finally:
            for p in (server, emu):
                if p.poll() is None:
                    p.kill()
                    p.wait()
        # The server prints one JSON object per finished client, a line each.
        peers = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        goodput = max((p["goodput_bps"] for p in peers), default=0.0)
        return goodput, rep.get("loss_event_rate"), rep.get("mean_rtt_s"), rep.get("late_wakeups")


def sim(satcc, proto, per, secs, seeds):
    err = f'error = {{ kind = "uniform", per = {per} }}' if per else ""
    text = SCENARIO.format(secs=secs, link=LINK.format(error=err), proto=proto)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(text)
        # `--vary` needs a key: the seed list is the sweep, the value a no-op.
        out = subprocess.run([satcc, "sweep", path, "--json", "--seeds", str(seeds),
                              "--vary", f"flows.0.mss=1000"],
                             check=True, capture_output=True, text=True).stdout
    runs = json.loads(out)[0]["runs"]
    g = [r["flows"][0]["goodput_bps"] for r in runs]
    p = [r["flows"][0].get("loss_event_rate") or 0.0 for r in runs]
    return g, p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--time", type=int, default=30)
    ap.add_argument("--port", type=int, default=47200)
    ap.add_argument("--real-seeds", type=int, default=3,
                    help="emulator seeds per lossy real case (the loss pattern is random)")
    a = ap.parse_args()
    print("| protocol | PER | real goodput (emulator seeds, mean [min–max]) | "
          "simulated goodput (seeds 1–%d, mean [min–max]) | "
          "real / simulated | real p | simulated p | real late wake-ups |" % a.seeds)
    print("|---|---|---|---|---|---|---|---|")
    for proto in ["tfrc", "ccid3", "tfrcp"]:
        for per in [0, 1e-3]:
            runs = [real(a.satcc, proto, per, a.time, a.port, k)
                    for k in range(1, (a.real_seeds if per else 1) + 1)]
            rg = [r[0] for r in runs]
            rp = statistics.mean(r[1] or 0.0 for r in runs)
            late = sum(r[3] or 0 for r in runs)
            sg, sp = sim(a.satcc, proto, per, a.time, a.seeds)
            m, rm = statistics.mean(sg), statistics.mean(rg)
            print(f"| {proto} | {per:g} | {rm / 1e6:.2f} [{min(rg) / 1e6:.2f}–{max(rg) / 1e6:.2f}] Mb/s "
                  f"({len(rg)}) | {m / 1e6:.2f} "
                  f"[{min(sg) / 1e6:.2f}–{max(sg) / 1e6:.2f}] Mb/s | {rm / m:.2f} | "
                  f"{rp:.5f} | {statistics.mean(sp):.5f} | {late} |", flush=True)


if __name__ == "__main__":
    main()
