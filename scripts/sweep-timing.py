#!/usr/bin/env python3
"""Times one sweep (4 points x 2 seeds by default) with 1 worker, then with
N, through the Python package (threads; the simulator releases the GIL),
and prints the wall times and the speed-up. Usage:
scripts/sweep-timing.py [--workers 2] [--duration 200s] [--seeds 2]
(the reference scenario, scenarios/bench.toml, with 16 to 64 SACK flows)
"""

import argparse
import os
import time

import satcc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--duration", default="200s")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--scenario", default=os.path.join(ROOT, "scenarios", "bench.toml"))
    a = ap.parse_args()
    sc = satcc.Scenario.load(a.scenario).set("duration", a.duration)
    vary = {"flows.0.count": [16, 32, 48, 64]}
    times = {}
    frames = {}
    for jobs in (1, a.workers):
        t, cpu = time.perf_counter(), time.process_time()
        frames[jobs] = satcc.sweep(sc, vary=vary, seeds=a.seeds, store=None, jobs=jobs)
        times[jobs] = time.perf_counter() - t
        # CPU seconds over wall seconds: above 1 only if runs went on at
        # the same time (the GIL released); a busy machine caps it.
        busy = (time.process_time() - cpu) / times[jobs]
        print(f"jobs={jobs}: {len(frames[jobs])} runs in {times[jobs]:.2f} s, "
              f"{busy:.2f} cores busy on average")
    assert frames[1].equals(frames[a.workers]), "results differ with the number of workers"
    print(f"speed-up {times[1] / times[a.workers]:.2f}x with {a.workers} workers "
          f"({os.cpu_count()} cores here)")


if __name__ == "__main__":
    main()
