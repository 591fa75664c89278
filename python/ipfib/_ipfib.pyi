"""Type stubs and reference documentation of ipfib's native module.

Addresses are text (``"10.1.2.3"``, ``"2001:db8::1"``) or ``ipaddress``
objects; prefixes are ``"ADDR/LEN"`` text or ``ipaddress`` networks.
IPv4-mapped IPv6 addresses (``::ffff:a.b.c.d``) are looked up in the IPv4
table. Thread safety: every method may be called from any thread; lookups
use the snapshot published when they start (one per call) and never see a
half-applied change.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Iterator
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

Addr = str | ipaddress.IPv4Address | ipaddress.IPv6Address
PrefixLike = str | ipaddress.IPv4Network | ipaddress.IPv6Network
Engine = str  # "auto" | "planb" | "poptrie[:S]" | "poptrie-flat[:S]" (S = 0..24) | "radix"

class TableFileError(ValueError):
    """A table file could not be read; the message names the file and the
    line (text formats) or byte offset (MRT, damaged streams)."""

class DamagedTableWarning(UserWarning):
    """A table file was damaged or had records ipfib skipped; what was
    complete was loaded (``strict=True`` raises instead)."""

class Table:
    """A longest-prefix-match table of IPv4 and IPv6 routes.

    >>> t = Table()                                   # empty, engine "auto"
    >>> t.insert("10.0.0.0/8", 64500)
    >>> t.lookup("10.1.2.3")
    64500
    """

    def __init__(self, *, engine: Engine = "auto") -> None:
        """An empty table compiled with ``engine``: ``"auto"`` (default:
        per family, the engine that suits the table's shape, measured on
        this machine; ``info()`` says which and why), ``"planb"``,
        ``"poptrie"`` / ``"poptrie:S"`` (S direct-pointing bits),
        ``"poptrie-flat"`` / ``"poptrie-flat:S"`` (32-ary nodes inline with
        their leaves: the fastest ``lookup_many`` on IPv6 tables) or
        ``"radix"`` (the route table itself)."""

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        format: str = "auto",
        value: str | None = None,
        *,
        peer: str | int | None = None,
        engine: Engine = "auto",
        mask_host_bits: bool = False,
        strict: bool = False,
    ) -> Table:
        """Load a table file (gzip, bzip2, zstd read transparently).

        ``format``: ``"auto"`` (sniffed), ``"text"`` (``PREFIX/LEN VALUE``),
        ``"ipasn"`` (pyasn ``.dat``), ``"pfx2as"`` (CAIDA), ``"mrt"``
        (RIB dumps, BGP4MP), ``"updates"``. For MRT and update streams
        ``value`` picks each prefix's value: ``"origin-asn"`` (MRT default),
        ``"next-hop"`` (with ``peer``: index or address), ``"peer-count"``.
        Values that are canonical decimal integers become ``int``, others
        stay ``str`` (exactly what ``ipfib lookup`` prints).

        Raises ``FileNotFoundError`` / ``OSError`` for unreadable files and
        ``TableFileError`` for bad lines (naming file and line) or, with
        ``strict=True``, damage (naming the byte offset). Without
        ``strict``, damage warns ``DamagedTableWarning`` and what was
        complete is loaded.

        >>> t = Table.from_file("routeviews-20151101.ipasn.dat.gz")   # doctest: +SKIP
        >>> t.lookup("8.8.8.8")                                       # doctest: +SKIP
        15169
        """

    @classmethod
    def from_prefixes(
        cls,
        routes: Iterable[tuple[PrefixLike, Any]],
        *,
        engine: Engine = "auto",
        mask_host_bits: bool = False,
    ) -> Table:
        """A table from ``(prefix, value)`` pairs; a later duplicate wins.
        Values are any hashable objects (``int`` and ``str`` are stored
        natively). A bad pair raises ``ValueError`` / ``TypeError`` naming
        its index; host bits set are an error unless ``mask_host_bits``.

        >>> Table.from_prefixes([("10.0.0.0/8", "a"), ("::/0", "b")]).lookup("::1")
        'b'
        """

    @classmethod
    def from_pandas(
        cls,
        df: Any,
        prefix_col: str = "prefix",
        value_col: str = "value",
        *,
        engine: Engine = "auto",
        mask_host_bits: bool = False,
    ) -> Table:
        """A table from two DataFrame columns.

        >>> df = pd.DataFrame({"prefix": ["10.0.0.0/8"], "value": [7]})  # doctest: +SKIP
        >>> Table.from_pandas(df).lookup("10.0.0.1")                    # doctest: +SKIP
        7
        """

    def lookup(self, addr: Addr) -> Any:
        """The value of the longest matching prefix, or ``None``.

        >>> t.lookup("10.1.2.3")                                       # doctest: +SKIP
        64500
        """

    def lookup_prefix(self, addr: Addr) -> tuple[str, Any] | None:
        """``(prefix, value)`` of the longest matching prefix, or ``None``.

        >>> t.lookup_prefix("10.1.2.3")                                # doctest: +SKIP
        ('10.0.0.0/8', 64500)
        """

    @overload
    def lookup_many(
        self,
        addrs: Any,
        default: Any = 0,
        *,
        masked: bool = False,
        with_prefix_len: Literal[False] = False,
        errors: Literal["raise", "coerce"] = "raise",
        dtype: npt.DTypeLike | None = None,
    ) -> npt.NDArray[Any]: ...
    @overload
    def lookup_many(
        self,
        addrs: Any,
        default: Any = 0,
        *,
        masked: bool = False,
        with_prefix_len: Literal[True],
        errors: Literal["raise", "coerce"] = "raise",
        dtype: npt.DTypeLike | None = None,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int16]]: ...
    @overload
    def lookup_many(
        self,
        addrs: Any,
        default: Any = 0,
        *,
        masked: bool = False,
        with_prefix_len: bool = False,
        errors: Literal["raise", "coerce"] = "raise",
        dtype: npt.DTypeLike | None = None,
    ) -> Any:
        """Vectorised longest-prefix match, one answer per address.

        ``addrs``: a list (or iterable) of ``str`` / ``bytes`` (4 or 16,
        network order) / ``ipaddress`` objects / ``None``; a numpy ``uint32``
        array (IPv4 as numbers; other integer dtypes are range-checked and
        converted); a numpy ``(N, 16) uint8`` array (IPv6 bytes, network
        order) or ``(N, 2) uint64`` array (IPv6 as ``[bits 127..64, bits
        63..0]``; a view of packed bytes is ``.view(">u8")``); a pyarrow
        string, large_string, binary or fixed_size_binary array (or chunked
        array); a pandas Series of any of these. ``None``, NaN and nulls
        match nothing.

        Returns an ``int64`` array when every value in the table is an int
        and ``default`` is an int, else an object array; ``default`` where
        nothing matches. ``dtype`` asks for another result type: any
        native-order numpy integer dtype (``np.uint32``, ``"u4"``, ...)
        when every value in the table and ``default`` are ints that fit it
        (checked against the table's smallest and largest value, not the
        addresses: ``ValueError`` naming the value that does not fit,
        ``TypeError`` for a table with non-integer values or a non-int
        ``default``), or ``object`` for the values as Python objects.
        ``np.uint32`` suits origin ASNs: half the memory of ``int64``, and
        the fastest call (fewer fresh pages to fault in). ``dtype=None``
        (the default) keeps the rule above, so the result type never
        depends on which values a table happens to hold.

        ``masked=True`` returns a ``numpy.ma`` masked array (masked where
        nothing matches); ``with_prefix_len=True`` returns ``(values,
        lengths)`` with ``int16`` lengths (-1: no match).

        A bad address raises ``ValueError`` naming it and its index;
        ``errors="coerce"`` makes it a no-match instead. The lookups run
        without the GIL through the engine's batch path.

        >>> t.lookup_many(np.array([0x0A010203], dtype=np.uint32))      # doctest: +SKIP
        array([64500])
        >>> t.lookup_many(["10.1.2.3", "bad"], errors="coerce", masked=True)  # doctest: +SKIP
        masked_array(data=[64500, --], ...)
        >>> t.lookup_many(np.array([0x0A010203], np.uint32), dtype=np.uint32)  # doctest: +SKIP
        array([64500], dtype=uint32)
        """

    def __contains__(self, x: Addr | PrefixLike) -> bool:
        """An address: some route matches it. A prefix: some route covers
        all of it (it, or one of its supernets, is in the table).

        >>> "10.9.9.9" in t, "10.1.0.0/16" in t, "11.0.0.0/8" in t     # doctest: +SKIP
        (True, True, False)
        """

    def __getitem__(self, prefix: PrefixLike) -> Any:
        """The value stored for exactly ``prefix``; ``KeyError`` if none.

        >>> t["10.0.0.0/8"]                                            # doctest: +SKIP
        64500
        """

    def get(self, prefix: PrefixLike, default: Any = None) -> Any:
        """The value stored for exactly ``prefix``, or ``default``.

        >>> t.get("10.0.0.0/9", "none")                                # doctest: +SKIP
        'none'
        """

    def __setitem__(self, prefix: PrefixLike, value: Any) -> None:
        """``insert`` without the return value."""

    def __delitem__(self, prefix: PrefixLike) -> None:
        """``remove`` without the return value."""

    def insert(self, prefix: PrefixLike, value: Any) -> Any:
        """Insert or replace a route; returns the previous value or ``None``.
        The change is visible to lookups that start after it returns.
        Each change recompiles the prefix's family (tens of milliseconds
        for a full table), so build large tables with ``from_prefixes``.

        >>> t.insert("10.0.0.0/8", 64511)                              # doctest: +SKIP
        64500
        """

    def remove(self, prefix: PrefixLike) -> Any:
        """Remove exactly ``prefix``; returns its value (``KeyError`` if absent).

        >>> t.remove("10.0.0.0/8")                                     # doctest: +SKIP
        64511
        """

    def __len__(self) -> int:
        """Number of routes (both families)."""

    def __iter__(self) -> Iterator[str]:
        """Prefixes: IPv4 first, each family in address order, shorter first.

        >>> list(Table.from_prefixes([("::/0", 1), ("10.0.0.0/8", 2)]))
        ['10.0.0.0/8', '::/0']
        """

    def items(self) -> list[tuple[str, Any]]:
        """``(prefix, value)`` pairs in iteration order.

        >>> Table.from_prefixes([("::/0", 1), ("10.0.0.0/8", 2)]).items()
        [('10.0.0.0/8', 2), ('::/0', 1)]
        """

    def supernets(self, prefix: PrefixLike) -> list[tuple[str, Any]]:
        """Routes covering ``prefix`` (itself included when present), shortest first.

        >>> t.supernets("10.1.2.0/24")                                 # doctest: +SKIP
        [('10.0.0.0/8', 64500)]
        """

    def subnets(self, prefix: PrefixLike) -> list[tuple[str, Any]]:
        """Routes covered by ``prefix`` (itself included when present), in address order.

        >>> t.subnets("8.8.0.0/16")                                    # doctest: +SKIP
        [('8.8.4.0/24', 15169), ('8.8.8.0/24', 15169), ('8.8.9.0/24', 23089)]
        """

    @property
    def engine(self) -> str:
        """The engine name as given (``"planb"``, ``"poptrie:16"``, ...).

        >>> Table(engine="poptrie:16").engine
        'poptrie:16'
        """

    def info(self) -> dict[str, Any]:
        """Sizes and layout: ``engine``, ``engine_v4`` / ``engine_v6`` (with
        kernel and direct-pointing bits, e.g. ``auto:planb[avx512,s=20]``),
        ``chosen_v4`` / ``chosen_v6`` (what ``auto`` built, e.g.
        ``"poptrie-flat:18"``, or ``"planb/poptrie-flat:18"`` when single
        lookups and batches got different engines; ``None`` for radix),
        ``chosen_reason_v4`` / ``chosen_reason_v6`` (the shape figures and
        measured rates that decided; after a change, ``"reused: chosen for
        this table at N intervals"``: a change reuses the choice until the
        table has doubled or halved, or its shape rules a trie out),
        ``prefixes``, ``prefixes_v4``, ``prefixes_v6``, ``values_v4``,
        ``values_v6``, ``integer_values``, ``footprint_bytes`` (engines and
        route lists), ``bytes_per_prefix``, ``route_table_bytes``.

        >>> Table(engine="poptrie").info()["engine_v4"]                # doctest: +SKIP
        'poptrie[s=18,popcnt]'
        """

    def __reduce__(self) -> tuple[Any, tuple[tuple[Any, ...]]]:
        """Pickles as the route list (rebuilt and recompiled on load)."""

    @staticmethod
    def _from_state(state: tuple[Any, ...]) -> Table: ...
