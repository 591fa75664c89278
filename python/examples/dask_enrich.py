"""Enrich a Parquet dataset of flow records on a Dask cluster
(`ipfib.dask.enrich`): each source address gets its origin AS and matched
prefix from one or more routing tables, and its country from a MaxMind DB.
The tables are saved once as compiled table files; every worker process
opens them memory-mapped, once, so the workers of a machine share one
copy in RAM; every partition is answered by one `lookup_many` call.

    python python/examples/dask_enrich.py IN_PARQUET OUT_PARQUET TABLE [TABLE ...]
        [--country MMDB] [--column src_ip] [--workers 2]

Several TABLE files (e.g. the IPv4 and the IPv6 pfx2as files) are merged
into one table (a later file wins on equal prefixes). The new columns are
nullable: null where the address is null, not an address, or unmatched.
With a cluster of several machines, write the compiled files to storage
every worker reads (the same path everywhere).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import ipfib
from ipfib.dask import enrich


def load(paths: list[str]) -> ipfib.Table:
    """One table from several table files."""
    tables = [ipfib.Table.from_file(p) for p in paths]
    if len(tables) == 1:
        return tables[0]
    return ipfib.Table.from_prefixes(itertools.chain.from_iterable(t.items() for t in tables))


def main(argv: list[str]) -> int:
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--country")
    ap.add_argument("--column", default="src_ip")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv[1:])

    with tempfile.TemporaryDirectory() as tmp:
        asn_file = Path(tmp) / "asn.ipfib"
        load(a.tables).save(asn_file)
        geo_file = Path(tmp) / "country.ipfib"
        if a.country:
            ipfib.Table.from_file(a.country, value="country_code").save(geo_file)
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=a.workers, threads_per_worker=1, dashboard_address=None
        )
        with cluster, Client(cluster):  # type: ignore[no-untyped-call]
            # Arrow-backed columns: they reach lookup_many without a copy
            # (and Dask 2026.8 cannot write a binary column it read as
            # object back to Parquet).
            flows = dd.read_parquet(a.src, dtype_backend="pyarrow")
            out = enrich(
                flows,
                str(asn_file),
                column=a.column,
                out={"src_asn": "value", "src_net": "prefix"},
            )
            if a.country:
                out = enrich(out, str(geo_file), column=a.column, out={"src_country": "value"})
            out.to_parquet(a.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
