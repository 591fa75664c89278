"""Compiled table files from Python: `Table.open` (and `Table.from_file` on a
compiled file) answers exactly what the table it was compiled from answers
(random tables with an independent brute-force oracle, and a real RouteViews
table); the opened table stays a full `Table` (changes, exact queries,
pickling); damaged files raise `TableFileError`, never crash; N processes
that open one file share its pages."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ipfib
from support import brute_lookup, cli, data_file, oracle, probe_addresses, random_routes


def compile_file(table: Path, out: Path, *extra: str) -> None:
    r = subprocess.run(
        [cli(), "compile", str(table), "-o", str(out), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr


def write_text(routes: list[tuple[str, int]], path: Path) -> None:
    path.write_text("".join(f"{p} {v}\n" for p, v in routes))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("engine", ["auto", "planb", "poptrie:16", "poptrie-flat:18"])
def test_open_answers_like_the_oracle(tmp_path: Path, seed: int, engine: str) -> None:
    routes = random_routes(seed)
    text = tmp_path / "t.txt"
    write_text(routes, text)
    out = tmp_path / "t.ipfib"
    compile_file(text, out, "--engine", engine)
    t = ipfib.Table.open(out)
    truth = oracle(routes)
    addrs = probe_addresses(routes, seed)
    want = [brute_lookup(truth, a) for a in addrs]
    assert [t.lookup_prefix(a) for a in addrs] == want
    values = t.lookup_many(addrs, default=-1)
    assert values.tolist() == [w[1] if w else -1 for w in want]
    got, lens = t.lookup_many(addrs, default=-1, with_prefix_len=True)
    assert lens.tolist() == [int(w[0].split("/")[1]) if w else 0 for w in want]
    # from_file on a compiled file opens it too.
    t2 = ipfib.Table.from_file(out)
    assert t2.lookup_many(addrs, default=-1).tolist() == values.tolist()


def test_opened_tables_stay_full_tables(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("10.0.0.0/8 1\n10.1.0.0/16 two\n2001:db8::/32 3\n")
    out = tmp_path / "t.ipfib"
    compile_file(text, out)
    t = ipfib.Table.open(out)
    assert len(t) == 3
    assert t["10.1.0.0/16"] == "two"
    assert t.lookup("10.2.0.1") == 1
    t["10.2.0.0/16"] = 7
    del t["10.1.0.0/16"]
    assert t.lookup("10.2.0.1") == 7
    assert t.lookup("10.1.0.1") == 1
    assert dict(pickle.loads(pickle.dumps(t)).items()) == dict(t.items())
    # The file itself is unchanged by changes to the opened table.
    assert ipfib.Table.open(out).lookup("10.1.0.1") == "two"
    # A private in-memory copy answers the same.
    assert ipfib.Table.open(out, mmap=False).lookup("10.1.0.1") == "two"
    # Loading options a compiled file cannot honour are refused.
    for kw in [{"value_column": 3}, {"strict": True}, {"mask_host_bits": True}]:
        with pytest.raises(ValueError, match="does not apply"):
            ipfib.Table.from_file(out, **kw)  # type: ignore[arg-type]


def test_damaged_files_raise_table_file_error(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("10.0.0.0/8 1\n2001:db8::/32 3\n")
    out = tmp_path / "t.ipfib"
    compile_file(text, out)
    good = out.read_bytes()
    bad = tmp_path / "bad.ipfib"
    damages = [good[:-1], good[:64], good[:10], b"IPFIBTBL" + bytes(100)]
    damages.append(good[:8] + b"\x09" + good[9:])
    for damaged in damages:
        bad.write_bytes(damaged)
        with pytest.raises(ipfib.TableFileError, match="compiled table file"):
            ipfib.Table.open(bad)
    with pytest.raises(FileNotFoundError):
        ipfib.Table.open(tmp_path / "missing.ipfib")
    # A text table is not a compiled file.
    with pytest.raises(ipfib.TableFileError, match="not an ipfib compiled table file"):
        ipfib.Table.open(text)


def test_real_table_round_trip(tmp_path: Path) -> None:
    src = data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz")
    out = tmp_path / "rv2.ipfib"
    compile_file(src, out)
    opened = ipfib.Table.open(out)
    loaded = ipfib.Table.from_file(src)
    rng = np.random.default_rng(5)
    addrs = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
    a = opened.lookup_many(addrs)
    b = loaded.lookup_many(addrs)
    assert (a == b).all()
    assert (a != 0).sum() > 100_000
    la = opened.lookup_many(addrs, with_prefix_len=True)
    lb = loaded.lookup_many(addrs, with_prefix_len=True)
    assert all((x == y).all() for x, y in zip(la, lb))


def _pss_kib(pid: int, path: Path) -> tuple[int, int]:
    """(Rss, Pss) in KiB of the mappings of `path` in process `pid`."""
    rss = pss = 0
    inside = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:
                inside = line.rstrip().endswith(str(path))
            elif inside and line.startswith("Rss:"):
                rss += int(head[1])
            elif inside and line.startswith("Pss:"):
                pss += int(head[1])
    return rss, pss


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc smaps")
def test_processes_share_one_copy(tmp_path: Path) -> None:
    """Four processes open the same file: each maps all of it (Rss), and
    the proportional share (Pss) is about a quarter: one copy in memory."""
    src = data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz")
    out = tmp_path / "rv2.ipfib"
    compile_file(src, out)
    child = textwrap.dedent(
        f"""
        import sys, ipfib
        t = ipfib.Table.open({str(out)!r})
        assert t.lookup("1.1.1.1") is not None
        print("ready", flush=True)
        sys.stdin.read()
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready"
        sizes = [_pss_kib(p.pid, out) for p in procs]
    finally:
        for p in procs:
            if p.stdin:
                p.stdin.close()
        for p in procs:
            p.wait(timeout=30)
    file_kib = os.path.getsize(out) // 1024
    for rss, pss in sizes:
        assert rss > 0.9 * file_kib, (rss, file_kib)
        assert pss < 0.4 * rss, (rss, pss)
    print(f"file {file_kib} KiB; per process Rss/Pss KiB: {sizes}")
