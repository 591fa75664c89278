#!/usr/bin/env bash
# Reproduce the figures in BENCHMARKS.md: every engine variant side by side,
# one run per table, pinned to one CPU, JSON kept in bench-out/.
# Usage: bench/run.sh [CPU]   (default CPU 1; needs ../shared/data)
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${1:-1}
data=../shared/data
out=bench-out
mkdir -p "$out"
cargo build --release -p ipfib-cli
bin=target/release/ipfib
common=(--engines planb,planb-routes,radix --kernels all --batch 1,16,32 --runs 5 --trace-len 2000000 --pin "$cpu")
run() {
    local name=$1; shift
    echo "== $name"
    "$bin" bench "${common[@]}" --json "$out/$name.json" "$@" | tee "$out/$name.txt"
}
run rv2015 --table "$data/routeviews-20151101.ipasn.dat.gz"
run rv2-2026 --table "$data/routeviews-rv2-20260730-1400.pfx2as.txt.gz"
run rv6-2026 --table "$data/routeviews-rv6-20260730-1400.pfx2as.txt.gz"
run linx --table "$data/linx-rib-ipv6.20141225.0000.p69.txt.gz"
run synthetic-v6-1m --v4-prefixes 0 --v6-prefixes 1000000
