#!/usr/bin/env python3
"""`satcc saratoga` over the emulator against the simulator
(docs/validation.md, "satcc saratoga over the emulator").

For each link (the `dmc` preset; the `geo` preset with a packet error
rate of 1e-3 each way), file size (0 B, 1 B, 1 MB, 100 MB; powers of 10)
and rate (STFRC; a fixed rate at the link's capacity), one real PUT:

    satcc saratoga serve DIR --bind 127.0.0.1:P+1 &
    satcc emulate --listen 127.0.0.1:P --to 127.0.0.1:P+1 --link LINK &
    satcc saratoga put FILE 127.0.0.1:P --json [--rate R]

with the file's SHA-256 compared with the received file's, beside the
simulator's completion time for the same link, protocol and file
(`satcc run` of a one-file scenario, `mean_file_time_s`). Then the
goodput check: 100 MB at a fixed 100 Mb/s with 1400-byte payloads over
`dmc` (1e-4 errors). And `--only share`: an STFRC PUT of 30 MB beside a
60 s TFRC `satcc perf` flow through one emulated GEO link (`satcc emulate
--route`), against the simulator's two flows on the same link.

    cargo build --release
    scripts/saratoga-validation.py [--satcc PATH] [--only dmc|geo|goodput]
        [--sizes 0,1,1000000] [--out results.jsonl]

Real runs bind to 127.0.0.1 only. The STFRC PUT of 100 MB over the lossy
GEO link runs about 20 minutes (STFRC's equation allows well under
1 Mb/s at p = 1e-3 and a 0.5 s RTT); the rest about 5 minutes. Times
move with the machine's load: `uptime` is recorded beside each run.
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINKS = {
    # The `dmc` preset (satcc emulate --preset dmc --print-link).
    "dmc": """rate = "100Mbps"
reverse_rate = "38.4kbps"
delay = "10ms"
queue = { kind = "droptail", limit = 1000 }
reverse_queue = { kind = "droptail", limit = 50 }
error = { kind = "uniform", per = 1e-4 }
""",
    # The `geo` preset with a packet error rate of 1e-3 each way.
    "geo": """rate = "10Mbps"
delay = "250ms"
queue = { kind = "droptail", limit_bytes = "625KB" }
error = { kind = "uniform", per = 1e-3 }
reverse_error = { kind = "uniform", per = 1e-3 }
""",
}

CAPACITY = {"dmc": "100Mbps", "geo": "10Mbps"}

SCENARIO = """name = "saratoga-file"
duration = "{secs}s"
[topology]
kind = "graph"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
[[topology.links]]
from = "a"
to = "b"
name = "l"
{link}
[[flows]]
protocol = "{proto}"
src = "a"
dst = "b"
mss = {payload}
{rate}
app = {{ kind = "files", size = {size}, count = 1 }}
"""


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def load():
    return os.getloadavg()[0]


def real(satcc, link, size, rate, payload, port, seed, tmp):
    src = os.path.join(tmp, f"src-{size}")
    if not os.path.exists(src):
        with open(src, "wb") as f:
            left = size
            while left:
                n = min(left, 1 << 20)
                f.write(os.urandom(n))
                left -= n
    inbox = tempfile.mkdtemp(dir=tmp)
    link_file = os.path.join(tmp, f"{link}.toml")
    with open(link_file, "w") as f:
        f.write(LINKS[link])
    srv_addr, emu_addr = f"127.0.0.1:{port + 1}", f"127.0.0.1:{port}"
    server = subprocess.Popen([satcc, "saratoga", "serve", inbox, "--bind", srv_addr, "-q",
                               "--timeout", "120s"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    emu = subprocess.Popen([satcc, "emulate", "--listen", emu_addr, "--to", srv_addr,
                            "--link", link_file, "--seed", str(seed)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    args = [satcc, "saratoga", "put", src, emu_addr, "--as", "f", "--json", "-q",
            "--timeout", "120s", "--payload", str(payload)]
    if rate:
        args += ["--rate", rate]
    before = load()
    try:
        c = subprocess.run(args, capture_output=True, text=True, timeout=3600)
        rep = json.loads(c.stdout) if c.stdout.strip() else {"ok": False, "error": c.stderr}
    finally:
        for p in (server, emu):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    dst = os.path.join(inbox, "f")
    rep["identical"] = os.path.exists(dst) and sha256(dst) == sha256(src)
    rep["load"] = [round(before, 2), round(load(), 2)]
    return rep


def sim(satcc, link, size, rate, payload, tmp):
    if size == 0:
        return None  # the simulator's files are at least 1 byte
    proto = "saratoga" if rate else "stfrc"
    rate_line = f'rate = "{rate}"' if rate else ""
    secs = 4000 if size >= 10_000_000 else 600
    path = os.path.join(tmp, "sim.toml")
    with open(path, "w") as f:
        f.write(SCENARIO.format(secs=secs, link=LINKS[link], proto=proto, payload=payload,
                                rate=rate_line, size=size))
    out = subprocess.run([satcc, "run", path, "--json", "-q"], check=True,
                         capture_output=True, text=True, timeout=3600).stdout
    f = json.loads(out)["flows"][0]
    return f.get("mean_file_time_s") if f.get("files_completed") else None


SHARE_SIM = """name = "stfrc-tfrc-geo"
duration = "60s"
[topology]
kind = "graph"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
[[topology.links]]
from = "a"
to = "b"
name = "geo"
rate = "10Mbps"
delay = "250ms"
queue = {{ kind = "droptail", limit_bytes = "625KB" }}
[[flows]]
protocol = "tfrc"
src = "a"
dst = "b"
mss = 1000
[[flows]]
protocol = "stfrc"
src = "a"
dst = "b"
mss = 1024
{app}
"""


def share(satcc, port, seed, tmp, size=30_000_000, secs=60):
    """STFRC PUT and TFRC perf through one GEO link (two routes)."""
    src = os.path.join(tmp, f"share-{size}")
    if not os.path.exists(src):
        with open(src, "wb") as f:
            f.write(os.urandom(size))
    inbox = tempfile.mkdtemp(dir=tmp)
    p = port
    perf_srv = subprocess.Popen([satcc, "perf", "--server", "--bind", f"127.0.0.1:{p + 1}",
                                 "--time", f"{secs + 200}s", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sar_srv = subprocess.Popen([satcc, "saratoga", "serve", inbox, "--bind", f"127.0.0.1:{p + 3}",
                                "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    emu = subprocess.Popen([satcc, "emulate", "--listen", f"127.0.0.1:{p}", "--to",
                            f"127.0.0.1:{p + 1}", "--route", f"127.0.0.1:{p + 2}=127.0.0.1:{p + 3}",
                            "--preset", "geo", "--seed", str(seed), "-q"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    before = load()
    try:
        perf = subprocess.Popen([satcc, "perf", "--client", f"127.0.0.1:{p}", "--protocol", "tfrc",
                                 "--time", f"{secs}s", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        put = subprocess.run([satcc, "saratoga", "put", src, f"127.0.0.1:{p + 2}", "--as", "f",
                              "--json", "-q", "--timeout", "60s"],
                             capture_output=True, text=True, timeout=3600)
        perf.communicate(timeout=secs + 60)
        time.sleep(7)  # the perf server reports a client once it is silent
    finally:
        for q in (perf_srv, sar_srv, emu):
            q.terminate()
        out, _ = perf_srv.communicate(timeout=30)
        for q in (sar_srv, emu):
            q.wait(timeout=30)
    rep = json.loads(put.stdout) if put.stdout.strip() else {"ok": False}
    peers = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    tfrc = max((q["goodput_bps"] for q in peers), default=0.0)
    identical = os.path.exists(os.path.join(inbox, "f")) and \
        sha256(os.path.join(inbox, "f")) == sha256(src)
    return rep, tfrc, identical, before


def share_sim(satcc, tmp, app):
    path = os.path.join(tmp, "share.toml")
    with open(path, "w") as f:
        f.write(SHARE_SIM.format(app=app))
    out = subprocess.run([satcc, "run", path, "--json", "-q"], check=True,
                         capture_output=True, text=True).stdout
    return {f["protocol"]: f["goodput_bps"] for f in json.loads(out)["flows"]}


def main_share(a):
    with tempfile.TemporaryDirectory() as tmp:
        for app, what in (("", "both bulk"),
                          ('app = { kind = "files", size = 30000000, count = 1 }',
                           "STFRC a 30 MB file")):
            g = share_sim(a.satcc, tmp, app)
            print(f"simulated, 60 s, {what}: STFRC {g['stfrc'] / 1e6:.2f} Mb/s, "
                  f"TFRC {g['tfrc'] / 1e6:.2f} Mb/s, ratio {g['stfrc'] / g['tfrc']:.2f}")
        for seed in range(1, a.seeds + 1):
            rep, tfrc, same, ld = share(a.satcc, a.port + 10 * seed, seed, tmp)
            g = rep.get("goodput_bps", 0.0)
            print(f"real, seed {seed}: STFRC PUT 30 MB in {rep.get('duration_s', 0):.1f} s, "
                  f"{g / 1e6:.2f} Mb/s; TFRC (60 s) {tfrc / 1e6:.2f} Mb/s; ratio "
                  f"{g / tfrc if tfrc else float('nan'):.2f}; "
                  f"{'identical' if same else 'DIFFERENT'}; load {ld:.1f}", flush=True)


def copies(n, secs=60):
    """SHARE_SIM's link and two bulk flows, n independent copies (a pair of
    nodes and a link each), so one run gives n samples of STFRC / TFRC."""
    lines = [f'name = "stfrc-tfrc-geo-x{n}"', f'duration = "{secs}s"', "[topology]",
             'kind = "graph"',
             "nodes = [" + ", ".join(f'{{ name = "a{i}" }}, {{ name = "b{i}" }}'
                                     for i in range(n)) + "]"]
    for i in range(n):
        lines += ["[[topology.links]]", f'from = "a{i}"', f'to = "b{i}"', f'name = "geo{i}"',
                  'rate = "10Mbps"', 'delay = "250ms"',
                  'queue = { kind = "droptail", limit_bytes = "625KB" }']
    for i in range(n):
        lines += ["[[flows]]", 'protocol = "tfrc"', f'src = "a{i}"', f'dst = "b{i}"', "mss = 1000",
                  "[[flows]]", 'protocol = "stfrc"', f'src = "a{i}"', f'dst = "b{i}"', "mss = 1024"]
    return "\n".join(lines) + "\n"


def main_jitter(a):
    """The simulator with and without send jitter beside `satcc run --real`
    (docs/validation.md, end of "satcc saratoga over the emulator")."""
    n = 16
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "copies.toml")
        with open(path, "w") as f:
            f.write(copies(n))

        def ratios(seed, jitter=None, real=False):
            """`jitter`: a flow key set on every flow (`host_jitter=none`)."""
            args = [a.satcc, "run", path, "--json", "-q", "--seed", str(seed)]
            if jitter:
                for i in range(2 * n):
                    args += ["--set", f"flows.{i}.{jitter}"]
            if real:
                args.append("--real")
            fl = json.loads(subprocess.run(args, check=True, capture_output=True,
                                           text=True).stdout)["flows"]
            return [s["goodput_bps"] / t["goodput_bps"] for t, s in zip(fl[::2], fl[1::2])]

        print("| run | links | median | interquartile | min–max |")
        print("|---|---|---|---|---|")
        for label, v in [
            ('simulated, no jitter (`host_jitter = "none"`), seeds 1–10',
             sum((ratios(k, "host_jitter=none") for k in range(1, 11)), [])),
            ('simulated, `send_jitter = "20us"`, seeds 1–5',
             sum((ratios(k, "send_jitter=20us") for k in range(1, 6)), [])),
            ('simulated, `host_jitter = "20us"`, seeds 1–5',
             sum((ratios(k, "host_jitter=20us") for k in range(1, 6)), [])),
            ("simulated, defaults, seeds 1–5", sum((ratios(k) for k in range(1, 6)), [])),
            ("real (`--real`), one run", ratios(1, real=True)),
        ]:
            v = sorted(v)
            q = lambda p: v[int(p * (len(v) - 1))]
            print(f"| {label} | {len(v)} | {statistics.median(v):.2f} | {q(0.25):.2f}–{q(0.75):.2f} "
                  f"| {v[0]:.2f}–{v[-1]:.2f} |", flush=True)
        print()
        print("dmc, STFRC, 100 MB, simulated time per seed 1–5:")
        for jitter in ("host_jitter=none", "send_jitter=20us", "host_jitter=20us", None):
            times = []
            for k in range(1, 6):
                path2 = os.path.join(tmp, "dmc.toml")
                with open(path2, "w") as f:
                    f.write(SCENARIO.format(secs=4000, link=LINKS["dmc"], proto="stfrc",
                                            payload=1024, rate="", size=100_000_000))
                args = [a.satcc, "run", path2, "--json", "-q", "--seed", str(k)]
                if jitter:
                    args += ["--set", f"flows.0.{jitter}"]
                fl = json.loads(subprocess.run(args, check=True, capture_output=True,
                                               text=True).stdout)["flows"][0]
                t = fl.get("mean_file_time_s")
                times.append(f"{t:.1f} s" if t is not None else "not done in 4000 s")
            print(f"  {jitter or 'defaults'}: {', '.join(times)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target/release/satcc"))
    ap.add_argument("--only", choices=["dmc", "geo", "goodput", "share", "jitter"])
    ap.add_argument("--seeds", type=int, default=2, help="share: emulator seeds 1..N")
    ap.add_argument("--sizes", default="0,1,1000000,100000000")
    ap.add_argument("--out", default="saratoga-validation.jsonl")
    ap.add_argument("--port", type=int, default=19400)
    a = ap.parse_args()
    if a.only == "share":
        return main_share(a)
    if a.only == "jitter":
        return main_jitter(a)
    sizes = [int(x) for x in a.sizes.split(",")]
    runs = []
    if a.only in (None, "goodput"):
        runs.append(("dmc", 100_000_000, "100Mbps", 1400, "goodput"))
    for link in ("dmc", "geo"):
        if a.only not in (None, link):
            continue
        for size in sizes:
            for rate in (CAPACITY[link], None):
                runs.append((link, size, rate, 1024, "matrix"))
    # The longest (STFRC, 100 MB, lossy GEO) last.
    runs.sort(key=lambda r: r[0] == "geo" and r[1] >= 10_000_000 and r[2] is None)
    port = a.port
    with tempfile.TemporaryDirectory() as tmp, open(a.out, "a") as out:
        print("| link | file | rate | real time | sim time | goodput | retransmitted "
              "| STATUS | p | SHA-256 | load |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for i, (link, size, rate, payload, kind) in enumerate(runs):
            rep = real(a.satcc, link, size, rate, payload, port, i + 1, tmp)
            port += 2
            try:
                st = sim(a.satcc, link, size, rate, payload, tmp)
            except subprocess.SubprocessError:
                st = None
            row = {"kind": kind, "link": link, "size": size, "rate": rate or "STFRC",
                   "payload": payload, "sim_time_s": st, **rep}
            out.write(json.dumps(row) + "\n")
            out.flush()
            t = f"{rep['duration_s']:.2f} s" if rep.get("ok") else "failed: " + rep.get("error", "?")
            s = f"{st:.2f} s" if st is not None else "-"
            g = f"{rep.get('goodput_bps', 0) / 1e6:.2f} Mb/s" if rep.get("ok") else "-"
            p = rep.get("loss_event_rate")
            print(f"| {link} | {size} B | {rate or 'STFRC'}{'' if payload == 1024 else f', payload {payload}'} "
                  f"| {t} | {s} | {g} | {rep.get('retransmitted_bytes', '-')} "
                  f"| {rep.get('status_frames', '-')} | {'-' if p is None else f'{p:.2e}'} "
                  f"| {'identical' if rep['identical'] else 'DIFFERENT'} | {rep['load']} |",
                  flush=True)


if __name__ == "__main__":
    main()
