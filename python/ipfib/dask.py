"""Dask helpers: enrich a Dask DataFrame column of addresses with a table
shipped once to each worker.

>>> from ipfib.dask import enrich                                # doctest: +SKIP
>>> out = enrich(dd.read_parquet("flows/"), table, client, "src", "asn")
>>> out.to_parquet("flows-asn/")

The table pickles as its route list; ``Client.scatter(..., broadcast=True)``
sends it to every worker once, and every partition is answered by one
``lookup_many`` call (vectorised, GIL released). See
``python/examples/dask_enrich.py`` for a whole script and the Spark
(``mapInPandas``) version of the same pattern.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import Table


def enrich_partition(df: Any, table: Table, column: str, out: str, default: Any = 0) -> Any:
    """One pandas partition plus ``out``: the matched value of ``column``'s
    addresses (``default`` where nothing matches or the address is bad)."""
    df = df.copy()
    df[out] = table.lookup_many(df[column], default=default, errors="coerce")
    return df


def enrich(ddf: Any, table: Table, client: Any, column: str = "src", out: str = "asn") -> Any:
    """A lazy Dask DataFrame: ``ddf`` plus an int64 column ``out`` (tables
    with integer values; 0 where nothing matches)."""
    shipped = client.scatter(table, broadcast=True, hash=False)
    meta = ddf._meta.assign(**{out: np.int64(0)})
    return ddf.map_partitions(enrich_partition, shipped, column, out, meta=meta)
