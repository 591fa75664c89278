"""Scalar calls in every address form (text, ``ipaddress``, int, packed
bytes) answer as the text form does, checked on random tables rich in
edge cases; ``keys``/``values``; the exact-match calls refuse an address
naming ``lookup``; and the migration page's code runs as written."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest

import ipfib
from support import ROOT, probe_addresses, random_routes


@pytest.mark.parametrize("seed", [11, 12])
def test_every_address_form_answers_as_text(seed: int) -> None:
    routes = random_routes(seed, 300, 300)
    t = ipfib.Table.from_prefixes(routes)
    addrs = probe_addresses(routes, seed, 1500)
    # IPv4-mapped IPv6 and the ends of both spaces.
    addrs += ["::ffff:10.1.2.3", "::ffff:0.0.0.0", "0.0.0.0", "255.255.255.255", "::", "::1"]
    addrs += ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:255.255.255.255", "::1.2.3.4"]
    for a in addrs:
        want = t.lookup_prefix(a)
        ip = ipaddress.ip_address(a)
        # ipaddress reads an int below 2^32 as IPv4: the int of an IPv6
        # address that small (::1.2.3.4) is an IPv4 address there too.
        as_int = ipaddress.ip_address(int(ip))
        want_int = t.lookup_prefix(str(as_int))
        assert t.lookup_prefix(ip) == want, a
        assert t.lookup_prefix(int(ip)) == want_int, a
        assert t.lookup_prefix(ip.packed) == want, a
        assert t.lookup(ip.packed) == (None if want is None else want[1]), a
        assert (ip.packed in t) == (want is not None), a
        assert (int(ip) in t) == (want_int is not None), a


def test_scalar_errors() -> None:
    t = ipfib.Table.from_prefixes([("0.0.0.0/0", 1), ("::/0", 2)])
    import numpy as np

    # numpy integer scalars are integers too.
    assert t.lookup(np.uint32(0x0A000001)) == 1 and t.lookup(np.uint64(2**40)) == 2
    assert t.lookup(2**32 - 1) == 1 and t.lookup(2**32) == 2 and t.lookup(2**128 - 1) == 2
    with pytest.raises(ValueError, match="0 to 2\\^128 - 1"):
        t.lookup(-1)
    with pytest.raises(ValueError, match="0 to 2\\^128 - 1"):
        t.lookup(2**128)
    with pytest.raises(ValueError, match="5 bytes"):
        t.lookup(b"\x01\x02\x03\x04\x05")
    with pytest.raises(TypeError, match="not a bool"):
        t.lookup(True)
    # Prefix arguments stay text or ipaddress networks.
    with pytest.raises(TypeError, match="not int"):
        t.insert(5, 1)  # type: ignore[arg-type]


def test_keys_values_and_exact_calls_refuse_addresses() -> None:
    t = ipfib.Table.from_prefixes([("::/0", "all6"), ("10.0.0.0/8", "ten"), ("10.1.0.0/16", 7)])
    assert t.keys() == list(t) == ["10.0.0.0/8", "10.1.0.0/16", "::/0"]
    assert t.values() == ["ten", 7, "all6"]
    assert list(zip(t.keys(), t.values())) == t.items()
    # Text, ipaddress objects, ints and packed bytes: each is an address.
    for item in ("10.1.2.3", "2001:db8::1", 0x0A010203, b"\x0a\x01\x02\x03", bytes(16)):
        with pytest.raises(ValueError, match=r"exact match.*t\.lookup\("):
            t[item]  # type: ignore[index]
        with pytest.raises(ValueError, match=r"exact match.*t\.lookup\("):
            t.get(item)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a prefix"):
        t[b"\x01\x02\x03\x04\x05"]  # type: ignore[index]
    assert t["10.1.0.0/16"] == 7 and t.get("10.2.0.0/16", "none") == "none"
    with pytest.raises(KeyError):
        t["10.2.0.0/16"]
    # Not an address either: the usual prefix error.
    with pytest.raises(ValueError, match="invalid prefix"):
        t["nope"]


def test_migration_page_runs() -> None:
    """docs/python-migration.md: every python block, in order, in one
    namespace (as a reader pastes them)."""
    page = (ROOT / "docs" / "python-migration.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"python-migration.md block {i + 1}", "exec"), namespace)
        except Exception as e:  # pragma: no cover - the failure message
            raise AssertionError(f"block {i + 1} failed: {e!r}\n{block}") from e


def test_workers_keep_a_bounded_number_of_tables(tmp_path: Path) -> None:
    """The per-process table cache of the cluster helpers keeps the most
    recently used tables only: after more than MAX_TABLES files, the
    oldest is opened again when asked for, the newest is not."""
    from ipfib import _enrich

    _enrich.release()
    refs = []
    for i in range(_enrich.MAX_TABLES + 2):
        path = tmp_path / f"t{i}.ipfib"
        ipfib.Table.from_prefixes([("10.0.0.0/8", i)]).save(path)
        refs.append(_enrich.TableRef(path=str(path)))
    before = _enrich.opened
    for i, r in enumerate(refs):
        assert r.get().lookup("10.1.1.1") == i
    assert _enrich.opened - before == len(refs)
    assert len(_enrich._tables) == _enrich.MAX_TABLES
    refs[-1].get()
    assert _enrich.opened - before == len(refs)  # still cached
    refs[0].get()
    assert _enrich.opened - before == len(refs) + 1  # evicted, opened again
    _enrich.release()
