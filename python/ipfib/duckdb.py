"""ipfib lookups as DuckDB functions.

>>> import duckdb, ipfib, ipfib.duckdb                        # doctest: +SKIP
>>> con = duckdb.connect()                                    # doctest: +SKIP
>>> t = ipfib.Table.open("asn.ipfib")                         # doctest: +SKIP
>>> ipfib.duckdb.register(con, "asn", t)                      # doctest: +SKIP
>>> con.sql("SELECT asn('8.8.8.8')").fetchone()               # doctest: +SKIP
(15169,)

``register`` adds ``NAME(VARCHAR)`` over address text (IPv4 and IPv6 in
one column) and, with ``packed=True`` (the default), ``NAME_packed(BLOB)``
over packed addresses (4 or 16 bytes, network order) and
``NAME_ipv4(UINTEGER)`` over IPv4 addresses as numbers (the fastest: the
column reaches the lookup without a copy). All are vectorised:
DuckDB hands each batch of rows to ``Table.lookup_many`` as an Arrow array,
which answers it without the GIL, one engine batch at a time.

The result type is ``BIGINT`` when every value of the table is an integer
(origin ASNs) and ``VARCHAR`` otherwise (an int among text values answers
as its decimal text). It is fixed when the function is registered: a live
table that gains a value that is not an int later answers NULL for it.
A miss, a NULL, an empty string and text that is not an address are all
NULL (``errors="coerce"``): a query over a million flows does not fail on
one malformed row.
"""

from __future__ import annotations

from typing import Any

from ._ipfib import Table


def _answers(table: Table, integer: bool, column: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    nulls = None
    if pa.types.is_integer(column.type) and column.null_count:
        # A numeric column with NULLs would reach numpy as floats: the
        # NULLs are looked up as 0.0.0.0 and masked after.
        nulls = column.is_null().to_numpy(zero_copy_only=False)
        column = column.fill_null(0)
    if integer:
        try:
            found = table.lookup_many(column, masked=True, errors="coerce", dtype="int64")
        except (TypeError, ValueError):
            # A live table changed since `register` and holds a value that
            # is not an int64 now: that value answers NULL, the ints stay.
            found = None
        if found is not None:
            mask = np.ma.getmaskarray(found)
            if nulls is not None:
                mask = mask | nulls
            return pa.array(found.data, type=pa.int64(), mask=mask)
    found = table.lookup_many(column, masked=True, errors="coerce", dtype=object)
    # (`filled(None)` would fill with numpy's default for objects, "?".)
    values = np.array(found.data, dtype=object)
    values[np.ma.getmaskarray(found)] = None
    if nulls is not None:
        values[nulls] = None
    if integer:
        ints = [
            v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None
            for v in values
        ]
        return pa.array(ints, type=pa.int64())
    # Text: a table mixing ints and text (a pfx2as origin `4_5` beside
    # `15169`) answers every value as text.
    return pa.array([v if v is None or isinstance(v, str) else str(v) for v in values], pa.string())


def register(
    con: Any,
    name: str,
    table: Table,
    *,
    packed: bool = True,
) -> None:
    """Register ``name(VARCHAR)`` (and ``name_packed(BLOB)``,
    ``name_ipv4(UINTEGER)``) on the DuckDB
    connection ``con``, answering from ``table`` (any ``ipfib.Table``:
    built, loaded or ``Table.open``-ed from a compiled file).

    A table whose values are not all integers answers text; values that
    are neither ints nor strings (an MMDB record without ``value=``) are
    answered as their ``str()``.
    """
    import duckdb

    integer = bool(table._integer_values)
    # `sqltype` parses a type name (DuckDB 1.x and 2.x alike).
    ret = duckdb.sqltype("BIGINT" if integer else "VARCHAR")

    def text(col: Any) -> Any:
        return _answers(table, integer, col)

    con.create_function(
        name,
        text,
        [duckdb.sqltype("VARCHAR")],
        ret,
        type="arrow",
        null_handling="special",
        side_effects=False,
    )
    if packed:
        for suffix, arg in (("_packed", "BLOB"), ("_ipv4", "UINTEGER")):
            con.create_function(
                name + suffix,
                text,
                [duckdb.sqltype(arg)],
                ret,
                type="arrow",
                null_handling="special",
                side_effects=False,
            )
