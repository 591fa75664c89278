#!/usr/bin/env bash
# The collector under service load (BENCHMARKS.md, "The multi-peer RIB and `ipfib collect`"):
# SESSIONS concurrent BMP sessions replay the recorded GoBGP IPv4 stream
# (announcements only: every session's routes stay), while wrk queries
# /api/v1/lookup with matched addresses, first during ingest, then with
# the RIB full. Then the RIB is checked against what was sent: every
# session's three peers (pre-policy, post-policy, Loc-RIB) hold 41,107
# routes each, and every message sent was received.
#   bench/collect/run.sh [SESSIONS] [SECONDS]
# Needs: a release build (cargo build --release -p ipfib-cli), wrk
# (apt-get install wrk), ../shared/data. Loopback only; every process it
# starts is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
SESSIONS=${1:-32}
SECS=${2:-10}
BIN=${IPFIB_BIN:-target/release/ipfib}
DATA=../shared/data
STREAM=$DATA/bmp/gobgp-4.8.0-rv2026-v4-full.bmp.zst
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk"; exit 2; }
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release -p ipfib-cli"; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Every session comes from 127.0.0.1: lift the per-source cap (8).
"$BIN" collect --bmp 127.0.0.1:0 --http 127.0.0.1:0 --grace 3600 --log-level warn \
    --max-sessions-per-source "$SESSIONS" 2>"$work/collect.log" &
cpid=$!
pids+=("$cpid")
for _ in $(seq 100); do grep -q "HTTP on" "$work/collect.log" && break; sleep 0.05; done
bmp=$(grep -o "BMP on [0-9.:]*" "$work/collect.log" | cut -d' ' -f3)
http=$(grep -o "http://[0-9.:]*" "$work/collect.log")
# Matched addresses: the first address of 100,000 prefixes of the stream's table.
# (zcat ends on SIGPIPE when awk has enough: not an error.)
{ zcat "$DATA/routeviews-rv2-20260730-1400.pfx2as.txt.gz" |
    awk '!/^#/ && ++n % 11 == 0 {split($1, a, "/"); print a[1]; if (++k == 100000) exit}' > "$work/addrs"; } || true
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; commit $(git rev-parse --short HEAD)"

start=$(date +%s.%N)
"$BIN" bmp-replay "$STREAM" --to "$bmp" --sessions "$SESSIONS" --keep-routes --linger "$((SECS * 3))" --json "$work/replay.json" > "$work/replay.out" &
rpid=$!
pids+=("$rpid")
# When every route is in (polled every 0.1 s, at most 10 minutes).
want=$((SESSIONS * 3 * 41107))
(
    for _ in $(seq 6000); do
        routes=$(curl -s "$http/metrics" | awk '/^ipfib_rib_routes /{print $2}')
        [ "$routes" = "$want" ] && { date +%s.%N > "$work/ingest_done"; break; }
        sleep 0.1
    done
) &
pids+=("$!")
sleep 0.5
echo "## lookups during ingest ($SESSIONS sessions replaying)"
ADDRS="$work/addrs" wrk -t2 -c16 -d"${SECS}s" --latency -s bench/collect/lookups.lua "$http" | grep -E "Requests/sec|50%|99%|Non-2xx"
for _ in $(seq 6000); do [ -s "$work/ingest_done" ] && break; sleep 0.1; done
[ -s "$work/ingest_done" ] || { echo "ingest did not complete in 10 minutes"; exit 1; }
secs=$(echo "$(cat "$work/ingest_done") - $start" | bc)
msgs=$(curl -s "$http/metrics" | awk '/^ipfib_bmp_messages_total/{s+=$2} END{print s}')
routes=$(curl -s "$http/metrics" | awk '/^ipfib_rib_routes /{print $2}')
echo "## ingest: $msgs messages, $routes routes (want $want) in $secs s: $(echo "$msgs / $secs" | bc) messages/s, $(echo "$routes / $secs" | bc) routes/s"
echo "## lookups with the RIB full"
ADDRS="$work/addrs" wrk -t2 -c16 -d"${SECS}s" --latency -s bench/collect/lookups.lua "$http" | grep -E "Requests/sec|50%|99%|Non-2xx"
echo "## collector RSS: $(awk '/VmRSS/{print $2/1024 " MiB"}' /proc/$cpid/status), $(echo "scale=1; $(awk '/VmRSS/{print $2*1024}' /proc/$cpid/status) / $want" | bc) bytes per route"
curl -s "$http/api/v1/peers" > "$work/peers.json"
python3 - "$work/peers.json" "$SESSIONS" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
open_sessions = [s for s in p["sessions"] if s["state"] == "open"]
counts = sorted({x["routes"] for x in p["peers"] if x["state"] == "up"})
up = [x for x in p["peers"] if x["state"] == "up"]
ok = len(open_sessions) == n and len(up) == 3 * n and counts == [41107]
print(f"## check: {len(open_sessions)} sessions held, {len(up)} peers up, routes per peer {counts}: {'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
PY
cat "$work/replay.out" 2>/dev/null || true
