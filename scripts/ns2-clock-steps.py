#!/usr/bin/env python3
"""X_recv of a saturated link as ns-2's double clock measures it.

ns-2 keeps time in a double and schedules every event as `now + delay`.
On a busy link (`LinkDelay::recv`) the next packet starts `txt` after the
last one (one double addition per packet) and reaches the next node
`txt + delay_` later (another), then the access link adds its own. While
the clock stays between two powers of two each addition rounds `txt` to
the same multiple of the clock's step (2^-49 s in [8, 16) s, 2^-48 s in
[16, 32) s, ...), so consecutive reports of `TFRCSink` measure the same
X_recv to the last bit; a report interval that crosses a power of two
measures one a few 1e-12 higher or lower. In TFRC slow start at the
2 X_recv cap that decides `slowstart()`'s `rate_ > ss_maxrate_` (halve)
against `rate_ < ss_maxrate_` (hold): satcc's whole nanoseconds measure
exactly 1/txt and hold (docs/validation.md, "Where ns-2's clock crosses
16 s"). A model: it leaves out the rest of ns-2's event chain, and the
~1e-15 change of the one report whose two ends straddle the crossing can
come out with the other sign in ns-2.

Usage:
  scripts/ns2-clock-steps.py --rate 20 --delay 300 --start 14.6
prints, for reports every --interval seconds of arrivals from --start on,
X_recv in packets/s and its change from the report before.
"""

import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=20.0, help="bottleneck Mb/s (20)")
    ap.add_argument("--delay", type=float, default=300.0, help="bottleneck one-way delay, ms (300)")
    ap.add_argument("--size", type=int, default=1040, help="packet bytes on the wire (1040)")
    ap.add_argument("--access", type=float, default=100.0, help="access link Mb/s (100; delay 1 ms)")
    ap.add_argument("--start", type=float, default=14.6, help="first departure, s (14.6)")
    ap.add_argument("--interval", type=float, default=0.6, help="report interval, s (0.6)")
    ap.add_argument("--reports", type=int, default=6, help="reports (6)")
    a = ap.parse_args()
    if not (a.rate > 0 and a.access > 0 and a.size > 0 and a.interval > 0 and a.reports > 0
            and a.start >= 0 and a.delay >= 0):
        ap.error("--rate, --access, --size, --interval and --reports must be positive, "
                 "--start and --delay not negative")
    txt = a.size * 8 / (a.rate * 1e6)
    hop1 = txt + a.delay / 1e3  # LinkDelay: schedule(target_, p, txt + delay_)
    hop2 = a.size * 8 / (a.access * 1e6) + 0.001
    k = max(1, round(a.interval / txt))  # packets per report interval
    t = a.start
    arrivals = []
    for _ in range(k * a.reports + 1):
        arrivals.append((t + hop1) + hop2)
        t = t + txt  # the next packet starts txt after this one
    prev = None
    for j in range(a.reports):
        x = k / (arrivals[(j + 1) * k] - arrivals[j * k])
        change = f"  {x / prev - 1:+.2e}" if prev is not None else ""
        print(f"report at {arrivals[(j + 1) * k]:.3f} s  X_recv {x:.10f} pkt/s{change}")
        prev = x


if __name__ == "__main__":
    main()
