"""Lookups from many threads while another inserts and removes: every
call sees one consistent snapshot (all answers of one lookup_many agree),
nothing crashes, and the final table is what the writer left."""

from __future__ import annotations

import threading
import time

import numpy as np

import ipfib
from support import random_routes


def test_lookups_during_updates() -> None:
    t = ipfib.Table.from_prefixes([*random_routes(21, 2000, 200), ("10.0.0.0/8", 1)])
    for p, _ in t.subnets("10.0.0.0/8"):
        if p != "10.0.0.0/8":
            t.remove(p)
    probe = np.full(50_000, 0x0A010203, dtype=np.uint32)  # 10.1.2.3
    stop = threading.Event()
    errors: list[BaseException] = []
    seen: set[int] = set()

    def reader() -> None:
        try:
            while not stop.is_set():
                out = t.lookup_many(probe)
                first = int(out[0])
                assert (out == first).all(), "one call, one snapshot"
                assert first in (1, 2, 3)
                seen.add(first)
                assert t.lookup("10.1.2.3") in (1, 2, 3)
                assert len(t.items()) >= 1
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for r in readers:
        r.start()
    deadline = time.monotonic() + 1.5
    n = 0
    while time.monotonic() < deadline:
        t.insert("10.0.0.0/8", 2 if n % 2 else 1)
        t.insert("10.1.0.0/16", 3)
        t.remove("10.1.0.0/16")
        n += 1
    t.insert("10.1.0.0/16", 3)
    stop.set()
    for r in readers:
        r.join(timeout=30)
    assert not errors, errors[0]
    assert n > 3 and len(seen) >= 2, (n, seen)
    assert t.lookup("10.1.2.3") == 3


def test_concurrent_lookup_many_agree() -> None:
    t = ipfib.Table.from_prefixes(random_routes(22, 3000, 3000), engine="poptrie")
    rng = np.random.default_rng(1)
    addrs = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
    want = t.lookup_many(addrs)
    results: list[bool] = []

    def work() -> None:
        results.append(bool((t.lookup_many(addrs) == want).all()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert results == [True] * 4


def test_lookup_many_releases_the_gil() -> None:
    """While one thread runs a long lookup_many, another runs Python code:
    it could not if the call held the GIL throughout."""
    t = ipfib.Table.from_prefixes(random_routes(23, 3000, 100))
    addrs = np.random.default_rng(2).integers(0, 2**32, 20_000_000, dtype=np.uint64)
    addrs = addrs.astype(np.uint32)
    started = threading.Event()
    done = threading.Event()

    def work() -> None:
        started.set()
        t.lookup_many(addrs)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    spins = 0
    while not done.is_set():
        spins += 1
    worker.join()
    assert spins > 1000, spins
