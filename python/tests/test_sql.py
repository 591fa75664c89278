"""ipfib in SQL engines, set up as their users would:

- ClickHouse (chDB: the ClickHouse engine in-process): `ipfib udf` as
  executable UDFs (`executable_pool`, RowBinary) configured by an XML file
  in the user scripts folder, queried over real addresses and compared row
  for row with `ipfib lookup` on the same compiled file; the file replaced
  by rename between and during queries, answered by the same processes.
- DuckDB: `ipfib.duckdb.register` over the same file, compared with
  `Table.lookup_many`; NULLs, bad text and mixed IPv4/IPv6 columns.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import random
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ipfib
from support import _missing, cli, data_file

TABLE = "routeviews-20151101.ipasn.dat.gz"


def need(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        _missing(f"the {module} Python package (python/requirements-test.txt)")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sql")
    subprocess.run(
        [cli(), "compile", str(data_file(TABLE)), "-o", str(d / "asn.ipfib")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return d


def real_addresses(n: int, seed: int) -> list[str]:
    """Inside the real table's prefixes, random IPv4 and IPv6 (mostly
    misses), edges, IPv4-mapped IPv6."""
    rnd = random.Random(seed)
    prefixes = [p for p, _ in ipfib.Table.from_file(str(data_file(TABLE))).items()]
    out = ["0.0.0.0", "255.255.255.255", "::", "::ffff:8.8.8.8", "8.8.8.8", "2001:4860::1"]
    while len(out) < n:
        net = ipaddress.ip_network(rnd.choice(prefixes))
        out.append(str(net[rnd.randrange(min(net.num_addresses, 1 << 62))]))
        out.append(str(ipaddress.IPv4Address(rnd.getrandbits(32))))
        out.append(str(ipaddress.IPv6Address((0x2000 << 112) | rnd.getrandbits(112))))
    return out[:n]


def cli_answers(table: Path, addrs: list[str]) -> dict[str, tuple[str, str]]:
    """`ipfib lookup`'s (prefix, value) per address; ("-", "-") for a miss."""
    out = subprocess.run(
        [cli(), "lookup", "--table", str(table)],
        input="\n".join(addrs),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    got = {}
    for line in out.stdout.splitlines():
        a, p, v = line.split(" ", 2)
        got[a] = (p, v)
    return got


FUNCTIONS = """<functions>
  <function>
    <type>executable_pool</type>
    <name>ipfib_asn</name>
    <return_type>Nullable(UInt32)</return_type>
    <argument><type>IPv4</type><name>ip</name></argument>
    <format>RowBinary</format>
    <command>{udf} --argument IPv4 --return-type Nullable(UInt32) --reload-check 0</command>
  </function>
  <function>
    <type>executable_pool</type>
    <name>ipfib_value</name>
    <return_type>Nullable(String)</return_type>
    <argument><type>String</type><name>ip</name></argument>
    <format>RowBinary</format>
    <command>{udf} --reload-check 0</command>
  </function>
  <function>
    <type>executable_pool</type>
    <name>ipfib_prefix</name>
    <return_type>Nullable(String)</return_type>
    <argument><type>Nullable(String)</type><name>ip</name></argument>
    <format>RowBinary</format>
    <command>{udf} --argument Nullable(String) --answer prefix</command>
  </function>
  <function>
    <type>executable_pool</type>
    <name>ipfib_asn6</name>
    <return_type>UInt32</return_type>
    <argument><type>IPv6</type><name>ip</name></argument>
    <format>RowBinary</format>
    <send_chunk_header>1</send_chunk_header>
    <command>{udf} --argument IPv6 --return-type UInt32 --chunk-header</command>
  </function>
</functions>
"""


@pytest.fixture(scope="module")
def clickhouse(work: Path) -> Iterator[Any]:
    """A chDB session whose user scripts folder holds the `ipfib` binary
    and the functions' XML, as a ClickHouse user sets them up."""
    chdb = need("chdb.session")

    scripts = work / "user_scripts"
    scripts.mkdir()
    os.symlink(os.path.abspath(cli()), scripts / "ipfib")
    live = work / "live.ipfib"
    live.write_bytes((work / "asn.ipfib").read_bytes())
    (scripts / "ipfib_functions.xml").write_text(FUNCTIONS.format(udf=f"ipfib udf --table {live}"))
    s = chdb.Session(f":memory:?udf_path={scripts}")
    try:
        yield s
    finally:
        s.close()


def ch_rows(s: Any, sql: str) -> list[list[str]]:
    text = s.query(sql, "TabSeparated").bytes().decode()
    return [line.split("\t") for line in text.splitlines()]


def write_addrs(work: Path, addrs: list[str]) -> Path:
    path = work / "addrs.tsv"
    path.write_text("\n".join(addrs) + "\n")
    return path


def test_clickhouse_udf_equals_lookup(clickhouse: Any, work: Path) -> None:
    addrs = real_addresses(20_000, 3)
    want = cli_answers(work / "asn.ipfib", addrs)
    f = write_addrs(work, addrs)
    rows = ch_rows(
        clickhouse,
        f"SELECT ip, ipfib_value(ip), ipfib_prefix(ip), "
        f"if(isIPv4String(ip), toString(ipfib_asn(toIPv4OrZero(ip))), '-'), "
        f"ipfib_asn6(toIPv6OrZero(ip)) "
        f"FROM file('{f}', 'TSV', 'ip String')",
    )
    assert len(rows) == len(addrs)
    hits = 0
    for (ip, value, prefix, asn4, asn6), a in zip(rows, addrs):
        assert ip == a
        p, v = want[a]
        hits += p != "-"
        assert (prefix, value) == (("\\N", "\\N") if p == "-" else (p, v)), a
        if asn4 != "-":
            assert asn4 == ("\\N" if p == "-" else v), a
        # IPv6 argument: IPv4 rows arrive mapped and are answered as IPv4;
        # UInt32 (not Nullable) answers 0 for a miss.
        assert asn6 == ("0" if p == "-" else v), a
    assert hits > 5000


def test_clickhouse_nulls_and_bad_text(clickhouse: Any) -> None:
    rows = ch_rows(
        clickhouse,
        "SELECT ipfib_prefix(x) FROM (SELECT arrayJoin([NULL, '', 'bad', ' 8.8.8.8 ', "
        "'8.8.8.8', '::ffff:8.8.8.8', repeat('1', 100000)]) AS x)",
    )
    assert [r[0] for r in rows] == [
        "\\N",
        "\\N",
        "\\N",
        "8.8.8.0/24",
        "8.8.8.0/24",
        "8.8.8.0/24",
        "\\N",
    ]


def udf_pids(marker: str) -> set[int]:
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"udf" in cmd and marker.encode() in cmd:
                pids.add(int(d.name))
    return pids


def test_clickhouse_table_swapped_by_rename(clickhouse: Any, work: Path) -> None:
    """The live file replaced by rename, once during a query of 500K
    rows: every row of it is answered from one whole table, old or new;
    later queries from the new one, by the same processes (PIDs)."""
    live = work / "live.ipfib"
    a_table, b_table = work / "asn.ipfib", work / "b.ipfib"
    # The new table: every route's value changed.
    src = work / "b.txt"
    t = ipfib.Table.from_file(str(data_file(TABLE)))
    src.write_text("".join(f"{p} b{v}\n" for p, v in t.items()))
    subprocess.run([cli(), "compile", str(src), "-o", str(b_table)], check=True, timeout=300)
    addrs = real_addresses(5000, 4)
    want_a = cli_answers(a_table, addrs)
    want_b = cli_answers(b_table, addrs)
    f = write_addrs(work, addrs)
    q = f"SELECT ipfib_value(ip) FROM file('{f}', 'TSV', 'ip String')"

    def values() -> list[str]:
        return [r[0] for r in ch_rows(clickhouse, q)]

    def as_value(w: tuple[str, str]) -> str:
        return "\\N" if w[0] == "-" else w[1]

    assert values() == [as_value(want_a[a]) for a in addrs]
    before = udf_pids(str(live))
    assert before, "no ipfib udf process found"

    def swap() -> None:
        tmp = work / "live.tmp"
        tmp.write_bytes(b_table.read_bytes())
        tmp.rename(live)

    timer = threading.Timer(0.3, swap)
    timer.start()
    big = ch_rows(
        clickhouse,
        f"SELECT ip, ipfib_value(ip) FROM file('{f}', 'TSV', 'ip String') "
        "ARRAY JOIN range(100) AS k",
    )
    timer.join()
    assert len(big) == 100 * len(addrs)
    for a, v in big:
        assert v in (as_value(want_a[a]), as_value(want_b[a])), a
    swapped = True
    for _ in range(12):
        got = values()
        for g, a in zip(got, addrs):
            assert g in (as_value(want_a[a]), as_value(want_b[a])), a
        if swapped and got == [as_value(want_b[a]) for a in addrs]:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the replaced table never answered")
    assert udf_pids(str(live)) & before, "the pool's processes were replaced, not reloaded"
    # A damaged replacement is refused; the open table goes on answering.
    tmp = work / "live.tmp"
    tmp.write_bytes(b"IPFIB damaged")
    tmp.rename(live)
    assert values() == [as_value(want_b[a]) for a in addrs]


def test_duckdb_register_equals_lookup_many(work: Path) -> None:
    duckdb = need("duckdb")
    pa = need("pyarrow")
    import ipfib.duckdb

    t = ipfib.Table.open(str(work / "asn.ipfib"))
    addrs: list[str | None] = list(real_addresses(20_000, 5))
    addrs[5::97] = [None] * len(addrs[5::97])
    addrs[7::89] = ["bad"] * len(addrs[7::89])
    addrs[9::83] = [""] * len(addrs[9::83])
    con = duckdb.connect()
    try:
        ipfib.duckdb.register(con, "asn", t)
        col = pa.array(addrs, pa.string())
        con.register("flows", pa.table({"ip": col}))
        got = [r[0] for r in con.sql("SELECT asn(ip) FROM flows").fetchall()]
        want = t.lookup_many(col, masked=True, errors="coerce", dtype="int64")
        mask = np.ma.getmaskarray(want)
        assert got == [None if m else int(v) for v, m in zip(np.asarray(want), mask)]
        assert got.count(None) > 5000 and len(got) == len(addrs)
        # Packed and numeric IPv4 columns.
        packed: list[bytes | None] = [
            None if a in (None, "", "bad") else ipaddress.ip_address(a).packed for a in addrs
        ]
        v4 = [
            int(ipaddress.IPv4Address(a)) if a not in (None, "", "bad") and ":" not in a else None
            for a in addrs
        ]
        con.register(
            "packed",
            pa.table({"b": pa.array(packed, pa.binary()), "n": pa.array(v4, pa.uint32())}),
        )
        got_b = [r[0] for r in con.sql("SELECT asn_packed(b) FROM packed").fetchall()]
        assert got_b == [None if p is None else g for p, g in zip(packed, got)]
        got_n = [r[0] for r in con.sql("SELECT asn_ipv4(n) FROM packed").fetchall()]
        assert got_n == [None if n is None else g for n, g in zip(v4, got)]
        # A table mixing ints and text answers VARCHAR, ints as text.
        m = ipfib.Table.from_prefixes([("10.0.0.0/8", 15169), ("11.0.0.0/8", "4_5")])
        ipfib.duckdb.register(con, "mixed", m, packed=False)
        got_m = con.sql("SELECT mixed('10.1.1.1'), mixed('11.1.1.1'), mixed('12.0.0.1')").fetchall()
        assert got_m == [("15169", "4_5", None)]
        # A live table of ints that later gains a text value: that one is
        # NULL, the ints still answer.
        live = ipfib.Table.from_prefixes([("10.0.0.0/8", 15169)])
        ipfib.duckdb.register(con, "live", live, packed=False)
        live["11.0.0.0/8"] = "x"
        got_l = con.sql("SELECT live('10.1.1.1'), live('11.1.1.1')").fetchall()
        assert got_l == [(15169, None)]
        # A table of text values answers VARCHAR.
        s = ipfib.Table.from_prefixes([("10.0.0.0/8", "ten"), ("2001:db8::/32", "doc")])
        ipfib.duckdb.register(con, "net", s, packed=False)
        got_s = con.sql(
            "SELECT net('10.1.2.3'), net('2001:db8::1'), net('192.0.2.1'), net(NULL)"
        ).fetchall()
        assert got_s == [("ten", "doc", None, None)]
    finally:
        con.close()
