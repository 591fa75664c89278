#!/usr/bin/env bash
# Reproduce the figures in BENCHMARKS.md: every engine variant side by side,
# one run per table, pinned to one CPU, JSON kept in bench-out/.
# Usage: bench/run.sh [CPU] [all|planb|poptrie]   (default: CPU 1, all; needs ../shared/data)
#   planb:   the PlanB sections (all kernels, planb / planb-routes / radix)
#   poptrie: the "Poptrie" sections (Table 2, Table 6, engine comparison)
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${1:-1}
what=${2:-all}
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
if [[ $what == all || $what == planb ]]; then
    run rv2015 --table "$data/routeviews-20151101.ipasn.dat.gz"
    run rv2-2026 --table "$data/routeviews-rv2-20260730-1400.pfx2as.txt.gz"
    run rv6-2026 --table "$data/routeviews-rv6-20260730-1400.pfx2as.txt.gz"
    run linx --table "$data/linx-rib-ipv6.20141225.0000.p69.txt.gz"
    run synthetic-v6-1m --v4-prefixes 0 --v6-prefixes 1000000
fi
if [[ $what == all || $what == poptrie ]]; then
    # Poptrie paper, Table 2: basic / leafvec / leafvec + aggregation x s.
    variants=()
    for v in poptrie-basic poptrie-routes poptrie; do
        for s in 0 16 18; do variants+=("$v:$s"); done
    done
    common=(--batch 1,32 --runs 5 --trace-len 2000000 --pin "$cpu")
    run poptrie-table2 --table "$data/routeviews-20151101.ipasn.dat.gz" \
        --engines "$(IFS=,; echo "${variants[*]}")" --trace uniform
    # Poptrie paper, Table 6: LINX IPv6, random addresses inside 2000::/8.
    run poptrie-table6 --table "$data/linx-rib-ipv6.20141225.0000.p69.txt.gz" \
        --engines poptrie:0,poptrie:16,poptrie:18 --trace uniform-in:2000::/8,uniform
    # planb vs poptrie vs radix on every real table.
    common=(--engines planb,poptrie:16,poptrie:18,radix --batch 1,16,32 --runs 5 --trace-len 2000000 --pin "$cpu")
    run cmp-rv2015 --table "$data/routeviews-20151101.ipasn.dat.gz"
    run cmp-rv2-2026 --table "$data/routeviews-rv2-20260730-1400.pfx2as.txt.gz"
    run cmp-rv6-2026 --table "$data/routeviews-rv6-20260730-1400.pfx2as.txt.gz"
    run cmp-linx --table "$data/linx-rib-ipv6.20141225.0000.p69.txt.gz"
fi
