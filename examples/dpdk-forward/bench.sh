#!/usr/bin/env bash
# The forwarding pipeline's figures (BENCHMARKS.md, "A DPDK forwarding
# pipeline"): examples/dpdk-forward on each real table's matched trace
# (bench/peers/make_inputs.py, the standing's inputs), as 64-byte frames,
# forwarded round and round on a ring port (--loop: the timed part is RX,
# parse, LPM, rewrite and TX, no file I/O), on one pinned core, with
# --lpm ipfib, fib (rte_fib / rte_fib6) and lpm (rte_lpm / rte_lpm6) in one
# run. Prints a Markdown table: Mpps median [min-max] over the passes, TSC
# cycles per packet (medians), of them in the LPM calls and in the refill
# (the emulated NIC DMA of --loop), and ipfib's Mpps over the best DPDK
# library's.
#
# Usage: examples/dpdk-forward/bench.sh [OUT]      (default bench-out/forward)
# Env: CPU (1), PASSES (5), PASS_SECONDS (2), TRACE_LEN (1000000),
#      LPMS ("ipfib fib lpm"), TABLES (rv2015 linx rv2-2026 rv6-2026)
# Needs libdpdk-dev (scripts/live-parts installs it) and ../shared/data.
# rte_lpm6 takes about three minutes to load the 2026 IPv6 table.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench-out/forward}
cpu=${CPU:-1}
passes=${PASSES:-5}
secs=${PASS_SECONDS:-2}
len=${TRACE_LEN:-1000000}
data=${IPFIB_SHARED_DATA:-../shared/data}
mkdir -p "$out"
out=$(cd "$out" && pwd)

pkg-config --exists libdpdk || { echo "bench.sh: libdpdk-dev missing (scripts/live-parts)" >&2; exit 2; }
cargo build --release --locked -p ipfib-capi >&2
lib=$PWD/target/release
sed -e "s|@PREFIX@|$lib|" -e "s|@LIBDIR@|$lib|" -e "s|@INCLUDEDIR@|$PWD/crates/ipfib-capi/include|" \
    -e "s|@VERSION@|0|" crates/ipfib-capi/ipfib.pc.in >"$out/ipfib.pc"
PKG_CONFIG_PATH=$out LDFLAGS="-Wl,-rpath,$lib" make -s -B -f "$PWD/examples/dpdk-forward/Makefile" -C "$out" >&2

declare -A file=(
    [rv2015]=routeviews-20151101.ipasn.dat.gz
    [linx]=linx-rib-ipv6.20141225.0000.p69.txt.gz
    [rv2-2026]=routeviews-rv2-20260730-1400.pfx2as.txt.gz
    [rv6-2026]=routeviews-rv6-20260730-1400.pfx2as.txt.gz
)
results=$out/results.txt
: >"$results"
for name in ${TABLES:-rv2015 linx rv2-2026 rv6-2026}; do
    dir=$out/$name
    [ -f "$dir/.done" ] || { python3 bench/peers/make_inputs.py --table "$data/${file[$name]}" \
        --out "$dir" --len "$len" >&2 && touch "$dir/.done"; }
    for fam in 4 6; do
        [ -f "$dir/table.v$fam.txt" ] || continue
        pcap=$dir/matched.v$fam.pcap
        [ -f "$pcap" ] || python3 examples/dpdk-forward/make-pcap.py \
            --trace "$dir/matched.v$fam.trace" --out "$pcap" >&2
        for lpm in ${LPMS:-ipfib fib lpm}; do
            echo "== $name IPv$fam $lpm" >&2
            taskset -c "$cpu" "$out/dpdk-forward" --no-huge --no-pci -m 4096 --no-shconf \
                --no-telemetry --log-level=error --force-max-simd-bitwidth=512 -l "$cpu" \
                --vdev "net_pcap0,rx_pcap=$pcap" -- \
                --table "$dir/table.v$fam.txt" --lpm "$lpm" --loop --room 128 --warmup 1 --seconds "$secs" --passes "$passes" |
                sed "s/^/$name $fam /" | tee -a "$results" >&2
        done
    done
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, fam, _, *kv = line.split()
    f = dict(x.split("=", 1) for x in kv)
    rows.setdefault((name, fam), {}).setdefault(f["lpm"], []).append(f)
print("| table | family | LPM | Mpps median [min-max] | cycles/packet | of them LPM | of them refill | ipfib / best DPDK |")
print("|---|---|---|---|---|---|---|---|")
for (name, fam), by in rows.items():
    med = {l: statistics.median(float(p["mpps"]) for p in ps) for l, ps in by.items()}
    dpdk = max((m for l, m in med.items() if l != "ipfib"), default=None)
    for l, ps in by.items():
        mpps = [float(p["mpps"]) for p in ps]
        bad = sum(int(p["miss"]) + int(p["ttl"]) + int(p["other"]) + int(p["tx_full"]) for p in ps)
        assert bad == 0, f"{name} IPv{fam} {l}: {bad} packets dropped in a timed pass"
        assert all(int(p["packets"]) > 0 for p in ps), f"{name} IPv{fam} {l}: an empty pass"
        cyc = statistics.median(float(p["cycles_per_packet"]) for p in ps)
        lk = statistics.median(float(p["lookup_cycles_per_packet"]) for p in ps)
        rf = statistics.median(float(p["refill_cycles_per_packet"]) for p in ps)
        ratio = f"{med['ipfib'] / dpdk:.2f}x" if l == "ipfib" and dpdk else ""
        print(f"| {name} | IPv{fam} | {l} | {med[l]:.2f} [{min(mpps):.2f}-{max(mpps):.2f}] "
              f"| {cyc:.0f} | {lk:.0f} ({lk / cyc:.0%}) | {rf:.0f} | {ratio} |")
EOF
