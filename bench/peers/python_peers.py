#!/usr/bin/env python3
"""Python peer drivers: pytricia and py-radix, one address at a time from
Python (what flow-enrichment scripts do today), on ipfib's table and trace
files. Prints the result line bench/peers/run.sh collects:

    NAME FAMILY ADDRESSES min median max build_ms bytes checksum

Usage: python_peers.py pytricia|py-radix TABLE TRACE [RUNS]
Addresses are handed over as strings (both libraries' usual input), made
before timing. `bytes` is 0: neither library reports its footprint.
"""

from __future__ import annotations

import ipaddress
import statistics
import sys
import time
from typing import Callable

NO_ROUTE = 0xFFFFFFFF


def read_trace(path: str) -> tuple[int, list[str]]:
    data = open(path, "rb").read()
    if data[:8] != b"IPFIBTR1":
        sys.exit(f"python_peers: {path}: not an IPFIBTR1 trace")
    family = data[8]
    width = 4 if family == 4 else 16
    body = data[16:]
    make = ipaddress.IPv4Address if family == 4 else ipaddress.IPv6Address
    return family, [str(make(body[i : i + width])) for i in range(0, len(body), width)]


def build(algo: str, family: int, table: str) -> Callable[[str], int | None]:
    routes = [line.split() for line in open(table)]
    if algo == "pytricia":
        import pytricia

        t = pytricia.PyTricia(32 if family == 4 else 128)
        for p, v in routes:
            t[p] = int(v)
        return t.get
    if algo == "py-radix":
        import radix

        r = radix.Radix()
        for p, v in routes:
            r.add(p).data["v"] = int(v)

        def get(a: str) -> int | None:
            node = r.search_best(a)
            return None if node is None else node.data["v"]

        return get
    sys.exit(f"python_peers: unknown algorithm {algo} (pytricia, py-radix)")


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    algo, table, trace = sys.argv[1:4]
    runs = max(1, int(sys.argv[4])) if len(sys.argv) > 4 else 3
    family, addrs = read_trace(trace)
    t0 = time.perf_counter()
    get = build(algo, family, table)
    build_ms = (time.perf_counter() - t0) * 1e3
    out: list[int] = []

    def one_pass() -> None:
        nonlocal out
        out = [NO_ROUTE if (v := get(a)) is None else v for a in addrs]

    one_pass()  # warm-up
    mlps = []
    for _ in range(runs):
        s = time.perf_counter()
        one_pass()
        mlps.append(len(addrs) / (time.perf_counter() - s) / 1e6)
    h = 0
    for v in out:
        h = (h * 0x100000001B3 + v + 1) & 0xFFFFFFFFFFFFFFFF
    print(f"{algo} {family} {len(addrs)} {min(mlps):.2f} {statistics.median(mlps):.2f} "
          f"{max(mlps):.2f} {build_ms:.1f} 0 {h}")


if __name__ == "__main__":
    main()
