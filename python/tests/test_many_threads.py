"""`lookup_many(..., threads=N)` and `count_many(..., threads=N)`: the input
cut into contiguous shares, one thread each, from one version of the
table. Every answer, mask, length, index, total and error is the one
thread's, on every input form; a sample is checked against brute force;
the threads are seen running."""

from __future__ import annotations

import ipaddress
import os
import random
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import ipfib
from support import brute_lookup, oracle, random_routes

N = 300_000  # four shares of at least 65,536 addresses
THREADS = (2, 3, 4, 0, 1000)


@pytest.fixture(scope="module")
def case() -> tuple[ipfib.Table, dict[str, tuple[str, int]], list[int], list[int]]:
    routes = random_routes(41, 3000, 3000)
    t = ipfib.Table.from_prefixes(routes)
    rnd = random.Random(7)
    # Addresses at every prefix's edges, then random ones, shuffled so
    # each share holds some of each.
    v4: list[int] = []
    v6: list[int] = []
    for p, _ in routes:
        net = ipaddress.ip_network(p)
        lo, hi = int(net.network_address), int(net.broadcast_address)
        top = (1 << net.max_prefixlen) - 1
        edge = [x for x in (lo, hi, lo - 1, hi + 1) if 0 <= x <= top]
        (v4 if net.version == 4 else v6).extend(edge)
    v4 += [rnd.getrandbits(32) for _ in range(N - len(v4))]
    v6 += [rnd.getrandbits(128) for _ in range(N - len(v6))]
    v6 += [0xFFFF_0000_0000 | rnd.getrandbits(32) for _ in range(2000)]  # IPv4-mapped
    rnd.shuffle(v4)
    rnd.shuffle(v6)
    return t, oracle(routes), v4[:N], v6[:N]


def _brute(table: dict[str, tuple[str, int]], addrs: list[str], got: np.ndarray) -> None:
    rnd = random.Random(3)
    for i in rnd.sample(range(len(addrs)), 1500):
        hit = brute_lookup(table, addrs[i])
        assert got[i] == (hit[1] if hit else 0), (i, addrs[i])


def _v6_bytes(v6: list[int]) -> np.ndarray:
    return np.frombuffer(b"".join(x.to_bytes(16, "big") for x in v6), np.uint8).reshape(-1, 16)


def test_every_input_form_answers_as_one_thread(case) -> None:  # type: ignore[no-untyped-def]
    t, table, v4, v6 = case
    a4 = np.array(v4, dtype=np.uint32)
    b6 = _v6_bytes(v6)
    w6 = b6.view(">u8").astype(np.uint64)
    texts = [str(ipaddress.IPv4Address(x)) for x in v4[: N // 2]] + [
        str(ipaddress.IPv6Address(x)) for x in v6[: N // 2]
    ]
    arrow = pa.array(texts)
    forms = {"uint32": a4, "v6 bytes": b6, "v6 words": w6, "arrow": arrow}
    one = {k: t.lookup_many(x) for k, x in forms.items()}
    _brute(table, [str(ipaddress.IPv4Address(x)) for x in v4], one["uint32"])
    _brute(table, [str(ipaddress.IPv6Address(x)) for x in v6], one["v6 bytes"])
    _brute(table, texts, one["arrow"])
    assert np.array_equal(one["v6 bytes"], one["v6 words"])
    for k, x in forms.items():
        for n in THREADS:
            got = t.lookup_many(x, threads=n)
            assert got.dtype == one[k].dtype and np.array_equal(got, one[k]), (k, n)
    # Every output: masks, lengths, indices, narrow and object results.
    variants: list[dict[str, object]] = [
        {"masked": True, "with_prefix_len": True},
        {"return_index": True, "with_prefix_len": True},
        {"dtype": np.uint32, "default": 7},
        {"dtype": object},
    ]
    for kw in variants:
        for x in (a4, arrow):
            base = t.lookup_many(x, **kw)
            for n in (2, 4):
                got = t.lookup_many(x, threads=n, **kw)
                for g, b in zip(
                    got if isinstance(got, tuple) else (got,),
                    base if isinstance(base, tuple) else (base,),
                ):
                    assert np.array_equal(np.ma.getdata(g), np.ma.getdata(b)), (kw, n)
                    assert np.array_equal(np.ma.getmaskarray(g), np.ma.getmaskarray(b)), (kw, n)


def test_nulls_bad_items_and_the_first_error(case) -> None:  # type: ignore[no-untyped-def]
    t, _, v4, _ = case
    texts: list[str | None] = [str(ipaddress.IPv4Address(x)) for x in v4]
    # Bad items in the second and third shares, nulls everywhere.
    for i in (230_000, 150_000, 151_000):
        texts[i] = f"bad-{i}"
    for i in range(5, N, 9973):
        texts[i] = None
    arrow = pa.array(texts)
    one = t.lookup_many(arrow, errors="coerce", masked=True)
    for n in THREADS:
        got = t.lookup_many(arrow, errors="coerce", masked=True, threads=n)
        assert np.array_equal(got.mask, one.mask) and np.array_equal(got.data, one.data)
        with pytest.raises(ValueError, match=r'"bad-150000" at index 150000$'):
            t.lookup_many(arrow, threads=n)
        with pytest.raises(ValueError, match=r"at index 150000$"):
            t.count_many(arrow, threads=n)
    assert one.mask[150_000] and one.mask[5]


def test_count_many_sums_the_shares(case) -> None:  # type: ignore[no-untyped-def]
    t, _, v4, v6 = case
    a4 = np.array(v4, dtype=np.uint32)
    b6 = _v6_bytes(v6)
    rnd = np.random.default_rng(5)
    ints = rnd.integers(0, 1500, N, dtype=np.int64)
    floats = ints.astype(np.float64) / 3
    for x in (a4, b6):
        for w in (None, ints, floats):
            one = t.count_many(x, w)
            assert one.sum() > 0
            for n in THREADS:
                got = t.count_many(x, w, threads=n)
                assert got.dtype == one.dtype, n
                if w is floats:
                    # Float sums in another order (documented).
                    assert np.allclose(got, one, rtol=1e-12, atol=0), n
                else:
                    assert np.array_equal(got, one), n
    # No share's total overflows, the sum of them does: still refused.
    hit = np.full(N, 0x0A000001, dtype=np.uint32)
    one_route = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    w = np.full(N, 2**63 // (N - 1000), dtype=np.int64)
    for n in (1, 2, 4):
        with pytest.raises(OverflowError, match="does not fit int64"):
            one_route.count_many(hit, w, threads=n)
    # Totals are exact whatever the order: sums that leave int64 on the
    # way and come back answer the same on every thread count.
    m = 2**63 - 1
    for spots in (
        [(0, 2**62), (N // 2, 2**62), (N // 2 + 1, -(2**62))],
        [(0, -1), (N // 2, m), (N // 2 + 1, 1)],
        [(0, m), (N // 2, 1), (N // 2 + 1, -1)],
    ):
        w = np.zeros(N, dtype=np.int64)
        for i, v in spots:
            w[i] = v
        want = sum(v for _, v in spots)
        for n in (1, 2, 3, 4):
            assert one_route.count_many(hit, w, threads=n).tolist() == [want], (spots, n)


def test_small_calls_and_bad_thread_counts(case) -> None:  # type: ignore[no-untyped-def]
    t, _, v4, _ = case
    small = np.array(v4[:1000], dtype=np.uint32)
    assert np.array_equal(t.lookup_many(small, threads=8), t.lookup_many(small))
    assert t.lookup_many(np.array([], dtype=np.uint32), threads=4).tolist() == []
    assert t.count_many(np.array([], dtype=np.uint32), threads=4).sum() == 0
    lst = [str(ipaddress.IPv4Address(x)) for x in v4[:200_000]]
    assert np.array_equal(t.lookup_many(lst, threads=4), t.lookup_many(lst))
    with pytest.raises(OverflowError):
        t.lookup_many(small, threads=-1)
    with pytest.raises(TypeError):
        t.count_many(small, threads="2")


def _thread_names() -> set[str]:
    names = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            names.add((task / "comm").read_text().strip())
        except OSError:
            pass  # ended while listed
    return names


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_the_threads_run() -> None:
    """While a long call runs (the GIL released), its lookup threads are
    listed by the kernel under their name."""
    t = ipfib.Table.from_prefixes(random_routes(5, 3000, 0))
    addrs = np.random.default_rng(1).integers(0, 2**32, 16_000_000, dtype=np.uint32)
    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(_thread_names())

    w = threading.Thread(target=watch)
    w.start()
    try:
        for _ in range(5):
            t.lookup_many(addrs, threads=2)
            if "ipfib-lookup" in seen:
                break
    finally:
        done.set()
        w.join()
    assert "ipfib-lookup" in seen, sorted(seen)
    assert "ipfib-lookup" not in _thread_names(), "a lookup thread outlived its call"
