"""`ipfib compile --output-format mmdb` read back by the official MaxMind DB
reader (PyPI `maxminddb`, the independent oracle): every address gets the
record of the longest matching route, exactly as `ipfib lookup` answers
it (misses stay misses), at a network inside that route; on a hand-made
nested table, on the real RouteViews tables (1.1M IPv4 + 259K IPv6 routes)
and on a real MMDB written back from its own records."""

from __future__ import annotations

import gzip
import ipaddress
import json
import os
import random
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import maxminddb
import pytest

import ipfib
from support import cli, data_file

Answer = tuple[str, str] | None  # (prefix, value text) or a miss


def compile_mmdb(table: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [cli(), "compile", str(table), "-o", str(out), "--output-format", "mmdb", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SOURCE_DATE_EPOCH": "1700000000"},
    )
    assert run.returncode == 0, run.stderr
    return run


def ipfib_answers(table: Path, addrs: list[str]) -> list[Answer]:
    """`ipfib lookup` for every address: (prefix, value text) or None."""
    run = subprocess.run(
        [cli(), "lookup", "--table", str(table)],
        input="\n".join(addrs) + "\n",
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    out: list[Answer] = []
    for line, a in zip(run.stdout.splitlines(), addrs, strict=True):
        addr, prefix, value = line.split(" ", 2)
        assert addr == a
        out.append(None if prefix == "-" else (prefix, value))
    return out


def boundaries(prefixes: Iterable[str]) -> list[str]:
    """First, last, first-1 and last+1 of every prefix, once each."""
    seen: set[tuple[int, int]] = set()
    for p in prefixes:
        net = ipaddress.ip_network(p)
        first, last = int(net.network_address), int(net.broadcast_address)
        top = (1 << net.max_prefixlen) - 1
        for x in (first, last, first - 1, last + 1):
            if 0 <= x <= top:
                seen.add((net.version, x))
    return [
        str(ipaddress.IPv4Address(x) if v == 4 else ipaddress.IPv6Address(x))
        for v, x in sorted(seen)
    ]


def random_addresses(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    out = [str(ipaddress.IPv4Address(rnd.getrandbits(32))) for _ in range(n)]
    out += [str(ipaddress.IPv6Address(rnd.getrandbits(128))) for _ in range(n)]
    # Where IPv6 routes are: 2000::/4.
    out += [str(ipaddress.IPv6Address(2 << 124 | rnd.getrandbits(124))) for _ in range(n)]
    # IPv4-mapped: answered from IPv4, by ipfib and by the alias.
    out += [str(ipaddress.IPv6Address(0xFFFF << 32 | rnd.getrandbits(32))) for _ in range(n // 10)]
    return out


def unmapped(a: str) -> str:
    """`::ffff:a.b.c.d` as `a.b.c.d`; other addresses as they are."""
    ip = ipaddress.ip_address(a)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return a


def field_text(record: Any, field: str) -> str:
    """The value text a record stands for: `{field: V}` is V (ints in
    decimal), any other record is itself, as compact JSON."""
    if isinstance(record, dict) and list(record) == [field]:
        return str(record[field])
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def check_against_ipfib(
    table: Path,
    db_path: Path,
    addrs: list[str],
    field: str,
    mode: int = maxminddb.MODE_AUTO,
    inside: bool = True,
) -> int:
    """Every address: same record as ipfib's value, misses agree, and (when
    `inside`) the reader's network lies inside ipfib's prefix. Returns the
    hits."""
    want = ipfib_answers(table, addrs)
    hits = 0
    with maxminddb.open_database(str(db_path), mode) as db:
        for a, w in zip(addrs, want, strict=True):
            record, plen = db.get_with_prefix_len(a)
            if w is None:
                assert record is None, f"{a}: ipfib misses, the MMDB has {record}"
                continue
            prefix, value = w
            assert record is not None, f"{a}: the MMDB misses, ipfib has {w}"
            assert field_text(record, field) == value, f"{a}: {record} vs {w}"
            # The reader's network (its prefix length over the address) lies
            # inside ipfib's prefix. ipfib names IPv4 prefixes for
            # IPv4-mapped addresses; the reader counts their 96 bits.
            net = ipaddress.ip_network(prefix)
            ours = net.prefixlen
            if ":" in a and net.version == 4:
                ours += 96
            assert plen >= ours or not inside, f"{a}: network /{plen} outside {prefix}"
            hits += 1
    return hits


NESTED = """\
# defaults of both families, host routes, nesting, adjacent siblings
0.0.0.0/0 4-default
::/0 6-default
10.0.0.0/8 64500
10.0.0.0/9 64500
10.128.0.0/9 64501
192.168.0.0/25 a
10.1.2.3/32 host-v4
10.1.2.2/32 host-v4-b
10.255.255.255/32 0
192.168.0.0/24 a
192.168.1.0/24 b
192.168.0.0/23 covering
255.255.255.255/32 top
0.0.0.0/32 bottom
2001:db8::/32 doc
2001:db8::/33 doc-left
2001:db8:8000::/33 doc-right
2001:db8::1/128 host-v6
ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128 top6
::ffff:10.0.0.0/104 mapped-v6-route
::10.0.0.0/104 compat-v6-route
2001:db8:1::/48 {"autonomous_system_number":13335,"org":"Cloud"}
2001:db8:2::/48 4294967296
2001:db8:3::/48 007
10.0.0.0/8 64502
"""


def test_hand_made_nested_table(tmp_path: Path) -> None:
    table = tmp_path / "nested.txt"
    table.write_text(NESTED)
    out = tmp_path / "nested.mmdb"
    run = compile_mmdb(table, out)
    # The IPv6 route inside ::/96 and ::/0 lose ::/96 to IPv4; the route
    # inside ::ffff:0:0/96 is unreachable in ipfib as in the MMDB.
    assert "::ffff:0:0/96 not written" in run.stderr
    assert "inside ::/96 answer from the IPv4 routes" in run.stderr
    prefixes = [line.split()[0] for line in NESTED.splitlines() if not line.startswith("#")]
    addrs = boundaries(prefixes) + random_addresses(1, 2000)
    addrs += ["::ffff:10.1.2.3", "::ffff:0.0.0.0", "::ffff:255.255.255.255", "::ffff:10.0.0.1"]
    # ::/96 (IPv4-compatible) answers from IPv4, not from the IPv6 routes.
    compat = [a for a in addrs if ":" in a and int(ipaddress.IPv6Address(a)) >> 32 == 0]
    rest = [a for a in addrs if a not in set(compat)]

    def records(db: maxminddb.Reader) -> list[Any]:
        return [db.get(a) for a in rest]

    # JSON-object values are records; the rest {"value": V}, V an int when
    # the value is a canonical unsigned decimal.
    for mode in (maxminddb.MODE_MMAP_EXT, maxminddb.MODE_FILE):
        check_against_ipfib(table, out, rest, "value", mode)
    with maxminddb.open_database(str(out)) as db:
        assert db.get("2001:db8:1::5") == {"autonomous_system_number": 13335, "org": "Cloud"}
        assert db.get("2001:db8:2::") == {"value": 4294967296}
        assert db.get("2001:db8:3::") == {"value": "007"}
        assert db.get("10.255.255.255") == {"value": 0}
        assert db.get("10.1.2.3") == {"value": "host-v4"}
        assert db.get_with_prefix_len("10.1.2.3")[1] == 32
        assert db.get_with_prefix_len("2001:db8::1")[1] == 128
        for a in compat:
            v4 = str(ipaddress.IPv4Address(int(ipaddress.IPv6Address(a)) & 0xFFFFFFFF))
            assert db.get(a) == db.get(v4), a
        assert db.get("::10.0.0.1") == db.get("10.0.0.1") == {"value": 64500}
        md = db.metadata()
        assert (md.binary_format_major_version, md.binary_format_minor_version) == (2, 0)
        assert md.ip_version == 6 and md.record_size == 24
        assert md.database_type == "ipfib" and md.languages == []
        assert md.description == {"en": "ipfib export of nested.txt"}
        assert md.build_epoch == 1700000000
        first = records(db)
    # Both reader implementations agree (C extension and pure Python).
    with maxminddb.open_database(str(out), maxminddb.MODE_FILE) as db:
        assert records(db) == first
    # Iterating the database yields disjoint networks, each answering its
    # record (the alias is skipped by the reader).
    with maxminddb.open_database(str(out)) as db:
        nets = list(db)
        for net, rec in nets:
            assert db.get(str(net[-1] if net.num_addresses > 1 else net[0])) == rec


def test_merge_and_record_sizes(tmp_path: Path) -> None:
    table = tmp_path / "nested.txt"
    table.write_text(NESTED)
    prefixes = [line.split()[0] for line in NESTED.splitlines() if not line.startswith("#")]
    addrs = [
        a
        for a in boundaries(prefixes) + random_addresses(2, 500)
        if not (":" in a and int(ipaddress.IPv6Address(a)) >> 32 == 0)
    ]
    for args, size, inside in [
        (["--mmdb-merge"], 24, False),
        (["--mmdb-merge", "--mmdb-record-size", "32"], 32, False),
        (["--mmdb-record-size", "28"], 28, True),
        (["--mmdb-record-size", "32"], 32, True),
    ]:
        out = tmp_path / "out.mmdb"
        compile_mmdb(table, out, *args)
        with maxminddb.open_database(str(out)) as db:
            assert db.metadata().record_size == size
        check_against_ipfib(table, out, addrs, "value", inside=inside)
    # Merging makes a smaller tree of the same answers.
    compile_mmdb(table, tmp_path / "merged.mmdb", "--mmdb-merge")
    compile_mmdb(table, tmp_path / "plain.mmdb")
    with (
        maxminddb.open_database(str(tmp_path / "merged.mmdb")) as m,
        maxminddb.open_database(str(tmp_path / "plain.mmdb")) as p,
    ):
        assert m.metadata().node_count < p.metadata().node_count


def test_data_past_16_mib_with_28_bit_records(tmp_path: Path) -> None:
    """Record offsets past 2^24: the 28-bit layout's shared middle byte."""
    rnd = random.Random(3)
    lines = []
    for i in range(400):
        big = f"{i}-" + "".join(rnd.choice("abcdefgh") for _ in range(60_000))
        lines.append(f"{ipaddress.IPv4Network((i << 20, 12))} {big}")
        if i % 3 == 0:
            lines.append(f"{ipaddress.IPv4Network((i << 20 | 1 << 19, 13))} small")
        lines.append(f"{ipaddress.IPv6Network((0x2001_0DB8 << 96 | i << 64, 64))} {big}6")
    table = tmp_path / "big.txt"
    table.write_text("\n".join(lines) + "\n")
    out = tmp_path / "big.mmdb"
    compile_mmdb(table, out)
    with maxminddb.open_database(str(out)) as db:
        assert db.metadata().record_size == 28
    addrs = boundaries(line.split()[0] for line in lines)
    assert check_against_ipfib(table, out, addrs, "value") > 1500


def test_real_routeviews_tables(tmp_path: Path) -> None:
    """1.1M IPv4 + 259K IPv6 RouteViews routes: random addresses and the
    boundaries of every prefix, both families, against `ipfib lookup`."""
    v4 = data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz")
    v6 = data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz")
    # Two gzip members in one file: one table of both families.
    table = tmp_path / "both.txt.gz"
    table.write_bytes(v4.read_bytes() + v6.read_bytes())
    out = tmp_path / "asn.mmdb"
    run = compile_mmdb(table, out, "--mmdb-field", "autonomous_system_number")
    assert "1107938 IPv4 + 258956 IPv6 routes" in run.stdout, run.stdout
    prefixes: list[str] = []
    for src in (v4, v6):
        with gzip.open(src, "rt") as f:
            prefixes += [line.split()[0] for line in f if line.strip() and line[0] != "#"]
    addrs = boundaries(prefixes) + random_addresses(4, 200_000)
    hits = check_against_ipfib(table, out, addrs, "autonomous_system_number")
    assert hits > len(addrs) // 2


def test_real_mmdb_records_round_trip(tmp_path: Path) -> None:
    """A real MMDB's networks and records (as the official reader lists
    them), as a JSON-valued text table, written back: the new file answers
    every probed address with the same record as the original."""
    src = data_file("mmdb/iptoasn-country.mmdb")
    lines = []
    with maxminddb.open_database(str(src)) as db:
        for net, rec in db:
            lines.append(f"{net} {json.dumps(rec, separators=(',', ':'))}")
        prefixes = [line.split(" ", 1)[0] for line in lines]
        addrs = boundaries(prefixes[::7]) + random_addresses(5, 50_000)
        # The original has no ::ffff:0:0/96 alias; the export answers those
        # addresses as their IPv4 address (as ipfib does).
        want = [db.get(unmapped(a)) for a in addrs]
    table = tmp_path / "country.txt"
    table.write_text("\n".join(lines) + "\n")
    out = tmp_path / "country.mmdb"
    compile_mmdb(table, out, "--mmdb-record", "json", "--mmdb-database-type", "iptoasn-country")
    with maxminddb.open_database(str(out)) as db:
        assert db.metadata().database_type == "iptoasn-country"
        got = [db.get(a) for a in addrs]
    mismatches = [(a, w, g) for a, w, g in zip(addrs, want, got, strict=True) if w != g]
    assert not mismatches[:5], mismatches[:5]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output-format", "ipfib", "--engine", "radix"], "radix is the route table"),
        (["--output-format", "mmdb", "--mmdb-record", "json"], "invalid JSON"),
        (["--output-format", "mmdb", "--mmdb-record-size", "20"], "24, 28 or 32"),
        (["--output-format", "mmdb", "--mmdb-ip-version", "4"], "IPv6 routes"),
    ],
)
def test_failed_exports_leave_no_file(tmp_path: Path, args: list[str], message: str) -> None:
    table = tmp_path / "t.txt"
    table.write_text("10.0.0.0/8 AS1\n2001:db8::/32 AS2\n")
    out = tmp_path / "out.mmdb"
    run = subprocess.run(
        [cli(), "compile", str(table), "-o", str(out), *args], capture_output=True, text=True
    )
    assert run.returncode == 2, run.stderr
    assert message in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == [table]


def test_table_to_mmdb(tmp_path: Path) -> None:
    """`Table.to_mmdb` with int, str, float and bool values: the official
    reader answers every probe as `Table.lookup_prefix` does."""
    routes: list[tuple[str, Any]] = [
        ("0.0.0.0/0", 1),
        ("10.0.0.0/8", 64500),
        ("10.1.0.0/16", "AS-NAME"),
        ("10.1.2.3/32", 2.5),
        ("10.1.2.4/31", True),
        ("::/0", 2**64),
        ("2001:db8::/32", '{"country":{"iso_code":"GB"}}'),
        ("2001:db8::1/128", -5),
        ("2001:db8:1::/48", "007"),
    ]
    t = ipfib.Table.from_prefixes(routes)
    out = tmp_path / "t.mmdb"
    stats = t.to_mmdb(out, field="asn", build_epoch=1)
    assert stats["routes_v4"] == 5 and stats["routes_v6"] == 4
    assert stats["ip_version"] == 6 and stats["record_size"] == 24
    assert stats["file_bytes"] == out.stat().st_size
    assert stats["v6_compat_overridden"] is True  # ::/0 loses ::/96 to IPv4

    def expected(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("{"):
            return json.loads(value)
        return {"asn": value}

    addrs = boundaries(p for p, _ in routes) + random_addresses(6, 2000)
    addrs = [a for a in addrs if not (":" in a and int(ipaddress.IPv6Address(a)) >> 32 == 0)]
    with maxminddb.open_database(str(out)) as db:
        assert db.metadata().build_epoch == 1
        for a in addrs:
            hit = t.lookup_prefix(a)
            record, plen = db.get_with_prefix_len(a)
            if hit is None:
                assert record is None, a
                continue
            assert record == expected(hit[1]), (a, record, hit)
            net = ipaddress.ip_network(hit[0])
            assert plen >= net.prefixlen + (96 if ":" in a and net.version == 4 else 0), a
    # Under "json" a number is the record itself, and text must be JSON.
    t2 = ipfib.Table.from_prefixes([("10.0.0.0/8", 7), ("11.0.0.0/8", '["a",1]')])
    t2.to_mmdb(out, record="json")
    with maxminddb.open_database(str(out)) as db:
        assert db.get("10.0.0.1") == 7 and db.get("11.0.0.1") == ["a", 1]
    with pytest.raises(ValueError, match="invalid JSON"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", "AS1")]).to_mmdb(out, record="json")
    with pytest.raises(ValueError, match="int32"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", -(2**40))]).to_mmdb(out)
    with pytest.raises(TypeError, match="tuple"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", (1, 2))]).to_mmdb(out)
    with pytest.raises(ValueError, match="IPv6 routes"):
        t.to_mmdb(out, ip_version=4)
    with pytest.raises(OSError):
        t.to_mmdb(tmp_path / "no" / "such" / "dir.mmdb")
    # The failures left the last good file as it was, and no temporary file.
    with maxminddb.open_database(str(out)) as db:
        assert db.get("10.0.0.1") == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.mmdb"]
