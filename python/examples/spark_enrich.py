"""Enrich a Parquet dataset of flow records on Spark (`ipfib.spark.enrich`):
each source address gets its origin AS and matched prefix from one or more
routing tables, and its country from a MaxMind DB. The tables are saved as
compiled table files, shipped once to each executor machine
(`SparkContext.addFile`) and opened there memory-mapped by every Python
worker, once; every Arrow batch is answered by one `lookup_many` call.

    python python/examples/spark_enrich.py IN_PARQUET OUT_PARQUET TABLE [TABLE ...]
        [--country MMDB] [--column src_ip] [--master local[2]]

Prints what was counted (rows, nulls, bad addresses, matches, table opens)
as one JSON line. Several TABLE files (e.g. the IPv4 and the IPv6 pfx2as
files) are merged into one table (a later file wins on equal prefixes).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path

import ipfib
from ipfib.spark import Counters, enrich


def load(paths: list[str]) -> ipfib.Table:
    """One table from several table files."""
    tables = [ipfib.Table.from_file(p) for p in paths]
    if len(tables) == 1:
        return tables[0]
    return ipfib.Table.from_prefixes(itertools.chain.from_iterable(t.items() for t in tables))


def session(master: str):  # type: ignore[no-untyped-def]
    import os

    from pyspark.sql import SparkSession

    # Python workers run this interpreter (where ipfib is installed) unless
    # told otherwise.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master(master)
        .appName("ipfib-enrich")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--country")
    ap.add_argument("--column", default="src_ip")
    ap.add_argument("--master", default="local[2]")
    a = ap.parse_args(argv[1:])

    with tempfile.TemporaryDirectory() as tmp:
        asn_file = Path(tmp) / "asn.ipfib"
        load(a.tables).save(asn_file)  # compiled once, here
        spark = session(a.master)
        try:
            counts = Counters(spark)
            out = enrich(
                spark.read.parquet(a.src),
                str(asn_file),
                a.column,
                {"src_asn": "value", "src_net": "prefix"},
                counters=counts,
            )
            if a.country:
                geo = ipfib.Table.from_file(a.country, value="country_code")
                out = enrich(out, geo, a.column, "src_country")
            out.write.mode("overwrite").parquet(a.dst)
            summary = counts.value
            summary["pids"] = sorted(summary["pids"])
            print(json.dumps(summary))
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
