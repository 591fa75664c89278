#!/usr/bin/env python3
"""``Table.lookup_many`` on numpy ``uint32`` input: the first call of a fresh
process against the later calls of the same process, per output dtype,
beside the native ``ipfib bench`` batch rate on the same table and trace.

Each measurement runs in its own fresh Python process (``--procs`` of them
per row): load the table, read the trace file (its pages are touched before
timing, as a user's input is), then ``--calls`` calls of
``out = t.lookup_many(addrs, dtype=...)`` in a loop, as a user writes it
(each call returns a new array; the previous one is freed after it).
Every call is timed with ``time.perf_counter`` and ``resource.getrusage``
(user, system time and minor faults), so a CPU shared with another job
shows as wall time above CPU time instead of as a slow engine.

Run pinned to one CPU (the children inherit the affinity), under the shared
lock:

    flock /tmp/ipfib-bench.lock taskset -c 1 target/pyvenv/bin/python \\
        bench/python/first_call.py --json bench-out/first_call.json

Figures: MLPS median [min-max]; "first" over the processes' first calls,
"later" over every later call of every process. Every process's answers
are checksummed and must agree across processes and dtypes (exit status 1
otherwise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HEADER = 16  # IPFIBTR1, family byte, 7 reserved bytes


def write_trace(path: Path, n: int, seed: int) -> None:
    """`n` uniform random IPv4 addresses as an `IPFIBTR1` trace file."""
    addrs = np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint64)
    with path.open("wb") as f:
        f.write(b"IPFIBTR1" + bytes([4]) + bytes(7))
        f.write(addrs.astype(">u4").tobytes())


def child(args: argparse.Namespace) -> int:
    """One fresh process: load, read the trace, time `--calls` calls."""
    import ipfib

    table = ipfib.Table.from_file(args.table, engine=args.engine)
    raw = np.fromfile(args.trace, dtype=">u4", offset=HEADER)
    addrs = raw.astype(np.uint32)
    del raw
    kw: dict[str, Any] = {} if args.dtype == "none" else {"dtype": args.dtype}
    calls = []
    out = None
    for _ in range(args.calls):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        out = table.lookup_many(addrs, **kw)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        calls.append(
            {
                "wall_s": wall,
                "user_s": r1.ru_utime - r0.ru_utime,
                "sys_s": r1.ru_stime - r0.ru_stime,
                "minflt": r1.ru_minflt - r0.ru_minflt,
            }
        )
    assert out is not None
    digest = hashlib.sha256(out.astype(np.int64).tobytes()).hexdigest()
    json.dump({"calls": calls, "dtype": str(out.dtype), "sha256": digest}, sys.stdout)
    return 0


def stats(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"median": statistics.median(v), "min": v[0], "max": v[-1]}


def fmt(s: dict[str, float], digits: int = 1) -> str:
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def native(
    cli: str, table: str, engine: str, trace: Path, runs: int, tmp: Path
) -> dict[str, float]:
    """`ipfib bench` batch-32 MLPS (IPv4) on the same table and trace:
    median, min, max over its passes."""
    out = tmp / "native.json"
    cmd = [cli, "bench", "--table", table, "--trace", str(trace), "--engines", engine,
           "--batch", "32", "--runs", str(runs), "--pin", str(min(os.sched_getaffinity(0))),
           "--json", str(out)]  # fmt: skip
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows = json.loads(out.read_text())["results"]
    row = next(r for r in rows if r["family"] == 4)
    return {k: float(row[f"mlps_{k}"]) for k in ("median", "min", "max")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--table", default=str(ROOT.parent / "shared/data/routeviews-20151101.ipasn.dat.gz")
    )
    ap.add_argument("--engine", default="planb")
    ap.add_argument("--len", default="10000000,20000000", help="addresses per trace (a list)")
    ap.add_argument("--dtypes", default="none,uint32", help="'none' passes no dtype argument")
    ap.add_argument("--procs", type=int, default=7, help="fresh processes per row")
    ap.add_argument("--calls", type=int, default=5, help="calls per process")
    ap.add_argument("--runs", type=int, default=5, help="ipfib bench timed passes")
    ap.add_argument("--cli", default=str(ROOT / "target/release/ipfib"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--trace", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((ln.split(":", 1)[1].strip() for ln in lscpu.splitlines()
                  if ln.startswith("Model name")), "?")  # fmt: skip
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    report: dict[str, Any] = {
        "cpu": model,
        "cpus": sorted(os.sched_getaffinity(0)),
        "thp": thp.read_text().strip() if thp.exists() else "?",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "table": args.table,
        "engine": args.engine,
        "rows": [],
    }
    print(f"# {model}, CPUs {report['cpus']}, THP {report['thp']}, "
          f"Python {report['python']}, numpy {report['numpy']}", flush=True)  # fmt: skip
    bad = False
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for n in (int(x) for x in args.len.split(",")):
            trace = tmp / f"uniform-{n}.trace"
            write_trace(trace, n, seed=1)
            ref = native(args.cli, args.table, args.engine, trace, args.runs, tmp)
            digests = set()
            for dtype in args.dtypes.split(","):
                procs = []
                for _ in range(args.procs):
                    cmd = [sys.executable, __file__, "--child", "--table", args.table,
                           "--engine", args.engine, "--trace", str(trace), "--dtype", dtype,
                           "--calls", str(args.calls)]  # fmt: skip
                    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
                    procs.append(json.loads(done.stdout))
                digests |= {p["sha256"] for p in procs}
                first = [p["calls"][0] for p in procs]
                later = [c for p in procs for c in p["calls"][1:]]

                def mlps(
                    cs: list[dict[str, float]], key: str = "wall_s", n: int = n
                ) -> list[float]:
                    return [n / c[key] / 1e6 for c in cs]

                def cpu(cs: list[dict[str, float]], n: int = n) -> list[float]:
                    return [n / (c["user_s"] + c["sys_s"]) / 1e6 for c in cs]

                row = {
                    "addresses": n,
                    "dtype": dtype,
                    "out_dtype": procs[0]["dtype"],
                    "first": stats(mlps(first)),
                    "later": stats(mlps(later)),
                    "first_cpu": stats(cpu(first)),
                    "later_cpu": stats(cpu(later)),
                    "first_sys_ms": stats([c["sys_s"] * 1e3 for c in first]),
                    "later_sys_ms": stats([c["sys_s"] * 1e3 for c in later]),
                    "first_minflt": stats([float(c["minflt"]) for c in first]),
                    "native_mlps": ref,
                    "processes": [p["calls"] for p in procs],
                }
                row["first_over_later"] = row["first"]["median"] / row["later"]["median"]
                row["later_over_native"] = row["later"]["median"] / ref["median"]
                # Least disturbed on a shared CPU: the best call against the best pass.
                row["best_later_over_best_native"] = row["later"]["max"] / ref["max"]
                report["rows"].append(row)
                print(f"n={n:,} dtype={dtype} ({row['out_dtype']}): "
                      f"first {fmt(row['first'])} later {fmt(row['later'])} MLPS "
                      f"(first/later {row['first_over_later']:.2f}); CPU-time rate first "
                      f"{fmt(row['first_cpu'])} later {fmt(row['later_cpu'])}; sys ms first "
                      f"{fmt(row['first_sys_ms'])} later {fmt(row['later_sys_ms'])}; "
                      f"native {fmt(ref)} (later/native {row['later_over_native']:.2f}, "
                      f"best/best {row['best_later_over_best_native']:.2f})",
                      flush=True)  # fmt: skip
            if len(digests) != 1:
                print(f"DISAGREE: {len(digests)} different answers for n={n}", file=sys.stderr)
                bad = True
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
