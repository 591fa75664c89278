"""``Table.count_many``: per-route totals of addresses (counts, integer
and float weights), checked against a brute-force longest match on
random tables rich in edge cases, on every engine, every input form, and
on a real table with real capture addresses."""

from __future__ import annotations

import functools
import gzip
import random
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ipfib
from support import brute_lookup, data_file, oracle, probe_addresses, random_routes


@functools.cache
def _case(seed: int) -> tuple[list[tuple[str, int]], list[Any], list[str | None]]:
    """Routes, probe addresses (with nulls and bad items) and the prefix
    each one's longest match is (None: no match, null or bad)."""
    routes = random_routes(seed, 200, 200)
    addrs: list[Any] = probe_addresses(routes, seed, 1500)
    rnd = random.Random(seed)
    # Repeats: many addresses per route is the point of counting.
    addrs += [rnd.choice(addrs) for _ in range(1500)]
    addrs += [None, "bad", "", "300.1.2.3", None]
    rnd.shuffle(addrs)
    table = oracle(routes)
    want: list[str | None] = []
    for a in addrs:
        hit = brute_lookup(table, a) if a not in (None, "bad", "", "300.1.2.3") else None
        want.append(None if hit is None else hit[0])
    return routes, addrs, want


def _expected(t: ipfib.Table, want: list[str | None], weights: list[Any] | None) -> list[Any]:
    prefixes = list(t)
    pos = {p: i for i, p in enumerate(prefixes)}
    out: list[Any] = [0] * len(prefixes)
    for k, p in enumerate(want):
        if p is not None:
            out[pos[p]] += 1 if weights is None else weights[k]
    return out


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("engine", ["auto", "planb", "poptrie", "poptrie-flat:16", "radix"])
def test_counts_and_weights_equal_brute_force(seed: int, engine: str) -> None:
    routes, addrs, want = _case(seed)
    t = ipfib.Table.from_prefixes(routes, engine=engine)
    counts = t.count_many(addrs, errors="coerce")
    assert counts.dtype == np.int64 and counts.shape == (len(t),)
    expected = _expected(t, want, None)
    assert counts.tolist() == expected
    assert sum(expected) == sum(p is not None for p in want) > 2000
    # Integer weights sum exactly, even past 2^53 (float64 would round).
    rnd = random.Random(seed)
    iw = [rnd.choice([0, 1, 1500, 2**40 + 1, -7]) for _ in addrs]
    got = t.count_many(addrs, np.array(iw, dtype=np.int64), errors="coerce")
    assert got.dtype == np.int64 and got.tolist() == _expected(t, want, iw)
    # Smaller integer dtypes and bools count as integers.
    small = np.array([w % 100 for w in iw], dtype=np.uint8)
    assert t.count_many(addrs, small, errors="coerce").tolist() == _expected(
        t, want, small.tolist()
    )
    # Float weights: float64 sums (compared in the same order of addition).
    fw = [rnd.random() * 1e3 for _ in addrs]
    fgot = t.count_many(addrs, fw, errors="coerce")
    assert fgot.dtype == np.float64
    assert np.allclose(fgot, _expected(t, want, fw), rtol=1e-12, atol=0)


def test_every_input_form_counts_the_same() -> None:
    routes, addrs, want = _case(5)
    t = ipfib.Table.from_prefixes(routes)
    good = [a for a, p in zip(addrs, want) if a not in (None, "bad", "", "300.1.2.3")]
    base = t.count_many(good)
    v4 = [a for a in good if ":" not in a]
    v6 = [a for a in good if ":" in a]
    import ipaddress

    assert (t.count_many(pa.array(good)) == base).all()
    assert (t.count_many(pa.array(good, pa.large_string())) == base).all()
    packed = [ipaddress.ip_address(a).packed for a in good]
    assert (t.count_many(pa.array(packed)) == base).all()
    # numpy: IPv4 as uint32 plus IPv6 as (N, 16) bytes, counted apart.
    n4 = np.array([int(ipaddress.IPv4Address(a)) for a in v4], dtype=np.uint32)
    n6 = np.frombuffer(b"".join(ipaddress.IPv6Address(a).packed for a in v6), np.uint8)
    both = t.count_many(n4) + t.count_many(n6.reshape(-1, 16))
    # (IPv4-mapped IPv6 text counts as IPv4 in every form.)
    assert (both == base).all()


def test_misses_nulls_and_errors() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("10.1.0.0/16", 2), ("::/0", 3)])
    assert t.count_many([]).tolist() == [0, 0, 0]
    assert t.count_many(["192.0.2.1", None, "2001:db8::1", "::ffff:10.1.0.1"]).tolist() == [
        0,
        1,
        1,
    ]
    with pytest.raises(ValueError, match="bad"):
        t.count_many(["10.0.0.1", "bad"])
    assert t.count_many(["10.0.0.1", "bad"], errors="coerce").tolist() == [1, 0, 0]
    with pytest.raises(ValueError, match="one weight per address"):
        t.count_many(["10.0.0.1"], [1, 2])
    with pytest.raises(ValueError, match="one weight per address"):
        t.count_many(["10.0.0.1"], [[1]])
    with pytest.raises(TypeError, match="must be numbers"):
        t.count_many(["10.0.0.1"], ["x"])
    with pytest.raises(TypeError, match="uint64"):
        t.count_many(["10.0.0.1"], np.array([1], dtype=np.uint64))
    with pytest.raises(OverflowError, match="does not fit int64"):
        t.count_many(["10.0.0.1", "10.0.0.2"], np.array([2**62, 2**62], dtype=np.int64))
    # A table that is not of ints counts too (values play no part).
    names = ipfib.Table.from_prefixes([("10.0.0.0/8", "ten"), ("0.0.0.0/0", "all")])
    assert names.count_many(["10.0.0.1", "11.0.0.1", "12.0.0.1"]).tolist() == [2, 1]


def test_follows_a_changing_table() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    addrs = ["10.1.0.1", "10.2.0.1", "10.1.9.9"]
    assert t.count_many(addrs).tolist() == [3]
    t.insert("10.1.0.0/16", 2)
    assert list(t) == ["10.0.0.0/8", "10.1.0.0/16"]
    assert t.count_many(addrs).tolist() == [1, 2]
    t.remove("10.0.0.0/8")
    assert t.count_many(addrs).tolist() == [2]


def test_real_table_and_capture_addresses() -> None:
    """RouteViews 2026 IPv4 and the real DDoS capture's sources and
    destinations: totals per route equal a count of lookup_many's
    return_index (an independent path: one index per address), and the
    top networks are real ones."""
    table = ipfib.Table.from_file(data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz"))
    path = data_file("traces/stopddos-amp.TCP.reflection.SYNACK-20210605.srcdst.txt.gz")
    addrs: list[str] = []
    with gzip.open(path, "rt") as f:
        for line in f:
            words = line.split()
            if len(words) >= 2 and not line.startswith("#"):
                addrs += words[:2]
    assert len(addrs) > 10_000
    counts = table.count_many(addrs, errors="coerce")
    idx = table.lookup_many(addrs, errors="coerce", return_index=True)
    want = Counter(i for i in idx.tolist() if i >= 0)
    nonzero = {i: c for i, c in enumerate(counts.tolist()) if c}
    assert nonzero == dict(want)
    weights = np.arange(len(addrs), dtype=np.int64)
    by_route = np.bincount(idx[idx >= 0], weights=weights[idx >= 0], minlength=len(table))
    assert (table.count_many(addrs, weights, errors="coerce") == by_route.astype(np.int64)).all()


def test_weights_on_columnar_inputs_and_bad_weights() -> None:
    """Weights by position on numpy and Arrow inputs longer than one
    decoding round (65,536), against bincount over route indices; NaN and
    null weights are refused, naming the first."""
    routes = random_routes(21, 400, 400)
    t = ipfib.Table.from_prefixes(routes)
    base = probe_addresses(routes, 21, 4000)
    rnd = random.Random(21)
    addrs = [rnd.choice(base) for _ in range(150_000)]
    w = np.array([rnd.randrange(1, 10_000) for _ in addrs], dtype=np.int64)
    idx = t.lookup_many(addrs, return_index=True)
    m = idx >= 0
    want = np.bincount(idx[m], weights=w[m], minlength=len(t)).astype(np.int64)
    assert (t.count_many(pa.array(addrs), w) == want).all()
    assert (t.count_many(pa.array(addrs), pa.array(w)) == want).all()
    v4 = [a for a in addrs if ":" not in a]
    import ipaddress

    n4 = np.array([int(ipaddress.IPv4Address(a)) for a in v4], dtype=np.uint32)
    w4 = np.arange(len(v4), dtype=np.int64)
    idx4 = t.lookup_many(n4, return_index=True)
    m4 = idx4 >= 0
    want4 = np.bincount(idx4[m4], weights=w4[m4], minlength=len(t)).astype(np.int64)
    assert (t.count_many(n4, w4) == want4).all()
    with pytest.raises(ValueError, match="weight 1 is NaN or null"):
        t.count_many(addrs[:3], [1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="weight 2 is NaN or null"):
        t.count_many(addrs[:3], pa.array([1, 2, None]))


def test_return_index_takes_no_default() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    assert t.lookup_many(["10.0.0.1", "11.0.0.1"], 0, return_index=True).tolist() == [0, -1]
    for default in (-1, 5, None, "x"):
        with pytest.raises(TypeError, match="a default does not apply"):
            t.lookup_many(["10.0.0.1"], default, return_index=True)
