#!/usr/bin/env python3
"""``Table.lookup_many`` and ``Table.count_many`` with ``threads=N``: the
scaling of one call over N threads, on one shared table, in one run.

    flock /tmp/ipfib-bench.lock target/pyvenv/bin/python bench/python/threads.py \\
        [--n 20000000] [--threads 1,2] [--runs 5]

Input: N numpy uint32 IPv4 addresses, half drawn inside the table's
prefixes (matched) and half uniformly random, and N/4 IPv6 addresses of
the 6Gen hitlist as (N, 16) bytes; the table: the 2026 RouteViews IPv4 and
IPv6 prefix-to-AS tables. Not pinned (the threads are the point); run it
alone. Each figure: million addresses per second, median [min-max] of
--runs timed calls after one warm-up; the speedup over threads=1 from the
medians. Every thread count's answers must equal threads=1's (exit status
1 otherwise).
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import ipfib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lookup import timed  # noqa: E402 (this folder is not a package)

DATA = Path(os.environ.get("IPFIB_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def inputs(t: ipfib.Table, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    nets = [ipaddress.ip_network(p) for p, _ in t.items() if ":" not in p]
    lo = np.array([int(x.network_address) for x in nets], dtype=np.uint64)
    size = np.array([x.num_addresses for x in nets], dtype=np.uint64)
    pick = rng.integers(0, len(nets), n // 2)
    inside = lo[pick] + (rng.random(n // 2) * size[pick]).astype(np.uint64)
    v4 = np.concatenate([inside.astype(np.uint32), rng.integers(0, 2**32, n - n // 2, np.uint32)])
    rng.shuffle(v4)
    hitlist = DATA / "traces" / "ipv6-hitlist-responsive-6gan-2021.txt.gz"
    with gzip.open(hitlist, "rt") as f:
        six = [
            ipaddress.IPv6Address(line.strip()).packed
            for line in f
            if line.strip() and not line.startswith("#")
        ]
    k = n // 4
    rows = (six * (k // len(six) + 1))[:k]
    v6 = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(-1, 16)
    return {"IPv4 uint32": v4, "IPv6 (N,16) bytes": v6}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--rib",
        action="store_true",
        help="also Rib.lookup_many on the 20-peer RouteViews 2026 dump (its first 2 MiB)",
    )
    args = ap.parse_args()
    threads = [int(x) for x in args.threads.split(",")]
    t0 = time.perf_counter()
    routes = []
    for f in (
        "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
        "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
    ):
        routes += ipfib.Table.from_file(DATA / f).items()
    t = ipfib.Table.from_prefixes(routes)
    print(f"table: {len(t)} prefixes in {time.perf_counter() - t0:.1f} s; CPUs {os.cpu_count()}")
    ok = True
    print("| call | input | threads | M addresses/s | speedup |")
    print("|---|---|---|---|---|")
    cases = [(name, a, t) for name, a in inputs(t, args.n).items()]
    if args.rib:
        dump = DATA / "rib.20260730.1400.first2MiB.mrt.bz2"
        rib = ipfib.Rib.from_mrt(dump)
        prefixes = ipfib.Table.from_file(dump)
        print(f"RIB: {dump.name}, {len(prefixes)} prefixes")
        cases.append(("RIB IPv4 uint32", inputs(prefixes, args.n // 4)["IPv4 uint32"], rib))
    for name, a, t in cases:
        if isinstance(t, ipfib.Rib):
            calls = {"Rib.lookup_many": lambda a=a, n=1, r=t: r.lookup_many(a, threads=n)}
            same = lambda x, y: all(np.array_equal(x[k], y[k]) for k in x)  # noqa: E731
        else:
            same = np.array_equal
            calls = {
                "lookup_many": lambda a=a, n=1, t=t: t.lookup_many(a, threads=n),
                "lookup_many dtype=uint32": lambda a=a, n=1, t=t: t.lookup_many(
                    a, dtype=np.uint32, threads=n
                ),
                "count_many": lambda a=a, n=1, t=t: t.count_many(a, threads=n),
            }
        for call, f in calls.items():
            base_rate = None
            base_out = None
            for n in threads:
                times, out = timed(lambda f=f, n=n: f(n=n), args.runs)
                rates = [len(a) / s / 1e6 for s in times]
                med = statistics.median(rates)
                if base_out is None:
                    base_out, base_rate = out, med
                elif not same(out, base_out):
                    print(f"MISMATCH: {call} {name} threads={n}", file=sys.stderr)
                    ok = False
                speed = med / base_rate if base_rate else 1.0
                print(
                    f"| {call} | {name} | {n} | {med:.1f} [{min(rates):.1f}-{max(rates):.1f}]"
                    f" | {speed:.2f}x |"
                )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
