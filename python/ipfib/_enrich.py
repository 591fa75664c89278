"""What the cluster helpers (``ipfib.spark``, ``ipfib.dask``) share:

- ``TableRef``: a small picklable handle that reaches every worker process
  instead of the table, and opens the table there once per process
  (a compiled table file memory-mapped, so every process of a machine
  shares one copy of it in the page cache);
- ``Outputs``: which columns an enrichment adds (the matched value, the
  matched prefix, its length, fields of a MaxMind DB table) and their
  Arrow types, decided once on the driver;
- ``enrich_arrow``: one Arrow column of addresses in, those columns out,
  with nulls where the input is null, is not an address, or matches no
  route, and the counts of each.

Everything here is pure Python around ``Table.lookup_many``: the lookups
themselves run in Rust, without the GIL, one call per batch.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np

from . import Table

TableLike = Union[Table, str, "os.PathLike[str]"]

# Per process: tables opened by ``TableRef.get`` (key -> Table, least
# recently used first; for a file, only its newest version is kept, so a
# replaced file is let go), at most ``MAX_TABLES`` of them: a worker that
# serves job after job (Spark reuses its Python workers) does not keep
# every table it was ever sent.
_tables: OrderedDict[tuple[Any, ...], Table] = OrderedDict()
MAX_TABLES = 8
_lock = threading.Lock()
# How many tables this process opened through a TableRef (tests check
# that a table reaches a worker process once, not once per task).
opened = 0


def stats() -> dict[str, Any]:
    """This process's counts: ``pid`` and ``opened`` (tables opened)."""
    return {"pid": os.getpid(), "opened": opened}


def mapped_kb(path: str) -> dict[str, int]:
    """This process's resident (``rss``) and proportional (``pss``: each
    page divided among the processes mapping it) kilobytes of its mappings
    of ``path``, how many there are (``maps``), and its private anonymous
    resident memory (``anon``, all of it), from /proc (Linux). What shows
    that workers share one copy of a mapped table and keep none of their
    own."""
    out = {"rss": 0, "pss": 0, "maps": 0, "anon": 0}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                out["anon"] = int(line.split()[1])
    current = False
    with open("/proc/self/smaps") as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if not words[0].endswith(":"):  # a mapping's header line
                current = len(words) >= 6 and " ".join(words[5:]) == path
                out["maps"] += current
            elif current and words[0] in ("Rss:", "Pss:"):
                out[words[0][:-1].lower()] += int(words[1])
    return out


def release() -> dict[str, int]:
    """Forget this process's opened tables; its anonymous resident memory
    (kB) before and after (what the tables kept privately, beside their
    shared mappings; tests and benchmarks)."""
    import gc

    before = mapped_kb("")["anon"]
    with _lock:
        _tables.clear()
    gc.collect()
    return {"before": before, "after": mapped_kb("")["anon"]}


def file_key(path: str | os.PathLike[str]) -> tuple[Any, ...]:
    """What identifies a file's contents cheaply: its real path, inode,
    size and modification time (a file replaced by renaming a new one over
    it, as ``ipfib compile`` and ``Table.save`` do, gets a new key)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return (real, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class TableRef:
    """How a worker process gets the table: ``path`` (a table file,
    normally a compiled one, opened with ``Table.from_file``: mapped, no
    parsing) resolved by ``locate`` (e.g. ``SparkFiles.get``) when given,
    a Spark ``broadcast`` of the table, or ``table`` itself (pickled as its
    route list and rebuilt once per process). Pickles small unless it
    holds the table."""

    path: str | None = None
    table: Table | None = None
    # A name for the per-process cache when the table itself travels.
    token: str = ""
    locate: Any = None
    # A Spark broadcast of the table (its value: the table, unpickled once
    # per worker process by Spark).
    broadcast: Any = None

    def get(self) -> Table:
        """The table, opened (or rebuilt) at most once per process."""
        global opened
        if self.path is None:
            key: tuple[Any, ...] = ("shipped", self.token)
        else:
            where = self.locate(self.path) if self.locate is not None else self.path
            key = file_key(where)
        with _lock:
            t = _tables.get(key)
            if t is not None:
                _tables.move_to_end(key)
            else:
                if self.broadcast is not None:
                    t = self.broadcast.value
                elif self.path is None:
                    assert self.table is not None
                    t = self.table
                else:
                    t = Table.from_file(where)
                    # An older version of the same file: let it go.
                    for old in [k for k in _tables if k[0] == key[0] and k != key]:
                        del _tables[old]
                _tables[key] = t
                while len(_tables) > MAX_TABLES:
                    _tables.popitem(last=False)
                opened += 1
            return t


def as_table(table: TableLike) -> Table:
    """A ``Table`` for ``table`` (opened from a path, memory-mapped when
    it is a compiled file)."""
    if isinstance(table, Table):
        return table
    return Table.from_file(Path(table))


def is_compiled(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a compiled table file (by its magic bytes)."""
    with open(path, "rb") as f:
        head = f.read(8)
    return head == b"IPFIBTBL"


# What an output column can hold.
VALUE, PREFIX, PREFIX_LEN = "value", "prefix", "prefix_len"


@dataclass
class Outputs:
    """The columns an enrichment adds, in order: ``(name, what)`` with
    ``what`` one of ``"value"``, ``"prefix"`` (the matched route as
    ``ADDR/LEN`` text), ``"prefix_len"`` or a field name of a table
    loaded with several MaxMind DB fields; and each one's Arrow type."""

    columns: list[tuple[str, str]]
    types: dict[str, Any] = field(default_factory=dict)

    @property
    def by_index(self) -> bool:
        """Whether the answers go through route indices (prefix text or
        fields), rather than values and lengths straight from the engine."""
        return any(w not in (VALUE, PREFIX_LEN) for _, w in self.columns)


def outputs_for(table: Table, out: str | Mapping[str, str]) -> Outputs:
    """Check ``out`` against ``table`` and type each column (on the driver,
    once): ``out`` is a column name (it gets the value) or a mapping of
    column name to what it holds."""
    import pyarrow as pa

    columns = [(out, VALUE)] if isinstance(out, str) else list(dict(out).items())
    if not columns:
        raise ValueError("enrich: no output column asked for")
    fields = table.fields
    types: dict[str, Any] = {}
    field_types: dict[str, Any] | None = None
    for name, what in columns:
        if not isinstance(name, str) or not isinstance(what, str):
            raise TypeError("enrich: output columns map a column name to what it holds (str)")
        if what == PREFIX:
            types[name] = pa.string()
        elif what == PREFIX_LEN:
            types[name] = pa.int16()
        elif what == VALUE:
            if fields is not None:
                raise ValueError(
                    f"enrich: this table has several fields ({', '.join(fields)}): "
                    "name a field instead of 'value'"
                )
            types[name] = pa.int64() if table._integer_values else pa.string()
        elif fields is not None and what in fields:
            if field_types is None:
                field_types = _field_types(table, fields)
            types[name] = field_types[what]
        else:
            valid = [VALUE, PREFIX, PREFIX_LEN] if fields is None else [PREFIX, PREFIX_LEN, *fields]
            raise ValueError(
                f"enrich: column {name!r} asks for {what!r}; expected one of {', '.join(valid)}"
            )
    return Outputs(columns, types)


def _field_types(table: Table, fields: list[str]) -> dict[str, Any]:
    """Each field's Arrow type: int64 when every route's value of it is an
    int (or missing), float64 when they are floats and ints, else string."""
    import pyarrow as pa

    kinds: list[set[type]] = [set() for _ in fields]
    for _, value in table.items():
        for i, v in enumerate(value):
            if v is not None:
                kinds[i].add(type(v))
    out = {}
    for f, k in zip(fields, kinds):
        other = k - {int, float, str, bool}
        if other:
            raise ValueError(
                f"enrich: field {f!r} holds {', '.join(sorted(t.__name__ for t in other))} "
                "values; a column holds numbers or text: name a field inside it (dot path)"
            )
        if k <= {int}:
            out[f] = pa.int64()
        elif k <= {int, float}:
            out[f] = pa.float64()
        elif k <= {bool}:
            out[f] = pa.bool_()
        else:
            # Text, or a mix (written as text: 13335 and "13335_2914").
            out[f] = pa.string()
    return out


@dataclass
class Counts:
    """Rows seen, and of them: null inputs, items that are not addresses,
    addresses a route matched."""

    rows: int = 0
    nulls: int = 0
    bad: int = 0
    matched: int = 0

    def add(self, other: Counts) -> None:
        self.rows += other.rows
        self.nulls += other.nulls
        self.bad += other.bad
        self.matched += other.matched

    def as_dict(self) -> dict[str, int]:
        return {"rows": self.rows, "nulls": self.nulls, "bad": self.bad, "matched": self.matched}


# Matches every address: what tells a bad item from an unmatched address.
_everything: Table | None = None


def _count_bad(arr: Any, candidates: np.ndarray) -> int:
    """How many items of ``arr`` at ``candidates`` (non-null, unmatched)
    are not addresses: only those are parsed a second time."""
    global _everything
    import pyarrow as pa

    if not candidates.any():
        return 0
    if _everything is None:
        _everything = Table.from_prefixes([("0.0.0.0/0", 1), ("::/0", 1)], engine="planb")
    hit = _everything.lookup_many(
        arr.filter(pa.array(candidates)), errors="coerce", masked=True, dtype=np.uint8
    )
    return int(np.ma.getmaskarray(hit).sum())


def _normalise(arr: Any, column: str) -> Any:
    """``arr`` as one Arrow array of a type ``lookup_many`` reads (text or
    packed binary), or ``TypeError`` naming the column."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_null(t):  # empty or all-null partitions of object columns
        return arr.cast(pa.string())
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        return arr.cast(pa.large_string())
    if getattr(pa.types, "is_binary_view", lambda _: False)(t):
        return arr.cast(pa.large_binary())
    ok = (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or (pa.types.is_fixed_size_binary(t) and t.byte_width in (4, 16))
    )
    if not ok:
        raise TypeError(
            f"enrich: column {column!r} holds {t}; addresses must be text (IPv4 or IPv6) "
            "or packed binary (4 or 16 bytes, network order)"
        )
    return arr


def _validity(miss: np.ndarray) -> Any:
    """An Arrow validity bitmap: valid where not ``miss``."""
    import pyarrow as pa

    return pa.py_buffer(np.packbits(~miss, bitorder="little"))


def enrich_arrow(
    ref: TableRef, arr: Any, outputs: Outputs, column: str = "address"
) -> tuple[list[Any], Counts]:
    """The output columns for one Arrow array of addresses (text, or
    packed 4/16-byte binary), in ``outputs`` order, and the counts."""
    import pyarrow as pa

    table = ref.get()
    arr = _normalise(arr, column)
    n = len(arr)
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    cols: list[Any] = []
    if outputs.by_index:
        # Prefix text or fields: every column from one snapshot (Rust).
        whats = {w for _, w in outputs.columns}
        got = table._lookup_columns(arr, prefix=PREFIX in whats, value=bool(whats - {PREFIX}))
        miss = got["index"] < 0
        fields = table.fields
        for name, what in outputs.columns:
            if what == PREFIX:
                text = pa.Array.from_buffers(
                    pa.large_string(),
                    n,
                    [
                        _validity(miss),
                        pa.py_buffer(got["prefix_offsets"]),
                        pa.py_buffer(got["prefix_data"]),
                    ],
                )
                cols.append(text.cast(pa.string()))
            elif what == PREFIX_LEN:
                cols.append(pa.array(got["prefix_len"], type=pa.int16(), mask=miss))
            elif what == VALUE:
                cols.append(_value_column(got["value"], miss, outputs.types[name], name))
            else:
                assert fields is not None
                i = fields.index(what)
                items = [None if v is None else v[i] for v in got["value"].tolist()]
                column_items = np.array(items, dtype=object)
                cols.append(_value_column(column_items, None, outputs.types[name], name))
    else:
        want_len = any(w == PREFIX_LEN for _, w in outputs.columns)
        want_val = any(w == VALUE for _, w in outputs.columns)
        value_name = next((name for name, w in outputs.columns if w == VALUE), None)
        vals: Any = None
        lens: Any = None
        if want_val:
            assert value_name is not None
            integer = pa.types.is_integer(outputs.types[value_name])
            got_many = table.lookup_many(
                arr,
                0 if integer else None,
                errors="coerce",
                masked=True,
                with_prefix_len=want_len,
            )
            vals, lens = got_many if want_len else (got_many, None)
            miss = np.ma.getmaskarray(vals)
        else:
            # Lengths alone: through route indices, whatever the values are.
            _, lens = table.lookup_many(
                arr, errors="coerce", masked=True, with_prefix_len=True, return_index=True
            )
            miss = np.ma.getmaskarray(lens)
        for name, what in outputs.columns:
            if what == PREFIX_LEN:
                cols.append(pa.array(np.ma.getdata(lens), type=pa.int16(), mask=miss))
            else:
                cols.append(_value_column(np.ma.getdata(vals), miss, outputs.types[name], name))
    n_null = int(nulls.sum()) if nulls is not None else 0
    candidates = miss if nulls is None else miss & ~nulls
    bad = _count_bad(arr, candidates)
    counts = Counts(rows=n, nulls=n_null, bad=bad, matched=n - int(miss.sum()))
    return cols, counts


def _value_column(data: np.ndarray, miss: np.ndarray | None, kind: Any, name: str) -> Any:
    """Values as an Arrow column of type ``kind``, null where ``miss``
    (and, for objects, where the item is None)."""
    import pyarrow as pa

    try:
        return pa.array(data, type=kind, mask=miss, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        if not pa.types.is_string(kind):
            raise TypeError(f"enrich: column {name!r}: {e}") from None
    # A text column of mixed values (pfx2as: 13335 and "13335_2914"; a
    # field of numbers and text): each value as text.
    text = np.array([None if v is None else _as_text(v, name) for v in data], dtype=object)
    return pa.array(text, type=kind, mask=miss, from_pandas=False)


def _as_text(v: Any, name: str) -> str:
    if isinstance(v, (str, int, float)):
        return str(v)
    raise TypeError(
        f"enrich: column {name!r}: a value of type {type(v).__name__} cannot be a column's "
        "text (values are int, float or str)"
    )
