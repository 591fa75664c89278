#!/usr/bin/env python3
"""Combine `bench/peers/run.sh` output into one Markdown table per table file.

Reads OUT/NAME/ipfib.v{4,6}.json (`ipfib bench --json`) and OUT/NAME/peers.txt
(lines `TRACE NAME FAMILY ADDRESSES MIN MEDIAN MAX BUILD_MS BYTES CHECKSUM`).
For ipfib, each engine's best batch/kernel per trace is shown. A peer whose
checksum differs from ipfib's on the same trace answered some address
differently: it is shown as wrong and not ranked.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    name: str
    family: int
    trace: str
    mlps: tuple[float, float, float]  # min, median, max
    build_ms: float
    bytes: int
    checksum: int


def trace_kind(name: str) -> str:
    return Path(name).name.split(".")[0]


def ipfib_results(path: Path) -> tuple[list[Result], int]:
    report = json.loads(path.read_text())
    best: dict[tuple[str, str], Result] = {}
    prefixes = 0
    for r in report["results"]:
        prefixes = r["prefixes"]
        path_name = r["engine"] if r["kernel"] == "-" else f"{r['engine']} {r['kernel']} b{r['batch']}"
        res = Result(
            f"ipfib {path_name}",
            r["family"],
            trace_kind(r["trace"]),
            (r["mlps_min"], r["mlps_median"], r["mlps_max"]),
            r["build_ms"],
            r["footprint_bytes"],
            r["checksum"],
        )
        key = (r["engine"], res.trace)
        if key not in best or res.mlps[1] > best[key].mlps[1]:
            best[key] = res
    return list(best.values()), prefixes


def peer_results(path: Path) -> list[Result]:
    """Result lines; a peer stopped at the time limit (`TRACE NAME FAMILY
    unfinished`) becomes a result with no figures (checksum -1)."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == "unfinished":
            out.append(Result(f[1], int(f[2]), f[0], (0.0, 0.0, 0.0), 0.0, 0, -1))
            continue
        if len(f) != 10:
            continue
        out.append(
            Result(f[1], int(f[2]), f[0], (float(f[4]), float(f[5]), float(f[6])),
                   float(f[7]), int(f[8]), int(f[9]))
        )
    return out


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out/peers")
    for table_dir in sorted(p for p in out.iterdir() if p.is_dir()):
        peers = peer_results(table_dir / "peers.txt")
        for fam in (4, 6):
            js = table_dir / f"ipfib.v{fam}.json"
            if not js.exists():
                continue
            mine, prefixes = ipfib_results(js)
            rows = mine + [p for p in peers if p.family == fam]
            print(f"\n#### {table_dir.name}, IPv{fam}: {prefixes:,} prefixes\n")
            print("| engine | trace | MLPS median [min-max] | build ms | bytes/prefix | answers |")
            print("|---|---|---|---|---|---|")
            for trace in ("uniform", "matched"):
                ref = next((r.checksum for r in mine if r.trace == trace and r.name.startswith("ipfib planb")), None)
                for r in sorted((r for r in rows if r.trace == trace), key=lambda r: -r.mlps[1]):
                    if r.checksum == -1:
                        print(f"| {r.name} | {trace} | - | - | - | did not finish in the time limit |")
                        continue
                    ok = "same as ipfib" if r.checksum == ref else "**wrong** (checksum differs)"
                    print(f"| {r.name} | {trace} | {r.mlps[1]:.1f} [{r.mlps[0]:.1f}-{r.mlps[2]:.1f}] "
                          f"| {r.build_ms:.1f} | {r.bytes / max(prefixes, 1):.1f} | {ok} |")


if __name__ == "__main__":
    main()
