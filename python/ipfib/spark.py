"""Spark helpers: enrich a DataFrame column of IP addresses (text, or
packed 4/16-byte binary) with longest-prefix-match answers, Arrow batches
straight into ``Table.lookup_many`` (no Python per row).

>>> from ipfib.spark import enrich, Counters                     # doctest: +SKIP
>>> counts = Counters(spark)
>>> out = enrich(flows, "rv2.ipfib", "src_ip", {"src_asn": "value", "src_net": "prefix"},
...              counters=counts)
>>> out.write.parquet("flows-asn/"); counts.value
{'rows': ..., 'nulls': ..., 'bad': ..., 'matched': ..., 'opened': 2, ...}

How the table reaches the executors (``ship=``):

- ``"file"`` (default): the table as a compiled table file (a ``Table`` is
  saved as one with ``Table.save``; a table file that is not compiled is
  compiled on the driver) is added to the job with
  ``SparkContext.addFile``: Spark copies it once to each executor, and
  every Python worker process of that executor opens that copy
  memory-mapped, once, so an executor holds one copy of the table in RAM
  however many tasks and workers it runs (one per machine in local mode
  and with the usual one executor per machine; several executors on one
  machine each fetch their own copy: ``"path"`` with a file at the same
  place on every machine gives one copy per machine in every layout).
- ``"path"``: ``table`` is the path of a table file at the same place on
  every executor (shared storage, or local mode): opened there directly,
  memory-mapped when compiled, once per worker process.
- ``"broadcast"``: the table as a Spark broadcast (its route list), rebuilt
  once per worker process: one copy per worker. What a table of several
  MaxMind DB fields always uses (a compiled file keeps one text value per
  route).

Answers: where the input is null, is not an address, or matches no route,
the new columns are null. ``Counters`` counts rows, nulls, bad items,
matches and table opens over every action that computes the DataFrame.
``register`` makes the same lookup a SQL function. Both run as a Spark
Arrow UDF (pyspark >= 4.1; a pandas UDF before): only the address column
travels to the Python workers and only the answers come back.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import Table, _enrich
from ._enrich import (
    Outputs,
    TableLike,
    TableRef,
    as_table,
    enrich_arrow,
    file_key,
    is_compiled,
    outputs_for,
)

__all__ = ["Counters", "enrich", "register", "ship"]

_temp_dirs: list[str] = []
# Compiled files already added to a Spark application: addFile takes a
# name once per application, and one copy per machine is the point.
_shipped: dict[tuple[Any, ...], TableRef] = {}


@atexit.register
def _clean() -> None:
    for d in _temp_dirs:
        shutil.rmtree(d, ignore_errors=True)


def _spark_file(name: str) -> str:
    """Where a file added with ``addFile`` is on this executor."""
    from pyspark import SparkFiles

    return str(SparkFiles.get(name))


def ship(spark: Any, table: TableLike, how: str = "file") -> TableRef:
    """A handle on ``table`` for tasks (see the module doc for ``how``):
    what ``enrich`` and ``register`` use; call it once and pass the handle
    to several of them to ship the table once."""
    if how == "path":
        if isinstance(table, Table):
            raise TypeError(
                "ship='path' takes the path of a table file every executor can read, "
                "not a Table (use ship='file')"
            )
        path = os.path.abspath(table)
        file_key(path)  # exists and is readable here, or raise now
        return TableRef(path=path)
    if how not in ("file", "broadcast"):
        raise ValueError(f"ship must be 'file', 'path' or 'broadcast', not {how!r}")
    sc = spark.sparkContext
    if how == "broadcast" or (isinstance(table, Table) and table.fields is not None):
        # Tables a compiled file cannot hold (several MaxMind DB fields:
        # tuple values) travel as their route list.
        t = as_table(table)
        return TableRef(broadcast=sc.broadcast(t), token=uuid.uuid4().hex)
    cache_key: tuple[Any, ...] | None = None
    if not isinstance(table, Table) and is_compiled(table):
        cache_key = (sc.applicationId, file_key(table))
        if cache_key in _shipped:
            return _shipped[cache_key]
    tmp = tempfile.mkdtemp(prefix="ipfib-spark-")
    _temp_dirs.append(tmp)
    if isinstance(table, Table):
        name = f"ipfib-{uuid.uuid4().hex}.ipfib"
        try:
            table.save(os.path.join(tmp, name))
        except (ValueError, TypeError) as e:
            # Values a compiled file cannot hold as themselves (text that
            # reads as a number, floats): the route list as a broadcast.
            warnings.warn(
                f"ipfib.spark: shipping the table as a broadcast (one rebuilt copy per worker "
                f"process), not as a compiled file: {e}",
                stacklevel=3,
            )
            return TableRef(broadcast=sc.broadcast(table), token=uuid.uuid4().hex)
    elif not is_compiled(table):
        name = f"ipfib-{uuid.uuid4().hex}-{Path(table).name}.ipfib"
        Table.from_file(table).save(os.path.join(tmp, name), source=str(table))
    else:
        # A name of its own: addFile refuses a second file of the same name.
        real = os.path.realpath(table)
        name = f"ipfib-{abs(hash(file_key(real))):x}-{Path(real).name}"
        dest = os.path.join(tmp, name)
        try:
            os.link(real, dest)
        except OSError:
            shutil.copyfile(real, dest)
    sc.addFile(os.path.join(tmp, name))
    ref = TableRef(path=name, locate=_spark_file)
    if cache_key is not None:
        _shipped[cache_key] = ref
    return ref


def _accumulator_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class _Param(AccumulatorParam):  # type: ignore[misc,type-arg]
        def zero(self, value: dict[str, Any]) -> dict[str, Any]:
            return {"rows": 0, "nulls": 0, "bad": 0, "matched": 0, "opened": 0, "pids": set()}

        def addInPlace(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
            for k, v in b.items():
                a[k] = a[k] | v if k == "pids" else a[k] + v
            return a

    return _Param()


class Counters:
    """What ``enrich`` saw, summed over the tasks of every action that
    computed its DataFrame (a Spark accumulator): ``rows``, ``nulls``
    (null inputs), ``bad`` (items that are not addresses), ``matched``,
    ``opened`` (tables opened by worker processes: once per process) and
    ``pids`` (those processes). Like every accumulator updated inside a
    transformation, a task that Spark runs again (a retry, a speculative
    copy) counts again, and so does every action on the same DataFrame;
    a task that Spark stops early (a ``limit``) may report nothing (Spark
    drops the updates of a Python task it does not read to the end)."""

    def __init__(self, spark: Any) -> None:
        param = _accumulator_param()
        self._acc = spark.sparkContext.accumulator(param.zero({}), param)

    @property
    def value(self) -> dict[str, Any]:
        return dict(self._acc.value)

    def __getattr__(self, name: str) -> Any:
        if name in ("rows", "nulls", "bad", "matched", "opened", "pids"):
            return self._acc.value[name]
        raise AttributeError(name)


def _spark_type(t: Any) -> Any:
    import pyarrow as pa
    from pyspark.sql import types as T

    if pa.types.is_int64(t):
        return T.LongType()
    if pa.types.is_int16(t):
        return T.ShortType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    return T.StringType()


def _ref(spark: Any, table: TableLike | TableRef, how: str) -> tuple[TableRef, Table]:
    """The handle tasks use, and the table on the driver (for typing)."""
    if isinstance(table, TableRef):
        if table.broadcast is not None:
            return table, table.broadcast.value
        if table.table is not None:
            return table, table.table
        where = table.path if table.locate is None else _spark_file(str(table.path))
        return table, Table.from_file(str(where))
    ref = ship(spark, table, how)
    return ref, as_table(table)


def enrich(
    df: Any,
    table: TableLike | TableRef,
    col: str = "src_ip",
    out: str | Mapping[str, str] = "value",
    *,
    counters: Counters | None = None,
    ship: str = "file",
) -> Any:
    """``df`` plus the answers for the addresses of column ``col`` (string:
    IPv4 or IPv6 text; binary: 4 or 16 bytes, network order), through a
    column function over Arrow batches (``arrow_udf``): only ``col`` goes
    to the Python workers, one ``lookup_many`` per batch, and only the
    answers come back.

    ``out`` is a column name (it gets the matched value) or a mapping of
    new column names to what each holds: ``"value"``, ``"prefix"`` (the
    matched route, ``ADDR/LEN`` text), ``"prefix_len"`` (smallint) or, for
    a MaxMind DB table loaded with several fields, a field name. A value
    column is bigint when every value of the table is an int, else string.
    ``table``: an ``ipfib.Table``, the path of a table file, or what
    ``ship`` returned; ``ship``: see the module doc.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    spark = df.sparkSession
    if col not in df.columns:
        raise ValueError(f"enrich: no column {col!r} (columns: {', '.join(df.columns)})")
    kind = df.schema[col].dataType
    if not isinstance(kind, (StringType, BinaryType)):
        raise TypeError(
            f"enrich: column {col!r} is {kind.simpleString()}; addresses must be text "
            "(string: IPv4 or IPv6) or packed binary (4 or 16 bytes, network order)"
        )
    # Spark resolves column names without regard to case.
    names = [out] if isinstance(out, str) else list(dict(out))
    seen = {c.lower() for c in df.columns}
    for name in names:
        if name.lower() in seen:
            raise ValueError(f"enrich: the DataFrame has a column {name!r} already")
        seen.add(name.lower())
    ref, driver_table = _ref(spark, table, ship)
    outputs = outputs_for(driver_table, out)
    acc = counters._acc if counters is not None else None
    answers = _column_function(ref, outputs, acc, col)(F.col(_quoted(col)))
    if len(names) == 1:
        return df.withColumn(names[0], answers)
    # Several columns: one call answers a struct, its fields become the
    # columns (Spark evaluates the function once per row: the counters'
    # exact totals in the tests hold it to that).
    held = f"__ipfib_{uuid.uuid4().hex}"
    return (
        df.withColumn(held, answers)
        .withColumns({n: F.col(held).getField(n) for n in names})
        .drop(held)
    )


def _quoted(name: str) -> str:
    """A column name as Spark reads it literally (dots and all)."""
    return "`" + name.replace("`", "``") + "`"


# Whether to use Spark's Arrow UDFs (pyspark >= 4.1); otherwise, or when a
# test sets this False, a pandas UDF over the same Arrow path.
use_arrow_udf = True


def _column_function(ref: TableRef, outputs: Outputs, acc: Any, column: str) -> Any:
    """A Spark column function: addresses in, the answers out (one column
    of the output's type, or a struct of several), counted in ``acc``."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    names = [n for n, _ in outputs.columns]
    if len(names) == 1:
        rtype: Any = _spark_type(outputs.types[names[0]])
    else:
        rtype = StructType([StructField(n, _spark_type(outputs.types[n]), True) for n in names])

    def answer(arr: Any) -> Any:
        before = _enrich.opened
        cols, counts = enrich_arrow(ref, arr, outputs, column)
        if acc is not None:
            # Per batch, before it is handed on.
            opened = _enrich.opened - before
            pids = {os.getpid()} if opened else set()
            acc.add({**counts.as_dict(), "opened": opened, "pids": pids})
        if len(cols) == 1:
            return cols[0]
        return pa.StructArray.from_arrays(cols, names=names)

    if use_arrow_udf and hasattr(F, "arrow_udf"):
        # Real classes, not the strings `from __future__ import annotations`
        # would leave (pyspark reads the hints to choose the UDF kind).
        answer.__annotations__ = {"arr": pa.Array, "return": pa.Array}
        udf = F.arrow_udf(answer, rtype)
    else:
        udf = _pandas_function(answer, outputs, rtype)
    # Marked non-deterministic so that Spark evaluates it once per row:
    # otherwise a filter on an answer is pushed below the projection with
    # the function inlined into it, and every lookup runs twice (and is
    # counted twice). The price: Spark does not push filters on other
    # columns below it either; filter before enriching.
    return udf.asNondeterministic()


def _pandas_function(answer: Any, outputs: Outputs, rtype: Any) -> Any:
    """``answer`` (Arrow in, Arrow out) as a pandas UDF (Series in, Series
    or, for several columns, DataFrame out): for pyspark before 4.1."""
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.pandas.functions import pandas_udf

    names = [n for n, _ in outputs.columns]

    def series(result: Any, index: Any) -> Any:
        if pa.types.is_integer(result.type):
            # Nullable integers (to_pandas would give floats with NaN).
            values = result.fill_null(0).to_numpy()
            mask = result.is_null().to_numpy(zero_copy_only=False)
            return pd.Series(pd.arrays.IntegerArray(values, mask), index=index)
        # By position (`.array`): a Series from a Series aligns on labels.
        return pd.Series(result.to_pandas().array, index=index)

    def by_pandas(s):  # type: ignore[no-untyped-def]
        result = answer(pa.array(s, from_pandas=True))
        if len(names) == 1:
            return series(result, s.index)
        return pd.DataFrame(
            {n: series(result.field(i), s.index) for i, n in enumerate(names)}, index=s.index
        )

    back = pd.Series if len(names) == 1 else pd.DataFrame
    by_pandas.__annotations__ = {"s": pd.Series, "return": back}
    return pandas_udf(by_pandas, returnType=rtype)  # type: ignore[call-overload]


def register(
    spark: Any,
    name: str,
    table: TableLike | TableRef,
    what: str = "value",
    *,
    ship: str = "file",
) -> Any:
    """Register a SQL function ``name(address)`` answering ``what``
    (``"value"``, ``"prefix"``, ``"prefix_len"`` or a field), null where
    nothing matches: the same column function as ``enrich``.

    >>> register(spark, "ip_asn", "rv2.ipfib")                      # doctest: +SKIP
    >>> spark.sql("SELECT src_ip, ip_asn(src_ip) AS asn FROM flows")  # doctest: +SKIP
    """
    ref, driver_table = _ref(spark, table, ship)
    outputs = outputs_for(driver_table, {"answer": what})
    udf = _column_function(ref, outputs, None, name)
    spark.udf.register(name, udf)
    return udf
