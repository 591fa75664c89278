#!/usr/bin/env bash
# The `ipfib lookup` stdin benchmark (BENCHMARKS.md, "`ipfib lookup` on
# stdin"): each input RUNS times on core 1, wall time and CPU time
# (perf stat task-clock: user + sys), output to a file. An empty input
# measures startup and table load, to subtract.
#   bench/lookup/run.sh BIN DIR [RUNS]   (DIR from make_inputs.py)
set -euo pipefail
bin=$1
dir=$2
runs=${3:-5}
table=../shared/data/routeviews-20151101.ipasn.dat.gz
: >"$dir/empty.txt"
for input in empty v4 v6 mixed; do
    for _ in $(seq "$runs"); do
        start=$(date +%s.%N)
        cpu_ms=$(perf stat -x, -e task-clock taskset -c 1 "$bin" lookup --table "$table" \
            <"$dir/$input.txt" 2>&1 >"$dir/out.txt" | grep task-clock | cut -d, -f1)
        end=$(date +%s.%N)
        echo "$input $(echo "$end - $start" | bc) $cpu_ms"
    done
done
