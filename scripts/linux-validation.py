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
                                [--sim-seeds 200] [--links geo,small]
                                [--pers 0,1e-3,1e-2] [--json out.json]
    scripts/linux-validation.py --quick     # 15 s, 2 kernel runs a point

`--cc` picks the congestion control: `reno` (the default; simulated as
`sack`), `cubic` or `bbr` (simulated as the protocol of the same name,
issue 31).

Prints a Markdown table: per point the kernel's mean goodput ± its
standard error, each simulated row's mean ± s.e., and simulated / kernel
with its standard error (propagated from both). "1st error" is the mean
number of packets the link carried before its first error, over the
kernel runs' seeds and over the simulated seeds, beside its expectation:
at PER 1e-2 the seeds' luck in slow start moves the mean goodput more
than anything else (docs/real.md).
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


# Linux's per-namespace TCP counters (/proc/net/netstat, TcpExt) read
# around each kernel run: how many recoveries the retransmissions made,
# and whether any were undone, timed out or probed (docs/real.md).
COUNTERS = ["TCPSackRecovery", "TCPTimeouts", "TCPLossProbes", "TCPLossProbeRecovery",
            "TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo",
            "TCPSpuriousRTOs", "TCPLostRetransmit", "TCPFastRetrans",
            # CUBIC's HyStart (tcp_cubic.c): which test ended slow start and
            # at what cwnd (the *Cwnd counters add the cwnd at each exit).
            "TCPHystartTrainDetect", "TCPHystartTrainCwnd", "TCPHystartDelayDetect",
            "TCPHystartDelayCwnd", "TCPDelivered"]


def netstat(text):
    """TcpExt counters of a /proc/net/netstat."""
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            return dict(zip(head.split()[1:], map(int, vals.split()[1:])))
    return {}


# The error model's draws, to say how lucky a seed's slow start was: the
# packets a link carries before its first error. A mirror of
# crates/satcc-proto/src/rng.rs (xoshiro256++ seeded by SplitMix64,
# `Rng::stream`) and of the streams the two sides take: the simulator's
# link 0 error stream is `Rng::stream(seed, 1 << 32)` (sim/mod.rs
# STREAM_LINK), `satcc shell`'s forward link `Rng::stream(2·seed, 1)`
# (shell/bridge.rs, emu/link.rs err_rng). At PER 1e-2 on `geo` slow start
# decides much of a 30 s run (docs/real.md): a first error after 230
# packets lets cwnd reach 216 segments, one after 40 stops it at 40.
M64 = (1 << 64) - 1


def _splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def first_error(seed, stream_id, per, skip=0, limit=100000):
    """Packets before the first one `Rng::stream(seed, stream_id)` loses at
    uniform PER `per`, not counting the first `skip` (None at PER 0)."""
    if per <= 0:
        return None
    x = seed ^ ((stream_id * 0xD6E8FEB86659FD93) & M64)
    x, _ = _splitmix(x)
    x, z = _splitmix(x)
    x = z ^ stream_id
    st = []
    for _ in range(4):
        x, z = _splitmix(x)
        st.append(z)
    rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64  # noqa: E731
    for i in range(limit):
        r = (rotl((st[0] + st[3]) & M64, 23) + st[0]) & M64
        t = (st[1] << 17) & M64
        st[2] ^= st[0]
        st[3] ^= st[1]
        st[1] ^= st[2]
        st[0] ^= st[3]
        st[2] ^= t
        st[3] = rotl(st[3], 45)
        if i >= skip and (r >> 11) * (1.0 / (1 << 53)) < per:
            return i - skip
    return limit


def sim_first_error(seed, per):
    return first_error(seed, 1 << 32, per)


def shell_first_error(seed, per):
    # The kernel's first two packets on the forward link are the SYN and
    # the handshake's ACK: data starts at the third (an error on the SYN
    # delays the start by the SYN timeout but ends no slow start).
    return first_error(2 * seed, 1, per, skip=2)


def kernel_run(satcc, link, per, seed, secs):
    """Goodput (b/s) of one kernel flow (congestion control CC), with its
    retransmissions, the TcpExt counters (COUNTERS) it moved and the load
    average when it started."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "link.toml")
        with open(path, "w") as f:
            f.write(link_text(link, per))
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
        summary = os.path.join(d, "shell.json")
        ns0, ns1 = os.path.join(d, "ns0"), os.path.join(d, "ns1")
        # The counters are the client namespace's: read them inside the
        # shell, before and after the client.
        client = (f"cat /proc/net/netstat > {ns0}; {satcc} perf --client 100.64.0.2:5201 "
                  f"--protocol tcp --cc {CC} --time {secs}s --json; rc=$?; "
                  f"cat /proc/net/netstat > {ns1}; exit $rc")
        args = [satcc, "shell", "--link", path, "--seed", str(seed), "--summary", summary, "-q",
                "--peer", f"{satcc} perf --server >/dev/null 2>&1", "--", "sh", "-c", client]
        p = subprocess.run(args, capture_output=True, text=True, timeout=secs + 120)
        if p.returncode != 0:
            sys.exit(f"kernel run failed ({p.returncode}): {' '.join(args)}\n{p.stderr}")
        c = json.loads(p.stdout)
        with open(ns0) as f0, open(ns1) as f1:
            a, b = netstat(f0.read()), netstat(f1.read())
        counters = {k: b.get(k, 0) - a.get(k, 0) for k in COUNTERS}
        return c["bytes_acked"] * 8 / c["duration_s"], c["retransmits"], counters, load


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


def matched_ratio(sim, kernel, near=20):
    """Simulated / kernel goodput at equal luck: `sim` and `kernel` are
    (first error, goodput) per run. Each kernel run is paired with the mean
    goodput of the `near` simulated seeds whose first error is closest (on
    a log scale), and the ratio of the sums is taken (the ratio estimator;
    its standard error from the paired residuals). None without seeds."""
    if len(kernel) < 2 or len(sim) < near:
        return None
    pred = []
    for x, _ in kernel:
        close = sorted(sim, key=lambda t: abs(math.log1p(t[0]) - math.log1p(x)))[:near]
        pred.append(statistics.mean(g for _, g in close))
    g = [g for _, g in kernel]
    r = sum(pred) / sum(g)
    res = [p - r * x for p, x in zip(pred, g)]
    return r, statistics.stdev(res) / math.sqrt(len(g)) / statistics.mean(g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target", "release", "satcc"))
    ap.add_argument("--time", type=int, default=30, help="seconds of data per run")
    ap.add_argument("--runs", type=int, default=4, help="kernel runs (seeds) per point")
    ap.add_argument("--first-seed", type=int, default=1,
                    help="error-model seed of the first kernel run (the others follow)")
    # Simulations are cheap (milliseconds) and their goodput at PER 1e-2
    # is heavy-tailed (slow start): 10 seeds gave 0.315 where 200 give
    # 0.408 on `geo` (docs/real.md).
    ap.add_argument("--sim-seeds", type=int, default=200, help="simulated seeds per point")
    ap.add_argument("--links", default="geo,small")
    ap.add_argument("--pers", default="0,1e-3,1e-2")
    ap.add_argument("--profiles", default="default,linux",
                    help="simulated rows: the simulator's defaults and/or profile = \"linux\"; "
                    "`none` runs the kernel only (to join with --kernel-from later)")
    ap.add_argument("--cc", default="reno", choices=sorted(SIM_PROTOCOL),
                    help="kernel congestion control (simulated: reno as sack, the others "
                    "as themselves)")
    ap.add_argument("--quick", action="store_true", help="15 s, 2 kernel runs, 4 seeds")
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--kernel-from", action="append",
                    help="take the kernel runs from an earlier --json (same --time) instead "
                    "of running them: re-simulate only; given twice or more, each point's "
                    "runs are those of all the files together")
    a = ap.parse_args()
    global CC
    CC = a.cc
    sim = SIM_PROTOCOL[CC]
    if a.quick:
        a.time, a.runs, a.sim_seeds = 15, 2, 4
    profiles = [] if a.profiles == "none" else a.profiles.split(",")
    runs = "the saved kernel runs" if a.kernel_from else f"{a.runs} kernel runs"
    print(f"T = {a.time} s, {runs} and {a.sim_seeds} simulated seeds a point; "
          "goodput mean ± s.e. in Mb/s, ratio simulated / kernel ± s.e.\n")
    head = f"| link | PER | kernel {CC} (runs) | kernel retr. | 1st error k / s (exp.) |"
    for p in profiles:
        head += f" sim {sim} ({p}) | ratio ({p}) | at equal 1st error ({p}) | sim retr. ({p}) |"
    print(head)
    print("|" + "---|" * (5 + 4 * len(profiles)))
    rows = []
    old = {}
    if a.kernel_from:
        for path in a.kernel_from:
            with open(path) as f:
                saved = json.load(f)
            if saved.get("cc", "reno") != CC:
                sys.exit(f"--kernel-from {path}: runs of --cc {saved.get('cc', 'reno')}, "
                         f"not --cc {CC}")
            if saved["time_s"] != a.time:
                sys.exit(f"--kernel-from {path}: runs of {saved['time_s']} s, not --time {a.time}")
            for r in saved["rows"]:
                o = old.setdefault((r["link"], r["per"]), {"kernel_bps": [],
                                                           "kernel_retransmits": []})
                o["kernel_bps"] += r["kernel_bps"]
                o["kernel_retransmits"] += r["kernel_retransmits"]
                # Runs saved before the seeds and counters were recorded
                # have none: keep the lists aligned with the runs (None
                # where unknown).
                n = len(r["kernel_bps"])
                o.setdefault("kernel_seeds", []).extend(r.get("kernel_seeds", [None] * n))
                o.setdefault("kernel_counters", []).extend(r.get("kernel_counters", [None] * n))
                o.setdefault("kernel_load", []).extend(r.get("kernel_load", [None] * n))
    for link in a.links.split(","):
        for per in [float(x) for x in a.pers.split(",")]:
            kg, kr, kc, kl, ks = [], [], [], [], []
            if (link, per) in old:
                o = old[(link, per)]
                kg, kr = o["kernel_bps"], o["kernel_retransmits"]
                kc, kl, ks = o["kernel_counters"], o["kernel_load"], o["kernel_seeds"]
            elif a.kernel_from:
                sys.exit(f"--kernel-from: no kernel runs for {link} at PER {per:g}")
            for seed in range(a.first_seed, a.first_seed + (a.runs if not a.kernel_from else 0)):
                g, r, c, ld = kernel_run(a.satcc, link, per, seed, a.time)
                kg.append(g)
                kr.append(r)
                kc.append(c)
                kl.append(ld)
                ks.append(seed)
            k = mean_se(kg)
            row = {"link": link, "per": per, "kernel_bps": kg, "kernel_retransmits": kr,
                   "kernel_counters": kc, "kernel_load": kl, "kernel_seeds": ks}
            line = (f"| {link} | {per:g} | {k[0] / 1e6:.3f} ± {k[1] / 1e6:.3f} ({len(kg)}) "
                    f"| {statistics.mean(kr):.0f} |")
            # How far into the run each side's first error came, against
            # the expectation (1 - PER) / PER: the luck of the seeds.
            kf = [shell_first_error(x, per) for x in ks if x is not None]
            sf = [sim_first_error(x, per) for x in range(1, a.sim_seeds + 1)]
            if per > 0 and kf:
                line += f" {statistics.mean(kf):.0f} / {statistics.mean(sf):.0f} ({(1 - per) / per:.0f}) |"
            else:
                line += " |"
            for p in profiles:
                sg, sr = sim_runs(a.satcc, link, per, a.time, None if p == "default" else p,
                                  a.sim_seeds)
                s = mean_se(sg)
                r = ratio(s, k)
                row[f"sim_{p}_bps"] = sg
                row[f"sim_{p}_retransmits"] = sr
                m = None
                if per > 0:
                    m = matched_ratio(list(zip(sf, sg)),
                                      [(f, g) for f, g in zip(kf, [g for g, x in zip(kg, ks)
                                                                   if x is not None])])
                line += (f" {s[0] / 1e6:.3f} ± {s[1] / 1e6:.3f} | {r[0]:.3f} ± {r[1]:.3f} "
                         + (f"| {m[0]:.3f} ± {m[1]:.3f} " if m else "| – ")
                         + f"| {statistics.mean(sr):.0f} |")
            print(line, flush=True)
            rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"time_s": a.time, "cc": CC, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
