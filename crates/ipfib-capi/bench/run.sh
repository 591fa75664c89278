#!/usr/bin/env bash
# The C ABI benchmark (README.md, "Benchmark"): C ABI batch and single
# lookups against the Rust engine's lookup_batch::<32> and lookup, on the
# same compiled table file and the same 1,000,000 addresses matched to it,
# both pinned to one CPU, the two sides alternated ROUNDS times (PASSES
# passes each) so that they share whatever else the machine is doing.
# Prints, per measure, the median of the round medians and the range over
# every pass. Then pytricia and py-radix single lookups, if PYTHON (a venv
# with both) is given.
#   crates/ipfib-capi/bench/run.sh [ROUNDS [PASSES [CPU]]]
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-5} passes=${2:-9} cpu=${3:-1}
data=${IPFIB_SHARED_DATA:-../shared/data}
out=${OUT:-target/capi-bench}
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$out"
cargo build --release --locked -p ipfib-capi --example capi-bench-rust
cc -O2 -std=c11 -Wall -Wextra -I crates/ipfib-capi/include crates/ipfib-capi/bench/bench_capi.c \
    -L "$target/release" -Wl,-rpath,"$PWD/$target/release" -lipfib -o "$out/bench_capi"
rust=$target/release/examples/capi-bench-rust

summary() {
    awk -F': median ' '/ over / {
        name=$1; split($2, a, " "); med=a[1]
        match($2, /\[[0-9.]+-[0-9.]+\]/); r=substr($2, RSTART+1, RLENGTH-2); split(r, mm, "-")
        k=++cnt[name]; meds[name, k]=med
        if (!(name in lo) || mm[1]+0 < lo[name]) lo[name]=mm[1]+0
        if (!(name in hi) || mm[2]+0 > hi[name]) hi[name]=mm[2]+0
    } END {
        for (n in cnt) {
            m=cnt[n]; for (i=1;i<=m;i++) v[i]=meds[n,i]+0
            for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (v[j]<v[i]) {t=v[i];v[i]=v[j];v[j]=t}
            printf "  %-30s median %.1f M/s [%.1f-%.1f]\n", n, v[int((m+1)/2)], lo[n], hi[n]
        }
    }' "$1" | sort
}

for fam in 4 6; do
    table=$data/routeviews-rv$([ $fam = 4 ] && echo 2 || echo 6)-20260730-1400.pfx2as.txt.gz
    img=$out/rv$fam.ipfib addrs=$out/addrs$fam.bin log=$out/rounds$fam.txt
    # Compiled once: `auto` may pick another engine on another compilation.
    "$rust" "$table" "$img" "$addrs" $fam 1000000 1 >/dev/null
    : >"$log"
    for _ in $(seq "$rounds"); do
        taskset -c "$cpu" "$rust" - "$img" "$addrs" $fam 0 "$passes" >>"$log"
        taskset -c "$cpu" "$out/bench_capi" "$img" "$addrs" $fam "$passes" >>"$log"
    done
    echo "IPv$fam: $(grep -m1 '^engine' "$log"); checksums: $(grep -o 'checksum [0-9]*' "$log" | sort -u | tr '\n' ' ')"
    summary "$log"
    if [ -n "${PYTHON:-}" ]; then
        taskset -c "$cpu" "$PYTHON" crates/ipfib-capi/bench/py_single.py "$table" "$addrs" $fam 200000 5 |
            sed 's/^/  /'
    fi
done
