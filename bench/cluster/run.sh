#!/usr/bin/env bash
# Cluster enrichment benchmark, one run: IP -> origin AS on Spark (local
# mode) and Dask (LocalCluster, worker processes), ipfib (ipfib.spark /
# ipfib.dask enrich: one lookup_many per Arrow batch or partition, the
# compiled table memory-mapped once per worker process) against the usual
# way (a per-row Python function around maxminddb and around pyasn, the
# reader opened once per worker process), on the same flows dataset,
# tables and cluster; end-to-end rows/s (read Parquet, add src_asn, force
# every row), ratios, and the memory the table costs per worker.
#   bench/cluster/run.sh [ROWS]     (ROWS flow records, default 20M)
# Builds ipfib-cli and a venv of its own (target/cluster-venv, or
# $IPFIB_BENCH_VENV) with ipfib from this checkout and the pinned peers;
# IPFIB_BENCH_SKIP_BUILD=1 uses that venv (and target/release/ipfib, or
# the Python API when it is not built) as they are. Writes the inputs to a
# temporary directory (removed at exit): the merged RouteViews pfx2as table
# (1.1M IPv4 + 259K IPv6 routes) as a compiled ipfib file, as an ASN MMDB
# and as a pyasn .dat, and the flows (python/examples/flows.py, 8 files).
# The JSON result goes to $IPFIB_BENCH_JSON when set; $IPFIB_BENCH_ARGS are
# more bench.py arguments (e.g. "--only ipfib --skip dask", "--passes 5").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
data=${IPFIB_DATA:-$root/../shared/data}
venv=${IPFIB_BENCH_VENV:-$root/target/cluster-venv}
rows=${1:-20000000}
py="$venv/bin/python"
if [ "${IPFIB_BENCH_SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p ipfib-cli
    [ -x "$py" ] || python3 -m venv "$venv"
    "$py" -m pip install -q numpy==2.4.6 pyarrow==26.0.1 pandas==3.1.1 maturin==1.16.0 pyspark==4.3.0 \
        "dask[dataframe,distributed]==2026.8.0" distributed==2026.8.0 \
        maxminddb==3.2.0 pyasn==1.6.2
    "$py" -m pip install -q --force-reinstall --no-deps .
fi
"$py" -c 'import ipfib, pyspark, dask, maxminddb, pyasn'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(zcat "$data/routeviews-rv2-20260730-1400.pfx2as.txt.gz"; zcat "$data/routeviews-rv6-20260730-1400.pfx2as.txt.gz") > "$work/rv.pfx2as"
if [ -x target/release/ipfib ]; then
    target/release/ipfib compile "$work/rv.pfx2as" -o "$work/rv.ipfib"
    target/release/ipfib compile "$work/rv.pfx2as" -o "$work/rv-asn.mmdb" --output-format mmdb \
        --mmdb-field autonomous_system_number --mmdb-database-type ipfib-routeviews-asn
else
    echo "(target/release/ipfib not built: tables compiled with the Python API)"
    "$py" - "$work" <<'PY'
import sys, ipfib
w = sys.argv[1]
t = ipfib.Table.from_file(f"{w}/rv.pfx2as")
t.save(f"{w}/rv.ipfib")
t.to_mmdb(f"{w}/rv-asn.mmdb", field="autonomous_system_number",
          database_type="ipfib-routeviews-asn")
PY
fi
# pyasn's IPASN .dat: ';' comments, PREFIX/LEN<TAB>ASN (the same routes).
awk '/^#/ { print ";" substr($0, 2); next } NF { print $1 "\t" $2 }' "$work/rv.pfx2as" > "$work/rv.dat"
echo "== flows: $rows rows"
/usr/bin/time -f "  written in %e s" "$py" python/examples/flows.py "$work/flows" "$rows" --files 8 --data "$data"
"$py" bench/cluster/bench.py --flows "$work/flows" --ipfib "$work/rv.ipfib" \
    --mmdb "$work/rv-asn.mmdb" --ipasn "$work/rv.dat" --json "${IPFIB_BENCH_JSON:-/dev/null}" \
    ${IPFIB_BENCH_ARGS:-}
