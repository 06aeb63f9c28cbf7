#!/usr/bin/env python3
"""TFRC and paper 001 (CCID3) tables for docs/validation.md, from satcc sweeps.

Runs the sweeps named in docs/validation.md ("TCP-friendliness sweep" and
"Paper 001: CCID3 with dynamic feedback") and prints their markdown tables.
Usage:

    pip install ./python        # the satcc package (docs/python.md)
    scripts/tfrc-validation.py [--only friendliness|ccid3] [--set KEY=VALUE ...] [--store DIR]

`--set` is passed to every sweep (e.g. `--set flows.0.oscillation_damping=false`
to see what one RFC 5348 knob contributes); with `--store DIR`, runs already
in DIR (the store of `satcc sweep --store`) are not run again (the
friendliness sweep only: paper 001's runs need their time series, which the
store does not keep, and take about a minute).
"""

import argparse
import os

import satcc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORE = None


def sweep(scenario, vary, seeds, sets):
    """The sweep as the CLI's `--json` gave it: one (vary, runs) pair per
    point, in grid order, runs being the seeds' summaries."""
    sc = satcc.Scenario.load(os.path.join(ROOT, "scenarios", scenario))
    for s in sets:
        sc = sc.set(*s.split("=", 1))
    df = satcc.sweep(sc, vary=vary, seeds=seeds, store=STORE, with_summary=True)
    pts = []
    for i in range(0, len(df), seeds):
        block = df.iloc[i:i + seeds]
        pts.append(({k: block.iloc[0][k.split("+")[0]] for k in vary}, list(block["summary"])))
    return pts


def friendliness(sets):
    pts = sweep("tfrc-friendliness.toml",
                {"topology.bottleneck.rate": ["1Mbps", "4Mbps", "16Mbps", "64Mbps"],
                 "flows.0.count+flows.1.count": [1, 4, 16, 32]}, 3, sets)
    print("| bottleneck | flows (TCP+TFRC) | TCP window (pkts/RTT) "
          "| normalized TCP throughput (3 seeds) | mean | in [0.7, 1.3] |")
    print("|---|---|---|---|---|---|")
    for vary, runs in pts:
        rate, n = vary["topology.bottleneck.rate"], vary["flows.0.count+flows.1.count"]
        norms, windows = [], []
        for r in runs:
            tcp = [f for f in r["flows"] if f["protocol"] == "sack"]
            all_g = sum(f["goodput_bps"] for f in r["flows"])
            tcp_g = sum(f["goodput_bps"] for f in tcp)
            # Normalized TCP throughput: TCP's aggregate over its fair half.
            norms.append(tcp_g / (all_g / 2))
            # A flow that never had an RTT sample (at 1 Mb/s with 32 + 32 a
            # TCP flow can spend the whole run in timeout backoff) delivered
            # nothing: its window is 0.
            windows.append(sum(f["goodput_bps"] * (f["mean_rtt_s"] or 0) / 8000
                               for f in tcp) / len(tcp))
        mean = sum(norms) / len(norms)
        ok = "yes" if 0.7 <= mean <= 1.3 else "no"
        print(f"| {rate} | {n}+{n} | {sum(windows) / len(windows):.1f} | "
              f"{' / '.join(f'{x:.2f}' for x in norms)} | {mean:.2f} | {ok} |")


# Paper 001's scenarios: (file, label) in table order.
CCID3_SCENARIOS = [
    ("ccid3-slowstart.toml", "slowstart (RTT 1 s, 1 Mb/s, PER 1e-4, 120 s)"),
    ("ccid3-ipstar.toml", "ipstar, uniform (RTT 1.2 s, 1 Mb/s, PER 0.33 %, 300 s)"),
    ("ccid3-ipstar-ge.toml", "ipstar, **GE** (same, bursty errors)"),
]


def settle(rows, exit_s):
    """(R back, rate back) after the slow-start exit at `exit_s`, from a
    flow's time series (time, R, X) sampled every 100 ms: the seconds
    until the sender's RTT estimate R, past its highest point of the 60 s
    after the exit, is back within 10 % of the smallest R of the run (None
    if it never rose above that: no queue to forget), and the seconds until the allowed rate X, past its
    lowest point of the 40 s after the exit, reaches 90 % of its mean over
    40-60 s after the exit (the level it settles at; paper 001 Fig. 2's
    "loss recovery after the slow start phase"). None if the run ends
    first."""
    if exit_s is None:
        return None, None
    rs = [(t, r) for t, r, _ in rows if r == r]
    base = min(r for _, r in rs)
    r_back = None
    after = [(t, r) for t, r in rs if exit_s <= t <= exit_s + 60]
    if after and max(r for _, r in after) > 1.1 * base:
        peak = max(after, key=lambda e: e[1])[0]
        r_back = next((t - exit_s for t, r in rs if t > peak and r <= 1.1 * base), None)
    late = [x for t, _, x in rows if exit_s + 40 <= t <= exit_s + 60]
    x_back = None
    if late:
        level = sum(late) / len(late)
        window = [(t, x) for t, _, x in rows if exit_s <= t <= exit_s + 40]
        trough = min(window, key=lambda e: e[1])[0]
        x_back = next((t - exit_s for t, _, x in rows if t > trough and x >= 0.9 * level), None)
    return r_back, x_back


def ccid3_point(scenario, sets, seeds):
    """One (scenario, settings) point over seeds 1..seeds: the means the
    tables print."""
    sc = satcc.Scenario.load(os.path.join(ROOT, "scenarios", scenario)).set("record.interval", "100ms")
    for s in sets:
        sc = sc.set(*s.split("=", 1))
    runs = []
    for seed in range(1, seeds + 1):
        r = satcc.run(sc, seed=seed)
        f = r.summary["flows"][0]
        ser = r.series("flows")
        ser = ser[ser["flow"] == 0]
        rows = list(zip(ser["time_s"].astype(float), ser["rtt_s"].astype(float), ser["rate_bps"].astype(float)))
        loss = next(l for l in r.summary["links"] if l["name"] == "downlink")["loss"]
        runs.append((f, loss, settle(rows, f["slow_start_exit_s"])))

    def mean(vals):
        vals = [v for v in vals if v is not None]
        return (sum(vals) / len(vals) if vals else None, len(vals))

    rec = [f["loss_recovery"] for f, _, _ in runs]
    recovered = sum(x.get("recovered", 0) for x in rec)
    return {
        "goodput": mean([f["goodput_bps"] for f, _, _ in runs])[0],
        "ss": mean([f["slow_start_exit_s"] for f, _, _ in runs])[0],
        "first": mean([x.get("first_s") for x in rec]),
        # Over all recovered events of all seeds: each seed's mean_s
        # weighted by its number of recovered events.
        "rec_mean": (sum(x["mean_s"] * x["recovered"] for x in rec if x.get("recovered"))
                     / recovered) if recovered else None,
        "events": sum(x["events"] for x in rec) / len(rec),
        "recovered": recovered / len(rec),
        "loss": sum(l for _, l, _ in runs) / len(runs),
        "r_back": mean([s[0] for _, _, s in runs]),
        "x_back": mean([s[1] for _, _, s in runs]),
        "seeds": seeds,
    }


def fmt_s(v, n=None, seeds=None):
    s = "—" if v is None else f"{v:.1f} s"
    return s if n is None or n == seeds else f"{s} ({n}/{seeds})"


def ccid3(sets, seeds=10):
    """Paper 001 (docs/validation.md): the table of the three scenarios,
    both profiles and both policies, then the readings of the lost buffer
    size."""
    print("| scenario | profile | policy | goodput | SS left | recovery first | recovery mean "
          "| events (recovered) | loss | R back | rate back |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for scenario, label in CCID3_SCENARIOS:
        for profile in ["rfc5348", "ns2"]:
            base = None
            for policy in ["standard", "dynamic"]:
                m = ccid3_point(scenario, sets + [f"flows.0.profile={profile}",
                                                  f"flows.0.feedback={policy}"], seeds)
                g, ss = m["goodput"], m["ss"]
                if base is None:
                    base = (g, ss)
                    gs, sss = f"{g / 1000:.1f} kb/s", f"{ss:.2f} s"
                else:
                    gs = f"{g / 1000:.1f} kb/s ({(g / base[0] - 1) * 100:+.1f} %)"
                    sss = f"{ss:.2f} s ({ss - base[1]:+.2f} s)"
                first, nf = m["first"]
                first_s = "—" if first is None else f"{first:.1f} s"
                print(f"| {label if (profile, policy) == ('rfc5348', 'standard') else ''} "
                      f"| {profile if policy == 'standard' else ''} | {policy} | {gs} | {sss} "
                      f"| {first_s} ({nf}/{seeds}) | {fmt_s(m['rec_mean'])} "
                      f"| {m['events']:.1f} ({m['recovered']:.1f}) | {m['loss'] * 100:.2f} % "
                      f"| {fmt_s(*m['r_back'], seeds)} | {fmt_s(*m['x_back'], seeds)} |")
    print()
    print("Readings of the downlink buffer (profile rfc5348 unless named; "
          "BDP = 125 packets on slowstart, 150 on ipstar):")
    print()
    print("| scenario | buffer | goodput standard → dynamic | SS left | R back | rate back | loss |")
    print("|---|---|---|---|---|---|---|")
    for scenario, label, bdp, extra in [
            ("ccid3-slowstart.toml", "slowstart", 125, []),
            ("ccid3-slowstart.toml", "slowstart, ns2 profile", 125, ["flows.0.profile=ns2"]),
            ("ccid3-ipstar-ge.toml", "ipstar GE", 150, [])]:
        # 50 packets: ns-2's default queue limit_ (tcl/lib/ns-default.tcl).
        for limit in [50, bdp // 2, bdp, 2 * bdp, 4 * bdp]:
            st, dy = (ccid3_point(scenario, sets + extra + [f"topology.downlink.queue.limit={limit}",
                                                            f"flows.0.feedback={p}"], seeds)
                      for p in ["standard", "dynamic"])
            print(f"| {label} | {limit} ({limit / bdp:.2g} BDP) "
                  f"| {st['goodput'] / 1000:.1f} → {dy['goodput'] / 1000:.1f} kb/s "
                  f"({(dy['goodput'] / st['goodput'] - 1) * 100:+.1f} %) "
                  f"| {st['ss']:.2f} → {dy['ss']:.2f} s ({dy['ss'] - st['ss']:+.2f} s) "
                  f"| {fmt_s(*st['r_back'], seeds)} → {fmt_s(*dy['r_back'], seeds)} "
                  f"| {fmt_s(*st['x_back'], seeds)} → {fmt_s(*dy['x_back'], seeds)} "
                  f"| {st['loss'] * 100:.2f} → {dy['loss'] * 100:.2f} % |")
    print()
    print("The RTT filter (RFC 5348 §4.3 step 2, `rtt_filter_q`): each policy with the "
          "other's memory per RTT (0.9^10 = 0.349 for ten reports per RTT, "
          "0.9^(1/10) = 0.99 for one):")
    print()
    print("| scenario | buffer | standard q 0.9 | standard q 0.349 | dynamic q 0.9 | dynamic q 0.99 "
          "| gain, q 0.9 both | gain, same memory per RTT (std 0.349 / dyn 0.99) |")
    print("|---|---|---|---|---|---|---|---|")
    for scenario, label, bdp in [("ccid3-slowstart.toml", "slowstart", 125),
                                 ("ccid3-ipstar-ge.toml", "ipstar GE", 150)]:
        for limit in [bdp, 2 * bdp]:
            g = {}
            for policy, q in [("standard", "0.9"), ("standard", "0.349"),
                              ("dynamic", "0.9"), ("dynamic", "0.99")]:
                g[policy, q] = ccid3_point(scenario, sets + [
                    f"topology.downlink.queue.limit={limit}", f"flows.0.feedback={policy}",
                    f"flows.0.rtt_filter_q={q}"], seeds)["goodput"]
            base = g["standard", "0.9"]
            print(f"| {label} | {limit} ({limit / bdp:.2g} BDP) "
                  + "".join(f"| {g[k] / 1000:.1f} kb/s " for k in
                            [("standard", "0.9"), ("standard", "0.349"),
                             ("dynamic", "0.9"), ("dynamic", "0.99")])
                  + f"| {(g['dynamic', '0.9'] / base - 1) * 100:+.1f} % "
                  f"| {(g['dynamic', '0.9'] / g['standard', '0.349'] - 1) * 100:+.1f} % / "
                  f"{(g['dynamic', '0.99'] / base - 1) * 100:+.1f} % |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["friendliness", "ccid3"])
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--store", default=None, help="results store directory (default: keep nothing)")
    a = ap.parse_args()
    global STORE
    STORE = a.store
    if a.only in (None, "friendliness"):
        print("### TCP-friendliness sweep\n")
        friendliness(a.sets)
        print()
    if a.only in (None, "ccid3"):
        print("### Paper 001\n")
        ccid3(a.sets)


if __name__ == "__main__":
    main()
