"""ipfib.spark on a real Spark (PyPI pyspark, local mode: two Python
worker processes, loopback only): every answer equals the single-process
``lookup_many`` / ``lookup_prefix``, nulls and bad items give nulls and
are counted, the table is opened once per worker process (not per task),
and the SQL function answers as ``enrich``."""

from __future__ import annotations

import ipaddress
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ipfib
from support import ROOT, check_enriched_flows, data_file, probe_addresses, random_routes


def _need(what: str, module: bool = False) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}, and CI=true requires it", pytrace=False)
    print(f"SKIPPED: {what}")
    pytest.skip(f"SKIPPED: {what}", allow_module_level=module)


try:
    import pandas as pd
    from pyspark.sql import SparkSession
    from pyspark.sql import types as T
except ImportError as e:  # pragma: no cover - the test venv has them
    _need(f"pyspark/pandas/pyarrow not importable ({e})", module=True)

import ipfib.spark  # noqa: E402
from ipfib.spark import Counters, enrich, register, ship  # noqa: E402

PARTITIONS = 12


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        _need("java not found (Spark needs Java 17: apt-get install openjdk-17-jre-headless)")
    # The workers run this interpreter (the venv with ipfib), not `python3`.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = (
        SparkSession.builder.master("local[2]")
        .appName("ipfib-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def _items(seed: int) -> tuple[list[Any], list[str]]:
    """Addresses rich in edge cases: prefix boundaries, random, mapped,
    nulls, bad text; and the routes they are probed against."""
    routes = random_routes(seed, 400, 400)
    addrs: list[Any] = probe_addresses(routes, seed, 1500)
    rnd = random.Random(seed)
    rnd.shuffle(addrs)
    for i in range(0, len(addrs), 97):
        addrs[i] = None
    for i, bad in zip(range(13, len(addrs), 211), ["bad", "1.2.3", "300.1.1.1", "", "::g"]):
        addrs[i] = bad
    return addrs, [str(i) for i in range(len(addrs))]


def _expected(t: ipfib.Table, addrs: list[Any]) -> list[tuple[Any, Any, Any]]:
    """(value, prefix, prefix_len) per address from the single process."""
    out: list[tuple[Any, Any, Any]] = []
    for a in addrs:
        try:
            hit = t.lookup_prefix(a) if a is not None else None
        except ValueError:
            hit = None
        if hit is None:
            out.append((None, None, None))
        else:
            out.append((hit[1], hit[0], int(hit[0].rsplit("/", 1)[1])))
    return out


def _is_bad(a: Any) -> bool:
    try:
        ipaddress.ip_address(a)
        return False
    except ValueError:
        return True


@pytest.mark.parametrize("arrow_udf", [True, False], ids=["arrow-udf", "pandas-udf"])
def test_enrich_equals_single_process_and_counts(
    spark: Any, tmp_path: Path, arrow_udf: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark's Arrow UDFs (pyspark >= 4.1), and the pandas UDF older
    # versions get, on the same data.
    monkeypatch.setattr(ipfib.spark, "use_arrow_udf", arrow_udf)
    routes = random_routes(5, 400, 400)
    t = ipfib.Table.from_prefixes(routes)
    addrs, ids = _items(5)
    df = spark.createDataFrame(
        pd.DataFrame({"id": ids, "src": addrs}),
        schema=T.StructType(
            [T.StructField("id", T.StringType()), T.StructField("src", T.StringType())]
        ),
    ).repartition(PARTITIONS)
    counts = Counters(spark)
    out = enrich(
        df, t, "src", {"asn": "value", "net": "prefix", "len": "prefix_len"}, counters=counts
    )
    assert [f.dataType for f in out.schema.fields[-3:]] == [
        T.LongType(),
        T.StringType(),
        T.ShortType(),
    ]
    rows = {r["id"]: r for r in out.collect()}
    want = _expected(t, addrs)
    assert len(rows) == len(addrs)
    for i, a in enumerate(addrs):
        r = rows[str(i)]
        assert (r["asn"], r["net"], r["len"]) == want[i], (a, r)
    c = counts.value
    nulls = sum(a is None for a in addrs)
    bad = sum(a is not None and _is_bad(a) for a in addrs)
    assert c["rows"] == len(addrs) and c["nulls"] == nulls and c["bad"] == bad, c
    assert c["matched"] == sum(w[0] is not None for w in want), c
    assert bad == 5 and nulls > 10
    # Opened once per worker process, never once per task.
    assert c["opened"] == len(c["pids"]) and 1 <= c["opened"] <= 2 < PARTITIONS, c

    # The value-only path (no route indices) answers the same.
    only = {r["id"]: r["v"] for r in enrich(df, t, "src", "v").collect()}
    assert [only[str(i)] for i in range(len(addrs))] == [w[0] for w in want]


def test_binary_and_text_values_and_shipped_path(spark: Any, tmp_path: Path) -> None:
    routes = [(p, f"name-{v}") for p, v in random_routes(8, 300, 300)]
    t = ipfib.Table.from_prefixes(routes)
    path = tmp_path / "names.ipfib"
    t.save(path)
    addrs, ids = _items(8)
    packed = [None if a is None or _is_bad(a) else ipaddress.ip_address(a).packed for a in addrs]
    packed[1] = b"\x01\x02\x03"  # neither 4 nor 16 bytes: bad
    df = spark.createDataFrame(
        list(zip(ids, packed)),
        schema=T.StructType(
            [T.StructField("id", T.StringType()), T.StructField("b", T.BinaryType())]
        ),
    ).repartition(4)
    counts = Counters(spark)
    # ship="path": the compiled file where every executor reads it.
    out = enrich(
        df, str(path), "b", {"name": "value", "net": "prefix"}, counters=counts, ship="path"
    )
    assert out.schema["name"].dataType == T.StringType()
    rows = {r["id"]: (r["name"], r["net"]) for r in out.collect()}
    for i, a in enumerate(addrs):
        p = packed[i]
        hit = t.lookup_prefix(a) if p is not None and len(p) != 3 else None
        assert rows[str(i)] == ((hit[1], hit[0]) if hit else (None, None)), (a, packed[i])
    assert counts.bad == 1 and counts.nulls == sum(p is None for p in packed)


@pytest.mark.parametrize("arrow_udf", [True, False], ids=["arrow-udf", "pandas-udf"])
def test_sql_function(spark: Any, arrow_udf: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ipfib.spark, "use_arrow_udf", arrow_udf)
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 64500), ("2001:db8::/32", 64501)])
    handle = ship(spark, t)
    register(spark, "ip_asn", handle)
    register(spark, "ip_net", handle, "prefix")
    spark.createDataFrame(
        [("10.1.2.3",), ("192.0.2.1",), ("2001:db8::7",), ("bad",), (None,)], "src string"
    ).createOrReplaceTempView("flows")
    got = spark.sql("SELECT src, ip_asn(src) AS asn, ip_net(src) AS net FROM flows").collect()
    assert [(r["asn"], r["net"]) for r in got] == [
        (64500, "10.0.0.0/8"),
        (None, None),
        (64501, "2001:db8::/32"),
        (None, None),
        (None, None),
    ]


def test_odd_column_names_and_later_steps(spark: Any) -> None:
    """A column name Spark would read as a path (dots, backquotes) is taken
    literally; the answers can be filtered and grouped like any column,
    and the function runs once per row (the counters say so)."""
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 64500), ("2001:db8::/32", 64501)])
    rows: list[tuple[str | None, int]] = [(f"10.0.{i % 256}.{i // 256}", i) for i in range(600)]
    rows += [("2001:db8::1", 600), ("192.0.2.1", 601), (None, 602), ("nope", 603)]
    df = spark.createDataFrame(rows, "`src.ip` string, `n` bigint").repartition(3)
    df = df.withColumnRenamed("n", "a`b")
    counts = Counters(spark)
    out = enrich(df, t, "src.ip", {"as.n": "value", "len": "prefix_len"}, counters=counts)
    assert out.columns == ["src.ip", "a`b", "as.n", "len"]
    got = {r["a`b"]: (r["as.n"], r["len"]) for r in out.collect()}
    assert got[0] == (64500, 8) and got[600] == (64501, 32)
    assert got[601] == got[602] == got[603] == (None, None)
    assert counts.rows == len(rows) and counts.nulls == 1 and counts.bad == 1
    assert counts.matched == 601
    by_asn = out.where("`as.n` IS NOT NULL").groupBy("`as.n`").count().collect()
    assert sorted((r["as.n"], r["count"]) for r in by_asn) == [(64500, 600), (64501, 1)]


def test_lengths_alone_mixed_values_and_filters(spark: Any) -> None:
    """Lengths alone on any table; a pfx2as-like table of ints and text
    (multi-origin "13335_2914") as a text column; a filter on an answer
    evaluates the lookups once (exact counters); a Table whose values a
    compiled file cannot hold is shipped as a broadcast, with a warning."""
    rows = [("1.1.1.1",), ("1.0.0.1",), ("192.0.2.1",), (None,), ("bad",), ("2001:db8::1",)]
    df = spark.createDataFrame(rows, "src string").repartition(2)
    asn = ipfib.Table.from_prefixes([("1.1.1.0/24", 13335), ("1.0.0.0/16", 64500)])
    text = ipfib.Table.from_prefixes([("1.1.1.0/24", "x"), ("2001:db8::/32", "y")])
    for t in (asn, text):
        got = {r["src"]: r["len"] for r in enrich(df, t, "src", {"len": "prefix_len"}).collect()}
        want = {
            a: None
            if not a or (hit := t.lookup_prefix(a) if a != "bad" else None) is None
            else int(hit[0].split("/")[1])
            for (a,) in rows
        }
        assert got == want, (got, want)
    mixed = ipfib.Table.from_file(_pfx2as_mixed())
    assert not mixed._integer_values
    out = enrich(df, mixed, "src", {"asn": "value", "net": "prefix"})
    assert out.schema["asn"].dataType == T.StringType()
    got = {r["src"]: (r["asn"], r["net"]) for r in out.collect()}
    assert got["1.1.1.1"] == ("13335_2914", "1.1.1.0/24")
    assert got["1.0.0.1"] == ("64500", "1.0.0.0/16")
    assert got["192.0.2.1"] == got[None] == got["bad"] == (None, None)
    # A filter on an answer: each row looked up (and counted) once.
    counts = Counters(spark)
    hits = enrich(df, asn, "src", "asn", counters=counts).where("asn IS NOT NULL").collect()
    assert sorted(r["asn"] for r in hits) == [13335, 64500]
    assert counts.rows == len(rows) and counts.matched == 2, counts.value
    counts2 = Counters(spark)
    two = enrich(df, asn, "src", {"a": "value", "n": "prefix"}, counters=counts2)
    assert len(two.where("n IS NOT NULL").collect()) == 2 and counts2.rows == len(rows)
    # Text that reads as a number cannot be a compiled file's value.
    digits = ipfib.Table.from_prefixes([("1.1.1.0/24", "13335")])
    with pytest.warns(UserWarning, match="broadcast"):
        got_d = enrich(df, digits, "src", "asn").where("src = '1.1.1.1'").collect()
    assert [r["asn"] for r in got_d] == ["13335"]


_MIXED: list[Path] = []


def _pfx2as_mixed() -> Path:
    """A CAIDA-style pfx2as file: one origin as a number, several as text."""
    import tempfile

    if not _MIXED:
        d = Path(tempfile.mkdtemp(prefix="ipfib-mixed-"))
        (d / "t.pfx2as").write_text("1.1.1.0\t24\t13335_2914\n1.0.0.0\t16\t64500\n")
        _MIXED.append(d / "t.pfx2as")
    return _MIXED[0]


def test_several_fields_of_a_maxmind_db(spark: Any) -> None:
    path = data_file("mmdb/maxmind-db-test/test-data/GeoIP2-City-Test.mmdb")
    t = ipfib.Table.from_file(path, value=["country.iso_code", "location.latitude"])
    addrs = ["81.2.69.160", "2001:218::1", "175.16.199.1", "10.0.0.1", None]
    df = spark.createDataFrame([(a,) for a in addrs], "ip string")
    out = enrich(df, t, "ip", {"cc": "country.iso_code", "net": "prefix"}).collect()
    for a, r in zip(addrs, out):
        hit = t.lookup_prefix(a) if a is not None else None
        assert (r["cc"], r["net"]) == ((hit[1][0], hit[0]) if hit else (None, None)), a
    assert out[0]["cc"] == "GB"
    with pytest.raises(ValueError, match="several fields"):
        enrich(df, t, "ip", "value")


def test_errors_name_what_is_wrong(spark: Any) -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    df = spark.createDataFrame([("10.0.0.1",)], "src string")
    with pytest.raises(ValueError, match="no column 'ip'"):
        enrich(df, t, "ip")
    with pytest.raises(ValueError, match="has a column 'src'"):
        enrich(df, t, "src", "src")
    with pytest.raises(ValueError, match="expected one of value, prefix, prefix_len"):
        enrich(df, t, "src", {"x": "country"})
    with pytest.raises(TypeError, match="not a Table"):
        enrich(df, t, "src", ship="path")
    # Spark matches column names without regard to case.
    with pytest.raises(ValueError, match="has a column 'SRC' already"):
        enrich(df, t, "src", "SRC")
    with pytest.raises(ValueError, match="has a column 'ASN' already"):
        enrich(df, t, "src", {"asn": "value", "ASN": "prefix"})
    ints = spark.createDataFrame([(167772161,)], "src bigint")
    with pytest.raises(TypeError, match="column 'src' is bigint; addresses must be text"):
        enrich(ints, t, "src")


def test_the_example_on_real_data(spark: Any, tmp_path: Path) -> None:
    """python/examples/flows.py then spark_enrich.py as a user runs them,
    on real tables and addresses; every row checked against lookup_many."""
    v4 = data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz")
    v6 = data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz")
    geo = data_file("mmdb/iptoasn-country.mmdb")
    examples = ROOT / "python" / "examples"
    run = [sys.executable, str(examples / "flows.py"), str(tmp_path / "in"), "20000"]
    subprocess.run(run + ["--files", "3"], check=True, timeout=300)
    run = [sys.executable, str(examples / "spark_enrich.py"), str(tmp_path / "in")]
    done = subprocess.run(
        run + [str(tmp_path / "out"), str(v4), str(v6), "--country", str(geo)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    got = pd.read_parquet(tmp_path / "out")
    assert len(got) == summary["rows"] == 20000
    miss = check_enriched_flows(got, [v4, v6], geo)
    assert summary["nulls"] == int(got["src_ip"].isna().sum()) > 0
    assert summary["matched"] == int((~miss).sum())
    assert summary["bad"] > 0 and summary["opened"] == len(summary["pids"]) <= 2
