"""polars in, polars out: ``lookup_many`` takes a polars Series (strings,
integers, binary), answers a Series named after it with nulls where
nothing matched (``masked=True``) or the address was bad
(``errors="coerce"``), and the LazyFrame pattern in the docs runs; every
answer equals the list-of-str path, itself checked against the oracle
elsewhere."""

from __future__ import annotations

import ipaddress
from typing import Any

import numpy as np
import pytest

import ipfib
from support import brute_lookup, oracle, probe_addresses, random_routes

pl = pytest.importorskip("polars")


@pytest.mark.parametrize("seed", [1, 2])
def test_series_answers_like_lists(seed: int) -> None:
    routes = random_routes(seed)
    t = ipfib.Table.from_prefixes(routes)
    addrs = probe_addresses(routes, seed)
    truth = oracle(routes)
    want = [w[1] if (w := brute_lookup(truth, a)) else None for a in addrs]
    s = pl.Series("src", addrs)
    got: Any = t.lookup_many(s, masked=True)
    assert isinstance(got, pl.Series) and got.name == "src"
    assert got.to_list() == want
    vals: Any
    lens: Any
    vals, lens = t.lookup_many(s, masked=True, with_prefix_len=True)
    assert lens.name == "src_prefix_len"
    assert vals.to_list() == want
    assert lens.to_list() == [
        int(w[0].split("/")[1]) if (w := brute_lookup(truth, a)) else None for a in addrs
    ]
    # Packed binary (4 or 16 bytes) and integer IPv4 columns.
    packed = pl.Series("b", [ipaddress.ip_address(a).packed for a in addrs])
    res: Any = t.lookup_many(packed, masked=True)
    assert res.to_list() == want
    v4 = [a for a in addrs if ":" not in a]
    ints = pl.Series("n", [int(ipaddress.IPv4Address(a)) for a in v4], dtype=pl.UInt32)
    res = t.lookup_many(ints, masked=True)
    assert res.to_list() == [w[1] if (w := brute_lookup(truth, a)) else None for a in v4]


def test_nulls_bad_addresses_and_string_values() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", "a"), ("2001:db8::/32", "b")])
    s = pl.Series("ip", ["10.1.1.1", None, "nope", "2001:db8::1", "8.8.8.8"])
    got: Any = t.lookup_many(s, errors="coerce", masked=True)
    assert got.dtype == pl.String
    assert got.to_list() == ["a", None, None, "b", None]
    with pytest.raises(ValueError, match="index 1"):
        t.lookup_many(pl.Series(["10.0.0.1", "x"]))
    nulls: Any = t.lookup_many(pl.Series("z", [None, None]), masked=True)
    assert nulls.to_list() == [None, None]
    with pytest.raises(TypeError, match="DataFrame"):
        t.lookup_many(pl.DataFrame({"ip": ["10.0.0.1"]}))


def test_lazyframe_pattern() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 64500), ("10.1.0.0/16", 64501)])
    lf = pl.LazyFrame({"ip": ["10.1.0.9", "10.2.0.1", "192.0.2.1"]})
    out = lf.with_columns(
        asn=pl.col("ip").map_batches(lambda c: t.lookup_many(c, masked=True), return_dtype=pl.Int64)
    ).collect()
    assert out["asn"].to_list() == [64501, 64500, None]
    big = pl.Series("ip", np.full(100_000, "10.1.2.3", dtype=object).tolist())
    assert t.lookup_many(big).sum() == 64501 * 100_000


def test_tables_mixing_value_types_answer_polars_too() -> None:
    """A table whose values mix str and int (or str and bytes) answers a
    polars Series like a list, whichever type the first answer has: the
    Series is then of dtype Object (no polars type holds both)."""
    t = ipfib.Table.from_prefixes(
        [("10.0.0.0/8", 1), ("10.1.0.0/16", "two"), ("10.2.0.0/16", b"raw"), ("2001:db8::/32", 3)]
    )
    for addrs in (
        ["10.1.0.1", "10.0.0.1", "8.8.8.8", "2001:db8::1"],
        ["10.0.0.1", "10.1.0.1", "8.8.8.8", "2001:db8::1"],
        ["10.2.0.1", "10.1.0.1", "10.0.0.1"],
        ["10.1.0.1", "10.2.0.1"],
    ):
        want = t.lookup_many(addrs, masked=True)
        want_list = [None if m else v for v, m in zip(want.data.tolist(), np.ma.getmaskarray(want))]
        got: Any = t.lookup_many(pl.Series("ip", addrs), masked=True)
        assert isinstance(got, pl.Series) and got.name == "ip"
        assert got.to_list() == want_list, addrs
