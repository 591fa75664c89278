#!/usr/bin/env bash
# BENCHMARKS.md, "RPKI": every figure of that section, one run.
#   bench/rpki/run.sh [PEERS]      (default 8: 8 x 1.37M = 10.9M routes)
# Needs release builds (cargo build --release -p ipfib-cli; the example is
# built here), ../shared/data, python3; Routinator's `validate` is timed
# when ROUTINATOR names its binary (cargo install routinator), else skipped.
# Pinned to CPU 1 where it times one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
peers=${1:-8}
data=../shared/data
ipfib=target/release/ipfib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p ipfib-cli -p ipfib-collect --example rpki_bench
dump=$data/rib.20260730.1400.first2MiB.mrt.bz2

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
echo "## VRP sets drawn from the data (ipfib rov --generate-vrps)"
$ipfib rov --generate-vrps "$work/rib.json" "$dump" || true   # exit 1: the excerpt ends in a cut record
$ipfib rov --generate-vrps "$work/v4.json" $data/routeviews-rv2-20260730-1400.pfx2as.txt.gz
$ipfib rov --generate-vrps "$work/v6.json" $data/routeviews-rv6-20260730-1400.pfx2as.txt.gz
python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
a, b = json.load(open(f"{d}/v4.json")), json.load(open(f"{d}/v6.json"))
a["roas"] += b["roas"]
json.dump(a, open(f"{d}/tables.json", "w"))
PY

echo "## Re-validation at scale, incremental change, statuses at answer time, memory"
taskset -c 1 target/release/examples/rpki_bench "$work/tables.json" --peers "$peers" --passes 5

echo "## Offline: ipfib rov on the 2026 RIB dump (5 passes; validation rate)"
for _ in 1 2 3 4 5; do
    # (exit 1: the excerpt ends in a cut record)
    { taskset -c 1 $ipfib rov --vrps "$work/rib.json" "$dump" --summary 2>/dev/null || true; } | tail -n 1
done

echo "## Offline, the same (prefix, origin) list for every tool"
{ $ipfib rov --vrps "$work/rib.json" --output json "$dump" 2>/dev/null || true; } |
    python3 -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for line in sys.stdin:
        d = json.loads(line)
        if d["origin_asn"] is not None:
            print(d["prefix"], d["origin_asn"], file=f)
' "$work/routes.txt"
echo "routes: $(wc -l <"$work/routes.txt")"
for _ in 1 2 3; do
    taskset -c 1 $ipfib rov --vrps "$work/rib.json" "$work/routes.txt" --summary 2>/dev/null | tail -n 1
done
taskset -c 1 python3 bench/rpki/plain_rov.py "$work/rib.json" "$work/routes.txt"
if [ -n "${ROUTINATOR:-}" ]; then
    python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
doc = json.load(open(f"{d}/rib.json"))
json.dump({"slurmVersion": 1,
           "validationOutputFilters": {"prefixFilters": [], "bgpsecFilters": []},
           "locallyAddedAssertions": {"prefixAssertions": [
               {"asn": r["asn"], "prefix": r["prefix"], "maxPrefixLength": r["maxLength"]}
               for r in doc["roas"]], "bgpsecAssertions": []}}, open(f"{d}/slurm.json", "w"))
PY
    sed 's/ / => /' "$work/routes.txt" >"$work/routes.routinator"
    mkdir -p "$work/tals" "$work/cache"
    start=$(date +%s.%N)
    taskset -c 1 "$ROUTINATOR" --no-rir-tals --extra-tals-dir "$work/tals" --repository-dir "$work/cache" \
        --exceptions "$work/slurm.json" --disable-rsync --disable-rrdp \
        validate --noupdate -i "$work/routes.routinator" -o "$work/routinator.out" 2>/dev/null
    end=$(date +%s.%N)
    python3 - "$work" "$start" "$end" <<'PY'
import json, subprocess, sys
d, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
n = sum(1 for _ in open(f"{d}/routinator.out"))
print(f"Routinator validate: {n} routes in {t1 - t0:.1f} s = {n / (t1 - t0) / 1e6:.4f} M routes/s (input read included)")
PY
    # Agreement, route for route.
    $ipfib rov --vrps "$work/rib.json" --output json "$work/routes.txt" 2>/dev/null |
        python3 -c '
import json, sys
ours = [json.loads(l)["rov"] for l in sys.stdin]
theirs = [l.rsplit(": ", 1)[1].strip() for l in open(sys.argv[1])]
bad = sum(1 for a, b in zip(ours, theirs) if a != b)
print(f"Routinator and ipfib rov disagree on {bad} of {len(theirs)} routes")
' "$work/routinator.out"
else
    echo "Routinator: skipped (set ROUTINATOR to its binary)"
fi
