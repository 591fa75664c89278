"""Write a Parquet dataset of flow records whose addresses are real: the
sources and destinations of the real packet captures, the IPv6 hitlist,
and hosts inside the real RouteViews prefixes (IPv4 and IPv6), all from
../shared/data. What the Spark and Dask examples, tests and benchmarks
enrich.

    python python/examples/flows.py OUT_DIR [ROWS] [--files N] [--seed S] [--data DIR]

Columns: ``src_ip``, ``dst_ip`` (text, either family; about 0.1% of
``src_ip`` null and 0.01% not an address), ``src_bin`` (``src_ip``
packed: 4 or 16 bytes, null where ``src_ip`` is not an address),
``bytes``, ``packets``. ROWS (default 1,000,000) rows in N files
(default 4).
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRACES = [
    "traces/stopddos-amp.TCP.reflection.SYNACK-20210605.srcdst.txt.gz",
    "traces/pcapplusplus-tls2-dualstack-20210105.srcdst.txt.gz",
]
HITLIST = "traces/ipv6-hitlist-responsive-6gan-2021.txt.gz"
TABLES = [
    ("routeviews-rv2-20260730-1400.pfx2as.txt.gz", 32, 200_000),
    ("routeviews-rv6-20260730-1400.pfx2as.txt.gz", 128, 60_000),
]
BAD = ["not-an-address", "300.1.2.3", "2001:db8::1::2", ""]


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def _hosts_in_prefixes(path: Path, bits: int, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` random hosts, each inside a random prefix of a pfx2as file."""
    prefixes = []
    for line in _lines(path):
        # "ADDR/LEN VALUE" (pyasn .dat as shipped) or "ADDR LEN VALUE" (CAIDA).
        words = line.split()
        addr, length = words[0].split("/") if "/" in words[0] else words[:2]
        prefixes.append((int(ipaddress.ip_address(addr)), int(length)))
    cls = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address
    out = []
    for i in rng.integers(0, len(prefixes), n).tolist():
        net, length = prefixes[i]
        host = int(rng.integers(0, 1 << min(bits - length, 62))) if length < bits else 0
        out.append(str(cls(net | host)))
    return out


def address_pool(data: Path, rng: np.random.Generator) -> list[str]:
    """Distinct real addresses (and some unrouted ones) to draw from."""
    pool: set[str] = set()
    for name in TRACES:
        for line in _lines(data / name):
            pool.update(line.split()[:2])
    pool.update(_lines(data / HITLIST))
    for name, bits, n in TABLES:
        pool.update(_hosts_in_prefixes(data / name, bits, n, rng))
    pool.update(str(ipaddress.IPv4Address(int(x))) for x in rng.integers(0, 2**32, 20_000))
    return sorted(pool)


def write(out: Path, rows: int, files: int, seed: int, data: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    pool = address_pool(data, rng)
    text = pa.array(pool + BAD, pa.string())
    packed = pa.array(
        [ipaddress.ip_address(a).packed for a in pool] + [None] * len(BAD), pa.binary()
    )
    out.mkdir(parents=True, exist_ok=True)
    per_file = -(-rows // files)
    for f in range(files):
        n = min(per_file, rows - f * per_file)
        if n <= 0:
            break
        src = rng.integers(0, len(pool), n)
        # 0.01% not an address, 0.1% null.
        bad = rng.random(n) < 1e-4
        src[bad] = len(pool) + rng.integers(0, len(BAD), int(bad.sum()))
        null = rng.random(n) < 1e-3
        take = pa.array(src, mask=null)
        table = pa.table(
            {
                "src_ip": text.take(take),
                "dst_ip": text.take(pa.array(rng.integers(0, len(pool), n))),
                "src_bin": packed.take(take),
                "bytes": rng.integers(40, 1_500_000, n),
                "packets": rng.integers(1, 1000, n),
            }
        )
        pq.write_table(table, out / f"part-{f:04d}.parquet", row_group_size=1 << 20)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("rows", type=int, nargs="?", default=1_000_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", type=Path, default=DATA)
    a = ap.parse_args(argv[1:])
    if a.rows < 1 or a.files < 1:
        ap.error("ROWS and --files must be at least 1")
    if not (a.data / HITLIST).is_file():
        print(f"flows.py: {a.data / HITLIST} not found (needs ../shared/data)", file=sys.stderr)
        return 2
    write(a.out, a.rows, a.files, a.seed, a.data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
