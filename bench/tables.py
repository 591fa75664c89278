#!/usr/bin/env python3
"""Turn bench-out/*.json (from bench/run.sh) into the Markdown tables of
BENCHMARKS.md. Usage: python3 bench/tables.py [bench-out]"""
import json
import sys
from pathlib import Path

NAMES = {
    "rv2015": "RouteViews 2015 (routeviews-20151101.ipasn.dat.gz)",
    "rv2-2026": "RouteViews 2026 IPv4 (routeviews-rv2-20260730-1400)",
    "rv6-2026": "RouteViews 2026 IPv6 (routeviews-rv6-20260730-1400)",
    "linx": "LINX 2014 IPv6 (linx-rib-ipv6.20141225.0000.p69)",
    "synthetic-v6-1m": "synthetic IPv6, 1M prefixes (ipfib::gen, seed 6)",
}


def fmt(r):
    return f"{r['mlps_median']:.1f} [{r['mlps_min']:.1f}-{r['mlps_max']:.1f}]"


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
    for stem, title in NAMES.items():
        path = out / f"{stem}.json"
        if not path.exists():
            continue
        rep = json.loads(path.read_text())
        rows = rep["results"]
        for fam in (4, 6):
            fr = [r for r in rows if r["family"] == fam]
            if not fr:
                continue
            print(f"\n#### {title}, IPv{fam}: {fr[0]['prefixes']:,} prefixes\n")
            print("| engine | kernel | batch | uniform MLPS median [min-max] | matched MLPS median [min-max] | build ms | bytes/prefix |")
            print("|---|---|---|---|---|---|---|")
            keys = []
            for r in fr:
                k = (r["engine"], r["kernel"], r["batch"])
                if k not in keys:
                    keys.append(k)
            for k in keys:
                by = {r["trace"]: r for r in fr if (r["engine"], r["kernel"], r["batch"]) == k}
                u, m = by.get("uniform"), by.get("matched")
                any_r = u or m
                print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(u) if u else '-'} | {fmt(m) if m else '-'} "
                      f"| {any_r['build_ms']:.1f} | {any_r['bytes_per_prefix']:.1f} |")


if __name__ == "__main__":
    main()
