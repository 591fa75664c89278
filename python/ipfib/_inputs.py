"""Turn the inputs ``Table.lookup_many`` accepts into the few forms the
native code reads without the GIL:

- a C-contiguous numpy ``uint32`` array (IPv4 as numbers),
- a C-contiguous numpy ``(N, 16) uint8`` or ``(N, 2) uint64`` array (IPv6,
  network order: row ``[hi, lo]`` with ``hi`` bits 127..64),
- a Python ``list`` (of ``str``, ``bytes``, ``ipaddress`` objects, ``None``),
- ``(kind, offsets, data, nulls)``: Arrow-style variable-length items,
  ``kind`` ``"text"`` (addresses as text) or ``"packed"`` (4 or 16 bytes),
  ``offsets`` int64 (N + 1), ``data`` uint8, ``nulls`` bool or ``None``.
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

Canonical = Union[np.ndarray, list[Any], tuple[Any, ...]]


def canonical(addrs: Any) -> Canonical:
    """One of the forms above for ``addrs`` (raises ``TypeError`` or
    ``ValueError`` naming the offending index)."""
    mod = type(addrs).__module__
    if mod.startswith("pandas"):
        return _pandas(addrs)
    if mod.startswith("polars"):
        return _polars(addrs)
    if mod.startswith("pyarrow"):
        return _arrow(addrs)
    if isinstance(addrs, np.ndarray):
        return _numpy(addrs)
    if isinstance(addrs, (str, bytes)):
        raise TypeError("lookup_many takes a collection of addresses; use lookup for one")
    return list(addrs)


def _numpy(a: np.ndarray) -> Canonical:
    if a.ndim == 1 and a.dtype.kind in "iu":
        if a.dtype != np.uint32:
            bad = np.flatnonzero((a < 0) | (a > 0xFFFFFFFF))
            if bad.size:
                i = int(bad[0])
                raise ValueError(
                    f"invalid IPv4 address {a[i]!r} at index {i} (expected 0 to 2**32 - 1)"
                )
        return np.ascontiguousarray(a, dtype=np.uint32)
    if a.ndim == 2 and a.shape[1] == 16 and a.dtype.kind in "uiV" and a.dtype.itemsize == 1:
        return np.ascontiguousarray(a).view(np.uint8)
    if a.ndim == 2 and a.shape[1] == 2 and a.dtype.kind == "u" and a.dtype.itemsize == 8:
        return np.ascontiguousarray(a, dtype=np.uint64)
    if a.ndim == 1 and a.dtype.kind == "S" and a.dtype.itemsize in (4, 16):
        width = a.dtype.itemsize
        raw = np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=np.uint8)
        if width == 16:
            return raw.reshape(-1, 16)
        return raw.view(">u4").astype(np.uint32)
    if a.ndim == 1 and a.dtype.kind in "OUS":
        return list(a.tolist())
    raise TypeError(
        f"lookup_many: unsupported array of dtype {a.dtype} and shape {a.shape} "
        "(expected uint32 IPv4, (N, 16) uint8 or (N, 2) uint64 IPv6, or strings)"
    )


def _pandas(s: Any) -> Canonical:
    if hasattr(s, "columns"):
        raise TypeError("lookup_many takes one column (a Series), not a DataFrame")
    dtype = s.dtype
    if getattr(dtype, "storage", None) == "pyarrow" or type(dtype).__name__ == "ArrowDtype":
        import pyarrow as pa

        return _arrow(pa.array(s))
    if getattr(dtype, "kind", "O") in "iu":
        if s.hasnans if hasattr(s, "hasnans") else False:
            raise ValueError("integer address column holds missing values")
        return _numpy(s.to_numpy())
    return list(s.to_numpy(dtype=object))


def _polars(s: Any) -> Canonical:
    if hasattr(s, "columns"):
        raise TypeError("lookup_many takes one column (a Series), not a DataFrame")
    if not hasattr(s, "to_arrow"):
        raise TypeError(
            f"lookup_many: unsupported polars object {type(s).__name__} "
            "(collect a LazyFrame, or use the map_batches pattern in the docs)"
        )
    if str(s.dtype) == "Null":
        return [None] * len(s)  # nothing but nulls: every answer a miss
    if s.dtype.is_integer():
        if s.null_count():
            raise ValueError("integer address column holds missing values")
        return _numpy(s.to_numpy())
    # Strings and binary go through Arrow: the buffers, not Python objects.
    return _arrow(s.to_arrow())


def to_polars(result: Any, name: str) -> Any:
    """``lookup_many``'s numpy result (an array, a masked array, or a
    tuple of them) as polars Series; masked entries become nulls. Numeric
    arrays are handed over without a copy where polars can."""
    import polars as pl

    def one(a: Any, suffix: str) -> Any:
        mask = np.ma.getmask(a) if isinstance(a, np.ma.MaskedArray) else np.ma.nomask
        data = np.ma.getdata(a)
        masked = mask is not np.ma.nomask and bool(mask.any())
        if data.dtype == object:
            # Objects: masked entries become None before polars infers the
            # type (the default fills them, possibly of another type).
            if masked:
                data = data.copy()
                data[mask] = None
            try:
                return pl.Series(name + suffix, data, strict=False)
            except (TypeError, pl.exceptions.PolarsError):
                # Values of several types (str and int, say): polars
                # infers from the first and refuses the others, so the
                # answer is an Object Series, as the list is.
                return pl.Series(name + suffix, data.tolist(), dtype=pl.Object)
        s = pl.Series(name + suffix, data)
        if masked:
            s = s.scatter(np.flatnonzero(mask), None)
        return s

    if isinstance(result, tuple):
        return (one(result[0], ""), one(result[1], "_prefix_len"))
    return one(result, "")


def _arrow(a: Any) -> Canonical:
    import pyarrow as pa

    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if not isinstance(a, pa.Array):
        raise TypeError(f"lookup_many: unsupported pyarrow object {type(a).__name__}")
    t = a.type
    if pa.types.is_dictionary(t):
        a = a.dictionary_decode()
        t = a.type
    if pa.types.is_integer(t):
        return _numpy(a.to_numpy(zero_copy_only=False))
    nulls = a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = a.buffers()[1]
        raw = np.frombuffer(data, dtype=np.uint8)[a.offset * width : (a.offset + len(a)) * width]
        offsets = np.arange(len(a) + 1, dtype=np.int64) * width
        return ("packed", offsets, np.ascontiguousarray(raw), nulls)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        off_type = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        off_type = np.int64
    elif pa.types.is_string_view(t) if hasattr(pa.types, "is_string_view") else False:
        return _arrow(a.cast(pa.large_string()))
    else:
        raise TypeError(f"lookup_many: unsupported Arrow type {t}")
    _, off_buf, data_buf = a.buffers()
    offsets = np.frombuffer(off_buf, dtype=off_type)[a.offset : a.offset + len(a) + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    )
    kind = "text" if pa.types.is_string(t) or pa.types.is_large_string(t) else "packed"
    return (kind, offsets.astype(np.int64), data, nulls)
