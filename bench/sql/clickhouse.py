"""ClickHouse (chDB: the ClickHouse engine in-process): `ipfib udf` as an
executable UDF against `dictGet` on an IP_TRIE dictionary built from the
same routes, in the same process, one thread (`max_threads=1`).

    python bench/sql/clickhouse.py [--rows 20000000] [--runs 5]

Tables: the RouteViews 2026 IPv4 and IPv6 tables of ../shared/data, in one
compiled file and one dictionary (String values: the origin as written).
Traces: `uniform` (random IPv4) and `matched` (IPv4 inside random prefixes
of the table). Every run first checks that both answer every row alike.
Prints rows/s per query (median [min-max] of the runs, the query with no
lookup subtracted from neither), the dictionary's load time and the
compiled file's open time. Needs target/release/ipfib, chdb and numpy.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("IPFIB_DATA", ROOT.parent / "shared" / "data"))
BIN = Path(os.environ.get("IPFIB_BIN", ROOT / "target" / "release" / "ipfib"))
TABLES = [
    "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
    "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
]

FUNCTION = """<functions><function>
  <type>executable_pool</type><name>ipfib_asn</name>
  <return_type>Nullable(String)</return_type>
  <argument><type>IPv4</type><name>ip</name></argument>
  <format>RowBinary</format>
  <command>ipfib udf --table {table} --argument IPv4</command>
</function><function>
  <type>executable_pool</type><name>ipfib_asn32</name>
  <return_type>Nullable(UInt32)</return_type>
  <argument><type>IPv4</type><name>ip</name></argument>
  <format>RowBinary</format>
  <command>ipfib udf --table {table} --argument IPv4 --return-type Nullable(UInt32)</command>
</function><function>
  <type>executable_pool</type><name>ipfib_none</name>
  <return_type>Nullable(String)</return_type>
  <argument><type>IPv4</type><name>ip</name></argument>
  <format>RowBinary</format>
  <command>ipfib udf --table {empty} --argument IPv4</command>
</function></functions>"""


def routes(work: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """One text table of both families (`PREFIX VALUE`), and the IPv4
    prefixes' bases and lengths."""
    out = work / "routes.tsv"
    bases, lens = [], []
    with out.open("w") as w:
        for name in TABLES:
            with gzip.open(DATA / name, "rt") as f:
                for line in f:
                    if line.startswith("#") or not line.strip():
                        continue
                    p, v = line.split()[:2]
                    w.write(f"{p}\t{v}\n")
                    if ":" not in p:
                        a, n = p.split("/")
                        o = [int(x) for x in a.split(".")]
                        bases.append((o[0] << 24) | (o[1] << 16) | (o[2] << 8) | o[3])
                        lens.append(int(n))
    return out, np.array(bases, np.uint64), np.array(lens, np.uint64)


def traces(rows: int, bases: np.ndarray, lens: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    uniform = rng.integers(0, 1 << 32, rows, dtype=np.uint64)
    pick = rng.integers(0, len(bases), rows)
    span = np.left_shift(np.uint64(1), np.uint64(32) - lens[pick])
    matched = bases[pick] + (rng.integers(0, 1 << 32, rows, dtype=np.uint64) % span)
    return {"uniform": uniform.astype(np.uint32), "matched": matched.astype(np.uint32)}


def timed(s: object, sql: str, runs: int) -> tuple[list[float], str]:
    times, out = [], ""
    for _ in range(runs + 1):  # the first is a warm-up
        t0 = time.perf_counter()
        out = s.query(sql, "TabSeparated").bytes().decode().strip()  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t0)
    return times[1:], out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import chdb
    from chdb import session

    work = Path(tempfile.mkdtemp(prefix="ipfib-ch-"))
    src, bases, lens = routes(work)
    table = work / "routes.ipfib"
    subprocess.run(
        [str(BIN), "compile", str(src), "-o", str(table)], check=True, capture_output=True
    )
    # The compiled file's open: a UDF process started, the file mapped and
    # checked, nothing asked (median of 5).
    opens = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([str(BIN), "udf", "--table", str(table)], input=b"", check=True)
        opens.append(time.perf_counter() - t0)
    scripts = work / "scripts"
    scripts.mkdir()
    os.symlink(BIN.resolve(), scripts / "ipfib")
    # The floor: the same UDF over a table of one host route, so (nearly)
    # every row is a one-byte NULL: what the executable-UDF pipe costs.
    empty_src = work / "empty.txt"
    empty_src.write_text("255.255.255.255/32 0\n")
    empty = work / "empty.ipfib"
    subprocess.run(
        [str(BIN), "compile", str(empty_src), "-o", str(empty)], check=True, capture_output=True
    )
    (scripts / "f.xml").write_text(FUNCTION.format(table=table, empty=empty))
    s = session.Session(f":memory:?udf_path={scripts}")
    s.query(
        "CREATE TABLE routes (prefix String, asn String) ENGINE = Memory AS "
        f"SELECT * FROM file('{src}', 'TSV', 'prefix String, asn String')"
    )
    s.query(
        "CREATE DICTIONARY rt (prefix String, asn String) PRIMARY KEY prefix "
        "SOURCE(CLICKHOUSE(TABLE 'routes')) LAYOUT(IP_TRIE) LIFETIME(0)"
    )
    loads = []
    for _ in range(3):
        t0 = time.perf_counter()
        s.query("SYSTEM RELOAD DICTIONARY rt")
        loads.append(time.perf_counter() - t0)
    cpu = platform.processor() or "?"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    print(f"# machine: {cpu}, {os.cpu_count()} CPUs; chDB {chdb.__version__}; {args.rows:,} rows")
    print(f"# routes: {int(s.query('SELECT count() FROM routes', 'CSV').bytes()):,}")
    print(f"dictionary load (SYSTEM RELOAD): median {statistics.median(loads):.2f} s")
    print(
        f"compiled file open (a UDF process start): median {statistics.median(opens) * 1000:.1f} ms"
    )
    one = " SETTINGS max_threads = 1"
    for name, trace in traces(args.rows, bases, lens).items():
        path = work / f"{name}.parquet"
        pq.write_table(pa.table({"ip": pa.array(trace, pa.uint32())}), path)
        s.query("DROP TABLE IF EXISTS a")
        s.query(
            f"CREATE TABLE a ENGINE = Memory AS SELECT toIPv4(assumeNotNull(ip)) AS ip FROM file('{path}')"
        )
        diff = (
            s.query(
                "SELECT countIf(ifNull(ipfib_asn(ip), '') != dictGet('rt', 'asn', tuple(ip))), "
                "countIf(dictGet('rt', 'asn', tuple(ip)) != '') FROM a" + one,
                "CSV",
            )
            .bytes()
            .decode()
            .strip()
        )
        differ, hits = (int(x) for x in diff.split(","))
        assert differ == 0, f"{name}: {differ} rows answered differently"
        queries = {
            "no lookup": "SELECT sum(toUInt32(ip)) FROM a",
            "dictGet ip_trie": "SELECT sum(length(dictGet('rt', 'asn', tuple(ip)))) FROM a",
            "ipfib udf": "SELECT sum(length(ifNull(ipfib_asn(ip), ''))) FROM a",
            "ipfib udf UInt32": "SELECT sum(ifNull(ipfib_asn32(ip), 0)) FROM a",
            "UDF answering NULL": "SELECT count(ipfib_none(ip)) FROM a",
        }
        res = {}
        for q, sql in queries.items():
            times, out = timed(s, sql + one, args.runs)
            res[q] = (times, out)
        assert res["dictGet ip_trie"][1] == res["ipfib udf"][1]
        base = statistics.median(res["dictGet ip_trie"][0])
        print(f"\n## {name} ({hits / args.rows:.1%} matched)")
        for q, (times, _) in res.items():
            med = statistics.median(times)
            rate = args.rows / med / 1e6
            lo, hi = args.rows / max(times) / 1e6, args.rows / min(times) / 1e6
            print(f"{q:16s} {rate:8.2f} M rows/s [{lo:.2f}-{hi:.2f}]  {base / med:6.2f}x dictGet")
    s.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
