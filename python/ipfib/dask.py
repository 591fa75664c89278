"""Dask helpers: enrich a Dask DataFrame column of addresses with a table
that reaches each worker process once.

>>> from ipfib.dask import enrich                                # doctest: +SKIP
>>> out = enrich(dd.read_parquet("flows/"), "rv2.ipfib", column="src", out="asn")
>>> out.to_parquet("flows-asn/")

How the table reaches the workers:

- the path of a table file every worker can read (a compiled one, from
  ``ipfib compile`` or ``Table.save``; shared storage, or one machine):
  each worker process opens it there once, memory-mapped, so the workers
  of a machine share one copy of the table in RAM (the page cache);
- an ``ipfib.Table`` with a ``client``: ``Client.scatter(...,
  broadcast=True)`` sends it to every worker once (it pickles as its route
  list and is rebuilt there: one copy per worker process).

Every partition is answered by one vectorised ``lookup_many`` call (GIL
released). Read Parquet with ``dtype_backend="pyarrow"`` (Arrow columns
reach ``lookup_many`` without a conversion) and keep packed addresses
Arrow-backed: Dask's default string conversion turns a ``bytes`` column of
``dd.from_pandas`` into text, whose items are then bad addresses. See
``python/examples/dask_enrich.py`` for a whole script.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import Table
from ._enrich import Outputs, TableRef, enrich_arrow, file_key, outputs_for

__all__ = ["enrich", "enrich_partition"]


def enrich_partition(df: Any, table: Table, column: str, out: str, default: Any = 0) -> Any:
    """One pandas partition plus ``out``: the matched value of ``column``'s
    addresses (``default`` where nothing matches or the address is bad)."""
    df = df.copy()
    df[out] = table.lookup_many(df[column], default=default, errors="coerce")
    return df


def _value_partition(df: Any, ref: TableRef, column: str, out: str, default: Any) -> Any:
    return enrich_partition(df, ref.get(), column, out, default)


def _columns_partition(df: Any, ref: TableRef, column: str, outputs: Outputs) -> Any:
    """One pandas partition plus the ``outputs`` columns (nullable Arrow
    dtypes: null where the input is null or bad, or nothing matches)."""
    import pandas as pd
    import pyarrow as pa

    df = df.copy()
    arr = pa.array(df[column], from_pandas=True)
    cols, _ = enrich_arrow(ref, arr, outputs, column)
    for (name, _), col in zip(outputs.columns, cols):
        # By position: `to_pandas` numbers its rows from 0, and a Series
        # built from a Series would align on those labels, not the frame's.
        df[name] = pd.Series(col.to_pandas(types_mapper=pd.ArrowDtype).array, index=df.index)
    return df


def enrich(
    ddf: Any,
    table: Table | str | os.PathLike[str],
    client: Any = None,
    column: str = "src",
    out: str | Mapping[str, str] = "asn",
    *,
    default: Any = 0,
) -> Any:
    """A lazy Dask DataFrame: ``ddf`` plus the answers for ``column``.

    ``out`` a column name: the matched value, ``default`` where nothing
    matches or the item is not an address (an int64 column for tables of
    int values and an int ``default``). ``out`` a mapping of new column
    names to what each holds (``"value"``, ``"prefix"``, ``"prefix_len"``,
    or a field of a several-field MaxMind DB table): nullable Arrow-backed
    columns, null where the input is null or bad or nothing matches.
    ``table``: a path (opened on each worker, see the module doc) or a
    ``Table`` (scattered with ``client``)."""
    import pandas as pd

    if column not in ddf.columns:
        raise ValueError(f"enrich: no column {column!r} (columns: {', '.join(ddf.columns)})")
    for name in [out] if isinstance(out, str) else list(dict(out)):
        if name in ddf.columns:
            raise ValueError(f"enrich: the DataFrame has a column {name!r} already")
    if isinstance(table, Table):
        if client is None:
            raise TypeError("enrich: a Table is scattered to the workers: pass the client")
        driver_table = table
        if isinstance(out, str):
            shipped = client.scatter(table, broadcast=True, hash=False)
            meta = ddf._meta.assign(**{out: _meta_value(table, default)})
            return ddf.map_partitions(enrich_partition, shipped, column, out, default, meta=meta)
        # The columns path: a handle holding the table, scattered once;
        # each worker keeps the table (and its route arrays) under the
        # handle's token.
        ref: Any = client.scatter(
            TableRef(table=table, token=uuid.uuid4().hex), broadcast=True, hash=False
        )
    else:
        path = os.path.abspath(table)
        file_key(path)  # exists and is readable here, or raise now
        ref = TableRef(path=path)
        driver_table = ref.get()
        if isinstance(out, str):
            meta = ddf._meta.assign(**{out: _meta_value(driver_table, default)})
            return ddf.map_partitions(_value_partition, ref, column, out, default, meta=meta)
    outputs = outputs_for(driver_table, out)
    meta = ddf._meta.assign(
        **{
            name: pd.Series([], dtype=pd.ArrowDtype(outputs.types[name]))
            for name, _ in outputs.columns
        }
    )
    return ddf.map_partitions(_columns_partition, ref, column, outputs, meta=meta)


def _meta_value(table: Table, default: Any) -> Any:
    """The dtype of a single value column: int64 for a table of ints with
    an int default, else object."""
    ints = table._integer_values and isinstance(default, int)
    return np.int64(0) if ints else object()
