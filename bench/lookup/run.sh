#!/usr/bin/env bash
# The `ipfib lookup` stdin benchmark (BENCHMARKS.md, "`ipfib lookup` on
# stdin"): each input RUNS times on core 1, wall time and CPU time
# (perf stat task-clock: user + sys), output to a file. An empty input
# measures startup and table load, to subtract. THREADS > 1 runs
# `--threads THREADS` on every CPU instead of core 1.
#   bench/lookup/run.sh BIN DIR [RUNS] [THREADS]   (DIR from make_inputs.py)
set -euo pipefail
bin=$1
dir=$2
runs=${3:-5}
threads=${4:-1}
cpus=1
if [ "$threads" != 1 ]; then
    cpus=0-$(($(nproc) - 1))
fi
table=../shared/data/routeviews-20151101.ipasn.dat.gz
: >"$dir/empty.txt"
for input in empty v4 v6 mixed; do
    for _ in $(seq "$runs"); do
        start=$(date +%s.%N)
        cpu_ms=$(perf stat -x, -e task-clock taskset -c "$cpus" "$bin" lookup --threads "$threads" --table "$table" \
            <"$dir/$input.txt" 2>&1 >"$dir/out.txt" | grep task-clock | cut -d, -f1)
        end=$(date +%s.%N)
        echo "$input $(echo "$end - $start" | bc) $cpu_ms"
    done
done
