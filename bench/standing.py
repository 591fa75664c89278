#!/usr/bin/env python3
"""The standing tables of BENCHMARKS.md from one `bench/peers/run.sh` run.

Reads OUT/NAME/ipfib.v{4,6}.json and OUT/NAME/peers.txt (OUT defaults to
bench-out/peers) and prints two Markdown tables:

1. per table and trace: the best correct peer, the best ipfib path (engine
   and batch size), `auto` at its best batch size, and both ratios to the
   peer;
2. `auto` against the best ipfib engine of the same cell, at batch 1 and
   at batch 32 (the ratio the issue's "within 10%" target is about).

A peer whose checksum differs from ipfib's is not ranked (combine.py shows
it as wrong).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NAMES = {
    "rv2015": {4: "IPv4 606,138 (RouteViews 2015)", 6: "IPv6 27,693 (RouteViews 2015)"},
    "linx": {6: "IPv6 20,440 (LINX 2014)"},
    "rv2-2026": {4: "IPv4 1,107,938 (RouteViews 2026)"},
    "rv6-2026": {6: "IPv6 258,956 (RouteViews 2026)"},
}
ORDER = [("rv2015", 4), ("rv2015", 6), ("linx", 6), ("rv2-2026", 4), ("rv6-2026", 6)]


def kind(trace: str) -> str:
    return Path(trace).name.split(".")[0]


def fmt(m: tuple[float, float, float]) -> str:
    return f"{m[1]:.1f} [{m[0]:.1f}-{m[2]:.1f}]"


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench-out/peers")
    standing = [
        "| table | trace | best correct peer | best ipfib path | B/prefix | vs peer "
        "| auto (chosen) | vs peer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    autos = [
        "| table | trace | batch 1: best engine | auto | auto/best "
        "| batch 32: best engine | auto | auto/best |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, fam in ORDER:
        report = out / name / f"ipfib.v{fam}.json"
        if not report.exists():
            print(f"standing: {report} missing", file=sys.stderr)
            return 2
        rows = json.loads(report.read_text())["results"]
        checksums: dict[str, int] = {}
        for r in rows:
            checksums.setdefault(kind(r["trace"]), r["checksum"])
        peers: dict[str, tuple[str, tuple[float, float, float]]] = {}
        for line in (out / name / "peers.txt").read_text().splitlines():
            f = line.split()
            if len(f) < 10:  # `TRACE NAME FAMILY unfinished`
                continue
            trace, peer, family = f[0], f[1], int(f[2])
            if family != fam or int(f[9]) != checksums.get(trace):
                continue
            m = (float(f[4]), float(f[5]), float(f[6]))
            if trace not in peers or m[1] > peers[trace][1][1]:
                peers[trace] = (peer, m)
        for trace in ("uniform", "matched"):
            cell = [r for r in rows if kind(r["trace"]) == trace and r["engine"] != "radix"]
            best = max(cell, key=lambda r: r["mlps_median"])
            auto = max(
                (r for r in cell if r["engine"] == "auto"),
                key=lambda r: r["mlps_median"],
            )
            peer = peers.get(trace)
            ratio = (lambda r: f"{r['mlps_median'] / peer[1][1]:.2f}x") if peer else (lambda r: "-")
            m = lambda r: (r["mlps_min"], r["mlps_median"], r["mlps_max"])  # noqa: E731
            standing.append(
                f"| {NAMES[name][fam]} | {trace} | "
                + (f"{peer[0]} {fmt(peer[1])}" if peer else "-")
                + f" | {best['engine']} b{best['batch']} {fmt(m(best))} | {best['bytes_per_prefix']:.1f}"
                + f" | {ratio(best)} | b{auto['batch']} {fmt(m(auto))} ({auto.get('chosen', '?')})"
                + f" | {ratio(auto)} |"
            )
            parts = []
            for b in (1, 32):
                at = [r for r in cell if r["batch"] == b]
                if not at:
                    parts.append("- | - | -")
                    continue
                top = max(at, key=lambda r: r["mlps_median"])
                a = next(r for r in at if r["engine"] == "auto")
                parts.append(
                    f"{top['engine']} {top['mlps_median']:.1f} | {a['mlps_median']:.1f} "
                    f"| {a['mlps_median'] / top['mlps_median']:.2f}"
                )
            autos.append(f"| {NAMES[name][fam]} | {trace} | " + " | ".join(parts) + " |")
    print("\n".join(standing))
    print()
    print("\n".join(autos))
    return 0


if __name__ == "__main__":
    sys.exit(main())
