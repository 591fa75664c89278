"""DuckDB: `ipfib.duckdb.register`'s functions against what a DuckDB user
has without ipfib, over the same IP-to-ASN ranges (../shared/data/ranges,
412K disjoint IPv4 ranges), the same random IPv4 flows:

- a range join (`JOIN ranges ON ip BETWEEN lo AND hi`);
- an ASOF join on the range starts (`ASOF LEFT JOIN ranges ON ip >= lo`,
  then `ip <= hi`);
- a Python UDF calling the official `maxminddb` reader per row, over an
  MMDB of the same ranges (`ipfib compile --output-format mmdb`).

    python bench/sql/duckdb_bench.py [--rows 20000000] [--runs 3] [--threads 1]

Every method's answers are checked equal to ipfib's before timing.
Prints rows/s (median [min-max] of the runs). Needs target/release/ipfib,
duckdb, maxminddb, numpy and pyarrow, and the ipfib package installed.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import ipfib
import ipfib.duckdb

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("IPFIB_DATA", ROOT.parent / "shared" / "data"))
BIN = Path(os.environ.get("IPFIB_BIN", ROOT / "target" / "release" / "ipfib"))
RANGES = DATA / "ranges" / "asn-ipv4.csv.gz"


def v4(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--udf-rows", type=int, default=1_000_000, help="rows for the maxminddb UDF")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import duckdb
    import maxminddb

    work = Path(tempfile.mkdtemp(prefix="ipfib-duck-"))
    lo, hi, asn = [], [], []
    with gzip.open(RANGES, "rt") as f:
        for line in f:
            first, last, value = line.split(",", 3)[:3]
            lo.append(v4(first))
            hi.append(v4(last))
            asn.append(int(value))
    table = work / "asn.ipfib"
    mmdb = work / "asn.mmdb"
    subprocess.run([str(BIN), "compile", str(RANGES), "-o", str(table)], check=True)
    subprocess.run(
        [str(BIN), "compile", str(RANGES), "--output-format", "mmdb", "-o", str(mmdb)], check=True
    )
    t = ipfib.Table.open(str(table))
    rng = np.random.default_rng(1)
    ips = rng.integers(0, 1 << 32, args.rows, dtype=np.uint64).astype(np.uint32)
    text = pa.array(
        [f"{x >> 24}.{(x >> 16) & 255}.{(x >> 8) & 255}.{x & 255}" for x in ips.tolist()]
    )
    con = duckdb.connect()
    con.sql(f"SET threads = {args.threads}")
    con.register(
        "ranges_src",
        pa.table(
            {
                "lo": pa.array(lo, pa.uint32()),
                "hi": pa.array(hi, pa.uint32()),
                "asn": pa.array(asn, pa.int64()),
            }
        ),
    )
    con.sql("CREATE TABLE ranges AS SELECT * FROM ranges_src ORDER BY lo")
    con.register("flows_src", pa.table({"ip": pa.array(ips, pa.uint32()), "ip_text": text}))
    con.sql("CREATE TABLE flows AS SELECT * FROM flows_src")
    ipfib.duckdb.register(con, "asn", t)
    reader = maxminddb.open_database(str(mmdb))

    def mmdb_asn(ip: str) -> int | None:
        rec = reader.get(ip)
        if isinstance(rec, dict):  # ipfib's MMDB of a ranges file: {"value": N}
            rec = rec.get("value")
        return None if rec is None else int(str(rec))

    con.create_function(
        "mmdb_asn", mmdb_asn, ["VARCHAR"], "BIGINT", null_handling="special", side_effects=False
    )
    queries = {
        "ipfib asn(VARCHAR)": "SELECT sum(asn(ip_text)) FROM flows",
        "ipfib asn_ipv4(UINTEGER)": "SELECT sum(asn_ipv4(ip)) FROM flows",
        "range join": "SELECT sum(r.asn) FROM flows f LEFT JOIN ranges r ON f.ip BETWEEN r.lo AND r.hi",
        "ASOF join": (
            "SELECT sum(CASE WHEN f.ip <= r.hi THEN r.asn END) "
            "FROM flows f ASOF LEFT JOIN ranges r ON f.ip >= r.lo"
        ),
        "maxminddb Python UDF": (
            f"SELECT sum(mmdb_asn(ip_text)) FROM (SELECT ip_text FROM flows LIMIT {args.udf_rows})"
        ),
    }
    # The same answers, row for row, before any timing.
    want = t.lookup_many(ips, masked=True, dtype="int64")
    col = (
        con.sql(
            "SELECT CASE WHEN f.ip <= r.hi THEN r.asn END AS a FROM flows f "
            "ASOF LEFT JOIN ranges r ON f.ip >= r.lo ORDER BY f.rowid"
        )
        .arrow()
        .read_all()
        .column("a")
    )
    mask = col.is_null().to_numpy(zero_copy_only=False)
    vals = col.fill_null(0).to_numpy()
    assert (mask == np.ma.getmaskarray(want)).all()
    assert (vals == want.filled(0)).all()
    n_udf = min(args.udf_rows, args.rows)
    got = con.sql(
        f"SELECT mmdb_asn(ip_text) FROM (SELECT ip_text FROM flows LIMIT {n_udf})"
    ).fetchall()
    assert [g[0] for g in got] == [
        None if m else int(v) for v, m in zip(want.data[:n_udf], want.mask[:n_udf])
    ]
    sums = {}
    print(
        f"# {args.rows:,} random IPv4 flows, {len(lo):,} ranges, DuckDB {duckdb.__version__}, threads={args.threads}"
    )
    best_other = 0.0
    res = {}
    for name, sql in queries.items():
        rows = n_udf if "maxminddb" in name else args.rows
        times = []
        for _ in range(args.runs + 1):
            t0 = time.perf_counter()
            out = con.execute(sql).fetchone()
            times.append(time.perf_counter() - t0)
        times = times[1:]
        sums[name] = out[0] if out else None
        rate = rows / statistics.median(times) / 1e6
        res[name] = (rate, rows / max(times) / 1e6, rows / min(times) / 1e6)
        if not name.startswith("ipfib"):
            best_other = max(best_other, rate)
    for name, (rate, lo_r, hi_r) in res.items():
        print(
            f"{name:26s} {rate:8.2f} M rows/s [{lo_r:.2f}-{hi_r:.2f}]  {rate / best_other:6.2f}x the best alternative"
        )
    ref = sums["ipfib asn(VARCHAR)"]
    for name, v in sums.items():
        if "maxminddb" not in name and v != ref:
            # The ranges file has overlapping ranges (later lines win): a
            # range join returns every covering range, so its sum differs.
            print(f"# {name}: sum {v} != {ref}: not the same answers")
    con.close()


if __name__ == "__main__":
    main()
