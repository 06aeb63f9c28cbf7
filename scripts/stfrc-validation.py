#!/usr/bin/env python3
"""Paper 000 (STFRC for Saratoga) tables and the Fig. 12 plot for
docs/validation.md, from satcc sweeps of scenarios/stfrc-sym.toml and
scenarios/stfrc-asym.toml.

    pip install ./python        # the satcc package (docs/python.md)
    scripts/stfrc-validation.py [--only NAME] [--seeds N] [--svg PATH]

NAME is one of fig4, fig5, cov, trace, ratio, status, compare. Every table
is printed as markdown; --svg writes the Fig. 12 trace (default
docs/stfrc-fig12.svg).
"""

import argparse
import io
import itertools
import math
import os
import statistics
import tempfile

import satcc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYM = os.path.join(ROOT, "scenarios", "stfrc-sym.toml")
ASYM = os.path.join(ROOT, "scenarios", "stfrc-asym.toml")


def bw_point(mbps, red=True):
    """Table 1's queue for a bottleneck of `mbps`: limit BW*25, RED
    thresholds 3 + 1.5 BW and 10 + 5 BW."""
    lim = max(int(round(mbps * 25)), 1)
    if red:
        return f"{mbps}Mbps:{lim}:{3 + 1.5 * mbps:g}:{10 + 5 * mbps:g}"
    return f"{mbps}Mbps:{lim}"


def sweep(scenario, varies, seeds, sets=()):
    """A sweep in `satcc sweep`'s terms (`--vary KEY=V1,V2` with `A+B`
    keys and `x:y` tuples, `--set KEY=VALUE`), run by the package: a list
    of {"vary": [[key, value as written], ...], "runs": [summary per
    seed]}, points in grid order (the first key slowest)."""
    sc = satcc.Scenario.load(scenario)
    for s in sets:
        sc = sc.set(*s.split("=", 1))
    vary, axes = {}, []
    for v in varies:
        key, values = v.split("=", 1)
        toks = values.split(",")
        joint = len(key.split("+")) > 1
        # Values stay strings: the package reads them as the command line
        # does (a TOML value if one, else the string).
        vary[key] = [tuple(t.split(":")) if joint and ":" in t else t for t in toks]
        axes.append([(key, t) for t in toks])
    df = satcc.sweep(sc, vary=vary, seeds=seeds, store=None, with_summary=True)
    pts = []
    for i, combo in enumerate(itertools.product(*axes)):
        block = df.iloc[i * seeds:(i + 1) * seeds]
        pts.append({"vary": [list(c) for c in combo], "runs": list(block["summary"])})
    return pts


def norm_tcp(run):
    """Paper 000 §4-b I: aggregate TCP goodput over half the bottleneck's
    capacity."""
    bott = next(l for l in run["links"] if l["name"] == "bottleneck")
    tcp = sum(f["goodput_bps"] for f in run["flows"] if f["protocol"] == "sack")
    return tcp / (bott["rate_bps"] / 2)


def cell(vals):
    m = statistics.mean(vals)
    return f"{m:.2f} ({min(vals):.2f}–{max(vals):.2f})"


BWS = [1, 4, 16, 64]
NS = [1, 4, 16, 64]


def fig4(seeds):
    print("#### Fig. 4: normalized TCP throughput, symmetric links "
          f"(mean and range over seeds 1–{seeds})\n")
    for queue, red, sr in [("Drop-Tail", False, 0.75), ("RED", True, 0.65)]:
        if red:
            key = ("topology.bottleneck.rate+topology.bottleneck.queue.limit+"
                   "topology.bottleneck.queue.min_th+topology.bottleneck.queue.max_th")
            sets = [f"flows.1.symmetry_ratio={sr}"]
        else:
            key = "topology.bottleneck.rate+topology.bottleneck.queue.limit"
            sets = ['topology.bottleneck.queue={kind="droptail", limit=100}',
                    f"flows.1.symmetry_ratio={sr}"]
        pts = sweep(SYM, [key + "=" + ",".join(bw_point(b, red) for b in BWS),
                                 "flows.0.count+flows.1.count=" + ",".join(map(str, NS))],
                    seeds, sets)
        grid = {}
        for p in pts:
            v = dict(p["vary"])
            bw = v[key].split(":")[0]
            n = v["flows.0.count+flows.1.count"]
            grid[(bw, n)] = [norm_tcp(r) for r in p["runs"]]
        print(f"{queue} (symmetry ratio {sr}):\n")
        print("| bottleneck | " + " | ".join(f"{n}+{n} flows" for n in NS) + " |")
        print("|---|" + "---|" * len(NS))
        for b in BWS:
            print(f"| {b} Mb/s | " + " | ".join(cell(grid[(f'{b}Mbps', str(n))]) for n in NS) + " |")
        print()


def fig5(seeds):
    print("#### Figs. 5–8: asymmetric links, RED, normalized TCP throughput, "
          "STATUS feedback and the STFRC RTT "
          f"(mean over seeds 1–{seeds})\n")
    key = ("topology.links.3.rate+topology.links.3.queue.limit+"
           "topology.links.3.queue.min_th+topology.links.3.queue.max_th")
    bws = [1, 4, 16, 32]
    ns = [1, 4, 16]  # per flow line: 4, 16, 64 flows of each protocol
    print("| uplink | bottleneck | flows (TCP+STFRC) | normalized TCP | STATUS rate | "
          "uplink use | STFRC RTT | TCP RTT |")
    print("|---|---|---|---|---|---|---|---|")
    for up in ["3.84Mbps", "384kbps", "38.4kbps"]:
        pts = sweep(ASYM, [key + "=" + ",".join(bw_point(b) for b in bws),
                                  "flows.0.count+flows.1.count+flows.2.count+flows.3.count="
                                  + ",".join(map(str, ns))],
                    seeds, [f"topology.links.0.reverse_rate={up}"])
        for p in pts:
            v = dict(p["vary"])
            bw = v[key].split(":")[0]
            n = int(v["flows.0.count+flows.1.count+flows.2.count+flows.3.count"]) * 4
            runs = p["runs"]
            norms = [norm_tcp(r) for r in runs]
            fb = statistics.mean(sum(f["feedback_bytes"] or 0 for f in r["flows"]
                                     if f["protocol"] == "stfrc") * 8 / r["duration_s"]
                                 for r in runs)
            use = statistics.mean(next(l for l in r["links"] if l["name"] == "satlink.rev")
                                  ["utilization"] for r in runs)
            rtt_s = statistics.mean(statistics.mean(f["mean_rtt_s"] for f in r["flows"]
                                                    if f["protocol"] == "stfrc") for r in runs)
            rtt_t = statistics.mean(statistics.mean(f["mean_rtt_s"] for f in r["flows"]
                                                    if f["protocol"] == "sack") for r in runs)
            print(f"| {up} | {bw} | {n}+{n} | {cell(norms)} | {fb / 1000:.1f} kb/s | "
                  f"{use * 100:.0f} % | {rtt_s * 1000:.0f} ms | {rtt_t * 1000:.0f} ms |")
    print()


# TCP as ns-2 2.35's Agent/TCP/Sack1 runs it (the paper's simulator): one
# RTT sample per window with Karn's rule instead of timestamps on every
# ACK, ns-2's SACK recovery, ssthresh from the window on a timeout.
NS2_TCP = ["flows.0.rtt_timing=karn", "flows.0.sack_recovery=ns2",
           "flows.0.rto_ssthresh=window"]


def cov(seeds):
    print("#### Figs. 9–11: per-flow fairness, 32 + 32 flows, RED, symmetric links "
          f"(seeds 1–{seeds})\n")
    key = ("topology.bottleneck.rate+topology.bottleneck.queue.limit+"
           "topology.bottleneck.queue.min_th+topology.bottleneck.queue.max_th")
    bws = [2, 4, 8, 16, 32, 64]
    vary = [key + "=" + ",".join(bw_point(b) for b in bws)]
    pts = sweep(SYM, vary, seeds)
    ns2 = sweep(SYM, vary, seeds, NS2_TCP)
    print("| bottleneck | loss rate | TCP CoV | STFRC CoV | STFRC lower | "
          "normalized per-flow throughput, TCP (min–max) | STFRC (min–max) | "
          "loss rate, ns-2's TCP | TCP CoV, ns-2's TCP | STFRC CoV | STFRC lower |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")

    def stats(p):
        loss, ct, cs, lo_t, hi_t, lo_s, hi_s = [], [], [], [], [], [], []
        for r in p["runs"]:
            bott = next(l for l in r["links"] if l["name"] == "bottleneck")
            loss.append(bott["loss"])
            share = bott["rate_bps"] / len(r["flows"])
            for proto, c, lo, hi in [("sack", ct, lo_t, hi_t), ("stfrc", cs, lo_s, hi_s)]:
                g = [f["goodput_bps"] for f in r["flows"] if f["protocol"] == proto]
                c.append(statistics.pstdev(g) / statistics.mean(g))
                lo.append(min(g) / share)
                hi.append(max(g) / share)
        return (statistics.mean(loss), statistics.mean(ct), statistics.mean(cs),
                min(lo_t), max(hi_t), min(lo_s), max(hi_s))

    for p, q in zip(pts, ns2):
        bw = dict(p["vary"])[key].split(":")[0]
        loss, t, s, lo_t, hi_t, lo_s, hi_s = stats(p)
        loss2, t2, s2 = stats(q)[:3]
        print(f"| {bw} | {loss * 100:.1f} % | {t:.3f} | {s:.3f} | "
              f"{'yes' if s < t else 'no'} | {lo_t:.2f}–{hi_t:.2f} | "
              f"{lo_s:.2f}–{hi_s:.2f} | {loss2 * 100:.1f} % | {t2:.3f} | {s2:.3f} | "
              f"{'yes' if s2 < t2 else 'no'} |")
    print()


def ratio(seeds):
    print("#### §5: symmetry ratio and STATUS frequency, 32 + 32 flows, 16 Mb/s RED "
          f"(mean and range over seeds 1–{seeds})\n")
    pts = sweep(SYM, ["flows.1.symmetry_ratio=0.5,0.6,0.65,0.7,0.75"], seeds)
    print("| symmetry ratio | normalized TCP | STFRC loss event rate |")
    print("|---|---|---|")
    for p in pts:
        sr = dict(p["vary"])["flows.1.symmetry_ratio"]
        pe = statistics.mean(statistics.mean(f["loss_event_rate"] for f in r["flows"]
                                             if f["protocol"] == "stfrc") for r in p["runs"])
        print(f"| {sr} | {cell([norm_tcp(r) for r in p['runs']])} | {pe:.4f} |")
    print()
    print("| Saratoga sender | STATUS requests per RTT | normalized TCP | STFRC loss event rate | "
          "STFRC retransmissions per lost packet |")
    print("|---|---|---|---|---|")
    for ts, label in [("true", "timestamps: re-sends a hole once per RTT"),
                      ("false", "no timestamps: re-sends every hole each STATUS lists")]:
        pts = sweep(SYM, ["flows.1.status_per_rtt=1,2,4"], seeds,
                    [f"flows.1.timestamps={ts}"])
        for p in pts:
            k = dict(p["vary"])["flows.1.status_per_rtt"]
            st = [[f for f in r["flows"] if f["protocol"] == "stfrc"] for r in p["runs"]]
            pe = statistics.mean(statistics.mean(f["loss_event_rate"] for f in fl) for fl in st)
            rx = statistics.mean(sum(f["retransmits"] for f in fl)
                                 / max(sum(f["drops"] for f in fl), 1) for fl in st)
            print(f"| {label} | {k} | {cell([norm_tcp(r) for r in p['runs']])} | "
                  f"{pe:.4f} | {rx:.2f} |")
    print()


def compare(seeds):
    print("#### STFRC beside RFC 5348 TFRC and fixed-rate Saratoga, 16 Mb/s RED, symmetric "
          f"(mean and range over seeds 1–{seeds})\n")
    print("| flows (TCP+other) | STFRC | TFRC | Saratoga at 2× its fair share |")
    print("|---|---|---|---|")
    text = open(SYM).read()
    at = text.index('protocol = "stfrc"')
    end = text.index("\n\n", at)
    with tempfile.TemporaryDirectory() as d:
        for n in [4, 16, 32]:
            row = []
            # The STFRC keys do not apply to the others: swap the flow line.
            for line in (None, 'protocol = "tfrc"\nmss = 1000',
                         f'protocol = "saratoga"\nmss = 996\nrate = "{16 / n:.4g}Mbps"'):
                path = SYM
                if line:
                    path = os.path.join(d, "variant.toml")
                    with open(path, "w") as f:
                        f.write(text[:at] + line + '\nstart_spread = "2s"' + text[end:])
                pts = sweep(path, [f"flows.0.count+flows.1.count={n}"], seeds)
                row.append(cell([norm_tcp(r) for r in pts[0]["runs"]]))
            print(f"| {n}+{n} | " + " | ".join(row) + " |")
    print()


def trace(svg):
    print("#### Fig. 12: sending rate of one STFRC and one TCP flow (32 + 32, 16 Mb/s RED)\n")
    df = satcc.run(SYM).series("flows")
    cols = ["flow", "time_s", "rate_bps", "cwnd", "rtt_s"]
    rows = [dict(zip(cols, r)) for r in zip(*(df[c].tolist() for c in cols))]

    def num(x):
        # Columns that do not apply to a protocol are null (pandas NA).
        try:
            v = float(x)
        except TypeError:
            return None
        return None if math.isnan(v) else v

    pick = {"sack": "0", "stfrc": "32"}
    series = {}
    for proto, fid in pick.items():
        pts = []
        for r in rows:
            if int(r["flow"]) != int(fid):
                continue
            t = float(r["time_s"])
            if proto == "stfrc":
                v = num(r["rate_bps"]) or 0.0
            else:
                cw, rtt = num(r["cwnd"]), num(r["rtt_s"])
                v = cw * 1040 * 8 / rtt if cw and rtt else 0.0
            pts.append((t, v))
        series[proto] = pts
    # How deep each reduction is: successive 100 ms samples in the last
    # 60 s, a drop of more than 5 % counts as a reduction.
    print("| flow | reductions in the last 60 s | median depth (new/old) | deepest |")
    print("|---|---|---|---|")
    for proto, pts in series.items():
        cuts = [b / a for (ta, a), (tb, b) in zip(pts, pts[1:])
                if ta >= 140 and a > 0 and b < 0.95 * a]
        if cuts:
            print(f"| {proto} #{pick[proto]} | {len(cuts)} | {statistics.median(cuts):.2f} "
                  f"| {min(cuts):.2f} |")
    print()
    write_svg(svg, series)
    print(f"Plot: [{os.path.relpath(svg, os.path.join(ROOT, 'docs'))}]"
          f"({os.path.relpath(svg, os.path.join(ROOT, 'docs'))})\n")


def write_svg(path, series):
    w, h, pad = 800, 300, 50
    t0, t1 = 140.0, 200.0
    vmax = max(v for pts in series.values() for t, v in pts if t0 <= t <= t1) * 1.05
    colors = {"sack": "#d62728", "stfrc": "#1f77b4"}
    out = io.StringIO()
    out.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
              f'font-family="sans-serif" font-size="12">\n'
              f'<rect width="{w}" height="{h}" fill="white"/>\n')
    out.write(f'<line x1="{pad}" y1="{h - pad}" x2="{w - 10}" y2="{h - pad}" stroke="black"/>\n'
              f'<line x1="{pad}" y1="10" x2="{pad}" y2="{h - pad}" stroke="black"/>\n')
    for k in range(7):
        t = t0 + k * 10
        x = pad + (t - t0) / (t1 - t0) * (w - pad - 10)
        out.write(f'<text x="{x:.0f}" y="{h - pad + 15}" text-anchor="middle">{t:.0f}</text>\n')
    for k in range(5):
        v = vmax * k / 4
        y = h - pad - v / vmax * (h - pad - 10)
        out.write(f'<text x="{pad - 5}" y="{y:.0f}" text-anchor="end">{v / 1e6:.1f}</text>\n')
    out.write(f'<text x="{w / 2}" y="{h - 10}" text-anchor="middle">time (s)</text>\n'
              f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" '
              f'text-anchor="middle">sending rate (Mb/s)</text>\n')
    for i, (proto, pts) in enumerate(series.items()):
        xy = " ".join(f"{pad + (t - t0) / (t1 - t0) * (w - pad - 10):.1f},"
                      f"{h - pad - v / vmax * (h - pad - 10):.1f}"
                      for t, v in pts if t0 <= t <= t1)
        out.write(f'<polyline fill="none" stroke="{colors[proto]}" stroke-width="1" points="{xy}"/>\n')
        out.write(f'<text x="{w - 120}" y="{25 + 15 * i}" fill="{colors[proto]}">'
                  f'{"TCP SACK" if proto == "sack" else "STFRC"}</text>\n')
    out.write("</svg>\n")
    tmp = path + ".partial"
    with open(tmp, "w") as f:
        f.write(out.getvalue())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["fig4", "fig5", "cov", "trace", "ratio", "compare"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cov-seeds", type=int, default=10)
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "stfrc-fig12.svg"))
    a = ap.parse_args()
    steps = {
        "fig4": lambda: fig4(a.seeds),
        "fig5": lambda: fig5(a.seeds),
        "cov": lambda: cov(a.cov_seeds),
        "trace": lambda: trace(a.svg),
        "ratio": lambda: ratio(a.seeds),
        "compare": lambda: compare(a.seeds),
    }
    for name, f in steps.items():
        if a.only in (None, name):
            f()


if __name__ == "__main__":
    main()
