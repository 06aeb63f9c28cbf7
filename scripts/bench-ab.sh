#!/usr/bin/env bash
# A/B of two satcc builds on the wall clock: `satcc bench --no-ns2 --json`
# of OLD and NEW, alternated, ROUNDS rounds of RUNS runs each, one line per
# program and round (the medians `satcc bench` reports: with default
# outputs, simulation only, ns per delivered packet, load average).
#
#   scripts/bench-ab.sh [--pause-builds] OLD NEW [ROUNDS] [RUNS]
#   scripts/bench-ab.sh /tmp/base/target/release/satcc target/release/satcc 3 15
#
# Copy each binary aside first (a rebuild must not replace it mid-run).
# Differences of about 1 % or more between the medians repeat from round
# to round on an idle machine; below that, they do not.
#
# --pause-builds: on a machine shared with other builds, stops every
# compiler, linker and valgrind process of this user with SIGSTOP for the
# duration of the A/B and resumes them at the end (also on an error or
# Ctrl-C), so that the two programs are timed on free cores. The paused
# builds lose that time, nothing else. Only one paused A/B runs at a time
# (a second waits on a lock in the temporary directory).
set -euo pipefail

pause=0
if [ "${1:-}" = "--pause-builds" ]; then
    pause=1
    shift
fi
if [ $# -lt 2 ] || [ $# -gt 4 ]; then
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
old=$1
new=$2
rounds=${3:-3}
runs=${4:-11}
for b in "$old" "$new"; do
    if [ ! -x "$b" ]; then
        echo "bench-ab.sh: $b: not an executable satcc" >&2
        exit 2
    fi
done
for n in "$rounds" "$runs"; do
    if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
        echo "bench-ab.sh: $n: rounds and runs must be whole numbers of at least 1" >&2
        exit 2
    fi
done

if [ $pause = 1 ]; then
    exec 9>"${TMPDIR:-/tmp}/satcc-bench-ab.lock"
    flock 9
    pids=$(pgrep -u "$(id -u)" -f '(^|/)(rustc|cargo|cc|ld|collect2|lto1|valgrind)( |$)|(cachegrind|callgrind|memcheck)-amd64' |
        grep -vx "$$" | tr '\n' ' ' || true)
    # shellcheck disable=SC2086 # the list is meant to split
    trap 'kill -CONT $pids 2>/dev/null || true' EXIT
    # shellcheck disable=SC2086
    kill -STOP $pids 2>/dev/null || true
    sleep 1
    echo "paused: ${pids:-nothing}"
fi

for r in $(seq 1 "$rounds"); do
    for b in "$old" "$new"; do
        line=$("$b" bench --runs "$runs" --no-ns2 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d[0] if isinstance(d, list) else d
print("outputs %.4f s  sim %.4f s  ns/pkt %.1f  load %s" % (
    d["satcc_wall_s"], d["satcc_sim_only_wall_s"], d["ns_per_packet"], d["load_average"]))')
        echo "round $r  $b  $line"
    done
done
