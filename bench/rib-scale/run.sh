#!/usr/bin/env bash
# The RIB at 20 and 5 full-table peers (crates/ipfib-rib/examples/rib_scale.rs):
# builds the example, runs it once per peer count (one process each, so
# the 5-peer RSS is not the 20-peer run's heap), prints one Markdown table.
#
#   bench/rib-scale/run.sh [PASSES (3)] [PEER COUNTS ("20 5")]
#
# Logs: target/rib-scale/<N>peers.log. The 20-peer run takes about 8-10
# minutes and ~7 GB; the machine's load average before and after each
# run is printed (other jobs on the 2 vCPUs move every figure).
set -euo pipefail
cd "$(dirname "$0")/../.."
passes=${1:-3}
counts=${2:-"20 5"}
cargo build --release -p ipfib-rib --example rib_scale
bin=target/release/examples/rib_scale
out=target/rib-scale
mkdir -p "$out"
lscpu | grep -E 'Model name|CPU family|^Model:' | sed 's/  */ /g'
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates/ipfib-rib || echo ' (RIB modified)')"
for n in $counts; do
    echo "== $n peers, $passes passes; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    phases=load,snapshot,writer-max,lookups,removal,gen-stats
    # The real dump's sharing once (it does not depend on N).
    [ "$n" = "$(echo $counts | cut -d' ' -f1)" ] && phases=stats,$phases
    /usr/bin/time -v "$bin" --peers "$n" --passes "$passes" --phases "$phases" \
        >"$out/${n}peers.log" 2>"$out/${n}peers.time"
    echo "   done in $(grep -F 'Elapsed (wall' "$out/${n}peers.time" | awk '{print $NF}'), max RSS $(grep -F 'Maximum resident' "$out/${n}peers.time" | awk '{print $NF}') KB; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
# One table: figure | N peers | ... (rows as the first run printed them).
python3 - "$out" $counts <<'PY'
import sys
out, counts = sys.argv[1], sys.argv[2:]
cols, order = {}, []
for n in counts:
    rows = {}
    for line in open(f"{out}/{n}peers.log"):
        if line.startswith("| ") and not line.startswith("| figure"):
            k, v = [x.strip() for x in line.strip().strip("|").split("|", 1)]
            rows[k] = v
            if k not in order:
                order.append(k)
    cols[n] = rows
print()
print("| figure | " + " | ".join(f"{n} peers" for n in counts) + " |")
print("|---|" + "---|" * len(counts))
for k in order:
    print(f"| {k} | " + " | ".join(cols[n].get(k, "") for n in counts) + " |")
PY
echo
echo "Sharing measured on the real dump and on each generated RIB:"
for n in $counts; do grep -A8 '^### Sharing' "$out/${n}peers.log"; done
