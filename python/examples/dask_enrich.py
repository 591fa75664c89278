"""Enrich a Parquet dataset of flow records with the origin AS of each
source address, with Dask (`ipfib.dask.enrich`): the table is loaded once,
shipped once to each worker (`Client.scatter(..., broadcast=True)`), and
every partition is answered by one vectorised `lookup_many` call that
releases the GIL.

    python python/examples/dask_enrich.py TABLE IN_PARQUET_DIR OUT_PARQUET_DIR [COLUMN]

The same shape works with Spark: broadcast the table (it pickles as its
route list) and look up inside `mapInPandas`:

    bt = spark.sparkContext.broadcast(ipfib.Table.from_file(TABLE))
    def enrich(batches):
        t = bt.value                     # unpickled once per executor process
        for pdf in batches:
            pdf["asn"] = t.lookup_many(pdf["src"])
            yield pdf
    df.mapInPandas(enrich, schema=df.schema.add("asn", "long"))
"""

from __future__ import annotations

import sys

import ipfib
from ipfib.dask import enrich


def main(argv: list[str]) -> int:
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    table_path, src, dst = argv[1:4]
    column = argv[4] if len(argv) == 5 else "src"
    table = ipfib.Table.from_file(table_path)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1)  # type: ignore[no-untyped-call]
    with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call]
        enrich(dd.read_parquet(src), table, client, column).to_parquet(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
