"""lookup_many over every input form gives the same answers as over a list
of strings: numpy uint32 (and other integer dtypes), (N, 16) uint8,
(N, 2) uint64, pyarrow string / large_string / binary / fixed-size binary
(sliced, chunked, with nulls), pandas Series (object and Arrow-backed)."""

from __future__ import annotations

import ipaddress
import random

import numpy as np
import pytest

import ipfib
from support import probe_addresses, random_routes

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

ROUTES = random_routes(11, 200, 200)


@pytest.fixture(scope="module")
def table() -> ipfib.Table:
    return ipfib.Table.from_prefixes(ROUTES)


def v4_sample(n: int = 3000) -> list[str]:
    return [a for a in probe_addresses(ROUTES, 11, n) if ":" not in a]


def v6_sample(n: int = 3000) -> list[str]:
    return [a for a in probe_addresses(ROUTES, 12, n) if ":" in a]


def test_ipv4_numbers(table: ipfib.Table) -> None:
    addrs = v4_sample()
    want = table.lookup_many(addrs).tolist()
    nums = np.array([int(ipaddress.IPv4Address(a)) for a in addrs], dtype=np.uint32)
    assert table.lookup_many(nums).tolist() == want
    assert table.lookup_many(nums.astype(np.int64)).tolist() == want
    assert table.lookup_many(nums[::-1]).tolist() == want[::-1], "non-contiguous view"
    assert table.lookup_many(pa.array(nums)).tolist() == want
    assert table.lookup_many(pd.Series(nums)).tolist() == want


def test_ipv6_arrays(table: ipfib.Table) -> None:
    addrs = v6_sample() + ["::ffff:10.1.2.3", "::ffff:0.0.0.0"]
    want = table.lookup_many(addrs).tolist()
    packed = np.frombuffer(b"".join(ipaddress.IPv6Address(a).packed for a in addrs), dtype=np.uint8)
    as_bytes = packed.reshape(-1, 16)
    assert table.lookup_many(as_bytes).tolist() == want
    words = np.array(
        [
            [int(ipaddress.IPv6Address(a)) >> 64, int(ipaddress.IPv6Address(a)) & (2**64 - 1)]
            for a in addrs
        ],
        dtype=np.uint64,
    )
    assert table.lookup_many(words).tolist() == want
    assert table.lookup_many(packed.view(">u8").reshape(-1, 2)).tolist() == want, "big-endian words"
    assert table.lookup_many(as_bytes.view("S16").ravel()).tolist() == want


def test_arrow_and_pandas_strings(table: ipfib.Table) -> None:
    addrs: list[str | None] = [*v4_sample(500), *v6_sample(500)]
    random.Random(3).shuffle(addrs)
    addrs[7] = None
    want = table.lookup_many(addrs, default=-1).tolist()
    assert want[7] == -1
    for arr in (pa.array(addrs, pa.string()), pa.array(addrs, pa.large_string())):
        assert table.lookup_many(arr, default=-1).tolist() == want
        assert table.lookup_many(arr.slice(5), default=-1).tolist() == want[5:]
        chunked = pa.chunked_array([arr.slice(0, 100), arr.slice(100)])
        assert table.lookup_many(chunked, default=-1).tolist() == want
    assert table.lookup_many(pd.Series(addrs), default=-1).tolist() == want
    assert table.lookup_many(pd.Series(addrs, dtype="string[pyarrow]"), default=-1).tolist() == want
    assert table.lookup_many(np.array(addrs, dtype=object), default=-1).tolist() == want
    assert table.lookup_many(tuple(addrs), default=-1).tolist() == want
    assert (
        table.lookup_many(
            [ipaddress.ip_address(a) if a else None for a in addrs], default=-1
        ).tolist()
        == want
    )


def test_arrow_binary(table: ipfib.Table) -> None:
    addrs = v4_sample(300) + v6_sample(300)
    want = table.lookup_many(addrs).tolist()
    packed = [ipaddress.ip_address(a).packed for a in addrs]
    assert table.lookup_many(pa.array(packed, pa.binary())).tolist() == want
    assert table.lookup_many(pa.array(packed, pa.large_binary())).tolist() == want
    assert table.lookup_many(packed).tolist() == want
    v6 = [ipaddress.IPv6Address(a).packed for a in v6_sample(300)]
    fixed = pa.array(v6, pa.binary(16))
    assert table.lookup_many(fixed.slice(3)).tolist() == table.lookup_many(v6[3:]).tolist()
    with pytest.raises(ValueError, match="at index 1"):
        table.lookup_many(pa.array([b"\x01\x02\x03\x04", b"\x01\x02"], pa.binary()))


def test_bad_arrow_text_is_named(table: ipfib.Table) -> None:
    arr = pa.array(["10.0.0.1", "2001:db8::1", "nonsense"])
    with pytest.raises(ValueError, match=r'"nonsense" at index 2'):
        table.lookup_many(arr)
    assert np.ma.getmaskarray(table.lookup_many(arr, errors="coerce", masked=True)).tolist() == [
        table.lookup("10.0.0.1") is None,
        table.lookup("2001:db8::1") is None,
        True,
    ]


def test_large_batch_crosses_chunks(table: ipfib.Table) -> None:
    rng = np.random.default_rng(5)
    nums = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    got = table.lookup_many(nums)
    sample = rng.choice(len(nums), 2000, replace=False)
    for i in sample:
        v = table.lookup(str(ipaddress.IPv4Address(int(nums[i]))))
        assert got[i] == (0 if v is None else v)
    words = rng.integers(0, 2**63, (150_000, 2), dtype=np.uint64)
    words[::7, 0] = 0
    words[::7, 1] = (words[::7, 1] & 0xFFFFFFFF) | (0xFFFF << 32)  # IPv4-mapped
    got6 = table.lookup_many(words)
    for i in [*sample[sample < len(words)], *range(0, len(words), 7 * 499)]:
        a = ipaddress.IPv6Address(int(words[i, 0]) << 64 | int(words[i, 1]))
        v = table.lookup(str(a))
        assert got6[i] == (0 if v is None else v)
