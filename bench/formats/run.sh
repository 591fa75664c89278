#!/usr/bin/env bash
# MaxMind DB / compiled-file benchmark, one run (BENCHMARKS.md, "MaxMind DB,
# ranges and compiled table files"). Builds ipfib, installs the peers from
# PyPI into the test venv, exports the RouteViews tables as a GeoLite2-size
# ASN MMDB with `ipfib compile --output-format mmdb`, then runs bench.py on
# it and on the real iptoasn-country.mmdb.
#   bench/formats/run.sh [N]     (N addresses, default 10M)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
data=${IPFIB_DATA:-$root/../shared/data}
# A venv of its own: maxminddb-polars pins the polars it was built for,
# which need not be the one the test venv pins.
venv=${IPFIB_BENCH_VENV:-$root/target/formats-venv}
n=${1:-10000000}
cargo build --release -q -p ipfib-cli -p ipfib --example image_open
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q numpy pyarrow maturin maxminddb==3.2.0 maxminddb-rust==0.8.0 maxminddb-polars==0.3.0
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps .
"$venv/bin/python" -c 'import polars; print("polars", polars.__version__)'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(zcat "$data/routeviews-rv2-20260730-1400.pfx2as.txt.gz"; zcat "$data/routeviews-rv6-20260730-1400.pfx2as.txt.gz") > "$work/rv.pfx2as"
target/release/ipfib compile "$work/rv.pfx2as" -o "$work/rv-asn.mmdb" --output-format mmdb \
    --mmdb-field autonomous_system_number --mmdb-database-type ipfib-routeviews-asn
echo "== compiled table file (1.1M IPv4 + 259K IPv6)"
/usr/bin/time -f "text load + compile: %e s wall, %M KiB peak" target/release/ipfib compile "$work/rv.pfx2as" -o "$work/rv.ipfib"
target/release/examples/image_open "$work/rv.ipfib" 21
for f in "$work/rv.pfx2as" "$work/rv.ipfib"; do
    /usr/bin/time -f "  ipfib lookup 1 address from $(basename "$f"): %e s wall, %M KiB peak" \
        target/release/ipfib lookup --table "$f" 1.1.1.1 >/dev/null
done
"$venv/bin/python" - "$work/rv.pfx2as" "$work/rv.ipfib" <<'PY'
import statistics, sys, time, ipfib
text, comp = sys.argv[1], sys.argv[2]
def med(f, k=5):
    ts = []
    for _ in range(k):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3, min(ts) * 1e3, max(ts) * 1e3
print("  Python Table.from_file(text): %.1f ms (%.1f-%.1f)" % med(lambda: ipfib.Table.from_file(text), 3))
print("  Python Table.open(compiled):  %.1f ms (%.1f-%.1f)" % med(lambda: ipfib.Table.open(comp), 11))
PY
echo "== MMDB readers"
"$venv/bin/python" bench/formats/bench.py --n "$n" \
    --mmdb "$data/mmdb/iptoasn-country.mmdb:country_code" \
    --mmdb "$work/rv-asn.mmdb:autonomous_system_number" --json "${IPFIB_BENCH_JSON:-/dev/null}"
