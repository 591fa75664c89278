"""The Dask example (python/examples/dask_enrich.py) on a Parquet dataset:
results equal direct lookups, and each worker unpickled the table once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ipfib
from ipfib import _enrich
from ipfib.dask import enrich
from support import ROOT, check_enriched_flows, data_file, random_routes

try:
    # Untyped (Any), as the tests use them.
    dd: Any = __import__("dask.dataframe", fromlist=["x"])
    distributed: Any = __import__("dask.distributed", fromlist=["x"])
    pd: Any = __import__("pandas")
    __import__("pyarrow")
except ImportError as e:  # pragma: no cover - the test venv has them
    if os.environ.get("CI") == "true":
        raise AssertionError(
            f"dask/pandas/pyarrow not importable ({e}), and CI=true requires them"
        ) from e
    print(f"SKIPPED: dask/pandas/pyarrow not importable ({e})")
    pytest.skip(f"SKIPPED: dask/pandas/pyarrow not importable ({e})", allow_module_level=True)


def run_example(*args: str) -> None:
    """python/examples/dask_enrich.py as a user runs it."""
    script = ROOT / "python" / "examples" / "dask_enrich.py"
    run = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_dask_enriches_parquet(tmp_path: Path) -> None:
    table = ipfib.Table.from_prefixes(random_routes(31, 3000, 1000))
    rng = np.random.default_rng(7)
    n = 40_000
    v4 = [
        f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}"
        for a in rng.integers(0, 2**32, n // 2).tolist()
    ]
    v6 = [
        f"2{rng.integers(0, 16)}{rng.integers(0, 16)}{rng.integers(0, 16)}::{i:x}"
        for i in range(n // 2)
    ]
    src = v4 + v6
    src[3] = "not-an-address"
    flows = pd.DataFrame({"src": src, "bytes": rng.integers(0, 1500, n)})
    dd.from_pandas(flows, npartitions=8).to_parquet(tmp_path / "in")

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        before = client.run(lambda: ipfib.unpickled)
        out = enrich(dd.read_parquet(tmp_path / "in"), table, client)
        out.to_parquet(tmp_path / "out")
        after = client.run(lambda: ipfib.unpickled)
    shipped = {w: after[w] - before[w] for w in after}
    assert len(shipped) == 2 and all(v == 1 for v in shipped.values()), shipped

    got = pd.read_parquet(tmp_path / "out").sort_values("bytes", kind="stable")
    result = dd.read_parquet(tmp_path / "out").compute()
    assert len(result) == n
    want = table.lookup_many(result["src"], errors="coerce")
    assert (result["asn"].to_numpy() == want).all()
    assert result.loc[result["src"] == "not-an-address", "asn"].tolist() == [0]
    assert got["asn"].dtype == np.int64
    assert (want != 0).sum() > n // 10, "the test data must match often"


def test_the_example_on_real_data(tmp_path: Path) -> None:
    """python/examples/flows.py then dask_enrich.py as a user runs them, on
    the real tables and addresses; every row checked."""
    v4 = data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz")
    v6 = data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz")
    geo = data_file("mmdb/iptoasn-country.mmdb")
    examples = ROOT / "python" / "examples"
    gen = [sys.executable, str(examples / "flows.py"), str(tmp_path / "in"), "20000"]
    subprocess.run(gen + ["--files", "3", "--seed", "2"], check=True, timeout=300)
    run_example(
        str(tmp_path / "in"), str(tmp_path / "out"), str(v4), str(v6), "--country", str(geo)
    )
    got = pd.read_parquet(tmp_path / "out")
    assert len(got) == 20000
    check_enriched_flows(got, [v4, v6], geo)


def test_workers_share_one_mapped_compiled_table(tmp_path: Path) -> None:
    """Three worker processes open the same compiled file, once each; the
    answers (several columns, nulls for null, bad and unmatched items)
    equal the single process's; the table costs one copy in RAM in all
    (the sum of the workers' Pss of the mapping is about one file)."""
    table = ipfib.Table.from_prefixes(random_routes(41, 60_000, 20_000))
    path = tmp_path / "t.ipfib"
    table.save(path)
    size_kb = path.stat().st_size // 1024
    rng = np.random.default_rng(3)
    n = 30_000
    src: list[Any] = [
        f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}"
        for a in rng.integers(0, 2**32, n).tolist()
    ]
    src[5], src[6] = None, "bogus"
    pd.DataFrame({"src": src, "i": np.arange(n)}).to_parquet(tmp_path / "in.parquet")

    cluster = distributed.LocalCluster(
        n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        real = str(path.resolve())
        out = enrich(
            dd.read_parquet(tmp_path / "in.parquet").repartition(npartitions=9),
            str(path),
            column="src",
            out={"asn": "value", "net": "prefix", "len": "prefix_len"},
        ).compute()
        stats = client.run(_enrich.stats)
        mem = client.run(_enrich.mapped_kb, real)
        released = client.run(_enrich.release)
    assert all(s["opened"] == 1 for s in stats.values()), stats
    assert len(stats) == 3
    out = out.sort_values("i")
    assert str(out["asn"].dtype) == "int64[pyarrow]"
    for a, asn, net, ln in zip(src, out["asn"], out["net"], out["len"]):
        hit = table.lookup_prefix(a) if a not in (None, "bogus") else None
        if hit is None:
            assert asn is pd.NA and net is pd.NA and ln is pd.NA, a
        else:
            assert (asn, net, ln) == (hit[1], hit[0], int(hit[0].split("/")[1])), a
    # Every worker maps the file and has most of it resident; together they
    # account for about one copy (Pss shares each page among its mappers).
    assert all(m["maps"] >= 1 and m["rss"] > size_kb // 2 for m in mem.values()), (mem, size_kb)
    total_pss = sum(m["pss"] for m in mem.values())
    assert total_pss < 1.3 * size_kb, (mem, size_kb)
    # And no private copy beside the mapping: letting the table go frees
    # little anonymous memory in each worker (a rebuilt table, or per-route
    # arrays for the prefix column, would be a good part of the file).
    kept = {w: r["before"] - r["after"] for w, r in released.items()}
    assert all(k < size_kb // 4 for k in kept.values()), (kept, size_kb)


def test_answers_follow_a_changed_table() -> None:
    """Every column of a batch comes from one version of the table: after
    a change, the next batch answers from the new one (no per-route state
    kept from the old)."""
    import pyarrow as pa

    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("20.0.0.0/8", 2)])
    ref = _enrich.TableRef(table=t, token="changing")
    outputs = _enrich.outputs_for(t, {"asn": "value", "net": "prefix"})
    addrs = pa.array(["10.1.1.1", "20.1.1.1"])
    cols, _ = _enrich.enrich_arrow(ref, addrs, outputs)
    assert [c.to_pylist() for c in cols] == [[1, 2], ["10.0.0.0/8", "20.0.0.0/8"]]
    t.insert("15.0.0.0/8", 3)
    t.insert("10.1.0.0/16", 4)
    cols, _ = _enrich.enrich_arrow(ref, addrs, outputs)
    assert [c.to_pylist() for c in cols] == [[4, 2], ["10.1.0.0/16", "20.0.0.0/8"]]


def test_odd_columns_answer_or_name_the_column() -> None:
    """Empty and all-null partitions (Arrow null type), dictionary and view
    types answer; integers are refused naming the column."""
    import pyarrow as pa

    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    ref = _enrich.TableRef(table=t, token="odd")
    outputs = _enrich.outputs_for(t, {"asn": "value", "net": "prefix", "len": "prefix_len"})
    for arr in [pa.array([None, None]), pa.array([], pa.null())]:
        cols, counts = _enrich.enrich_arrow(ref, arr, outputs)
        assert all(c.null_count == len(arr) for c in cols) and counts.nulls == len(arr)
    texts = ["10.0.0.1", "bad", None, "11.0.0.1"]
    kinds = [pa.array(texts).dictionary_encode(), pa.array(texts, pa.large_string())]
    if hasattr(pa, "string_view"):
        kinds.append(pa.array(texts, pa.string_view()))
    for arr in kinds:
        cols, counts = _enrich.enrich_arrow(ref, arr, outputs)
        assert cols[1].to_pylist() == ["10.0.0.0/8", None, None, None], arr.type
        assert (counts.bad, counts.nulls, counts.matched) == (1, 1, 1), arr.type
    with pytest.raises(TypeError, match="column 'src' holds int64"):
        _enrich.enrich_arrow(ref, pa.array([1, 2]), outputs, "src")


def test_a_scattered_table_answers_columns(tmp_path: Path) -> None:
    table = ipfib.Table.from_prefixes([("10.0.0.0/8", "ten"), ("2001:db8::/32", "doc")])
    flows = pd.DataFrame({"src": ["10.1.2.3", None, "2001:db8::7", "bad", "192.0.2.1"]})
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        ddf = dd.from_pandas(flows, npartitions=2)
        got = enrich(ddf, table, client, "src", {"name": "value", "len": "prefix_len"}).compute()
        plain = enrich(ddf, table, client, "src", "name", default=None).compute()
    assert got["name"].tolist() == ["ten", pd.NA, "doc", pd.NA, pd.NA]
    assert got["len"].tolist() == [8, pd.NA, 32, pd.NA, pd.NA]
    assert [None if pd.isna(x) else x for x in plain["name"]] == ["ten", None, "doc", None, None]
    with pytest.raises(TypeError, match="pass the client"):
        enrich(ddf, table, None, "src", "x")
