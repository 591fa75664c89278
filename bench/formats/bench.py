"""Tables from everywhere, measured side by side in one run (BENCHMARKS.md,
"MaxMind DB, ranges and compiled table files"):

- loading: an MMDB into ipfib (`Table.from_file(path, value=...)`), the
  ranges CSV, and a compiled table file (`Table.open`) beside the text load
  of the same table;
- lookups of the same N addresses with values, per reader: the official
  `maxminddb` (C extension, `get` per address), `maxminddb-rust`
  (`get_many_path`), `maxminddb-polars` (`lookup_path` over a polars
  Series), and ipfib's `lookup_many` from a list of str, from a polars
  Series, and from numpy packed addresses; every reader's answers are
  checked equal to ipfib's on the same addresses (after the documented
  IPv4-mapped rule, which the trace avoids).

Usage: bench/formats/run.sh (builds, installs the peers, runs this).
Median of --passes timed runs after a warm-up; the machine is printed.
"""

from __future__ import annotations

import argparse
import gc
import ipaddress
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import ipfib


def timed(f: Callable[[], Any], passes: int) -> tuple[float, float, float, Any]:
    out = f()  # warm-up
    ts = []
    for _ in range(passes):
        gc.collect()
        t = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), min(ts), max(ts), out


def trace(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Half IPv4 (uniform), half IPv6 (uniform in 2000::/4, where routes
    are); as text and as packed (N, 16) bytes (IPv4 as ::ffff:a.b.c.d is
    not used: packed IPv4 go as 4 bytes through a binary Arrow array)."""
    rng = np.random.default_rng(seed)
    v4 = rng.integers(0, 2**32, n // 2, dtype=np.uint64)
    hi = rng.integers(0, 2**60, n - n // 2, dtype=np.uint64) | np.uint64(2 << 60)
    lo = rng.integers(0, 2**63, n - n // 2, dtype=np.uint64)
    texts = [str(ipaddress.IPv4Address(int(a))) for a in v4]
    texts += [str(ipaddress.IPv6Address((int(h) << 64) | int(lw))) for h, lw in zip(hi, lo)]
    return texts, v4.astype(np.uint32)


def machine() -> str:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.python_implementation()} {platform.python_version()}"


def bench_file(spec: str, args: argparse.Namespace, texts: list[str]) -> list[dict[str, Any]]:
    """Every reader on one MMDB file (`FILE:FIELD`)."""
    import maxminddb
    import maxminddb_polars
    import maxminddb_rust
    import polars as pl
    import pyarrow as pa

    results: list[dict[str, Any]] = []
    series = pl.Series("ip", texts)
    arrow = pa.array(texts, type=pa.large_string())
    path, field = spec.rsplit(":", 1)
    name = Path(path).name
    load = timed(lambda: ipfib.Table.from_file(path, value=field), args.passes)
    t = load[3]
    print(
        f"\n{name} ({field}): ipfib load {load[0]:.3f} s ({load[1]:.3f}-{load[2]:.3f}), {len(t)} prefixes"
    )
    results.append({"file": name, "what": "ipfib load (Table.from_file)", "s": load[:3]})

    def rate(label: str, n: int, r: tuple[float, float, float, Any]) -> Any:
        med, lo, hi, out = r
        mlps = n / med / 1e6
        print(
            f"  {label:44s} {mlps:8.2f} M lookups/s  ({n / hi / 1e6:.2f}-{n / lo / 1e6:.2f}; {med:.3f} s for {n:,})"
        )
        results.append(
            {
                "file": name,
                "what": label,
                "n": n,
                "mlps": mlps,
                "mlps_min": n / hi / 1e6,
                "mlps_max": n / lo / 1e6,
            }
        )
        return out

    # ipfib, values as objects (str) or ints.
    ours = rate(
        "ipfib lookup_many(list of str)",
        args.n,
        timed(lambda: t.lookup_many(texts, default=None), args.passes),
    )
    rate(
        "ipfib lookup_many(pyarrow large_string)",
        args.n,
        timed(lambda: t.lookup_many(arrow, default=None), args.passes),
    )
    rate(
        "ipfib lookup_many(polars Series) -> Series",
        args.n,
        timed(lambda: t.lookup_many(series, masked=True), args.passes),
    )
    v4 = np.array([int(ipaddress.IPv4Address(a)) for a in texts if ":" not in a], np.uint32)
    v6 = np.array(
        [divmod(int(ipaddress.IPv6Address(a)), 1 << 64) for a in texts if ":" in a], np.uint64
    ).reshape(-1, 2)
    rate(
        "ipfib lookup_many(numpy packed v4 + v6)",
        len(v4) + len(v6),
        timed(
            lambda: (t.lookup_many(v4, default=None), t.lookup_many(v6, default=None)), args.passes
        ),
    )
    # Peers.
    rdr = maxminddb_rust.open_database(path)
    rate("maxminddb-rust get_many (whole records)", args.n, timed(lambda: rdr.get_many(texts), 1))
    path_key = field.split(".")
    theirs = rate(
        "maxminddb-rust get_many_path(list of str)",
        args.n,
        timed(lambda: rdr.get_many_path(texts, path_key), max(1, args.passes - 2)),
    )
    assert list(theirs) == list(ours), "maxminddb-rust disagrees with ipfib"
    df = pl.DataFrame({"ip": series})
    out_dtype = pl.Int64 if t.lookup_many(texts[:1000], default=0).dtype.kind == "i" else pl.String
    pol = rate(
        "maxminddb-polars lookup_path (polars)",
        args.n,
        timed(
            lambda: df.select(
                maxminddb_polars.lookup_path(pl.col("ip"), path, path_key, dtype=out_dtype)
            )[:, 0],
            max(1, args.passes - 2),
        ),
    )
    assert pol.to_list() == list(ours), "maxminddb-polars disagrees with ipfib"
    off = maxminddb.open_database(path)
    sub = texts[: args.slow_n]

    def official() -> list[Any]:
        out = []
        for a in sub:
            r = off.get(a)
            for k in path_key:
                r = r.get(k) if isinstance(r, dict) else None
            out.append(r)
        return out

    got = rate("maxminddb (official, C ext) get per address", args.slow_n, timed(official, 1))
    assert got == list(ours[: args.slow_n]), "maxminddb disagrees with ipfib"
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mmdb", required=True, action="append", help="FILE:FIELD")
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument(
        "--slow-n", type=int, default=1_000_000, help="addresses for per-address readers"
    )
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    results: list[dict[str, Any]] = []
    texts, _ = trace(args.n, 7)
    for spec in args.mmdb:
        results += bench_file(spec, args, texts)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
