#!/usr/bin/env python3
"""The simulator against a real kernel path (issue 34; docs/validation.md,
"A token-bucket path"): every `satcc perf` protocol over a veth pair with
Linux's tbf qdisc (`tbf rate R burst 16kb limit 150kb` on both ends, R =
10 and 2 Mb/s, base RTT ~0.1 ms), and the same path simulated with the
link's token-bucket shaper (10 Gb/s "veth", 40 us each way, `shaper =
{ rate = R, burst = "16KiB", limit = "150KiB" }` on the data direction).

    cargo build --release -p satcc-cli
    scripts/real-path-validation.py [--satcc PATH] [--time 15] [--runs 1]
                                    [--protocols tfrc,ccid3,...] [--json out.json]
                                    [--set KEY=VALUE ...]

--set gives the flow a key, on both sides (the perf client's --set and
the simulated flow), e.g. `--set data_limited=stretches`.

Each real run makes its own user and network namespaces (`unshare --user
--net --map-root-user`, no privilege needed), a second network namespace
for the server, the veth pair and the qdiscs; they all vanish with the
run. Measured: the server's goodput (payload bytes delivered over the
flow's duration) and the share of the client's datagrams tbf dropped
(the kernel's own counters, `tc -s qdisc`), over the whole run and after
the first 2 s. `saratoga` and `cbr` send at 90 % of the link (--rate).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTOCOLS = ["tfrc", "ccid3", "tfrcp", "stfrc", "saratoga", "cbr"]
RATES = [10, 2]  # Mb/s
WARM_S = 2

# Runs inside `unshare --user --net --map-root-user` (root there). Prints
# SNAP lines (unix time, bytes and packets tbf passed, packets dropped) at
# the start, after WARM seconds and at the end, then the server's and the
# client's JSON.
SCRIPT = r"""
set -eu
SATCC=$1; T=$2; WARM=$3; RATE=$4; shift 4
ip link set lo up
unshare --net sleep $((T + 30)) &
HOLD=$!
trap 'kill $HOLD 2>/dev/null || true' EXIT
i=0
while [ "$(readlink /proc/$HOLD/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do
    i=$((i+1)); [ $i -lt 100 ] || exit 3; sleep 0.02
done
ip link add veth0 type veth peer name veth1
ip link set veth1 netns $HOLD
ip addr add 10.200.0.1/24 dev veth0
ip link set veth0 up
tc qdisc add dev veth0 root tbf rate ${RATE}mbit burst 16kb limit 150kb
nsenter -t $HOLD -n sh -c "ip link set lo up && ip addr add 10.200.0.2/24 dev veth1 && ip link set veth1 up && tc qdisc add dev veth1 root tbf rate ${RATE}mbit burst 16kb limit 150kb"
snap() {
    tc -s qdisc show dev veth0 | awk -v now="$(date +%s.%N)" \
        '/Sent/ { gsub(/[(,)]/, " "); print "SNAP", now, $2, $4, $7 }'
}
SRV_OUT=$(mktemp); CLI_OUT=$(mktemp)
nsenter -t $HOLD -n timeout $((T + 20)) "$SATCC" perf --server --bind 10.200.0.2:5201 \
    --time $((T + 4))s --idle-timeout 2s --json > "$SRV_OUT" 2>/dev/null &
SRV=$!
sleep 0.3
snap
timeout $((T + 15)) "$SATCC" perf --client 10.200.0.2:5201 --time ${T}s --json "$@" > "$CLI_OUT" &
CLI=$!
sleep "$WARM"
snap
wait $CLI
snap
wait $SRV || true
echo SERVER; cat "$SRV_OUT"
echo CLIENT; cat "$CLI_OUT"
rm -f "$SRV_OUT" "$CLI_OUT"
"""


def flow_args(proto, rate, sets=()):
    args = ["--protocol", proto]
    for kv in sets:
        args += ["--set", kv]
    if proto in ("saratoga", "cbr"):
        args += ["--rate", f"{0.9 * rate:g}Mbps"]
    return args


def real(satcc, proto, rate, secs, sets=()):
    p = subprocess.run(
        ["unshare", "--user", "--net", "--map-root-user", "sh", "-c", SCRIPT, "sh",
         satcc, str(secs), str(WARM_S), str(rate)] + flow_args(proto, rate, sets),
        capture_output=True, text=True, timeout=secs + 60)
    if p.returncode != 0:
        sys.exit(f"real run {proto} {rate} Mb/s failed ({p.returncode}): {p.stderr}\n{p.stdout}")
    snaps = [list(map(float, l.split()[1:])) for l in p.stdout.splitlines() if l.startswith("SNAP")]
    srv_text = p.stdout.split("SERVER\n", 1)[1].split("CLIENT\n", 1)[0]
    srv = [json.loads(l) for l in srv_text.splitlines() if l.strip()]
    if not srv:
        sys.exit(f"real run {proto} {rate} Mb/s: the server reported no client\n{p.stdout}")
    cli = json.loads(p.stdout.split("CLIENT\n", 1)[1])

    def drops(a, b):
        offered = (b[2] - a[2]) + (b[3] - a[3])
        return (b[3] - a[3]) / offered if offered else 0.0

    return {
        "goodput_bps": srv[0]["goodput_bps"],
        "drop": drops(snaps[0], snaps[2]),
        "drop_after_warm": drops(snaps[1], snaps[2]),
        "send_bps": cli["send_rate_bps"],
    }


def scenario(proto, rate, secs, sets=()):
    flow = [f'protocol = "{proto}"', 'src = "client"', 'dst = "server"', "mss = 1000"]
    for kv in sets:
        k, v = kv.split("=", 1)
        flow.append(f"{k} = {v}" if v[:1] in '"[{' or v.replace(".", "").isdigit()
                    or v in ("true", "false", "inf") else f'{k} = "{v}"')
    if proto in ("saratoga", "cbr"):
        flow.append(f'rate = "{0.9 * rate:g}Mbps"')
    return "\n".join([
        'name = "real-path"', f'duration = "{secs}s"', "[topology]", 'kind = "graph"',
        'nodes = [{ name = "client" }, { name = "server" }]',
        "[[topology.links]]", 'from = "client"', 'to = "server"', 'name = "veth"',
        'rate = "10Gbps"', 'delay = "40us"',
        f'shaper = {{ rate = "{rate}Mbps", burst = "16KiB", limit = "150KiB" }}',
        "[[flows]]"] + flow) + "\n"


def sim(satcc, proto, rate, secs, sets=()):
    def at(d):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.toml")
            with open(path, "w") as f:
                f.write(scenario(proto, rate, d, sets))
            p = subprocess.run([satcc, "run", path, "--json", "-q"], check=True,
                               capture_output=True, text=True)
            s = json.loads(p.stdout)
        return s["flows"][0], s["links"][0]

    f, l = at(secs)
    # The simulation is deterministic: a WARM_S run is the longer run's
    # prefix, so the difference is the window after it.
    _, lw = at(WARM_S)
    arr, drp = l["arrivals"] - lw["arrivals"], l["drops"] - lw["drops"]
    return {
        "goodput_bps": f["goodput_bps"],
        "drop": l["drops"] / l["arrivals"] if l["arrivals"] else 0.0,
        "drop_after_warm": drp / arr if arr else 0.0,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--satcc", default=os.path.join(ROOT, "target/release/satcc"))
    ap.add_argument("--time", type=int, default=15)
    ap.add_argument("--runs", type=int, default=1, help="real runs per point (averaged)")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--json", help="write every number here too")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a flow key for both the real and the simulated flow (repeatable)")
    a = ap.parse_args()
    rows = []
    print("| protocol | link | real goodput | sim goodput | real ÷ sim | real drops | sim drops "
          "| real drops after 2 s | sim drops after 2 s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rate in RATES:
        for proto in a.protocols.split(","):
            rs = [real(a.satcc, proto, rate, a.time, a.set) for _ in range(a.runs)]
            r = {k: sum(x[k] for x in rs) / len(rs) for k in rs[0]}
            s = sim(a.satcc, proto, rate, a.time, a.set)
            rows.append({"protocol": proto, "rate_mbps": rate, "real": r, "real_runs": rs, "sim": s})
            print(f"| {proto} | {rate} Mb/s | {r['goodput_bps'] / 1e6:.3f} Mb/s "
                  f"| {s['goodput_bps'] / 1e6:.3f} Mb/s | {r['goodput_bps'] / s['goodput_bps']:.3f} "
                  f"| {100 * r['drop']:.1f} % | {100 * s['drop']:.1f} % "
                  f"| {100 * r['drop_after_warm']:.1f} % | {100 * s['drop_after_warm']:.1f} % |",
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
