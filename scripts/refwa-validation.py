#!/usr/bin/env python3
"""Paper 003 (REFWA) tables for docs/validation.md.

Runs every scenarios/refwa-*.toml point with and without REFWA over seeds
1..N and prints markdown tables of the bottleneck utilization, loss (drops /
arrivals at the bottleneck), mean queue (packets and % of the buffer) and
Jain's index. Runs on the satcc Python package (docs/python.md):

    pip install ./python
    scripts/refwa-validation.py [--seeds N]

The "wall s" column is the wall time of each run (satcc.run, in process).
"""

import argparse
import os
import sys
import time
from collections import defaultdict

import satcc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scenario_with(scenario, sets):
    sc = satcc.Scenario.load(os.path.join(ROOT, "scenarios", scenario))
    for x in sets:
        sc = sc.set(*x.split("=", 1))
    return sc


def run(scenario, sets, seed):
    sc = scenario_with(scenario, sets)
    t0 = time.monotonic()
    summary = satcc.run(sc, seed=seed, series=False).summary
    return summary, time.monotonic() - t0


def link(summary, name):
    return next(l for l in summary["links"] if l["name"] == name)


def jain(x):
    s, q = sum(x), sum(v * v for v in x)
    return s * s / (len(x) * q) if q > 0 else 0.0


def mean(v):
    return sum(v) / len(v)


def point(scenario, sets, seeds, links, groups=None):
    """Mean over seeds of per-link (util, loss, queue) and Jain indices."""
    rows = []
    for seed in range(1, seeds + 1):
        s, wall = run(scenario, sets, seed)
        r = {"jain": s["jain"], "wall": wall}
        for l in links:
            ls = link(s, l)
            r[l] = (ls["utilization"], ls["loss"], ls["mean_queue_pkts"], ls["drops"])
        if groups:
            # Jain over the groups' mean per-flow goodputs (paper 003 Fig. 6
            # compares flows of different RTT groups).
            g = [mean([f["goodput_bps"] for f in s["flows"] if f["name"] == n]) for n in groups]
            r["groups"] = g
            r["jain_groups"] = jain(g)
        rows.append(r)
    out = {"jain": mean([r["jain"] for r in rows]), "wall": mean([r["wall"] for r in rows])}
    for l in links:
        out[l] = tuple(mean([r[l][i] for r in rows]) for i in range(4))
    if groups:
        out["groups"] = [mean([r["groups"][i] for r in rows]) for i in range(len(groups))]
        out["jain_groups"] = mean([r["jain_groups"] for r in rows])
    return out


def series(scenario, sets):
    """Run `scenario` and read its time series: per-time flow goodputs and
    the bottleneck isl.b0's (utilization, queue)."""
    r = satcc.run(scenario_with(scenario, sets))
    # Sample times come as ns * 1e-9 (0.30000000000000004 for 0.3 s):
    # rounded to the microsecond, so the windows below split where they
    # did on flows.csv's times.
    f = r.series("flows")
    g = defaultdict(dict)
    for t, fl, gp in zip(f["time_s"].tolist(), f["flow"].tolist(), f["goodput_bps"].tolist()):
        g[round(float(t), 6)][int(fl)] = float(gp)
    lk = r.series("links")
    links = {round(float(t), 6): (float(u), int(q))
             for t, n, u, q in zip(lk["time_s"].tolist(), lk["name"].tolist(),
                                   lk["utilization"].tolist(), lk["queue_pkts"].tolist())
             if n == "isl.b0"}
    return g, links


def stairstep(sets):
    """Scenario B's time series: per-window fairness, utilization, queue."""
    g, links = series("refwa-b-stairstep.toml", sets)
    ts = sorted(g)
    rows = []
    for a, b, n in [(1, 5, 4), (5, 6, 8), (6, 7, 8), (7, 15, 8), (15, 16, 4), (16, 20, 4)]:
        w = [t for t in ts if a < t <= b + 1e-9]
        per = [mean([g[t].get(f, 0.0) for t in w]) for f in range(n)]
        u = mean([links[t][0] for t in w])
        q = [links[t][1] for t in w]
        rows.append((f"{a}-{b} s ({n} flows)",
                     f"Jain {jain(per):.3f}, util {u * 100:.1f}%, queue {mean(q):.1f}/{max(q)}"))
    fair = 1.544e6 * 1000 / 1040 / 8
    reach = []
    for f in range(4, 8):
        hit = next((t for t in ts if t > 5 and
                    mean([g[x].get(f, 0.0) for x in ts if t - 0.5 < x <= t + 1e-9]) >= 0.7 * fair),
                   None)
        reach.append("never" if hit is None else f"{hit:.1f}")
    return rows, " / ".join(reach) + " s"


def cells(p, l, buf):
    u, loss, q, _ = p[l]
    return f"{u * 100:.1f}% | {loss * 100:.2f}% | {q:.1f} ({q / buf * 100:.0f}%)"


HEAD = "| {} | util | loss | mean queue pkts (% of buffer) | Jain |\n|---|---|---|---|---|"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    N = a.seeds
    on, off = ["refwa.enabled=true"], ["refwa.enabled=false"]
    groups = ["group1", "group2", "group3", "group4"]

    print(f"### A: φ/ψ grid (Fig. 2), T1, 8 flows, buffer 31, mean of seeds 1-{N}\n")
    print(HEAD.format("φ, ψ"))
    p = point("refwa-a-phi-psi.toml", off, N, ["isl.b0"])
    print(f"| NewReno | {cells(p, 'isl.b0', 31)} | {p['jain']:.3f} |")
    for phi in [0.5, 1.0, 1.5, 2.0, 2.5]:
        for psi in [0.25, 0.5, 1.0, 1.5]:
            p = point("refwa-a-phi-psi.toml", on + [f"refwa.phi={phi}", f"refwa.psi={psi}"],
                      N, ["isl.b0"])
            print(f"| {phi}, {psi} | {cells(p, 'isl.b0', 31)} | {p['jain']:.3f} |")

    print(f"\n### B: stair-step (Figs. 3-4), T1, 4 flows + 4 from 5 s to 15 s\n")
    print(HEAD.format("scheme"))
    for name, sets in [("NewReno", off), ("REFWA", on)]:
        p = point("refwa-b-stairstep.toml", sets, N, ["isl.b0"])
        print(f"| {name} | {cells(p, 'isl.b0', 31)} | {p['jain']:.3f} |")

    print("\nPer window (seed 1, 100 ms samples): Jain over the active flows, mean utilization, mean/max queue;"
          " then when each joining flow's 500 ms mean goodput first reaches 70% of the fair share C/8.\n")
    print("| window | NewReno | REFWA |\n|---|---|---|")
    ws = {name: stairstep(sets) for name, sets in [("NewReno", off), ("REFWA", on)]}
    for k in range(len(ws["REFWA"][0])):
        print(f"| {ws['REFWA'][0][k][0]} | {ws['NewReno'][0][k][1]} | {ws['REFWA'][0][k][1]} |")
    print(f"| joining flows at 70% of fair share | {ws['NewReno'][1]} | {ws['REFWA'][1]} |")

    print(f"\n### C: α sweep (Fig. 5), T1, 4 RTT groups × 2 flows, buffer 55\n")
    print("| α | util | loss | mean queue pkts (% of buffer) | Jain (flows) | per-flow goodput by group, kb/s (160/240/320/400 ms) |")
    print("|---|---|---|---|---|---|")
    p = point("refwa-c-fairness.toml", off, N, ["isl.b0"], groups)
    g = " / ".join(f"{x / 1e3:.0f}" for x in p["groups"])
    print(f"| NewReno | {cells(p, 'isl.b0', 55)} | {p['jain']:.3f} | {g} |")
    for alpha in [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]:
        p = point("refwa-c-fairness.toml", on + [f"refwa.alpha={alpha}"], N, ["isl.b0"], groups)
        g = " / ".join(f"{x / 1e3:.0f}" for x in p["groups"])
        print(f"| {alpha} | {cells(p, 'isl.b0', 55)} | {p['jain']:.3f} | {g} |")

    print(f"\n### C: link classes (Fig. 6), four RTT groups, α = 1\n")
    print("| ISL, flows | scheme | util | loss | mean queue pkts (% of buffer) | Jain (flows) | per-flow goodput by group, kb/s | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    cls = [("T1", 2, 55), ("T2", 8, 350), ("T3", 32, 1575)]
    for rate, n, buf in cls:
        for name, sets in [("NewReno", off), ("REFWA", on)]:
            ss = sets + [f"topology.isl_rate={rate}"] + [f"flows.{i}.count={n}" for i in range(4)]
            p = point("refwa-c-fairness.toml", ss, N, ["isl.b0"], groups)
            g = " / ".join(f"{x / 1e3:.0f}" for x in p["groups"])
            print(f"| {rate}, {4 * n} | {name} | {cells(p, 'isl.b0', buf)} | {p['jain']:.3f} | {g} | {p['wall']:.2f} |")
    for name, sets in [("NewReno", off), ("REFWA", on)]:
        p = point("refwa-c-oc3.toml", sets, 1, ["isl.b0"], groups)
        g = " / ".join(f"{x / 1e3:.0f}" for x in p["groups"])
        print(f"| OC3, 512 (seed 1) | {name} | {cells(p, 'isl.b0', 5425)} | {p['jain']:.3f} | {g} | {p['wall']:.2f} |")

    print(f"\n### D: RTT-estimate error σ (Fig. 7), T1, 4 groups × 2 flows\n")
    print(HEAD.format("σ"))
    p = point("refwa-d-rtt-error.toml", off, N, ["isl.b0"])
    print(f"| NewReno | {cells(p, 'isl.b0', 55)} | {p['jain']:.3f} |")
    for sigma in [0.0, 0.1, 0.3, 0.5, 0.7, 0.9]:
        p = point("refwa-d-rtt-error.toml", on + [f"refwa.rtt_error={sigma}"], N, ["isl.b0"])
        print(f"| {sigma} | {cells(p, 'isl.b0', 55)} | {p['jain']:.3f} |")

    print(f"\n### E: 10 FTP + ON/OFF flows (Fig. 8), T2, buffer 200\n")
    print("| ON/OFF flows | scheme | util | loss | mean queue pkts (% of buffer) | Jain (FTP flows) |")
    print("|---|---|---|---|---|---|")
    for n in [10, 20, 40, 60]:
        for name, sets in [("NewReno", off), ("REFWA", on)]:
            rows = []
            for seed in range(1, N + 1):
                s, _ = run("refwa-e-onoff.toml", sets + [f"flows.1.count={n}"], seed)
                ls = link(s, "isl.b0")
                ftp = [f["goodput_bps"] for f in s["flows"] if f["name"] == "ftp"]
                rows.append((ls["utilization"], ls["loss"], ls["mean_queue_pkts"], jain(ftp)))
            u, loss, q, j = (mean([r[i] for r in rows]) for i in range(4))
            print(f"| {n} | {name} | {u * 100:.1f}% | {loss * 100:.2f}% | {q:.1f} ({q / 200 * 100:.0f}%) | {j:.3f} |")

    print(f"\n### F: two bottlenecks (Figs. 10-12), T1, buffer 34\n")
    print("| link | scheme | util | loss | mean queue pkts (% of buffer) |")
    print("|---|---|---|---|---|")
    L = ["isl.b0", "isl.c1", "isl.b1", "isl.c3"]
    res = {}
    for name, sets in [("NewReno", off), ("REFWA", on)]:
        res[name] = point("refwa-f-two-bottlenecks.toml", sets, N, L,
                          ["group1", "group2", "group3"])
    for l, label in zip(L, ["L1 (isl.b0)", "L2 (isl.c1)", "L3 (isl.b1)", "L4 (isl.c3)"]):
        for name in res:
            print(f"| {label} | {name} | {cells(res[name], l, 34)} |")
    for name in res:
        g = " / ".join(f"{x / 1e3:.0f}" for x in res[name]["groups"])
        print(f"\n{name}: per-flow goodput by group 1/2/3 {g} kb/s, Jain over all flows {res[name]['jain']:.3f}")

    print(f"\n### G: packet error rate on up-links (Fig. 13), T2, 10 flows\n")
    print("| PER | NewReno util | REFWA util | NewReno Jain | REFWA Jain |")
    print("|---|---|---|---|---|")
    for per in ["1e-5", "1e-4", "1e-3", "1e-2", "0.05", "0.1", "0.2", "0.5"]:
        r = {}
        for name, sets in [("NewReno", off), ("REFWA", on)]:
            r[name] = point("refwa-g-per.toml", sets + [f"topology.uplink_error.per={per}"],
                            N, ["isl.b0"])
        print(f"| {per} | {r['NewReno']['isl.b0'][0] * 100:.1f}% | {r['REFWA']['isl.b0'][0] * 100:.1f}% "
              f"| {r['NewReno']['jain']:.3f} | {r['REFWA']['jain']:.3f} |")

    print("\n### Handover (dynamic virtual topology), T1, 4 flows at 160 ms + 4 at 240 ms moved to 160 ms at 10 s\n")
    print("Seed 1, per window: mean per-flow goodput of the two groups, bottleneck utilization, mean/max queue.\n")
    print("| window | NewReno | REFWA |\n|---|---|---|")
    hs = {name: handover(sets) for name, sets in [("NewReno", off), ("REFWA", on)]}
    for k in range(len(hs["REFWA"])):
        print(f"| {hs['REFWA'][k][0]} | {hs['NewReno'][k][1]} | {hs['REFWA'][k][1]} |")
    for name, sets in [("NewReno", off), ("REFWA", on)]:
        s, _ = run("refwa-handover.toml", sets, 1)
        print(f"\n{name}: bottleneck drops {link(s, 'isl.b0')['drops']}, Jain {s['jain']:.3f}")


def handover(sets):
    """The handover scenario's per-window group goodputs."""
    g, links = series("refwa-handover.toml", sets)
    ts = sorted(g)
    rows = []
    for a, b in [(2, 10), (10, 11), (11, 20)]:
        w = [t for t in ts if a < t <= b + 1e-9]
        g1 = mean([g[t][f] for t in w for f in range(4)]) / 1e3
        g2 = mean([g[t][f] for t in w for f in range(4, 8)]) / 1e3
        u = mean([links[t][0] for t in w])
        q = [links[t][1] for t in w]
        rows.append((f"{a}-{b} s", f"{g1:.0f} / {g2:.0f} kb/s, util {u * 100:.1f}%, queue {mean(q):.1f}/{max(q)}"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
