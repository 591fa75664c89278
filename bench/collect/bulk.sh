#!/usr/bin/env bash
# Bulk lookups against the live RIB (BENCHMARKS.md, "SQL engines and bulk
# lookups"): `ipfib collect` bootstrapped from the real 20-peer dump, then
# one connection asking N addresses in one POST /api/v1/lookup (text body,
# answers read to the end by curl), RUNS times, against single GET
# lookups on one connection (wrk -c1) for the same time.
#   bench/collect/bulk.sh [N] [RUNS]
# Needs: a release build (cargo build --release -p ipfib-cli), curl, wrk,
# python3, ../shared/data. Loopback only; the collector is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000000}
RUNS=${2:-5}
BIN=${IPFIB_BIN:-target/release/ipfib}
DUMP=../shared/data/rib.20260730.1400.first2MiB.mrt.bz2
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk"; exit 2; }
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release -p ipfib-cli"; exit 2; }
work=$(mktemp -d)
cpid=
cleanup() {
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
"$BIN" collect --bmp 127.0.0.1:0 --http 127.0.0.1:0 --mrt "$DUMP" --grace 0 \
    --log-level warn 2>"$work/collect.log" &
cpid=$!
for _ in $(seq 300); do grep -q "HTTP on" "$work/collect.log" && break; sleep 0.1; done
http=$(grep -o "http://[0-9.:]*" "$work/collect.log" | head -1)
# Matched addresses: inside the dump's prefixes (a random one each).
python3 - "$http" "$N" >"$work/addrs.txt" <<'PY'
import ipaddress, json, random, sys, urllib.request
http, n = sys.argv[1], int(sys.argv[2])
prefixes, cursor = [], None
while len(prefixes) < 41105:
    url = http + "/api/v1/routes?prefix=0.0.0.0/0&match=longer&limit=10000"
    if cursor:
        url += "&cursor=" + cursor
    page = json.load(urllib.request.urlopen(url))
    prefixes += sorted({r["prefix"] for r in page["routes"]})
    cursor = page.get("next_cursor")
    if not cursor:
        break
prefixes = sorted(set(prefixes))
rnd = random.Random(1)
nets = [ipaddress.ip_network(p) for p in prefixes]
out = sys.stdout
for _ in range(n):
    net = nets[rnd.randrange(len(nets))]
    out.write(str(net[rnd.randrange(net.num_addresses)]) + "\n")
PY
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; commit $(git rev-parse --short HEAD)"
echo "## POST /api/v1/lookup, $N matched addresses a request (text), one connection"
for i in $(seq "$RUNS"); do
    curl -s --data-binary @"$work/addrs.txt" -o /dev/null \
        -w "%{time_total} %{size_download}\n" "$http/api/v1/lookup"
done | awk -v n="$N" '{ r = n / $1; printf "%.2f s, %.0f MB: %.2f M lookups/s\n", $1, $2 / 1e6, r / 1e6 }'
echo "## GET /api/v1/lookup, one address a request, one connection (wrk -c1 -t1, 10 s)"
head -1 "$work/addrs.txt" >"$work/one.txt"
wrk -c1 -t1 -d10s "$http/api/v1/lookup?ip=$(cat "$work/one.txt")" | grep -E "Requests/sec"
