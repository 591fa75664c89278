"""``Table.save`` (a compiled table file from Python) and
``lookup_many(return_index=True)`` (the matched route's index), checked
against the single lookups and the route list on random tables rich in
edge cases, in memory and reopened from the saved file."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ipfib
from support import brute_lookup, oracle, probe_addresses, random_routes


@functools.cache
def _case(seed: int) -> tuple[list[tuple[str, int]], list[Any], list[Any]]:
    """Routes, probe addresses (with a null and a bad item) and the brute
    force answer for each: computed once per seed for every engine."""
    routes = random_routes(seed, 200, 200)
    addrs: list[Any] = probe_addresses(routes, seed, 300) + [None, "bad"]
    table = oracle(routes)
    want = [brute_lookup(table, a) if a not in (None, "bad") else None for a in addrs]
    return routes, addrs, want


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("engine", ["auto", "planb", "poptrie", "poptrie-flat:16", "radix"])
def test_return_index_names_the_matched_route(seed: int, engine: str) -> None:
    routes, addrs, want = _case(seed)
    t = ipfib.Table.from_prefixes(routes, engine=engine)
    prefixes = list(t)
    idx = t.lookup_many(addrs, errors="coerce", return_index=True)
    assert idx.dtype == np.int64
    for a, i, hit in zip(addrs, idx.tolist(), want):
        if hit is None:
            assert i == -1, a
        else:
            assert prefixes[i] == hit[0], a
    # masked and with lengths: the same indices, the mask where -1.
    m, lens = t.lookup_many(
        addrs, errors="coerce", return_index=True, masked=True, with_prefix_len=True
    )
    assert (np.ma.getdata(m) == idx).all() and (np.ma.getmaskarray(m) == (idx < 0)).all()
    assert all(
        ln == int(prefixes[i].split("/")[1]) for i, ln in zip(idx.tolist(), lens.tolist()) if i >= 0
    )
    with pytest.raises(TypeError, match="return_index"):
        t.lookup_many(addrs[:3], return_index=True, dtype=np.uint32)


def test_saved_table_answers_as_the_table(tmp_path: Path) -> None:
    routes = random_routes(9, 2000, 2000)
    t = ipfib.Table.from_prefixes(routes)
    stats = t.save(tmp_path / "t.ipfib")
    assert stats["prefixes_v4"] + stats["prefixes_v6"] == len(t)
    assert stats["bytes"] == (tmp_path / "t.ipfib").stat().st_size
    u = ipfib.Table.open(tmp_path / "t.ipfib")
    assert list(u.items()) == list(t.items())
    addrs = probe_addresses(routes, 9, 3000)
    assert (u.lookup_many(addrs) == t.lookup_many(addrs)).all()
    assert (
        u.lookup_many(addrs, return_index=True) == t.lookup_many(addrs, return_index=True)
    ).all()
    # Text values come back as text; a named engine is kept.
    named = ipfib.Table.from_prefixes([("10.0.0.0/8", "ten"), ("::/0", "all")], engine="planb")
    named.save(tmp_path / "n.ipfib")
    back = ipfib.Table.open(tmp_path / "n.ipfib")
    assert back.lookup("10.1.1.1") == "ten" and back.lookup("2001:db8::1") == "all"
    assert "planb" in back.info()["engine_v4"]
    # Saving over an open file replaces it by a rename: the open table keeps
    # answering from the old file.
    ipfib.Table.from_prefixes([("10.0.0.0/8", "new")]).save(tmp_path / "n.ipfib")
    assert back.lookup("10.1.1.1") == "ten"
    assert ipfib.Table.open(tmp_path / "n.ipfib").lookup("10.1.1.1") == "new"


def test_save_refuses_what_a_file_cannot_give_back(tmp_path: Path) -> None:
    out = tmp_path / "x.ipfib"
    with pytest.raises(ValueError, match=r'10\.0\.0\.0/8 is the text "15169"'):
        ipfib.Table.from_prefixes([("10.0.0.0/8", "15169")]).save(out)
    with pytest.raises(TypeError, match="neither an int nor a str"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", 1.5)]).save(out)
    with pytest.raises(TypeError, match="neither an int nor a str"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", True)]).save(out)
    with pytest.raises(OSError, match="no-such-dir"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", 1)]).save(tmp_path / "no-such-dir" / "x")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_save_refuses_negative_ints(tmp_path: Path) -> None:
    # Table files' integers are unsigned: -1 would come back as the text "-1".
    with pytest.raises(ValueError, match=r"11\.0\.0\.0/8 is the negative int -1"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", 5), ("11.0.0.0/8", -1)]).save(tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_concurrent_saves_never_publish_a_partial_file(tmp_path: Path) -> None:
    """Threads saving to one path (the GIL released while writing) and a
    reader opening it: every open sees a whole table, never an empty or
    half-written file."""
    import threading
    import time

    path = tmp_path / "t.ipfib"
    tables = [ipfib.Table.from_prefixes(random_routes(s, 300, 300)) for s in (1, 2)]
    sizes = {len(t) for t in tables}
    tables[0].save(path)
    stop = time.monotonic() + 3.0
    errors: list[BaseException] = []

    def writer(t: ipfib.Table) -> None:
        try:
            while time.monotonic() < stop:
                t.save(path)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in tables]
    for th in threads:
        th.start()
    opened = 0
    while time.monotonic() < stop:
        assert len(ipfib.Table.open(path)) in sizes
        opened += 1
    for th in threads:
        th.join()
    assert not errors, errors
    assert opened > 10
    assert [p.name for p in tmp_path.iterdir()] == ["t.ipfib"], "no temporary file left"


def test_save_leaves_other_writers_temporary_files_alone(tmp_path: Path) -> None:
    """A temporary name already taken (a crashed writer's, with this pid
    reused) is skipped, not removed: the save succeeds and the other file
    is still there. In a fresh process, whose first names are known."""
    import subprocess
    import sys

    code = f"""
import os, ipfib
d = {str(tmp_path)!r}
taken = [os.path.join(d, f".t.ipfib.{{os.getpid()}}.{{i}}.tmp") for i in range(3)]
for p in taken:
    open(p, "w").write("someone else's")
ipfib.Table.from_prefixes([("10.0.0.0/8", 1)]).save(os.path.join(d, "t.ipfib"))
assert all(open(p).read() == "someone else's" for p in taken)
assert ipfib.Table.open(os.path.join(d, "t.ipfib")).lookup("10.1.1.1") == 1
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert len(list(tmp_path.glob(".t.ipfib.*.tmp"))) == 3
