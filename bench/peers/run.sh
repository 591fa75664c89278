#!/usr/bin/env bash
# ipfib and its peers side by side, on the same table and trace files, in
# one run. For each real table in ../shared/data:
#   1. bench/peers/make_inputs.py writes the table (values renumbered) and
#      uniform / matched traces per family;
#   2. `ipfib bench` runs on them (JSON);
#   3. every peer driver runs on the same files and prints one result line:
#        NAME FAMILY ADDRESSES min median max build_ms bytes checksum
#   4. bench/peers/combine.py prints one table per table file; a peer whose
#      checksum differs from ipfib's is marked wrong, never ranked.
# Peers: DPDK rte_fib / rte_lpm / rte_fib6 / rte_lpm6 (Debian libdpdk-dev,
# C driver in dpdk/), the crates prefix-trie, ip_network_table and poptrie
# (rust/), Go's bart (go/), Python's pytricia and py-radix
# (python_peers.py).
# Usage: bench/peers/run.sh [CPU] (default 1). Environment: RUNS (timed
# passes, 5), TRACE_LEN (2000000), PEER_TIMEOUT (seconds, 300), ENGINES
# (ipfib engines, planb,poptrie,radix), PEERS (drivers to run, default all:
# "dpdk rust go python"). Installs what is missing
# (libdpdk-dev when run as root; the crates, Go module and PyPI packages
# from their registries). Output in bench-out/peers/.
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
want=${PEERS:-dpdk rust go python}
wanted() { [[ " $want " == *" $1 "* ]]; }
drivers=()
if wanted dpdk && pkg-config --exists libdpdk 2>/dev/null; then
    gcc -O3 -march=native -Wall -o "$out/dpdk_lpm" bench/peers/dpdk/dpdk_lpm.c \
        $(pkg-config --cflags --libs libdpdk)
    drivers+=("dpdk")
fi
if wanted rust; then
    cargo build --release --manifest-path bench/peers/rust/Cargo.toml && drivers+=("rust")
fi
if wanted go; then
    (cd bench/peers/go && go build -o ../../../"$out"/bart-peer .) && drivers+=("go")
fi
if wanted python; then
    python3 -c "import pytricia, radix" 2>/dev/null ||
        python3 -m pip install -q pytricia py-radix || true
    python3 -c "import pytricia, radix" 2>/dev/null && drivers+=("python")
fi
cargo build --release -p ipfib-cli
bin=target/release/ipfib

# One driver for one algorithm: prints its result line (or nothing). A
# peer that has not finished after PEER_TIMEOUT seconds (build included) is
# stopped and reported as such by combine.py (no line).
limit=${PEER_TIMEOUT:-300}
peer() { # driver algo family table trace
    case $1 in
        dpdk) timeout "$limit" taskset -c "$cpu" "$out/dpdk_lpm" "$2" "$4" "$5" "$runs" 2>/dev/null | tail -1 ;;
        rust) timeout "$limit" taskset -c "$cpu" bench/peers/rust/target/release/ipfib-rust-peers "$2" "$4" "$5" "$runs" ;;
        go) timeout "$limit" taskset -c "$cpu" "$out/bart-peer" "$2" "$4" "$5" "$runs" ;;
        # Python answers 1-2M lookups/s: fewer passes keep the run short.
        python) timeout "$limit" taskset -c "$cpu" python3 bench/peers/python_peers.py "$2" "$4" "$5" 1 ;;
    esac
}
algos() { # driver family
    case "$1:$2" in
        dpdk:4) echo fib lpm ;;
        dpdk:6) echo fib6 lpm6 ;;
        rust:*) echo prefix-trie ip_network_table poptrie ;;
        go:*) echo bart ;;
        python:*) echo pytricia py-radix ;;
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
            --engines "${ENGINES:-planb,poptrie,radix}" --batch 1,16,32 --runs "$runs" --pin "$cpu" \
            --json "$dir/ipfib.v$fam.json" >&2
        for d in "${drivers[@]}"; do
            for a in $(algos "$d" "$fam"); do
                for t in uniform matched; do
                    line=$(peer "$d" "$a" "$fam" "$dir/table.v$fam.txt" "$dir/$t.v$fam.trace" || true)
                    if [ -n "$line" ]; then
                        echo "$t $line" >> "$dir/peers.txt"
                    else
                        echo "$t $a $fam unfinished" >> "$dir/peers.txt"
                    fi
                done
            done
        done
    done
done
python3 bench/peers/combine.py "$out" | tee "$out/summary.md"
