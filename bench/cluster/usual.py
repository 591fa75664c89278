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

import time
from collections.abc import Callable, Iterator
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


# Where a Spark mapInArrow task's Python time goes: bench.py's diagnostic.
# Wall seconds and CPU seconds (this thread's) of each part.
TIMES = (
    "input_wall",
    "work_wall",
    "output_wall",
    "input_cpu",
    "work_cpu",
    "output_cpu",
    "batches",
    "rows",
)


def timed_batches(inner: Callable[[Any], Any], acc: Any) -> Callable[[Any], Any]:
    """``inner`` (a mapInArrow function) timed in the worker: waiting for
    and decoding input batches (``input``), in ``inner`` itself (``work``),
    and between yielding an output batch and being asked for the next one
    (``output``: encoding and sending it), wall and CPU seconds, added to
    ``acc``."""
    clocks = (time.perf_counter, time.thread_time)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        t_in = [0.0, 0.0]
        t_work = [0.0, 0.0]
        t_out = [0.0, 0.0]
        n = [0, 0]

        def add(into: list[float], since: list[float]) -> None:
            for i, c in enumerate(clocks):
                into[i] += c() - since[i]

        def feed() -> Iterator[Any]:
            it = iter(batches)
            while True:
                t = [c() for c in clocks]
                try:
                    b = next(it)
                except StopIteration:
                    return
                add(t_in, t)
                n[0] += 1
                n[1] += b.num_rows
                yield b

        gen = inner(feed())
        while True:
            t = [c() for c in clocks]
            try:
                out = next(gen)
            except StopIteration:
                add(t_work, t)
                break
            add(t_work, t)
            t = [c() for c in clocks]
            yield out
            add(t_out, t)
        # t_work includes the input reads made from inside ``inner``.
        work = [w - i for w, i in zip(t_work, t_in)]
        acc.add([*t_in[:1], *work[:1], *t_out[:1], t_in[1], work[1], t_out[1], *map(float, n)])

    return run


try:
    from pyspark.accumulators import AccumulatorParam as _Base
except ImportError:  # Dask only
    _Base = object


class TimesParam(_Base):  # type: ignore[misc,valid-type]
    def zero(self, value: list[float]) -> list[float]:
        return [0.0] * len(TIMES)

    def addInPlace(self, a: list[float], b: list[float]) -> list[float]:
        return [x + y for x, y in zip(a, b)]
