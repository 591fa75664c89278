"""The usual way, for bench.py: a per-row Python function around an IP
database reader (``maxminddb`` or ``pyasn``), the reader opened once per
worker process and kept in a module-level cache.

This is a module of its own so that the functions pickle by reference
(Spark's cloudpickle and Dask's pickle send ``usual.mmdb_asn``, not a
copy of the function and of its globals): the cache then lives as long as
the worker process, not one task. bench.py ships it to the workers
(``SparkContext.addPyFile``, ``Client.upload_file``).

A reader key is a local path, or ``spark:NAME`` for a file added to the
Spark application with ``SparkContext.addFile`` (resolved with
``SparkFiles.get`` on the worker, once).
"""

from __future__ import annotations

from typing import Any

_readers: dict[tuple[str, str], Any] = {}
# Readers this process opened (one per process and key is the point).
opened = 0


def _where(key: str) -> str:
    if key.startswith("spark:"):
        from pyspark import SparkFiles

        return str(SparkFiles.get(key[len("spark:") :]))
    return key


def _reader(kind: str, key: str) -> Any:
    global opened
    r = _readers.get((kind, key))
    if r is None:
        path = _where(key)
        if kind == "mmdb":
            import maxminddb

            # MODE_AUTO: the C extension, the file memory-mapped.
            r = maxminddb.open_database(path)
        else:
            import pyasn

            r = pyasn.pyasn(path)
        _readers[(kind, key)] = r
        opened += 1
    return r


def close_readers() -> None:
    """Close and forget this process's readers."""
    for r in _readers.values():
        close = getattr(r, "close", None)
        if close is not None:
            close()
    _readers.clear()


def mmdb_asn(key: str, ip: Any) -> int | None:
    """The origin ASN of ``ip`` from an ASN MaxMind DB (None: no match,
    null, or not an address)."""
    if not isinstance(ip, str):
        return None
    try:
        rec = _reader("mmdb", key).get(ip)
    except ValueError:
        return None
    if rec is None:
        return None
    asn = rec.get("autonomous_system_number")
    return asn if isinstance(asn, int) else None


def pyasn_asn(key: str, ip: Any) -> int | None:
    """The origin ASN of ``ip`` from a pyasn ``.dat`` file (None: no match,
    null, or not an address)."""
    if not isinstance(ip, str):
        return None
    try:
        asn = _reader("pyasn", key).lookup(ip)[0]
    except ValueError:
        return None
    return asn if isinstance(asn, int) else None


def rowwise_partition(df: Any, kind: str, key: str, column: str, out: str) -> Any:
    """Dask: one pandas partition plus ``out``, one Python call per row
    (``Series.map``), as a nullable Int64 column."""
    f = mmdb_asn if kind == "mmdb" else pyasn_asn
    df = df.copy()
    df[out] = df[column].map(lambda ip: f(key, ip)).astype("Int64")
    return df


def digest(df: Any, column: str) -> Any:
    """What forces a Dask partition: one row (rows, columns, sum of
    ``column`` with nulls as 0), so no big result travels back."""
    import pandas as pd

    s = pd.to_numeric(df[column], errors="coerce").fillna(0)
    return pd.DataFrame(
        {"rows": [len(df)], "columns": [len(df.columns)], "sum": [int(s.sum())]},
    )


def opened_here() -> int:
    """Readers this process opened, and tables ipfib opened through a
    ``TableRef`` (each at most once per process is the point)."""
    try:
        from ipfib import _enrich

        return opened + _enrich.opened
    except ImportError:
        return opened
