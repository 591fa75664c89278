#!/usr/bin/env python3
"""The reference rows (best correct peer, measured on this machine
kind) next to ipfib's best path in bench-out/*.json."""
import json
import sys
from pathlib import Path

REFS = [
    ("rv2015", 4, "uniform", "IPv4 606,138 (RouteViews 2015)", "Poptrie C reference, s=18", "153"),
    ("rv2015", 4, "matched", "IPv4 606,138", "DPDK rte_fib (AVX-512)", "221"),
    ("rv2015", 6, "matched", "IPv6 27,693 (RouteViews 2015)", "DPDK rte_fib6 (AVX-512)", "118"),
    ("linx", 6, "matched", "IPv6 20,440 (LINX 2014)", "DPDK rte_fib6 (AVX-512)", "212"),
    ("rv2-2026", 4, "uniform", "IPv4 1,107,938 (RouteViews 2026)", "DPDK rte_fib (AVX-512)", "114-130"),
    ("rv2-2026", 4, "matched", "IPv4 1,107,938", "DPDK rte_fib (AVX-512)", "201-211"),
    ("rv6-2026", 6, "uniform", "IPv6 258,956 (RouteViews 2026)", "Poptrie C reference, s=16", "295"),
    ("rv6-2026", 6, "matched", "IPv6 258,956", "DPDK rte_fib6 (AVX-512)", "113"),
]

out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
print("| table | trace | best correct peer | reference MLPS | best ipfib path | ipfib MLPS median [min-max] | median / reference |")
print("|---|---|---|---|---|---|---|")
for stem, fam, trace, name, peer, ref in REFS:
    rows = [r for r in json.loads((out / f"{stem}.json").read_text())["results"]
            if r["family"] == fam and r["trace"] == trace and r["engine"] != "radix"]
    b = max(rows, key=lambda r: r["mlps_median"])
    top = float(ref.split("-")[-1])
    print(f"| {name} | {trace} | {peer} | {ref} | {b['engine']} {b['kernel']} batch {b['batch']} "
          f"| {b['mlps_median']:.1f} [{b['mlps_min']:.1f}-{b['mlps_max']:.1f}] | {b['mlps_median'] / top:.2f}x |")
