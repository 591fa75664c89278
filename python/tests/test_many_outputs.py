"""lookup_many's outputs: every element written once for every input form
and size (around the engine chunk of 2048, the batch of 32 and the decode
round of 65,536, empty and one element), misses with a non-zero default,
masks and prefix lengths, against the scalar calls; and the integer
``dtype=`` argument (what fits, what is refused, what stays as it was)."""

from __future__ import annotations

import ipaddress
from typing import Any

import numpy as np
import pytest

import ipfib
from support import random_routes

CHUNK, BATCH, DECODE = 2048, 32, 1 << 16
SIZES = sorted(
    {0, 1, BATCH - 1, BATCH, BATCH + 1}
    | {k * CHUNK + d for k in (1, 2) for d in (-1, 0, 1)}
    | {DECODE + d for d in (-1, 0, 1)}
    | {2 * DECODE + 1}
)
N = max(SIZES)
DEFAULT = -7

# No short prefixes, so random addresses miss as well as match.
ROUTES = [(p, v) for p, v in random_routes(21, 400, 400) if int(p.rsplit("/", 1)[1]) >= 8]


@pytest.fixture(scope="module")
def table() -> ipfib.Table:
    return ipfib.Table.from_prefixes(ROUTES)


@pytest.fixture(scope="module")
def v4() -> tuple[np.ndarray, list[Any]]:
    """N random IPv4 numbers (every 5th inside a route, so both hits and
    misses) and the scalar answers: (value, prefix length) or None."""
    rng = np.random.default_rng(3)
    nums = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    nets = [ipaddress.IPv4Network(p) for p, _ in ROUTES if ":" not in p]
    for i in range(0, N, 5):
        net = nets[i % len(nets)]
        nums[i] = int(net.network_address) + (i % net.num_addresses)
    return nums, scalar_answers([str(ipaddress.IPv4Address(int(a))) for a in nums])


@pytest.fixture(scope="module")
def v6() -> tuple[np.ndarray, list[Any]]:
    """N IPv6 rows as (hi, lo) words: random, inside routes, and every 3rd
    an IPv4-mapped address (looked up in the IPv4 table)."""
    rng = np.random.default_rng(4)
    words = rng.integers(0, 2**64, (N, 2), dtype=np.uint64)
    nets = [ipaddress.IPv6Network(p) for p, _ in ROUTES if ":" in p]
    for i in range(0, N, 5):
        net = nets[i % len(nets)]
        a = int(net.network_address) + (i * 7919) % net.num_addresses
        words[i] = (a >> 64, a & (2**64 - 1))
    words[::3, 0] = 0
    words[::3, 1] = (words[::3, 1] & 0xFFFFFFFF) | (0xFFFF << 32)
    addrs = [str(ipaddress.IPv6Address(int(h) << 64 | int(lo))) for h, lo in words]
    return words, scalar_answers(addrs)


_scalar_table = ipfib.Table.from_prefixes(ROUTES)


def scalar_answers(addrs: list[str]) -> list[Any]:
    """The scalar path's answer per address: (value, length) or None."""
    out: list[Any] = []
    for a in addrs:
        hit = _scalar_table.lookup_prefix(a)
        out.append(None if hit is None else (hit[1], int(hit[0].rsplit("/", 1)[1])))
    return out


def check(got: Any, want: list[Any], dtype: Any = np.int64) -> None:
    """`got` = lookup_many(..., default=DEFAULT, masked=True,
    with_prefix_len=True) equals the scalar answers `want`."""
    vals, lens = got
    assert vals.dtype == dtype and lens.dtype == np.int16
    assert len(vals) == len(want) == len(lens)
    mask = np.ma.getmaskarray(vals).tolist()
    assert mask == [w is None for w in want]
    assert np.ma.getmaskarray(lens).tolist() == mask
    assert np.ma.getdata(vals).tolist() == [DEFAULT if w is None else w[0] for w in want]
    assert np.ma.getdata(lens).tolist() == [-1 if w is None else w[1] for w in want]


def test_samples_hit_and_miss(v4: Any, v6: Any) -> None:
    for _, want in (v4, v6):
        assert any(w is None for w in want[:BATCH]) and any(w is not None for w in want[:BATCH])


@pytest.mark.parametrize("n", SIZES)
def test_ipv4_numbers_every_size(table: ipfib.Table, v4: Any, n: int) -> None:
    nums, want = v4
    got = table.lookup_many(nums[:n], default=DEFAULT, masked=True, with_prefix_len=True)
    check(got, want[:n])
    plain = table.lookup_many(nums[:n], default=DEFAULT)
    assert plain.tolist() == [DEFAULT if w is None else w[0] for w in want[:n]]


@pytest.mark.parametrize("n", SIZES)
def test_ipv6_arrays_every_size(table: ipfib.Table, v6: Any, n: int) -> None:
    words, want = v6
    got = table.lookup_many(words[:n], default=DEFAULT, masked=True, with_prefix_len=True)
    check(got, want[:n])
    rows = words[:n].astype(">u8").view(np.uint8).reshape(-1, 16)
    got = table.lookup_many(rows, default=DEFAULT, masked=True, with_prefix_len=True)
    check(got, want[:n])


@pytest.mark.parametrize("n", [0, 1, DECODE - 1, DECODE, DECODE + 1])
def test_nulls_and_coerced_items_miss(table: ipfib.Table, v4: Any, n: int) -> None:
    """Nulls and bad items (errors="coerce") are misses at their own
    positions, on both sides of a decode round, through the list and
    Arrow paths: DEFAULT, masked, length -1."""
    pa = pytest.importorskip("pyarrow")
    nums, want = v4
    addrs: list[str | None] = [str(ipaddress.IPv4Address(int(a))) for a in nums[:n]]
    expect = list(want[:n])
    for i in {0, n - 1, DECODE - 1, DECODE, 17}:
        if 0 <= i < n:
            addrs[i] = None if i % 2 else "not an address"
            expect[i] = None
    check(
        table.lookup_many(addrs, DEFAULT, masked=True, with_prefix_len=True, errors="coerce"),
        expect,
    )
    arrow = pa.array(addrs, type=pa.string())
    got = table.lookup_many(arrow, DEFAULT, masked=True, with_prefix_len=True, errors="coerce")
    check(got, expect)


def test_object_values_every_position(v4: Any) -> None:
    t = ipfib.Table.from_prefixes([(p, f"v{v}") for p, v in ROUTES])
    nums, want = v4
    n = CHUNK + 1
    got = t.lookup_many(nums[:n], default="miss").tolist()
    assert got == ["miss" if w is None else f"v{w[0]}" for w in want[:n]]


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_dtype_small_values(dtype: Any, v4: Any) -> None:
    """Values 0..100 fit every integer dtype; the answers equal int64's."""
    routes = [(p, v % 101) for p, v in ROUTES]
    t = ipfib.Table.from_prefixes(routes)
    nums, _ = v4
    n = 2 * CHUNK + 1
    want = t.lookup_many(nums[:n], default=100)
    assert want.dtype == np.int64
    got = t.lookup_many(nums[:n], default=100, dtype=dtype)
    assert got.dtype == dtype and got.tolist() == want.tolist()
    vals, lens = t.lookup_many(nums[:n], masked=True, with_prefix_len=True, dtype=dtype)
    assert vals.dtype == dtype and isinstance(vals, np.ma.MaskedArray)
    assert np.ma.getmaskarray(vals).tolist() == (np.ma.getdata(lens) == -1).tolist()


@pytest.mark.parametrize("n", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1])
def test_dtype_uint32_every_input(table: ipfib.Table, v4: Any, v6: Any, n: int) -> None:
    for arr, want in (v4, v6):
        got = table.lookup_many(arr[:n], default=0, masked=True, with_prefix_len=True, dtype="u4")
        vals, lens = got
        assert vals.dtype == np.uint32
        assert np.ma.getdata(vals).tolist() == [0 if w is None else w[0] for w in want[:n]]
        assert np.ma.getdata(lens).tolist() == [-1 if w is None else w[1] for w in want[:n]]


def test_dtype_default_is_unchanged(table: ipfib.Table, v4: Any) -> None:
    nums, _ = v4
    none: list[dict[str, Any]] = [{}, {"dtype": None}]
    for kw in none:
        assert table.lookup_many(nums[:10], **kw).dtype == np.int64
        assert table.lookup_many(nums[:10], default=None, **kw).dtype == object
    obj = table.lookup_many(nums[:100], dtype=object)
    assert obj.dtype == object and obj.tolist() == table.lookup_many(nums[:100]).tolist()
    assert all(type(v) is int for v in obj.tolist())


def test_dtype_limits() -> None:
    top = ipfib.Table.from_prefixes([("10.0.0.0/8", 2**32 - 1), ("::/0", 0)])
    addrs = ["10.0.0.1", "11.0.0.1", "::1"]
    assert top.lookup_many(addrs, dtype=np.uint32).tolist() == [2**32 - 1, 0, 0]
    with pytest.raises(ValueError, match="table value 4294967295 does not fit dtype int32"):
        top.lookup_many(addrs, dtype=np.int32)
    with pytest.raises(ValueError, match="default -1 does not fit dtype uint32"):
        top.lookup_many(addrs, default=-1, dtype=np.uint32)
    neg = ipfib.Table.from_prefixes([("2001:db8::/32", -129)])
    assert neg.lookup_many(["2001:db8::1"], dtype=np.int16).tolist() == [-129]
    with pytest.raises(ValueError, match="table value -129 does not fit dtype int8"):
        neg.lookup_many(["2001:db8::1"], dtype=np.int8)
    with pytest.raises(ValueError, match="does not fit dtype uint64"):
        neg.lookup_many(["2001:db8::1"], dtype=np.uint64)
    with pytest.raises(ValueError, match="default"):
        top.lookup_many(addrs, default=2**70, dtype=np.uint64)
    # The check follows the table: a new value that does not fit is refused.
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 255)])
    assert t.lookup_many(["10.0.0.1"], dtype=np.uint8).tolist() == [255]
    t.insert("192.0.2.0/24", 256)
    with pytest.raises(ValueError, match="table value 256 does not fit dtype uint8"):
        t.lookup_many(["10.0.0.1"], dtype=np.uint8)
    empty = ipfib.Table()
    assert empty.lookup_many(np.zeros(3, np.uint32), default=9, dtype=np.uint8).tolist() == [9] * 3


def test_dtype_refusals() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    for bad in (np.float64, bool, ">u4" if np.little_endian else "<u4", "U4"):
        with pytest.raises(TypeError, match="dtype must be None, object or a native-order"):
            t.lookup_many(["10.0.0.1"], dtype=bad)
    with pytest.raises(TypeError):
        t.lookup_many(["10.0.0.1"], dtype="no such dtype")
    for default in (True, None, "x", 1.5):
        with pytest.raises(TypeError, match="needs an int default"):
            t.lookup_many(["10.0.0.1"], default=default, dtype=np.uint32)
    s = ipfib.Table.from_prefixes([("10.0.0.0/8", "a")])
    with pytest.raises(TypeError, match="needs every value in the table to be an int"):
        s.lookup_many(["10.0.0.1"], dtype=np.uint32)
    assert s.lookup_many(["10.0.0.1"], dtype=object).tolist() == ["a"]
