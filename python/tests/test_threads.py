"""Lookups from many threads while another inserts and removes: every
call sees one consistent snapshot (all answers of one lookup_many agree),
nothing crashes, and the final table is what the writer left."""

from __future__ import annotations

import subprocess
import sys
import textwrap
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


# Values of this class make every hash and comparison switch threads
# (`time.sleep(0)` releases the GIL), so a Rust lock held across a dict
# operation on them is held while another thread runs Python code.
_OBJECT_VALUES_SCRIPT = textwrap.dedent(
    """
    import faulthandler, sys, threading, time
    import numpy  # imported now, not by the first lookup_many in a thread
    import ipfib

    faulthandler.dump_traceback_later(TIMEOUT - 5, exit=True)
    sys.setswitchinterval(1e-6)

    class Key:
        def __init__(self, k):
            self.k = k
        def __hash__(self):
            time.sleep(0)
            return hash(self.k)
        def __eq__(self, other):
            time.sleep(0)
            return isinstance(other, Key) and self.k == other.k
        def __repr__(self):
            return f"Key({self.k})"

    t = ipfib.Table.from_prefixes([("10.0.0.0/8", Key(-1))])
    errors = []

    def writer(w):
        try:
            for i in range(ROUNDS):
                # New objects (a miss: interned) and equal ones (a hit).
                t.insert(f"10.{w}.{i % 250}.0/24", Key(i % DISTINCT))
                t[f"11.{w}.{i % 250}.0/24"] = Key((w, i))
        except BaseException as e:
            errors.append(e)

    def reader():
        try:
            for i in range(ROUNDS):
                t.lookup("10.1.2.3")
                t.get("10.0.0.0/8")
                t.lookup_many(["10.1.0.1", "10.2.0.1", "11.1.0.1"])
                if i % 50 == 0:
                    t.items()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads += [threading.Thread(target=reader) for _ in range(READERS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    got = {t[f"10.{w}.{i % 250}.0/24"].k for w in range(WRITERS) for i in range(ROUNDS)}
    assert got == set(range(DISTINCT)), got
    # Equal objects inserted from several threads at once are interned once:
    # the route table sees one value per distinct key (plus Key(-1) and the
    # (w, i) keys of the 11/8 routes).
    assert t.info()["values_v4"] == DISTINCT + 1 + WRITERS * min(ROUNDS, 250), t.info()
    print("ok")
    """
)


def _run_child(script: str, timeout: int) -> None:
    """Run `script` in a child Python; fail (not hang) if it does not print ok."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", f"TIMEOUT={timeout}\n" + script],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"deadlock: no exit within {timeout} s\n{e.stderr!r}") from None
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (
        f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr[-4000:]}"
    )


def test_object_values_from_many_threads_do_not_deadlock() -> None:
    """Several threads insert and look up values whose __hash__ / __eq__
    release the GIL. Run in a child process with a timeout: a deadlock
    (a Rust lock held while Python code runs, waited on by a thread that
    holds the GIL) fails the test instead of hanging the suite."""
    consts = "ROUNDS=400\nDISTINCT=7\nWRITERS=4\nREADERS=3\n"
    _run_child(consts + _OBJECT_VALUES_SCRIPT, timeout=60)


def test_value_hash_may_use_the_same_table() -> None:
    """A value's __hash__ / __eq__ may call back into the table it is being
    inserted into (no lock of the table is held while they run)."""
    script = textwrap.dedent(
        """
        import faulthandler
        import ipfib

        faulthandler.dump_traceback_later(TIMEOUT - 5, exit=True)

        class Key:
            def __init__(self, k):
                self.k = k
            def __hash__(self):
                t.lookup("10.1.2.3")  # an object value: Key(0)
                t.get("10.0.0.0/8")
                return hash(self.k)
            def __eq__(self, other):
                t.lookup("10.1.2.3")
                return isinstance(other, Key) and self.k == other.k

        t = ipfib.Table()
        t["10.0.0.0/8"] = Key(0)
        for i in range(20):
            t[f"10.{i}.0.0/16"] = Key(i % 3)
        assert t.lookup("10.4.2.3").k == 1
        assert t.info()["values_v4"] == 3, t.info()
        print("ok")
        """
    )
    _run_child(script, timeout=30)
