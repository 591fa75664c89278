"""Type stubs and reference documentation of ipfib's native module:
``Table`` (a longest-prefix-match table: one value per prefix) and ``Rib``
(every route of every peer of an MRT RIB dump, with whole-route lookups).

Addresses are text (``"10.1.2.3"``, ``"2001:db8::1"``) or ``ipaddress``
objects (``Table``'s scalar calls also take an ``int``, below 2^32 IPv4
as ``ipaddress.ip_address`` reads it, and packed ``bytes``, 4 or 16);
prefixes are ``"ADDR/LEN"`` text or ``ipaddress`` networks.
``t[prefix]`` and ``t.get(prefix)`` are exact matches (a ``dict`` of
prefixes), unlike pytricia's longest match: give them an address and
they raise ``ValueError`` naming ``lookup`` (docs/python-migration.md).
IPv4-mapped IPv6 addresses (``::ffff:a.b.c.d``) are looked up in the IPv4
table. Thread safety: every method may be called from any thread; lookups
use the snapshot published when they start (one per call) and never see a
half-applied change.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TypedDict, overload

import numpy as np
import numpy.typing as npt

Addr = str | ipaddress.IPv4Address | ipaddress.IPv6Address
# What Table's scalar calls take: an Addr, an int or packed bytes (4 or 16).
ScalarAddr = Addr | int | bytes
PrefixLike = str | ipaddress.IPv4Network | ipaddress.IPv6Network
# "auto" | "planb" | "poptrie[:S]" | "poptrie32[:S]" | "poptrie-flat[:S]" (S = 0..24) | "radix"
Engine = str

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
        ``"poptrie32"`` / ``"poptrie32:S"`` (32-ary nodes),
        ``"poptrie-flat"`` / ``"poptrie-flat:S"`` (32-ary nodes inline with
        their leaves: the fastest ``lookup_many`` on IPv6 tables) or
        ``"radix"`` (the route table itself); the same names as the CLI's
        ``--engine`` (``ipfib engines`` lists them). An unknown name raises
        ``ValueError`` listing the valid ones."""

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, verify_checksums: bool = True, mmap: bool = True
    ) -> Table:
        """Open a compiled table file (``ipfib compile TABLE -o FILE``)
        memory-mapped: no parsing, no copy of the lookup structures, so it
        takes milliseconds and every process that opens the same file shares
        one copy in memory (the page cache).

        Every structure is checked before the first lookup, so a damaged or
        hostile file raises ``TableFileError`` (naming the byte offset),
        never crashes; ``verify_checksums=False`` skips only the checksums
        (faster on very large files; a damaged file can then give wrong
        answers, never an out-of-bounds read). ``Table.from_file`` opens
        compiled files this way too (and refuses loading options, such as
        ``value_column``, that a compiled file cannot honour).

        A mapped file must never be rewritten in place while open (``cp``
        or ``curl -o`` over it, ``rsync --inplace``): replace it by renaming
        a new file over it, as ``ipfib compile`` does. ``mmap=False`` reads
        a private copy into memory instead (not shared between processes,
        immune to that). The table is fully usable: the first
        change or exact-prefix query builds its route table (about 0.3 s for
        a full IPv4 table).
        """

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        format: str = "auto",
        value: str | list[str] | tuple[str, ...] | None = None,
        *,
        peer: str | int | None = None,
        engine: Engine = "auto",
        mask_host_bits: bool = False,
        strict: bool = False,
        value_column: int | None = None,
    ) -> Table:
        """Load a table file (gzip, bzip2, zstd read transparently).

        ``format``: ``"auto"`` (sniffed), ``"text"`` (``PREFIX/LEN VALUE``),
        ``"ipasn"`` (pyasn ``.dat``), ``"pfx2as"`` (CAIDA), ``"mrt"``
        (RIB dumps, BGP4MP), ``"updates"``, ``"ranges"`` (``FIRST,LAST,
        VALUE...`` as CSV, TSV or blank-separated columns; the value from
        column ``value_column``, 1-based, default 3; where ranges overlap
        the later line wins), ``"mmdb"`` (MaxMind DB; ``auto`` recognises
        it by its end). For MRT and update streams
        ``value`` picks each prefix's value: ``"origin-asn"`` (MRT default),
        ``"next-hop"`` (with ``peer``: index or address), ``"peer-count"``.
        For a MaxMind DB, every network of the search tree is a prefix
        (answers as the official reader's; IPv4-mapped addresses are
        answered from the IPv4 table, as everywhere in ipfib) and ``value``
        is a field by dot path (``"country.iso_code"``,
        ``"subdivisions.0.iso_code"``; a record without it gives no route),
        or ``None`` for the whole record as compact JSON text (bytes as hex,
        floats as their shortest float32 text). A list of paths keeps
        several fields: each value is a tuple, one item per field (``None``
        where the record lacks it), the names are in ``fields``, and
        ``lookup_fields`` answers one array per field.
        Values that are canonical decimal integers become ``int``, others
        stay ``str`` (exactly what ``ipfib lookup`` prints).

        Raises ``FileNotFoundError`` / ``OSError`` for unreadable files and
        ``TableFileError`` for bad lines (naming file and line) or, with
        ``strict=True``, damage (naming the byte offset). Without
        ``strict``, damage warns ``DamagedTableWarning`` and what was
        complete is loaded; so do bad lines of a ranges table (each named
        by file and line), which are skipped.

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

    @property
    def fields(self) -> list[str] | None:
        """The field names of a table loaded from a MaxMind DB with several
        fields (``from_file(path, value=[...])``), in the order of each
        value's tuple; ``None`` for other tables."""

    def lookup_fields(
        self,
        addrs: Any,
        default: Any = None,
        *,
        frame: Literal["pandas", "polars"] | None = None,
        errors: Literal["raise", "coerce"] = "raise",
    ) -> Any:
        """One answer per address and field, for a table with ``fields``.

        ``addrs``: anything ``lookup_many`` takes. Returns a dict from
        field name to a numpy array (one entry per address: the field of
        the longest matching network, ``default`` where nothing matches or
        the network's record lacks the field). A field is an ``int64``
        array when all its values in the table are ints and ``default`` is
        an int, else an object array. ``frame="pandas"`` returns a pandas
        DataFrame of those columns instead; ``frame="polars"`` a polars
        DataFrame whose misses are nulls (polars' way; ``default`` is not
        used) and whose column types polars infers. ``TypeError`` for a
        table without ``fields``.

        >>> asn = Table.from_file("GeoLite2-ASN.mmdb", value=[           # doctest: +SKIP
        ...     "autonomous_system_number", "autonomous_system_organization"])
        >>> asn.lookup_fields(["1.128.0.1", "10.0.0.1"], 0)               # doctest: +SKIP
        {'autonomous_system_number': array([1221, 0]),
         'autonomous_system_organization': array(['Telstra Pty Ltd', 0], dtype=object)}
        """

    def lookup(self, addr: ScalarAddr) -> Any:
        """The value of the longest matching prefix, or ``None``.
        ``addr``: text, an ``ipaddress`` object, an ``int`` or packed
        ``bytes`` (4 or 16, network order).

        >>> t.lookup("10.1.2.3")                                       # doctest: +SKIP
        64500
        >>> t.lookup(0x0A010203), t.lookup(bytes([10, 1, 2, 3]))       # doctest: +SKIP
        (64500, 64500)
        """

    def lookup_prefix(self, addr: ScalarAddr) -> tuple[str, Any] | None:
        """``(prefix, value)`` of the longest matching prefix, or ``None``.

        >>> t.lookup_prefix("10.1.2.3")                                # doctest: +SKIP
        ('10.0.0.0/8', 64500)
        """

    @overload
    def lookup_many(
        self,
        addrs: Any,
        default: Any = ...,
        *,
        masked: bool = False,
        with_prefix_len: Literal[False] = False,
        errors: Literal["raise", "coerce"] = "raise",
        dtype: npt.DTypeLike | None = None,
        return_index: bool = False,
        threads: int = 1,
    ) -> npt.NDArray[Any]: ...
    @overload
    def lookup_many(
        self,
        addrs: Any,
        default: Any = ...,
        *,
        masked: bool = False,
        with_prefix_len: Literal[True],
        errors: Literal["raise", "coerce"] = "raise",
        dtype: npt.DTypeLike | None = None,
        return_index: bool = False,
        threads: int = 1,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int16]]: ...
    @overload
    def lookup_many(
        self,
        addrs: Any,
        default: Any = ...,
        *,
        masked: bool = False,
        with_prefix_len: bool = False,
        errors: Literal["raise", "coerce"] = "raise",
        dtype: npt.DTypeLike | None = None,
        return_index: bool = False,
        threads: int = 1,
    ) -> Any:
        """Vectorised longest-prefix match, one answer per address.

        ``addrs``: a list (or iterable) of ``str`` / ``bytes`` (4 or 16,
        network order) / ``ipaddress`` objects / ``None``; a numpy ``uint32``
        array (IPv4 as numbers; other integer dtypes are range-checked and
        converted); a numpy ``(N, 16) uint8`` array (IPv6 bytes, network
        order) or ``(N, 2) uint64`` array (IPv6 as ``[bits 127..64, bits
        63..0]``; a view of packed bytes is ``.view(">u8")``); a pyarrow
        string, large_string, binary or fixed_size_binary array (or chunked
        array); a pandas Series of any of these; a polars Series (strings,
        binary, integers). ``None``, NaN and nulls match nothing.

        polars in, polars out: for a polars Series the answers are polars
        Series named after it (``NAME`` and ``NAME_prefix_len``), with
        nulls where the numpy result would be masked. In a LazyFrame::

            lf.with_columns(asn=pl.col("ip").map_batches(
                lambda c: t.lookup_many(c, masked=True), return_dtype=pl.Int64))

        Returns an ``int64`` array when every value in the table is an int
        and ``default`` is an int, else an object array; ``default`` where
        nothing matches. Without ``default``, a miss is ``0`` when every value
        in the table is an int and ``None`` otherwise (a table of strings
        answers ``['a', 'b', None]``, not a stray integer among strings).
        ``dtype`` asks for another result type: any
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

        ``return_index=True`` answers, instead of values, the matched
        route's index in ``items()`` order (``int64``; -1: no match): IPv4
        routes first, so ``list(t)[i]`` is the matched prefix. Gather
        per-route columns with it (prefix text, several attributes) in one
        lookup; ``dtype`` must then be ``None`` and ``default`` is not
        taken. The indices belong to the version of the table the call
        saw: read ``items()`` before changing the table (a change from
        another thread between the two calls shifts them).

        A bad address raises ``ValueError`` naming it and its index;
        ``errors="coerce"`` makes it a no-match instead. The lookups run
        without the GIL through the engine's batch path.

        ``threads=N`` answers on up to N threads (``0``: one per CPU this
        process may use; at most 256), each a contiguous share of at least
        65,536 addresses, so small calls stay on one thread. The answers
        are the same whatever N (one version of the table; with
        ``errors="raise"`` the error names the input's first bad address).
        Applies to numeric numpy arrays, ``(N, 16)`` / ``(N, 2)`` IPv6
        arrays, Arrow arrays and the pandas or polars Series holding those;
        text in a numpy or pandas object (or ``U``/``S``) array, like a
        Python list, is parsed under the GIL first and answered on one
        thread (pass a pyarrow or polars string column to spread it).

        >>> t.lookup_many(np.array([0x0A010203], dtype=np.uint32))      # doctest: +SKIP
        array([64500])
        >>> t.lookup_many(["10.1.2.3", "bad"], errors="coerce", masked=True)  # doctest: +SKIP
        masked_array(data=[64500, --], ...)
        >>> t.lookup_many(np.array([0x0A010203], np.uint32), dtype=np.uint32)  # doctest: +SKIP
        array([64500], dtype=uint32)
        """

    def count_many(
        self,
        addrs: Any,
        weights: Any = None,
        *,
        errors: Literal["raise", "coerce"] = "raise",
        threads: int = 1,
    ) -> npt.NDArray[Any]:
        """Per-route totals: for each route, in ``items()`` order (IPv4
        first), how many of ``addrs`` it is the longest match of, or with
        ``weights`` (one number per address: bytes, packets) the sum of
        theirs (by position). ``int64`` for counts and integer weights
        (exact: summed in 128 bits, so only a final total that does not fit
        int64 raises ``OverflowError``: pass float weights then),
        ``float64`` for float weights (summed in another order on another
        thread count, so float totals may differ in their last bits, or
        more where large weights cancel); a NaN or
        null weight raises ``ValueError`` naming it. Addresses that match nothing, nulls and, with
        ``errors="coerce"``, bad items add to no route (so
        ``len(addrs) - counts.sum()`` of them). ``addrs`` takes every
        input ``lookup_many`` does. One pass, without the GIL, from one
        version of the table (read ``items()`` before a change to pair
        them). ``threads`` as for ``lookup_many``: each thread sums its
        share into totals of its own (16 bytes a route), added up at the
        end, so at most one thread per CPU runs and each counts at least
        four addresses per route of the table.

        >>> t = Table.from_prefixes([("10.0.0.0/8", 1), ("10.1.0.0/16", 2)])  # doctest: +SKIP
        >>> t.count_many(["10.1.2.3", "10.2.0.1", "10.1.9.9", "192.0.2.1"])   # doctest: +SKIP
        array([1, 2])
        >>> t.count_many(["10.1.2.3", "10.2.0.1"], weights=[1500.0, 40.0])   # doctest: +SKIP
        array([  40., 1500.])
        """

    def __contains__(self, x: ScalarAddr | PrefixLike) -> bool:
        """An address: some route matches it. A prefix: some route covers
        all of it (it, or one of its supernets, is in the table).

        >>> "10.9.9.9" in t, "10.1.0.0/16" in t, "11.0.0.0/8" in t     # doctest: +SKIP
        (True, True, False)
        """

    def __getitem__(self, prefix: PrefixLike) -> Any:
        """The value stored for exactly ``prefix``; ``KeyError`` if none.
        Not a longest-prefix match (that is ``lookup``): an address without
        ``/LEN`` raises ``ValueError`` saying so.

        >>> t["10.0.0.0/8"]                                            # doctest: +SKIP
        64500
        """

    def get(self, prefix: PrefixLike, default: Any = None) -> Any:
        """The value stored for exactly ``prefix``, or ``default``. Not a
        longest-prefix match (that is ``lookup``): an address without
        ``/LEN`` raises ``ValueError`` saying so.

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

    def keys(self) -> list[str]:
        """The prefixes in iteration order (``list(t)``).

        >>> Table.from_prefixes([("::/0", 1), ("10.0.0.0/8", 2)]).keys()
        ['10.0.0.0/8', '::/0']
        """

    def values(self) -> list[Any]:
        """The values in iteration order, one per prefix.

        >>> Table.from_prefixes([("::/0", 1), ("10.0.0.0/8", 2)]).values()
        [2, 1]
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
        """The engine name as the registry spells it (``"planb"``,
        ``"poptrie:16"``; ``"poptrie5"`` reads as ``"poptrie32"``).

        >>> Table(engine="poptrie:16").engine
        'poptrie:16'
        """

    def to_mmdb(
        self,
        path: str | os.PathLike[str],
        *,
        field: str = "value",
        record: Literal["auto", "field", "json"] = "auto",
        database_type: str = "ipfib",
        description: str = "ipfib table",
        ip_version: Literal[4, 6] = 6,
        record_size: Literal[24, 28, 32] | None = None,
        merge: bool = False,
        build_epoch: int | None = None,
    ) -> dict[str, Any]:
        """Write the table as a MaxMind DB (``.mmdb``) file: with the
        official readers (``maxminddb``) every address gets the record of
        its longest matching prefix, as ``lookup`` answers it (misses stay
        misses; ``::ffff:a.b.c.d`` answers as ``a.b.c.d``; IPv6 addresses
        in ``::/96`` answer from IPv4, where the format keeps it).

        Records: an ``int``, ``float`` or ``bool`` value is ``{field: V}``
        (under ``record="json"`` the bare V); a ``str`` value as ``ipfib
        compile --output-format mmdb`` writes it: ``{field: V}`` with V an
        integer when the text is a canonical unsigned decimal, a JSON
        object text as that record (``"auto"``), always ``{field: V}``
        (``"field"``), or any JSON text as the record (``"json"``). Each
        distinct record is written once. ``merge=True``: neighbouring
        networks of different routes with the same record merge (smaller;
        a reported network may then span several routes). The file is
        written to a temporary file and renamed when complete.

        Returns what was written (``node_count``, ``record_size``,
        ``records``, ``file_bytes``, ...). ``ValueError`` for a value with
        no MaxMind DB form or bad options, ``TypeError`` for a value of
        another type, ``OSError`` when the file cannot be written.

        >>> t.to_mmdb("asn.mmdb", field="autonomous_system_number")  # doctest: +SKIP
        {'ip_version': 6, 'record_size': 24, 'node_count': 2197660, ...}
        """

    def save(
        self, path: str | os.PathLike[str], *, source: str = "ipfib.Table.save"
    ) -> dict[str, Any]:
        """Write the table as a compiled table file, the format of ``ipfib
        compile``: ``Table.open`` (or ``ipfib lookup --table``) maps it in
        milliseconds, and every process that opens it shares one copy in
        memory. Written to a temporary file beside ``path``, then renamed
        over it, so a reader never maps a half-written file.

        Values are kept as text and read back as every table file's are: an
        ``int`` as decimal text (an ``int`` again), a ``str`` as itself.
        ``ValueError`` for a ``str`` value that would come back as an
        ``int`` (a canonical decimal such as ``"15169"``) or a negative
        ``int`` (table files' integers are unsigned), ``TypeError`` for
        values of other types or a table of several MaxMind DB fields,
        ``OSError`` when the file cannot be written; each names the prefix
        or the path. ``source`` is free text kept in the file (``ipfib
        info`` shows it). Returns ``bytes``, the route counts and the
        engines chosen per family.

        >>> t.save("rv2.ipfib")                                  # doctest: +SKIP
        {'bytes': 33005568, 'prefixes_v4': 1102325, 'prefixes_v6': 0, ...}
        """

    @property
    def _integer_values(self) -> bool:
        """Whether every value is an ``int`` (private: ``ipfib._enrich``)."""

    def _lookup_columns(
        self, addrs: Any, *, prefix: bool = False, value: bool = False
    ) -> dict[str, Any]:
        """Route index, prefix length and optionally prefix text buffers and
        values from one snapshot (private: ``ipfib._enrich``)."""

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

PeerArg = int | str | ipaddress.IPv4Address | ipaddress.IPv6Address

class RibRoute(TypedDict):
    """One route, with the keys of the collector's HTTP API JSON."""

    prefix: str
    origin_asn: int | None
    """The last ASN of the AS path (or of a one-ASN set ending it); ``None``
    for an empty path or one ending in a set of several ASNs."""
    as_path: list[int | list[int]]
    """Sequences flat, each ``AS_SET`` / ``AS_CONFED_SET`` a nested list."""
    next_hop: str | None
    peer: int
    peer_address: str
    peer_asn: int
    peer_bgp_id: str
    rib: str
    """``"mrt"`` for peers of a dump (``"loc-rib"``, ``"post-policy"``,
    ``"pre-policy"`` for BMP peers)."""
    path_id: int
    """RFC 7911 path identifier (0 without ADD-PATH)."""
    communities: list[str]
    """``"ASN:VALUE"``, as sent."""
    large_communities: list[str]
    """``"A:B:C"``, as sent."""
    origin: str
    """``"igp"``, ``"egp"`` or ``"incomplete"``."""
    med: int | None
    local_pref: int | None
    stale: bool
    """The route was restored from a snapshot of a collector's RIB
    (``ipfib collect --state``) and its router has not sent it again."""

class RibLookup(RibRoute):
    """``Rib.lookup``'s answer: the route and the address looked up."""

    ip: str

class RibPeer(TypedDict):
    """One peer, with the keys of the collector's HTTP API JSON."""

    id: int
    session: int
    peer_type: int
    distinguisher: int
    address: str
    asn: int
    bgp_id: str
    rib: str
    table_name: str | None
    stale: bool
    """Restored from a snapshot: its routes are stale (see ``RibRoute``)."""
    state: Literal["up", "down"]
    up_since: int
    down_since: int | None
    routes: int

class RibLookups(TypedDict):
    """``Rib.lookup_many``'s answer: one array per field, one row per address."""

    found: npt.NDArray[np.bool_]
    """Whether some route matched."""
    origin_asn: npt.NDArray[np.uint32]
    """0 where nothing matched or the route has no origin ASN (0 is
    reserved, RFC 7607, so it is never a real origin: ``found`` tells the
    two apart)."""
    prefix_len: npt.NDArray[np.int16]
    """-1 where nothing matched."""
    next_hop: npt.NDArray[np.object_]
    """``str``, or ``None`` where nothing matched or the route has none."""
    peer: npt.NDArray[np.int64]
    """The chosen route's peer id; -1 where nothing matched."""
    rov: npt.NDArray[np.uint8]
    """With ``rpki=``: the chosen route's ROV state (RFC 6811), an index
    into ``Vrps.STATES``; 255 where nothing matched. Absent without it."""
    aspa: npt.NDArray[np.uint8]
    """With ``rpki=``: the chosen route's ASPA status (upstream
    verification of its AS path), an index into ``Vrps.ASPA_STATES``; 255
    where nothing matched."""

class RibLoadReport(TypedDict):
    """What ``Rib.from_mrt`` read."""

    path: str
    records: int
    peers: int
    routes: int
    routes_dropped: int
    """Routes past the most a prefix holds (16,384), dropped."""
    prefixes_v4: int
    prefixes_v6: int
    superseded_peers: int
    bytes: int
    """Decompressed bytes framed."""
    damaged_at: int | None
    """Byte offset (decompressed) where the file stopped being readable."""
    damage: str | None
    unsupported: dict[tuple[int, int], int]
    """Records of types that hold no unicast RIB, by (type, subtype)."""
    bad_records: int
    bad_entries: int
    errors: list[str]
    """The first 16 skipped records or entries, naming file and byte offset."""
    attr_decodes: int
    seconds: float

class RibInfo(TypedDict):
    """The RIB as it is now."""

    peers: int
    peers_up: int
    routes: int
    prefixes: int
    prefixes_v4: int
    prefixes_v6: int
    attr_sets: int
    as_paths: int
    community_lists: int
    large_community_lists: int

class Rib:
    """Every route of every peer of an MRT RIB dump, and the longest-prefix
    match over all of them: what flow enrichment and looking glasses need
    beyond ``Table``'s one value per prefix.

    A lookup finds the longest prefix that has a route the query allows and
    answers that prefix's preferred route: Loc-RIB, then post-policy, then
    pre-policy and MRT peers; highest LOCAL_PREF (missing: 100); shortest
    AS path; lowest ORIGIN; lowest MED (missing: 0); lowest peer id; lowest
    path id. ``peer=`` restricts it to one peer's routes (the longest match
    over that peer's prefixes); ``nexthop=`` prefers, at that prefix, the
    route with this next hop, the usual preference applying when none has it.
    On a miss, ``lookup`` returns ``None``.

    IPv4-mapped IPv6 addresses (``::ffff:a.b.c.d``) are looked up as IPv4,
    and are IPv4 next hops in ``nexthop`` / ``nexthops``.

    Thread safety: a ``Rib`` does not change after ``from_mrt``; every method
    may be called from any thread. ``from_mrt``, ``routes`` and
    ``lookup_many`` release the GIL while they work.

    >>> rib = Rib.from_mrt("rib.20260730.1400.first2MiB.mrt.bz2")   # doctest: +SKIP
    >>> rib.lookup("8.8.8.8")["origin_asn"]                          # doctest: +SKIP
    15169
    """

    @classmethod
    def from_mrt(cls, path: str | os.PathLike[str], *, strict: bool = False) -> Rib:
        """Load an MRT RIB dump (TABLE_DUMP_V2 with or without ADD-PATH, or
        legacy TABLE_DUMP; plain, gzip, bzip2 or zstd): every peer of its
        peer table becomes a peer of the RIB (``rib`` ``"mrt"``), every RIB
        entry a route. Returns once every route is visible to lookups.

        Raises ``FileNotFoundError`` / ``OSError`` for unreadable files and
        ``TableFileError`` for a file with no complete MRT record, each
        naming the file. A dump cut inside a record (the shared dumps are
        the first N MiB of real files), skipped records or entries and
        records that hold no unicast RIB load what was complete and warn
        ``DamagedTableWarning`` (``load_report`` has the details);
        ``strict=True`` raises ``TableFileError`` instead.
        """

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Rib:
        """Load a RIB snapshot: the file ``ipfib collect --state DIR`` keeps
        (``DIR/rib.snapshot``) or ``Rib.save`` writes. Every route of every
        peer answers at once; routes a collector's routers had sent are
        ``stale``. The file is checked whole (checksums, then every
        structure) and read into this process's memory (not shared with
        other processes, unlike ``Table.open``'s compiled files).

        Raises ``FileNotFoundError`` / ``OSError`` for unreadable files and
        ``TableFileError`` for a damaged, foreign or hostile one, naming the
        file and the byte offset.

        >>> rib = ipfib.Rib.open("/var/lib/ipfib/rib.snapshot")   # doctest: +SKIP
        """

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the RIB as a snapshot (``Rib.open`` loads it back, several
        times faster than ``from_mrt`` reads the dump): written to
        ``PATH.tmp``, flushed, then renamed over ``path``."""

    def lookup(
        self, addr: Addr, peer: PeerArg | None = None, nexthop: Addr | None = None
    ) -> RibLookup | None:
        """The route chosen for ``addr`` (see the class), or ``None``.

        ``peer``: a peer id (``int``) or a peer address (every peer with
        that address); one the RIB does not have raises ``ValueError``.
        A bad address raises ``ValueError``, an ``int`` ``TypeError``.

        >>> rib.lookup("8.8.8.8", peer=3)["next_hop"]                  # doctest: +SKIP
        '45.61.0.85'
        """

    def routes(
        self,
        prefix: PrefixLike | Addr,
        match: Literal["exact", "longer", "shorter"] = "exact",
        limit: int | None = None,
    ) -> list[RibRoute]:
        """Every route of exactly ``prefix`` (``"exact"``), or of it and its
        more (``"longer"``) or less (``"shorter"``) specific prefixes:
        ordered by prefix (address, then length), each prefix's routes in
        preference order; at most ``limit`` routes (``None``: all).
        An address alone means its host prefix. ``"longer"`` walks every
        prefix of the RIB. A bad prefix (or host bits set) raises
        ``ValueError``.

        >>> [r["peer"] for r in rib.routes("8.8.8.0/24")][:3]          # doctest: +SKIP
        [1, 2, 3]
        """

    def peers(self) -> list[RibPeer]:
        """Every peer, in id order (peers without routes included)."""

    def lookup_many(
        self,
        addrs: Any,
        peer: PeerArg | None = None,
        nexthops: Any = None,
        *,
        errors: Literal["raise", "coerce"] = "raise",
        rpki: Vrps | None = None,
        threads: int = 1,
    ) -> RibLookups:
        """Vectorised ``lookup`` for flow enrichment: one row per address,
        each field equal to what ``lookup`` answers for that address.

        ``rpki``: a ``Vrps``; the answer then also holds ``rov`` and
        ``aspa``, the chosen route's RPKI states as codes (a second pass
        reads each found row's whole route: about twice the time).

        ``addrs``: whatever ``Table.lookup_many`` takes (numpy ``uint32``
        IPv4, ``(N, 16) uint8`` or ``(N, 2) uint64`` IPv6, lists of ``str`` /
        ``bytes`` / ``ipaddress`` objects, pyarrow arrays, pandas Series);
        ``None``, NaN and nulls match nothing. ``nexthops``: ``None``, or one
        next hop per address (the flow's) in any of those forms, ``None``
        items meaning no preference: each address is looked up with its
        own next hop as ``lookup``'s ``nexthop``. A bad address raises
        ``ValueError`` naming it and its index; ``errors="coerce"`` makes it
        a no-match (a bad next hop: no preference). The lookups run without
        the GIL through the RIB's batch path; ``threads`` as for
        ``Table.lookup_many`` (the answers are one thread's; the ``rpki``
        pass runs on one thread).

        ``pandas.DataFrame(rib.lookup_many(addrs))`` makes one column per
        field.

        >>> r = rib.lookup_many(np.array([0x08080808], np.uint32))      # doctest: +SKIP
        >>> r["origin_asn"], r["prefix_len"], r["next_hop"]             # doctest: +SKIP
        (array([15169], dtype=uint32), array([24], dtype=int16), array(['12.0.1.63'], dtype=object))
        """

    @property
    def load_report(self) -> RibLoadReport:
        """What ``from_mrt`` read (a fresh dict each time)."""

    def info(self) -> RibInfo:
        """The RIB as it is now: peers (and how many are up), live routes,
        prefixes with a live route, distinct interned attribute sets, AS
        paths and community lists."""

class Vrps:
    """VRPs and ASPAs: route origin validation (RFC 6811) and ASPA path
    verification (draft-ietf-sidrops-aspa-verification, upstream), for
    offline flow and route analysis. Immutable; safe to share between
    threads.

    >>> v = Vrps.from_records([("192.0.2.0/24", 24, 64500)], aspas=[(64500, [64501])])
    >>> v.validate("192.0.2.0/24", 64500), v.validate("192.0.2.0/25", 64500)
    ('valid', 'invalid-length')
    >>> v.validate_many(["192.0.2.0/24", "198.51.100.0/24"], [64501, 64500]).tolist()
    [2, 0]
    >>> Vrps.STATES[2], v.verify_path([64501, 64500])
    ('invalid-as', 'valid')
    """

    STATES: tuple[str, str, str, str]
    """``("not-found", "valid", "invalid-as", "invalid-length")``: the
    names of the ROV codes 0..3."""
    ASPA_STATES: tuple[str, str, str]
    """``("unknown", "valid", "invalid")``: the ASPA codes 0..2."""

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        slurm: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    ) -> Vrps:
        """From validator output files: rpki-client or Routinator JSON
        (``roas`` and ``aspas``), Routinator CSV; SLURM (RFC 8416) files
        applied on top. A bad file raises ``TableFileError`` naming the file
        and the line or field."""

    @classmethod
    def from_records(
        cls,
        vrps: Iterable[tuple[str, int, int]],
        aspas: Iterable[tuple[int, list[int]]] | None = None,
    ) -> Vrps:
        """From ``(prefix, max_length, asn)`` VRPs and ``(customer,
        [providers])`` ASPAs."""

    def validate(self, prefix: str, origin: int | None) -> str:
        """The ROV state of ``prefix`` originated by ``origin`` (None: an
        AS_SET origin, RFC 6811's NONE, which matches no VRP)."""

    def validate_many(self, prefixes: Iterable[str], origins: Any) -> npt.NDArray[np.uint8]:
        """ROV codes (``STATES`` indices) of each ``(prefix, origin)``;
        ``origins`` is a sequence or a numpy integer array (None or a
        negative number: NONE). Runs without the GIL."""

    def covering(self, prefix: str) -> list[tuple[str, int, int]]:
        """Every VRP covering ``prefix``, longest prefix first:
        ``(prefix, max_length, asn)``."""

    def verify_path(self, path: Iterable[int | list[int]]) -> str:
        """The ASPA status of an AS path as received (neighbour first,
        origin last; a list inside is an AS_SET)."""

    def __len__(self) -> int: ...
    @property
    def aspa_count(self) -> int:
        """ASPAs held."""
