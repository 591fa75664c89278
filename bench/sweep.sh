#!/usr/bin/env bash
# The bench suite: every chart of BENCHMARKS.md's "Bench suite" section
# and every sweep table of docs/benchmark-history.md's "Bench suite: every
# table of the sweep", on built-in synthetic tables (no data
# files needed). JSON per sweep in bench-out/suite/, charts in bench/plots/.
# Usage: bench/sweep.sh [CPU] [all|suite|batch|fib|threads|plots]
#   (default: CPU 1, all). Timing runs hold /tmp/ipfib-bench.lock (so
#   two benchmarks on this machine never overlap); threads=2 also uses
#   the CPU after CPU (round the online CPUs).
#   suite:   4 traces (uniform, matched, Poptrie's sequential and repeat-16)
#            x default engines x batch 1,16,32, with per-lookup latency
#   batch:   batch sizes 1,8,16,32,64 (planb, planb-routes, poptrie)
#   fib:     synthetic IPv6 of 10K, 30K, 100K, 300K, 1M prefixes
#   threads: 1 and 2 threads
#   plots:   the PNGs from the JSON (also run after each of the above)
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${1:-1}
what=${2:-all}
out=bench-out/suite
plots=bench/plots
mkdir -p "$out" "$plots"
cargo build --release -p ipfib-cli
bin=target/release/ipfib
lock=/tmp/ipfib-bench.lock
runs=${RUNS:-5}
len=${TRACE_LEN:-2000000}
common=(--runs "$runs" --trace-len "$len" --pin "$cpu")
timed() { # name, bench args...
    local name=$1; shift
    echo "== $name" >&2
    flock "$lock" "$bin" bench "${common[@]}" --json "$out/$name.json" "$@" | tee "$out/$name.txt"
}
want() { [[ $what == all || $what == "$1" ]]; }
want suite && timed suite --trace uniform,matched,sequential,repeat --latency 100000
want batch && timed batch --batch 1,8,16,32,64 --engines planb,planb-routes,poptrie
want fib && timed fib-size --v4-prefixes 0 --v6-prefixes 10000,30000,100000,300000,1000000 \
    --batch 1,32 --engines planb,planb-routes,poptrie,radix
want threads && timed threads --threads 1,2 --batch 1,32 --engines planb,poptrie,radix
# Charts: each from the sweep that varies its axis (small PNGs).
chart() { # json, charts
    [ -f "$out/$1.json" ] && "$bin" bench --from-json "$out/$1.json" --plot "$plots" \
        --charts "$2" --plot-size 900x500 > /dev/null
}
chart suite throughput,latency-cdf
chart batch batch
chart fib-size fib-size
chart threads threads
ls -l "$plots"
