#!/usr/bin/env bash
# Live interop of `satcc saratoga` with a peer built on the Go Saratoga
# implementation's frame encoders and decoders (issue 29, item 3):
# interop/go/main.go, our code, importing github.com/charlesetsmith/saratoga's
# sarflags, request, metadata, data, status and holes packages.
#
#   SARATOGA_GO_SRC=/path/to/checkout ./scripts/saratoga-interop.sh
#
# That source is not in this repository (it has no licence file) and the Go
# module proxy refuses its module versions, so the script needs a local
# checkout: it copies it to a temporary directory, adds a go.mod to each of
# its package directories that lacks one (sarflags, request, status, ... at
# commit 0a0c803), and builds the peer offline (GOPROXY=off) with `replace`
# directives pointing there. It then runs, on 127.0.0.1 only, with 0 B,
# 1 kB and 1 MB files:
#   satcc put -> Go server, satcc get <- Go server,
#   Go put -> satcc server, Go get <- satcc server,
# and a Go put and a Go get of 1 MB through `satcc emulate` with 2 % loss
# each way; every file's SHA-256 is compared with its source's. One line
# per case (PASS/FAIL and why), exit 1 if any failed. Not part of
# scripts/test: CI cannot get the Go source.
#
# SATCC=path picks the binary (default target/release/satcc, built if
# missing); SARPEER_FLAGS adds flags to every Go peer (e.g.
# -echo-timestamp).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${SARATOGA_GO_SRC:?set SARATOGA_GO_SRC to a checkout of github.com/charlesetsmith/saratoga}
if [ ! -f "$src/sarflags/sarflags.go" ] || [ ! -f "$src/saratoga/saratoga.json" ]; then
    echo "SARATOGA_GO_SRC=$src: not a checkout of github.com/charlesetsmith/saratoga (no sarflags/sarflags.go or saratoga/saratoga.json)" >&2
    exit 2
fi
command -v go >/dev/null || { echo "go: not found" >&2; exit 2; }
satcc=${SATCC:-target/release/satcc}
if [ ! -x "$satcc" ]; then
    cargo build --release -q -p satcc-cli
fi
satcc=$(realpath "$satcc")
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Build the peer against a copy of the checkout.
mkdir -p "$work/build"
cp -r "$src" "$work/build/src"
cp interop/go/main.go interop/go/go.mod "$work/build/"
(
    cd "$work/build"
    for p in data dirent fileio frames holes metadata request sarflags sarsys status timestamp; do
        [ -d "src/$p" ] || continue
        m=github.com/charlesetsmith/saratoga/$p
        [ -f "src/$p/go.mod" ] || printf 'module %s\n\ngo 1.21\n' "$m" > "src/$p/go.mod"
        go mod edit -require="$m@v0.0.0-00010101000000-000000000000" -replace="$m=./src/$p"
    done
    GOPROXY=off GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local go build -o sarpeer .
)
peer=("$work/build/sarpeer" -config "$work/build/src/saratoga/saratoga.json" ${SARPEER_FLAGS:-})

mkdir -p "$work/files" "$work/go-dir" "$work/satcc-dir" "$work/got"
: > "$work/files/f0"
head -c 1000 /dev/urandom > "$work/files/f1k"
head -c 1000000 /dev/urandom > "$work/files/f1M"
cat > "$work/lossy.toml" <<'LINK'
rate = "20Mbps"
delay = "10ms"
queue = { kind = "droptail", limit = 1000 }
error = { kind = "uniform", per = 0.02 }
reverse_error = { kind = "uniform", per = 0.02 }
LINK

fails=0
check() { # case-name source received exit-status error-text
    local name=$1 a=$2 b=$3 rc=$4 why=$5
    if [ "$rc" -eq 0 ] && [ -f "$b" ] && [ "$(sha256sum < "$a")" = "$(sha256sum < "$b")" ]; then
        echo "PASS $name"
    else
        fails=$((fails + 1))
        echo "FAIL $name: exit $rc, ${why:-received file differs or is missing}" | head -c 400
        echo
    fi
}
port=$((20000 + RANDOM % 20000))

# satcc clients against the Go server (6 transfers).
cp "$work/files/"* "$work/go-dir/"
timeout 120 "${peer[@]}" serve "$work/go-dir" "127.0.0.1:$port" 6 > "$work/go-serve.log" 2>&1 &
pids+=($!)
sleep 0.5
for f in f0 f1k f1M; do
    rc=0; why=$(timeout 30 "$satcc" saratoga put "$work/files/$f" "127.0.0.1:$port" --as "put-$f" -q 2>&1 >/dev/null) || rc=$?
    sleep 0.7 # the Go server serves one transfer at a time and lingers 0.5 s
    check "satcc put $f -> Go server" "$work/files/$f" "$work/go-dir/put-$f" "$rc" "$why"
done
for f in f0 f1k f1M; do
    rc=0; why=$(timeout 30 "$satcc" saratoga get "127.0.0.1:$port" "$f" "$work/got/satcc-get-$f" -q 2>&1 >/dev/null) || rc=$?
    sleep 0.7
    check "satcc get $f <- Go server" "$work/files/$f" "$work/got/satcc-get-$f" "$rc" "$why"
done

# Go clients against a satcc server.
sport=$((port + 1))
cp "$work/files/"* "$work/satcc-dir/"
"$satcc" saratoga serve "$work/satcc-dir" --bind "127.0.0.1:$sport" -q > "$work/satcc-serve.log" 2>&1 &
pids+=($!)
sleep 0.5
for f in f0 f1k f1M; do
    rc=0; why=$(timeout 30 "${peer[@]}" put "$work/files/$f" "put-$f" "127.0.0.1:$sport" 2>&1 >/dev/null) || rc=$?
    sleep 0.3
    check "Go put $f -> satcc server" "$work/files/$f" "$work/satcc-dir/put-$f" "$rc" "$why"
done
for f in f0 f1k f1M; do
    rc=0; why=$(timeout 30 "${peer[@]}" get "$f" "$work/got/go-get-$f" "127.0.0.1:$sport" 2>&1 >/dev/null) || rc=$?
    check "Go get $f <- satcc server" "$work/files/$f" "$work/got/go-get-$f" "$rc" "$why"
done

# Go clients through `satcc emulate` with 2 % loss each way.
eport=$((port + 2))
"$satcc" emulate --listen "127.0.0.1:$eport" --to "127.0.0.1:$sport" --link "$work/lossy.toml" --seed 1 > "$work/emulate.log" 2>&1 &
pids+=($!)
sleep 0.5
rc=0; why=$(timeout 60 "${peer[@]}" put "$work/files/f1M" "lossy-f1M" "127.0.0.1:$eport" 2>&1 >/dev/null) || rc=$?
check "Go put f1M -> satcc server, 2 % loss" "$work/files/f1M" "$work/satcc-dir/lossy-f1M" "$rc" "$why"
sleep 5.5 # the emulator serves one client at a time: 5 s of silence
rc=0; why=$(timeout 60 "${peer[@]}" get "f1M" "$work/got/lossy-f1M" "127.0.0.1:$eport" 2>&1 >/dev/null) || rc=$?
check "Go get f1M <- satcc server, 2 % loss" "$work/files/f1M" "$work/got/lossy-f1M" "$rc" "$why"

if [ "$fails" -gt 0 ]; then
    echo "$fails case(s) failed; Go server log: $(tr '\n' ' ' < "$work/go-serve.log" | head -c 300)"
    exit 1
fi
echo "all cases passed"
