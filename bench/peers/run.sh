#!/usr/bin/env bash
# ipfib and its peers side by side, on the same table and trace files, in
# one run (issue 5). For each real table in ../shared/data:
#   1. bench/peers/make_inputs.py writes the table (values renumbered) and
#      uniform / matched traces per family;
#   2. `ipfib bench` runs on them (JSON);
#   3. every peer driver runs on the same files and prints one result line:
#        NAME FAMILY ADDRESSES min median max build_ms bytes checksum
#   4. bench/peers/combine.py prints one table per table file; a peer whose
#      checksum differs from ipfib's is marked wrong, never ranked.
# Usage: bench/peers/run.sh [CPU] (default 1). Installs what is missing
# (Debian libdpdk-dev) when run as root. Output in bench-out/peers/.
set -euo pipefail
cd "$(dirname "$0")/../.."
cpu=${1:-1}
data=../shared/data
out=bench-out/peers
runs=${RUNS:-5}
len=${TRACE_LEN:-2000000}
mkdir -p "$out"

if ! pkg-config --exists libdpdk 2>/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q libdpdk-dev >/dev/null
    else
        echo "peers: libdpdk-dev missing (apt-get install libdpdk-dev); skipping DPDK" >&2
    fi
fi
drivers=()
if pkg-config --exists libdpdk 2>/dev/null; then
    gcc -O3 -march=native -Wall -o "$out/dpdk_lpm" bench/peers/dpdk/dpdk_lpm.c \
        $(pkg-config --cflags --libs libdpdk)
    drivers+=("dpdk")
fi
cargo build --release -p ipfib-cli
bin=target/release/ipfib

# One driver for one algorithm: prints its result line (or nothing).
peer() { # driver algo family table trace
    case $1 in
        dpdk) taskset -c "$cpu" "$out/dpdk_lpm" "$2" "$4" "$5" "$runs" 2>/dev/null | tail -1 ;;
    esac
}
algos() { # driver family
    case "$1:$2" in
        dpdk:4) echo fib lpm ;;
        dpdk:6) echo fib6 lpm6 ;;
    esac
}

for spec in \
    "rv2015 routeviews-20151101.ipasn.dat.gz" \
    "rv2-2026 routeviews-rv2-20260730-1400.pfx2as.txt.gz" \
    "rv6-2026 routeviews-rv6-20260730-1400.pfx2as.txt.gz" \
    "linx linx-rib-ipv6.20141225.0000.p69.txt.gz"; do
    set -- $spec
    name=$1 file=$2 dir=$out/$1
    echo "== $name" >&2
    [ -f "$dir/.done" ] || { python3 bench/peers/make_inputs.py --table "$data/$file" \
        --out "$dir" --len "$len" && touch "$dir/.done"; }
    : > "$dir/peers.txt"
    for fam in 4 6; do
        [ -f "$dir/table.v$fam.txt" ] || continue
        traces="$dir/uniform.v$fam.trace,$dir/matched.v$fam.trace"
        "$bin" bench --table "$dir/table.v$fam.txt" --trace "$traces" \
            --engines planb,radix --batch 1,16,32 --runs "$runs" --pin "$cpu" \
            --json "$dir/ipfib.v$fam.json" >&2
        for d in "${drivers[@]}"; do
            for a in $(algos "$d" "$fam"); do
                for t in uniform matched; do
                    line=$(peer "$d" "$a" "$fam" "$dir/table.v$fam.txt" "$dir/$t.v$fam.trace")
                    [ -n "$line" ] && echo "$t $line" >> "$dir/peers.txt"
                done
            done
        done
    done
done
python3 bench/peers/combine.py "$out" | tee "$out/summary.md"
