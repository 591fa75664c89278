#!/usr/bin/env python3
"""Python bindings benchmark, side by side in one run:

1. ``Table.lookup_many`` on N numpy uint32 addresses against the native
   single-core batch figure of ``ipfib bench`` on the same table and the
   same trace file (read by both);
2. the same enrichment done the way users do it today, one address at a
   time from strings: pytricia, py-radix and pyasn (and ipfib's own scalar
   ``lookup`` and ``lookup_many`` over a list of strings, for reference);
3. loading the table file: ``ipfib.Table.from_file`` against ``pyasn.pyasn``.

Run pinned to one CPU under the shared lock (BENCHMARKS.md, "Python"):

    flock /tmp/ipfib-bench.lock taskset -c 1 python bench/python/bench_lookup.py \\
        --table ../shared/data/routeviews-20151101.ipasn.dat.gz --json bench-out/python.json

Every timed figure: median [min-max] over --runs passes (one discarded
warm-up). Checksums of all answers are compared (per-address peers on the
prefix they answer); any disagreement is printed and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import ipfib

ROOT = Path(__file__).resolve().parents[2]


def timed(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    """Seconds of each of `runs` passes after a warm-up, and the last result."""
    out = fn()
    secs = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        secs.append(time.perf_counter() - t0)
    return secs, out


def rate(n: int, secs: list[float]) -> dict[str, float]:
    """Millions of lookups per second: median, min, max."""
    r = sorted(n / s / 1e6 for s in secs)
    return {"median": statistics.median(r), "min": r[0], "max": r[-1]}


def fmt(r: dict[str, float]) -> str:
    return f"{r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}]"


def trace(table: ipfib.Table, n: int, kind: str, seed: int) -> np.ndarray:
    """IPv4 addresses: uniform over the space, or matched (random
    addresses inside random IPv4 prefixes of the table)."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    nets = [ipaddress.IPv4Network(p) for p in table if ":" not in p]
    base = np.array([int(x.network_address) for x in nets], dtype=np.uint64)
    host = np.array([(1 << (32 - x.prefixlen)) - 1 for x in nets], dtype=np.uint64)
    pick = rng.integers(0, len(nets), n)
    return (base[pick] | (rng.integers(0, 2**32, n, dtype=np.uint64) & host[pick])).astype(np.uint32)


def write_trace(path: Path, addrs: np.ndarray) -> None:
    with path.open("wb") as f:
        f.write(b"IPFIBTR1" + bytes([4]) + bytes(7))
        f.write(addrs.astype(">u4").tobytes())


def native(cli: str, table: str, trace_file: Path, runs: int, out: Path) -> list[dict[str, Any]]:
    """`ipfib bench` rows (batch 32, one thread) on the same table and trace."""
    cmd = [cli, "bench", "--table", table, "--trace", str(trace_file),
           "--engines", "planb,planb-routes,poptrie,poptrie-routes", "--batch", "32",
           "--runs", str(runs), "--json", str(out)]  # fmt: skip
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows: list[dict[str, Any]] = json.loads(out.read_text())["results"]
    return [r for r in rows if r["family"] == 4]


def peers(table_path: str, strs: list[str], runs: int) -> dict[str, dict[str, Any]]:
    """Per-address enrichment with pytricia, py-radix and pyasn: build (or
    load) once, then `value = t[addr]` per string address."""
    routes: list[tuple[str, int]] = []
    with gzip.open(table_path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            p, asn = line.split()
            routes.append((p, int(asn)))
    res: dict[str, dict[str, Any]] = {}

    import pytricia

    # The traces are IPv4: a 32-bit tree of the IPv4 routes (a 128-bit one
    # answers IPv4 strings from a different key space).
    pt = pytricia.PyTricia(32)
    for p, v in routes:
        if ":" not in p:
            pt[p] = v

    def run_pytricia() -> list[Any]:
        get = pt.get
        return [get(a) for a in strs]

    import radix

    rt = radix.Radix()
    for p, v in routes:
        rt.add(p).data["v"] = v

    def run_radix() -> list[Any]:
        best = rt.search_best
        out = []
        for a in strs:
            node = best(a)
            out.append(node.data["v"] if node is not None else None)
        return out

    import pyasn

    asndb = pyasn.pyasn(table_path)

    def run_pyasn() -> list[Any]:
        look = asndb.lookup
        return [look(a)[0] for a in strs]

    for name, fn in (("pytricia", run_pytricia), ("py-radix", run_radix), ("pyasn", run_pyasn)):
        secs, got = timed(fn, runs)
        res[name] = {"rate": rate(len(strs), secs), "answers": got}
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--table", default=str(ROOT.parent / "shared/data/routeviews-20151101.ipasn.dat.gz"))
    ap.add_argument("--len", type=int, default=10_000_000, help="addresses per trace")
    ap.add_argument("--peer-len", type=int, default=1_000_000, help="addresses for per-address peers")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cli", default=str(ROOT / "target/release/ipfib"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    report: dict[str, Any] = {
        "table": args.table,
        "addresses": args.len,
        "cpus": sorted(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    bad = False

    # 3. Load time.
    load_secs, table = timed(lambda: ipfib.Table.from_file(args.table), args.runs)
    import pyasn

    pyasn_secs, _ = timed(lambda: pyasn.pyasn(args.table), args.runs)
    report["load"] = {
        "ipfib_s": sorted(load_secs),
        "pyasn_s": sorted(pyasn_secs),
        "prefixes": len(table),
    }
    print(f"load: ipfib {statistics.median(load_secs) * 1000:.0f} ms "
          f"[{min(load_secs) * 1000:.0f}-{max(load_secs) * 1000:.0f}], pyasn "
          f"{statistics.median(pyasn_secs) * 1000:.0f} ms "
          f"[{min(pyasn_secs) * 1000:.0f}-{max(pyasn_secs) * 1000:.0f}] "
          f"({len(table):,} prefixes)", flush=True)  # fmt: skip

    tables = {e: ipfib.Table.from_file(args.table, engine=e) for e in ("planb", "poptrie")}
    report["traces"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("uniform", "matched"):
            addrs = trace(table, args.len, kind, seed=1)
            tf = Path(tmp) / f"{kind}.trace"
            write_trace(tf, addrs)
            rows = native(args.cli, args.table, tf, args.runs, Path(tmp) / f"{kind}.json")
            entry: dict[str, Any] = {"native": {}, "python": {}, "peers": {}}
            for r in rows:
                entry["native"][r["engine"]] = {
                    "median": r["mlps_median"], "min": r["mlps_min"], "max": r["mlps_max"],
                    "kernel": r.get("kernel"),
                }  # fmt: skip
            answers = {}
            for e, t in tables.items():
                secs, out = timed(lambda t=t: t.lookup_many(addrs), args.runs)
                entry["python"][f"lookup_many[{e}]"] = rate(len(addrs), secs)
                answers[e] = out
            if not (answers["planb"] == answers["poptrie"]).all():
                print("DISAGREE: planb and poptrie lookup_many", file=sys.stderr)
                bad = True
            # Per-address paths on the first --peer-len addresses, as strings.
            k = min(args.peer_len, len(addrs))
            strs = [str(ipaddress.IPv4Address(int(a))) for a in addrs[:k]]
            want = answers["planb"][:k].tolist()
            secs, got = timed(lambda: table.lookup_many(strs), args.runs)
            entry["python"]["lookup_many[planb] (list of str)"] = rate(k, secs)
            secs, got1 = timed(lambda: [table.lookup(a) for a in strs], args.runs)
            entry["python"]["lookup (one str at a time)"] = rate(k, secs)
            if got.tolist() != want or [0 if v is None else v for v in got1] != want:
                print("DISAGREE: ipfib string paths", file=sys.stderr)
                bad = True
            for name, res in peers(args.table, strs, args.runs).items():
                entry["peers"][name] = res["rate"]
                if [0 if v is None else v for v in res["answers"]] != want:
                    print(f"DISAGREE: {name} answers differ from ipfib", file=sys.stderr)
                    bad = True
            report["traces"][kind] = entry
            print_trace(kind, entry)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return 1 if bad else 0


def print_trace(kind: str, e: dict[str, Any]) -> None:
    py = e["python"]["lookup_many[planb]"]["median"]
    print(f"\n### {kind} trace: MLPS median [min-max]\n")
    print("| what | MLPS | lookup_many[planb] / this |")
    print("|---|---|---|")
    for name, r in e["native"].items():
        print(f"| native ipfib bench {name} (batch 32) | {fmt(r)} | {py / r['median']:.2f} |")
    for name, r in e["python"].items():
        print(f"| Python {name} | {fmt(r)} | {py / r['median']:.2f} |")
    for name, r in e["peers"].items():
        print(f"| {name} (one str at a time) | {fmt(r)} | {py / r['median']:.0f}x |")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
