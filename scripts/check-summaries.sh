#!/usr/bin/env bash
# The determinism safety net of performance work: runs every scenario in
# scenarios/ (as shipped, default seed, nothing shortened) with its default
# outputs and prints the sha256 of each output file except run.json (which
# holds the wall-clock time), one line per file.
#
#   ./scripts/check-summaries.sh > before.txt      # on the unchanged code
#   ./scripts/check-summaries.sh > after.txt       # after a change
#   diff before.txt after.txt                      # must print nothing
#
# SATCC=path/to/satcc picks the binary (default target/release/satcc, built
# if missing); ONLY=regex restricts the scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."

satcc=${SATCC:-target/release/satcc}
if [ ! -x "$satcc" ]; then
    cargo build --release -q -p satcc-cli
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in scenarios/*.toml; do
    name=$(basename "$f" .toml)
    if [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]]; then
        continue
    fi
    "$satcc" run "$f" --out "$tmp/$name" -q >/dev/null
    for o in summary.json flows.csv links.csv goodput.svg; do
        h=$(sha256sum "$tmp/$name/$o" | cut -d' ' -f1)
        echo "$name $o $h"
    done
done
